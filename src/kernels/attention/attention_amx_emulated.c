/* attention's AMX-contract products with the tiles in plain C (amx_tiles.h):
 * the contract's bits on a CPU without AMX-BF16 (slowly), and below the amx
 * ISA rung. */
#define SK_AMX_EMULATE 1
#include "kernels/attention/attention_amx.c"

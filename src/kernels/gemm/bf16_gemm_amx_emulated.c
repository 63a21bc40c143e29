/* The AMX contract's kernel with its tiles in plain C (amx_tiles.h), as
 * sk__bf16_gemm_config_amx_emulated: the contract's bits on a CPU without
 * AMX-BF16 (slowly), and its edges checked where the instruction cannot
 * run. */
#define SK_AMX_EMULATE 1
#include "kernels/gemm/bf16_gemm_amx.c"

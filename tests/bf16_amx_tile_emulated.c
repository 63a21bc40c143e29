/* bf16_amx_tile.c with the tile operations in plain C (the SDM's pseudocode,
 * kernels/amx_tiles.h): bf16_amx_tile_product_emulated. */
#define SK_AMX_EMULATE 1
#include "bf16_amx_tile.c"

long bf16_amx_emulator_faults(void) { return sk__amx_emulator_faults(); }

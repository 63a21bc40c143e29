/* The AMX-INT8 kernel built with its tile operations in plain C
 * (src/kernels/amx_tiles.h), as sk__qs8_gemm_config_amx_emulated:
 * test_qgemm runs it on every CPU, so its packing, tile shapes and edges
 * are checked against the reference where the instructions cannot run. */
#define SK_AMX_EMULATE 1
#include "kernels/qgemm/qgemm_amx.c"

#include "qgemm_amx_emulated.h"

long sk__qgemm_amx_emulator_faults(void) { return sk__amx_emulator_faults(); }

void sk__qgemm_amx_emulator_load(const sk__amx_config *cfg) { TILE_CONFIG(cfg); }
void sk__qgemm_amx_emulator_read(sk__amx_config *cfg) { TILE_STORE_CONFIG(cfg); }
void sk__qgemm_amx_emulator_release(void) { TILE_RELEASE(); }

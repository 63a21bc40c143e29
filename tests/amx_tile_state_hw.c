/* LDTILECFG and STTILECFG for test_amx_tile_state on a CPU with AMX
 * (compiled with -mamx-tile; called only where sk__cpu_isa() is amx). */
#include "amx_tile_state_hw.h"

#include <immintrin.h>

void hw_tiles_load(const sk__amx_config *cfg) { _tile_loadconfig(cfg); }
void hw_tiles_read(sk__amx_config *cfg) {
  _tile_storeconfig(cfg);
  __asm__ volatile("" ::: "memory");
}

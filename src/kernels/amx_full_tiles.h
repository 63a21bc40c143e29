/* The one tile configuration the AMX kernels use (qgemm_amx.c,
 * bf16_gemm_amx.c): every tile 16 rows x 64 bytes, kept by a thread across
 * calls. Include after amx_tiles.h, in a file built with the tile flags or
 * with SK_AMX_EMULATE. */
#ifndef SK_KERNELS_AMX_FULL_TILES_H
#define SK_KERNELS_AMX_FULL_TILES_H

#include <string.h>

#include "kernels/amx_tiles.h"
#ifndef SK_AMX_EMULATE
#include "core/amx_state.h"
#endif

static const sk__amx_config sk__amx_full_tiles = {
    .palette_id = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* Loads sk__amx_full_tiles unless this thread has it loaded already:
 * STTILECFG (about 5 ns on an Intel Xeon, family 6 model 167) tells, also
 * after another library's kernels reconfigured the thread; LDTILECFG costs
 * about 50 (as much as a whole 48 x 64 x 64 int8 product on VNNI). Noted
 * in use either way (a new thread inherits its creator's tiles), so the
 * team releases them after the launch (core/amx_state.h). */
static inline void sk__amx_use_full_tiles(void) {
#ifndef SK_AMX_EMULATE
  sk__amx_note_configured();
#endif
  sk__amx_config now;
  TILE_STORE_CONFIG(&now);
  if (memcmp(&now, &sk__amx_full_tiles, sizeof now) != 0) TILE_CONFIG(&sk__amx_full_tiles);
}

#endif

/* One TDPBF16PS: C (16 x 16 fp32) += A (16 rows of `pairs` bf16 pairs) times
 * B (`pairs` rows of 16 lanes, each lane a pair: B[2q][j] low, B[2q+1][j]
 * high, the library's pair layout). Built twice, as the SK_AMX_EMULATE
 * switch of kernels/amx_tiles.h decides: with the instruction (compiled
 * with -mamx-tile -mamx-bf16; called only where sk__cpu_has_amx_bf16()),
 * and as the SDM's pseudocode in C (bf16_amx_tile_emulated.c). */
#include "bf16_amx_tile.h"

#include "kernels/amx_tiles.h"

#ifdef SK_AMX_EMULATE
#define TILE_PRODUCT bf16_amx_tile_product_emulated
#else
#define TILE_PRODUCT bf16_amx_tile_product
#endif

void TILE_PRODUCT(int pairs, const uint32_t *a, const uint32_t *b, float *c) {
  sk__amx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  cfg.rows[0] = 16, cfg.colsb[0] = 64;                             /* C */
  cfg.rows[1] = 16, cfg.colsb[1] = (uint16_t)(4 * pairs);          /* A */
  cfg.rows[2] = (uint8_t)pairs, cfg.colsb[2] = 64;                 /* B */
  TILE_CONFIG(&cfg);
  TILE_LOAD(0, c, 64);
  TILE_LOAD(1, a, 64);
  TILE_LOAD(2, b, 64);
  TILE_DPBF16PS(0, 1, 2);
  TILE_STORE(0, c, 64);
  TILE_RELEASE();
}

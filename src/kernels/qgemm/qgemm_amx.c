/* AMX-INT8 GEMM path: TDPBSSD adds a 16 x 64 int8 tile times a 64 x 16
 * int8 tile to a 16 x 16 int32 tile in one instruction, signed by signed
 * (so, unlike VNNI, no +128 on A and no column sums).
 *
 * Tile 32 x 32: C in tmm0-3 (2 x 2 tiles of 16 x 16 int32), A in tmm4-5
 * (16 rows x 64 k each), B in tmm6-7 (64 k x 16 columns each). The tile
 * shapes are those of the block in hand (rows of A and C, column bytes of B
 * and C), so an edge loads and stores only what exists and C is read and
 * written in place. The shapes are loaded (LDTILECFG) when they change and
 * released when the GEMM tile ends (tile_end): no tile state outlives a
 * call, whatever else in the process uses AMX.
 *
 * Panels (pack_b): NR = 32 columns; per group of 4 k values, 32 dwords,
 * dword j holding B[4g..4g+3, j], lowest k first (VNNI's order), K padded
 * with zero rows to a multiple of 64. A B tile is 16 such 128-byte rows,
 * their first (columns 0-15) or second (16-31) 64 bytes. A rows are int8 as
 * they are, their K tail zeroed to the multiple of 64.
 *
 * Built twice: into the library with the AMX instructions (-mamx-tile
 * -mamx-int8; run only when sk__cpu_isa() is SK_ISA_AMX, so the OS granted
 * the tile state), and into the tests with SK_AMX_EMULATE
 * (amx_tiles.h), as sk__qs8_gemm_config_amx_emulated. */
#include <string.h>

#include "kernels/amx_tiles.h"
#include "kernels/qgemm/qgemm_internal.h"

#define MR 32
#define NR 32
#define KGROUP 64 /* one A tile's row of k values */

#ifdef SK_AMX_EMULATE
#define CONFIG_NAME sk__qs8_gemm_config_amx_emulated
#else
#define CONFIG_NAME sk__qs8_gemm_config_amx
#endif

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

static void pack_a_amx(size_t mr, size_t kc, const int8_t *a, size_t lda, void *dst, size_t a_stride) {
  const size_t kcp = sk__qgemm_round_up(kc, KGROUP);
  for (size_t i = 0; i < mr; i++) {
    memcpy((char *)dst + i * a_stride, a + i * lda, kc);
    memset((char *)dst + i * a_stride + kc, 0, kcp - kc);
  }
}

static void pack_b_amx(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum) {
  const size_t kcp = sk__qgemm_round_up(kc, KGROUP);
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    int8_t *panel = (int8_t *)dst + j0 * kcp;
    const size_t cols = nc - j0 < NR ? nc - j0 : NR;
    memset(panel, 0, kcp * NR);
    for (size_t p = 0; p < kc; p++)
      for (size_t j = 0; j < cols; j++) panel[(p / 4) * 4 * NR + 4 * j + p % 4] = b[p * ldb + j0 + j];
  }
  memset(colsum, 0, sk__qgemm_round_up(nc, NR) * sizeof(int32_t)); /* unused: kept defined */
}

/* The shapes loaded on this thread within the current GEMM tile (rows 0: none). */
static _Thread_local int loaded_mr, loaded_nr;

static void set_tile(sk__amx_config *cfg, int t, int rows, int colsb) {
  cfg->rows[t] = (uint8_t)rows;
  cfg->colsb[t] = (uint16_t)colsb;
}

/* Tile shapes for an mr x nr block: C tiles (0-3) and A tiles (4-5) have
 * the block's rows, C and B tiles (6-7) its column bytes; a second row or
 * column of tiles only where the block reaches it. */
static void load_shapes(size_t mr, size_t nr) {
  if ((int)mr == loaded_mr && (int)nr == loaded_nr) return;
  sk__amx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  const int rows0 = mr < 16 ? (int)mr : 16, rows1 = mr > 16 ? (int)mr - 16 : 0;
  const int cols0 = nr < 16 ? (int)nr : 16, cols1 = nr > 16 ? (int)nr - 16 : 0;
  set_tile(&cfg, 0, rows0, 4 * cols0);
  set_tile(&cfg, 4, rows0, 64);
  set_tile(&cfg, 6, 16, 4 * cols0);
  if (cols1) set_tile(&cfg, 1, rows0, 4 * cols1), set_tile(&cfg, 7, 16, 4 * cols1);
  if (rows1) set_tile(&cfg, 2, rows1, 4 * cols0), set_tile(&cfg, 5, rows1, 64);
  if (rows1 && cols1) set_tile(&cfg, 3, rows1, 4 * cols1);
  TILE_CONFIG(&cfg);
  loaded_mr = (int)mr;
  loaded_nr = (int)nr;
}

static void tile_end_amx(void) {
  if (!loaded_mr) return;
  TILE_RELEASE();
  loaded_mr = loaded_nr = 0;
}

/* C (+)= A W over kcp k values for the tiles the block has: two_rows and
 * two_cols are constants after inlining, so each form is straight code. */
SK_ALWAYS_INLINE void block(int two_rows, int two_cols, size_t kcp, const int8_t *a, size_t a_stride,
                            const int8_t *w, int32_t *c, size_t ldc, int accumulate) {
  const size_t cs = ldc * sizeof(int32_t);
  int32_t *c1 = c + 16 * ldc;
  if (accumulate) {
    TILE_LOAD(0, c, cs);
    if (two_cols) TILE_LOAD(1, c + 16, cs);
    if (two_rows) TILE_LOAD(2, c1, cs);
    if (two_rows && two_cols) TILE_LOAD(3, c1 + 16, cs);
  } else {
    TILE_ZERO(0);
    if (two_cols) TILE_ZERO(1);
    if (two_rows) TILE_ZERO(2);
    if (two_rows && two_cols) TILE_ZERO(3);
  }
  for (size_t p = 0; p < kcp; p += KGROUP) {
    const int8_t *wp = w + p * NR; /* 64 k values: 16 rows of 4 * NR bytes */
    TILE_LOAD(4, a + p, a_stride);
    if (two_rows) TILE_LOAD(5, a + 16 * a_stride + p, a_stride);
    TILE_LOAD(6, wp, 4 * NR);
    if (two_cols) TILE_LOAD(7, wp + 64, 4 * NR);
    TILE_DPBSSD(0, 4, 6);
    if (two_cols) TILE_DPBSSD(1, 4, 7);
    if (two_rows) TILE_DPBSSD(2, 5, 6);
    if (two_rows && two_cols) TILE_DPBSSD(3, 5, 7);
  }
  TILE_STORE(0, c, cs);
  if (two_cols) TILE_STORE(1, c + 16, cs);
  if (two_rows) TILE_STORE(2, c1, cs);
  if (two_rows && two_cols) TILE_STORE(3, c1 + 16, cs);
}

static void ukernel_amx(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride, const void *w,
                        const int32_t *colsum, int32_t *c, size_t ldc, int accumulate) {
  (void)colsum;
  load_shapes(mr, nr);
  TILE_BARRIER(); /* the tiles read memory the compiler cannot see them read */
  const int8_t *a8 = a, *w8 = w;
  if (mr > 16 && nr > 16) block(1, 1, kcp, a8, a_stride, w8, c, ldc, accumulate);
  else if (mr > 16) block(1, 0, kcp, a8, a_stride, w8, c, ldc, accumulate);
  else if (nr > 16) block(0, 1, kcp, a8, a_stride, w8, c, ldc, accumulate);
  else block(0, 0, kcp, a8, a_stride, w8, c, ldc, accumulate);
}

/* K blocks of 512 as VNNI's (an untuned choice: no AMX machine has timed it). */
const sk__qgemm_config CONFIG_NAME = {
    "amx", MR, NR, KGROUP, 1, 512, pack_a_amx, pack_b_amx, ukernel_amx, 1, tile_end_amx,
};

/* AMX-INT8 GEMM path: TDPBSSD adds a 16 x 64 int8 tile times a 64 x 16
 * int8 tile to a 16 x 16 int32 tile in one instruction, signed by signed
 * (so, unlike VNNI, no +128 on A and no column sums).
 *
 * Block 32 x 32: C in tmm0-3 (2 x 2 tiles of 16 x 16 int32), A in tmm4-5
 * (16 rows x 64 k each), B in tmm6-7 (64 k x 16 columns each). The loop
 * nest is this file's own (the driver's keeps C in memory between K
 * blocks and copies A; on an Intel Xeon, family 6 model 167, that ran at
 * 1.4x VNNI where the instructions allow 8x):
 *   - one K block over all of k: a block's C stays in the tiles from the
 *     first k to the last and is stored once;
 *   - A is read where it lies (row stride lda) by whole 16-row tiles of
 *     whole 64-byte k groups; only a last block of fewer rows (copied once
 *     per tile, zero rows below it) or a k with a tail (copied per chunk)
 *     is packed;
 *   - every block's tiles have one shape, 16 rows x 64 bytes: the thread
 *     keeps that configuration across calls (amx_full_tiles.h); a block at
 *     an edge of C goes through a 32 x 32 scratch, of which only the part
 *     in C is copied out;
 *   - the panels are read in order, one stream, prefetched ahead.
 *
 * Panels (pack_b): NR = 32 columns; per group of 4 k values, 32 dwords,
 * dword j holding B[4g..4g+3, j], lowest k first (VNNI's order), K padded
 * with zero rows to a multiple of 64. A B tile is 16 such 128-byte rows,
 * their first (columns 0-15) or second (16-31) 64 bytes.
 *
 * Built twice: into the library with the AMX instructions (-mamx-tile
 * -mamx-int8; run only when sk__cpu_isa() is SK_ISA_AMX, so the OS granted
 * the tile state), and into the tests with SK_AMX_EMULATE
 * (amx_tiles.h), as sk__qs8_gemm_config_amx_emulated. */
#include <string.h>

#include "kernels/amx_full_tiles.h"
#include "kernels/amx_tiles.h"
#include "kernels/packed_groups.h"
#include "kernels/qgemm/qgemm_internal.h"

#define MR 32
#define NR 32
#define KGROUP 64              /* one A tile's row of k values */
#define KC (SK_QGEMM_MAX_K + 1) /* one K block for every k: a multiple of KGROUP */
/* Packed B per chunk when the weights are not packed already, about half
 * an L2 (2 MiB on the Xeons with AMX). */
#define B_CHUNK_BYTES (1u << 20)

#ifdef SK_AMX_EMULATE
#define CONFIG_NAME sk__qs8_gemm_config_amx_emulated
#else
#define CONFIG_NAME sk__qs8_gemm_config_amx
#endif

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Panels of NR columns, K zero-padded to a multiple of 64; VNNI's packing
 * (vectorized, its panels padded to a multiple of 4) where the CPU runs
 * it, 6x faster than the byte loop, whose layout it is. */
static void pack_b_amx(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum) {
  const size_t kcp = sk__qgemm_round_up(kc, KGROUP), kcp4 = sk__qgemm_round_up(kc, 4);
  const int vnni = sk__cpu_isa() >= SK_ISA_AVX512VNNI;
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    int8_t *panel = (int8_t *)dst + j0 * kcp;
    const size_t cols = nc - j0 < NR ? nc - j0 : NR;
    if (vnni) {
      int32_t sums[NR];
      sk__qgemm_pack_b_vnni(kc, cols, b + j0, ldb, panel, sums);
      memset(panel + kcp4 * NR, 0, (kcp - kcp4) * NR);
      continue;
    }
    memset(panel, 0, kcp * NR);
    for (size_t p = 0; p < kc; p++)
      for (size_t j = 0; j < cols; j++) panel[(p / 4) * 4 * NR + 4 * j + p % 4] = b[p * ldb + j0 + j];
  }
  if (colsum) memset(colsum, 0, sk__qgemm_round_up(nc, NR) * sizeof(int32_t)); /* unused: kept defined */
}

/* A packed for the tile: row block after row block (MR rows), in each
 * its k steps, each MR rows x 64 bytes (2 KiB: the two A tiles, rows
 * 16 apart, stride 64); the k tail and the rows past m are zero, so the
 * tiles never load stale bytes. */
#define A_STEP_BYTES (MR * KGROUP)

static void pack_a_tile(size_t m, size_t k, const int8_t *a, size_t lda, int8_t *dst) {
  const size_t steps = sk__qgemm_round_up(k, KGROUP) / KGROUP;
  for (size_t ir = 0; ir < m; ir += MR) {
    int8_t *blk = dst + ir / MR * steps * A_STEP_BYTES;
    const size_t rows = m - ir < MR ? m - ir : MR;
    for (size_t s = 0; s < steps; s++) {
      int8_t *step = blk + s * A_STEP_BYTES;
      const size_t have = k - s * KGROUP < KGROUP ? k - s * KGROUP : KGROUP;
      for (size_t i = 0; i < rows; i++) {
        if (have == KGROUP) { /* a constant size: plain moves, not rep movs (3x slower here) */
          memcpy(step + i * KGROUP, a + (ir + i) * lda + s * KGROUP, KGROUP);
          continue;
        }
        memcpy(step + i * KGROUP, a + (ir + i) * lda + s * KGROUP, have);
        memset(step + i * KGROUP + have, 0, KGROUP - have);
      }
      if (rows < MR) memset(step + rows * KGROUP, 0, (sk__qgemm_round_up(rows, 16) - rows) * KGROUP);
    }
  }
}

/* One block's C = A W over n_steps k steps, for the tiles it has
 * (two_rows and two_cols are constants after inlining, so each form is
 * straight code), stored at c_out with row stride ld_out. a: the row
 * block's packed A steps; w: the panel. */
SK_ALWAYS_INLINE void block(int two_rows, int two_cols, size_t n_steps, const int8_t *a, const int8_t *w,
                            int32_t *c_out, size_t ld_out) {
  TILE_BARRIER(); /* the tiles read memory the compiler cannot see them read */
  TILE_ZERO(0);
  if (two_cols) TILE_ZERO(1);
  if (two_rows) TILE_ZERO(2);
  if (two_rows && two_cols) TILE_ZERO(3);
  for (size_t st = 0; st < n_steps; st++) {
    const int8_t *ap = a + st * A_STEP_BYTES, *wp = w + st * KGROUP * NR; /* 16 rows of 4 * NR bytes */
    TILE_LOAD(4, ap, KGROUP);
    TILE_LOAD(6, wp, 4 * NR);
    if (two_cols) TILE_LOAD(7, wp + 64, 4 * NR);
    TILE_DPBSSD(0, 4, 6);
    if (two_cols) TILE_DPBSSD(1, 4, 7);
    if (two_rows) {
      TILE_LOAD(5, ap + 16 * KGROUP, KGROUP);
      TILE_DPBSSD(2, 5, 6);
      if (two_cols) TILE_DPBSSD(3, 5, 7);
    }
  }
  const size_t s = ld_out * sizeof(int32_t);
  TILE_STORE(0, c_out, s);
  if (two_cols) TILE_STORE(1, c_out + 16, s);
  if (two_rows) TILE_STORE(2, c_out + 16 * ld_out, s);
  if (two_rows && two_cols) TILE_STORE(3, c_out + 16 * ld_out + 16, s);
  TILE_BARRIER(); /* and wrote memory it cannot see them write */
}

/* C[0:mr, 0:nr] = A W for one block: the tiles it reaches. A block at an
 * edge of C (rows or columns not whole tiles) is stored into `edge` (MR x
 * NR int32) and its part in C copied out. */
static void block_any(size_t mr, size_t nr, size_t n_steps, const int8_t *a, const int8_t *w, int32_t *c,
                      size_t ldc, int32_t *edge) {
  const int whole = (mr == 16 || mr == MR) && (nr == 16 || nr == NR);
  int32_t *out = whole ? c : edge;
  const size_t ld = whole ? ldc : NR;
  if (mr > 16 && nr > 16) block(1, 1, n_steps, a, w, out, ld);
  else if (mr > 16) block(1, 0, n_steps, a, w, out, ld);
  else if (nr > 16) block(0, 1, n_steps, a, w, out, ld);
  else block(0, 0, n_steps, a, w, out, ld);
  if (!whole)
    for (size_t i = 0; i < mr; i++) memcpy(c + i * ldc, edge + i * NR, nr * sizeof(int32_t));
}

/* Workspace: [packed B chunk][packed A of the tile][an edge block: MR x
 * NR int32]. */
typedef struct amx_layout {
  size_t kcp, nc, a_offset, edge_offset, total;
} amx_layout;

static amx_layout layout_amx(size_t tile_m, size_t tile_n, size_t k) {
  amx_layout l;
  l.kcp = sk__qgemm_round_up(k ? k : 1, KGROUP);
  size_t nc = B_CHUNK_BYTES / l.kcp / NR * NR;
  if (nc < NR) nc = NR;
  if (nc > sk__qgemm_round_up(tile_n, NR)) nc = sk__qgemm_round_up(tile_n, NR);
  l.nc = nc;
  l.a_offset = nc * l.kcp; /* a multiple of 64 */
  l.edge_offset = l.a_offset + (tile_m + MR - 1) / MR * (l.kcp / KGROUP) * A_STEP_BYTES;
  l.total = l.edge_offset + MR * NR * sizeof(int32_t);
  return l;
}

static size_t workspace_amx(const sk__qgemm_config *cfg, size_t tile_m, size_t tile_n, size_t k) {
  (void)cfg;
  return layout_amx(tile_m, tile_n, k).total;
}

/* Loop nest of a tile: A packed once; per chunk of panels (B in L2), per
 * row block, per panel: a block's C over all of k, stored once. (K blocks
 * keeping a row block's A in L1, their C between them in contiguous
 * memory, and prefetching the next panel were all slower on an Intel
 * Xeon, family 6 model 167: 256 x 4096 x 1024 in 0.91 ms so, 1.0-1.2 ms
 * with them.) */
static void tile_amx(const sk__qgemm_config *cfg, const sk__qgemm_problem *p, int64_t m0, int64_t m1, int64_t n0,
                     int64_t n1, int32_t *c, int64_t ldc, void *workspace) {
  const size_t m = (size_t)(m1 - m0), n = (size_t)(n1 - n0), k = (size_t)p->k, ldcu = (size_t)ldc;
  if (k == 0) { /* an empty sum */
    for (size_t i = 0; i < m; i++) memset(c + i * ldcu, 0, n * sizeof(int32_t));
    return;
  }
  const amx_layout l = layout_amx(m, n, k);
  char *b_chunk = workspace;
  int8_t *a_packed = (int8_t *)workspace + l.a_offset;
  int32_t *edge = (int32_t *)(void *)((char *)workspace + l.edge_offset);
  const size_t steps = l.kcp / KGROUP;
  pack_a_tile(m, k, p->a + (size_t)m0 * (size_t)p->lda, (size_t)p->lda, a_packed);
  sk__amx_use_full_tiles();

  /* B packed once at compile: usable when the tile starts on a panel
   * boundary, as tilings make it; a panel is all of k (one K block). */
  const char *whole = p->b_packed && (size_t)n0 % NR == 0 ? p->b_packed : NULL;
  for (size_t jc = 0, nc; jc < n; jc += nc) {
    nc = n - jc < l.nc ? n - jc : l.nc;
    if (!whole) pack_b_amx(k, nc, p->b + (size_t)n0 + jc, (size_t)p->ldb, b_chunk, NULL);
    for (size_t ir = 0; ir < m; ir += MR) {
      const size_t mr = m - ir < MR ? m - ir : MR;
      const int8_t *a_blk = a_packed + ir / MR * steps * A_STEP_BYTES;
      for (size_t jr = 0; jr < nc; jr += NR) {
        const size_t nr = nc - jr < NR ? nc - jr : NR;
        size_t at = jr * l.kcp, sums;
        if (whole) sk__qgemm_packed_at(cfg, k, (size_t)p->n, ((size_t)n0 + jc + jr) / NR, 0, &at, &sums);
        block_any(mr, nr, steps, a_blk, (const int8_t *)(whole ? whole : b_chunk) + at, c + ir * ldcu + jc + jr,
                  ldcu, edge);
      }
    }
  }
}

/* The driver's pack_a and ukernel are not used: tile_amx is the loop
 * nest. pack_b packs constant weights in one K block (KC). */
const sk__qgemm_config CONFIG_NAME = {
    .name = "amx",
    .mr = MR,
    .nr = NR,
    .kgroup = KGROUP,
    .elem_bytes = 1,
    .kc = KC,
    .pack_a = NULL,
    .pack_b = pack_b_amx,
    .ukernel = NULL,
    .b_elem_bytes = 1,
    .tile = tile_amx,
    .workspace_size = workspace_amx,
};

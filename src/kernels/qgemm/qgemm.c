/* int8 GEMM driver (ISA-independent loops, workspace layout), the reference
 * and the ISA dispatch.
 *
 * Loop nest of one tile:
 *
 *   for pc over K, cfg->kc at a time:                 (K blocks)
 *     for jc over the tile's columns, NC at a time:   pack B[pc.., jc..] + column sums
 *       for ir over the tile's rows, MR at a time:    pack MR rows of A[.., pc..]
 *         for jr over the NC columns, NR at a time:   micro-kernel (C = or += block)
 *
 * A K block keeps a B micro-panel (kc x NR) in L1 next to the MR packed A
 * rows; the packed B chunk (kc x NC, about 512 KiB) stays in L2 and is
 * streamed once per MR rows. Integer sums are exact, so the K blocking and
 * every ISA give the reference's bits.
 */
#include <string.h>

#include "kernels/qgemm/qgemm_internal.h"

const sk__qgemm_config *sk__qgemm_config_for(sk__isa isa) {
  switch (isa) {
    case SK_ISA_AVX512:
      return sk__cpu_has_avx512_vnni() ? &sk__qs8_gemm_config_avx512vnni : &sk__qs8_gemm_config_avx512;
    case SK_ISA_AVX2: return &sk__qs8_gemm_config_avx2;
    default: return &sk__qs8_gemm_config_scalar;
  }
}

void sk__qgemm_micro_tile(sk__isa isa, int64_t *mr, int64_t *nr) {
  const sk__qgemm_config *cfg = sk__qgemm_config_for(isa);
  if (mr) *mr = cfg->mr;
  if (nr) *nr = cfg->nr;
}

static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Workspace layout for one config: [packed B chunk][column sums][A rows]. */
typedef struct ws_layout {
  size_t kcp;           /* packed rows of the largest K block */
  size_t nc;            /* columns per B chunk */
  size_t colsum_offset; /* bytes */
  size_t a_offset;      /* bytes */
  size_t a_stride;      /* bytes per packed A row */
  size_t total;         /* bytes */
} ws_layout;

static ws_layout layout_for(const sk__qgemm_config *cfg, size_t tile_m, size_t tile_n, size_t k) {
  ws_layout l;
  const size_t nr = (size_t)cfg->nr, mr = (size_t)cfg->mr, es = (size_t)cfg->b_elem_bytes;
  size_t kc = k < (size_t)cfg->kc ? k : (size_t)cfg->kc;
  l.kcp = sk__qgemm_round_up(kc ? kc : 1, (size_t)cfg->kgroup);
  /* B chunk near 512 KiB (Zen 4 has 1 MiB of L2), at least one panel. */
  size_t nc = (524288 / (l.kcp * es)) / nr * nr;
  if (nc < nr) nc = nr;
  if (nc > sk__qgemm_round_up(tile_n, nr)) nc = sk__qgemm_round_up(tile_n, nr);
  l.nc = nc;
  l.colsum_offset = align64(nc * l.kcp * es);
  l.a_offset = l.colsum_offset + align64(nc * sizeof(int32_t));
  l.a_stride = sk__qgemm_a_stride(l.kcp * (size_t)cfg->elem_bytes);
  l.total = l.a_offset + (tile_m < mr ? tile_m : mr) * l.a_stride;
  return l;
}

size_t sk__qgemm_workspace_size(int64_t tile_m, int64_t tile_n, int64_t k) {
  if (tile_m <= 0 || tile_n <= 0 || k < 0) return 0;
  /* The ISA is not an argument: size for the hungriest configuration. */
  const sk__qgemm_config *cfgs[] = {&sk__qs8_gemm_config_scalar, &sk__qs8_gemm_config_avx2,
                                    &sk__qs8_gemm_config_avx512, &sk__qs8_gemm_config_avx512vnni};
  size_t best = 0;
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    ws_layout l = layout_for(cfgs[i], (size_t)tile_m, (size_t)tile_n, (size_t)k);
    if (l.total > best) best = l.total;
  }
  return best;
}

/* One K block of B packed whole: kcp rows of panels for n columns, then
 * their column sums; the next block follows. */
static size_t whole_block_panels(const sk__qgemm_config *cfg, size_t kc, size_t n) {
  return align64(sk__qgemm_round_up(n, (size_t)cfg->nr) * sk__qgemm_round_up(kc, (size_t)cfg->kgroup) *
                 (size_t)cfg->b_elem_bytes);
}
static size_t whole_block_colsums(const sk__qgemm_config *cfg, size_t n) {
  return align64(sk__qgemm_round_up(n, (size_t)cfg->nr) * sizeof(int32_t));
}

size_t sk__qgemm_packed_b_size(sk__isa isa, int64_t k, int64_t n) {
  return sk__qgemm_packed_b_size_config(sk__qgemm_config_for(isa), k, n);
}

void sk__qgemm_pack_b(sk__isa isa, const int8_t *b, int64_t ldb, int64_t k, int64_t n, void *dst) {
  sk__qgemm_pack_b_config(sk__qgemm_config_for(isa), b, ldb, k, n, dst);
}

size_t sk__qgemm_packed_b_size_config(const sk__qgemm_config *cfg, int64_t k, int64_t n) {
  size_t total = 0;
  for (size_t pc = 0; n > 0 && pc < (size_t)k; pc += (size_t)cfg->kc) {
    size_t kc = (size_t)k - pc < (size_t)cfg->kc ? (size_t)k - pc : (size_t)cfg->kc;
    total += whole_block_panels(cfg, kc, (size_t)n) + whole_block_colsums(cfg, (size_t)n);
  }
  return total;
}

void sk__qgemm_pack_b_config(const sk__qgemm_config *cfg, const int8_t *b, int64_t ldb, int64_t k, int64_t n,
                             void *dst) {
  char *at = dst;
  for (size_t pc = 0; n > 0 && pc < (size_t)k; pc += (size_t)cfg->kc) {
    size_t kc = (size_t)k - pc < (size_t)cfg->kc ? (size_t)k - pc : (size_t)cfg->kc;
    size_t panels = whole_block_panels(cfg, kc, (size_t)n);
    cfg->pack_b(kc, (size_t)n, b + pc * (size_t)ldb, (size_t)ldb, at, (int32_t *)(void *)(at + panels));
    at += panels + whole_block_colsums(cfg, (size_t)n);
  }
}

void sk__qgemm_tile_config(const sk__qgemm_config *cfg, const sk__qgemm_problem *p, int64_t m0, int64_t m1,
                           int64_t n0, int64_t n1, int32_t *c, int64_t ldc, void *workspace) {
  if (m1 <= m0 || n1 <= n0) return;
  const size_t m = (size_t)(m1 - m0), n = (size_t)(n1 - n0), k = (size_t)p->k;
  const size_t ldcu = (size_t)ldc, lda = (size_t)p->lda, ldb = (size_t)p->ldb;
  if (k == 0) { /* an empty sum: no K block runs to store the zeros */
    for (size_t i = 0; i < m; i++) memset(c + i * ldcu, 0, n * sizeof(int32_t));
    return;
  }
  const size_t mr_max = (size_t)cfg->mr, nr_max = (size_t)cfg->nr, es = (size_t)cfg->b_elem_bytes;
  const ws_layout l = layout_for(cfg, m, n, k);
  char *packed_b = (char *)workspace;
  int32_t *colsum = (int32_t *)(void *)((char *)workspace + l.colsum_offset);
  char *a_rows = (char *)workspace + l.a_offset;
  const int8_t *a_tile = p->a + (size_t)m0 * lda;

  /* B packed once at compile (whole K blocks of all columns): usable when
   * the tile starts on a panel boundary, as tilings make it. */
  const char *whole = p->b_packed && (size_t)n0 % nr_max == 0 ? p->b_packed : NULL;
  for (size_t pc = 0; pc < k; pc += (size_t)cfg->kc) {
    const size_t kc = k - pc < (size_t)cfg->kc ? k - pc : (size_t)cfg->kc;
    const size_t kcp = sk__qgemm_round_up(kc, (size_t)cfg->kgroup);
    const size_t whole_panels = whole_block_panels(cfg, kc, (size_t)p->n);
    for (size_t jc = 0; jc < n; jc += l.nc) {
      const size_t nc = n - jc < l.nc ? n - jc : l.nc;
      const char *panels = packed_b;
      const int32_t *sums = colsum;
      if (whole) {
        panels = whole + ((size_t)n0 + jc) * kcp * es;
        sums = (const int32_t *)(const void *)(whole + whole_panels) + n0 + jc;
      } else {
        cfg->pack_b(kc, nc, p->b + pc * ldb + (size_t)n0 + jc, ldb, packed_b, colsum);
      }
      for (size_t ir = 0; ir < m; ir += mr_max) {
        const size_t mr = m - ir < mr_max ? m - ir : mr_max;
        cfg->pack_a(mr, kc, a_tile + ir * lda + pc, lda, a_rows, l.a_stride);
        for (size_t jr = 0; jr < nc; jr += nr_max) {
          const size_t nr = nc - jr < nr_max ? nc - jr : nr_max;
          cfg->ukernel(mr, nr, kcp, a_rows, l.a_stride, panels + jr * kcp * es, sums + jr,
                       c + ir * ldcu + jc + jr, ldcu, pc > 0);
        }
      }
    }
    if (whole) whole += whole_panels + whole_block_colsums(cfg, (size_t)p->n);
  }
}

void sk__qgemm_tile(const sk__qgemm_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int32_t *c,
                    int64_t ldc, void *workspace, sk__isa isa) {
  sk__qgemm_tile_config(sk__qgemm_config_for(isa), p, m0, m1, n0, n1, c, ldc, workspace);
}

void sk__qgemm_reference(const sk__qgemm_problem *p, int32_t *c, int64_t ldc) {
  for (int64_t i = 0; i < p->m; i++)
    for (int64_t j = 0; j < p->n; j++) {
      int32_t acc = 0; /* |sum| <= k * 2^14 < 2^31 for k <= SK_QGEMM_MAX_K */
      for (int64_t q = 0; q < p->k; q++) acc += (int32_t)p->a[i * p->lda + q] * (int32_t)p->b[q * p->ldb + j];
      c[i * ldc + j] = acc;
    }
}

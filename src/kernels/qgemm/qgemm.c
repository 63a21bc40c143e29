/* int8 GEMM driver (ISA-independent loops, workspace layout), the reference
 * and the ISA dispatch.
 *
 * Loop nest of one tile:
 *
 *   for jc over the tile's columns, NC at a time      (packed once: a group)
 *     for pc over K, cfg->kc at a time:               pack B[pc.., jc..] + column sums
 *       for ir over the tile's rows, MR at a time:    pack MR rows of A[.., pc..]
 *         for jr over the NC columns, NR at a time:   micro-kernel (C = or += block)
 *
 * A K block keeps a B micro-panel (kc x NR) in L1 next to the MR packed A
 * rows; the packed B chunk (kc x NC, about 512 KiB) stays in L2 and is
 * streamed once per MR rows. Integer sums are exact, so the K blocking and
 * every ISA give the reference's bits.
 */
#include <string.h>

#include "kernels/packed_groups.h"
#include "kernels/qgemm/qgemm_internal.h"

const sk__qgemm_config *sk__qgemm_config_for(sk__isa isa) {
  switch (isa) {
    case SK_ISA_AMX: return &sk__qs8_gemm_config_amx;
    case SK_ISA_AVX512BF16: /* bf16 adds nothing to int8 GEMMs */
    case SK_ISA_AVX512VNNI: return &sk__qs8_gemm_config_avx512vnni;
    case SK_ISA_AVX512: return &sk__qs8_gemm_config_avx512;
    case SK_ISA_AVX2: return &sk__qs8_gemm_config_avx2;
    default: return &sk__qs8_gemm_config_scalar;
  }
}

const char *sk__qgemm_kernel_name(sk__isa isa) {
  const sk__qgemm_config *cfg = sk__qgemm_config_for(isa);
  if (cfg == &sk__qs8_gemm_config_amx) return "int8 AMX tiles (amx)";
  if (cfg == &sk__qs8_gemm_config_avx512vnni) return "int8 VNNI dot products (avx512vnni)";
  if (cfg == &sk__qs8_gemm_config_avx512) return "int8 (avx512)";
  if (cfg == &sk__qs8_gemm_config_avx2) return "int8 (avx2)";
  return "int8 (scalar)";
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
                                    &sk__qs8_gemm_config_avx512, &sk__qs8_gemm_config_avx512vnni,
                                    &sk__qs8_gemm_config_amx};
  size_t best = 0;
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    size_t size = cfgs[i]->workspace_size
                      ? cfgs[i]->workspace_size(cfgs[i], (size_t)tile_m, (size_t)tile_n, (size_t)k)
                      : layout_for(cfgs[i], (size_t)tile_m, (size_t)tile_n, (size_t)k).total;
    if (size > best) best = size;
  }
  return best;
}

/* The packed layout (sk__qgemm_pack_b): panels in groups of GROUP_COLUMNS
 * columns (GROUP_COLUMNS / NR panels, the last group what is left), group
 * after group; in a group, K block after K block, each the group's panels
 * (kcp x NR elements each) then their int32 column sums. A group is one
 * contiguous run over all of k, and the tile loop reads it in that order,
 * so a tile of whole groups streams its weights in one pass (a decode
 * step; packed_groups.h). */
#define GROUP_COLUMNS SK_PACKED_GROUP_COLUMNS

/* Bytes of one K block of kc rows of a group of `panels` panels: the
 * panels, then their column sums. */
static size_t block_panel_bytes(const sk__qgemm_config *cfg, size_t kc, size_t panels) {
  return align64(panels * (size_t)cfg->nr * sk__qgemm_round_up(kc, (size_t)cfg->kgroup) * (size_t)cfg->b_elem_bytes);
}
static size_t block_bytes(const sk__qgemm_config *cfg, size_t kc, size_t panels) {
  return block_panel_bytes(cfg, kc, panels) + align64(panels * (size_t)cfg->nr * sizeof(int32_t));
}

/* Bytes of a group of `panels` panels over all k rows: its whole K blocks,
 * then the shorter last one. */
static size_t group_bytes(const sk__qgemm_config *cfg, size_t k, size_t panels) {
  const size_t kc = (size_t)cfg->kc, tail = k % kc;
  return k / kc * block_bytes(cfg, kc, panels) + (tail ? block_bytes(cfg, tail, panels) : 0);
}

/* Where panel j's K block starting at row pc lies in the packed layout
 * (bytes from its start), and where that block's column sums for panel j
 * begin. */
void sk__qgemm_packed_at(const sk__qgemm_config *cfg, size_t k, size_t n, size_t j, size_t pc, size_t *panel,
                         size_t *sums) {
  const size_t nr = (size_t)cfg->nr, group = GROUP_COLUMNS / nr, n_panels = (n + nr - 1) / nr;
  const size_t g = j / group, r = j % group, kc_full = (size_t)cfg->kc;
  const size_t in_group = n_panels - g * group < group ? n_panels - g * group : group;
  const size_t kc = k - pc < kc_full ? k - pc : kc_full;
  size_t block = g * group_bytes(cfg, k, group) + pc / kc_full * block_bytes(cfg, kc_full, in_group);
  *panel = block + r * nr * sk__qgemm_round_up(kc, (size_t)cfg->kgroup) * (size_t)cfg->b_elem_bytes;
  *sums = block + block_panel_bytes(cfg, kc, in_group) + r * nr * sizeof(int32_t);
}

size_t sk__qgemm_packed_b_size(sk__isa isa, int64_t k, int64_t n) {
  return sk__qgemm_packed_b_size_config(sk__qgemm_config_for(isa), k, n);
}

void sk__qgemm_pack_b(sk__isa isa, const int8_t *b, int64_t ldb, int64_t k, int64_t n, void *dst) {
  sk__qgemm_pack_b_config(sk__qgemm_config_for(isa), b, ldb, k, n, dst);
}

size_t sk__qgemm_packed_b_size_config(const sk__qgemm_config *cfg, int64_t k, int64_t n) {
  if (k <= 0 || n <= 0) return 0;
  const size_t nr = (size_t)cfg->nr, group = GROUP_COLUMNS / nr, n_panels = ((size_t)n + nr - 1) / nr;
  return n_panels / group * group_bytes(cfg, (size_t)k, group) + group_bytes(cfg, (size_t)k, n_panels % group);
}

void sk__qgemm_pack_b_config(const sk__qgemm_config *cfg, const int8_t *b, int64_t ldb, int64_t k, int64_t n,
                             void *dst) {
  const size_t nr = (size_t)cfg->nr, kk = (size_t)k;
  for (size_t j0 = 0; k > 0 && j0 < (size_t)n; j0 += GROUP_COLUMNS) {
    const size_t cols = (size_t)n - j0 < GROUP_COLUMNS ? (size_t)n - j0 : GROUP_COLUMNS;
    for (size_t pc = 0; pc < kk; pc += (size_t)cfg->kc) {
      const size_t kc = kk - pc < (size_t)cfg->kc ? kk - pc : (size_t)cfg->kc;
      size_t panel, sums;
      sk__qgemm_packed_at(cfg, kk, (size_t)n, j0 / nr, pc, &panel, &sums);
      cfg->pack_b(kc, cols, b + pc * (size_t)ldb + j0, (size_t)ldb, (char *)dst + panel,
                  (int32_t *)(void *)((char *)dst + sums));
    }
  }
}

void sk__qgemm_tile_config(const sk__qgemm_config *cfg, const sk__qgemm_problem *p, int64_t m0, int64_t m1,
                           int64_t n0, int64_t n1, int32_t *c, int64_t ldc, void *workspace) {
  if (m1 <= m0 || n1 <= n0) return;
  if (cfg->tile) {
    cfg->tile(cfg, p, m0, m1, n0, n1, c, ldc, workspace);
    return;
  }
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

  /* B packed once at compile: usable when the tile starts on a panel
   * boundary, as tilings make it. Read group by group, each K block of a
   * group in turn: one stream over the tile's weights. */
  const char *whole = p->b_packed && (size_t)n0 % nr_max == 0 ? p->b_packed : NULL;
  for (size_t jc = 0, nc; jc < n; jc += nc) {
    nc = n - jc < l.nc ? n - jc : l.nc;
    const size_t to_group_end = GROUP_COLUMNS - ((size_t)n0 + jc) % GROUP_COLUMNS;
    if (whole && nc > to_group_end) nc = to_group_end;
    for (size_t pc = 0; pc < k; pc += (size_t)cfg->kc) {
      const size_t kc = k - pc < (size_t)cfg->kc ? k - pc : (size_t)cfg->kc;
      const size_t kcp = sk__qgemm_round_up(kc, (size_t)cfg->kgroup);
      const char *panels = packed_b;
      const int32_t *sums = colsum;
      if (whole) {
        size_t panel_at, sums_at;
        sk__qgemm_packed_at(cfg, k, (size_t)p->n, ((size_t)n0 + jc) / nr_max, pc, &panel_at, &sums_at);
        panels = whole + panel_at;
        sums = (const int32_t *)(const void *)(whole + sums_at);
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

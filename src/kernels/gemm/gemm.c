/* GEMM driver (ISA-independent loops, workspace layout), the reference, and
 * the ISA dispatch. Built for the baseline x86-64 with -ffp-contract=off: the
 * reference is the oracle and must call fmaf exactly as the contract says.
 *
 * Loop nest of one tile (no K blocking, so each output is one fmaf chain):
 *
 *   for jc over the tile's columns, NC at a time:     pack B[:, jc:jc+NC]
 *     convert bias[jc:jc+NC] to fp32
 *     for ir over the tile's rows, MR at a time:      pack (convert) MR rows of A
 *       for jr over the NC columns, NR at a time:     micro-kernel
 *
 * The MR rows of A stay in L1 across the jr loop; the packed B chunk is sized
 * (NC) to stay in L2 and is streamed once per MR rows. Per k step a
 * micro-kernel reads MR + NR floats for MR * NR FMAs, which L2 sustains.
 */
#include <math.h>
#include <stdlib.h>

#include "kernels/gemm/gemm_internal.h"

static const sk__gemm_config *config_for(sk__isa isa) {
  switch (isa) {
    case SK_ISA_AVX512: return &sk__f32_gemm_config_avx512;
    case SK_ISA_AVX2: return &sk__f32_gemm_config_avx2;
    default: return &sk__f32_gemm_config_scalar;
  }
}

void sk__gemm_micro_tile(sk__isa isa, int64_t *mr, int64_t *nr) {
  const sk__gemm_config *cfg = config_for(isa);
  if (mr) *mr = cfg->mr;
  if (nr) *nr = cfg->nr;
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }
static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Columns of B packed at once: the packed chunk (k * NC floats) is kept near
 * 512 KiB so it stays in L2 (1 MiB on Zen 4) next to A rows and C; at least
 * two panels so A rows are not re-converted for every panel when k is big. */
static size_t nc_for(const sk__gemm_config *cfg, size_t k) {
  size_t nr = (size_t)cfg->nr;
  size_t nc = (131072 / (k ? k : 1)) / nr * nr;
  return nc < 2 * nr ? 2 * nr : nc;
}

/* Workspace layout for one config: [packed B][bias][A rows], each part
 * 64-byte aligned. */
typedef struct ws_layout {
  size_t nc;           /* columns per B chunk */
  size_t bias_offset;  /* bytes */
  size_t a_offset;     /* bytes */
  size_t total;        /* bytes */
} ws_layout;

static ws_layout layout_for(const sk__gemm_config *cfg, size_t tile_m, size_t tile_n,
                            size_t k) {
  ws_layout l;
  size_t nr = (size_t)cfg->nr, mr = (size_t)cfg->mr;
  size_t nc = nc_for(cfg, k);
  if (nc > round_up(tile_n, nr)) nc = round_up(tile_n, nr);
  l.nc = nc;
  l.bias_offset = align64(nc * k * sizeof(float));
  l.a_offset = l.bias_offset + align64(nc * sizeof(float));
  l.total = l.a_offset + align64((tile_m < mr ? tile_m : mr) * sk__gemm_a_stride(k) *
                                 sizeof(float));
  return l;
}

size_t sk__gemm_workspace_size(int64_t tile_m, int64_t tile_n, int64_t k) {
  if (tile_m <= 0 || tile_n <= 0 || k < 0) return 0;
  /* The isa is not an argument: size for the hungriest configuration. */
  const sk__gemm_config *cfgs[] = {&sk__f32_gemm_config_scalar, &sk__f32_gemm_config_avx2,
                                   &sk__f32_gemm_config_avx512};
  size_t best = 0;
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    ws_layout l = layout_for(cfgs[i], (size_t)tile_m, (size_t)tile_n, (size_t)k);
    if (l.total > best) best = l.total;
  }
  return best;
}

size_t sk__gemm_packed_b_size(sk__isa isa, int64_t k, int64_t n) {
  if (k <= 0 || n <= 0) return 0;
  return round_up((size_t)n, (size_t)config_for(isa)->nr) * (size_t)k * sizeof(float);
}

void sk__gemm_pack_b(sk__isa isa, const void *b, sk_dtype b_dtype, int64_t ldb, int64_t k, int64_t n, float *dst) {
  if (k <= 0 || n <= 0) return;
  config_for(isa)->pack_b((size_t)k, (size_t)n, b, (size_t)ldb, b_dtype, dst);
}

void sk__gemm_tile(const sk__gemm_problem *p, int64_t m0, int64_t m1, int64_t n0,
                   int64_t n1, void *workspace, sk__isa isa) {
  if (m1 <= m0 || n1 <= n0) return;
  const sk__gemm_config *cfg = config_for(isa);
  const size_t m = (size_t)(m1 - m0), n = (size_t)(n1 - n0), k = (size_t)p->k;
  const size_t mr_max = (size_t)cfg->mr, nr_max = (size_t)cfg->nr;
  const ws_layout l = layout_for(cfg, m, n, k);
  float *pack_buf = (float *)workspace;
  float *bias_f32 = (float *)((char *)workspace + l.bias_offset);
  float *a_rows = (float *)((char *)workspace + l.a_offset);
  const size_t a_stride = sk__gemm_a_stride(k);

  const size_t a_size = sk_dtype_size(p->a_dtype), b_size = sk_dtype_size(p->b_dtype);
  const size_t c_size = sk_dtype_size(p->c_dtype);
  const size_t lda = (size_t)p->lda, ldb = (size_t)p->ldb, ldc = (size_t)p->ldc;
  const char *a_tile = (const char *)p->a + (size_t)m0 * lda * a_size;
  char *c_tile = (char *)p->c + ((size_t)m0 * ldc + (size_t)n0) * c_size;

  /* Panels packed once at compile start at column 0: usable when the tile
   * starts on a panel boundary (tilings make widths multiples of NR). */
  const float *b_prepacked = p->b_packed && (size_t)n0 % nr_max == 0 ? p->b_packed + (size_t)n0 * k : NULL;
  for (size_t jc = 0; jc < n; jc += l.nc) {
    const size_t nc = n - jc < l.nc ? n - jc : l.nc;
    const float *packed_b = pack_buf;
    if (b_prepacked) packed_b = b_prepacked + jc * k;
    else cfg->pack_b(k, nc, (const char *)p->b + ((size_t)n0 + jc) * b_size, ldb, p->b_dtype, pack_buf);
    const float *bias = NULL;
    if (p->bias) {
      /* Padded with zeros to whole panels; the padding is never stored. */
      for (size_t j = 0; j < round_up(nc, nr_max); j++)
        bias_f32[j] = j < nc ? sk__gemm_load_scalar(p->bias, p->bias_dtype, (size_t)n0 + jc + j)
                             : 0.0f;
      bias = bias_f32;
    }
    for (size_t ir = 0; ir < m; ir += mr_max) {
      const size_t mr = m - ir < mr_max ? m - ir : mr_max;
      cfg->pack_a(mr, k, a_tile + ir * lda * a_size, lda, p->a_dtype, a_rows);
      for (size_t jr = 0; jr < nc; jr += nr_max) {
        const size_t nr = nc - jr < nr_max ? nc - jr : nr_max;
        cfg->ukernel(mr, nr, k, a_rows, a_stride, packed_b + jr * k, bias ? bias + jr : NULL,
                     c_tile + (ir * ldc + jc + jr) * c_size, ldc, p->c_dtype);
      }
    }
  }
}

/* The contract read literally: every operand converted where it is used. */
static void reference_direct(const sk__gemm_problem *p) {
  for (int64_t i = 0; i < p->m; i++) {
    for (int64_t j = 0; j < p->n; j++) {
      float acc = 0.0f;
      for (int64_t q = 0; q < p->k; q++) {
        float av = sk__gemm_load_scalar(p->a, p->a_dtype, (size_t)(i * p->lda + q));
        float bv = sk__gemm_load_scalar(p->b, p->b_dtype, (size_t)(q * p->ldb + j));
        acc = fmaf(av, bv, acc);
      }
      if (p->bias) acc = acc + sk__gemm_load_scalar(p->bias, p->bias_dtype, (size_t)j);
      sk__gemm_store_scalar(p->c, p->c_dtype, (size_t)(i * p->ldc + j), acc);
    }
  }
}

/* The same fmaf chains in the same order, with A's row and B (transposed)
 * converted to fp32 once instead of once per multiply: the conversions are
 * exact, so the bits are those of reference_direct, at a fraction of the
 * cost (the oracle runs after every fused run of the test suite, and in
 * unoptimized sanitizer builds the per-element conversion calls dominated
 * it). reference_direct when the scratch cannot be allocated. */
void sk__gemm_reference(const sk__gemm_problem *p) {
  const int64_t m = p->m, n = p->n, k = p->k, lda = p->lda, ldb = p->ldb, ldc = p->ldc;
  if (m <= 0 || n <= 0) return;
  const size_t kk = k > 0 ? (size_t)k : 0;
  float *bt = NULL;
  if (kk == 0 || (size_t)n <= (SIZE_MAX / sizeof(float) - 1) / kk - 1) /* n * k + k + 1 floats */
    bt = malloc(((size_t)n * kk + kk + 1) * sizeof(float));
  if (!bt) {
    reference_direct(p);
    return;
  }
  float *arow = bt + (size_t)n * kk;
  for (size_t q = 0; q < kk; q++)
    for (int64_t j = 0; j < n; j++) bt[(size_t)j * kk + q] = sk__gemm_load_scalar(p->b, p->b_dtype, q * (size_t)ldb + (size_t)j);
  for (int64_t i = 0; i < m; i++) {
    for (size_t q = 0; q < kk; q++) arow[q] = sk__gemm_load_scalar(p->a, p->a_dtype, (size_t)i * (size_t)lda + q);
    for (int64_t j = 0; j < n; j++) {
      const float *bcol = bt + (size_t)j * kk;
      float acc = 0.0f;
      for (size_t q = 0; q < kk; q++) acc = fmaf(arow[q], bcol[q], acc);
      if (p->bias) acc = acc + sk__gemm_load_scalar(p->bias, p->bias_dtype, (size_t)j);
      sk__gemm_store_scalar(p->c, p->c_dtype, (size_t)i * (size_t)ldc + (size_t)j, acc);
    }
  }
  free(bt);
}

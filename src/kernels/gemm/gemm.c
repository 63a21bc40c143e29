/* GEMM driver (ISA-independent loops, workspace layout), the reference, and
 * the ISA dispatch. Built for the baseline x86-64 with -ffp-contract=off: the
 * reference is the oracle and must call fmaf exactly as the contract says.
 *
 * Loop nest of one tile:
 *
 *   for jc over the tile's columns, NC at a time:     convert bias[jc:jc+NC]
 *     for pc over k, KC at a time:                    pack B[pc:pc+KC, jc:jc+NC]
 *       for ir over the tile's rows, MR at a time:    pack (convert) A[ir:ir+MR, pc:pc+KC]
 *         for jr over the NC columns, NR at a time:   micro-kernel
 *
 * The MR x KC rows of A stay in L1 across the jr loop; the packed B block is
 * sized to stay in L2 and is streamed once per MR rows. Per k step a
 * micro-kernel reads MR + NR floats for MR * NR FMAs, which L2 sustains.
 * Between k blocks each micro-tile's fp32 sums wait in the acc scratch and
 * the next block continues them, so each output is still one fmaf chain.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/packed_groups.h"

static const sk__gemm_config *config_for(sk__isa isa) {
  switch (isa) {
    case SK_ISA_AMX: /* AMX adds int8 tiles only: the float path is AVX-512's */
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

/* K blocking. Up to KC_MAX steps run as one block (what the seed's shapes
 * and most small layers need, with no scratch traffic at all); longer k is
 * cut into blocks of KC steps: the MR rows of A then take MR * KC floats
 * (6-8 KiB) and stay in L1 across the micro-panels. */
#ifndef SK_GEMM_KC
#define SK_GEMM_KC 256
#endif
#define KC_MAX (2 * SK_GEMM_KC)

/* Bytes of one packed B block (kc x NC floats): sized to stay in L2 (512
 * KiB on Zen 3, 1-2 MiB on Zen 4 and Intel) beside the A rows and the
 * accumulators of the micro-tile being computed. */
#ifndef SK_GEMM_B_BLOCK_BYTES
#define SK_GEMM_B_BLOCK_BYTES (256 * 1024)
#endif

/* Tiles of at most this many rows run 16-bit constant panels through the
 * widening micro-kernel. bench_gemm_large, 4096x2048 bf16 on an AMD EPYC (family 25 model 17), 1
 * thread: 32 rows 7.2-8.9 ms against 10.2-11.0 with the widening pass, 64
 * rows 16.4 against 17.4-18.9; at 256 rows the two are even (65-72 ms),
 * the pass being amortized over many row blocks. */
#ifndef SK_GEMM_DIRECT16_MAX_M
#define SK_GEMM_DIRECT16_MAX_M 64
#endif

static size_t kc_for(size_t k) { return k <= KC_MAX ? k : SK_GEMM_KC; }

int64_t sk__gemm_k_block(int64_t k) { return k <= 0 ? 0 : (int64_t)kc_for((size_t)k); }

/* Columns of B packed at once; at least two panels so A rows are not
 * re-converted for every panel. */
static size_t nc_for(const sk__gemm_config *cfg, size_t kc) {
  size_t nr = (size_t)cfg->nr;
  size_t nc = (SK_GEMM_B_BLOCK_BYTES / sizeof(float) / (kc ? kc : 1)) / nr * nr;
  return nc < 2 * nr ? 2 * nr : nc;
}

/* Workspace layout for one config: [packed B block][bias][A rows][acc],
 * each part 64-byte aligned; acc (the fp32 sums carried between k blocks,
 * one MR x NR block per micro-tile of a B block) only when k is blocked. */
typedef struct ws_layout {
  size_t kc;           /* k steps per block */
  size_t nc;           /* columns per B block */
  size_t bias_offset;  /* bytes */
  size_t a_offset;     /* bytes */
  size_t acc_offset;   /* bytes */
  size_t total;        /* bytes */
} ws_layout;

static ws_layout layout_for(const sk__gemm_config *cfg, size_t tile_m, size_t tile_n,
                            size_t k) {
  ws_layout l;
  size_t nr = (size_t)cfg->nr, mr = (size_t)cfg->mr;
  l.kc = kc_for(k);
  size_t nc = nc_for(cfg, l.kc);
  if (nc > round_up(tile_n, nr)) nc = round_up(tile_n, nr);
  l.nc = nc;
  l.bias_offset = align64(nc * l.kc * sizeof(float));
  l.a_offset = l.bias_offset + align64(nc * sizeof(float));
  l.acc_offset = l.a_offset + align64((tile_m < mr ? tile_m : mr) * sk__gemm_a_stride(l.kc) *
                                      sizeof(float));
  l.total = l.acc_offset;
  if (l.kc < k) l.total += align64(round_up(tile_m, mr) * nc * sizeof(float));
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

static bool is_16bit(sk_dtype dtype) { return dtype == SK_FP16 || dtype == SK_BF16; }

size_t sk__gemm_packed_b_size(sk__isa isa, sk_dtype b_dtype, int64_t k, int64_t n) {
  if (k <= 0 || n <= 0) return 0;
  return round_up((size_t)n, (size_t)config_for(isa)->nr) * (size_t)k * (is_16bit(b_dtype) ? 2 : sizeof(float));
}

#define GROUP_COLUMNS SK_PACKED_GROUP_COLUMNS

/* The packed layout: panels (NR columns each, past n zero) in groups of
 * GROUP_COLUMNS / NR, the last group holding what is left; group after
 * group; in a group, K block after K block (kc_for(k) rows each, the last
 * shorter); in a K block, the group's panels, kc_b x NR values each.
 *   - A group is one contiguous run over all of k, and the tile loop reads
 *     it in that order (a K block's panels, then the next K block's), so a
 *     tile of whole groups streams one run of weights from start to end:
 *     what a decode step is (packed_groups.h).
 *   - A K block of a group is one run too: the tile reads it in place, or
 *     widens it in one call, and the rows of A packed for it stay in L1
 *     across the group's panels.
 * Returns panel j's K block starting at row pc, in elements from the start. */
static size_t packed_offset(size_t nr, size_t k, size_t n_panels, size_t j, size_t pc) {
  const size_t group = GROUP_COLUMNS / nr, g = j / group, r = j % group, kb = kc_for(k);
  const size_t in_group = n_panels - g * group < group ? n_panels - g * group : group;
  const size_t kc = k - pc < kb ? k - pc : kb;
  return (g * group * k + pc * in_group + r * kc) * nr;
}

void sk__gemm_pack_b(sk__isa isa, const void *b, sk_dtype b_dtype, int64_t ldb, int64_t k, int64_t n, void *dst) {
  if (k <= 0 || n <= 0) return;
  const sk__gemm_config *cfg = config_for(isa);
  const size_t nr = (size_t)cfg->nr, kk = (size_t)k, n_panels = ((size_t)n + nr - 1) / nr, kb = kc_for(kk);
  const size_t es = sk_dtype_size(b_dtype), packed_es = is_16bit(b_dtype) ? 2 : sizeof(float);
  for (size_t j = 0; j < n_panels; j++) {
    const size_t j0 = j * nr, cols = (size_t)n - j0 < nr ? (size_t)n - j0 : nr;
    for (size_t pc = 0; pc < kk; pc += kb) {
      const size_t kc = kk - pc < kb ? kk - pc : kb;
      char *out = (char *)dst + packed_offset(nr, kk, n_panels, j, pc) * packed_es;
      const char *src = (const char *)b + (pc * (size_t)ldb + j0) * es;
      if (!is_16bit(b_dtype)) {
        cfg->pack_b(kc, cols, src, (size_t)ldb, b_dtype, (float *)(void *)out);
        continue;
      }
      /* B's own 16 bits: plain copies, once per constant. */
      for (size_t p = 0; p < kc; p++, out += nr * 2) {
        memcpy(out, src + p * (size_t)ldb * 2, cols * 2);
        memset(out + cols * 2, 0, (nr - cols) * 2);
      }
    }
  }
}

void sk__gemm_tile(const sk__gemm_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1, void *workspace,
                   sk__isa isa) {
  if (m1 <= m0 || n1 <= n0) return;
  const sk__gemm_config *cfg = config_for(isa);
  const size_t m = (size_t)(m1 - m0), n = (size_t)(n1 - n0), k = (size_t)p->k;
  const size_t mr_max = (size_t)cfg->mr, nr_max = (size_t)cfg->nr;
  const ws_layout l = layout_for(cfg, m, n, k);
  float *pack_buf = (float *)workspace;
  float *bias_f32 = (float *)((char *)workspace + l.bias_offset);
  float *a_rows = (float *)((char *)workspace + l.a_offset);
  float *acc = l.kc < k ? (float *)((char *)workspace + l.acc_offset) : NULL;

  const size_t a_size = sk_dtype_size(p->a_dtype), b_size = sk_dtype_size(p->b_dtype);
  const size_t c_size = sk_dtype_size(p->c_dtype);
  const size_t lda = (size_t)p->lda, ldb = (size_t)p->ldb, ldc = (size_t)p->ldc;
  const char *a_tile = (const char *)p->a + (size_t)m0 * lda * a_size;
  char *c_tile = (char *)p->c + ((size_t)m0 * ldc + (size_t)n0) * c_size;

  const bool b16 = is_16bit(p->b_dtype);
  const size_t b_size_packed = b16 ? 2 : sizeof(float), n_panels = ((size_t)p->n + nr_max - 1) / nr_max;
  /* Panels packed once at compile (sk__gemm_pack_b's layout): usable when
   * the tile starts on a panel boundary (tilings make widths multiples of
   * NR); its K blocks are the packer's (both kc_for(k)). */
  const char *b_prepacked = p->b_packed && (size_t)n0 % nr_max == 0 ? p->b_packed : NULL;
  /* Few rows read each weight only a few times: the micro-kernel widens the
   * 16-bit panels itself instead of a pass that writes them out as fp32. */
  const bool direct16 = b_prepacked && b16 && cfg->ukernel16 && m <= SK_GEMM_DIRECT16_MAX_M;
  /* Panels read where they lie: fp32 ones, and 16-bit ones for direct16. */
  const bool in_place = b_prepacked && (!b16 || direct16);
  /* Few rows on packed panels read each weight a few times at most, from
   * memory: the tile goes one group at a time, so each K block of its step
   * is one run and the weights stream in one pass. (Many rows keep steps
   * of several groups: one group a step repacked their A rows so often
   * that 256-1024 rows ran 4-7% slower at 1 thread.) */
  const bool one_stream = b_prepacked && m <= SK_GEMM_DIRECT16_MAX_M;
  for (size_t jc = 0, nc; jc < n; jc += nc) {
    nc = n - jc < l.nc ? n - jc : l.nc;
    const size_t to_group_end = GROUP_COLUMNS - ((size_t)n0 + jc) % GROUP_COLUMNS;
    if (one_stream && nc > to_group_end) nc = to_group_end;
    const size_t panels = (nc + nr_max - 1) / nr_max, panel0 = ((size_t)n0 + jc) / nr_max;
    const float *bias = NULL;
    if (p->bias) {
      /* Padded with zeros to whole panels; the padding is never stored. */
      for (size_t j = 0; j < panels * nr_max; j++)
        bias_f32[j] = j < nc ? sk__gemm_load_scalar(p->bias, p->bias_dtype, (size_t)n0 + jc + j)
                             : 0.0f;
      bias = bias_f32;
    }
    /* k = 0 still runs one (empty) block: the output is the bias. */
    for (size_t pc = 0; pc == 0 || pc < k; pc += l.kc > 0 ? l.kc : 1) {
      const size_t kc = k - pc < l.kc ? k - pc : l.kc;
      const bool first = pc == 0, last = pc + kc >= k;
      const size_t a_stride = sk__gemm_a_stride(kc); /* as pack_a lays out kc columns */
      /* One group a step: its panels of this K block lie back to back. */
      const char *run = one_stream ? b_prepacked + packed_offset(nr_max, k, n_panels, panel0, pc) * b_size_packed : NULL;
      if (b_prepacked && !in_place) /* widened, panel by panel, to kc x NR fp32 panels back to back */
        for (size_t j = 0; j < panels; j++)
          cfg->pack_b(kc, nr_max, b_prepacked + packed_offset(nr_max, k, n_panels, panel0 + j, pc) * 2, nr_max,
                      p->b_dtype, pack_buf + j * kc * nr_max);
      else if (!b_prepacked)
        cfg->pack_b(kc, nc, (const char *)p->b + (pc * ldb + (size_t)n0 + jc) * b_size, ldb,
                    p->b_dtype, pack_buf);
      for (size_t ir = 0; ir < m; ir += mr_max) {
        const size_t mr = m - ir < mr_max ? m - ir : mr_max;
        cfg->pack_a(mr, kc, a_tile + (ir * lda + pc) * a_size, lda, p->a_dtype, a_rows);
        float *acc_row = acc ? acc + (ir / mr_max) * panels * mr_max * nr_max : NULL;
        for (size_t jr = 0, j = 0; jr < nc; jr += nr_max, j++) {
          const size_t nr = nc - jr < nr_max ? nc - jr : nr_max;
          float *carry = acc_row ? acc_row + j * mr_max * nr_max : NULL;
          void *c_at = c_tile + (ir * ldc + jc + jr) * c_size;
          const void *w = !in_place ? (const void *)(pack_buf + j * kc * nr_max)
                          : run     ? (const void *)(run + j * kc * nr_max * b_size_packed)
                                    : (const void *)(b_prepacked + packed_offset(nr_max, k, n_panels, panel0 + j, pc) *
                                                                     b_size_packed);
          if (direct16)
            cfg->ukernel16(mr, nr, kc, a_rows, a_stride, w, p->b_dtype, first ? NULL : carry, last ? NULL : carry,
                           bias ? bias + jr : NULL, c_at, ldc, p->c_dtype);
          else
            cfg->ukernel(mr, nr, kc, a_rows, a_stride, w, first ? NULL : carry, last ? NULL : carry,
                         bias ? bias + jr : NULL, c_at, ldc, p->c_dtype);
        }
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

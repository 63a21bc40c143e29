/* GEMM driver: the ISA dispatch, the workspace, and the loops of one tile,
 * on the FMA kernels or (bf16 A times bf16 weights on a CPU with a checked
 * VDPBF16PS) the dot-product kernel. Packing is in gemm_pack.c, the
 * reference in gemm_reference.c.
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
 * the next block continues them, so each output is still one chain.
 *
 * bf16 weights follow bf16_contract.h: k runs in whole pairs (an odd k gets
 * a zero step, in A's packed rows and B's panels), each pair's odd step
 * first (the FMA kernels read A's rows and B's panels with each pair
 * swapped; VDPBF16PS takes that order itself), and the tile holds
 * MXCSR.FTZ/DAZ, restored before it returns.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/gemm/bf16_contract.h"
#include "kernels/gemm/bf16_dot.h"
#include "kernels/gemm/gemm_internal.h"

const sk__gemm_config *sk__gemm_config_for(sk__isa isa) {
  if (isa >= SK_ISA_AVX512) return &sk__f32_gemm_config_avx512;
  if (isa == SK_ISA_AVX2) return &sk__f32_gemm_config_avx2;
  return &sk__f32_gemm_config_scalar;
}

void sk__gemm_micro_tile(sk__isa isa, int64_t *mr, int64_t *nr) {
  const sk__gemm_config *cfg = sk__gemm_config_for(isa);
  if (mr) *mr = cfg->mr;
  if (nr) *nr = cfg->nr;
}

void sk__gemm_micro_tile_for(sk__isa isa, sk_numerics numerics, sk_dtype a_dtype, sk_dtype b_dtype, int64_t *mr,
                             int64_t *nr) {
  sk__gemm_micro_tile(isa, mr, nr);
  if (mr && numerics == SK_NUMERICS_AMX && a_dtype == SK_BF16 && b_dtype == SK_BF16)
    *mr = sk__bf16_gemm_config_amx.mr;
}

int sk__gemm_pair_layout(sk__isa isa, sk_numerics numerics) {
  return numerics == SK_NUMERICS_AMX || sk__gemm_bf16_dot_usable(isa);
}

/* The AMX contract's kernel for isa: the instructions, or their emulation. */
static const sk__gemm_dot_config *amx_bf16_kernel(sk__isa isa) {
  return isa == SK_ISA_AMX && sk__cpu_has_amx_bf16() ? &sk__bf16_gemm_config_amx : &sk__bf16_gemm_config_amx_emulated;
}

const char *sk__gemm_kernel_name(sk__isa isa, sk_numerics numerics, sk_dtype a_dtype, sk_dtype b_dtype) {
  if (numerics == SK_NUMERICS_AMX && a_dtype == SK_BF16 && b_dtype == SK_BF16)
    return amx_bf16_kernel(isa) == &sk__bf16_gemm_config_amx ? "bf16 AMX tiles 32x32, AMX contract (amx)"
                                                              : "bf16 AMX tiles 32x32, AMX contract (emulated)";
  if (b_dtype == SK_BF16 && a_dtype == SK_BF16 && sk__gemm_bf16_dot_usable(isa))
    return "bf16 dot products 8x32 (avx512bf16)";
  const sk__gemm_config *cfg = sk__gemm_config_for(isa);
  return b_dtype == SK_BF16 ? cfg->name_bf16 : cfg->name;
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }
static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

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

int64_t sk__gemm_k_block(int64_t k) { return k <= 0 ? 0 : (int64_t)sk__gemm_kc_for((size_t)k); }

/* Columns of B packed at once; at least two panels so A rows are not
 * re-converted for every panel. */
static size_t nc_for(size_t nr, size_t kc) {
  size_t nc = (SK_GEMM_B_BLOCK_BYTES / sizeof(float) / (kc ? kc : 1)) / nr * nr;
  return nc < 2 * nr ? 2 * nr : nc;
}

/* Workspace layout for one config: [packed B block][bias][A rows][acc],
 * each part 64-byte aligned; acc (the fp32 sums carried between k blocks,
 * one MR x NR block per micro-tile of a B block) only when k is blocked.
 * ks is the tile's k steps (sk__gemm_k_steps). */
typedef struct ws_layout {
  size_t kc;           /* k steps per block */
  size_t nc;           /* columns per B block */
  size_t bias_offset;  /* bytes */
  size_t a_offset;     /* bytes */
  size_t acc_offset;   /* bytes */
  size_t total;        /* bytes */
} ws_layout;

static ws_layout layout_for(size_t mr, size_t nr, size_t acc_nr, size_t tile_m, size_t tile_n, size_t ks) {
  ws_layout l;
  l.kc = sk__gemm_kc_for(ks);
  size_t nc = nc_for(nr, l.kc);
  if (nc > round_up(tile_n, nr)) nc = round_up(tile_n, nr);
  l.nc = nc;
  l.bias_offset = align64(nc * l.kc * sizeof(float));
  l.a_offset = l.bias_offset + align64(nc * sizeof(float));
  /* Rows of A: the AMX kernel's tiles load 16 at a time. */
  size_t rows = tile_m < mr ? tile_m : mr;
  if (mr >= 16) rows = round_up(rows, 16);
  l.acc_offset = l.a_offset + align64(rows * sk__gemm_a_stride(l.kc) * sizeof(float));
  l.total = l.acc_offset;
  /* acc: per micro-tile, mr x acc_nr sums (the kernel's block: acc_nr is
   * the dot kernel's NR, wider than the panels below AVX-512) */
  if (l.kc < ks) l.total += align64(round_up(tile_m, mr) * (nc / nr) * acc_nr * sizeof(float));
  return l;
}

size_t sk__gemm_workspace_size(int64_t tile_m, int64_t tile_n, int64_t k) {
  if (tile_m <= 0 || tile_n <= 0 || k < 0) return 0;
  /* Neither the isa nor the dtypes are arguments: size for the hungriest
   * configuration, and for k padded to whole pairs. */
  const sk__gemm_config *cfgs[] = {&sk__f32_gemm_config_scalar, &sk__f32_gemm_config_avx2,
                                   &sk__f32_gemm_config_avx512};
  const size_t ks = sk__gemm_k_steps(SK_BF16, (size_t)k);
  size_t best = 0;
  /* Each FMA configuration's panels, alone or under a dot kernel's blocks
   * (the AMX contract's 32 x 32 also where the panels are narrower). */
  const sk__gemm_dot_config *dots[] = {NULL, &sk__bf16_gemm_config_avx512bf16, &sk__bf16_gemm_config_amx};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
    for (size_t d = 0; d < sizeof dots / sizeof dots[0]; d++) {
      const size_t nr = (size_t)cfgs[i]->nr, mr = (size_t)(dots[d] ? dots[d]->mr : cfgs[i]->mr);
      const size_t acc_nr = dots[d] && (size_t)dots[d]->nr > nr ? (size_t)dots[d]->nr : nr;
      ws_layout l = layout_for(mr, nr, acc_nr, (size_t)tile_m, (size_t)tile_n, ks);
      if (l.total > best) best = l.total;
    }
  const size_t whole_k = sk__bf16_gemm_config_amx.whole_k_workspace((size_t)tile_m, (size_t)k);
  return whole_k > best ? whole_k : best;
}

/* How a tile multiplies, fixed before its loops. */
typedef struct tile_plan {
  const sk__gemm_config *cfg;        /* the FMA kernels (their NR is the panels' width) */
  const sk__gemm_dot_config *dot;    /* VDPBF16PS (bf16 A and weights), or NULL */
  bool pairs;                        /* bf16 weights: steps in swapped pairs (FMA path) */
  bool pair_layout;                  /* the packed bf16 panels are in the pair layout */
  size_t k, ks;                      /* k, and the steps run (k padded for pairs) */
} tile_plan;

/* A rows [0, mr) over steps [pc, pc + kc) (real of them in A) in the form
 * the kernel reads: fp32 (pairs swapped for bf16 weights), or bf16 pairs
 * for the dot kernel. Returns the row stride, in the kernel's elements. */
static size_t pack_a_rows(const tile_plan *t, size_t mr, size_t real, size_t kc, const char *a, size_t lda,
                          sk_dtype a_dtype, float *rows) {
  const size_t stride = sk__gemm_a_stride(kc); /* floats; equal to a_stride(real) (kc - real <= 1, real odd) */
  if (t->dot) {
    uint16_t *out = (uint16_t *)(void *)rows; /* 2 * stride bf16 values a row: kc of them fit */
    for (size_t i = 0; i < mr; i++) {
      memcpy(out + i * 2 * stride, a + i * lda * 2, real * 2);
      if (real < kc) out[i * 2 * stride + real] = 0;
    }
    return stride; /* in pairs: 2 * stride bf16 values */
  }
  t->cfg->pack_a(mr, real, a, lda, a_dtype, t->pairs, rows);
  return stride;
}

static void tile_loops(const sk__gemm_problem *p, const tile_plan *t, size_t m0, size_t m1, size_t n0, size_t n1,
                       void *workspace) {
  const sk__gemm_config *cfg = t->cfg;
  const size_t m = m1 - m0, n = n1 - n0, k = t->k, ks = t->ks;
  const size_t mr_max = (size_t)(t->dot ? t->dot->mr : cfg->mr), nr_max = (size_t)cfg->nr;
  /* The sums carried between K blocks: the kernel's block (a dot kernel's
   * may be wider than the panels). */
  const size_t acc_nr = t->dot && (size_t)t->dot->nr > nr_max ? (size_t)t->dot->nr : nr_max;
  const ws_layout l = layout_for(mr_max, nr_max, acc_nr, m, n, ks);
  float *pack_buf = (float *)workspace;
  float *bias_f32 = (float *)((char *)workspace + l.bias_offset);
  float *a_rows = (float *)((char *)workspace + l.a_offset);
  float *acc = l.kc < ks ? (float *)((char *)workspace + l.acc_offset) : NULL;

  const size_t a_size = sk_dtype_size(p->a_dtype), b_size = sk_dtype_size(p->b_dtype);
  const size_t c_size = sk_dtype_size(p->c_dtype);
  const size_t lda = (size_t)p->lda, ldb = (size_t)p->ldb, ldc = (size_t)p->ldc;
  const char *a_tile = (const char *)p->a + m0 * lda * a_size;
  char *c_tile = (char *)p->c + (m0 * ldc + n0) * c_size;

  const bool b16 = sk__gemm_is_16bit(p->b_dtype), bf16 = p->b_dtype == SK_BF16;
  const size_t b_size_packed = b16 ? 2 : sizeof(float), n_panels = ((size_t)p->n + nr_max - 1) / nr_max;
  /* Panels packed once at compile (sk__gemm_pack_b's layout): usable when
   * the tile starts on a panel boundary (tilings make widths multiples of
   * NR); its K blocks are the packer's (both sk__gemm_kc_for(ks)). */
  const char *b_prepacked = p->b_packed && n0 % nr_max == 0 ? p->b_packed : NULL;
  /* Few rows read each weight only a few times: the micro-kernel widens the
   * 16-bit panels itself instead of a pass that writes them out as fp32
   * (not from the pair layout: only the dot kernel reads that). */
  const bool direct16 = b_prepacked && b16 && cfg->ukernel16 && m <= SK_GEMM_DIRECT16_MAX_M && !t->pair_layout;
  /* Panels read where they lie: fp32 ones, 16-bit ones for direct16, and
   * every bf16 one for the dot kernel. */
  const bool in_place = b_prepacked && (!b16 || direct16 || t->dot);
  /* Few rows on packed panels read each weight a few times at most, from
   * memory: the tile goes one group at a time, so each K block of its step
   * is one run and the weights stream in one pass. (Many rows keep steps
   * of several groups: one group a step repacked their A rows so often
   * that 256-1024 rows ran 4-7% slower at 1 thread.) */
  const bool one_stream = b_prepacked && m <= SK_GEMM_DIRECT16_MAX_M;
  for (size_t jc = 0, nc; jc < n; jc += nc) {
    nc = n - jc < l.nc ? n - jc : l.nc;
    const size_t to_group_end = SK_PACKED_GROUP_COLUMNS - (n0 + jc) % SK_PACKED_GROUP_COLUMNS;
    if (one_stream && nc > to_group_end) nc = to_group_end;
    const size_t panels = (nc + nr_max - 1) / nr_max, panel0 = (n0 + jc) / nr_max;
    const float *bias = NULL;
    if (p->bias) {
      /* Padded with zeros to whole panels; the padding is never stored. */
      for (size_t j = 0; j < panels * nr_max; j++)
        bias_f32[j] = j < nc ? sk__gemm_load_scalar(p->bias, p->bias_dtype, n0 + jc + j) : 0.0f;
      bias = bias_f32;
    }
    /* k = 0 still runs one (empty) block: the output is the bias. */
    for (size_t pc = 0; pc == 0 || pc < ks; pc += l.kc > 0 ? l.kc : 1) {
      const size_t kc = ks - pc < l.kc ? ks - pc : l.kc, real = k - pc < kc ? k - pc : kc;
      const bool first = pc == 0, last = pc + kc >= ks;
      /* One group a step: its panels of this K block lie back to back. */
      const char *run = one_stream ? b_prepacked + sk__gemm_packed_offset(nr_max, ks, n_panels, panel0, pc) * b_size_packed
                                   : NULL;
      if (b_prepacked && !in_place) { /* widened, panel by panel, to kc x NR fp32 panels back to back */
        for (size_t j = 0; j < panels; j++) {
          const char *panel = b_prepacked + sk__gemm_packed_offset(nr_max, ks, n_panels, panel0 + j, pc) * 2;
          if (t->pair_layout)
            sk__gemm_widen_pairs(kc, nr_max, (const uint16_t *)(const void *)panel, pack_buf + j * kc * nr_max);
          else
            cfg->pack_b(kc, nr_max, panel, nr_max, p->b_dtype, pack_buf + j * kc * nr_max);
        }
      } else if (!b_prepacked && bf16) {
        for (size_t j = 0; j < panels; j++) {
          const size_t j0 = n0 + jc + j * nr_max, cols = nc - j * nr_max < nr_max ? nc - j * nr_max : nr_max;
          if (t->dot)
            sk__gemm_pack_bf16_block(1, p->b, ldb, k, pc, kc, j0, cols, nr_max,
                                     (uint16_t *)(void *)pack_buf + j * kc * nr_max);
          else
            sk__gemm_pack_bf16_block_f32(p->b, ldb, k, pc, kc, j0, cols, nr_max, pack_buf + j * kc * nr_max);
        }
      } else if (!b_prepacked) {
        cfg->pack_b(kc, nc, (const char *)p->b + (pc * ldb + n0 + jc) * b_size, ldb, p->b_dtype, pack_buf);
      }
      const size_t w_size = t->dot ? 2 : !in_place ? sizeof(float) : b_size_packed; /* of the panels read */
      for (size_t ir = 0; ir < m; ir += mr_max) {
        const size_t mr = m - ir < mr_max ? m - ir : mr_max;
        const size_t a_stride = pack_a_rows(t, mr, real, kc, a_tile + (ir * lda + pc) * a_size, lda, p->a_dtype, a_rows);
        float *acc_row = acc ? acc + (ir / mr_max) * panels * mr_max * acc_nr : NULL;
        for (size_t jr = 0, j = 0; jr < nc; jr += nr_max, j++) {
          const size_t nr = nc - jr < nr_max ? nc - jr : nr_max;
          float *carry = acc_row ? acc_row + j * mr_max * acc_nr : NULL;
          void *c_at = c_tile + (ir * ldc + jc + jr) * c_size;
          const void *w = !b_prepacked || !in_place ? (const void *)((const char *)pack_buf + j * kc * nr_max * w_size)
                          : run ? (const void *)(run + j * kc * nr_max * w_size)
                                : (const void *)(b_prepacked +
                                                 sk__gemm_packed_offset(nr_max, ks, n_panels, panel0 + j, pc) * w_size);
          const float *acc_in = first ? NULL : carry, *bias_at = bias ? bias + jr : NULL;
          float *acc_out = last ? NULL : carry;
          if (t->dot)
            t->dot->ukernel(mr, nr, kc / 2, (const uint32_t *)(const void *)a_rows, a_stride, w, nr_max, acc_in,
                            acc_out, bias_at, c_at, ldc, p->c_dtype);
          else if (direct16)
            cfg->ukernel16(mr, nr, kc, a_rows, a_stride, w, p->b_dtype, acc_in, acc_out, bias_at, c_at, ldc,
                           p->c_dtype);
          else
            cfg->ukernel(mr, nr, kc, a_rows, a_stride, w, acc_in, acc_out, bias_at, c_at, ldc, p->c_dtype);
        }
      }
    }
  }
}

void sk__gemm_tile(const sk__gemm_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1, void *workspace,
                   sk__isa isa) {
  if (m1 <= m0 || n1 <= n0) return;
  tile_plan t = {sk__gemm_config_for(isa), NULL, false, false, (size_t)p->k, (size_t)p->k};
  if (p->b_dtype != SK_BF16) {
    tile_loops(p, &t, (size_t)m0, (size_t)m1, (size_t)n0, (size_t)n1, workspace);
    return;
  }
  t.ks = sk__gemm_k_steps(SK_BF16, t.k);
  t.pair_layout = sk__gemm_pair_layout(isa, p->numerics);
  if (p->numerics == SK_NUMERICS_AMX && p->a_dtype == SK_BF16) t.dot = amx_bf16_kernel(isa);
  else if (t.pair_layout && p->a_dtype == SK_BF16 && sk__gemm_bf16_dot_usable(isa))
    t.dot = &sk__bf16_gemm_config_avx512bf16;
  t.pairs = t.dot == NULL;
  /* The contract's flushing, for the FMAs, the dot products' bias add and
   * nothing of the caller's. */
  const unsigned int mxcsr = _mm_getcsr();
  _mm_setcsr(mxcsr | SK__MXCSR_FTZ_DAZ);
  /* The dot kernel's own whole-k loop where it has one and the weights
   * and A allow it (the AMX contract's: 1.5-2x the K-blocked loop's speed
   * at 512 x 2048 x 768, whose sums left the tiles every 256 k). */
  const bool whole_k =
      t.dot && t.dot->whole_k && p->b_packed && n0 % t.dot->nr == 0 && (size_t)t.cfg->nr == (size_t)t.dot->nr;
  if (whole_k) t.dot->whole_k(p, (size_t)m0, (size_t)m1, (size_t)n0, (size_t)n1, workspace);
  else tile_loops(p, &t, (size_t)m0, (size_t)m1, (size_t)n0, (size_t)n1, workspace);
  _mm_setcsr(mxcsr);
}

/* AVX-512 GEMM path (F/BW/DQ/VL + F16C): packing with hardware conversion
 * and a register-blocked MR x NR micro-kernel, in two forms: on fp32 panels,
 * and on 16-bit (fp16 / bf16) constant panels widened in registers as they
 * are loaded (gemm.c uses it for tiles of few rows).
 *
 * Tile 8 x 32: 16 zmm accumulators, 2 B vectors, 1 broadcast. On Zen 4 a zmm
 * FMA issues once per cycle (two double-pumped 256-bit pipes, latency 4), so
 * any tile with >= 8 accumulators is FMA-bound and the choice comes down to
 * edge waste and memory streams. Measured (one tile, fp16, packing included;
 * peak measured at 117 GFLOP/s): 8x32 and 4x64 ~113 GFLOP/s, 6x64 ~112,
 * 10x32 ~111, 12x32 ~110, 16x16 ~107, 14x32 ~105 (256 rows are not a
 * multiple of 14; and at k = 2048 it fell to 45-80 GFLOP/s), 8x48 ~101.
 * 8x32 divides the seed shapes exactly and keeps few A streams.
 * SK_GEMM_AVX512_MR/NR override the tile at build time for tuning.
 */
#include <immintrin.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/avx512_tile.h"

/* Vectors start at multiples of 16, so pairs never straddle two, and the
 * lanes past k (an odd k's zero step among them) load as zero. */
SK_ALWAYS_INLINE void pack_a_impl(size_t mr, size_t k, const void *a, size_t lda,
                                  sk_dtype dtype, int swap_pairs, float *dst) {
  const size_t stride = sk__gemm_a_stride(k);
  for (size_t i = 0; i < mr; i++)
    for (size_t p = 0; p < k; p += 16) { /* stride >= k rounded up: full stores fit */
      __m512 x = load_f32(a, dtype, i * lda + p, lane_mask(k - p, 0));
      if (swap_pairs) x = _mm512_permute_ps(x, 0xB1); /* lanes 1 0 3 2 ... */
      _mm512_store_ps(dst + i * stride + p, x);
    }
}

static void pack_a_avx512(size_t mr, size_t k, const void *a, size_t lda, sk_dtype dtype, int swap_pairs,
                          float *dst) {
  /* One loop per dtype (a constant after inlining); the swap is one
   * predictable branch per vector. */
  switch (dtype) {
    case SK_FP16: pack_a_impl(mr, k, a, lda, SK_FP16, swap_pairs, dst); break;
    case SK_BF16: pack_a_impl(mr, k, a, lda, SK_BF16, swap_pairs, dst); break;
    default: pack_a_impl(mr, k, a, lda, SK_FP32, swap_pairs, dst); break;
  }
}

SK_ALWAYS_INLINE void pack_b_impl(size_t k, size_t nc, const void *b, size_t ldb,
                                  sk_dtype dtype, float *dst) {
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    float *panel = dst + j0 * k;
    __mmask16 m[NV];
    for (size_t v = 0; v < NV; v++) m[v] = lane_mask(nc - j0, v);
    for (size_t p = 0; p < k; p++)
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++)
        _mm512_store_ps(panel + p * NR + 16 * v, load_f32(b, dtype, p * ldb + j0 + 16 * v, m[v]));
  }
}

static void pack_b_avx512(size_t k, size_t nc, const void *b, size_t ldb, sk_dtype dtype,
                          float *dst) {
  switch (dtype) {
    case SK_FP16: pack_b_impl(k, nc, b, ldb, SK_FP16, dst); break;
    case SK_BF16: pack_b_impl(k, nc, b, ldb, SK_BF16, dst); break;
    default: pack_b_impl(k, nc, b, ldb, SK_FP32, dst); break;
  }
}

/* Element i of a panel as a vector of 16: fp32 panels as they are, 16-bit
 * ones (fp16, bf16) widened in registers (exactly). */
SK_ALWAYS_INLINE __m512 panel_vector(const void *w, size_t i, sk_dtype dtype) {
  if (dtype == SK_FP32) return _mm512_load_ps((const float *)w + i);
  __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)w + i));
  if (dtype == SK_FP16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The k loop over the first `rows` rows: for each p,
 * acc[i] = fma(A[i,p], W[p,:], acc[i]) in order, W a panel of w_dtype. */
SK_ALWAYS_INLINE void k_loop(size_t rows, size_t k, const float *const a[MR], const void *w, sk_dtype w_dtype,
                             __m512 acc[MR][NV]) {
  for (size_t p = 0; p < k; p++) {
    __m512 b[NV];
    if (w_dtype != SK_FP32)
      prefetch_panel16((const char *)w + p * NR * sizeof(uint16_t) + PANEL16_PREFETCH_BYTES, rows);
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) b[v] = panel_vector(w, p * NR + 16 * v, w_dtype);
#pragma GCC unroll 16
    for (size_t i = 0; i < rows; i++) {
      __m512 av = _mm512_set1_ps(a[i][p]);
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_fmadd_ps(av, b[v], acc[i][v]);
    }
  }
}

/* k_loop for the rows there are: a decode step's few rows would otherwise
 * pay for all MR. */
SK_ALWAYS_INLINE void k_loop_rows(size_t mr, size_t k, const float *const rows[MR], const void *w, sk_dtype w_dtype,
                                  __m512 acc[MR][NV]) {
  switch (mr < MR ? mr : MR) {
    case 1: k_loop(1, k, rows, w, w_dtype, acc); break;
    case 2: k_loop(2, k, rows, w, w_dtype, acc); break;
    case 3: k_loop(3, k, rows, w, w_dtype, acc); break;
    case 4: k_loop(4, k, rows, w, w_dtype, acc); break;
    default: k_loop(MR, k, rows, w, w_dtype, acc); break;
  }
}

/* Row pointers (rows past mr repeat the last row: harmless loads, results
 * not stored) and the accumulators' start. */
SK_ALWAYS_INLINE void tile_start(size_t mr, const float *a, size_t a_stride, const float *acc_in,
                                 const float *rows[MR], __m512 acc[MR][NV]) {
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) rows[i] = a + (i < mr ? i : mr - 1) * a_stride;
  acc_start(acc_in, acc);
}

#define SK__CAT5(a, b, c, d, e) a##b##c##d##e
#define SK__UKERNEL_NAME(prefix, mr, nr) SK__CAT5(prefix, mr, x, nr, __avx512)
#define UKERNEL SK__UKERNEL_NAME(sk__f32_gemm_ukernel_, SK_GEMM_AVX512_MR, SK_GEMM_AVX512_NR)
#define UKERNEL16 SK__UKERNEL_NAME(sk__f32_gemm_ukernel16_, SK_GEMM_AVX512_MR, SK_GEMM_AVX512_NR)

void UKERNEL(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const float *w,
             const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
             sk_dtype c_dtype);

void UKERNEL(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const float *w,
             const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
             sk_dtype c_dtype) {
  const float *rows[MR];
  __m512 acc[MR][NV];
  tile_start(mr, a, a_stride, acc_in, rows, acc);
  k_loop_rows(mr, k, rows, w, SK_FP32, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

void UKERNEL16(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const uint16_t *w,
               sk_dtype w_dtype, const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
               sk_dtype c_dtype);

void UKERNEL16(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const uint16_t *w,
               sk_dtype w_dtype, const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
               sk_dtype c_dtype) {
  const float *rows[MR];
  __m512 acc[MR][NV];
  tile_start(mr, a, a_stride, acc_in, rows, acc);
  if (w_dtype == SK_FP16) k_loop_rows(mr, k, rows, w, SK_FP16, acc);
  else k_loop_rows(mr, k, rows, w, SK_BF16, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

const sk__gemm_config sk__f32_gemm_config_avx512 = {"fp32 FMA 8x32 (avx512)",
                                                     "fp32 FMA 8x32, bf16 pairs swapped, FTZ/DAZ (avx512)",
                                                     MR, NR, pack_a_avx512, pack_b_avx512, UKERNEL, UKERNEL16};

/* AVX2 + FMA + F16C GEMM path: the same scheme as the AVX-512 file with
 * 8-lane ymm vectors and no mask registers (tails go through small stack
 * buffers or vmaskmov).
 *
 * Tile 6 x 16: 12 ymm accumulators + 2 B vectors + 1 broadcast = 15 of the 16
 * registers. Two FMA pipes of latency 4 need 8 independent accumulators to
 * stay busy; 12 gives slack, and each k step loads 2 B vectors and 6 scalars
 * for 12 FMAs.
 */
#include <immintrin.h>

#include "kernels/gemm/gemm_internal.h"

#define MR 6
#define NR 16
#define NV (NR / 8)

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Loads min(valid, 8) elements of src[i..] as fp32; missing lanes are 0 and
 * are never read from memory. */
SK_ALWAYS_INLINE __m256 load_f32(const void *src, sk_dtype dtype, size_t i, size_t valid) {
  if (dtype == SK_FP32) {
    const float *s = (const float *)src + i;
    if (valid >= 8) return _mm256_loadu_ps(s);
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)valid),
                                   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(s, m);
  }
  const uint16_t *s = (const uint16_t *)src + i;
  __m128i h;
  if (valid >= 8) {
    h = _mm_loadu_si128((const __m128i *)(const void *)s);
  } else {
    uint16_t tmp[8] = {0};
    memcpy(tmp, s, valid * sizeof(uint16_t));
    h = _mm_loadu_si128((const __m128i *)(const void *)tmp);
  }
  if (dtype == SK_FP16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Rounds y to dtype and stores min(valid, 8) lanes at dst[i..]; NaN becomes
 * the canonical NaN. fp16: vcvtps2ph with RNE (exact incl. subnormals and
 * overflow); bf16: integer RNE. */
SK_ALWAYS_INLINE void store_f32(void *dst, sk_dtype dtype, size_t i, __m256 y, size_t valid) {
  __m256 nan = _mm256_cmp_ps(y, y, _CMP_UNORD_Q);
  y = _mm256_blendv_ps(y, _mm256_castsi256_ps(_mm256_set1_epi32((int)SK__GEMM_NAN_F32)), nan);
  if (dtype == SK_FP32) {
    float *d = (float *)dst + i;
    if (valid >= 8) {
      _mm256_storeu_ps(d, y);
    } else {
      __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)valid),
                                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      _mm256_maskstore_ps(d, m, y);
    }
    return;
  }
  __m128i h;
  if (dtype == SK_FP16) {
    h = _mm256_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else {
    __m256i u = _mm256_castps_si256(y);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    u = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
    u = _mm256_srli_epi32(u, 16);
    /* packus works per 128-bit lane; gather the two halves into the low lane. */
    u = _mm256_permute4x64_epi64(_mm256_packus_epi32(u, u), 0x08);
    h = _mm256_castsi256_si128(u);
  }
  uint16_t *d = (uint16_t *)dst + i;
  if (valid >= 8) {
    _mm_storeu_si128((__m128i *)(void *)d, h);
  } else {
    uint16_t tmp[8];
    _mm_storeu_si128((__m128i *)(void *)tmp, h);
    memcpy(d, tmp, valid * sizeof(uint16_t));
  }
}

/* Vectors start at multiples of 8, so pairs never straddle two, and the
 * lanes past k (an odd k's zero step among them) load as zero. */
SK_ALWAYS_INLINE void pack_a_impl(size_t mr, size_t k, const void *a, size_t lda,
                                  sk_dtype dtype, int swap_pairs, float *dst) {
  const size_t stride = sk__gemm_a_stride(k);
  for (size_t i = 0; i < mr; i++)
    for (size_t p = 0; p < k; p += 8) {
      __m256 x = load_f32(a, dtype, i * lda + p, k - p);
      if (swap_pairs) x = _mm256_permute_ps(x, 0xB1); /* lanes 1 0 3 2 */
      _mm256_store_ps(dst + i * stride + p, x);
    }
}

static void pack_a_avx2(size_t mr, size_t k, const void *a, size_t lda, sk_dtype dtype, int swap_pairs,
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
    const size_t left = nc - j0;
    for (size_t p = 0; p < k; p++)
#pragma GCC unroll 2
      for (size_t v = 0; v < NV; v++) {
        /* Vectors wholly past nc are zero without touching B. */
        __m256 x = left > 8 * v ? load_f32(b, dtype, p * ldb + j0 + 8 * v, left - 8 * v)
                                : _mm256_setzero_ps();
        _mm256_store_ps(panel + p * NR + 8 * v, x);
      }
  }
}

static void pack_b_avx2(size_t k, size_t nc, const void *b, size_t ldb, sk_dtype dtype,
                        float *dst) {
  switch (dtype) {
    case SK_FP16: pack_b_impl(k, nc, b, ldb, SK_FP16, dst); break;
    case SK_BF16: pack_b_impl(k, nc, b, ldb, SK_BF16, dst); break;
    default: pack_b_impl(k, nc, b, ldb, SK_FP32, dst); break;
  }
}

SK_ALWAYS_INLINE void store_tile(size_t mr, size_t nr, __m256 acc[MR][NV], const float *bias,
                                 void *c, size_t ldc, sk_dtype dtype) {
  __m256 bv[NV];
#pragma GCC unroll 2
  for (size_t v = 0; v < NV; v++) bv[v] = bias ? _mm256_load_ps(bias + 8 * v) : _mm256_setzero_ps();
#pragma GCC unroll 8
  for (size_t i = 0; i < MR; i++) {
    if (i >= mr) break;
#pragma GCC unroll 2
    for (size_t v = 0; v < NV; v++) {
      if (nr <= 8 * v) break;
      /* No bias means no add at all: acc + 0.0f would turn -0 into +0. */
      __m256 y = bias ? _mm256_add_ps(acc[i][v], bv[v]) : acc[i][v];
      store_f32(c, dtype, i * ldc + 8 * v, y, nr - 8 * v);
    }
  }
}

/* Element i of a panel as a vector of 8: fp32 panels as they are, 16-bit
 * ones (fp16, bf16) widened in registers (exactly). */
SK_ALWAYS_INLINE __m256 panel_vector(const void *w, size_t i, sk_dtype dtype) {
  if (dtype == SK_FP32) return _mm256_load_ps((const float *)w + i);
  __m128i h = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)w + i));
  if (dtype == SK_FP16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The 16-bit panel prefetch of f32_gemm_avx512.c (why NTA for few rows, T0
 * for more, 4 KiB ahead). Here (SK_ISA=avx2 on AMD Zen 5, bench_gemm_large
 * --dtype bf16, 1 thread, 2048 x 2816) 1 row took 376 us against 398-440
 * without, 4 rows 460-475 against 490-540; from 6 rows the tile is bound
 * by its FMAs and the same either way. */
#define PANEL16_PREFETCH_BYTES 4096

/* The hint must be a constant where _mm_prefetch is a macro (unoptimized
 * builds), hence two calls rather than a chosen hint. */
SK_ALWAYS_INLINE void prefetch_panel16(const char *at, size_t rows) {
  if (rows <= 4 && sk__stream_nta) _mm_prefetch(at, _MM_HINT_NTA);
  else _mm_prefetch(at, _MM_HINT_T0);
}

/* The k loop over the first `rows` rows: for each p,
 * acc[i] = fma(A[i,p], W[p,:], acc[i]) in order, W a panel of w_dtype. */
SK_ALWAYS_INLINE void k_loop(size_t rows, size_t k, const float *const a[MR], const void *w, sk_dtype w_dtype,
                             __m256 acc[MR][NV]) {
  for (size_t p = 0; p < k; p++) {
    __m256 b[NV];
    if (w_dtype != SK_FP32 && p % 2 == 0) /* a 64-byte line holds 2 steps of a 16-bit panel */
      prefetch_panel16((const char *)w + p * NR * sizeof(uint16_t) + PANEL16_PREFETCH_BYTES, rows);
#pragma GCC unroll 2
    for (size_t v = 0; v < NV; v++) b[v] = panel_vector(w, p * NR + 8 * v, w_dtype);
#pragma GCC unroll 8
    for (size_t i = 0; i < rows; i++) {
      __m256 av = _mm256_broadcast_ss(a[i] + p);
#pragma GCC unroll 2
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm256_fmadd_ps(av, b[v], acc[i][v]);
    }
  }
}

/* k_loop for the rows there are: a decode step's 1-5 rows would otherwise
 * pay for all MR. */
SK_ALWAYS_INLINE void k_loop_rows(size_t mr, size_t k, const float *const rows[MR], const void *w, sk_dtype w_dtype,
                                  __m256 acc[MR][NV]) {
  switch (mr) {
    case 1: k_loop(1, k, rows, w, w_dtype, acc); break;
    case 2: k_loop(2, k, rows, w, w_dtype, acc); break;
    case 3: k_loop(3, k, rows, w, w_dtype, acc); break;
    case 4: k_loop(4, k, rows, w, w_dtype, acc); break;
    case 5: k_loop(5, k, rows, w, w_dtype, acc); break;
    default: k_loop(MR, k, rows, w, w_dtype, acc); break;
  }
}

/* Row pointers (rows past mr repeat the last row: harmless loads, results
 * not stored) and the accumulators' start. */
SK_ALWAYS_INLINE void tile_start(size_t mr, const float *a, size_t a_stride, const float *acc_in,
                                 const float *rows[MR], __m256 acc[MR][NV]) {
#pragma GCC unroll 8
  for (size_t i = 0; i < MR; i++) rows[i] = a + (i < mr ? i : mr - 1) * a_stride;
#pragma GCC unroll 8
  for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 2
    for (size_t v = 0; v < NV; v++)
      acc[i][v] = acc_in ? _mm256_load_ps(acc_in + i * NR + 8 * v) : _mm256_setzero_ps();
}

/* The raw sums to acc_out when another k block follows, else C. */
SK_ALWAYS_INLINE void tile_finish(size_t mr, size_t nr, __m256 acc[MR][NV], float *acc_out, const float *bias,
                                  void *c, size_t ldc, sk_dtype c_dtype) {
  if (acc_out) {
#pragma GCC unroll 8
    for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 2
      for (size_t v = 0; v < NV; v++) _mm256_store_ps(acc_out + i * NR + 8 * v, acc[i][v]);
    return;
  }
  switch (c_dtype) {
    case SK_FP16: store_tile(mr, nr, acc, bias, c, ldc, SK_FP16); break;
    case SK_BF16: store_tile(mr, nr, acc, bias, c, ldc, SK_BF16); break;
    default: store_tile(mr, nr, acc, bias, c, ldc, SK_FP32); break;
  }
}

void sk__f32_gemm_ukernel_6x16__avx2(size_t mr, size_t nr, size_t k, const float *a,
                                     size_t a_stride, const float *w, const float *acc_in,
                                     float *acc_out, const float *bias, void *c, size_t ldc,
                                     sk_dtype c_dtype);

void sk__f32_gemm_ukernel_6x16__avx2(size_t mr, size_t nr, size_t k, const float *a,
                                     size_t a_stride, const float *w, const float *acc_in,
                                     float *acc_out, const float *bias, void *c, size_t ldc,
                                     sk_dtype c_dtype) {
  const float *rows[MR];
  __m256 acc[MR][NV];
  tile_start(mr, a, a_stride, acc_in, rows, acc);
  k_loop_rows(mr, k, rows, w, SK_FP32, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

void sk__f32_gemm_ukernel16_6x16__avx2(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride,
                                       const uint16_t *w, sk_dtype w_dtype, const float *acc_in, float *acc_out,
                                       const float *bias, void *c, size_t ldc, sk_dtype c_dtype);

void sk__f32_gemm_ukernel16_6x16__avx2(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride,
                                       const uint16_t *w, sk_dtype w_dtype, const float *acc_in, float *acc_out,
                                       const float *bias, void *c, size_t ldc, sk_dtype c_dtype) {
  const float *rows[MR];
  __m256 acc[MR][NV];
  tile_start(mr, a, a_stride, acc_in, rows, acc);
  if (w_dtype == SK_FP16) k_loop_rows(mr, k, rows, w, SK_FP16, acc);
  else k_loop_rows(mr, k, rows, w, SK_BF16, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

const sk__gemm_config sk__f32_gemm_config_avx2 = {
    "fp32 FMA 6x16 (avx2)", "fp32 FMA 6x16, bf16 pairs swapped, FTZ/DAZ (avx2)", MR, NR, pack_a_avx2, pack_b_avx2,
    sk__f32_gemm_ukernel_6x16__avx2,
                                                  sk__f32_gemm_ukernel16_6x16__avx2};

/* AVX-512 (F/BW) int8 GEMM path for CPUs without VNNI: A and B sign-extended
 * to int16 while packing, then vpmaddwd (two int16 products per int32 lane,
 * exact: |a0*b0 + a1*b1| <= 2^15) and vpaddd. vpmaddubsw would do four
 * products per lane but saturates its int16 pair sums, so it is not used.
 *
 * Tile 8 x 32: 16 zmm accumulators, 2 B vectors, 1 broadcast, 1 product.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/qgemm/qgemm_internal.h"

#define MR 8
#define NR 32
#define NV (NR / 16)

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

SK_ALWAYS_INLINE __mmask16 lane_mask(size_t valid, size_t v) {
  if (valid <= 16 * v) return 0;
  size_t left = valid - 16 * v;
  return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* Rows of int16: 32 elements per step, a_stride (whole lines) fits them. */
static void pack_a_avx512(size_t mr, size_t kc, const int8_t *a, size_t lda, void *dst, size_t a_stride) {
  for (size_t i = 0; i < mr; i++)
    for (size_t p = 0; p < kc; p += 32) {
      __mmask32 m = kc - p >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (kc - p)) - 1);
      __m512i v = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, a + i * lda + p));
      _mm512_store_si512((char *)dst + i * a_stride + 2 * p, v);
    }
}

/* Panel layout: for each pair of k values, NR dwords, dword j holding
 * (int16 B[2g, j], int16 B[2g+1, j]) as vpmaddwd consumes. */
static void pack_b_avx512(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum) {
  (void)colsum;
  const size_t kcp = sk__qgemm_round_up(kc, 2);
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    int16_t *panel = (int16_t *)dst + j0 * kcp;
    __mmask16 m[NV];
    for (size_t v = 0; v < NV; v++) m[v] = lane_mask(nc - j0, v);
    for (size_t p = 0; p < kcp; p += 2)
      for (size_t v = 0; v < NV; v++) {
        const int8_t *src = b + p * ldb + j0 + 16 * v;
        __m512i r0 = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m[v], src));
        __m512i r1 = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(p + 1 < kc ? m[v] : 0, src + ldb));
        __m512i packed = _mm512_or_si512(_mm512_and_si512(r0, low16), _mm512_slli_epi32(r1, 16));
        _mm512_store_si512(panel + p * NR + 32 * v, packed);
      }
  }
}

void sk__qs8_gemm_ukernel_8x32c2__avx512(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                         const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                         int accumulate);

void sk__qs8_gemm_ukernel_8x32c2__avx512(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                         const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                         int accumulate) {
  (void)colsum;
  const char *rows[MR];
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) rows[i] = (const char *)a + (i < mr ? i : mr - 1) * a_stride;
  const char *wp = w;
  __m512i acc[MR][NV];
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_si512();

  for (size_t p = 0; p < kcp; p += 2, wp += 4 * NR) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) bv[v] = _mm512_load_si512(wp + 64 * v);
#pragma GCC unroll 16
    for (size_t i = 0; i < MR; i++) {
      int32_t pair;
      memcpy(&pair, rows[i] + 2 * p, sizeof pair);
      __m512i av = _mm512_set1_epi32(pair);
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_add_epi32(acc[i][v], _mm512_madd_epi16(av, bv[v]));
    }
  }

#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) {
      __mmask16 m = lane_mask(nr, v);
      int32_t *dst = c + i * ldc + 16 * v;
      __m512i y = acc[i][v];
      if (accumulate) y = _mm512_add_epi32(y, _mm512_maskz_loadu_epi32(m, dst));
      _mm512_mask_storeu_epi32(dst, m, y);
    }
  }
}

const sk__qgemm_config sk__qs8_gemm_config_avx512 = {
    "avx512", MR, NR, 2, 2, 256, pack_a_avx512, pack_b_avx512, sk__qs8_gemm_ukernel_8x32c2__avx512, 2, NULL, NULL,
};

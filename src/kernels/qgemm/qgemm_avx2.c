/* AVX2 int8 GEMM path: vpmaddwd + vpaddd on int16 pairs (exact; vpmaddubsw
 * would saturate its int16 pair sums). A is sign-extended to int16 while
 * packing; B stays int8 in its panels (k pairs interleaved) and is
 * sign-extended as it is loaded, so a decode step, which reads each weight
 * once, streams one byte per weight instead of two.
 *
 * Tile 6 x 16: 12 ymm accumulators + 2 B vectors + 1 broadcast + 1 product
 * = the 16 registers; two vpmaddwd pipes need >= 8 independent sums.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/qgemm/qgemm_internal.h"

#define MR 6
#define NR 16
#define NV (NR / 8)

static void pack_a_avx2(size_t mr, size_t kc, const int8_t *a, size_t lda, void *dst, size_t a_stride) {
  for (size_t i = 0; i < mr; i++) {
    int16_t *row = (int16_t *)(void *)((char *)dst + i * a_stride);
    const int8_t *src = a + i * lda;
    size_t p = 0;
    for (; p + 16 <= kc; p += 16)
      _mm256_store_si256((__m256i *)(void *)(row + p),
                         _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(src + p))));
    for (; p < kc; p++) row[p] = src[p];
    if (kc % 2) row[kc] = 0; /* the pair padding (a_stride has room for kcp) */
  }
}

/* 8 int8 values (fewer at a tail, the rest 0) in the low half. */
static inline __m128i load8_epi8(const int8_t *src, size_t valid) {
  if (valid >= 8) return _mm_loadl_epi64((const __m128i *)(const void *)src);
  int8_t tmp[16] = {0};
  if (valid) memcpy(tmp, src, valid); /* src may lie past B when 0: not touched */
  return _mm_loadl_epi64((const __m128i *)(const void *)tmp);
}

/* Panel layout: for each pair of k values, NR int8 pairs (B[2g, j],
 * B[2g+1, j]): 16 bytes per 8 columns, which vpmovsxbw turns into the
 * int16 pairs vpmaddwd consumes. */
static void pack_b_avx2(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum) {
  (void)colsum;
  const size_t kcp = sk__qgemm_round_up(kc, 2);
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    int8_t *panel = (int8_t *)dst + j0 * kcp;
    for (size_t p = 0; p < kcp; p += 2)
      for (size_t v = 0; v < NV; v++) {
        size_t valid = nc - j0 > 8 * v ? nc - j0 - 8 * v : 0;
        const int8_t *src = b + p * ldb + j0 + 8 * v;
        __m128i r0 = load8_epi8(src, valid), r1 = load8_epi8(src + ldb, p + 1 < kc ? valid : 0);
        _mm_storeu_si128((__m128i *)(void *)(panel + p * NR + 16 * v), _mm_unpacklo_epi8(r0, r1));
      }
  }
}

/* The k loop over the first `rows` rows (exact int32 sums: any order). */
static inline __attribute__((always_inline)) void k_loop(size_t rows, size_t kcp, const char *const a[MR],
                                                         const char *wp, __m256i acc[MR][NV]) {
  for (size_t p = 0; p < kcp; p += 2, wp += 2 * NR) {
    __m256i bv[NV];
#pragma GCC unroll 2
    for (size_t v = 0; v < NV; v++)
      bv[v] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(wp + 16 * v)));
#pragma GCC unroll 8
    for (size_t i = 0; i < rows; i++) {
      int32_t pair;
      memcpy(&pair, a[i] + 2 * p, sizeof pair);
      __m256i av = _mm256_set1_epi32(pair);
#pragma GCC unroll 2
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(av, bv[v]));
    }
  }
}

void sk__qs8_gemm_ukernel_6x16c2__avx2(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                       const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                       int accumulate);

void sk__qs8_gemm_ukernel_6x16c2__avx2(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                       const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                       int accumulate) {
  (void)colsum;
  const char *rows[MR];
#pragma GCC unroll 8
  for (size_t i = 0; i < MR; i++) rows[i] = (const char *)a + (i < mr ? i : mr - 1) * a_stride;
  __m256i acc[MR][NV];
#pragma GCC unroll 8
  for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 2
    for (size_t v = 0; v < NV; v++) acc[i][v] = _mm256_setzero_si256();
  /* Only the rows there are: a decode step's 1-2 rows per expert would
   * otherwise pay for all MR. */
  switch (mr) {
    case 1: k_loop(1, kcp, rows, w, acc); break;
    case 2: k_loop(2, kcp, rows, w, acc); break;
    case 3: k_loop(3, kcp, rows, w, acc); break;
    case 4: k_loop(4, kcp, rows, w, acc); break;
    case 5: k_loop(5, kcp, rows, w, acc); break;
    default: k_loop(MR, kcp, rows, w, acc); break;
  }

  for (size_t i = 0; i < mr; i++)
    for (size_t v = 0; v < NV; v++) {
      int32_t out[8];
      _mm256_storeu_si256((__m256i *)(void *)out, acc[i][v]);
      int32_t *dst = c + i * ldc + 8 * v;
      for (size_t j = 0; j < 8 && 8 * v + j < nr; j++) dst[j] = accumulate ? dst[j] + out[j] : out[j];
    }
}

const sk__qgemm_config sk__qs8_gemm_config_avx2 = {
    "avx2", MR, NR, 2, 2, 512, pack_a_avx2, pack_b_avx2, sk__qs8_gemm_ukernel_6x16c2__avx2, 1, NULL, NULL,
};

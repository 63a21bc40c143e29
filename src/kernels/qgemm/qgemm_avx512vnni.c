/* AVX-512 VNNI int8 GEMM path: vpdpbusd, 16 lanes x 4 products per
 * instruction.
 *
 * vpdpbusd multiplies *unsigned* bytes by signed bytes, so A goes in as
 * u8 = a + 128 (a ^ 0x80) and each column j gets 128 * sum_p B[p, j]
 * subtracted (the column sums are computed while packing B):
 *   sum_p (a_p + 128) * b_p - 128 * sum_p b_p = sum_p a_p * b_p.
 * The non-saturating vpdpbusd wraps modulo 2^32 and so does the correction;
 * the true result fits in int32 (|sum| <= k * 2^14 < 2^31), so the wrapped
 * arithmetic gives it exactly even where (a + 128) * b sums would overflow.
 *
 * Tile 8 x 32 (SK_QGEMM_VNNI_MR / NR override it for tuning): 16 zmm
 * accumulators, 2 B vectors, 1 broadcast; per 4 k values the kernel loads
 * 2 B vectors and 8 dwords of A for 16 vpdpbusd.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/qgemm/qgemm_internal.h"

#ifndef SK_QGEMM_VNNI_MR
#define SK_QGEMM_VNNI_MR 8
#endif
#ifndef SK_QGEMM_VNNI_NR
#define SK_QGEMM_VNNI_NR 32
#endif
#define MR SK_QGEMM_VNNI_MR
#define NR SK_QGEMM_VNNI_NR
#define NV (NR / 16) /* zmm vectors per row of the tile */

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Mask of the valid lanes of vector v when `valid` columns remain. */
SK_ALWAYS_INLINE __mmask16 lane_mask(size_t valid, size_t v) {
  if (valid <= 16 * v) return 0;
  size_t left = valid - 16 * v;
  return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

static void pack_a_vnni(size_t mr, size_t kc, const int8_t *a, size_t lda, void *dst, size_t a_stride) {
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  for (size_t i = 0; i < mr; i++)
    for (size_t p = 0; p < kc; p += 64) { /* a_stride is whole lines: full stores fit */
      __mmask64 m = kc - p >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (kc - p)) - 1);
      __m512i v = _mm512_maskz_loadu_epi8(m, a + i * lda + p);
      _mm512_store_si512((char *)dst + i * a_stride + p, _mm512_xor_si512(v, flip));
    }
}

/* Panel layout: for each group of 4 k values, NR dwords, dword j holding
 * B[4g..4g+3, j] in its 4 bytes (lowest k first), as vpdpbusd consumes. */
void sk__qgemm_pack_b_vnni(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum) {
  const size_t kcp = sk__qgemm_round_up(kc, 4);
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    int8_t *panel = (int8_t *)dst + j0 * kcp;
    __mmask16 m[NV];
    __m512i sum[NV];
    for (size_t v = 0; v < NV; v++) m[v] = lane_mask(nc - j0, v), sum[v] = _mm512_setzero_si512();
    for (size_t p = 0; p < kcp; p += 4)
      for (size_t v = 0; v < NV; v++) {
        __m512i packed = _mm512_setzero_si512();
        for (size_t r = 0; r < 4; r++) {
          /* rows past kc read nothing and pack as zero */
          __m128i bytes = _mm_maskz_loadu_epi8(p + r < kc ? m[v] : 0, b + (p + r) * ldb + j0 + 16 * v);
          __m512i s = _mm512_cvtepi8_epi32(bytes);
          sum[v] = _mm512_add_epi32(sum[v], s);
          packed = _mm512_or_si512(packed, _mm512_slli_epi32(_mm512_cvtepu8_epi32(bytes), (unsigned)(8 * r)));
        }
        _mm512_store_si512(panel + p * NR + 64 * v, packed);
      }
    for (size_t v = 0; v < NV; v++) _mm512_storeu_si512(colsum + j0 + 16 * v, sum[v]);
  }
}

#define SK__CAT5(a, b, c, d, e) a##b##c##d##e
#define SK__UKERNEL_NAME(mr, nr) SK__CAT5(sk__qs8_gemm_ukernel_, mr, x, nr, c4__avx512vnni)
#define UKERNEL SK__UKERNEL_NAME(SK_QGEMM_VNNI_MR, SK_QGEMM_VNNI_NR)

void UKERNEL(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride, const void *w,
             const int32_t *colsum, int32_t *c, size_t ldc, int accumulate);

/* How far ahead a few-row tile prefetches its panel (non-temporal: the
 * weights are read once): such a tile streams them, as the float GEMM's
 * few-row tiles do (f32_gemm_avx512.c measured the distance and hint). */
#define FEW_ROWS_PREFETCH_BYTES 4096

/* The k loop over the first `rows` rows of A. */
SK_ALWAYS_INLINE void k_loop(size_t rows, size_t kcp, const char *const a[MR], const char *wp, __m512i acc[MR][NV]) {
  for (size_t p = 0; p < kcp; p += 4, wp += 4 * NR) {
    /* a step reads NV lines of the panel: every one is prefetched */
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) {
      if (rows > 4 || !sk__stream_nta) _mm_prefetch(wp + 64 * v + FEW_ROWS_PREFETCH_BYTES, _MM_HINT_T0);
      else _mm_prefetch(wp + 64 * v + FEW_ROWS_PREFETCH_BYTES, _MM_HINT_NTA);
    }
    __m512i bv[NV];
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) bv[v] = _mm512_load_si512(wp + 64 * v);
#pragma GCC unroll 16
    for (size_t i = 0; i < rows; i++) {
      int32_t quad;
      memcpy(&quad, a[i] + p, sizeof quad);
      __m512i av = _mm512_set1_epi32(quad);
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], av, bv[v]);
    }
  }
}

void UKERNEL(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride, const void *w,
             const int32_t *colsum, int32_t *c, size_t ldc, int accumulate) {
  /* Rows past mr repeat the last row: harmless loads, results not stored. */
  const char *rows[MR];
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) rows[i] = (const char *)a + (i < mr ? i : mr - 1) * a_stride;

  __m512i acc[MR][NV];
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_si512();

  /* Only the rows there are: a decode step's 1-4 would otherwise pay for all MR. */
  switch (mr < MR ? mr : MR) {
    case 1: k_loop(1, kcp, rows, w, acc); break;
    case 2: k_loop(2, kcp, rows, w, acc); break;
    case 3: k_loop(3, kcp, rows, w, acc); break;
    case 4: k_loop(4, kcp, rows, w, acc); break;
    default: k_loop(MR, kcp, rows, w, acc); break;
  }

  __mmask16 m[NV];
  __m512i corr[NV];
#pragma GCC unroll 4
  for (size_t v = 0; v < NV; v++) {
    m[v] = lane_mask(nr, v);
    corr[v] = _mm512_slli_epi32(_mm512_loadu_si512(colsum + 16 * v), 7);
  }
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) {
      __m512i y = _mm512_sub_epi32(acc[i][v], corr[v]);
      int32_t *dst = c + i * ldc + 16 * v;
      if (accumulate) y = _mm512_add_epi32(y, _mm512_maskz_loadu_epi32(m[v], dst));
      _mm512_mask_storeu_epi32(dst, m[v], y);
    }
  }
}

const sk__qgemm_config sk__qs8_gemm_config_avx512vnni = {
    "avx512vnni", MR, NR, 4, 1, 512, pack_a_vnni, sk__qgemm_pack_b_vnni, UKERNEL, 1, NULL, NULL,
};

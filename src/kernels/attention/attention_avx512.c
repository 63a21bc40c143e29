/* AVX-512 attention loops: the scalar definitions of attention.c with the
 * 16 lanes in one register, folded as the scalar code folds them. */
#include <immintrin.h>

#include "kernels/attention/attention_isa.h"

static inline float fold16(__m512 s16) {
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16), _mm512_extractf32x8_ps(s16, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

void sk__attn_dots_avx512(const float *q, size_t n, const float *k, size_t d, float *out, size_t stride) {
  for (size_t h = 0; h < n; h++) {
    const float *qh = q + h * d;
    __m512 acc = _mm512_setzero_ps();
    for (size_t i = 0; i < d; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qh + i), _mm512_loadu_ps(k + i), acc);
    out[h * stride] = fold16(acc);
  }
}

void sk__attn_accumulate_avx512(float *o, const float *p, size_t n, const float *v, size_t d) {
  for (size_t h = 0; h < n; h++) {
    __m512 ph = _mm512_set1_ps(p[h]);
    float *oh = o + h * d;
    for (size_t i = 0; i < d; i += 16)
      _mm512_storeu_ps(oh + i, _mm512_fmadd_ps(ph, _mm512_loadu_ps(v + i), _mm512_loadu_ps(oh + i)));
  }
}

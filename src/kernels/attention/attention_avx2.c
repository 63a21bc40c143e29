/* AVX2 + FMA attention loops: the scalar definitions of attention.c with
 * the 16 lanes in two 8-lane registers (lanes 0-7, 8-15), folded as the
 * scalar code folds them. */
#include <immintrin.h>

#include "kernels/attention/attention_isa.h"

/* (l + 8) in s8, then + 4, + 2, + 1: the scalar fold's additions. */
static inline float fold8(__m256 s8) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

void sk__attn_dots_avx2(const float *q, size_t n, const float *k, size_t d, float *out, size_t stride) {
  for (size_t h = 0; h < n; h++) {
    const float *qh = q + h * d;
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (size_t i = 0; i < d; i += 16) {
      lo = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i), _mm256_loadu_ps(k + i), lo);
      hi = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i + 8), _mm256_loadu_ps(k + i + 8), hi);
    }
    out[h * stride] = fold8(_mm256_add_ps(lo, hi));
  }
}

void sk__attn_accumulate_avx2(float *o, const float *p, size_t n, const float *v, size_t d) {
  for (size_t h = 0; h < n; h++) {
    __m256 ph = _mm256_set1_ps(p[h]);
    float *oh = o + h * d;
    for (size_t i = 0; i < d; i += 8)
      _mm256_storeu_ps(oh + i, _mm256_fmadd_ps(ph, _mm256_loadu_ps(v + i), _mm256_loadu_ps(oh + i)));
  }
}

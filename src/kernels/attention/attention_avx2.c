/* AVX2 + FMA attention loops: the scalar definitions of attention.c with
 * the 16 lanes in two 8-lane registers (lanes 0-7, 8-15), folded as the
 * scalar code folds them, one key at a time. */
#include <immintrin.h>

#include "kernels/attention/attention_isa.h"

/* (l + 8) in s8, then + 4, + 2, + 1: the scalar fold's additions. */
static inline float fold8(__m256 s8) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

void sk__attn_dots_avx2(const float *q, size_t nh, const float *k, size_t ks, size_t nk, size_t d, float *out,
                        size_t stride) {
  for (size_t h = 0; h < nh; h++)
    for (size_t j = 0; j < nk; j++) {
      const float *qh = q + h * d, *kj = k + j * ks;
      __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
      for (size_t i = 0; i < d; i += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i), _mm256_loadu_ps(kj + i), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i + 8), _mm256_loadu_ps(kj + i + 8), hi);
      }
      out[h * stride + j] = fold8(_mm256_add_ps(lo, hi));
    }
}

void sk__attn_accumulate_avx2(float *o, size_t nh, const float *p, size_t ps, const float *v, size_t vs, size_t nk,
                              size_t d) {
  for (size_t h = 0; h < nh; h++) {
    float *oh = o + h * d;
    for (size_t i = 0; i < d; i += 8) { /* o stays in a register over the block's keys */
      __m256 acc = _mm256_loadu_ps(oh + i);
      for (size_t j = 0; j < nk; j++)
        acc = _mm256_fmadd_ps(_mm256_set1_ps(p[h * ps + j]), _mm256_loadu_ps(v + j * vs + i), acc);
      _mm256_storeu_ps(oh + i, acc);
    }
  }
}

void sk__attn_widen_bf16_avx2(const uint16_t *src, size_t stride, size_t n, size_t d, float *dst) {
  for (size_t r = 0; r < n; r++)
    for (size_t i = 0; i < d; i += 8) {
      __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + r * stride + i)));
      _mm256_storeu_si256((__m256i *)(dst + r * d + i), _mm256_slli_epi32(w, 16));
    }
}

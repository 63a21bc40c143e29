/* AVX2 + FMA attention loops: the scalar definitions of attention.c with
 * the 16 lanes in two 8-lane registers (lanes 0-7, 8-15), folded as the
 * scalar code folds them, one key at a time. */
#include <immintrin.h>
#include <math.h>

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

/* A mask of the first r < 8 lanes, for maskload / maskstore. */
static inline __m256i first_lanes(size_t r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

float sk__attn_scale_max_avx2(float *s, size_t n, float scale) {
  const __m256 sc = _mm256_set1_ps(scale);
  __m256 mv = _mm256_set1_ps(-INFINITY);
  size_t j = 0;
  /* max_ps(x, mv) is x > mv ? x : mv per lane: the scalar comparison, so a
   * NaN score never enters a lane's maximum. */
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + j), sc);
    _mm256_storeu_ps(s + j, x);
    mv = _mm256_max_ps(x, mv);
  }
  float lane[8], m = -INFINITY;
  _mm256_storeu_ps(lane, mv);
  for (int c = 0; c < 8; c++) m = lane[c] > m ? lane[c] : m;
  for (; j < n; j++) {
    s[j] = s[j] * scale;
    m = s[j] > m ? s[j] : m;
  }
  return m;
}

void sk__attn_shift_avx2(float *s, size_t n, float m) {
  const __m256 mv = _mm256_set1_ps(m);
  size_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
  if (j < n) {
    const __m256i k = first_lanes(n - j);
    _mm256_maskstore_ps(s + j, k, _mm256_sub_ps(_mm256_maskload_ps(s + j, k), mv));
  }
}

/* The 16 normalizer lanes are two registers (lanes 0-7, 8-15). */
void sk__attn_lanes_add_avx2(float *lanes, const float *s, size_t n) {
  __m256 lo = _mm256_loadu_ps(lanes), hi = _mm256_loadu_ps(lanes + 8);
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    lo = _mm256_add_ps(lo, _mm256_loadu_ps(s + j));
    hi = _mm256_add_ps(hi, _mm256_loadu_ps(s + j + 8));
  }
  _mm256_storeu_ps(lanes, lo);
  _mm256_storeu_ps(lanes + 8, hi);
  for (; j < n; j++) lanes[j % 16] = lanes[j % 16] + s[j];
}

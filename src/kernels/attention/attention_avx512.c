/* AVX-512 attention loops: the scalar definitions of attention.c with the
 * 16 lanes of a dot in one register. dots keeps a block's 16 keys in 16
 * accumulators, so each q chunk is loaded once per block, and folds the 16
 * together: every step pairs two registers and adds lane l to lane
 * l + half of each key (l + 8, + 4, + 2, + 1, the scalar fold's additions,
 * each key's own lanes only), ending with key j's score in lane
 * 4 (j % 4) + j / 4 — one permute puts it in lane j. */
#include <immintrin.h>
#include <math.h>

#include "kernels/attention/attention_isa.h"

/* The 16 folds of a[0..15]: lane j of the result is key j's fold. */
static inline __m512 fold16x16(__m512 a[16]) {
  __m512 b[8], c[4], e[2];
  for (int m = 0; m < 8; m++) /* + 8: quarters 0,1 of key 2m and key 2m+1 plus their quarters 2,3 */
    b[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], 0xEE));
  for (int m = 0; m < 4; m++) /* + 4: quarter q of c[m] holds key 4m + q's 4 lanes */
    c[m] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * m], b[2 * m + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * m], b[2 * m + 1], 0xDD));
  for (int m = 0; m < 2; m++) /* + 2: quarter q holds keys 8m + q, 8m + 4 + q, 2 lanes each */
    e[m] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * m], c[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(c[2 * m], c[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  /* + 1: lane 4q + r holds key q + 4r */
  __m512 f = _mm512_add_ps(_mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i to_key = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_ps(to_key, f);
}

void sk__attn_dots_avx512(const float *q, size_t nh, const float *k, size_t ks, size_t nk, size_t d, float *out,
                          size_t stride) {
  /* A block short of 16 keys computes the missing ones on its first row
   * and does not store them. */
  const float *kr[16];
  for (size_t j = 0; j < 16; j++) kr[j] = k + (j < nk ? j : 0) * ks;
  const __mmask16 keep = (__mmask16)((1u << nk) - 1u);
  for (size_t h = 0; h < nh; h++) {
    const float *qh = q + h * d;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) acc[j] = _mm512_setzero_ps();
    for (size_t i = 0; i < d; i += 16) {
      const __m512 qv = _mm512_loadu_ps(qh + i);
#pragma GCC unroll 16
      for (int j = 0; j < 16; j++) acc[j] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kr[j] + i), acc[j]);
    }
    _mm512_mask_storeu_ps(out + h * stride, keep, fold16x16(acc));
  }
}

void sk__attn_accumulate_avx512(float *o, size_t nh, const float *p, size_t ps, const float *v, size_t vs,
                                size_t nk, size_t d) {
  for (size_t h = 0; h < nh; h++) {
    float *oh = o + h * d;
    const float *ph = p + h * ps;
    size_t i = 0;
    for (; i + 128 <= d; i += 128) { /* 128 outputs in 8 registers over the block's keys */
      __m512 acc[8];
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) acc[r] = _mm512_loadu_ps(oh + i + 16 * r);
      for (size_t j = 0; j < nk; j++) {
        const __m512 pj = _mm512_set1_ps(ph[j]);
        const float *vj = v + j * vs + i;
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) acc[r] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj + 16 * r), acc[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) _mm512_storeu_ps(oh + i + 16 * r, acc[r]);
    }
    for (; i < d; i += 16) {
      __m512 acc = _mm512_loadu_ps(oh + i);
      for (size_t j = 0; j < nk; j++) acc = _mm512_fmadd_ps(_mm512_set1_ps(ph[j]), _mm512_loadu_ps(v + j * vs + i), acc);
      _mm512_storeu_ps(oh + i, acc);
    }
  }
}

void sk__attn_widen_bf16_avx512(const uint16_t *src, size_t stride, size_t n, size_t d, float *dst) {
  for (size_t r = 0; r < n; r++)
    for (size_t i = 0; i < d; i += 16) {
      __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + r * stride + i)));
      _mm512_storeu_si512(dst + r * d + i, _mm512_slli_epi32(w, 16));
    }
}

float sk__attn_scale_max_avx512(float *s, size_t n, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mv = _mm512_set1_ps(-INFINITY);
  size_t j = 0;
  /* max_ps(x, mv) is x > mv ? x : mv per lane: the scalar comparison, so a
   * NaN score never enters a lane's maximum. */
  for (; j + 16 <= n; j += 16) {
    const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + j), sc);
    _mm512_storeu_ps(s + j, x);
    mv = _mm512_max_ps(x, mv);
  }
  if (j < n) {
    const __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + j), sc);
    _mm512_mask_storeu_ps(s + j, k, x);
    mv = _mm512_mask_max_ps(mv, k, x, mv);
  }
  float lane[16], m = -INFINITY;
  _mm512_storeu_ps(lane, mv);
  for (int c = 0; c < 16; c++) m = lane[c] > m ? lane[c] : m;
  return m;
}

void sk__attn_shift_avx512(float *s, size_t n, float m) {
  const __m512 mv = _mm512_set1_ps(m);
  size_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(s + j, _mm512_sub_ps(_mm512_loadu_ps(s + j), mv));
  if (j < n) {
    const __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
    _mm512_mask_storeu_ps(s + j, k, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), mv));
  }
}

/* The 16 normalizer lanes are one register: lane c adds s[j], j = c (mod 16). */
void sk__attn_lanes_add_avx512(float *lanes, const float *s, size_t n) {
  __m512 acc = _mm512_loadu_ps(lanes);
  size_t j = 0;
  for (; j + 16 <= n; j += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(s + j));
  if (j < n) {
    const __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
    acc = _mm512_mask_add_ps(acc, k, acc, _mm512_maskz_loadu_ps(k, s + j));
  }
  _mm512_storeu_ps(lanes, acc);
}

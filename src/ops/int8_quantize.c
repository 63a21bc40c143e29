/* Rows of fp32 to int8 (int8_quantize.h), on baseline x86-64: SSE2 with
 * the scalar rule's bits. Shared by dequant_swiglu_quant and
 * moe_init_routing's dynamic mode. */
#include "ops/int8_quantize.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* clip(rint(v), -128, 127), NaN -> 0. Clipping first is exact (rint is
 * monotonic, the bounds are integers); adding and removing 1.5 * 2^23 then
 * rounds to an integer, ties to even, in the default rounding mode. Equal
 * to the reference's rintf form on every float. */
static inline int8_t rint_i8(float v) {
  v = v == v ? v : 0.0f;
  v = v > 127.0f ? 127.0f : v;
  v = v < -128.0f ? -128.0f : v;
  v = (v + 0x1.8p23f) - 0x1.8p23f;
  return (int8_t)(int32_t)v;
}

/* y[c] = rint_i8(o[c] / d + add). GCC does not if-convert the float selects
 * of rint_i8 (comparisons may trap), so the body is SSE2 (baseline x86-64):
 * the same steps lane by lane, with cvtps2dq rounding to nearest even. A
 * dynamic row passes add = 0: x + 0 differs from x only for -0, which
 * quantizes to 0 either way. */
void sk__int8_quantize_row(const float *o, int64_t h, float d, float add, int8_t *y) {
  int64_t c = 0;
#ifdef __SSE2__
  const __m128 vd = _mm_set1_ps(d), va = _mm_set1_ps(add), lo = _mm_set1_ps(-128.0f), hi = _mm_set1_ps(127.0f);
  for (; c + 16 <= h; c += 16) {
    __m128i q[4];
    for (int k = 0; k < 4; k++) {
      __m128 v = _mm_add_ps(_mm_div_ps(_mm_loadu_ps(o + c + 4 * k), vd), va);
      v = _mm_and_ps(v, _mm_cmpord_ps(v, v)); /* NaN -> 0 */
      v = _mm_min_ps(_mm_max_ps(v, lo), hi);
      q[k] = _mm_cvtps_epi32(v);
    }
    _mm_storeu_si128((__m128i *)(y + c), _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
  }
#endif
  for (; c < h; c++) y[c] = rint_i8(o[c] / d + add);
}

/* max |o[i]| ignoring NaNs (a NaN never compares greater; maxps(a, m) is
 * exactly a > m ? a : m), 0 for none. The value is exact, so any grouping
 * of the lanes gives the reference's sequential result. */
static float max_abs(const float *o, int64_t n) {
  float m = 0.0f;
  int64_t i = 0;
#ifdef __SSE2__
  const __m128 sign = _mm_set1_ps(-0.0f);
  __m128 m0 = _mm_setzero_ps(), m1 = _mm_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    m0 = _mm_max_ps(_mm_andnot_ps(sign, _mm_loadu_ps(o + i)), m0);
    m1 = _mm_max_ps(_mm_andnot_ps(sign, _mm_loadu_ps(o + i + 4)), m1);
  }
  float lane[8];
  _mm_storeu_ps(lane, m0);
  _mm_storeu_ps(lane + 4, m1);
  for (int k = 0; k < 8; k++) m = lane[k] > m ? lane[k] : m;
#endif
  for (; i < n; i++) m = fabsf(o[i]) > m ? fabsf(o[i]) : m;
  return m;
}

void sk__int8_quantize_dynamic(const float *o, int64_t h, int8_t *y, float *scale) {
  float m = max_abs(o, h);
  if (m == 0.0f) {
    memset(y, 0, (size_t)h);
    *scale = 0.0f;
    return;
  }
  float s = m / 127.0f;
  sk__int8_quantize_row(o, h, s, 0.0f, y);
  *scale = s;
}


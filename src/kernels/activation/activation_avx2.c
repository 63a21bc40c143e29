/* AVX2 + FMA exp / sigmoid / silu: the scalar definitions of activation.c,
 * 8 lanes at a time, operation for operation (same constants, same fused
 * multiply-adds in the same order, same two-step 2^n scaling, the special
 * cases as blends), so every lane equals the scalar result bit for bit.
 * Tails go through a small buffer. Built with -ffp-contract=off so the
 * compiler fuses nothing the scalar code does not. */
#include <immintrin.h>
#include <string.h>

#include "kernels/activation/activation_consts.h"
#include "kernels/activation/activation_isa.h"

#define V(c) _mm256_set1_ps(c)

static inline __m256 exp8(__m256 x) {
  __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, V(SK_EXP_LOG2E), V(SK_EXP_MAGIC)), V(SK_EXP_MAGIC));
  __m256 r = _mm256_fmadd_ps(n, V(-SK_EXP_LN2_HI), x);
  r = _mm256_fmadd_ps(n, V(-SK_EXP_LN2_LO), r);
  __m256 p = V(SK_EXP_C5);
  p = _mm256_fmadd_ps(p, r, V(SK_EXP_C4));
  p = _mm256_fmadd_ps(p, r, V(SK_EXP_C3));
  p = _mm256_fmadd_ps(p, r, V(SK_EXP_C2));
  p = _mm256_fmadd_ps(p, r, V(SK_EXP_C1));
  p = _mm256_fmadd_ps(p, r, V(SK_EXP_C0));
  __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, r);
  p = _mm256_add_ps(p, V(1.0f));
  /* n is integral: the conversion is exact (lanes out of range are
   * garbage here and replaced below). k1 = k / 2 truncated toward zero. */
  __m256i k = _mm256_cvtps_epi32(n);
  __m256i k1 = _mm256_srai_epi32(_mm256_add_epi32(k, _mm256_srli_epi32(k, 31)), 1);
  __m256i k2 = _mm256_sub_epi32(k, k1);
  __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_blendv_ps(y, V(__builtin_inff()), _mm256_cmp_ps(x, V(SK_EXP_HI), _CMP_GT_OQ));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, V(SK_EXP_LO), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline __m256 neg(__m256 x) { return _mm256_xor_ps(x, V(-0.0f)); }

/* activation.c's sk__sigmoidf, lane by lane. */
static inline __m256 sigmoid8(__m256 x) {
  __m256 e = exp8(neg(_mm256_andnot_ps(V(-0.0f), x)));
  __m256 num = _mm256_blendv_ps(e, V(1.0f), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  __m256 d = _mm256_add_ps(V(1.0f), e);
  __m256 c = _mm256_add_ps(_mm256_sub_ps(V(1.0f), d), e);
  __m256 y = _mm256_div_ps(num, d);
  __m256 r = _mm256_fmadd_ps(neg(y), d, num);
  y = _mm256_add_ps(y, _mm256_div_ps(_mm256_sub_ps(r, _mm256_mul_ps(y, c)), d));
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline __m256 silu8(__m256 x) { return _mm256_div_ps(x, _mm256_add_ps(V(1.0f), exp8(neg(x)))); }

#define ARRAY_FN(NAME, F)                                                   \
  void NAME(const float *x, float *y, size_t n) {                           \
    size_t i = 0;                                                           \
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i))); \
    if (i < n) {                                                            \
      float buf[8] = {0};                                                   \
      memcpy(buf, x + i, (n - i) * sizeof(float));                          \
      _mm256_storeu_ps(buf, F(_mm256_loadu_ps(buf)));                       \
      memcpy(y + i, buf, (n - i) * sizeof(float));                          \
    }                                                                       \
  }

ARRAY_FN(sk__expf_avx2, exp8)
ARRAY_FN(sk__sigmoidf_avx2, sigmoid8)
ARRAY_FN(sk__siluf_avx2, silu8)

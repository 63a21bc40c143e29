/* AVX-512 exp / sigmoid / silu: the scalar definitions of activation.c, 16
 * lanes at a time, operation for operation (same constants, same fused
 * multiply-adds in the same order, same two-step 2^n scaling, the special
 * cases as blends), so every lane equals the scalar result bit for bit.
 * Tails use masked loads and stores. Built with -ffp-contract=off so the
 * compiler fuses nothing the scalar code does not. */
#include <immintrin.h>

#include "kernels/activation/activation_consts.h"
#include "kernels/activation/activation_isa.h"

#define V(c) _mm512_set1_ps(c)

static inline __m512 exp16(__m512 x) {
  __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, V(SK_EXP_LOG2E), V(SK_EXP_MAGIC)), V(SK_EXP_MAGIC));
  __m512 r = _mm512_fmadd_ps(n, V(-SK_EXP_LN2_HI), x);
  r = _mm512_fmadd_ps(n, V(-SK_EXP_LN2_LO), r);
  __m512 p = V(SK_EXP_C5);
  p = _mm512_fmadd_ps(p, r, V(SK_EXP_C4));
  p = _mm512_fmadd_ps(p, r, V(SK_EXP_C3));
  p = _mm512_fmadd_ps(p, r, V(SK_EXP_C2));
  p = _mm512_fmadd_ps(p, r, V(SK_EXP_C1));
  p = _mm512_fmadd_ps(p, r, V(SK_EXP_C0));
  __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, r);
  p = _mm512_add_ps(p, V(1.0f));
  /* n is integral: the conversion is exact (lanes out of range are
   * garbage here and replaced below). k1 = k / 2 truncated toward zero. */
  __m512i k = _mm512_cvtps_epi32(n);
  __m512i k1 = _mm512_srai_epi32(_mm512_add_epi32(k, _mm512_srli_epi32(k, 31)), 1);
  __m512i k2 = _mm512_sub_epi32(k, k1);
  __m512i bias = _mm512_set1_epi32(127);
  __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k1, bias), 23));
  __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k2, bias), 23));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, V(SK_EXP_HI), _CMP_GT_OQ), V(__builtin_inff()));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, V(SK_EXP_LO), _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_add_ps(x, x));
}

static inline __m512 neg(__m512 x) { return _mm512_xor_ps(x, V(-0.0f)); }

/* activation.c's sk__sigmoidf, lane by lane. */
static inline __m512 sigmoid16(__m512 x) {
  __m512 e = exp16(neg(_mm512_andnot_ps(V(-0.0f), x)));
  __m512 num = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), V(1.0f));
  __m512 d = _mm512_add_ps(V(1.0f), e);
  __m512 c = _mm512_add_ps(_mm512_sub_ps(V(1.0f), d), e);
  __m512 y = _mm512_div_ps(num, d);
  __m512 r = _mm512_fmadd_ps(neg(y), d, num);
  y = _mm512_add_ps(y, _mm512_div_ps(_mm512_sub_ps(r, _mm512_mul_ps(y, c)), d));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_add_ps(x, x));
}

static inline __m512 silu16(__m512 x) { return _mm512_div_ps(x, _mm512_add_ps(V(1.0f), exp16(neg(x)))); }

#define ARRAY_FN(NAME, F)                                                   \
  void NAME(const float *x, float *y, size_t n) {                           \
    size_t i = 0;                                                           \
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i))); \
    if (i < n) {                                                            \
      __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                       \
      _mm512_mask_storeu_ps(y + i, m, F(_mm512_maskz_loadu_ps(m, x + i)));  \
    }                                                                       \
  }

ARRAY_FN(sk__expf_avx512, exp16)
ARRAY_FN(sk__sigmoidf_avx512, sigmoid16)
ARRAY_FN(sk__siluf_avx512, silu16)

/* Scalar definitions of exp / sigmoid / silu (see activation.h) and the
 * array dispatch. Compiled with -ffp-contract=off: every fused multiply-add
 * is an explicit fmaf, so the SIMD paths (activation_avx2.c,
 * activation_avx512.c) reproduce the bits with their vfmadd lanes. */
#include "kernels/activation/activation.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/activation/activation_consts.h"
#include "kernels/activation/activation_isa.h"

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* exp: x = n ln2 + r with |r| <= ln2/2 (n by the round-to-nearest magic
 * constant), e^r by a degree-6 polynomial (Cephes expf coefficients) in
 * Horner form, then the result scaled by 2^n in two steps so subnormal
 * results are formed correctly (one rounding, in the last product). */
float sk__expf(float x) {
  if (x != x) return x + x; /* NaN, quieted */
  if (x > SK_EXP_HI) return INFINITY;
  if (x < SK_EXP_LO) return 0.0f;
  float n = fmaf(x, SK_EXP_LOG2E, SK_EXP_MAGIC) - SK_EXP_MAGIC; /* rint(x / ln2) */
  float r = fmaf(n, -SK_EXP_LN2_HI, x);                         /* exact product */
  r = fmaf(n, -SK_EXP_LN2_LO, r);
  float p = SK_EXP_C5;
  p = fmaf(p, r, SK_EXP_C4);
  p = fmaf(p, r, SK_EXP_C3);
  p = fmaf(p, r, SK_EXP_C2);
  p = fmaf(p, r, SK_EXP_C1);
  p = fmaf(p, r, SK_EXP_C0);
  float r2 = r * r;
  p = fmaf(p, r2, r);
  p = p + 1.0f;
  /* 2^n as two factors, each a normal float, so n down to -150 works.
   * n is in [-150, 128] here; k1 truncates toward zero (C division). */
  int32_t k = (int32_t)n;
  int32_t k1 = k / 2, k2 = k - k1;
  return p * from_bits((uint32_t)(k1 + 127) << 23) * from_bits((uint32_t)(k2 + 127) << 23);
}

/* sigmoid with e = e^-|x| <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) below,
 * so the exp error is damped by e / (1 + e) instead of carried whole; the
 * rounding of 1 + e is taken back exactly (c = its low part, Fast2Sum since
 * 1 >= e) by one correction step on the quotient (r: the division's exact
 * remainder). Measured 1.48 ulp at most (was 2.48 for 1 / (1 + e^-x)). */
float sk__sigmoidf(float x) {
  if (x != x) return x + x; /* NaN in, the same NaN out (quiet), as exp */
  float e = sk__expf(-fabsf(x));
  float num = x >= 0.0f ? 1.0f : e;
  float d = 1.0f + e;
  float c = (1.0f - d) + e;
  float y = num / d;
  float r = fmaf(-y, d, num);
  return y + (r - y * c) / d;
}

float sk__siluf(float x) { return x / (1.0f + sk__expf(-x)); }

static void expf_scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = sk__expf(x[i]);
}
static void sigmoidf_scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = sk__sigmoidf(x[i]);
}
static void siluf_scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = sk__siluf(x[i]);
}

static const sk__activation_kernels kernels_scalar = {"scalar", expf_scalar, sigmoidf_scalar, siluf_scalar};
static const sk__activation_kernels kernels_avx2 = {"avx2", sk__expf_avx2, sk__sigmoidf_avx2, sk__siluf_avx2};
static const sk__activation_kernels kernels_avx512 = {"avx512", sk__expf_avx512, sk__sigmoidf_avx512,
                                                      sk__siluf_avx512};

const sk__activation_kernels *sk__activation_config_for(sk__isa isa) {
  /* Never a path the CPU lacks, whatever the caller passed. */
  const sk__isa have = sk__cpu_isa_supported();
  if (isa > have) isa = have;
  return isa >= SK_ISA_AVX512 ? &kernels_avx512 : isa >= SK_ISA_AVX2 ? &kernels_avx2 : &kernels_scalar;
}

void sk__expf_array(const float *x, float *y, size_t n, sk__isa isa) {
  sk__activation_config_for(isa)->expf_array(x, y, n);
}

void sk__sigmoidf_array(const float *x, float *y, size_t n, sk__isa isa) {
  sk__activation_config_for(isa)->sigmoidf_array(x, y, n);
}

void sk__siluf_array(const float *x, float *y, size_t n, sk__isa isa) {
  sk__activation_config_for(isa)->siluf_array(x, y, n);
}

/* Scalar definitions of exp / sigmoid / silu (see activation.h) and the
 * array dispatch. Compiled with -ffp-contract=off: every fused multiply-add
 * is an explicit fmaf, so the SIMD paths can reproduce the bits. */
#include "kernels/activation/activation.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* exp: x = n ln2 + r with |r| <= ln2/2 (n by the round-to-nearest magic
 * constant), e^r by a degree-6 polynomial (Cephes expf coefficients) in
 * Horner form, then the result scaled by 2^n in two steps so subnormal
 * results are formed correctly. */
float sk__expf(float x) {
  if (x != x) return x + x; /* NaN, quieted */
  if (x > 88.72283935546875f) return INFINITY;
  if (x < -103.972076416015625f) return 0.0f;
  const float magic = 0x1.8p23f;
  float n = fmaf(x, 0x1.715476p+0f, magic) - magic; /* rint(x / ln2) */
  float r = fmaf(n, -0x1.62e400p-1f, x);            /* ln2 high part: exact product */
  r = fmaf(n, -0x1.7f7d1cp-20f, r);                 /* ln2 low part */
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  float r2 = r * r;
  p = fmaf(p, r2, r);
  p = p + 1.0f;
  /* 2^n as two factors, each a normal float, so n down to -150 works. */
  int32_t k = (int32_t)n;
  int32_t k1 = k / 2, k2 = k - k1;
  return p * from_bits((uint32_t)(k1 + 127) << 23) * from_bits((uint32_t)(k2 + 127) << 23);
}

float sk__sigmoidf(float x) { return 1.0f / (1.0f + sk__expf(-x)); }

float sk__siluf(float x) { return x / (1.0f + sk__expf(-x)); }

/* The SIMD paths arrive in activation_avx2.c / activation_avx512.c; until an
 * ISA has one, its arrays use the scalar loop (same bits by definition). */
void sk__expf_array(const float *x, float *y, size_t n, sk__isa isa) {
  (void)isa;
  for (size_t i = 0; i < n; i++) y[i] = sk__expf(x[i]);
}

void sk__sigmoidf_array(const float *x, float *y, size_t n, sk__isa isa) {
  (void)isa;
  for (size_t i = 0; i < n; i++) y[i] = sk__sigmoidf(x[i]);
}

void sk__siluf_array(const float *x, float *y, size_t n, sk__isa isa) {
  (void)isa;
  for (size_t i = 0; i < n; i++) y[i] = sk__siluf(x[i]);
}

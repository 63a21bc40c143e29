/* exp, sigmoid and silu in fp32 with a stated error bound, for the vector
 * ops (moe_gating_topk's softmax and sigmoid, dequant_swiglu_quant's silu).
 *
 * The scalar functions below are THE definition: every SIMD path computes
 * the very same operations lane by lane (same polynomial, same fmaf steps),
 * so array results equal the scalar ones bit for bit on every ISA, and the
 * ops' references (which call the scalar functions) match their fast
 * kernels bitwise. Accuracy against the true function: see the test
 * (tests/test_activation.c) and the bound stated next to each function.
 */
#ifndef SK_KERNELS_ACTIVATION_H
#define SK_KERNELS_ACTIVATION_H

#include <stddef.h>

#include "core/cpu.h"

/* e^x, within 2 ulp of the correctly rounded result for every finite x;
 * +Inf for x > ~88.72, +0 below the subnormal range, NaN for NaN,
 * exp(-Inf) = 0, exp(+Inf) = +Inf. */
float sk__expf(float x);
/* 1 / (1 + e^-x). */
float sk__sigmoidf(float x);
/* x / (1 + e^-x). */
float sk__siluf(float x);

/* Array forms: y[i] = f(x[i]) for i < n; x and y may be the same array. */
void sk__expf_array(const float *x, float *y, size_t n, sk__isa isa);
void sk__sigmoidf_array(const float *x, float *y, size_t n, sk__isa isa);
void sk__siluf_array(const float *x, float *y, size_t n, sk__isa isa);

#endif

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

/* e^x. Accuracy, measured over every float (tests/test_activation.c pins
 * it on a dense sample): at most 1 ulp from the correctly rounded result,
 * max error 1.013 ulp against the exact value (subnormal results in
 * subnormal ulps). +Inf for x >= 88.72283935546875 (e^x > FLT_MAX), +0 for
 * x < -103.972076416015625 (e^x < 2^-150), the smallest subnormal at that
 * bound; exp(-Inf) = +0, exp(+Inf) = +Inf, NaN in -> the same NaN, quiet. */
float sk__expf(float x);
/* 1 / (1 + e^-x), computed as (x >= 0 ? 1 : e) / (1 + e) with e = e^-|x|
 * and the rounding of 1 + e corrected (activation.c). Measured over a
 * dense sample: at most 1.48 ulp wherever the result is normal (x >= -87.33;
 * bound pinned: 2 ulp); below, the result
 * is a subnormal or +0 (+0 once e^-x overflows, x <= -88.72) with absolute
 * error < 2^-128. sigmoid(+Inf) = 1, sigmoid(-Inf) = +0. */
float sk__sigmoidf(float x);
/* x / (1 + e^-x), the spec's formula as written. Measured over every float:
 * at most 2.41 ulp for x > -88.7228 (bound pinned: 2.5 ulp); for smaller x
 * e^-x overflows and the result is -0, absolute error < 2^-121 (the exact
 * |silu| there is below 88.73 * 2^-128). silu(-Inf) = NaN (-Inf / Inf),
 * silu(+Inf) = +Inf. */
float sk__siluf(float x);

/* One path's array forms (y[i] = f(x[i]) for i < n; x and y may be the same
 * array), all bitwise the scalar definitions above. Adding an ISA: its file
 * (activation_isa.h) and its line in activation.c's table. */
typedef struct sk__activation_kernels {
  const char *name; /* "avx512", "avx2", "scalar" */
  void (*expf_array)(const float *x, float *y, size_t n);
  void (*sigmoidf_array)(const float *x, float *y, size_t n);
  void (*siluf_array)(const float *x, float *y, size_t n);
} sk__activation_kernels;

/* The path for isa (a node's io->isa), never one the CPU lacks. */
const sk__activation_kernels *sk__activation_config_for(sk__isa isa);

/* The array forms through sk__activation_config_for(isa). */
void sk__expf_array(const float *x, float *y, size_t n, sk__isa isa);
void sk__sigmoidf_array(const float *x, float *y, size_t n, sk__isa isa);
void sk__siluf_array(const float *x, float *y, size_t n, sk__isa isa);

#endif

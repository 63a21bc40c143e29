/* Row reductions in the library's one fixed order, shared by the ops that
 * reduce a row of fp32 values (softmax, argmax, moe_gating_topk's softmax):
 * sixteen lanes, lane l taking the elements j = l (mod 16) in increasing j,
 * then folded pairwise (l + 8, + 4, + 2, + 1). Sixteen lanes are what a
 * SIMD loop keeps in registers (two AVX2 or one AVX-512 vector), so the
 * compiler may vectorize these loops without changing a single operation,
 * and a reference written element by element (part[j % 16] += ...) gives
 * the same bits. */
#ifndef SK_OPS_ROW_REDUCE_H
#define SK_OPS_ROW_REDUCE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "ops/op.h"

#define SK__LANES 16

/* The 16 parts folded pairwise: part[l] += part[l + h] for h = 8, 4, 2, 1. */
static inline float sk__fold_lanes(float *part) {
  for (int h = SK__LANES / 2; h >= 1; h /= 2)
    for (int l = 0; l < h; l++) part[l] = part[l] + part[l + h];
  return part[0];
}

/* The sum of x[0 .. n) in the fixed order. */
static inline float sk__sum_lanes(const float *x, int64_t n) {
  float part[SK__LANES] = {0};
  int64_t e = 0;
  for (; e + SK__LANES <= n; e += SK__LANES)
    for (int l = 0; l < SK__LANES; l++) part[l] = part[l] + x[e + l];
  for (int l = 0; e + l < n; l++) part[l] = part[l] + x[e + l];
  return sk__fold_lanes(part);
}

/* The largest non-NaN value of x[0 .. n) (-inf if none), + 0 so that a
 * zero maximum is +0 whichever lane found it: a maximum is the same value
 * in any order but for the sign of zero. */
static inline float sk__max_lanes(const float *x, int64_t n) {
  float lane[SK__LANES];
  for (int l = 0; l < SK__LANES; l++) lane[l] = -INFINITY;
  int64_t e = 0;
  for (; e + SK__LANES <= n; e += SK__LANES)
    for (int l = 0; l < SK__LANES; l++) lane[l] = x[e + l] > lane[l] ? x[e + l] : lane[l];
  for (int l = 0; e + l < n; l++) lane[l] = x[e + l] > lane[l] ? x[e + l] : lane[l];
  float m = -INFINITY;
  for (int l = 0; l < SK__LANES; l++) m = lane[l] > m ? lane[l] : m;
  return m + 0.0f;
}

/* Build check of an op that reduces its input's last dimension: that
 * dimension must not be the run-time token count (a rank-1 dynamic input),
 * or a row's result would depend on every token. */
static inline sk_status sk__ctx_reduced_dim_static(sk__build_ctx *ctx, const sk__tensor *x, const char *slot) {
  if (x->rank == 1 && x->dynamic)
    return sk__fail(SK_STATUS_INVALID_SHAPE,
                    "%s: input %s: the reduced (last) dimension is the run-time token count; give [T, N]",
                    sk__ctx_op(ctx), slot);
  return SK_STATUS_OK;
}

#endif

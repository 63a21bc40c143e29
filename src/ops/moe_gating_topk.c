/* moe_gating_topk: validation, shape rule and reference (see docs/ops.md).
 * The fast kernel is moe_gating_topk_kernel.c; both follow this arithmetic
 * order exactly, so all three outputs agree bit for bit:
 *
 * Per row of x [T, E], in fp32 (fp16 / bf16 widened exactly):
 *  1. norm
 *     sigmoid: norm[e] = sk__sigmoidf(x[e])          (kernels/activation)
 *     softmax: m = max_e x[e] over the non-NaN values (-inf if none), then
 *              m = m + 0 (so a zero maximum is +0 whatever order found it);
 *              ex[e] = sk__expf(x[e] - m);
 *              sixteen partial sums p[j] = sum of ex[e] over e = j mod 16,
 *              each in increasing e from +0; then p[j] = p[j] + p[j + h] for
 *              h = 8, 4, 2, 1 (j < h); s = p[0]; a NaN s becomes the
 *              canonical quiet NaN; norm[e] = ex[e] / s (a true division).
 *  2. v[e] = norm[e] + bias[e] (bias widened to fp32; no add without bias);
 *     a NaN v counts as -inf for all that follows (selection only compares).
 *  3. groups (group_count > 1 and k_group < group_count): group score =
 *     max of v over the group (mode 0) or top1 + top2, its two largest
 *     values (mode 1; a NaN sum counts as -inf); the k_group best groups
 *     are kept, ties to the lower group index. Experts of the other groups
 *     are excluded: never selected, even when a kept expert's v is -inf.
 *  4. expert_idx: the k best eligible experts, v descending, equal v to the
 *     lower index first (one total order, so the result is unique).
 *  5. y[j] = norm[idx[j]]; if norm_type != 0 or renorm != 0:
 *     s = ((y[0] + y[1]) + ...) + y[k-1] sequentially from +0, d = s + eps,
 *     y[j] = y[j] / d; then y[j] = y[j] * routed_scaling_factor (fp32); a
 *     NaN y becomes the canonical quiet NaN; stored rounded to x's dtype.
 *  6. out row = norm, whatever out_flag (it costs nothing: the kernel builds
 *     norm in the out row).
 */
#include "ops/moe_gating_topk.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[T, E] fp32, fp16 or bf16: the router logits", .dtypes = SK__FLOATS, SK__RANK(2, 2)),
    SK__IN_OPT("bias", "[E], x's dtype: added after the activation, for selection only", SK__SAME_DTYPE_AS(MOE_X)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT_REQUIRED("k", 1, MOE_MAX_EXPERTS, "experts per token, at most k_group * E / group_count"),
    SK__ATTR_INT("k_group", 1, 1, MOE_MAX_EXPERTS, "groups kept per token, at most group_count"),
    SK__ATTR_INT("group_count", 1, 1, MOE_MAX_EXPERTS, "expert groups; divides E"),
    SK__ATTR_INT("group_select_mode", 0, 0, 1, "group score: 0 its max, 1 the sum of its top two"),
    SK__ATTR_INT("renorm", 0, 0, 1, "a flag: renormalize (accepted for torch_npu; the weights are normalized)"),
    SK__ATTR_INT("norm_type", 0, 0, 1, "activation: 0 softmax, 1 sigmoid"),
    SK__ATTR_INT("out_flag", 0, 0, 1, "a flag: also write the activated scores to out"),
    SK__ATTR_FLOAT("routed_scaling_factor", 1.0, "multiplies the normalized weights"),
    SK__ATTR_FLOAT("eps", 1e-20, "added to the weight sum before dividing; >= 0"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("y", "[T, k], x's dtype: the weights of the chosen experts"),
    SK__OUT("expert_idx", "int32 [T, k]: the chosen experts"),
    SK__OUT("out", "fp32 [T, E]: the activated scores (with out_flag)"),
};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  moe_params *p = sk__ctx_params(ctx);
  const sk__tensor *x;
  char s[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, MOE_X, &x));
  int64_t t = x->shape[0], e = x->shape[1];
  if (e > MOE_MAX_EXPERTS)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected at most %d experts (last dimension), got %lld", op,
                    MOE_MAX_EXPERTS, (long long)e);
  const sk__slot *bs = sk__ctx_slot(ctx, MOE_BIAS);
  if (bs->count) {
    const sk__tensor *b;
    SK_RETURN_IF_ERROR(sk__ctx_single(ctx, MOE_BIAS, &b));
    if (b->rank != 1 || b->shape[0] != e)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected shape [%lld] (E of x), got %s", op,
                      (long long)e, sk__shape_str(b->rank, b->shape, s, sizeof s));
  }
  int64_t k, k_group, group_count, mode, renorm, norm_type, out_flag;
  double rsf, eps;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "k", &k));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "k_group", &k_group));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_count", &group_count));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_select_mode", &mode));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "renorm", &renorm));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "norm_type", &norm_type));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "out_flag", &out_flag));
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "routed_scaling_factor", &rsf));
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "eps", &eps));
  if (e % group_count != 0)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute group_count: expected a divisor of E = %lld, got %lld", op, (long long)e,
                    (long long)group_count);
  int64_t group_size = e / group_count;
  if (mode == 1 && group_size <= 2)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute group_select_mode: mode 1 needs more than 2 experts per group "
                    "(E / group_count), got %lld",
                    op, (long long)group_size);
  if (k_group < 1 || k_group > group_count)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute k_group: expected 1..%lld (group_count), got %lld", op,
                    (long long)group_count, (long long)k_group);
  if (k < 1 || k > k_group * group_size)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute k: expected 1..%lld (k_group * E / group_count), got %lld", op,
                    (long long)(k_group * group_size), (long long)k);
  if (!(eps >= 0))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute eps: expected >= 0, got %g", op, eps);
  *p = (moe_params){.t = t, .e = e, .k = k, .k_group = k_group, .group_count = group_count,
                    .group_size = group_size, .group_select_mode = (int)mode, .norm_type = (int)norm_type,
                    .renorm = (int)renorm, .out_flag = (int)out_flag, .routed_scaling_factor = (float)rsf,
                    .eps = (float)eps, .dtype = x->dtype, .has_bias = bs->count > 0};
  sk__tensor *outs;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 3, &outs));
  sk__tensor_init(&outs[MOE_Y], x->dtype, 2, (int64_t[]){t, k});
  sk__tensor_init(&outs[MOE_IDX], SK_INT32, 2, (int64_t[]){t, k});
  sk__tensor_init(&outs[MOE_OUT], SK_FP32, 2, (int64_t[]){t, e});
  return SK_STATUS_OK;
}

/* ---- reference: one row at a time, element by element, selection by
 * repeated scans (independent of the kernel's insertion and filtering). ---- */

/* Whether candidate (a, i) ranks above (b, j): larger value, then lower index. */
static bool ranks_above(float a, int64_t i, float b, int64_t j) { return a > b || (a == b && i < j); }

/* Index of the best entry of val[0..n) that is usable (NULL: all are) and
 * not taken (NULL: none is). */
static int64_t best_of(const float *val, const bool *usable, const bool *taken, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; i++)
    if ((!usable || usable[i]) && (!taken || !taken[i]) && (best < 0 || ranks_above(val[i], i, val[best], best)))
      best = i;
  return best;
}

static void reference_row(const moe_params *p, const void *x, const void *bias, int64_t row, float *norm, float *v,
                          int32_t *idx, float *y) {
  int64_t n = p->e, gs = p->group_size;
  if (p->norm_type == 1) {
    for (int64_t e = 0; e < n; e++) norm[e] = sk__sigmoidf(sk__load_f32(x, p->dtype, (size_t)(row * n + e)));
  } else {
    float m = -INFINITY, part[16] = {0};
    for (int64_t e = 0; e < n; e++) {
      float xe = sk__load_f32(x, p->dtype, (size_t)(row * n + e));
      if (xe > m) m = xe;
    }
    m = m + 0.0f;
    for (int64_t e = 0; e < n; e++) {
      norm[e] = sk__expf(sk__load_f32(x, p->dtype, (size_t)(row * n + e)) - m);
      part[e % 16] = part[e % 16] + norm[e];
    }
    for (int h = 8; h >= 1; h /= 2)
      for (int j = 0; j < h; j++) part[j] = part[j] + part[j + h];
    float s = part[0] == part[0] ? part[0] : sk__canonical_nan();
    for (int64_t e = 0; e < n; e++) norm[e] = norm[e] / s;
  }
  for (int64_t e = 0; e < n; e++) {
    v[e] = bias ? norm[e] + sk__load_f32(bias, p->dtype, (size_t)e) : norm[e];
    if (v[e] != v[e]) v[e] = -INFINITY;
  }
  bool usable[MOE_MAX_EXPERTS], taken[MOE_MAX_EXPERTS];
  for (int64_t e = 0; e < n; e++) usable[e] = true;
  if (p->group_count > 1 && p->k_group < p->group_count) {
    float score[MOE_MAX_EXPERTS];
    bool kept[MOE_MAX_EXPERTS];
    for (int64_t g = 0; g < p->group_count; g++) {
      const float *gv = v + g * gs;
      int64_t i1 = best_of(gv, NULL, NULL, gs);
      if (p->group_select_mode == 0) {
        score[g] = gv[i1];
      } else {
        for (int64_t e = 0; e < gs; e++) taken[e] = e == i1;
        score[g] = gv[i1] + gv[best_of(gv, NULL, taken, gs)];
        if (score[g] != score[g]) score[g] = -INFINITY;
      }
      kept[g] = false;
    }
    for (int64_t j = 0; j < p->k_group; j++) kept[best_of(score, NULL, kept, p->group_count)] = true;
    for (int64_t e = 0; e < n; e++) usable[e] = kept[e / gs];
  }
  for (int64_t e = 0; e < n; e++) taken[e] = false;
  for (int64_t j = 0; j < p->k; j++) {
    idx[j] = (int32_t)best_of(v, usable, taken, n);
    taken[idx[j]] = true;
  }
  for (int64_t j = 0; j < p->k; j++) y[j] = norm[idx[j]];
  if (p->norm_type != 0 || p->renorm != 0) {
    float s = 0.0f;
    for (int64_t j = 0; j < p->k; j++) s = s + y[j];
    float d = s + p->eps;
    for (int64_t j = 0; j < p->k; j++) y[j] = y[j] / d;
  }
  for (int64_t j = 0; j < p->k; j++) {
    y[j] = y[j] * p->routed_scaling_factor;
    if (y[j] != y[j]) y[j] = sk__canonical_nan();
  }
}

static void reference(const sk__node_io *io) {
  const moe_params *p = io->params;
  const void *x = io->in[MOE_X].tensors[0].data;
  const void *bias = io->in[MOE_BIAS].count ? io->in[MOE_BIAS].tensors[0].data : NULL;
  float v[MOE_MAX_EXPERTS], y[MOE_MAX_EXPERTS];
  int32_t idx[MOE_MAX_EXPERTS];
  for (int64_t t = 0; t < p->t; t++) {
    float *norm = (float *)io->out[MOE_OUT].data + t * p->e;
    reference_row(p, x, bias, t, norm, v, idx, y);
    for (int64_t j = 0; j < p->k; j++) {
      sk__store_f32(io->out[MOE_Y].data, p->dtype, (size_t)(t * p->k + j), y[j]);
      ((int32_t *)io->out[MOE_IDX].data)[t * p->k + j] = idx[j];
    }
  }
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "exp or sigmoid, top-k selection");
}

const sk__op_def sk__op_moe_gating_topk = {
    .type = "moe_gating_topk",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "per token: activate, add bias, pick k_group groups, then the top k experts; normalized weights",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = sk__moe_tile,
    .run_block = sk__moe_run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = sk__moe_footprint,
    .dynamic_rows = true, /* per row: a block computes its live rows only */
    .params_size = sizeof(moe_params),
};

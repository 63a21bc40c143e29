/* dequant_swiglu_quant: validation, shape rule and reference (docs/ops.md).
 *
 *   x [T, 2H] (int32, fp32, fp16, bf16) -> y int8 [T, H], scale fp32 [T]
 *
 * Arithmetic, per row r of group g (fp32; the kernel in
 * dequant_swiglu_quant_kernel.c does exactly these operations per element,
 * in this order, so y and scale match the reference bit for bit):
 *
 *   int32 x:  v   = (int32)(x[r,c] + bias_i32[c])      two's-complement wrap
 *             xf  = (float)v                            round to nearest even
 *             xf  = xf * weight_scale[g or 0, c]        if given
 *             xf  = xf * activation_scale[r]            if given
 *             xf  = xf + bias_f[c]                      if a float bias
 *   float x:  xf  = (float)x[r,c]                       exact
 *   act = activate_left ? xf[:, :H] : xf[:, H:], oth = the other half
 *             o   = sk__siluf(act[c]) * oth[c]          silu(a) = a / (1 + exp(-a))
 *             o   = o * quant_scale[g or 0, c]          dynamic, if given
 *   dynamic:  m   = max_c |o|     (NaNs ignored: exact and order-free)
 *             m == 0: y = 0, scale = 0
 *             s   = m / 127.0f;   y = clip(rint(o / s), -128, 127);  scale = s
 *   static:   y   = clip(rint(o / quant_scale + quant_offset), -128, 127)
 *             scale = quant_scale
 *   rint is round half to even; a NaN quantizes to 0. Group mode: rows at
 *   or past the (clamped) total of group_index are y = 0, scale = 0.
 */
#include "ops/dequant_swiglu_quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[T, 2H] int32, fp32, fp16 or bf16", .dtypes = SK__FLOATS | SK_DTYPE_BIT(SK_INT32), SK__RANK(2, 2)),
    SK__IN_OPT("weight_scale", "fp32 [2H], [1, 2H] or [G, 2H] (one row per group); int32 x only",
               .dtypes = SK__DTYPES1(SK_FP32)),
    SK__IN_OPT("activation_scale", "fp32 [T] or [T, 1]; int32 x only", .dtypes = SK__DTYPES1(SK_FP32)),
    SK__IN_OPT("bias", "[2H]: int32 (added before dequantizing) or fp32 / fp16 / bf16 (after)",
               .dtypes = SK__FLOATS | SK_DTYPE_BIT(SK_INT32)),
    SK__IN_OPT("quant_scale", "fp32, fp16 or bf16 [H], [1, H] or [G, H]; static mode: [1]", .dtypes = SK__FLOATS),
    SK__IN_OPT("quant_offset", "fp32, fp16 or bf16 [1]; static mode only", .dtypes = SK__FLOATS),
    SK__IN_OPT("group_index", "int64 [G]: rows per group (counts)", .dtypes = SK__DTYPES1(SK_INT64)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("activate_left", 0, 0, 1, "1: silu on the left half, 0: on the right half"),
    SK__ATTR_INT("quant_mode", 0, 0, 1, "0 static (quant_scale, quant_offset), 1 dynamic (per-row scale)"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("y", "int8 [T, H]"),
    SK__OUT("scale", "fp32 [T]: the per-row scale (dynamic) or quant_scale (static)"),
};

#define MAX_GROUPS 1024

/* t must be [n] or [1, n], or [g, n] when g > 0 (one row per group). */
static sk_status need_row_shape(const char *op, int slot, const sk__tensor *t, int64_t n, int64_t g) {
  bool ok = (t->rank == 1 && t->shape[0] == n) ||
            (t->rank == 2 && t->shape[1] == n && (t->shape[0] == 1 || (g > 0 && t->shape[0] == g)));
  if (ok) return SK_STATUS_OK;
  char s[SK_SHAPE_STR_MAX];
  if (g > 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected shape [%lld], [1, %lld] or [%lld, %lld] (one row per group), got %s",
                    op, inputs[slot].name, (long long)n, (long long)n, (long long)g, (long long)n,
                    sk__shape_str(t->rank, t->shape, s, sizeof s));
  return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected shape [%lld] or [1, %lld], got %s", op, inputs[slot].name,
                  (long long)n, (long long)n, sk__shape_str(t->rank, t->shape, s, sizeof s));
}

static sk_status need_one(const char *op, int slot, const sk__tensor *t) {
  if (t->rank == 1 && t->shape[0] == 1) return SK_STATUS_OK;
  char s[SK_SHAPE_STR_MAX];
  return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected shape [1] in static mode, got %s", op, inputs[slot].name,
                  sk__shape_str(t->rank, t->shape, s, sizeof s));
}

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  dsq_params *p = sk__ctx_params(ctx);
  int64_t left, mode;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "activate_left", &left));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "quant_mode", &mode));
  p->activate_left = (int)left;
  p->quant_mode = (int)mode;

  const sk__tensor *x, *in[SK__MAX_SLOTS] = {0};
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, DSQ_X, &x));
  for (int i = DSQ_WEIGHT_SCALE; i <= DSQ_GROUP_INDEX; i++) in[i] = sk__ctx_optional(ctx, i);
  const sk__tensor *ws = in[DSQ_WEIGHT_SCALE], *as = in[DSQ_ACTIVATION_SCALE], *bias = in[DSQ_BIAS];
  const sk__tensor *qs = in[DSQ_QUANT_SCALE], *qo = in[DSQ_QUANT_OFFSET], *gi = in[DSQ_GROUP_INDEX];
  char s[SK_SHAPE_STR_MAX];

  if (x->shape[1] == 0 || x->shape[1] % 2 != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected an even last dimension 2H > 0, got %lld", op,
                    (long long)x->shape[1]);
  int64_t t = x->shape[0], h = x->shape[1] / 2, groups = 0;

  if (gi) {
    if (gi->rank != 1 || gi->shape[0] < 1 || gi->shape[0] > MAX_GROUPS)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input group_index: expected shape [G] with 1 <= G <= %d, got %s", op,
                      MAX_GROUPS, sk__shape_str(gi->rank, gi->shape, s, sizeof s));
    if (mode != 1)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "%s: input group_index: group mode supports dynamic quantization only (quant_mode 1), got quant_mode 0",
                      op);
    groups = gi->shape[0];
  }

  if (x->dtype != SK_INT32) {
    for (int i = DSQ_WEIGHT_SCALE; i <= DSQ_BIAS; i++)
      if (in[i])
        return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: expected absent with a float x (only int32 x is dequantized), x is %s",
                        op, inputs[i].name, sk_dtype_name(x->dtype));
  }
  if (ws) {
    SK_RETURN_IF_ERROR(need_row_shape(op, DSQ_WEIGHT_SCALE, ws, 2 * h, groups));
  }
  if (as) {
    if (!((as->rank == 1 && as->shape[0] == t) || (as->rank == 2 && as->shape[0] == t && as->shape[1] == 1)))
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input activation_scale: expected shape [%lld] or [%lld, 1], got %s", op,
                      (long long)t, (long long)t, sk__shape_str(as->rank, as->shape, s, sizeof s));
  }
  if (bias) {
    if (bias->rank != 1 || bias->shape[0] != 2 * h)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected shape [%lld], got %s", op, (long long)(2 * h),
                      sk__shape_str(bias->rank, bias->shape, s, sizeof s));
  }
  if (mode == 1) {
    if (qo)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input quant_offset: expected absent in dynamic mode (quant_mode 1)", op);
    if (qs) SK_RETURN_IF_ERROR(need_row_shape(op, DSQ_QUANT_SCALE, qs, h, groups));
  } else {
    if (!qs)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input quant_scale: required in static mode (quant_mode 0), got none", op);
    SK_RETURN_IF_ERROR(need_one(op, DSQ_QUANT_SCALE, qs));
    if (qo) SK_RETURN_IF_ERROR(need_one(op, DSQ_QUANT_OFFSET, qo));
  }

  sk__tensor *outs;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 2, &outs));
  sk__tensor_init(&outs[0], SK_INT8, 2, (int64_t[]){t, h});
  sk__tensor_init(&outs[1], SK_FP32, 1, &t);
  return SK_STATUS_OK;
}

/* ---- reference: one element at a time, through scalar loads ---- */

static int8_t rint_i8(float v) {
  float r = rintf(v);
  if (r != r) return 0;
  return r > 127.0f ? 127 : r < -128.0f ? -128 : (int8_t)r;
}

static float dequant(const sk__node_io *io, int64_t r, int64_t c, int64_t g) {
  const sk__tensor *x = &io->in[DSQ_X].tensors[0];
  size_t i = (size_t)(r * x->shape[1] + c);
  if (x->dtype != SK_INT32) return sk__load_f32(x->data, x->dtype, i);
  const sk__slot *ws = &io->in[DSQ_WEIGHT_SCALE], *as = &io->in[DSQ_ACTIVATION_SCALE], *b = &io->in[DSQ_BIAS];
  uint32_t v = (uint32_t)((const int32_t *)x->data)[i];
  if (b->count && b->tensors[0].dtype == SK_INT32) v += (uint32_t)((const int32_t *)b->tensors[0].data)[c];
  float f = (float)(int32_t)v;
  if (ws->count) {
    int64_t row = ws->tensors[0].rank == 2 && ws->tensors[0].shape[0] > 1 ? g : 0;
    f = f * ((const float *)ws->tensors[0].data)[row * x->shape[1] + c];
  }
  if (as->count) f = f * ((const float *)as->tensors[0].data)[r];
  if (b->count && b->tensors[0].dtype != SK_INT32) f = f + sk__load_f32(b->tensors[0].data, b->tensors[0].dtype, (size_t)c);
  return f;
}

static void reference_row(const sk__node_io *io, int64_t r, int64_t g, float *o) {
  const dsq_params *p = io->params;
  int64_t h = io->in[DSQ_X].tensors[0].shape[1] / 2;
  int8_t *y = (int8_t *)io->out[0].data + r * h;
  float *scale = (float *)io->out[1].data + r;
  const sk__slot *qs = &io->in[DSQ_QUANT_SCALE], *qo = &io->in[DSQ_QUANT_OFFSET];
  for (int64_t c = 0; c < h; c++) {
    float left = dequant(io, r, c, g), right = dequant(io, r, h + c, g);
    o[c] = p->activate_left ? sk__siluf(left) * right : sk__siluf(right) * left;
  }
  if (p->quant_mode == 0) {
    float q = sk__load_f32(qs->tensors[0].data, qs->tensors[0].dtype, 0);
    float off = qo->count ? sk__load_f32(qo->tensors[0].data, qo->tensors[0].dtype, 0) : 0.0f;
    for (int64_t c = 0; c < h; c++) y[c] = rint_i8(o[c] / q + off);
    *scale = q;
    return;
  }
  if (qs->count) {
    int64_t row = qs->tensors[0].rank == 2 && qs->tensors[0].shape[0] > 1 ? g : 0;
    for (int64_t c = 0; c < h; c++) o[c] = o[c] * sk__load_f32(qs->tensors[0].data, qs->tensors[0].dtype, (size_t)(row * h + c));
  }
  float m = 0.0f;
  for (int64_t c = 0; c < h; c++) m = fabsf(o[c]) > m ? fabsf(o[c]) : m;
  if (m == 0.0f) {
    memset(y, 0, (size_t)h);
    *scale = 0.0f;
    return;
  }
  float s = m / 127.0f;
  for (int64_t c = 0; c < h; c++) y[c] = rint_i8(o[c] / s);
  *scale = s;
}

static void reference(const sk__node_io *io) {
  const sk__tensor *x = &io->in[DSQ_X].tensors[0];
  int64_t t = x->shape[0], h = x->shape[1] / 2;
  float *o = malloc((size_t)h * sizeof(float));
  if (!o) return; /* the oracle of tests only; a mismatch will show */
  const sk__slot *gi = &io->in[DSQ_GROUP_INDEX];
  if (!gi->count) {
    for (int64_t r = 0; r < t; r++) reference_row(io, r, 0, o);
  } else {
    const int64_t *counts = gi->tensors[0].data;
    int64_t n_groups = gi->tensors[0].shape[0], begin = 0;
    for (int64_t g = 0; g < n_groups; g++) {
      int64_t end = sk__dsq_group_end(counts, g, begin, t);
      for (int64_t r = begin; r < end; r++) reference_row(io, r, g, o);
      begin = end;
    }
    memset((int8_t *)io->out[0].data + begin * h, 0, (size_t)((t - begin) * h));
    for (int64_t r = begin; r < t; r++) ((float *)io->out[1].data)[r] = 0.0f;
  }
  free(o);
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "silu, dtype conversion");
}

const sk__op_def sk__op_dequant_swiglu_quant = {
    .type = "dequant_swiglu_quant",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "int8 y, scale = quantize(silu(a) * b) of the dequantized halves a, b of x (docs/ops.md)",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = sk__dsq_tile,
    .run_block = sk__dsq_run_block,
    .kernel_name = kernel_name,
    .footprint = sk__dsq_footprint,
    .reference = reference,
    .dynamic_rows = true, /* per row; group ends cut at the live rows */
    .params_size = sizeof(dsq_params),
};

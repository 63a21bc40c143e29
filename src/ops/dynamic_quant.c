/* dynamic_quant(x, smooth_scales?) -> (y, scale): torch_npu's
 * npu_dynamic_quant in its per-token mode, the activations' half of w8a8
 * (a linear layer's input quantized per row at run time, for quant_matmul
 * with pertoken_scale = scale).
 *
 *   x [..., K] fp32 / fp16 / bf16, smooth_scales [K] fp32 / fp16 / bf16
 *   -> y int8 [..., K], scale fp32 [...]
 *
 * Per row, in fp32 (docs/ops.md; every value widened exactly):
 *   o[c] = x[c]                       (with smooth_scales: x[c] * smooth[c])
 *   m    = max |o[c]|                 NaNs ignored; exact, so order-free
 *   m == 0: y = 0, scale = 0
 *   else    s = m / 127; y[c] = clip(rint(o[c] / s), -128, 127), NaN -> 0
 *           (rint: half to even; a true division); scale = s
 * the dynamic rule dequant_swiglu_quant and moe_init_routing use, so a row
 * depends on itself alone (any batch, chunking, team or ISA: the same bits).
 * The kernel widens a row into fp32 scratch and runs int8_quantize.h's
 * rows, which give the plain rule's bits on every float. */
#include <math.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/int8_quantize.h"
#include "ops/op_util.h"
#include "ops/row_reduce.h"

enum { SLOT_X, SLOT_SMOOTH };

typedef struct dynamic_quant_params {
  int64_t rows, k;
} dynamic_quant_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[..., K] fp32, fp16 or bf16 (rank >= 2): quantized row by row", .dtypes = SK__FLOATS,
           SK__RANK(2, -1)),
    SK__IN_OPT("smooth_scales", "[K] fp32, fp16 or bf16: each column's factor before quantizing",
               .dtypes = SK__FLOATS, SK__RANK(1, 1)),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("y", "int8, x's shape: clip(rint(x / scale), -128, 127)"),
    SK__OUT("scale", "fp32 [...] (x's shape without its last dimension): max |x| / 127 of each row"),
};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  char s[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  const int64_t k = x->shape[x->rank - 1];
  if (k < 1)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected [..., K] with K >= 1, got %s", op,
                    sk__shape_str(x->rank, x->shape, s, sizeof s));
  SK_RETURN_IF_ERROR(sk__ctx_reduced_dim_static(ctx, x, "x"));
  const sk__tensor *smooth = sk__ctx_optional(ctx, SLOT_SMOOTH);
  if (smooth && smooth->shape[0] != k)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input smooth_scales: expected [%lld] (x's last dimension), got %s",
                    op, (long long)k, sk__shape_str(smooth->rank, smooth->shape, s, sizeof s));
  dynamic_quant_params *p = sk__ctx_params(ctx);
  p->k = k;
  p->rows = sk__tensor_numel(x) / k;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 2, &out));
  sk__tensor_init(&out[0], SK_INT8, x->rank, x->shape);
  sk__tensor_init(&out[1], SK_FP32, x->rank - 1, x->shape);
  return SK_STATUS_OK;
}

/* The plain rule, value by value: the oracle. */
static void reference(const sk__node_io *io) {
  const dynamic_quant_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk__tensor *smooth = io->in[SLOT_SMOOTH].count ? &io->in[SLOT_SMOOTH].tensors[0] : NULL;
  int8_t *y = io->out[0].data;
  float *scale = io->out[1].data;
  for (int64_t r = 0; r < p->rows; r++) {
    const size_t at = (size_t)(r * p->k);
    float m = 0.0f;
    for (int64_t c = 0; c < p->k; c++) {
      float o = sk__load_f32(x->data, x->dtype, at + (size_t)c);
      if (smooth) o *= sk__load_f32(smooth->data, smooth->dtype, (size_t)c);
      if (fabsf(o) > m) m = fabsf(o);
    }
    const float d = m / 127.0f;
    for (int64_t c = 0; c < p->k; c++) {
      float o = sk__load_f32(x->data, x->dtype, at + (size_t)c);
      if (smooth) o *= sk__load_f32(smooth->data, smooth->dtype, (size_t)c);
      float q = m == 0.0f ? 0.0f : rintf(o / d);
      q = q != q ? 0.0f : q > 127.0f ? 127.0f : q < -128.0f ? -128.0f : q; /* NaN (x NaN, or inf / inf) -> 0 */
      y[at + (size_t)c] = (int8_t)q;
    }
    scale[r] = m == 0.0f ? 0.0f : d;
  }
}

/* ---- the kernel: blocks of whole rows ---- */

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const dynamic_quant_params *p = io->params;
  *out = sk__row_tiling(p->rows, p->k, n_cores, 8192);
  out->workspace_bytes = 2 * (size_t)p->k * sizeof(float); /* the row in fp32, and the smooth scales */
  return SK_STATUS_OK;
}

static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const dynamic_quant_params *p = io->params;
  int64_t r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  const int64_t row_bytes = p->k * (int64_t)sk_dtype_size(io->in[SLOT_X].tensors[0].dtype);
  reads[0] = (sk__span){r0 * row_bytes, r1 * row_bytes};
  writes[0] = (sk__span){r0 * p->k, r1 * p->k};
  writes[1] = (sk__span){r0 * 4, r1 * 4};
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const dynamic_quant_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk__tensor *smooth = io->in[SLOT_SMOOTH].count ? &io->in[SLOT_SMOOTH].tensors[0] : NULL;
  float *row = workspace, *factor = row + p->k;
  int64_t r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  sk__clip(&r0, &r1, sk__live_numel(io, x) / p->k);
  if (smooth && r0 < r1) sk__convert(smooth->data, smooth->dtype, factor, SK_FP32, (size_t)p->k, io->isa);
  const size_t es = sk_dtype_size(x->dtype);
  for (int64_t r = r0; r < r1; r++) {
    sk__convert((const char *)x->data + (size_t)(r * p->k) * es, x->dtype, row, SK_FP32, (size_t)p->k, io->isa);
    if (smooth)
      for (int64_t c = 0; c < p->k; c++) row[c] *= factor[c];
    sk__int8_quantize_dynamic(row, p->k, (int8_t *)io->out[0].data + r * p->k, (float *)io->out[1].data + r);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_dynamic_quant = {
    .type = "dynamic_quant",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "per-row int8: scale = max |x * smooth| / 127, y = clip(rint(x * smooth / scale)) (npu_dynamic_quant)",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .footprint = footprint,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .params_size = sizeof(dynamic_quant_params),
    .dynamic_rows = true, /* a block quantizes its live rows only */
};

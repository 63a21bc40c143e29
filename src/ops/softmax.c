/* softmax(x) over the last dimension (torch.softmax(x, -1)):
 *
 *   x [..., N] fp32 / fp16 / bf16 -> y x's dtype and shape
 *
 * Per row, in fp32 (x widened exactly; docs/ops.md), in this order:
 *   m     = max of the row over its non-NaN values (-inf if none); m = m + 0
 *           (a zero maximum is +0 whatever order found it)
 *   e[j]  = sk__expf(x[j] - m)                       (kernels/activation)
 *   s     = sixteen parts, part[l] = sum of e[j] over j = l (mod 16) in
 *           increasing j from +0, folded pairwise (l + 8, + 4, + 2, + 1):
 *           rms_norm's order
 *   y[j]  = round(e[j] / s), a true division; a NaN s (a NaN in the row,
 *           +inf in it, or a row of -inf: -inf - -inf) makes the whole row
 *           the canonical quiet NaN, as torch gives NaN rows there.
 * The max is exact whatever its order (only which zero it finds is not, and
 * + 0 settles that; a NaN row ends NaN whatever m is), and the 16 parts are
 * what a SIMD loop keeps, so the kernel runs the reference's operations. */
#include <math.h>

#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"
#include "ops/row_reduce.h"

enum { SLOT_X };

/* A row's fp32 scratch lives in the per-core workspace. */
#define MAX_N ((int64_t)1 << 24)

typedef struct softmax_params {
  int64_t rows, n;
} softmax_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[..., N] fp32, fp16 or bf16: softmax over the last dimension", .dtypes = SK__FLOATS, SK__RANK(1, -1))};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x's dtype and shape")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  char s[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  int64_t n = x->shape[x->rank - 1];
  if (n < 1 || n > MAX_N)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected [..., N] with 1 <= N <= %lld, got %s", op,
                    (long long)MAX_N, sk__shape_str(x->rank, x->shape, s, sizeof s));
  SK_RETURN_IF_ERROR(sk__ctx_reduced_dim_static(ctx, x, "x"));
  softmax_params *p = sk__ctx_params(ctx);
  p->n = n;
  p->rows = sk__tensor_numel(x) / n;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, x->rank, x->shape);
  return SK_STATUS_OK;
}

static void reference(const sk__node_io *io) {
  const softmax_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  for (int64_t r = 0; r < p->rows; r++) {
    const size_t at = (size_t)(r * p->n);
    float m = -INFINITY, part[SK__LANES] = {0};
    for (int64_t j = 0; j < p->n; j++) {
      float v = sk__load_f32(x->data, x->dtype, at + (size_t)j);
      if (v > m) m = v;
    }
    m = m + 0.0f;
    for (int64_t j = 0; j < p->n; j++) {
      float e = sk__expf(sk__load_f32(x->data, x->dtype, at + (size_t)j) - m);
      part[j % SK__LANES] = part[j % SK__LANES] + e;
    }
    float s = sk__fold_lanes(part);
    for (int64_t j = 0; j < p->n; j++) {
      float e = sk__expf(sk__load_f32(x->data, x->dtype, at + (size_t)j) - m);
      sk__store_f32(io->out[0].data, x->dtype, at + (size_t)j, s == s ? e / s : sk__canonical_nan());
    }
  }
}

/* Blocks of whole rows, about one per core, at least 32 K values each. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const softmax_params *p = io->params;
  *out = sk__row_tiling(p->rows, p->n, n_cores, 32768);
  out->workspace_bytes = (size_t)p->n * sizeof(float);
  return SK_STATUS_OK;
}

static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const softmax_params *p = io->params;
  int64_t r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  const int64_t row_bytes = p->n * (int64_t)sk_dtype_size(io->out[0].dtype);
  reads[0] = writes[0] = (sk__span){r0 * row_bytes, r1 * row_bytes};
}

/* Row by row: the max, x - m, the array exp (bitwise the scalar one), the
 * 16-lane sum, the division. fp32 rows are computed in y itself. */
static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const softmax_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk_dtype dt = x->dtype;
  const size_t es = sk_dtype_size(dt), n = (size_t)p->n;
  int64_t r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  sk__clip(&r0, &r1, sk__live_numel(io, x) / p->n);
  for (int64_t r = r0; r < r1; r++) {
    const char *xr = (const char *)x->data + (size_t)r * n * es;
    char *yr = (char *)io->out[0].data + (size_t)r * n * es;
    float *v = dt == SK_FP32 ? (float *)yr : workspace;
    const float *xf = (const float *)xr;
    if (dt != SK_FP32) {
      sk__convert(xr, dt, v, SK_FP32, n, io->isa);
      xf = v;
    }
    float m = sk__max_lanes(xf, p->n);
    for (size_t j = 0; j < n; j++) v[j] = xf[j] - m;
    sk__expf_array(v, v, n, io->isa);
    float s = sk__sum_lanes(v, p->n);
    if (s == s)
      for (size_t j = 0; j < n; j++) v[j] = v[j] / s;
    else
      for (size_t j = 0; j < n; j++) v[j] = sk__canonical_nan();
    if (dt != SK_FP32) sk__convert(v, SK_FP32, yr, dt, n, io->isa);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "exp, dtype conversion");
}

const sk__op_def sk__op_softmax = {
    .type = "softmax",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = exp(x - max) / sum(exp(x - max)) over the last dimension, fp32, a fixed 16-lane sum",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(softmax_params),
    .dynamic_rows = true, /* per row: a block computes its live rows only */
};

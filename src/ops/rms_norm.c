/* rms_norm and add_rms_norm (torch_npu's npu_rms_norm, npu_add_rms_norm):
 *
 *   rms_norm(x, gamma; epsilon)       -> y, rstd
 *   add_rms_norm(x1, x2, gamma; eps)  -> y, rstd, x = x1 + x2
 *
 * x [..., H] fp32, fp16 or bf16; gamma [H] of x's dtype or fp32; y x's
 * dtype and shape; rstd fp32 [..., 1]. The arithmetic, per row, in fp32
 * (docs/ops.md; reference and kernel do exactly these operations in this
 * order, so they agree bit for bit, and so does every block split):
 *
 *   add_rms_norm:  s[j] = x1[j] + x2[j]; x[j] = round(s[j])   (the norm reads s)
 *   part[l]  = sum over j = l (mod 16), in increasing j, of v[j] * v[j]
 *              (products rounded, then added: never fused)
 *   ss       = the 16 parts folded pairwise: l + 8, then + 4, + 2, + 1
 *   rstd     = 1 / sqrtf(ss / H + (float)epsilon)
 *   y[j]     = round((v[j] * rstd) * gamma[j])
 *
 * round is to the output dtype, to nearest even. The 16 parts are what a
 * SIMD loop keeps in two 8-lane registers, so the kernel needs no other
 * order than the reference's. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

enum { RMS_X, RMS_GAMMA };             /* rms_norm's slots */
enum { ADD_X1, ADD_X2, ADD_GAMMA };    /* add_rms_norm's */
enum { OUT_Y, OUT_RSTD, OUT_X };

/* Rows longer than this are refused: H must be exact in fp32 (ss / H). */
#define MAX_H ((int64_t)1 << 24)
#define LANES 16

typedef struct rms_params {
  int64_t rows, h;
  float eps;
  bool add; /* add_rms_norm */
} rms_params;

static const sk_op_slot_info rms_inputs[] = {
    SK__IN("x", "[..., H] fp32, fp16 or bf16", .dtypes = SK__FLOATS, SK__RANK(1, -1)),
    SK__IN("gamma", "[H], x's dtype or fp32", .dtypes = SK__FLOATS, SK__RANK(1, 1)),
};
static const sk_op_slot_info add_inputs[] = {
    SK__IN("x1", "[..., H] fp32, fp16 or bf16", .dtypes = SK__FLOATS, SK__RANK(1, -1)),
    SK__IN("x2", "x1's dtype and shape", SK__SAME_DTYPE_AS(ADD_X1)),
    SK__IN("gamma", "[H], x1's dtype or fp32", .dtypes = SK__FLOATS, SK__RANK(1, 1)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_FLOAT("epsilon", 1e-6, "added to the mean square (>= 0), rounded to fp32"),
};
static const sk_op_output_info rms_outputs[] = {
    SK__OUT("y", "x's dtype and shape"),
    SK__OUT("rstd", "fp32 [..., 1]: 1 / sqrt(mean(x^2) + epsilon) per row"),
};
static const sk_op_output_info add_outputs[] = {
    SK__OUT("y", "x1's dtype and shape"),
    SK__OUT("rstd", "fp32 [..., 1]: of x1 + x2 before it is rounded"),
    SK__OUT("x", "x1 + x2 in x1's dtype"),
};

static sk_status build_common(sk__build_ctx *ctx, bool add) {
  const char *op = sk__ctx_op(ctx);
  const char *xname = add ? "x1" : "x";
  const sk__tensor *x, *x2 = NULL, *gamma;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, add ? ADD_X1 : RMS_X, &x));
  if (add) SK_RETURN_IF_ERROR(sk__ctx_single(ctx, ADD_X2, &x2));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, add ? ADD_GAMMA : RMS_GAMMA, &gamma));
  char s[SK_SHAPE_STR_MAX], s2[SK_SHAPE_STR_MAX];
  if (x->rank < 1 || x->shape[x->rank - 1] < 1 || x->shape[x->rank - 1] > MAX_H)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected [..., H] with 1 <= H <= %lld, got %s", op, xname,
                    (long long)MAX_H, sk__shape_str(x->rank, x->shape, s, sizeof s));
  if (add && (x2->dtype != x->dtype || !sk__tensor_same_shape(x, x2)))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x2: expected x1's dtype and shape (%s %s), got %s %s", op,
                    sk_dtype_name(x->dtype), sk__shape_str(x->rank, x->shape, s, sizeof s), sk_dtype_name(x2->dtype),
                    sk__shape_str(x2->rank, x2->shape, s2, sizeof s2));
  int64_t h = x->shape[x->rank - 1];
  if (gamma->dtype != x->dtype && gamma->dtype != SK_FP32)
    return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input gamma: expected dtype %s (%s's) or fp32, got %s", op,
                    sk_dtype_name(x->dtype), xname, sk_dtype_name(gamma->dtype));
  if (gamma->rank != 1 || gamma->shape[0] != h)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input gamma: expected shape [%lld] (%s's last dimension), got %s", op,
                    (long long)h, xname, sk__shape_str(gamma->rank, gamma->shape, s, sizeof s));
  double eps;
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "epsilon", &eps));
  if (!(eps >= 0) || (float)eps == INFINITY)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute epsilon: expected a finite value >= 0, got %g", op, eps);
  rms_params *p = sk__ctx_params(ctx);
  p->h = h;
  p->rows = sk__tensor_numel(x) / h;
  p->eps = (float)eps;
  p->add = add;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, add ? 3 : 2, &out));
  sk__tensor_init(&out[OUT_Y], x->dtype, x->rank, x->shape);
  int64_t rshape[SK_MAX_RANK];
  for (int d = 0; d < x->rank; d++) rshape[d] = d == x->rank - 1 ? 1 : x->shape[d];
  sk__tensor_init(&out[OUT_RSTD], SK_FP32, x->rank, rshape);
  if (add) sk__tensor_init(&out[OUT_X], x->dtype, x->rank, x->shape);
  return SK_STATUS_OK;
}

static sk_status build_rms(sk__build_ctx *ctx) { return build_common(ctx, false); }
static sk_status build_add(sk__build_ctx *ctx) { return build_common(ctx, true); }

/* ---- the arithmetic, shared by the reference and the kernel ---- */

/* rstd of the fp32 row v (the order at the top). */
static float row_rstd(const float *v, int64_t h, float eps) {
  float part[LANES] = {0};
  int64_t j = 0;
  for (; j + LANES <= h; j += LANES)
    for (int l = 0; l < LANES; l++) {
      float sq = v[j + l] * v[j + l];
      part[l] = part[l] + sq;
    }
  for (int l = 0; j + l < h; l++) {
    float sq = v[j + l] * v[j + l];
    part[l] = part[l] + sq;
  }
  for (int half = LANES / 2; half >= 1; half /= 2)
    for (int l = 0; l < half; l++) part[l] = part[l] + part[l + half];
  return 1.0f / sqrtf(part[0] / (float)h + eps);
}

/* v[j] = (v[j] * rstd) * g[j], in place. */
static void row_scale(float *v, const float *g, int64_t h, float rstd) {
  for (int64_t j = 0; j < h; j++) {
    float a = v[j] * rstd;
    v[j] = a * g[j];
  }
}

static const sk__tensor *slot_tensor(const sk__node_io *io, int slot) { return &io->in[slot].tensors[0]; }

/* Rows [r0, r1) of h values: convert reads and writes the op's dtypes (the
 * reference passes the one-element-at-a-time converter, the kernel the SIMD
 * one; both round to nearest even alike). scratch holds 3 h floats. */
static void rows(const sk__node_io *io, int64_t r0, int64_t r1, int64_t h, float *scratch, sk__convert_fn convert,
                 sk__isa isa) {
  const rms_params *p = io->params;
  const sk__tensor *x = slot_tensor(io, p->add ? ADD_X1 : RMS_X);
  const sk__tensor *gamma = slot_tensor(io, p->add ? ADD_GAMMA : RMS_GAMMA);
  const size_t es = sk_dtype_size(x->dtype);
  float *v = scratch, *w = scratch + h, *g = scratch + 2 * h;
  convert(gamma->data, gamma->dtype, g, SK_FP32, (size_t)h, isa);
  float *rstd_out = io->out[OUT_RSTD].data;
  for (int64_t r = r0; r < r1; r++) {
    const size_t at = (size_t)(r * h) * es;
    convert((const char *)x->data + at, x->dtype, v, SK_FP32, (size_t)h, isa);
    if (p->add) {
      convert((const char *)slot_tensor(io, ADD_X2)->data + at, x->dtype, w, SK_FP32, (size_t)h, isa);
      for (int64_t j = 0; j < h; j++) v[j] = v[j] + w[j];
      convert(v, SK_FP32, (char *)io->out[OUT_X].data + at, x->dtype, (size_t)h, isa);
    }
    float rstd = row_rstd(v, h, p->eps);
    rstd_out[r] = rstd;
    row_scale(v, g, h, rstd);
    convert(v, SK_FP32, (char *)io->out[OUT_Y].data + at, x->dtype, (size_t)h, isa);
  }
}

static void reference(const sk__node_io *io) {
  const rms_params *p = io->params;
  float *scratch = malloc((size_t)(3 * p->h) * sizeof *scratch);
  if (!scratch) return; /* the oracle of tests only: they see the outputs untouched */
  rows(io, 0, p->rows, p->h, scratch, sk__convert_reference_isa, SK_ISA_SCALAR);
  free(scratch);
}

/* ---- tiling and the kernel ---- */

static size_t scratch_bytes(const rms_params *p) { return (size_t)(3 * p->h) * sizeof(float); }

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const rms_params *p = io->params;
  /* Whole rows, about one block per core, at least 4 rows (or 32 K values) each. */
  int64_t min_rows = p->h >= 8192 ? 1 : 8192 / p->h < 4 ? 4 : 8192 / p->h;
  *out = sk__flat_tiling(p->rows, sk__flat_block_size(p->rows, n_cores, 1, min_rows));
  out->workspace_bytes = scratch_bytes(p);
  return SK_STATUS_OK;
}

/* Block b reads and writes its rows (gamma whole). */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const rms_params *p = io->params;
  int64_t r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  const int64_t row_bytes = p->h * (int64_t)sk_dtype_size(io->out[OUT_Y].dtype);
  reads[0] = (sk__span){r0 * row_bytes, r1 * row_bytes};
  if (p->add) reads[1] = reads[0];
  writes[OUT_Y] = (sk__span){r0 * row_bytes, r1 * row_bytes};
  writes[OUT_RSTD] = (sk__span){r0 * 4, r1 * 4};
  if (p->add) writes[OUT_X] = writes[OUT_Y];
}

/* The rows and row length this run has: under a run-time token count, x's
 * live rows. A dynamic x of rank 1 is one row whose H is the token count
 * (gamma then follows it too): its live elements. */
static void live_extent(const sk__node_io *io, int64_t *n_rows, int64_t *h) {
  const rms_params *p = io->params;
  const sk__tensor *x = slot_tensor(io, p->add ? ADD_X1 : RMS_X);
  *h = x->rank == 1 ? sk__live_numel(io, x) : p->h;
  *n_rows = x->rank == 1 ? p->rows : sk__live_numel(io, x) / p->h;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const rms_params *p = io->params;
  int64_t r0, r1, n_rows, h;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  live_extent(io, &n_rows, &h);
  sk__clip(&r0, &r1, n_rows);
  if (r0 < r1) rows(io, r0, r1, h, workspace, sk__convert, io->isa);
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_rms_norm = {
    .type = "rms_norm",
    SK__SCHEMA_INPUTS(rms_inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(rms_outputs),
    .doc = "per row of the last dimension: y = x / sqrt(mean(x^2) + epsilon) * gamma, and that reciprocal (rstd)",
    .kind = SK_KERNEL_VECTOR,
    .build = build_rms,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(rms_params),
    .dynamic_rows = true, /* per row: a block computes its live rows only */
};

const sk__op_def sk__op_add_rms_norm = {
    .type = "add_rms_norm",
    SK__SCHEMA_INPUTS(add_inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(add_outputs),
    .doc = "x = x1 + x2 (a residual add), then rms_norm of the fp32 sum: y, rstd and x",
    .kind = SK_KERNEL_VECTOR,
    .build = build_add,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(rms_params),
    .dynamic_rows = true, /* per row: a block computes its live rows only */
};

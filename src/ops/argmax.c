/* argmax(x; keepdim) over the last dimension (torch.argmax(x, -1)):
 *
 *   x [..., N] fp32 / fp16 / bf16 / int8 / uint8 / int32 / int64
 *   -> int64 [...] (keepdim 1: [..., 1])
 *
 * Per row, the index of its largest element, the lowest index among equal
 * ones (-0 equals +0); a NaN ranks above every number, so a row with NaNs
 * gives its first NaN (as torch.argmax). fp16 / bf16 are widened exactly
 * to fp32, the integers to int64: no value is changed, so the result is
 * the exact one whatever the order.
 *
 * The reference walks the row once: x[j] replaces the best so far when it
 * ranks strictly above it. The kernel (greedy sampling over a vocabulary
 * of ~152 K) scans CHUNK values at a time with 16 independent lanes: the
 * chunk's largest non-NaN value and whether it holds a NaN; only a chunk
 * that beats the best so far is scanned again for the first index of its
 * maximum (or of its first NaN, which ends the row). Both give the same
 * index by construction: max value first, then the lowest index. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"
#include "ops/row_reduce.h"

enum { SLOT_X };

#define INTS (SK_DTYPE_BIT(SK_INT8) | SK_DTYPE_BIT(SK_UINT8) | SK_DTYPE_BIT(SK_INT32) | SK_DTYPE_BIT(SK_INT64))
#define CHUNK 4096

typedef struct argmax_params {
  int64_t rows, n;
} argmax_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[..., N] fp32, fp16, bf16, int8, uint8, int32 or int64", .dtypes = SK__FLOATS | INTS,
           SK__RANK(1, -1))};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("keepdim", 0, 0, 1, "1: keep the last dimension as 1"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("y", "int64 [...]: the index of each row's maximum (first NaN, else lowest index)")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  char s[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  int64_t n = x->shape[x->rank - 1], keepdim;
  if (n < 1)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected [..., N] with N >= 1 (an empty row has no maximum), got %s",
                    op, sk__shape_str(x->rank, x->shape, s, sizeof s));
  SK_RETURN_IF_ERROR(sk__ctx_reduced_dim_static(ctx, x, "x"));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "keepdim", &keepdim));
  argmax_params *p = sk__ctx_params(ctx);
  p->n = n;
  p->rows = sk__tensor_numel(x) / n;
  int64_t shape[SK_MAX_RANK];
  for (int d = 0; d < x->rank; d++) shape[d] = d == x->rank - 1 ? 1 : x->shape[d];
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, SK_INT64, keepdim ? x->rank : x->rank - 1, shape);
  return SK_STATUS_OK;
}

static int64_t load_int(const void *data, sk_dtype dt, size_t i) {
  int64_t v;
  sk__convert_reference((const char *)data + i * sk_dtype_size(dt), dt, &v, SK_INT64, 1);
  return v;
}

static void reference(const sk__node_io *io) {
  const argmax_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  int64_t *y = io->out[0].data;
  const bool is_float = sk__is_float(x->dtype);
  for (int64_t r = 0; r < p->rows; r++) {
    const size_t at = (size_t)(r * p->n);
    int64_t best = 0;
    for (int64_t j = 1; j < p->n; j++) {
      bool above;
      if (is_float) {
        float v = sk__load_f32(x->data, x->dtype, at + (size_t)j), b = sk__load_f32(x->data, x->dtype, at + (size_t)best);
        above = b == b && (v != v || v > b);
      } else {
        above = load_int(x->data, x->dtype, at + (size_t)j) > load_int(x->data, x->dtype, at + (size_t)best);
      }
      if (above) best = j;
    }
    y[r] = best;
  }
}

/* ---- the kernel ---- */

/* The largest non-NaN value of v[0 .. n) (-inf if none) and whether a NaN
 * is among them, in one pass of 16 independent lanes. */
static float chunk_max(const float *v, int64_t n, bool *has_nan) {
  float lane[SK__LANES];
  int nan[SK__LANES] = {0};
  for (int l = 0; l < SK__LANES; l++) lane[l] = -INFINITY;
  int64_t j = 0;
  for (; j + SK__LANES <= n; j += SK__LANES)
    for (int l = 0; l < SK__LANES; l++) {
      lane[l] = v[j + l] > lane[l] ? v[j + l] : lane[l];
      nan[l] |= v[j + l] != v[j + l];
    }
  for (int l = 0; j + l < n; l++) {
    lane[l] = v[j + l] > lane[l] ? v[j + l] : lane[l];
    nan[l] |= v[j + l] != v[j + l];
  }
  float m = -INFINITY;
  int any = 0;
  for (int l = 0; l < SK__LANES; l++) {
    m = lane[l] > m ? lane[l] : m;
    any |= nan[l];
  }
  *has_nan = any != 0;
  return m;
}

/* The first index of a float row's maximum (its first NaN if it has one). */
static int64_t row_float(const void *row, sk_dtype dt, int64_t n, float *scratch, sk__isa isa) {
  float best = -INFINITY;
  int64_t best_at = 0;
  for (int64_t c = 0; c < n; c += CHUNK) {
    const int64_t len = n - c < CHUNK ? n - c : CHUNK;
    const float *v = (const float *)row + c;
    if (dt != SK_FP32) {
      sk__convert((const char *)row + (size_t)c * sk_dtype_size(dt), dt, scratch, SK_FP32, (size_t)len, isa);
      v = scratch;
    }
    bool has_nan;
    float m = chunk_max(v, len, &has_nan);
    if (has_nan) {
      int64_t j = 0;
      while (v[j] == v[j]) j++;
      return c + j;
    }
    if (m > best) {
      int64_t j = 0;
      while (v[j] != m) j++;
      best = m, best_at = c + j;
    }
  }
  return best_at;
}

/* The first index of an integer row's maximum, CHUNK values widened to
 * int64 at a time. */
static int64_t row_int(const void *row, sk_dtype dt, int64_t n, int64_t *scratch, sk__isa isa) {
  int64_t best = INT64_MIN, best_at = 0;
  for (int64_t c = 0; c < n; c += CHUNK) {
    const int64_t len = n - c < CHUNK ? n - c : CHUNK;
    sk__convert((const char *)row + (size_t)c * sk_dtype_size(dt), dt, scratch, SK_INT64, (size_t)len, isa);
    for (int64_t j = 0; j < len; j++)
      if (scratch[j] > best || c + j == 0) best = scratch[j], best_at = c + j;
  }
  return best_at;
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const argmax_params *p = io->params;
  *out = sk__row_tiling(p->rows, p->n, n_cores, 32768);
  out->workspace_bytes = CHUNK * sizeof(int64_t);
  return SK_STATUS_OK;
}

static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const argmax_params *p = io->params;
  int64_t r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  const int64_t row_bytes = p->n * (int64_t)sk_dtype_size(io->in[SLOT_X].tensors[0].dtype);
  reads[0] = (sk__span){r0 * row_bytes, r1 * row_bytes};
  writes[0] = (sk__span){r0 * 8, r1 * 8};
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const argmax_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const size_t row_bytes = (size_t)p->n * sk_dtype_size(x->dtype);
  int64_t *y = io->out[0].data, r0, r1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &r0, &r1);
  sk__clip(&r0, &r1, sk__live_numel(io, x) / p->n);
  for (int64_t r = r0; r < r1; r++) {
    const char *row = (const char *)x->data + (size_t)r * row_bytes;
    y[r] = sk__is_float(x->dtype) ? row_float(row, x->dtype, p->n, workspace, io->isa)
                                  : row_int(row, x->dtype, p->n, workspace, io->isa);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_argmax = {
    .type = "argmax",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "the index of each row's maximum over the last dimension (torch.argmax(x, -1)): lowest index on ties, "
           "the first NaN if any",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(argmax_params),
    .dynamic_rows = true, /* per row: a block computes its live rows only */
};

/* slice(x; start, end): rows [start, end) of x along dimension 0, step 1,
 * with Python / torch index rules (negative counts from the end, out of
 * range clamps). Rows along dim 0 of a row-major tensor are contiguous, so
 * the output is a view: it aliases x from byte start * row bytes on, and the
 * op launches nothing. */
#include "core/error.h"
#include "ops/op_util.h"

enum { SLOT_X };
static const sk_op_slot_info inputs[] = {SK__IN("x", "any dtype; it slices dimension 0", SK__RANK(1, -1))};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("start", 0, INT64_MIN, INT64_MAX, "first row; negative counts from the end; clamped to [0, rows]"),
    SK__ATTR_INT("end", INT64_MAX, INT64_MIN, INT64_MAX,
                 "one past the last row; negative counts from the end; clamped to [start, rows]"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "a view of rows [start, end) of x")};

typedef struct slice_params {
  int64_t offset_bytes; /* where the view starts within x */
} slice_params;

/* A Python index: negative counts from the end, then clamped to [lo, rows]. */
static int64_t clamp_index(int64_t i, int64_t lo, int64_t rows) {
  if (i < 0) i += rows; /* rows <= 2^48: no overflow */
  return i < lo ? lo : i > rows ? rows : i;
}

static sk_status build(sk__build_ctx *ctx) {
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  int64_t start, end, rows = x->shape[0];
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "start", &start));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "end", &end));
  start = clamp_index(start, 0, rows);
  end = clamp_index(end, start, rows);
  int64_t row_bytes = (int64_t)sk_dtype_size(x->dtype), shape[SK_MAX_RANK];
  for (int d = 1; d < x->rank; d++) row_bytes *= x->shape[d];
  ((slice_params *)sk__ctx_params(ctx))->offset_bytes = start * row_bytes;
  for (int d = 0; d < x->rank; d++) shape[d] = x->shape[d];
  shape[0] = end - start;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, x->rank, shape);
  return SK_STATUS_OK;
}

static int64_t view_offset(const sk__node_io *io) { return ((const slice_params *)io->params)->offset_bytes; }

static void reference(const sk__node_io *io) { sk__view_reference(io, view_offset(io)); }

const sk__op_def sk__op_slice = {
    .type = "slice",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = x[start:end] along dimension 0 (a view at an offset: launches nothing)",
    .kind = SK_KERNEL_VECTOR,
    .is_view = true,
    .dynamic_rows = true, /* a view: it launches nothing, and aliases the live rows too */
    .build = build,
    .reference = reference,
    .view_offset = view_offset,
    .params_size = sizeof(slice_params),
};

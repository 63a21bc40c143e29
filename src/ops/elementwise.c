/* Elementwise ops: square(x); add(x, y), mul(x, y) with numpy / torch
 * broadcasting, or with y given as the attribute `scalar`; all in x's dtype
 * (y must have it too: a front end inserts casts, nothing is promoted).
 *
 * Float dtypes compute in fp32 and round once to the storage dtype (for
 * fp16 / bf16 the fp32 product and sum of two such values round to the
 * correctly rounded result); a scalar is rounded to fp32 first. Integer
 * dtypes wrap like two's complement; an integer x takes only an integral
 * scalar its dtype can hold. bool: add is logical or, mul and square
 * logical and; bool takes no scalar. docs/ops.md has the rules. */
#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"

static const sk_op_slot_info unary_inputs[] = {SK__IN("x", "any dtype")};
static const sk_op_slot_info binary_inputs[] = {
    SK__IN("x", "any dtype"),
    SK__IN_OPT("y", "x's dtype, a shape that broadcasts with x's; absent when scalar is given",
               SK__SAME_DTYPE_AS(SK__EW_SLOT_X)),
};
static const sk_op_attr_info binary_attrs[] = {
    {.name = "scalar", .kind = SK_ATTR_KIND_FLOAT,
     .doc = "y as a number, instead of the input y (float x: rounded to fp32; integer x: an integer it can hold)"},
};
static const sk_op_output_info unary_outputs[] = {SK__OUT("y", "x's dtype and shape")};
static const sk_op_output_info binary_outputs[] = {SK__OUT("y", "x's dtype, the broadcast shape of x and y")};

/* The scalar for x's dtype: rounded to fp32 for floats, exact for integers
 * (an integral value in the dtype's range, as torch requires of a Python
 * int); bool x takes none (torch would promote). */
static sk_status parse_scalar(sk__build_ctx *ctx, const sk__tensor *x, sk__ew_params *p) {
  const char *op = sk__ctx_op(ctx);
  double s;
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "scalar", &s));
  p->has_scalar = true;
  if (sk__is_float(x->dtype)) {
    p->scalar_f32 = (float)s; /* IEEE: out of range becomes +-Inf */
    return SK_STATUS_OK;
  }
  if (x->dtype == SK_BOOL)
    return sk__fail(SK_STATUS_INVALID_DTYPE,
                    "%s: input x: bool takes no scalar (give y as a bool tensor, or cast x to an integer dtype)", op);
  /* [lo, hi) holds the dtype's values; both bounds are exact doubles. */
  double lo = x->dtype == SK_INT8 ? -128.0 : x->dtype == SK_UINT8 ? 0.0 : x->dtype == SK_INT32 ? -2147483648.0
                                                                                              : -9223372036854775808.0;
  double hi = x->dtype == SK_INT8 ? 128.0 : x->dtype == SK_UINT8 ? 256.0 : x->dtype == SK_INT32 ? 2147483648.0
                                                                                              : 9223372036854775808.0;
  if (!(s >= lo && s < hi) || (double)(int64_t)s != s)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute scalar: expected an integer in [%.0f, %.0f] for %s x, got %.17g",
                    op, lo, hi - 1, sk_dtype_name(x->dtype), s);
  p->scalar_int = (int64_t)s;
  return SK_STATUS_OK;
}

static sk_status build(sk__build_ctx *ctx, sk__ew_kind kind) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SK__EW_SLOT_X, &x));
  sk__ew_params *p = sk__ctx_params(ctx);
  p->kind = kind;
  sk__tensor *out;
  if (kind == SK__EW_SQUARE) {
    sk__bcast_loop_init(&p->loop, x->rank, x->shape, x, x);
    SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
    sk__tensor_init(out, x->dtype, x->rank, x->shape);
    return SK_STATUS_OK;
  }
  const sk__slot *ys = sk__ctx_slot(ctx, SK__EW_SLOT_Y);
  bool has_scalar = sk__ctx_has_attr(ctx, "scalar");
  if (ys->count && has_scalar)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input y and attribute scalar are both given (give one)", op);
  if (!ys->count && !has_scalar)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input y: expected 1 tensor (or the attribute scalar), got 0", op);
  if (has_scalar) {
    SK_RETURN_IF_ERROR(parse_scalar(ctx, x, p));
    sk__bcast_loop_init(&p->loop, x->rank, x->shape, x, NULL);
    SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
    sk__tensor_init(out, x->dtype, x->rank, x->shape);
    return SK_STATUS_OK;
  }
  const sk__tensor *y = &ys->tensors[0];
  int rank;
  int64_t shape[SK_MAX_RANK];
  SK_RETURN_IF_ERROR(sk__broadcast_shapes(op, x, y, &rank, shape));
  sk__bcast_loop_init(&p->loop, rank, shape, x, y);
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, rank, shape);
  return SK_STATUS_OK;
}

static sk_status build_square(sk__build_ctx *ctx) { return build(ctx, SK__EW_SQUARE); }
static sk_status build_add(sk__build_ctx *ctx) { return build(ctx, SK__EW_ADD); }
static sk_status build_mul(sk__build_ctx *ctx) { return build(ctx, SK__EW_MUL); }

/* Blocks of at least 16 Ki elements: below that a launch costs more than it
 * saves. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t n = sk__tensor_numel(&io->out[0]);
  *out = sk__flat_tiling(n, sk__flat_block_size(n, n_cores, 1024, 16384));
  return SK_STATUS_OK;
}

/* Under a run-time token count only the output's live elements are
 * computed. A dynamic operand has the output's leading dimension (a node
 * whose token dimension broadcasts or moves does not follow the count and
 * is refused when added), so live output elements read only its live rows;
 * a static operand, broadcast along the tokens, is read as planned. */
static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  int64_t begin, end;
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &begin, &end);
  sk__clip(&begin, &end, sk__live_numel(io, &io->out[0]));
  if (begin < end) sk__ew_compute(io, begin, end);
}

/* A block writes its own element range and reads the same range of every
 * input of the output's shape; a broadcast input is read wherever the
 * range's indices land, so it keeps the caller's whole-tensor span. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  int64_t begin, end, es = (int64_t)sk_dtype_size(io->out[0].dtype);
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &begin, &end);
  sk__span span = {begin * es, end * es};
  for (int s = SK__EW_SLOT_X; s <= SK__EW_SLOT_Y; s++)
    if (io->in[s].count && sk__tensor_same_shape(&io->in[s].tensors[0], &io->out[0]))
      reads[sk__io_input_index(io, s, 0)] = span;
  writes[0] = span;
}

/* Element offset in t of the output element at multi-index idx (output rank
 * out_rank): right-aligned, index 0 along t's dimensions of size 1. */
static int64_t operand_offset(const sk__tensor *t, const int64_t *idx, int out_rank) {
  int64_t off = 0;
  for (int d = 0; d < t->rank; d++) {
    int od = d + out_rank - t->rank;
    if (t->shape[d] != 1) off += idx[od] * t->strides[d];
  }
  return off;
}

/* Reference: one output element at a time through the scalar loads and
 * stores, its operands located from the tensors' own shapes. */
static void reference(const sk__node_io *io) {
  const sk__ew_params *p = io->params;
  const sk__tensor *x = &io->in[SK__EW_SLOT_X].tensors[0], *o = &io->out[0];
  const sk__tensor *y = p->kind == SK__EW_SQUARE ? x : p->has_scalar ? NULL : &io->in[SK__EW_SLOT_Y].tensors[0];
  int64_t n = sk__tensor_numel(o), idx[SK_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i;
    for (int d = o->rank - 1; d >= 0; d--) {
      idx[d] = rem % o->shape[d];
      rem /= o->shape[d];
    }
    int64_t xi = operand_offset(x, idx, o->rank), yi = y ? operand_offset(y, idx, o->rank) : 0;
    if (sk__is_float(x->dtype)) {
      float a = sk__load_f32(x->data, x->dtype, (size_t)xi);
      float b = y ? sk__load_f32(y->data, y->dtype, (size_t)yi) : p->scalar_f32;
      sk__store_f32(o->data, o->dtype, (size_t)i, sk__ew_f32(p->kind, a, b));
    } else {
      uint64_t a = sk__ew_load_int(x->data, x->dtype, xi);
      uint64_t b = y ? sk__ew_load_int(y->data, y->dtype, yi) : (uint64_t)p->scalar_int;
      sk__ew_store_int(o->data, o->dtype, i, sk__ew_u64(p->kind, a, b));
    }
  }
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

/* dynamic_rows: a block computes its live elements only (run_block). */
#define EW_OP(NAME, INPUTS, ATTRS, N_ATTRS, OUTPUTS, BUILD, DOC)                                              \
  const sk__op_def sk__op_##NAME = {                                                                         \
      .type = #NAME, SK__SCHEMA_INPUTS(INPUTS), .attrs = ATTRS, .n_attrs = N_ATTRS, SK__SCHEMA_OUTPUTS(OUTPUTS), \
      .doc = DOC, .kind = SK_KERNEL_VECTOR, .build = BUILD, .tile = tile, .run_block = run_block,                 \
      .kernel_name = kernel_name,                                                                             \
      .reference = reference, .footprint = footprint, .params_size = sizeof(sk__ew_params),                    \
      .dynamic_rows = true,                                                                                   \
  };

EW_OP(square, unary_inputs, NULL, 0, unary_outputs, build_square, "y = x * x")
EW_OP(add, binary_inputs, binary_attrs, 1, binary_outputs, build_add,
      "y = x + y, broadcasting (or x + scalar); bool: logical or")
EW_OP(mul, binary_inputs, binary_attrs, 1, binary_outputs, build_mul,
      "y = x * y, broadcasting (or x * scalar); bool: logical and")

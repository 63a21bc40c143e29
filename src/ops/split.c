/* split(x; sizes, dim = -1): torch.split(x, sizes, dim) with a list of sizes,
 * each part a dense copy. x viewed as [outer, D, inner] around dim (outer
 * the product of the dimensions before it, inner of those after): output i
 * is [outer, sizes[i], inner], row o of it x's row o from offset
 * sizes[0] + ... + sizes[i - 1] along dim. So every output is a sequence
 * of slabs cut from x's rows, in the same order: concat's inverse. */
#include <string.h>

#include "core/error.h"
#include "ops/op_util.h"

enum { SLOT_X };
static const sk_op_slot_info inputs[] = {SK__IN("x", "the tensor to split, of any dtype", SK__RANK(1, -1))};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INTS_REQUIRED("sizes", "each part's length along dim (each >= 1, at most 1024 parts), summing to x's"),
    SK__ATTR_INT("dim", -1, -SK_MAX_RANK, SK_MAX_RANK - 1, "the dimension to split, negative from the end"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT_LIST("y", "one per size: x's dtype, x's shape with dim that size (a dense copy)")};

typedef struct split_params {
  int dim; /* normalized, in [0, rank) */
} split_params;

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  int64_t dim;
  const int64_t *sizes;
  size_t n;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "dim", &dim));
  SK_RETURN_IF_ERROR(sk__ctx_attr_ints(ctx, "sizes", &sizes, &n));
  char s[SK_SHAPE_STR_MAX];
  if (dim < -x->rank || dim >= x->rank)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute dim: expected %d..%d for input x of rank %d, got %lld",
                    op, -x->rank, x->rank - 1, x->rank, (long long)dim);
  const int d = (int)(dim < 0 ? dim + x->rank : dim);
  if (d == 0 && x->dynamic)
    return sk__fail(SK_STATUS_INVALID_SHAPE,
                    "%s: input x: dimension 0 is the run-time token count, which fixed sizes cannot split; split "
                    "along a later dimension", op);
  if (n < 1 || n > SK__MAX_OUTPUTS)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute sizes: expected 1 to %d sizes, got %zu", op,
                    SK__MAX_OUTPUTS, n);
  int64_t sum = 0; /* of the sizes so far while within x's length (so never overflowing) */
  bool over = false;
  for (size_t i = 0; i < n; i++) {
    if (sizes[i] < 1)
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute sizes[%zu]: expected a size >= 1, got %lld", op, i,
                      (long long)sizes[i]);
    if (!over && sizes[i] > x->shape[d] - sum) over = true;
    else if (!over) sum += sizes[i];
  }
  if (over || sum != x->shape[d])
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute sizes: %zu sizes summing to %s%lld, expected the length %lld of dimension %d of "
                    "input x %s", op, n, over ? "more than " : "", (long long)(over ? x->shape[d] : sum),
                    (long long)x->shape[d], d, sk__shape_str(x->rank, x->shape, s, sizeof s));
  ((split_params *)sk__ctx_params(ctx))->dim = d;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, n, &out));
  int64_t shape[SK_MAX_RANK];
  memcpy(shape, x->shape, sizeof shape);
  for (size_t i = 0; i < n; i++) {
    shape[d] = sizes[i];
    sk__tensor_init(&out[i], x->dtype, x->rank, shape);
  }
  return SK_STATUS_OK;
}

/* Bytes of x (and of each output) per index along dim: x's rows are
 * shape[dim] of them, output i's slabs sizes[i]. */
static int64_t inner_bytes(const sk__tensor *t, int dim) {
  int64_t b = (int64_t)sk_dtype_size(t->dtype);
  for (int k = dim + 1; k < t->rank; k++) b *= t->shape[k];
  return b;
}

/* The bytes of output i (at byte offset `off` of each row, `slab` long)
 * that lie in x's bytes before position p: whole rows, then the part of
 * p's row. Output i's bytes in x's range [b, e) are its bytes
 * [before(b), before(e)), one contiguous range. */
static int64_t before(int64_t p, int64_t row, int64_t off, int64_t slab) {
  if (row == 0) return 0;
  int64_t in_row = p % row - off;
  return p / row * slab + (in_row < 0 ? 0 : in_row > slab ? slab : in_row);
}

/* Blocks split x's bytes evenly (at least 64 KiB each), so a split of any
 * dimension, the first one included (a single row), spreads over the team. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t bytes = (int64_t)sk__tensor_bytes(&io->in[SLOT_X].tensors[0]);
  *out = sk__flat_tiling(bytes, sk__flat_block_size(bytes, n_cores, 64, 65536));
  return SK_STATUS_OK;
}

/* A block copies x's bytes [begin, end) to the outputs they belong to. Under
 * a run-time token count x's live bytes are whole rows (dim is never 0
 * then), and so are each output's. */
static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  const int dim = ((const split_params *)io->params)->dim;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const int64_t inner = inner_bytes(x, dim), row = x->shape[dim] * inner;
  int64_t begin, end;
  sk__flat_block_range((int64_t)sk__tensor_bytes(x), io->n_blocks, block, &begin, &end);
  sk__clip(&begin, &end, sk__live_numel(io, x) * (int64_t)sk_dtype_size(x->dtype));
  if (begin >= end || row == 0) return;
  for (int64_t r = begin / row; r * row < end; r++) {
    int64_t at = r * row; /* the slab's first byte in x */
    for (size_t i = 0; i < io->n_out; i++) {
      const int64_t slab = io->out[i].shape[dim] * inner;
      int64_t lo = at > begin ? at : begin, hi = at + slab < end ? at + slab : end;
      if (lo < hi)
        memcpy((char *)io->out[i].data + r * slab + (lo - at), (const char *)x->data + lo, (size_t)(hi - lo));
      at += slab;
    }
  }
}

/* A block reads its byte range of x and writes, in each output, the one
 * contiguous range of the bytes that come from it. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const int dim = ((const split_params *)io->params)->dim;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const int64_t inner = inner_bytes(x, dim), row = x->shape[dim] * inner;
  int64_t begin, end, off = 0;
  sk__flat_block_range((int64_t)sk__tensor_bytes(x), io->n_blocks, block, &begin, &end);
  reads[0] = (sk__span){begin, end};
  for (size_t i = 0; i < io->n_out; i++) {
    const int64_t slab = io->out[i].shape[dim] * inner;
    writes[i] = (sk__span){before(begin, row, off, slab), before(end, row, off, slab)};
    off += slab;
  }
}

/* Reference: walk every output element and find its source by index. */
static void reference(const sk__node_io *io) {
  const int dim = ((const split_params *)io->params)->dim;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const size_t es = sk_dtype_size(x->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= x->shape[d];
  for (int d = dim + 1; d < x->rank; d++) inner *= x->shape[d];
  int64_t first = 0; /* output i's first index along dim in x */
  for (size_t i = 0; i < io->n_out; i++) {
    const sk__tensor *y = &io->out[i];
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < y->shape[dim]; k++)
        for (int64_t j = 0; j < inner; j++)
          memcpy((char *)y->data + ((o * y->shape[dim] + k) * inner + j) * (int64_t)es,
                 (const char *)x->data + ((o * x->shape[dim] + first + k) * inner + j) * (int64_t)es, es);
    first += y->shape[dim];
  }
}

const sk__op_def sk__op_split = {
    .type = "split",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y[i] = x's slab i along dim (torch.split with sizes), each a dense copy",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(split_params),
    .dynamic_rows = true, /* a block copies the live rows of its range only */
};

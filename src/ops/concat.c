/* concat(x[], dim): tensors of equal dtype and rank whose shapes agree except
 * along dim, joined along dim. The output is a sequence of rows (one per
 * index of the dimensions before dim), each row the inputs' slabs in order. */
#include <string.h>

#include "core/error.h"
#include "ops/op_util.h"

enum { SLOT_X };
static const sk_op_slot_info inputs[] = {SK__IN_LIST("x", "equal dtypes; equal shapes but along dim", SK__SAME_DTYPE_AS(SLOT_X), SK__RANK(1, -1))};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("dim", 0, -SK_MAX_RANK, SK_MAX_RANK - 1, "the dimension to join along; negative counts from the end"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x[0]'s shape with dim summed")};

typedef struct concat_params {
  int dim; /* normalized, in [0, rank) */
} concat_params;

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__slot *xs = sk__ctx_slot(ctx, SLOT_X);
  const sk__tensor *first = &xs->tensors[0];
  int64_t dim;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "dim", &dim));
  if (dim < -first->rank || dim >= first->rank)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute dim: expected a value in [%d, %d], got %lld", op,
                    -first->rank, first->rank - 1, (long long)dim);
  if (dim < 0) dim += first->rank;
  int64_t shape[SK_MAX_RANK];
  memcpy(shape, first->shape, sizeof shape);
  shape[dim] = 0;
  char a[SK_SHAPE_STR_MAX], b[SK_SHAPE_STR_MAX];
  for (size_t i = 0; i < xs->count; i++) {
    const sk__tensor *t = &xs->tensors[i];
    bool match = t->rank == first->rank;
    for (int d = 0; match && d < t->rank; d++)
      if (d != dim && t->shape[d] != first->shape[d]) match = false;
    if (!match)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x[%zu]: shape %s differs from x[0] %s outside dim %lld",
                      op, i, sk__shape_str(t->rank, t->shape, a, sizeof a),
                      sk__shape_str(first->rank, first->shape, b, sizeof b), (long long)dim);
    shape[dim] += t->shape[dim];
  }
  ((concat_params *)sk__ctx_params(ctx))->dim = (int)dim;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  char why[128];
  if (!sk__shape_check(first->dtype, first->rank, shape, why, sizeof why))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: output: %s", op, why);
  sk__tensor_init(out, first->dtype, first->rank, shape);
  return SK_STATUS_OK;
}

/* Bytes of one input's slab per output row: its dims from dim on. */
static size_t slab_bytes(const sk__tensor *t, int dim) {
  size_t n = sk_dtype_size(t->dtype);
  for (int d = dim; d < t->rank; d++) n *= (size_t)t->shape[d];
  return n;
}

/* Blocks split the output's bytes evenly (at least 64 KiB each), so a concat
 * along dim 0, which is a single row, still spreads over the team. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t bytes = (int64_t)sk__tensor_bytes(&io->out[0]);
  *out = sk__flat_tiling(bytes, sk__flat_block_size(bytes, n_cores, 64, 65536));
  return SK_STATUS_OK;
}

/* Bytes of input t's slab per output row under this run's token count:
 * joined along dimension 0, the output is one row and a dynamic input
 * gives only its live rows (so the next input's follow right after them,
 * as in a program built for the live count); joined along a later
 * dimension, rows are the indices before dim, and the slabs are whole. */
static int64_t live_slab_bytes(const sk__node_io *io, const sk__tensor *t, int dim) {
  if (dim == 0) return sk__live_numel(io, t) * (int64_t)sk_dtype_size(t->dtype);
  return (int64_t)slab_bytes(t, dim);
}

/* Copies the output bytes [begin, end) from wherever they come from. */
static void copy_range(const sk__node_io *io, int64_t begin, int64_t end) {
  int dim = ((const concat_params *)io->params)->dim;
  const sk__slot *xs = &io->in[SLOT_X];
  int64_t row = 0;
  for (size_t i = 0; i < xs->count; i++) row += live_slab_bytes(io, &xs->tensors[i], dim);
  if (row == 0) return;
  for (int64_t r = begin / row; r * row < end; r++) {
    int64_t offset = r * row;
    for (size_t i = 0; i < xs->count; i++) {
      int64_t slab = live_slab_bytes(io, &xs->tensors[i], dim);
      int64_t lo = offset > begin ? offset : begin, hi = offset + slab < end ? offset + slab : end;
      if (lo < hi)
        memcpy((char *)io->out[0].data + lo, (const char *)xs->tensors[i].data + r * slab + (lo - offset),
               (size_t)(hi - lo));
      offset += slab;
    }
  }
}

/* Under a run-time token count a block copies only the output's live bytes:
 * its live rows (dimension 0 joined: the inputs' live rows in order). */
static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  const sk__tensor *y = &io->out[0];
  int64_t begin, end;
  sk__flat_block_range((int64_t)sk__tensor_bytes(y), io->n_blocks, block, &begin, &end);
  sk__clip(&begin, &end, sk__live_numel(io, y) * (int64_t)sk_dtype_size(y->dtype));
  if (begin < end) copy_range(io, begin, end);
}

/* A block writes its byte range of the output; what it reads is left whole
 * (a conservative footprint: consumers of concat's inputs wait for all). */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  (void)reads;
  int64_t begin, end;
  sk__flat_block_range((int64_t)sk__tensor_bytes(&io->out[0]), io->n_blocks, block, &begin, &end);
  writes[0] = (sk__span){begin, end};
}

/* Reference: walk every output element and find its source by index. */
static void reference(const sk__node_io *io) {
  int dim = ((const concat_params *)io->params)->dim;
  const sk__tensor *y = &io->out[0];
  size_t es = sk_dtype_size(y->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= y->shape[d];
  for (int d = dim + 1; d < y->rank; d++) inner *= y->shape[d];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < y->shape[dim]; k++) {
      int64_t base = k;
      size_t i = 0;
      while (base >= io->in[SLOT_X].tensors[i].shape[dim]) base -= io->in[SLOT_X].tensors[i++].shape[dim];
      const sk__tensor *x = &io->in[SLOT_X].tensors[i];
      for (int64_t j = 0; j < inner; j++)
        memcpy((char *)y->data + ((o * y->shape[dim] + k) * inner + j) * (int64_t)es,
               (const char *)x->data + ((o * x->shape[dim] + base) * inner + j) * (int64_t)es, es);
    }
}

const sk__op_def sk__op_concat = {
    .type = "concat",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = the tensors of x joined along dim",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(concat_params),
    .dynamic_rows = true, /* a block copies the live bytes of its range only */
};

/* cast(x, dtype): element conversion by the rules of kernels/convert. */
#include "core/cpu.h"
#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

enum { SLOT_X };
static const sk_op_slot_info inputs[] = {SK__IN("x", "any dtype")};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT_REQUIRED("dtype", SK__DTYPE_MIN, SK__DTYPE_MAX, "the output's sk_dtype"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x's shape in dtype")};

static sk_status build(sk__build_ctx *ctx) {
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  int64_t dtype;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "dtype", &dtype));
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, (sk_dtype)dtype, x->rank, x->shape);
  return SK_STATUS_OK;
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t n = sk__tensor_numel(&io->out[0]);
  *out = sk__flat_tiling(n, sk__flat_block_size(n, n_cores, 1024, 16384));
  return SK_STATUS_OK;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk__tensor *y = &io->out[0];
  int64_t begin, end;
  sk__flat_block_range(sk__tensor_numel(y), io->n_blocks, block, &begin, &end);
  sk__clip(&begin, &end, sk__live_numel(io, y)); /* x has y's shape: the same live elements */
  if (begin >= end) return;
  sk__convert((const char *)x->data + begin * (int64_t)sk_dtype_size(x->dtype), x->dtype,
              (char *)y->data + begin * (int64_t)sk_dtype_size(y->dtype), y->dtype, (size_t)(end - begin),
              io->isa);
}

static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  int64_t begin, end;
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &begin, &end);
  int64_t in_es = (int64_t)sk_dtype_size(io->in[SLOT_X].tensors[0].dtype), out_es = (int64_t)sk_dtype_size(io->out[0].dtype);
  reads[0] = (sk__span){begin * in_es, end * in_es};
  writes[0] = (sk__span){begin * out_es, end * out_es};
}

static void reference(const sk__node_io *io) {
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  sk__convert_reference(x->data, x->dtype, io->out[0].data, io->out[0].dtype, (size_t)sk__tensor_numel(x));
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_cast = {
    .type = "cast",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = x converted element by element (round to nearest even, saturating to Inf)",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .dynamic_rows = true, /* elementwise: a block converts its live elements only */
};

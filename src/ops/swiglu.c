/* swiglu(x; dim) (torch_npu's npu_swiglu): x split in two halves along dim,
 * A the first and B the second; y = silu(A) * B, y's dim half as long.
 *
 * Per element, in fp32 (x widened exactly; docs/ops.md):
 *   y = round(sk__siluf(a) * b)     silu(a) = a / (1 + e^-a), activation.h
 * rounded to x's dtype (to nearest even). The kernel runs the array form of
 * the same silu (bitwise the scalar one on every ISA), so it matches the
 * reference bit for bit. */
#include <stdlib.h>

#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

enum { SLOT_X };

typedef struct swiglu_params {
  int64_t outer, half, inner; /* x viewed as [outer, 2 * half, inner] */
  int dim;                    /* the split dimension, normalized */
} swiglu_params;

static const sk_op_slot_info inputs[] = {SK__IN("x", "fp32, fp16 or bf16; dim of even length", .dtypes = SK__FLOATS, SK__RANK(1, -1))};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("dim", -1, -SK_MAX_RANK, SK_MAX_RANK - 1, "the dimension split in halves, negative from the end"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x's dtype; x's shape with dim halved")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  char s[SK_SHAPE_STR_MAX];
  int64_t dim;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "dim", &dim));
  if (dim < -x->rank || dim >= x->rank)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute dim: expected %d..%d for input x of rank %d, got %lld", op,
                    -x->rank, x->rank - 1, x->rank, (long long)dim);
  int d = (int)(dim < 0 ? dim + x->rank : dim);
  if (x->shape[d] % 2 != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: dimension %d must have an even length (two halves), got %s",
                    op, d, sk__shape_str(x->rank, x->shape, s, sizeof s));
  swiglu_params *p = sk__ctx_params(ctx);
  p->outer = p->inner = 1;
  for (int k = 0; k < d; k++) p->outer *= x->shape[k];
  for (int k = d + 1; k < x->rank; k++) p->inner *= x->shape[k];
  p->half = x->shape[d] / 2;
  p->dim = d;
  int64_t shape[SK_MAX_RANK];
  for (int k = 0; k < x->rank; k++) shape[k] = k == d ? p->half : x->shape[k];
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, x->rank, shape);
  return SK_STATUS_OK;
}

/* The output is [outer, half * inner]: out row o reads x row o's first
 * half * inner values (A) and its last (B). */
static void reference(const sk__node_io *io) {
  const swiglu_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const int64_t n = p->half * p->inner;
  for (int64_t o = 0; o < p->outer; o++)
    for (int64_t i = 0; i < n; i++) {
      float a = sk__load_f32(x->data, x->dtype, (size_t)(o * 2 * n + i));
      float b = sk__load_f32(x->data, x->dtype, (size_t)(o * 2 * n + n + i));
      sk__store_f32(io->out[0].data, x->dtype, (size_t)(o * n + i), sk__siluf(a) * b);
    }
}

/* Blocks are ranges of output elements in chunks of CHUNK (scratch for two
 * halves of a chunk in fp32). */
#define CHUNK 1024

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const swiglu_params *p = io->params;
  int64_t total = p->outer * p->half * p->inner;
  *out = sk__flat_tiling(total, sk__flat_block_size(total, n_cores, 64, 4096));
  out->workspace_bytes = 2 * CHUNK * sizeof(float);
  return SK_STATUS_OK;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const swiglu_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk_dtype dt = x->dtype;
  const size_t es = sk_dtype_size(dt);
  const int64_t live = sk__live_numel(io, &io->out[0]);
  /* n: the length of an out row. Under a run-time token count only live
   * elements are computed: split along another dimension, those are the
   * live rows (out row o reads x row o); split along dimension 0 of a
   * dynamic x, out is one row of the live elements, and B starts right
   * after A's live ones, where a program built for the live count has it. */
  const int64_t n = p->dim == 0 ? live : p->half * p->inner;
  sk__isa isa = io->isa;
  float *a = workspace, *b = a + CHUNK;
  int64_t e0, e1;
  sk__flat_block_range(p->outer * p->half * p->inner, io->n_blocks, block, &e0, &e1);
  sk__clip(&e0, &e1, live);
  for (int64_t e = e0; e < e1;) {
    /* A run of output elements within one row of out, at most CHUNK long. */
    int64_t o = e / n, i = e % n, len = n - i;
    if (len > e1 - e) len = e1 - e;
    if (len > CHUNK) len = CHUNK;
    const char *row = (const char *)x->data + (size_t)(o * 2 * n) * es;
    sk__convert(row + (size_t)i * es, dt, a, SK_FP32, (size_t)len, isa);
    sk__convert(row + (size_t)(n + i) * es, dt, b, SK_FP32, (size_t)len, isa);
    sk__siluf_array(a, a, (size_t)len, isa);
    for (int64_t j = 0; j < len; j++) a[j] = a[j] * b[j];
    sk__convert(a, SK_FP32, (char *)io->out[0].data + (size_t)e * es, dt, (size_t)len, isa);
    e += len;
  }
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "silu, dtype conversion");
}

const sk__op_def sk__op_swiglu = {
    .type = "swiglu",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "x split in halves A, B along dim: y = silu(A) * B",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .params_size = sizeof(swiglu_params),
    .dynamic_rows = true, /* a block computes its live elements only */
};

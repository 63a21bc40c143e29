/* Elementwise ops: square(x), add(x, y), mul(x, y), in x's dtype.
 *
 * Float dtypes compute in fp32 and round once to the storage dtype (for
 * fp16 / bf16 the fp32 product and sum of two such values round to the
 * correctly rounded result). Integer dtypes wrap like two's complement. */
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

enum { SLOT_X, SLOT_Y };
static const sk_op_slot_info unary_inputs[] = {SK__IN("x", "any dtype")};
static const sk_op_slot_info binary_inputs[] = {SK__IN("x", "any dtype"), SK__IN("y", "x's dtype and shape")};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x's dtype and shape")};

typedef enum { EW_SQUARE, EW_ADD, EW_MUL } ew_kind;
typedef struct { ew_kind kind; } ew_params;

static sk_status build(sk__build_ctx *ctx, ew_kind kind) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x, *y = NULL;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  if (kind != EW_SQUARE) {
    SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_Y, &y));
    char a[SK_SHAPE_STR_MAX], b[SK_SHAPE_STR_MAX];
    if (y->dtype != x->dtype)
      return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input y: expected dtype %s (as x), got %s", op,
                      sk_dtype_name(x->dtype), sk_dtype_name(y->dtype));
    if (!sk__tensor_same_shape(x, y))
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input y: expected shape %s (as x), got %s", op,
                      sk__shape_str(x->rank, x->shape, a, sizeof a), sk__shape_str(y->rank, y->shape, b, sizeof b));
  }
  ((ew_params *)sk__ctx_params(ctx))->kind = kind;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  *out = *x;
  return SK_STATUS_OK;
}

static sk_status build_square(sk__build_ctx *ctx) { return build(ctx, EW_SQUARE); }
static sk_status build_add(sk__build_ctx *ctx) { return build(ctx, EW_ADD); }
static sk_status build_mul(sk__build_ctx *ctx) { return build(ctx, EW_MUL); }

/* Blocks of at least 16 Ki elements: below that a launch costs more than it
 * saves. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t n = sk__tensor_numel(&io->out[0]);
  *out = sk__flat_tiling(n, sk__flat_block_size(n, n_cores, 1024, 16384));
  return SK_STATUS_OK;
}

static inline float apply_f32(ew_kind kind, float a, float b) {
  return kind == EW_SQUARE ? a * a : kind == EW_ADD ? a + b : a * b;
}

/* Integer arithmetic in uint64 wraps exactly like two's complement in the
 * narrower type once the result is truncated back. */
static inline uint64_t apply_u64(ew_kind kind, uint64_t a, uint64_t b) {
  return kind == EW_SQUARE ? a * a : kind == EW_ADD ? a + b : a * b;
}

static int64_t load_int(const void *p, sk_dtype dt, int64_t i) {
  switch (dt) {
    case SK_INT8: return ((const int8_t *)p)[i];
    case SK_INT32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
  }
}

static void store_int(void *p, sk_dtype dt, int64_t i, uint64_t v) {
  switch (dt) {
    case SK_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case SK_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
  }
}

static void compute_range(const sk__node_io *io, int64_t begin, int64_t end) {
  ew_kind kind = ((const ew_params *)io->params)->kind;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const void *yd = kind == EW_SQUARE ? x->data : io->in[SLOT_Y].tensors[0].data;
  void *od = io->out[0].data;
  sk_dtype dt = x->dtype;
  if (dt == SK_FP32) {
    const float *a = (const float *)x->data, *b = (const float *)yd;
    float *o = (float *)od;
    for (int64_t i = begin; i < end; i++) o[i] = apply_f32(kind, a[i], b[i]);
  } else if (dt == SK_FP16 || dt == SK_BF16) {
    /* Widen a chunk to fp32, compute, narrow: the SIMD converters do the
     * heavy part, the fp32 loop vectorizes on the baseline ISA. */
    enum { CHUNK = 512 };
    float a[CHUNK], b[CHUNK];
    size_t es = sk_dtype_size(dt);
    sk__isa isa = sk__cpu_isa();
    for (int64_t i = begin; i < end; i += CHUNK) {
      size_t n = (size_t)(end - i < CHUNK ? end - i : CHUNK);
      sk__convert((const char *)x->data + i * es, dt, a, SK_FP32, n, isa);
      sk__convert((const char *)yd + i * es, dt, b, SK_FP32, n, isa);
      for (size_t j = 0; j < n; j++) a[j] = apply_f32(kind, a[j], b[j]);
      sk__convert(a, SK_FP32, (char *)od + i * es, dt, n, isa);
    }
  } else {
    for (int64_t i = begin; i < end; i++)
      store_int(od, dt, i, apply_u64(kind, (uint64_t)load_int(x->data, dt, i), (uint64_t)load_int(yd, dt, i)));
  }
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  int64_t begin, end;
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &begin, &end);
  compute_range(io, begin, end);
}

/* A block reads and writes its own element range of every tensor. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  int64_t begin, end, es = (int64_t)sk_dtype_size(io->out[0].dtype);
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &begin, &end);
  sk__span span = {begin * es, end * es};
  size_t n_in = io->in[SLOT_Y].count ? 2 : 1;
  for (size_t i = 0; i < n_in; i++) reads[i] = span;
  writes[0] = span;
}

/* Reference: one element at a time through the scalar load / store. */
static void reference(const sk__node_io *io) {
  ew_kind kind = ((const ew_params *)io->params)->kind;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const void *yd = kind == EW_SQUARE ? x->data : io->in[SLOT_Y].tensors[0].data;
  int64_t n = sk__tensor_numel(x);
  for (int64_t i = 0; i < n; i++) {
    if (sk__is_float(x->dtype))
      sk__store_f32(io->out[0].data, x->dtype, (size_t)i,
                    apply_f32(kind, sk__load_f32(x->data, x->dtype, (size_t)i), sk__load_f32(yd, x->dtype, (size_t)i)));
    else
      store_int(io->out[0].data, x->dtype, i,
                apply_u64(kind, (uint64_t)load_int(x->data, x->dtype, i), (uint64_t)load_int(yd, x->dtype, i)));
  }
}

#define EW_OP(NAME, INPUTS, BUILD, DOC)                                                      \
  const sk__op_def sk__op_##NAME = {                                                       \
      .type = #NAME, SK__SCHEMA_INPUTS(INPUTS), SK__SCHEMA_OUTPUTS(outputs), .doc = DOC,     \
      .kind = SK_KERNEL_VECTOR, .build = BUILD, .tile = tile, .run_block = run_block,       \
      .reference = reference, .footprint = footprint, .params_size = sizeof(ew_params),    \
  };

EW_OP(square, unary_inputs, build_square, "y = x * x")
EW_OP(add, binary_inputs, build_add, "y = x + y")
EW_OP(mul, binary_inputs, build_mul, "y = x * y")

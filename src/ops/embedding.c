/* embedding(table, ids, scale?; output_dtype) (torch.nn.functional.embedding):
 *
 *   table [V, H] fp32 / fp16 / bf16, or int8 with scale fp32 [V] (a scale
 *   per row); ids int32 / int64 of any shape [...] -> y [..., H]
 *
 * y[i, :] = table[ids[i], :]: a copy when output_dtype is the table's, else
 * each value widened exactly to fp32 and rounded to output_dtype; for an
 * int8 table y[i, j] = round((float)table[id, j] * scale[id]), one fp32
 * product rounded to output_dtype (default fp32). An id outside [0, V) is
 * run-time data the graph cannot check: the run fails naming the entry, its
 * value and V. Every block checks all the live ids before it writes, so a
 * failed run writes nothing and never reads outside the table. */
#include <string.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/index_input.h"
#include "ops/op_util.h"

enum { SLOT_TABLE, SLOT_IDS, SLOT_SCALE };

typedef struct embedding_params {
  int64_t v, h, n;       /* table rows, row length, ids (planned) */
  sk_dtype table_dtype, out_dtype;
} embedding_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("table", "[V, H] fp32, fp16, bf16, or int8 (with scale)",
           .dtypes = SK__FLOATS | SK_DTYPE_BIT(SK_INT8), SK__RANK(2, 2)),
    SK__IN("ids", "int32 or int64 [...]: rows of the table, each in [0, V) (checked when the op runs)",
           .dtypes = SK_DTYPE_BIT(SK_INT32) | SK_DTYPE_BIT(SK_INT64), SK__RANK(0, SK_MAX_RANK - 1)),
    SK__IN_OPT("scale", "fp32 [V]: an int8 table's per-row scale (only with int8)", .dtypes = SK__DTYPES1(SK_FP32),
               SK__RANK(1, 1)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT_DERIVED("output_dtype", SK__DTYPE_MIN, SK__DTYPE_MAX,
                         "fp32, fp16 or bf16; default: the table's dtype (fp32 for int8)"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "[..., H], output_dtype: the ids' rows")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *table, *ids, *scale = sk__ctx_optional(ctx, SLOT_SCALE);
  char s[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_TABLE, &table));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_IDS, &ids));
  const int64_t v = table->shape[0], h = table->shape[1];
  const bool int8 = table->dtype == SK_INT8;
  if (table->dynamic || (scale && scale->dynamic))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: its rows cannot follow the run-time token count", op,
                    table->dynamic ? "table" : "scale");
  if (int8 && !scale)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input scale: an int8 table needs its per-row scale (fp32 [%lld])",
                    op, (long long)v);
  if (!int8 && scale)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input scale: only an int8 table takes a scale, got a %s table", op,
                    sk_dtype_name(table->dtype));
  if (scale && scale->shape[0] != v)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input scale: expected shape [%lld] (the table's rows), got %s", op,
                    (long long)v, sk__shape_str(scale->rank, scale->shape, s, sizeof s));
  int64_t out_dtype = int8 ? SK_FP32 : table->dtype;
  if (sk__ctx_has_attr(ctx, "output_dtype")) SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "output_dtype", &out_dtype));
  if (!sk__is_float((sk_dtype)out_dtype))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute output_dtype: expected fp32, fp16 or bf16, got %s", op,
                    sk_dtype_name((sk_dtype)out_dtype));
  embedding_params *p = sk__ctx_params(ctx);
  *p = (embedding_params){.v = v, .h = h, .n = sk__tensor_numel(ids), .table_dtype = table->dtype,
                          .out_dtype = (sk_dtype)out_dtype};
  int64_t shape[SK_MAX_RANK];
  memcpy(shape, ids->shape, (size_t)ids->rank * sizeof shape[0]);
  shape[ids->rank] = h;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, (sk_dtype)out_dtype, ids->rank + 1, shape);
  return SK_STATUS_OK;
}

/* Whether the n live ids are all rows of the table; else the run error,
 * naming the first bad one, before anything is read through them. */
static bool ids_valid(const sk__node_io *io, int64_t n) {
  const embedding_params *p = io->params;
  return sk__indices_in_range(io, &io->in[SLOT_IDS].tensors[0], n, p->v,
                              "%s (embedding): ids[%lld] = %lld is out of range for a table of %lld rows");
}

static void reference(const sk__node_io *io) {
  const embedding_params *p = io->params;
  const sk__tensor *table = &io->in[SLOT_TABLE].tensors[0], *ids = &io->in[SLOT_IDS].tensors[0];
  const float *scale = io->in[SLOT_SCALE].count ? io->in[SLOT_SCALE].tensors[0].data : NULL;
  const int64_t n = sk__live_numel(io, ids);
  if (!ids_valid(io, n)) return;
  for (int64_t i = 0; i < n; i++) {
    const int64_t id = sk__index_at(ids, i);
    for (int64_t j = 0; j < p->h; j++) {
      float v = sk__load_f32(table->data, p->table_dtype, (size_t)(id * p->h + j));
      if (scale) v = v * scale[id];
      sk__store_f32(io->out[0].data, p->out_dtype, (size_t)(i * p->h + j), v);
    }
  }
}

/* Blocks of ids (output rows), at least 16 K values each. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const embedding_params *p = io->params;
  *out = sk__row_tiling(p->n, p->h, n_cores, 16384);
  out->workspace_bytes = (size_t)p->h * sizeof(float);
  return SK_STATUS_OK;
}

/* Block b writes its rows; it reads every id (the check) and whichever
 * table rows they name. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const embedding_params *p = io->params;
  int64_t i0, i1;
  sk__flat_block_range(p->n, io->n_blocks, block, &i0, &i1);
  const int64_t row_bytes = p->h * (int64_t)sk_dtype_size(p->out_dtype);
  (void)reads;
  writes[0] = (sk__span){i0 * row_bytes, i1 * row_bytes};
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const embedding_params *p = io->params;
  const sk__tensor *table = &io->in[SLOT_TABLE].tensors[0], *ids = &io->in[SLOT_IDS].tensors[0];
  const float *scale = io->in[SLOT_SCALE].count ? io->in[SLOT_SCALE].tensors[0].data : NULL;
  const size_t h = (size_t)p->h, in_row = h * sk_dtype_size(p->table_dtype), out_row = h * sk_dtype_size(p->out_dtype);
  const int64_t n = sk__live_numel(io, ids);
  int64_t i0, i1;
  sk__flat_block_range(p->n, io->n_blocks, block, &i0, &i1);
  sk__clip(&i0, &i1, n);
  if (i0 >= i1 || !ids_valid(io, n)) return;
  float *v = workspace;
  for (int64_t i = i0; i < i1; i++) {
    const int64_t id = sk__index_at(ids, i);
    const char *src = (const char *)table->data + (size_t)id * in_row;
    char *dst = (char *)io->out[0].data + (size_t)i * out_row;
    if (!scale) {
      sk__convert(src, p->table_dtype, dst, p->out_dtype, h, io->isa); /* same dtypes: a copy */
      continue;
    }
    sk__convert(src, SK_INT8, v, SK_FP32, h, io->isa);
    for (size_t j = 0; j < h; j++) v[j] = v[j] * scale[id];
    sk__convert(v, SK_FP32, dst, p->out_dtype, h, io->isa);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "row gather, dtype conversion");
}

const sk__op_def sk__op_embedding = {
    .type = "embedding",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y[..., :] = table[ids[...], :] (torch embedding); an int8 table times its per-row scale; ids checked "
           "when the op runs",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(embedding_params),
    .dynamic_rows = true, /* per id: a block computes its live ids only */
};

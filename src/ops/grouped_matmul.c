/* grouped_matmul: validation, shape rule and reference (see docs/ops.md).
 *
 *   group_type -1: y_i = x_i @ w_i (+ bias_i) for lists of equal length G;
 *                  x_i [..., K_i], w_i [K_i, N_i], y_i x_i.shape[:-1] + [N_i].
 *   group_type 0:  x [M, K], weight [E, K, N] or a list of E [K, N]; rows
 *                  group_list-delimited per expert; split_item 2/3 -> one
 *                  [M, N] output (rows past the last group are zero),
 *                  0/1 -> one [rows_e, N] output per expert.
 * Float path: fp16 / bf16 / fp32 in, fp32 accumulation, output_dtype out.
 * int8 path: int8 in, int32 accumulation, then the epilogue of
 * grouped_matmul_quant.c (scale, per-token scale, offset, bias). */
#include "ops/grouped_matmul.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/gemm/gemm.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/op_util.h"
#include "ops/packed_weights.h"

static const sk_op_slot_info inputs[] = {
    SK__IN_LIST("x", "fp32, fp16, bf16 or int8: G tensors [..., K_i] (group_type -1) or one [M, K] (0)",
                .dtypes = SK__FLOATS | SK_DTYPE_BIT(SK_INT8), SK__SAME_DTYPE_AS(GMM_X), SK__RANK(2, -1)),
    SK__IN_LIST("weight", "x's dtype: G tensors [K_i, N_i], or one [E, K, N] / E tensors [K, N] (group_type 0)",
                SK__SAME_DTYPE_AS(GMM_X)),
    SK__IN_LIST_OPT("bias", "one [N] per group or one [E, N]: x's dtype or fp32; int8 path: int32 or float",
                    .dtypes = SK__FLOATS | SK_DTYPE_BIT(SK_INT32)),
    SK__IN_LIST_OPT("scale", "int8 path: per-channel weight scale (fp32, bf16 or int64), one [N] per group or [E, N]",
                    .dtypes = SK_DTYPE_BIT(SK_FP32) | SK_DTYPE_BIT(SK_BF16) | SK_DTYPE_BIT(SK_INT64)),
    SK__IN_LIST_OPT("offset", "int8 path: fp32 offset, one [N] per group or [E, N]", .dtypes = SK__DTYPES1(SK_FP32)),
    SK__IN_LIST_OPT("per_token_scale", "int8 path: fp32 [M] (group_type 0) or [m_i] per group",
                    .dtypes = SK__DTYPES1(SK_FP32)),
    SK__IN_OPT("group_list", "int64 [E], read at run time: rows per expert as the group_list attribute "
                             "(group_type 0, split_item 2 or 3)", .dtypes = SK__DTYPES1(SK_INT64)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("group_type", -1, -1, 0, "-1: lists of independent matmuls; 0: rows of x split by group_list"),
    SK__ATTR_INTS("group_list", "group_type 0: one entry per expert (cumulative row ends, or counts)"),
    SK__ATTR_INT("group_list_type", 0, 0, 1, "0 cumulative, 1 counts"),
    SK__ATTR_INT("split_item", 0, 0, 3, "0/1: one output per group; 2/3: one [M, N] output (group_type 0)"),
    SK__ATTR_INT_DERIVED("output_dtype", SK__DTYPE_MIN, SK__DTYPE_MAX,
                         "default x's dtype (int32 on the int8 path); fp16, bf16, fp32 (or int32 on int8)"),
    SK__ATTR_INT("transpose_weight", 0, 0, 1,
                 "1: each weight is [N, K] (one [E, N, K]), torch's Linear layout, read transposed (float path)"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT_LIST("y", "one [..., N_i] per group, or one [M, N] (split_item 2/3)"),
};

#define MAX_GROUPS GMM_MAX_GROUPS

/* Bias (beyond the schema's dtypes): x's dtype or fp32 on the float path;
 * int32 (added before scaling) or fp32 / fp16 / bf16 (after) on the int8
 * path. The weight's dtype is x's (the schema). */
static sk_status check_bias_dtype(const char *op, size_t i, const sk__tensor *t, sk_dtype x_dtype) {
  if (x_dtype == SK_INT8 || t->dtype == x_dtype || t->dtype == SK_FP32) return SK_STATUS_OK;
  return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input bias[%zu]: expected dtype %s or fp32 (as x), got %s", op, i,
                  sk_dtype_name(x_dtype), sk_dtype_name(t->dtype));
}

static sk_status check_bias(const char *op, size_t i, const sk__tensor *b, int64_t n, sk_dtype x_dtype) {
  if (b->rank != 1 || b->shape[0] != n) {
    char s[SK_SHAPE_STR_MAX];
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias[%zu]: expected shape [%lld], got %s", op, i,
                    (long long)n, sk__shape_str(b->rank, b->shape, s, sizeof s));
  }
  return check_bias_dtype(op, i, b, x_dtype);
}

/* A [K, N] weight ([N, K] transposed: K is its second dimension). */
static sk_status check_weight(const char *op, size_t i, const sk__tensor *w, int64_t k, bool trans) {
  char s[SK_SHAPE_STR_MAX];
  if (w->rank != 2)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight[%zu]: expected rank 2 %s, got %s", op, i,
                    trans ? "[N, K] (transpose_weight)" : "[K, N]", sk__shape_str(w->rank, w->shape, s, sizeof s));
  if (w->shape[trans ? 1 : 0] != k)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight[%zu]: expected %lld %s (K of x), got %lld", op, i,
                    (long long)k, trans ? "columns" : "rows", (long long)w->shape[trans ? 1 : 0]);
  return SK_STATUS_OK;
}

/* N of a [K, N] or transposed [N, K] weight. */
static int64_t weight_n(const sk__tensor *w, bool trans) { return w->shape[trans ? w->rank - 2 : w->rank - 1]; }

/* group_type -1: G independent matmuls over lists. */
static sk_status build_lists(sk__build_ctx *ctx, gmm_params *p) {
  const char *op = sk__ctx_op(ctx);
  const sk__slot *xs = sk__ctx_slot(ctx, GMM_X), *ws = sk__ctx_slot(ctx, GMM_WEIGHT), *bs = sk__ctx_slot(ctx, GMM_BIAS);
  if (ws->count != xs->count)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input weight: expected a list of %zu (as x), got %zu", op,
                    xs->count, ws->count);
  if (bs->count && bs->count != xs->count)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input bias: expected a list of %zu (as x), got %zu", op,
                    xs->count, bs->count);
  if (sk__ctx_has_attr(ctx, "group_list"))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list must be absent with group_type -1", op);
  if (sk__ctx_slot(ctx, GMM_GROUP_LIST)->count)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input group_list must be absent with group_type -1", op);
  if (p->split_item > 1)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute split_item: expected 0 or 1 with group_type -1, got %d",
                    op, p->split_item);
  sk__tensor *outs;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, xs->count, &outs));
  for (size_t i = 0; i < xs->count; i++) {
    const sk__tensor *x = &xs->tensors[i], *w = &ws->tensors[i];
    int64_t k = x->shape[x->rank - 1], wk = p->trans_w ? 1 : 0;
    if (w->rank == 2 && w->shape[wk] != k)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x[%zu]: expected last dimension %lld (weight[%zu] %s), got %lld",
                      op, i, (long long)w->shape[wk], i, p->trans_w ? "columns" : "rows", (long long)k);
    SK_RETURN_IF_ERROR(check_weight(op, i, w, k, p->trans_w));
    if (bs->count) SK_RETURN_IF_ERROR(check_bias(op, i, &bs->tensors[i], weight_n(w, p->trans_w), x->dtype));
    int64_t shape[SK_MAX_RANK];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->rank - 1] = weight_n(w, p->trans_w);
    sk__tensor_init(&outs[i], p->out_dtype, x->rank, shape);
  }
  p->n_groups = (int64_t)xs->count;
  return SK_STATUS_OK;
}

static sk_status build_moe(sk__build_ctx *ctx, gmm_params *p) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, GMM_X, &x));
  char s[SK_SHAPE_STR_MAX];
  if (x->rank != 2)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected rank 2 [M, K] with group_type 0, got %s", op,
                    sk__shape_str(x->rank, x->shape, s, sizeof s));
  int64_t m = x->shape[0], k = x->shape[1], n;
  const sk__slot *ws = sk__ctx_slot(ctx, GMM_WEIGHT), *bs = sk__ctx_slot(ctx, GMM_BIAS);
  if (ws->count == 1 && ws->tensors[0].rank == 3) { /* one [E, K, N] (transposed: [E, N, K]) tensor */
    const sk__tensor *w = &ws->tensors[0];
    if (w->shape[p->trans_w ? 2 : 1] != k)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight: expected %s (K of x = %lld), got %s", op,
                      p->trans_w ? "[E, N, K] (transpose_weight)" : "[E, K, N]", (long long)k,
                      sk__shape_str(w->rank, w->shape, s, sizeof s));
    p->n_groups = w->shape[0];
    n = weight_n(w, p->trans_w);
  } else {
    if (ws->count == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input weight: expected a non-empty list", op);
    p->n_groups = (int64_t)ws->count;
    n = ws->tensors[0].rank == 2 ? weight_n(&ws->tensors[0], p->trans_w) : 0;
    for (size_t e = 0; e < ws->count; e++) {
      SK_RETURN_IF_ERROR(check_weight(op, e, &ws->tensors[e], k, p->trans_w));
      if (weight_n(&ws->tensors[e], p->trans_w) != n)
        return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight[%zu]: expected N = %lld (as weight[0]), got %lld",
                        op, e, (long long)n, (long long)weight_n(&ws->tensors[e], p->trans_w));
    }
  }
  if (p->n_groups < 1 || p->n_groups > MAX_GROUPS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %lld groups (expected 1..%d)", op, (long long)p->n_groups, MAX_GROUPS);
  if (bs->count == 1 && bs->tensors[0].rank == 2) { /* one [E, N] tensor */
    const sk__tensor *b = &bs->tensors[0];
    if (b->shape[0] != p->n_groups || b->shape[1] != n)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected [%lld, %lld], got %s", op,
                      (long long)p->n_groups, (long long)n, sk__shape_str(b->rank, b->shape, s, sizeof s));
    SK_RETURN_IF_ERROR(check_bias_dtype(op, 0, b, x->dtype));
  } else if (bs->count) {
    if ((int64_t)bs->count != p->n_groups)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input bias: expected a list of %lld (one per expert), got %zu", op,
                      (long long)p->n_groups, bs->count);
    for (size_t e = 0; e < bs->count; e++) SK_RETURN_IF_ERROR(check_bias(op, e, &bs->tensors[e], n, x->dtype));
  }
  const sk__slot *runtime = sk__ctx_slot(ctx, GMM_GROUP_LIST);
  if (runtime->count) {
    SK_RETURN_IF_ERROR(sk__gmm_check_runtime_list(ctx, p, &runtime->tensors[0]));
  } else {
    if (!sk__ctx_has_attr(ctx, "group_list"))
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                      "%s: group_type 0 needs the group_list attribute or the group_list input", op);
    SK_RETURN_IF_ERROR(sk__gmm_parse_group_list(ctx, p, m));
  }
  sk__tensor *outs;
  if (p->split_item >= 2) {
    SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &outs));
    sk__tensor_init(&outs[0], p->out_dtype, 2, (int64_t[]){m, n});
  } else {
    SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, (size_t)p->n_groups, &outs));
    for (int64_t e = 0; e < p->n_groups; e++)
      sk__tensor_init(&outs[e], p->out_dtype, 2, (int64_t[]){p->row_end[e] - p->row_begin[e], n});
  }
  return SK_STATUS_OK;
}

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  gmm_params *p = sk__ctx_params(ctx);
  const sk__slot *xs = sk__ctx_slot(ctx, GMM_X);
  if (xs->count > MAX_GROUPS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input x: %zu groups (at most %d)", op, xs->count, MAX_GROUPS);
  sk_dtype x_dtype = xs->tensors[0].dtype;
  p->quant = x_dtype == SK_INT8;
  static const int quant_slots[] = {GMM_SCALE, GMM_OFFSET, GMM_PER_TOKEN_SCALE};
  for (int i = 0; i < 3 && !p->quant; i++)
    if (sk__ctx_slot(ctx, quant_slots[i])->count)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: only the int8 path takes it, x is %s", op,
                      inputs[quant_slots[i]].name, sk_dtype_name(x_dtype));
  int64_t group_type, split_item, out_dtype;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_type", &group_type));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "split_item", &split_item));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "output_dtype", &out_dtype));
  /* The int8 path's default output is the raw int32 accumulator. */
  if (!sk__ctx_has_attr(ctx, "output_dtype")) out_dtype = p->quant ? SK_INT32 : x_dtype;
  /* The schema's range made it an sk_dtype. */
  bool out_ok = sk__is_float((sk_dtype)out_dtype) || (p->quant && out_dtype == SK_INT32);
  if (!out_ok)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute output_dtype: expected %s, got %s", op,
                    p->quant ? "int32, fp16, bf16 or fp32" : "fp16, bf16 or fp32",
                    sk_dtype_name((sk_dtype)out_dtype));
  int64_t trans;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "transpose_weight", &trans));
  if (trans && p->quant)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute transpose_weight: only the float path takes it, x is int8",
                    op);
  p->trans_w = trans != 0;
  p->group_type = (int)group_type;
  p->split_item = (int)split_item;
  p->out_dtype = (sk_dtype)out_dtype;
  /* group_list_type is read even with group_type -1 so it is not "unknown";
   * it must then be absent like group_list. */
  if (group_type == -1 && sk__ctx_has_attr(ctx, "group_list_type"))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list_type must be absent with group_type -1", op);
  SK_RETURN_IF_ERROR(group_type == -1 ? build_lists(ctx, p) : build_moe(ctx, p));
  return p->quant ? sk__gmm_check_quant(ctx, p) : SK_STATUS_OK;
}

sk_status sk__gmm_pack(const sk__node_io *io, void **packed, size_t *bytes) {
  const gmm_params *p = io->params;
  sk__weight_matrix *mats = calloc((size_t)p->n_groups + 1, sizeof *mats);
  if (!mats) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory");
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    mats[g] = (sk__weight_matrix){q.w, q.w_dtype, q.k, q.n, q.n, q.w_trans};
  }
  sk_status st = sk__pack_weights(p->quant ? SK_PACK_INT8 : SK_PACK_FLOAT, mats, p->n_groups, "grouped_matmul",
                                  io->isa, io->numerics, packed, bytes);
  free(mats);
  return st;
}

static sk_status clone_params(void *dst, const void *src) {
  const gmm_params *s = src;
  gmm_params *d = dst;
  *d = *s;
  d->row_begin = d->row_end = NULL;
  if (!s->row_begin) return SK_STATUS_OK;
  d->row_begin = malloc((size_t)s->n_groups * sizeof(int64_t));
  d->row_end = malloc((size_t)s->n_groups * sizeof(int64_t));
  if (!d->row_begin || !d->row_end) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory");
  memcpy(d->row_begin, s->row_begin, (size_t)s->n_groups * sizeof(int64_t));
  memcpy(d->row_end, s->row_end, (size_t)s->n_groups * sizeof(int64_t));
  return SK_STATUS_OK;
}

static void free_params(void *params) {
  gmm_params *p = params;
  free(p->row_begin);
  free(p->row_end);
}

/* base + bytes, keeping NULL (tiling runs on tensors without data). */
static const void *at(const void *base, int64_t bytes) {
  return base ? (const char *)base + bytes : NULL;
}

/* Per-group vector operand from slot s: a list (one tensor per group), or
 * one [E, len] tensor whose row g belongs to group g. */
static gmm_vec group_vec(const sk__slot *s, int64_t g) {
  gmm_vec v = {0};
  if (s->count == 0) return v;
  const sk__tensor *t = &s->tensors[s->count == 1 && s->tensors[0].rank == 2 ? 0 : g];
  v.dtype = t->dtype;
  v.len = t->shape[t->rank - 1];
  v.data = t->rank == 2 ? at(t->data, g * v.len * (int64_t)sk_dtype_size(t->dtype)) : t->data;
  return v;
}

/* What every group has whatever the group type: its per-group vectors,
 * output dtype and packed weights. */
static gmm_group group_common(const sk__node_io *io, int64_t g) {
  const gmm_params *p = io->params;
  gmm_group q = {0};
  q.bias = group_vec(&io->in[GMM_BIAS], g);
  q.scale = group_vec(&io->in[GMM_SCALE], g);
  q.offset = group_vec(&io->in[GMM_OFFSET], g);
  q.y_dtype = p->out_dtype;
  q.w_packed = sk__packed_weight(io->packed, p->quant ? SK_PACK_INT8 : SK_PACK_FLOAT, io->isa, io->numerics, g);
  q.numerics = io->numerics;
  q.w_trans = p->trans_w;
  return q;
}

gmm_group sk__gmm_group(const sk__node_io *io, int64_t g) {
  const gmm_params *p = io->params;
  if (p->group_type == -1) {
    gmm_group q = group_common(io, g);
    const sk__tensor *x = &io->in[GMM_X].tensors[g], *w = &io->in[GMM_WEIGHT].tensors[g];
    q.k = w->shape[p->trans_w ? 1 : 0];
    q.n = w->shape[p->trans_w ? 0 : 1];
    q.m = sk__tensor_numel(&io->out[g]) / (q.n ? q.n : 1);
    if (q.n == 0) q.m = q.k ? sk__tensor_numel(x) / q.k : 0;
    q.x = x->data;
    q.w = w->data;
    q.y = io->out[g].data;
    q.x_dtype = x->dtype;
    q.w_dtype = w->dtype;
    if (io->in[GMM_PER_TOKEN_SCALE].count) {
      const sk__tensor *t = &io->in[GMM_PER_TOKEN_SCALE].tensors[g];
      q.per_token_scale = (gmm_vec){t->data, t->dtype, q.m};
    }
    return q;
  }
  /* With a run-time group list the rows are unknown here: no rows. */
  if (!p->row_begin) return sk__gmm_group_rows(io, g, 0, 0);
  return sk__gmm_group_rows(io, g, p->row_begin[g], p->row_end[g] - p->row_begin[g]);
}

gmm_group sk__gmm_group_rows(const sk__node_io *io, int64_t g, int64_t row0, int64_t m) {
  const gmm_params *p = io->params;
  const sk__slot *xs = &io->in[GMM_X], *ws = &io->in[GMM_WEIGHT];
  gmm_group q = group_common(io, g);
  const sk__tensor *x = &xs->tensors[0];
  q.k = x->shape[1];
  q.m = m;
  q.x = at(x->data, row0 * q.k * (int64_t)sk_dtype_size(x->dtype));
  q.x_dtype = x->dtype;
  const sk__tensor *w = &ws->tensors[ws->count == 1 && ws->tensors[0].rank == 3 ? 0 : g];
  q.n = w->shape[p->trans_w ? w->rank - 2 : w->rank - 1];
  q.w_dtype = w->dtype;
  q.w = w->rank == 3 ? at(w->data, g * q.k * q.n * (int64_t)sk_dtype_size(w->dtype)) : w->data;
  size_t oes = sk_dtype_size(p->out_dtype);
  q.y = p->split_item >= 2 ? (void *)at(io->out[0].data, row0 * q.n * (int64_t)oes) : io->out[g].data;
  if (io->in[GMM_PER_TOKEN_SCALE].count) { /* one [M] tensor: this group's rows */
    const sk__tensor *t = &io->in[GMM_PER_TOKEN_SCALE].tensors[0];
    q.per_token_scale = (gmm_vec){at(t->data, row0 * (int64_t)sizeof(float)), t->dtype, q.m};
  }
  return q;
}

sk__gemm_problem sk__gmm_float_problem(const gmm_group *q) {
  return (sk__gemm_problem){.m = q->m, .n = q->n, .k = q->k,
                            .a = q->x, .a_dtype = q->x_dtype, .lda = q->k,
                            .b = q->w, .b_dtype = q->w_dtype, .ldb = q->n,
                            .bias = q->bias.data, .bias_dtype = q->bias.dtype,
                            .c = q->y, .c_dtype = q->y_dtype, .ldc = q->n, .b_packed = q->w_packed,
                            .numerics = q->numerics};
}

/* Reference: every group through the plain GEMM, then the zero tail. */
static void reference(const sk__node_io *io) {
  const gmm_params *p = io->params;
  int64_t *rb = p->row_begin, *re = p->row_end, rows_used = p->rows_used;
  if (p->runtime_groups) { /* the rows come from this run's group_list */
    rb = malloc((size_t)p->n_groups * sizeof *rb);
    re = malloc((size_t)p->n_groups * sizeof *re);
    bool ok = rb && re && sk__gmm_runtime_rows(io, rb, re, &rows_used);
    if (!rb || !re) sk__run_error_set(io->run_error, SK_STATUS_OUT_OF_MEMORY, "%s (grouped_matmul): out of memory", io->name);
    if (!ok) {
      free(rb), free(re);
      return;
    }
  }
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = p->group_type == 0 ? sk__gmm_group_rows(io, g, rb[g], re[g] - rb[g]) : sk__gmm_group(io, g);
    if (p->quant) {
      sk__gmm_quant_reference(&q);
    } else {
      sk__gemm_problem f = sk__gmm_float_problem(&q);
      void *bt = NULL;
      if (q.w_trans && q.m > 0 && q.n > 0) { /* B as [K, N]: the plain GEMM reads it so */
        if (!(bt = sk__gmm_transpose_cols(&q, 0, q.n, NULL))) return; /* the oracle of tests only */
        f.b = bt;
      }
      sk__gemm_reference(&f);
      free(bt);
    }
  }
  if (p->group_type == 0 && p->split_item >= 2) {
    const sk__tensor *y = &io->out[0];
    size_t row = (size_t)y->shape[1] * sk_dtype_size(y->dtype);
    memset((char *)y->data + (size_t)rows_used * row, 0, (size_t)(y->shape[0] - rows_used) * row);
  }
  if (p->runtime_groups) free(rb), free(re);
}

/* The micro-kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  if (((const gmm_params *)io->params)->quant) return sk__qgemm_kernel_name(io->isa);
  return sk__gemm_kernel_name(io->isa, io->numerics, io->in[0].tensors[0].dtype, io->in[1].tensors[0].dtype);
}

const sk__op_def sk__op_grouped_matmul = {
    .type = "grouped_matmul",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "per group g: y_g = x_g @ w_g (+ bias_g); int8: int32 accumulation and a dequantizing epilogue",
    .kind = SK_KERNEL_CUBE,
    .build = build,
    .tile = sk__gmm_tile,
    .run_block = sk__gmm_run_block,
    .footprint = sk__gmm_footprint,
    .pack = sk__gmm_pack,
    .reference = reference,
    .kernel_name = kernel_name,
    .dynamic_rows = true, /* run_block clips to x's live rows (grouped_matmul_tiling.c) */
    .params_size = sizeof(gmm_params),
    .clone_params = clone_params,
    .free_params = free_params,
};

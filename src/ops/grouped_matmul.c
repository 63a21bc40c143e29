/* grouped_matmul: validation, shape rule and reference (see docs/ops.md).
 *
 *   group_type -1: y_i = x_i @ w_i (+ bias_i) for lists of equal length G;
 *                  x_i [..., K_i], w_i [K_i, N_i], y_i x_i.shape[:-1] + [N_i].
 *   group_type 0:  x [M, K], weight [E, K, N] or a list of E [K, N]; rows
 *                  group_list-delimited per expert; split_item 2/3 -> one
 *                  [M, N] output (rows past the last group are zero),
 *                  0/1 -> one [rows_e, N] output per expert.
 * Float path: fp16 / bf16 / fp32 in, fp32 accumulation, output_dtype out. */
#include "ops/grouped_matmul.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/op_util.h"

static const char *const slots[] = {"x", "weight", "bias", "scale", "offset", "per_token_scale", NULL};

#define MAX_GROUPS 1024

static sk_status check_float_dtypes(const char *op, const char *what, size_t i, const sk__tensor *t,
                                    sk_dtype x_dtype, bool is_bias) {
  if (is_bias ? (t->dtype != x_dtype && t->dtype != SK_FP32) : t->dtype != x_dtype)
    return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input %s[%zu]: expected dtype %s%s, got %s", op, what, i,
                    sk_dtype_name(x_dtype), is_bias && x_dtype != SK_FP32 ? " or fp32" : "", sk_dtype_name(t->dtype));
  return SK_STATUS_OK;
}

static sk_status check_bias(const char *op, size_t i, const sk__tensor *b, int64_t n, sk_dtype x_dtype) {
  if (b->rank != 1 || b->shape[0] != n) {
    char s[SK_SHAPE_STR_MAX];
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias[%zu]: expected shape [%lld], got %s", op, i,
                    (long long)n, sk__shape_str(b->rank, b->shape, s, sizeof s));
  }
  return check_float_dtypes(op, "bias", i, b, x_dtype, true);
}

static sk_status check_weight(const char *op, size_t i, const sk__tensor *w, int64_t k, sk_dtype x_dtype) {
  char s[SK_SHAPE_STR_MAX];
  if (w->rank != 2)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight[%zu]: expected rank 2 [K, N], got %s", op, i,
                    sk__shape_str(w->rank, w->shape, s, sizeof s));
  if (w->shape[0] != k)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight[%zu]: expected %lld rows (K of x), got %lld", op, i,
                    (long long)k, (long long)w->shape[0]);
  return check_float_dtypes(op, "weight", i, w, x_dtype, false);
}

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
  if (p->split_item > 1)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute split_item: expected 0 or 1 with group_type -1, got %d",
                    op, p->split_item);
  sk__tensor *outs;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, xs->count, &outs));
  for (size_t i = 0; i < xs->count; i++) {
    const sk__tensor *x = &xs->tensors[i], *w = &ws->tensors[i];
    char s[SK_SHAPE_STR_MAX];
    if (x->rank < 2)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x[%zu]: expected rank >= 2, got %s", op, i,
                      sk__shape_str(x->rank, x->shape, s, sizeof s));
    if (i > 0 && x->dtype != xs->tensors[0].dtype)
      return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input x[%zu]: expected dtype %s (as x[0]), got %s", op, i,
                      sk_dtype_name(xs->tensors[0].dtype), sk_dtype_name(x->dtype));
    int64_t k = x->shape[x->rank - 1];
    if (w->rank == 2 && w->shape[0] != k)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x[%zu]: expected last dimension %lld (weight[%zu] rows), got %lld",
                      op, i, (long long)w->shape[0], i, (long long)k);
    SK_RETURN_IF_ERROR(check_weight(op, i, w, k, x->dtype));
    if (bs->count) SK_RETURN_IF_ERROR(check_bias(op, i, &bs->tensors[i], w->shape[1], x->dtype));
    int64_t shape[SK_MAX_RANK];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->rank - 1] = w->shape[1];
    sk__tensor_init(&outs[i], p->out_dtype, x->rank, shape);
  }
  p->n_groups = (int64_t)xs->count;
  return SK_STATUS_OK;
}

/* group_type 0: fills row_begin / row_end per expert from group_list. */
static sk_status parse_group_list(sk__build_ctx *ctx, gmm_params *p, int64_t m) {
  const char *op = sk__ctx_op(ctx);
  const int64_t *list;
  size_t n;
  int64_t list_type;
  SK_RETURN_IF_ERROR(sk__ctx_attr_ints(ctx, "group_list", &list, &n));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_list_type", 0, &list_type));
  if (list_type != 0 && list_type != 1)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute group_list_type: expected 0 (cumulative) or 1 (counts), got %lld", op,
                    (long long)list_type);
  if ((int64_t)n != p->n_groups)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list: expected %lld entries (one per expert), got %zu",
                    op, (long long)p->n_groups, n);
  p->row_begin = malloc(n * sizeof(int64_t));
  p->row_end = malloc(n * sizeof(int64_t));
  if (!p->row_begin || !p->row_end) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", op);
  int64_t end = 0;
  for (size_t e = 0; e < n; e++) {
    int64_t next;
    if (list_type == 0) {
      if (list[e] < end)
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                        "%s: attribute group_list: cumulative ends must be non-decreasing, but entry %zu is %lld after %lld",
                        op, e, (long long)list[e], (long long)end);
      next = list[e];
    } else {
      if (list[e] < 0)
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list: count %zu is negative (%lld)", op, e,
                        (long long)list[e]);
      next = end + list[e];
    }
    if (next > m)
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list: entry %zu reaches row %lld, past M = %lld",
                      op, e, (long long)next, (long long)m);
    p->row_begin[e] = end;
    p->row_end[e] = next;
    end = next;
  }
  p->rows_used = end;
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
  if (ws->count == 1 && ws->tensors[0].rank == 3) { /* one [E, K, N] tensor */
    const sk__tensor *w = &ws->tensors[0];
    if (w->shape[1] != k)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight: expected [E, %lld, N] (K of x), got %s", op,
                      (long long)k, sk__shape_str(w->rank, w->shape, s, sizeof s));
    SK_RETURN_IF_ERROR(check_float_dtypes(op, "weight", 0, w, x->dtype, false));
    p->n_groups = w->shape[0];
    n = w->shape[2];
  } else {
    if (ws->count == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input weight: expected a non-empty list", op);
    p->n_groups = (int64_t)ws->count;
    n = ws->tensors[0].rank == 2 ? ws->tensors[0].shape[1] : 0;
    for (size_t e = 0; e < ws->count; e++) {
      SK_RETURN_IF_ERROR(check_weight(op, e, &ws->tensors[e], k, x->dtype));
      if (ws->tensors[e].shape[1] != n)
        return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight[%zu]: expected %lld columns (as weight[0]), got %lld",
                        op, e, (long long)n, (long long)ws->tensors[e].shape[1]);
    }
  }
  if (p->n_groups < 1 || p->n_groups > MAX_GROUPS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %lld groups (expected 1..%d)", op, (long long)p->n_groups, MAX_GROUPS);
  if (bs->count == 1 && bs->tensors[0].rank == 2) { /* one [E, N] tensor */
    const sk__tensor *b = &bs->tensors[0];
    if (b->shape[0] != p->n_groups || b->shape[1] != n)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected [%lld, %lld], got %s", op,
                      (long long)p->n_groups, (long long)n, sk__shape_str(b->rank, b->shape, s, sizeof s));
    SK_RETURN_IF_ERROR(check_float_dtypes(op, "bias", 0, b, x->dtype, true));
  } else if (bs->count) {
    if ((int64_t)bs->count != p->n_groups)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input bias: expected a list of %lld (one per expert), got %zu", op,
                      (long long)p->n_groups, bs->count);
    for (size_t e = 0; e < bs->count; e++) SK_RETURN_IF_ERROR(check_bias(op, e, &bs->tensors[e], n, x->dtype));
  }
  if (!sk__ctx_has_attr(ctx, "group_list"))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list is required with group_type 0", op);
  SK_RETURN_IF_ERROR(parse_group_list(ctx, p, m));
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
  const sk__slot *xs = sk__ctx_slot(ctx, GMM_X), *ws = sk__ctx_slot(ctx, GMM_WEIGHT);
  if (xs->count == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input x: expected a non-empty list", op);
  if (ws->count == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input weight: expected a non-empty list", op);
  if (xs->count > MAX_GROUPS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input x: %zu groups (at most %d)", op, xs->count, MAX_GROUPS);
  sk_dtype x_dtype = xs->tensors[0].dtype;
  if (x_dtype == SK_INT8)
    return sk__fail(SK_STATUS_UNSUPPORTED, "%s: input x: the int8 path is not implemented yet (float inputs only)", op);
  if (!sk__is_float(x_dtype))
    return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input x[0]: expected dtype fp16, bf16 or fp32, got %s", op,
                    sk_dtype_name(x_dtype));
  static const int quant_slots[] = {GMM_SCALE, GMM_OFFSET, GMM_PER_TOKEN_SCALE};
  for (int i = 0; i < 3; i++)
    if (sk__ctx_slot(ctx, quant_slots[i])->count)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: only the int8 path takes it, x is %s", op,
                      slots[quant_slots[i]], sk_dtype_name(x_dtype));
  int64_t group_type, split_item, out_dtype;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "group_type", -1, &group_type));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "split_item", 0, &split_item));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "output_dtype", x_dtype, &out_dtype));
  if (group_type != -1 && group_type != 0)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_type: expected -1 or 0, got %lld", op,
                    (long long)group_type);
  if (split_item < 0 || split_item > 3)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute split_item: expected 0..3, got %lld", op,
                    (long long)split_item);
  if (!sk__is_float((sk_dtype)out_dtype) || out_dtype <= 0 || out_dtype >= SK_DTYPE_COUNT_)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute output_dtype: expected fp16, bf16 or fp32, got %s", op,
                    sk_dtype_name((sk_dtype)out_dtype));
  p->group_type = (int)group_type;
  p->split_item = (int)split_item;
  p->out_dtype = (sk_dtype)out_dtype;
  /* group_list_type is read even with group_type -1 so it is not "unknown";
   * it must then be absent like group_list. */
  if (group_type == -1 && sk__ctx_has_attr(ctx, "group_list_type"))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute group_list_type must be absent with group_type -1", op);
  return group_type == -1 ? build_lists(ctx, p) : build_moe(ctx, p);
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

sk__gemm_problem sk__gmm_group_problem(const sk__node_io *io, int64_t g) {
  const gmm_params *p = io->params;
  const sk__slot *xs = &io->in[GMM_X], *ws = &io->in[GMM_WEIGHT], *bs = &io->in[GMM_BIAS];
  sk__gemm_problem q = {0};
  if (p->group_type == -1) {
    const sk__tensor *x = &xs->tensors[g], *w = &ws->tensors[g];
    q.k = w->shape[0];
    q.n = w->shape[1];
    q.m = q.k ? sk__tensor_numel(x) / q.k : sk__tensor_numel(&io->out[g]) / (q.n ? q.n : 1);
    q.a = x->data;
    q.b = w->data;
    q.c = io->out[g].data;
    q.a_dtype = x->dtype;
    q.b_dtype = w->dtype;
    if (bs->count) {
      q.bias = bs->tensors[g].data;
      q.bias_dtype = bs->tensors[g].dtype;
    }
  } else {
    const sk__tensor *x = &xs->tensors[0];
    q.k = x->shape[1];
    int64_t rows = p->row_end[g] - p->row_begin[g];
    size_t xes = sk_dtype_size(x->dtype);
    q.m = rows;
    q.a = at(x->data, p->row_begin[g] * q.k * (int64_t)xes);
    q.a_dtype = x->dtype;
    const sk__tensor *w = &ws->tensors[ws->count == 1 && ws->tensors[0].rank == 3 ? 0 : g];
    q.n = w->shape[w->rank - 1];
    q.b_dtype = w->dtype;
    q.b = w->rank == 3 ? at(w->data, g * q.k * q.n * (int64_t)sk_dtype_size(w->dtype)) : w->data;
    if (bs->count == 1 && bs->tensors[0].rank == 2) {
      q.bias = at(bs->tensors[0].data, g * q.n * (int64_t)sk_dtype_size(bs->tensors[0].dtype));
      q.bias_dtype = bs->tensors[0].dtype;
    } else if (bs->count) {
      q.bias = bs->tensors[g].data;
      q.bias_dtype = bs->tensors[g].dtype;
    }
    size_t oes = sk_dtype_size(p->out_dtype);
    q.c = p->split_item >= 2 ? (void *)at(io->out[0].data, p->row_begin[g] * q.n * (int64_t)oes) : io->out[g].data;
  }
  q.lda = q.k;
  q.ldb = q.n;
  q.ldc = q.n;
  q.c_dtype = p->out_dtype;
  return q;
}

/* Reference: every group through the plain GEMM, then the zero tail. */
static void reference(const sk__node_io *io) {
  const gmm_params *p = io->params;
  for (int64_t g = 0; g < p->n_groups; g++) {
    sk__gemm_problem q = sk__gmm_group_problem(io, g);
    sk__gemm_reference(&q);
  }
  if (p->group_type == 0 && p->split_item >= 2) {
    const sk__tensor *y = &io->out[0];
    size_t row = (size_t)y->shape[1] * sk_dtype_size(y->dtype);
    memset((char *)y->data + (size_t)p->rows_used * row, 0, (size_t)(y->shape[0] - p->rows_used) * row);
  }
}

const sk__op_def sk__op_grouped_matmul = {
    .type = "grouped_matmul",
    .slot_names = slots,
    .kind = SK_KERNEL_CUBE,
    .build = build,
    .tile = sk__gmm_tile,
    .run_block = sk__gmm_run_block,
    .reference = reference,
    .params_size = sizeof(gmm_params),
    .clone_params = clone_params,
    .free_params = free_params,
};

/* grouped_matmul's int8 path: validation of its quantization inputs, the
 * epilogue that turns int32 accumulators into outputs, and its reference.
 *
 * Per output element, in this order (kernel and reference alike):
 *
 *   a = acc + bias[j]                   int32 bias only; wraps like int32
 *   int32 output:  y = a                (scale, offset, per_token_scale absent)
 *   float output:  v = (float)a
 *                  v = v * scale[j]     when scale is given (fp32, bf16, or the
 *                                       packed int64 form: its 19-bit scale)
 *                  v = v * per_token_scale[i]
 *                  v = v + offset[j]
 *                  v = v + bias[j]      float bias (fp32, fp16, bf16)
 *                  y = v rounded to the output dtype (nearest even)
 *
 * scale / offset / bias are [N] or [1] per group (a list of one per group,
 * or for group_type 0 one [E, N] tensor); per_token_scale is [M_g] per group
 * (group_type 0: one [M] tensor). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/grouped_matmul.h"
#include "ops/op_util.h"

/* Checks slot s holds, per group, a vector of length n_g (or 1 when
 * allow_one) of an accepted dtype: a list of n_groups 1-D tensors, or one
 * [E, n] tensor with group_type 0. */
static sk_status check_vec(sk__build_ctx *ctx, const gmm_params *p, int s, const char *name, const int64_t *n,
                           bool allow_one) {
  const char *op = sk__ctx_op(ctx);
  const sk__slot *slot = sk__ctx_slot(ctx, s);
  char sh[SK_SHAPE_STR_MAX];
  if (slot->count == 0) return SK_STATUS_OK;
  if (slot->count == 1 && slot->tensors[0].rank == 2 && p->group_type == 0) {
    const sk__tensor *t = &slot->tensors[0];
    if (t->shape[0] != p->n_groups || (t->shape[1] != n[0] && !(allow_one && t->shape[1] == 1)))
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected [%lld, %lld], got %s", op, name,
                      (long long)p->n_groups, (long long)n[0], sk__shape_str(t->rank, t->shape, sh, sizeof sh));
    return SK_STATUS_OK;
  }
  if ((int64_t)slot->count != p->n_groups)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: expected a list of %lld (one per group), got %zu", op,
                    name, (long long)p->n_groups, slot->count);
  for (size_t g = 0; g < slot->count; g++) {
    const sk__tensor *t = &slot->tensors[g];
    if (t->rank != 1 || (t->shape[0] != n[g] && !(allow_one && t->shape[0] == 1)))
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s[%zu]: expected [%lld]%s, got %s", op, name, g,
                      (long long)n[g], allow_one ? " or [1]" : "", sk__shape_str(t->rank, t->shape, sh, sizeof sh));
  }
  return SK_STATUS_OK;
}


sk_status sk__gmm_check_quant(sk__build_ctx *ctx, const gmm_params *p) {
  const char *op = sk__ctx_op(ctx);
  const sk__slot *xs = sk__ctx_slot(ctx, GMM_X), *ws = sk__ctx_slot(ctx, GMM_WEIGHT), *bs = sk__ctx_slot(ctx, GMM_BIAS);
  const sk__slot *scale = sk__ctx_slot(ctx, GMM_SCALE), *offset = sk__ctx_slot(ctx, GMM_OFFSET),
                 *pts = sk__ctx_slot(ctx, GMM_PER_TOKEN_SCALE);
  if (p->out_dtype == SK_INT32) {
    const sk__slot *forbidden[] = {scale, offset, pts};
    const char *names[] = {"scale", "offset", "per_token_scale"};
    for (int i = 0; i < 3; i++)
      if (forbidden[i]->count)
        return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                        "%s: input %s: not used with int32 output (set output_dtype to fp16, bf16 or fp32)", op,
                        names[i]);
    for (size_t i = 0; i < bs->count; i++)
      if (bs->tensors[i].dtype != SK_INT32)
        return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input bias[%zu]: expected dtype int32 with int32 output, got %s",
                        op, i, sk_dtype_name(bs->tensors[i].dtype));
  }
  int64_t *n = malloc((size_t)p->n_groups * sizeof *n), *m = malloc((size_t)p->n_groups * sizeof *m);
  if (!n || !m) {
    free(n);
    free(m);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", op);
  }
  for (int64_t g = 0; g < p->n_groups; g++) {
    const sk__tensor *w = &ws->tensors[ws->count == 1 && ws->tensors[0].rank == 3 ? 0 : g];
    n[g] = w->shape[w->rank - 1];
    if (p->group_type == -1) {
      const sk__tensor *x = &xs->tensors[g];
      m[g] = 1;
      for (int d = 0; d + 1 < x->rank; d++) m[g] *= x->shape[d];
    } else {
      m[g] = p->row_begin ? p->row_end[g] - p->row_begin[g] : 0; /* unknown until run time: unused */
    }
  }
  sk_status st = check_vec(ctx, p, GMM_SCALE, "scale", n, true);
  if (st == SK_STATUS_OK) st = check_vec(ctx, p, GMM_OFFSET, "offset", n, true);
  if (st == SK_STATUS_OK && pts->count) {
    char sh[SK_SHAPE_STR_MAX];
    if (p->group_type == 0) {
      const sk__tensor *t = &pts->tensors[0];
      int64_t rows = xs->tensors[0].shape[0];
      if (pts->count != 1 || t->rank != 1 || t->shape[0] != rows)
        st = sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input per_token_scale: expected one [%lld] tensor (M of x), got %s",
                      op, (long long)rows, pts->count == 1 ? sk__shape_str(t->rank, t->shape, sh, sizeof sh) : "a list");
    } else {
      st = check_vec(ctx, p, GMM_PER_TOKEN_SCALE, "per_token_scale", m, false);
    }
  }
  free(n);
  free(m);
  return st;
}

/* The scale as an fp32 value: bf16 widened, int64 decoded (19-bit scale). */
static float scale_at(const gmm_vec *s, int64_t j) {
  int64_t idx = s->len == 1 ? 0 : j;
  if (s->dtype == SK_INT64) {
    float scale;
    sk_decode_quant_param(((const int64_t *)s->data)[idx], &scale, NULL);
    return scale;
  }
  return sk__load_f32(s->data, s->dtype, (size_t)idx);
}

static float vec_f32(const gmm_vec *v, int64_t j) { return sk__load_f32(v->data, v->dtype, (size_t)(v->len == 1 ? 0 : j)); }

/* One element of the epilogue (the order of the file comment). */
static inline void epilogue_one(const gmm_group *q, int32_t acc, int64_t i, int64_t j) {
  bool int_bias = q->bias.data && q->bias.dtype == SK_INT32;
  int32_t a = int_bias ? (int32_t)((uint32_t)acc + (uint32_t)((const int32_t *)q->bias.data)[q->bias.len == 1 ? 0 : j]) : acc;
  if (q->y_dtype == SK_INT32) {
    ((int32_t *)q->y)[i * q->n + j] = a;
    return;
  }
  float v = (float)a;
  if (q->scale.data) v = v * scale_at(&q->scale, j);
  if (q->per_token_scale.data) v = v * ((const float *)q->per_token_scale.data)[i];
  if (q->offset.data) v = v + vec_f32(&q->offset, j);
  if (q->bias.data && !int_bias) v = v + vec_f32(&q->bias, j);
  sk__store_f32(q->y, q->y_dtype, (size_t)(i * q->n + j), v);
}

/* A tile's epilogue, EPILOGUE_COLS columns at a time: their scale, offset
 * and bias widened once, then each row's values computed with the steps
 * of epilogue_one in its order (an absent scale or per_token_scale is a
 * product with 1.0f, which changes no value) and stored by sk__convert
 * (which rounds as sk__store_f32 does): the same bits, at SIMD speed (it
 * was a quarter of the AMX GEMM's time, an element at a time). */
#define EPILOGUE_COLS 128

void sk__gmm_quant_epilogue(const gmm_group *q, const int32_t *acc, int64_t ldacc, int64_t m0, int64_t m1, int64_t n0,
                            int64_t n1, sk__isa isa) {
  const bool int_bias = q->bias.data && q->bias.dtype == SK_INT32, float_bias = q->bias.data && !int_bias;
  if (q->y_dtype == SK_INT32) {
    for (int64_t i = m0; i < m1; i++)
      for (int64_t j = n0; j < n1; j++) epilogue_one(q, acc[(i - m0) * ldacc + (j - n0)], i, j);
    return;
  }
  const size_t es = sk_dtype_size(q->y_dtype);
  for (int64_t c0 = n0; c0 < n1; c0 += EPILOGUE_COLS) {
    const int64_t cn = n1 - c0 < EPILOGUE_COLS ? n1 - c0 : EPILOGUE_COLS;
    float scale[EPILOGUE_COLS], offset[EPILOGUE_COLS], bias[EPILOGUE_COLS], row[EPILOGUE_COLS];
    int32_t ibias[EPILOGUE_COLS];
    for (int64_t j = 0; j < cn; j++) {
      scale[j] = q->scale.data ? scale_at(&q->scale, c0 + j) : 1.0f;
      offset[j] = q->offset.data ? vec_f32(&q->offset, c0 + j) : 0.0f;
      bias[j] = float_bias ? vec_f32(&q->bias, c0 + j) : 0.0f;
      ibias[j] = int_bias ? ((const int32_t *)q->bias.data)[q->bias.len == 1 ? 0 : c0 + j] : 0;
    }
    for (int64_t i = m0; i < m1; i++) {
      const int32_t *a = acc + (i - m0) * ldacc + (c0 - n0);
      const float token = q->per_token_scale.data ? ((const float *)q->per_token_scale.data)[i] : 1.0f;
      for (int64_t j = 0; j < cn; j++) row[j] = (float)(int32_t)((uint32_t)a[j] + (uint32_t)ibias[j]) * scale[j] * token;
      if (q->offset.data)
        for (int64_t j = 0; j < cn; j++) row[j] = row[j] + offset[j];
      if (float_bias)
        for (int64_t j = 0; j < cn; j++) row[j] = row[j] + bias[j];
      sk__convert(row, SK_FP32, (char *)q->y + (size_t)(i * q->n + c0) * es, q->y_dtype, (size_t)cn, isa);
    }
  }
}

void sk__gmm_quant_reference(const gmm_group *q) {
  const int8_t *x = q->x, *w = q->w;
  for (int64_t i = 0; i < q->m; i++)
    for (int64_t j = 0; j < q->n; j++) {
      int32_t acc = 0;
      for (int64_t p = 0; p < q->k; p++) acc += (int32_t)x[i * q->k + p] * (int32_t)w[p * q->n + j];
      epilogue_one(q, acc, i, j);
    }
}

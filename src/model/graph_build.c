/* The model builder's calls (model_graph.h): every one returns at once
 * after the first error, so a block reads as the model does and the build
 * checks once at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "model/model_graph.h"

#define NONE SK__MB_NONE

bool sk__mb_ok(const sk__model_builder *b) { return b->st == SK_STATUS_OK; }

void sk__mb_failed(sk__model_builder *b, sk_status st) {
  if (sk__mb_ok(b)) b->st = st;
}

static void dims(char *buf, size_t size, int rank, const int64_t *shape) {
  buf[0] = '\0';
  for (int i = 0, n = 0; i < rank && i < SK_MODEL_MAX_RANK && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
}

sk_status sk__mb_try_lookup(sk__model_builder *b, const char *name, sk_dtype want, int rank, const int64_t *shape,
                        sk_model_tensor *t) {
  memset(t, 0, sizeof *t);
  sk_status st = b->weight(b->weight_user, name, t);
  if (st == SK_STATUS_NOT_FOUND) return st;
  if (st != SK_STATUS_OK) {
    sk__mb_failed(b, sk__fail_within(st, "weight %s", name));
    return b->st;
  }
  bool same = t->rank == rank && t->data != NULL;
  for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
  const bool float_ok = t->dtype == SK_FP32 || t->dtype == SK_FP16 || t->dtype == SK_BF16;
  if (!same || (want != SK_DTYPE_INVALID ? t->dtype != want : !float_ok)) {
    char w[128], g[128];
    dims(w, sizeof w, rank, shape);
    dims(g, sizeof g, t->rank, t->shape);
    sk__mb_failed(b, sk__fail(SK_STATUS_INVALID_SHAPE, "weight %s: expected %s [%s], got %s [%s]%s", name,
                              want != SK_DTYPE_INVALID ? sk_dtype_name(want) : "a float", w, sk_dtype_name(t->dtype),
                              g, t->data ? "" : " with no data"));
    return b->st;
  }
  return SK_STATUS_OK;
}

static void missing(sk__model_builder *b, const char *name) {
  sk__mb_failed(b, sk__fail(SK_STATUS_NOT_FOUND, "weight %s: missing (the %s config needs it)", name, b->d->family));
}

bool sk__mb_lookup(sk__model_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                   sk_model_tensor *t) {
  if (!sk__mb_ok(b)) return false;
  sk_status st = sk__mb_try_lookup(b, name, dtype, rank, shape, t);
  if (st == SK_STATUS_NOT_FOUND) missing(b, name);
  return st == SK_STATUS_OK;
}

static size_t numel(int rank, const int64_t *shape) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
  return n;
}

sk_status sk__mb_try_weight(sk__model_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                            sk_value *out) {
  *out = NONE;
  if (!sk__mb_ok(b)) return b->st;
  sk_model_tensor t;
  sk_status st = sk__mb_try_lookup(b, name, dtype, rank, shape, &t);
  if (st != SK_STATUS_OK) return st;
  st = sk_graph_add_constant(b->g, name, t.dtype, rank, shape, t.data, SK_CONSTANT_BORROW, out);
  if (st != SK_STATUS_OK) {
    sk__mb_failed(b, st);
    return st;
  }
  b->weight_bytes += numel(rank, shape) * sk_dtype_size(t.dtype);
  return SK_STATUS_OK;
}

sk_value sk__mb_weight(sk__model_builder *b, sk_dtype dtype, int rank, const int64_t *shape, const char *fmt, ...) {
  char name[SK__MB_NAME_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  sk_value v = NONE;
  if (sk__mb_ok(b) && sk__mb_try_weight(b, name, dtype, rank, shape, &v) == SK_STATUS_NOT_FOUND) missing(b, name);
  return v;
}

sk_value sk__mb_weight_fp32(sk__model_builder *b, int rank, const int64_t *shape, const char *fmt, ...) {
  char name[SK__MB_NAME_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  sk_value v = NONE;
  sk_model_tensor t;
  if (!sk__mb_ok(b)) return v;
  sk_status st = sk__mb_try_lookup(b, name, SK_DTYPE_INVALID, rank, shape, &t);
  if (st == SK_STATUS_NOT_FOUND) missing(b, name);
  if (st != SK_STATUS_OK) return v;
  const size_t n = numel(rank, shape);
  float *f = malloc(n * sizeof *f + 1);
  if (!f) {
    sk__mb_failed(b, sk__fail(SK_STATUS_OUT_OF_MEMORY, "weight %s: out of memory widening it to fp32", name));
    return v;
  }
  for (size_t i = 0; i < n; i++) f[i] = sk__load_f32(t.data, t.dtype, i); /* exact: fp16 and bf16 widen without rounding */
  st = sk_graph_add_constant(b->g, name, SK_FP32, rank, shape, f, SK_CONSTANT_COPY, &v);
  free(f);
  if (st != SK_STATUS_OK) sk__mb_failed(b, st);
  b->weight_bytes += n * sizeof(float);
  return v;
}

void sk__mb_node(sk__model_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                 const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs) {
  if (!sk__mb_ok(b)) return;
  sk_op_desc desc = {.struct_size = sizeof desc, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                     .attrs = attrs, .n_attrs = n_attrs};
  sk_status st = sk_graph_add_op(b->g, &desc, outs, max_outs, NULL);
  if (st != SK_STATUS_OK) sk__mb_failed(b, sk__fail_within(st, "building %s", name));
}

sk_value sk__mb_one(sk__model_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                    const sk_attr *attrs, size_t n_attrs) {
  sk_value outs[4] = {NONE, NONE, NONE, NONE};
  sk__mb_node(b, name, op, in, n_in, attrs, n_attrs, outs, 4);
  return outs[0];
}

sk_value sk__mb_linear(sk__model_builder *b, const char *name, sk_value x, sk_value w, sk_value bias) {
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", &bias, 1}};
  return sk__mb_one(b, name, "linear", in, bias != NONE ? 3 : 2, NULL, 0);
}

sk_value sk__mb_reshape(sk__model_builder *b, const char *name, sk_value x, int64_t d1, int64_t d2) {
  const int64_t shape[] = {-1, d1, d2};
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr at[] = {SK_ATTR_INTS("shape", shape, d2 ? 3 : 2)};
  return sk__mb_one(b, name, "reshape", in, 1, at, 1);
}

sk_value sk__mb_norm(sk__model_builder *b, const char *name, sk_value x, sk_value delta, sk_value gamma,
                     sk_value *sum) {
  sk_attr eps[] = {SK_ATTR_FLOAT("epsilon", b->d->eps)};
  sk_value outs[3] = {NONE, NONE, NONE};
  if (delta == NONE) {
    sk_op_input in[] = {{"x", &x, 1}, {"gamma", &gamma, 1}};
    sk__mb_node(b, name, "rms_norm", in, 2, eps, 1, outs, 2);
    if (sum) *sum = x;
  } else {
    sk_op_input in[] = {{"x1", &x, 1}, {"x2", &delta, 1}, {"gamma", &gamma, 1}};
    sk__mb_node(b, name, "add_rms_norm", in, 3, eps, 1, outs, 3);
    if (sum) *sum = outs[2];
  }
  return outs[0];
}

sk_value sk__mb_cache(sk__model_builder *b, const char *name, int64_t heads, int64_t dim) {
  sk_value v = NONE;
  if (!sk__mb_ok(b)) return v;
  const int64_t shape[] = {b->max_context, heads, dim};
  sk_status st = sk_graph_add_input(b->g, name, b->d->dtype, 3, shape, &v);
  if (st != SK_STATUS_OK) {
    sk__mb_failed(b, st);
    return v;
  }
  sk__model_cache *c = &b->caches[b->n_caches++];
  snprintf(c->name, sizeof c->name, "%s", name);
  c->bytes = numel(3, shape) * sk_dtype_size(b->d->dtype);
  return v;
}

void sk__mb_split(sk__model_builder *b, const char *name, sk_value x, int64_t a, int64_t c, sk_value *first,
                  sk_value *second) {
  const int64_t sizes[] = {a, c};
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr at[] = {SK_ATTR_INT("dim", -1), SK_ATTR_INTS("sizes", sizes, 2)};
  sk_value outs[2] = {NONE, NONE};
  sk__mb_node(b, name, "split", in, 1, at, 2, outs, 2);
  *first = outs[0], *second = outs[1];
}

void sk__mb_rope(sk__model_builder *b, sk_value *q, sk_value *k, sk_value positions, int64_t rotary_dim) {
  const sk__rope *r = &b->d->rope;
  sk_attr at[] = {SK_ATTR_INT("max_positions", b->max_context), SK_ATTR_INT("layout", r->interleaved),
                  SK_ATTR_FLOAT("theta", r->theta), SK_ATTR_INT("scaling_type", r->scaling_type),
                  SK_ATTR_FLOAT("factor", r->factor),
                  SK_ATTR_INT("original_max_positions", r->original_max_positions),
                  SK_ATTR_FLOAT("beta_fast", r->beta_fast), SK_ATTR_FLOAT("beta_slow", r->beta_slow),
                  SK_ATTR_FLOAT("mscale", r->mscale), SK_ATTR_FLOAT("mscale_all_dim", r->mscale_all_dim),
                  SK_ATTR_INT("rotary_dim", rotary_dim)};
  sk_op_input in[] = {{"q", q, 1}, {"k", k, 1}, {"positions", &positions, 1}};
  sk_value qk[2] = {NONE, NONE};
  const size_t n_at = sizeof at / sizeof at[0] - (rotary_dim == 0); /* 0: the op's default, the head dim */
  sk__mb_node(b, "rope", "rotary_embedding", in, 3, at, n_at, qk, 2);
  *q = qk[0], *k = qk[1];
}

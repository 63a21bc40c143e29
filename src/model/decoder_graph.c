/* The body and head graphs of a decoder model (model_graph.h), from its
 * description (decoder.h). Every call returns at once after the first
 * error, so a build reads as the model does and checks once at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model_graph.h"

#define NAME_MAX_LEN 256
#define NONE SK_VALUE_NONE

static bool ok(sk__model_builder *b) { return b->st == SK_STATUS_OK; }

static void failed(sk__model_builder *b, sk_status st) {
  if (ok(b)) b->st = st;
}

/* Looks up weight `name`: SK_STATUS_NOT_FOUND (with no error kept) when
 * the caller does not have it, else checks and adds it as a borrowed
 * constant. want_dtype SK_DTYPE_INVALID: any float dtype. */
static sk_status try_weight(sk__model_builder *b, const char *name, sk_dtype want_dtype, int rank,
                            const int64_t *shape, sk_value *out) {
  *out = NONE;
  if (!ok(b)) return b->st;
  sk_model_tensor t;
  memset(&t, 0, sizeof t);
  sk_status st = b->weight(b->weight_user, name, &t);
  if (st == SK_STATUS_NOT_FOUND) return st;
  if (st != SK_STATUS_OK) {
    failed(b, sk__fail_within(st, "weight %s", name));
    return b->st;
  }
  bool same = t.rank == rank && t.data != NULL;
  for (int i = 0; same && i < rank; i++) same = t.shape[i] == shape[i];
  const bool float_ok = t.dtype == SK_FP32 || t.dtype == SK_FP16 || t.dtype == SK_BF16;
  if (!same || (want_dtype != SK_DTYPE_INVALID ? t.dtype != want_dtype : !float_ok)) {
    char want[128] = "", got[128] = "";
    for (int i = 0, n = 0; i < rank; i++) n += snprintf(want + n, sizeof want - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    for (int i = 0, n = 0; i < t.rank && i < SK_MODEL_MAX_RANK; i++)
      n += snprintf(got + n, sizeof got - n, "%s%lld", i ? ", " : "", (long long)t.shape[i]);
    failed(b, sk__fail(SK_STATUS_INVALID_SHAPE, "weight %s: expected %s [%s], got %s [%s]%s", name,
                       want_dtype != SK_DTYPE_INVALID ? sk_dtype_name(want_dtype) : "a float", want,
                       sk_dtype_name(t.dtype), got, t.data ? "" : " with no data"));
    return b->st;
  }
  st = sk_graph_add_constant(b->g, name, t.dtype, rank, shape, t.data, SK_CONSTANT_BORROW, out);
  if (st != SK_STATUS_OK) {
    failed(b, st);
    return st;
  }
  size_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= (size_t)shape[i];
  b->weight_bytes += numel * sk_dtype_size(t.dtype);
  return SK_STATUS_OK;
}

/* A weight the model must have, in the model's dtype (norm weights: any float). */
static sk_value weight(sk__model_builder *b, sk_dtype dtype, int rank, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static sk_value weight(sk__model_builder *b, sk_dtype dtype, int rank, const int64_t *shape, const char *fmt, ...) {
  char name[NAME_MAX_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  sk_value v = NONE;
  if (ok(b) && try_weight(b, name, dtype, rank, shape, &v) == SK_STATUS_NOT_FOUND)
    failed(b, sk__fail(SK_STATUS_NOT_FOUND, "weight %s: missing (the %s config needs it)", name, b->d->family));
  return v;
}

static void node(sk__model_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                 const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs) {
  if (!ok(b)) return;
  sk_op_desc desc = {.struct_size = sizeof desc, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                     .attrs = attrs, .n_attrs = n_attrs};
  sk_status st = sk_graph_add_op(b->g, &desc, outs, max_outs, NULL);
  if (st != SK_STATUS_OK) failed(b, sk__fail_within(st, "building %s", name));
}

static sk_value one(sk__model_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                    const sk_attr *attrs, size_t n_attrs) {
  sk_value outs[4] = {NONE, NONE, NONE, NONE};
  node(b, name, op, in, n_in, attrs, n_attrs, outs, 4);
  return outs[0];
}

static sk_value linear(sk__model_builder *b, const char *name, sk_value x, sk_value w, sk_value bias) {
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", &bias, 1}};
  return one(b, name, "linear", in, bias != NONE ? 3 : 2, NULL, 0);
}

static sk_value reshape(sk__model_builder *b, const char *name, sk_value x, int64_t d1, int64_t d2) {
  const int64_t shape[] = {-1, d1, d2};
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr at[] = {SK_ATTR_INTS("shape", shape, d2 ? 3 : 2)};
  return one(b, name, "reshape", in, 1, at, 1);
}

/* x normed by gamma; with delta, (x + delta) normed, *sum the new x. */
static sk_value norm(sk__model_builder *b, const char *name, sk_value x, sk_value delta, sk_value gamma,
                     sk_value *sum) {
  sk_attr eps[] = {SK_ATTR_FLOAT("epsilon", b->d->eps)};
  sk_value outs[3] = {NONE, NONE, NONE};
  if (delta == NONE) {
    sk_op_input in[] = {{"x", &x, 1}, {"gamma", &gamma, 1}};
    node(b, name, "rms_norm", in, 2, eps, 1, outs, 2);
    if (sum) *sum = x;
  } else {
    sk_op_input in[] = {{"x1", &x, 1}, {"x2", &delta, 1}, {"gamma", &gamma, 1}};
    node(b, name, "add_rms_norm", in, 3, eps, 1, outs, 3);
    if (sum) *sum = outs[2];
  }
  return outs[0];
}

#define W(...) weight(b, d->dtype, __VA_ARGS__)
#define GAMMA(n, ...) weight(b, SK_DTYPE_INVALID, 1, (int64_t[]){n}, __VA_ARGS__)

static sk_value attention_block(sk__model_builder *b, int64_t l, sk_value h, sk_value positions) {
  const sk__decoder *d = b->d;
  const int64_t hd = d->head_dim, qn = d->heads * hd, kvn = d->kv_heads * hd, hid = d->hidden;
  const char *p = "model.layers.%lld.self_attn.";
  char f[NAME_MAX_LEN];
#define PROJ(what, rows, cols, bias_rows, has_bias, out_w, out_b)                                      \
  snprintf(f, sizeof f, "%s%s_proj.weight", p, what);                                                   \
  out_w = W(2, (int64_t[]){rows, cols}, f, (long long)l);                                               \
  out_b = NONE;                                                                                         \
  if (has_bias) {                                                                                       \
    snprintf(f, sizeof f, "%s%s_proj.bias", p, what);                                                   \
    out_b = W(1, (int64_t[]){bias_rows}, f, (long long)l);                                              \
  }
  sk_value wq, bq, wk, bk, wv, bv, wo, bo;
  PROJ("q", qn, hid, qn, d->qkv_bias, wq, bq);
  PROJ("k", kvn, hid, kvn, d->qkv_bias, wk, bk);
  PROJ("v", kvn, hid, kvn, d->qkv_bias, wv, bv);
  PROJ("o", hid, qn, hid, d->o_bias, wo, bo);
#undef PROJ
  sk_value q = linear(b, "q_proj", h, wq, bq), k = linear(b, "k_proj", h, wk, bk);
  if (d->qk_norm_full) {
    q = norm(b, "q_norm", q, NONE, GAMMA(qn, "model.layers.%lld.self_attn.q_norm.weight", (long long)l), NULL);
    k = norm(b, "k_norm", k, NONE, GAMMA(kvn, "model.layers.%lld.self_attn.k_norm.weight", (long long)l), NULL);
  }
  q = reshape(b, "q_heads", q, d->heads, hd);
  k = reshape(b, "k_heads", k, d->kv_heads, hd);
  sk_value v = reshape(b, "v_heads", linear(b, "v_proj", h, wv, bv), d->kv_heads, hd);
  if (d->qk_norm) {
    q = norm(b, "q_norm", q, NONE, GAMMA(hd, "model.layers.%lld.self_attn.q_norm.weight", (long long)l), NULL);
    k = norm(b, "k_norm", k, NONE, GAMMA(hd, "model.layers.%lld.self_attn.k_norm.weight", (long long)l), NULL);
  }
  const sk__rope *r = &d->rope;
  sk_attr rope[] = {SK_ATTR_INT("max_positions", b->max_context), SK_ATTR_INT("rotary_dim", r->rotary_dim ? r->rotary_dim : hd),
                    SK_ATTR_INT("layout", r->interleaved), SK_ATTR_FLOAT("theta", r->theta),
                    SK_ATTR_INT("scaling_type", r->scaling_type), SK_ATTR_FLOAT("factor", r->factor),
                    SK_ATTR_INT("original_max_positions", r->original_max_positions),
                    SK_ATTR_FLOAT("beta_fast", r->beta_fast), SK_ATTR_FLOAT("beta_slow", r->beta_slow),
                    SK_ATTR_FLOAT("mscale", r->mscale), SK_ATTR_FLOAT("mscale_all_dim", r->mscale_all_dim)};
  sk_op_input rin[] = {{"q", &q, 1}, {"k", &k, 1}, {"positions", &positions, 1}};
  sk_value qk[2] = {NONE, NONE};
  node(b, "rope", "rotary_embedding", rin, 3, rope, sizeof rope / sizeof rope[0], qk, 2);

  sk_value caches[2] = {NONE, NONE};
  for (int i = 0; i < 2 && ok(b); i++) {
    char name[64];
    snprintf(name, sizeof name, "layers.%lld.%s_cache", (long long)l, i ? "v" : "k");
    sk_status st = sk_graph_add_input(b->g, name, d->dtype, 3, (int64_t[]){b->max_context, d->kv_heads, hd}, &caches[i]);
    if (st != SK_STATUS_OK) failed(b, st);
    sk_value fresh = i ? v : qk[1];
    sk_op_input win[] = {{"cache", &caches[i], 1}, {"new", &fresh, 1}, {"positions", &positions, 1}};
    caches[i] = one(b, i ? "v_cache_write" : "k_cache_write", "kv_cache_write", win, 3, NULL, 0);
  }
  sk_attr aat[] = {SK_ATTR_INT("window", d->sliding_window)};
  sk_op_input ain[] = {{"q", &qk[0], 1}, {"k_cache", &caches[0], 1}, {"v_cache", &caches[1], 1},
                       {"positions", &positions, 1}};
  sk_value o = one(b, "attention", "attention", ain, 4, aat, 1);
  return linear(b, "o_proj", reshape(b, "o_rows", o, qn, 0), wo, bo);
}

static sk_value swiglu_of(sk__model_builder *b, const char *name, sk_value gate, sk_value up) {
  sk_value both[] = {gate, up};
  sk_op_input cin[] = {{"x", both, 2}};
  sk_attr last[] = {SK_ATTR_INT("dim", -1)};
  sk_value gu = one(b, "gate_up", "concat", cin, 1, last, 1);
  sk_op_input sin[] = {{"x", &gu, 1}};
  return one(b, name, "swiglu", sin, 1, NULL, 0);
}

static sk_value dense_mlp(sk__model_builder *b, int64_t l, sk_value h) {
  const sk__decoder *d = b->d;
  const int64_t hid = d->hidden, in = d->mlp_inter;
  sk_value g = linear(b, "gate_proj", h, W(2, (int64_t[]){in, hid}, "model.layers.%lld.mlp.gate_proj.weight", (long long)l), NONE);
  sk_value u = linear(b, "up_proj", h, W(2, (int64_t[]){in, hid}, "model.layers.%lld.mlp.up_proj.weight", (long long)l), NONE);
  sk_value a = swiglu_of(b, "mlp_act", g, u);
  return linear(b, "down_proj", a, W(2, (int64_t[]){hid, in}, "model.layers.%lld.mlp.down_proj.weight", (long long)l), NONE);
}

/* grouped_matmul of the routed rows by one [E, N, K] weight or E [N, K] ones (torch's layout). */
static sk_value experts_matmul(sk__model_builder *b, const char *name, sk_value rows, const sk_value *w, int64_t n_w,
                               sk_value ends) {
  sk_op_input in[] = {{"x", &rows, 1}, {"weight", w, (size_t)n_w}, {"group_list", &ends, 1}};
  sk_attr at[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3), SK_ATTR_INT("transpose_weight", 1)};
  return one(b, name, "grouped_matmul", in, 3, at, 3);
}

/* The routed experts of rows (moe_init_routing's), cumulative ends: fused
 * weights (transformers' in-memory experts.gate_up_proj [E, 2I, H],
 * experts.down_proj [E, H, I]) or one tensor per expert as checkpoints
 * store them (experts.J.{gate,up,down}_proj.weight). */
static sk_value experts(sk__model_builder *b, int64_t l, sk_value rows, sk_value ends) {
  const sk__decoder *d = b->d;
  const int64_t e = d->moe.experts, in = d->moe.inter, hid = d->hidden;
  char name[NAME_MAX_LEN];
  snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.gate_up_proj", (long long)l);
  sk_value gate_up;
  sk_status st = try_weight(b, name, d->dtype, 3, (int64_t[]){e, 2 * in, hid}, &gate_up);
  if (st == SK_STATUS_OK) {
    sk_value up = experts_matmul(b, "experts_up", rows, &gate_up, 1, ends);
    sk_op_input sin[] = {{"x", &up, 1}};
    sk_value a = one(b, "experts_act", "swiglu", sin, 1, NULL, 0);
    sk_value down = W(3, (int64_t[]){e, hid, in}, "model.layers.%lld.mlp.experts.down_proj", (long long)l);
    return experts_matmul(b, "experts_down", a, &down, 1, ends);
  }
  if (st != SK_STATUS_NOT_FOUND || e > 4096) {
    if (ok(b)) failed(b, sk__fail(SK_STATUS_UNSUPPORTED, "layer %lld: %lld experts: at most 4096", (long long)l, (long long)e));
    return NONE;
  }
  sk_value *w = calloc((size_t)(3 * e), sizeof *w);
  if (!w) {
    failed(b, sk__fail(SK_STATUS_OUT_OF_MEMORY, "layer %lld: the experts' list", (long long)l));
    return NONE;
  }
  for (int64_t j = 0; j < e && ok(b); j++) {
    const char *fmt = "model.layers.%lld.mlp.experts.%lld.%s_proj.weight";
    w[j] = W(2, (int64_t[]){in, hid}, fmt, (long long)l, (long long)j, "gate");
    w[e + j] = W(2, (int64_t[]){in, hid}, fmt, (long long)l, (long long)j, "up");
    w[2 * e + j] = W(2, (int64_t[]){hid, in}, fmt, (long long)l, (long long)j, "down");
  }
  sk_value g = experts_matmul(b, "experts_gate", rows, w, e, ends);
  sk_value u = experts_matmul(b, "experts_up", rows, w + e, e, ends);
  sk_value y = experts_matmul(b, "experts_down", swiglu_of(b, "experts_act", g, u), w + 2 * e, e, ends);
  free(w);
  return y;
}

/* The MoE block of h; with resid, resid + the block (moe_finalize_routing's skip). */
static sk_value moe_block(sk__model_builder *b, int64_t l, sk_value h, sk_value resid) {
  const sk__decoder *d = b->d;
  const int64_t e = d->moe.experts;
  /* The router as transformers runs it: logits in the model's dtype, softmax in fp32. */
  sk_value gate = W(2, (int64_t[]){e, d->hidden}, "model.layers.%lld.mlp.gate.weight", (long long)l);
  sk_value logits = linear(b, "router", h, gate, NONE);
  sk_op_input cin[] = {{"x", &logits, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value logits32 = one(b, "router_fp32", "cast", cin, 1, to32, 1);
  sk_op_input gin[] = {{"x", &logits32, 1}};
  sk_attr gat[] = {SK_ATTR_INT("k", d->moe.top_k), SK_ATTR_INT("renorm", d->moe.renorm)};
  sk_value gating[4] = {NONE, NONE, NONE, NONE};
  node(b, "gating", "moe_gating_topk_softmax", gin, 1, gat, 2, gating, 4);
  sk_value routing[4] = {NONE, NONE, NONE, NONE};
  sk_op_input rin[] = {{"x", &h, 1}, {"expert_idx", &gating[1], 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", e)};
  node(b, "dispatch", "moe_init_routing", rin, 2, rat, 1, routing, 4);
  sk_value rows = experts(b, l, routing[0], routing[2]);
  sk_op_input fin[] = {{"expanded_permuted_rows", &rows, 1}, {"expanded_src_to_dst_row", &routing[1], 1},
                       {"scales", &gating[0], 1}, {"export_for_source_row", &gating[1], 1}, {"skip1", &resid, 1}};
  sk_attr fat[] = {SK_ATTR_INT("drop_pad_mode", 2)};
  return one(b, "combine", "moe_finalize_routing", fin, 5, fat, 1);
}

static void scope(sk__model_builder *b, const char *name) {
  if (!ok(b)) return;
  sk_status st = name ? sk_graph_begin_scope(b->g, name, b->options) : sk_graph_end_scope(b->g);
  if (st != SK_STATUS_OK) failed(b, st);
}

static sk_value input(sk__model_builder *b, const char *name, sk_dtype dtype, int64_t cols) {
  sk_value v = NONE;
  if (!ok(b)) return v;
  sk_status st = sk_graph_add_input(b->g, name, dtype, cols ? 2 : 1, (int64_t[]){SK_DIM_DYNAMIC, cols}, &v);
  if (st != SK_STATUS_OK) failed(b, st);
  return v;
}

static void begin(sk__model_builder *b) {
  b->st = sk_graph_create(&b->g);
  if (ok(b)) b->st = sk_graph_set_max_tokens(b->g, b->max_tokens);
}

static void output(sk__model_builder *b, sk_value v, const char *name) {
  if (ok(b)) b->st = sk_graph_mark_output(b->g, v, name);
}

void sk__build_body(sk__model_builder *b) {
  const sk__decoder *d = b->d;
  const int64_t hid = d->hidden;
  begin(b);
  sk_value ids = input(b, "ids", SK_INT32, 0), positions = input(b, "positions", SK_INT32, 0);
  sk_value table = W(2, (int64_t[]){d->vocab, hid}, "model.embed_tokens.weight");
  sk_op_input ein[] = {{"table", &table, 1}, {"ids", &ids, 1}};
  sk_value resid = one(b, "embed", "embedding", ein, 2, NULL, 0), delta = NONE;
  for (int64_t l = 0; l < d->layers && ok(b); l++) {
    char name[32];
    snprintf(name, sizeof name, "layer%lld", (long long)l);
    scope(b, name);
    sk_value h = norm(b, "input_norm", resid, delta,
                      GAMMA(hid, "model.layers.%lld.input_layernorm.weight", (long long)l), &resid);
    sk_value a = attention_block(b, l, h, positions);
    h = norm(b, "post_attention_norm", resid, a,
             GAMMA(hid, "model.layers.%lld.post_attention_layernorm.weight", (long long)l), &resid);
    if (d->moe.experts && d->moe_layer[l]) {
      resid = moe_block(b, l, h, resid); /* the residual added in the combine */
      delta = NONE;
    } else {
      delta = dense_mlp(b, l, h);
    }
    scope(b, NULL);
  }
  sk_value y = norm(b, "final_norm", resid, delta, GAMMA(hid, "model.norm.weight"), NULL);
  output(b, y, "hidden");
}

void sk__build_head(sk__model_builder *b) {
  const sk__decoder *d = b->d;
  begin(b);
  sk_value h = input(b, "hidden", d->dtype, d->hidden);
  const char *name = d->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  sk_value w = W(2, (int64_t[]){d->vocab, d->hidden}, "%s", name);
  sk_value logits = linear(b, "lm_head", h, w, NONE);
  sk_op_input cin[] = {{"x", &logits, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  output(b, one(b, "logits_fp32", "cast", cin, 1, to32, 1), "logits");
}

sk_status sk__model_weight_dtype(sk_model_weight_fn lookup, void *user, sk_dtype *out) {
  sk_model_tensor t;
  memset(&t, 0, sizeof t);
  sk_status st = lookup(user, "model.embed_tokens.weight", &t);
  if (st == SK_STATUS_NOT_FOUND) return sk__fail(st, "weight model.embed_tokens.weight: missing");
  if (st != SK_STATUS_OK) return sk__fail_within(st, "weight model.embed_tokens.weight");
  if (t.dtype != SK_FP32 && t.dtype != SK_FP16 && t.dtype != SK_BF16)
    return sk__fail(SK_STATUS_INVALID_DTYPE, "weight model.embed_tokens.weight: %s: expected fp32, fp16 or bf16 (the "
                    "model's dtype)", sk_dtype_name(t.dtype));
  *out = t.dtype;
  return SK_STATUS_OK;
}

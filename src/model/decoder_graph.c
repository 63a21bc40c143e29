/* The body and head graphs of a decoder model (model_graph.h), from its
 * description (decoder.h): the embedding, each layer in its own scope
 * (input norm, attention, post-attention norm, MLP or MoE block; the
 * residual adds folded into add_rms_norm and the MoE combine), the final
 * norm; the LM head apart, so a forward computes it only for the rows
 * whose logits are asked for. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/model_graph.h"

#define NONE SK__MB_NONE
#define GAMMA(n, ...) sk__mb_weight(b, SK_DTYPE_INVALID, 1, (int64_t[]){n}, __VA_ARGS__)

static void scope(sk__model_builder *b, const char *name) {
  if (!sk__mb_ok(b)) return;
  sk_status st = name ? sk_graph_begin_scope(b->g, name, b->options) : sk_graph_end_scope(b->g);
  if (st != SK_STATUS_OK) sk__mb_failed(b, st);
}

static sk_value input(sk__model_builder *b, const char *name, sk_dtype dtype, int64_t cols) {
  sk_value v = NONE;
  if (!sk__mb_ok(b)) return v;
  sk_status st = sk_graph_add_input(b->g, name, dtype, cols ? 2 : 1, (int64_t[]){SK_DIM_DYNAMIC, cols}, &v);
  if (st != SK_STATUS_OK) sk__mb_failed(b, st);
  return v;
}

static void begin(sk__model_builder *b) {
  b->st = sk_graph_create(&b->g);
  b->quantized_of = NONE; /* a value of the graph before */
  if (sk__mb_ok(b)) b->st = sk_graph_set_max_tokens(b->g, b->max_tokens);
}

static void output(sk__model_builder *b, sk_value v, const char *name) {
  if (sk__mb_ok(b)) b->st = sk_graph_mark_output(b->g, v, name);
}

void sk__build_body(sk__model_builder *b) {
  const sk__decoder *d = b->d;
  const int64_t hid = d->hidden;
  begin(b);
  b->n_caches = 0;
  sk_value ids = input(b, "ids", SK_INT32, 0), positions = input(b, "positions", SK_INT32, 0);
  sk_value table = sk__mb_weight(b, d->dtype, 2, (int64_t[]){d->vocab, hid}, "model.embed_tokens.weight");
  sk_op_input ein[] = {{"table", &table, 1}, {"ids", &ids, 1}};
  sk_value resid = sk__mb_one(b, "embed", "embedding", ein, 2, NULL, 0), delta = NONE;
  for (int64_t l = 0; l < d->layers && sk__mb_ok(b); l++) {
    char name[32];
    snprintf(name, sizeof name, "layer%lld", (long long)l);
    scope(b, name);
    sk_value h = sk__mb_norm(b, "input_norm", resid, delta,
                             GAMMA(hid, "model.layers.%lld.input_layernorm.weight", (long long)l), &resid);
    sk_value a = d->mla ? sk__mb_mla(b, l, h, positions) : sk__mb_attention(b, l, h, positions);
    h = sk__mb_norm(b, "post_attention_norm", resid, a,
                    GAMMA(hid, "model.layers.%lld.post_attention_layernorm.weight", (long long)l), &resid);
    if (d->moe.experts && d->moe_layer[l]) {
      sk__moe_names n;
      sk__mb_moe_names(b, l, &n);
      resid = sk__mb_moe(b, &n, h, resid); /* the residual added in the combine */
      delta = NONE;
    } else {
      char prefix[64];
      snprintf(prefix, sizeof prefix, "model.layers.%lld.mlp.", (long long)l);
      delta = sk__mb_mlp(b, prefix, d->mlp_inter, h);
    }
    scope(b, NULL);
  }
  sk_value y = sk__mb_norm(b, "final_norm", resid, delta, GAMMA(hid, "model.norm.weight"), NULL);
  output(b, y, "hidden");
}

void sk__build_head(sk__model_builder *b) {
  const sk__decoder *d = b->d;
  begin(b);
  sk_value h = input(b, "hidden", d->dtype, d->hidden);
  const char *name = d->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  sk_value logits = sk__mb_proj(b, "lm_head", h, d->vocab, d->hidden, NONE, "%s", name);
  sk_op_input cin[] = {{"x", &logits, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  output(b, sk__mb_one(b, "logits_fp32", "cast", cin, 1, to32, 1), "logits");
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

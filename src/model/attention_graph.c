/* A layer's attention (model_graph.h): grouped-query attention over the
 * layer's k / v caches, or DeepSeek's latent attention over one latent
 * cache, each from the layer's normed input h to its o_proj output. */
#include <stdio.h>

#include "model/model_graph.h"

#define NONE SK__MB_NONE
#define W(...) sk__mb_weight(b, d->dtype, __VA_ARGS__)
#define GAMMA(n, ...) sk__mb_weight(b, SK_DTYPE_INVALID, 1, (int64_t[]){n}, __VA_ARGS__)
#define L (long long)l

/* self_attn.<what>_proj (its weight [rows, cols] and, with a bias, its bias) of h. */
static sk_value projection(sk__model_builder *b, int64_t l, const char *what, int64_t rows, int64_t cols,
                           bool bias, sk_value h) {
  const sk__decoder *d = b->d;
  sk_value bv = bias ? W(1, (int64_t[]){rows}, "model.layers.%lld.self_attn.%s_proj.bias", L, what) : NONE;
  char name[16];
  snprintf(name, sizeof name, "%s_proj", what);
  return sk__mb_proj(b, name, h, rows, cols, bv, "model.layers.%lld.self_attn.%s_proj.weight", L, what);
}

static sk_value cache_write(sk__model_builder *b, int64_t l, const char *kind, sk_value fresh, sk_value positions,
                            int64_t heads, int64_t dim) {
  char name[48];
  snprintf(name, sizeof name, "layers.%lld.%s_cache", L, kind);
  sk_value cache = sk__mb_cache(b, name, heads, dim);
  sk_op_input in[] = {{"cache", &cache, 1}, {"new", &fresh, 1}, {"positions", &positions, 1}};
  snprintf(name, sizeof name, "%s_cache_write", kind);
  return sk__mb_one(b, name, "kv_cache_write", in, 3, NULL, 0);
}

sk_value sk__mb_attention(sk__model_builder *b, int64_t l, sk_value h, sk_value positions) {
  const sk__decoder *d = b->d;
  const int64_t hd = d->head_dim, qn = d->heads * hd, kvn = d->kv_heads * hd;
  sk_value q = projection(b, l, "q", qn, d->hidden, d->qkv_bias, h);
  sk_value k = projection(b, l, "k", kvn, d->hidden, d->qkv_bias, h);
  sk_value v = projection(b, l, "v", kvn, d->hidden, d->qkv_bias, h);
  if (d->qk_norm_full) { /* OLMoE: over the whole projection, before the heads */
    q = sk__mb_norm(b, "q_norm", q, NONE, GAMMA(qn, "model.layers.%lld.self_attn.q_norm.weight", L), NULL);
    k = sk__mb_norm(b, "k_norm", k, NONE, GAMMA(kvn, "model.layers.%lld.self_attn.k_norm.weight", L), NULL);
  }
  q = sk__mb_reshape(b, "q_heads", q, d->heads, hd);
  k = sk__mb_reshape(b, "k_heads", k, d->kv_heads, hd);
  v = sk__mb_reshape(b, "v_heads", v, d->kv_heads, hd);
  if (d->qk_norm) { /* Qwen3: per head */
    q = sk__mb_norm(b, "q_norm", q, NONE, GAMMA(hd, "model.layers.%lld.self_attn.q_norm.weight", L), NULL);
    k = sk__mb_norm(b, "k_norm", k, NONE, GAMMA(hd, "model.layers.%lld.self_attn.k_norm.weight", L), NULL);
  }
  sk__mb_rope(b, &q, &k, positions, d->rope.rotary_dim);
  sk_value kc = cache_write(b, l, "k", k, positions, d->kv_heads, hd);
  sk_value vc = cache_write(b, l, "v", v, positions, d->kv_heads, hd);
  sk_attr at[] = {SK_ATTR_INT("window", d->sliding_window)};
  sk_op_input in[] = {{"q", &q, 1}, {"k_cache", &kc, 1}, {"v_cache", &vc, 1}, {"positions", &positions, 1}};
  sk_value o = sk__mb_one(b, "attention", "attention", in, 4, at, 1);
  return projection(b, l, "o", d->hidden, qn, d->o_bias, sk__mb_reshape(b, "o_rows", o, qn, 0));
}

/* DeepSeek-V2/V3 (transformers' DeepseekV2Attention): q from q_proj, or
 * q_a_proj -> q_a_layernorm -> q_b_proj, per head [nope | rope]; the
 * compressed kv_a_proj_with_mqa(h) = [latent (R) | k_pe (P)], the latent
 * normed by kv_a_layernorm; q_pe and k_pe rotated; the cache row is
 * [latent | k_pe]; mla_attention folds kv_b_proj into query and output. */
sk_value sk__mb_mla(sk__model_builder *b, int64_t l, sk_value h, sk_value positions) {
  const sk__decoder *d = b->d;
  const sk__mla *m = &d->mla_dims;
  const int64_t nh = d->heads, qk = m->nope + m->rope, r = m->kv_lora_rank;
  sk_value q;
  if (m->q_lora_rank) {
    sk_value qa = projection(b, l, "q_a", m->q_lora_rank, d->hidden, false, h);
    qa = sk__mb_norm(b, "q_a_layernorm", qa, NONE,
                     GAMMA(m->q_lora_rank, "model.layers.%lld.self_attn.q_a_layernorm.weight", L), NULL);
    q = projection(b, l, "q_b", nh * qk, m->q_lora_rank, false, qa);
  } else {
    q = projection(b, l, "q", nh * qk, d->hidden, false, h);
  }
  sk_value q_nope, q_pe, latent, k_pe;
  sk__mb_split(b, "q_split", sk__mb_reshape(b, "q_heads", q, nh, qk), m->nope, m->rope, &q_nope, &q_pe);
  sk_value ckv = sk__mb_proj(b, "kv_a_proj", h, r + m->rope, d->hidden, NONE,
                             "model.layers.%lld.self_attn.kv_a_proj_with_mqa.weight", L);
  sk__mb_split(b, "kv_split", ckv, r, m->rope, &latent, &k_pe);
  latent = sk__mb_norm(b, "kv_a_layernorm", latent, NONE,
                       GAMMA(r, "model.layers.%lld.self_attn.kv_a_layernorm.weight", L), NULL);
  k_pe = sk__mb_reshape(b, "k_pe_head", k_pe, 1, m->rope);
  sk__mb_rope(b, &q_pe, &k_pe, positions, 0);
  sk_value parts[] = {latent, sk__mb_reshape(b, "k_pe_rows", k_pe, m->rope, 0)};
  sk_op_input cin[] = {{"x", parts, 2}};
  sk_attr last[] = {SK_ATTR_INT("dim", -1)};
  sk_value row = sk__mb_reshape(b, "latent_row", sk__mb_one(b, "latent_pe", "concat", cin, 1, last, 1), 1, r + m->rope);
  sk_value cache = cache_write(b, l, "latent", row, positions, 1, r + m->rope);
  sk_value kv_b = W(2, (int64_t[]){nh * (m->nope + m->v_head_dim), r}, "model.layers.%lld.self_attn.kv_b_proj.weight", L);
  sk_op_input in[] = {{"q_nope", &q_nope, 1}, {"q_pe", &q_pe, 1}, {"latent_cache", &cache, 1},
                      {"positions", &positions, 1}, {"kv_b_weight", &kv_b, 1}};
  sk_attr at[] = {SK_ATTR_FLOAT("scale", m->scale)};
  sk_value o = sk__mb_one(b, "mla_attention", "mla_attention", in, 5, at, 1);
  const int64_t ov = nh * m->v_head_dim;
  return projection(b, l, "o", d->hidden, ov, false, sk__mb_reshape(b, "o_rows", o, ov, 0));
}

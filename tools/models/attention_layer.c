/* The attention scenarios (attention_layer.h): one attention (or
 * mla_attention) node in its own scope, the caches program inputs (a decode
 * step reads them whole, which is what its bandwidth floor counts). */
#include "attention_layer.h"

#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct preset {
  const char *name, *about;
  int64_t hq, hkv, d;
  int mla;                      /* an mla: preset (hq heads; hkv, d unused) */
  int64_t rank, rope, nope, vd; /* mla: kv_lora_rank, qk_rope / qk_nope / v head dims */
} preset;

static const preset presets[] = {
    {"qwen3-30b-a3b", "Qwen3-30B-A3B attention: 32 q heads / 4 kv heads, D 128, bf16 cache", 32, 4, 128, 0, 0, 0, 0, 0},
    {"tiny", "a tiny attention: 4 q heads / 2 kv heads, D 64, bf16 cache", 4, 2, 64, 0, 0, 0, 0, 0},
    {"deepseek-v2-lite", "DeepSeek-V2-Lite latent attention: 16 heads, kv_lora_rank 512, rope 64, nope 128, v 128, "
     "bf16 latent cache and kv_b_proj", 16, 1, 0, 1, 512, 64, 128, 128},
    {"tiny", "a tiny latent attention: 4 heads, kv_lora_rank 64, rope 16, nope 32, v 32, bf16", 4, 1, 0, 1, 64, 16,
     32, 32},
};

int skm_attn_parse(const char *name, skm_attention *out) {
  /* attention:... and mla:... share the rest of the name's grammar */
  const int mla = name && strncmp(name, "mla:", 4) == 0;
  if (!name || (!mla && strncmp(name, "attention:", 10) != 0)) return 0;
  char buf[128];
  if (snprintf(buf, sizeof buf, "%s", name + (mla ? 4 : 10)) >= (int)sizeof buf) return 0;
  char *mode = strchr(buf, ':');
  if (!mode) return 0;
  *mode++ = '\0';
  char *count = strchr(mode, ':');
  if (!count) return 0;
  *count++ = '\0';
  const preset *p = NULL;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (presets[i].mla == mla && strcmp(presets[i].name, buf) == 0) p = &presets[i];
  const int decode = strcmp(mode, "decode") == 0;
  const char *prefix = decode ? "ctx" : "t";
  if (!p || (!decode && strcmp(mode, "prefill") != 0) || strncmp(count, prefix, strlen(prefix)) != 0) return 0;
  char *end;
  long long n = strtoll(count + strlen(prefix), &end, 10);
  if (*end || end == count + strlen(prefix) || n < 1 || n > 1 << 20) return 0;
  *out = (skm_attention){.preset = p->name, .about = p->about, .hq = p->hq, .hkv = p->hkv, .d = p->d,
                         .t = decode ? 1 : n, .s = n, .decode = decode, .mla = mla, .rank = p->rank,
                         .rope = p->rope, .nope = p->nope, .vd = p->vd};
  return 1;
}

/* mla: q_nope, q_pe, the latent cache [S, 1, R + P] and positions are
 * inputs, kv_b_proj's weight a weight (a constant unless
 * --weights-as-inputs), as in a model. */
static void mla_graph(skm_builder *b, const skm_attention *a, const char *options) {
  sk_value qn = SK_VALUE_NONE, qpe = SK_VALUE_NONE, c = SK_VALUE_NONE, pos = SK_VALUE_NONE, w = SK_VALUE_NONE,
           o = SK_VALUE_NONE;
  skm_builder_input(b, "mla_q_nope", SK_BF16, 3, (int64_t[]){a->t, a->hq, a->nope}, &qn);
  skm_builder_input(b, "mla_q_pe", SK_BF16, 3, (int64_t[]){a->t, a->hq, a->rope}, &qpe);
  skm_builder_input(b, "mla_latent_cache", SK_BF16, 3, (int64_t[]){a->s, 1, a->rank + a->rope}, &c);
  skm_builder_input(b, "attn_positions", SK_INT64, 1, (int64_t[]){a->t}, &pos);
  skm_builder_input(b, "mla_kv_b_weight", SK_BF16, 2, (int64_t[]){a->hq * (a->nope + a->vd), a->rank}, &w);
  skm_builder_scope(b, "mla_attention", options);
  sk_op_input in[] = {{"q_nope", &qn, 1}, {"q_pe", &qpe, 1}, {"latent_cache", &c, 1}, {"positions", &pos, 1},
                      {"kv_b_weight", &w, 1}};
  skm_builder_node(b, "mla_attention", "mla_attention", in, 5, NULL, 0, &o, 1);
  skm_builder_scope(b, NULL, NULL);
  skm_builder_output(b, o, "o");
}

void skm_attn_graph(skm_builder *b, const skm_attention *a, const char *options) {
  if (a->mla) {
    mla_graph(b, a, options);
    return;
  }
  sk_value q = SK_VALUE_NONE, k = SK_VALUE_NONE, v = SK_VALUE_NONE, pos = SK_VALUE_NONE, o = SK_VALUE_NONE;
  skm_builder_input(b, "attn_q", SK_BF16, 3, (int64_t[]){a->t, a->hq, a->d}, &q);
  skm_builder_input(b, "attn_k_cache", SK_BF16, 3, (int64_t[]){a->s, a->hkv, a->d}, &k);
  skm_builder_input(b, "attn_v_cache", SK_BF16, 3, (int64_t[]){a->s, a->hkv, a->d}, &v);
  skm_builder_input(b, "attn_positions", SK_INT64, 1, (int64_t[]){a->t}, &pos);
  skm_builder_scope(b, "attention", options);
  sk_op_input in[] = {{"q", &q, 1}, {"k_cache", &k, 1}, {"v_cache", &v, 1}, {"positions", &pos, 1}};
  skm_builder_node(b, "attention", "attention", in, 4, NULL, 0, &o, 1);
  skm_builder_scope(b, NULL, NULL);
  skm_builder_output(b, o, "o");
}

void skm_attn_adjust_values(const skm_attention *a, skm_io *values) {
  skm_tensor *pos = skm_io_find_input(values, "attn_positions");
  if (!pos || pos->dtype != SK_INT64) return;
  for (int64_t i = 0; i < pos->numel; i++) ((int64_t *)pos->data)[i] = a->s - a->t + i;
}

double skm_attn_bytes(const skm_attention *a) {
  /* mla: the latent rows [c_kv, k_pe] once (every head reads the same
   * row), and kv_b_proj's bf16 weight once per step: its bytes, not those
   * of a wider copy the op may keep */
  if (a->mla)
    return 2.0 * (double)a->s * (double)(a->rank + a->rope) + 2.0 * (double)(a->hq * (a->nope + a->vd) * a->rank);
  /* every cache row is attended at least once (a decode step's one token
   * attends all s): K and V, 2 bytes a value */
  return 2.0 * (double)a->s * (double)(a->hkv * a->d) * 2.0;
}

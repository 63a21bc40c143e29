/* tiny_model.h: the tiny models' configs and weights (moved here from
 * test_model.c, which runs them; tiny_checkpoint.c writes them out). */
#include "tiny_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rng = 12345;
static float uniform(float scale) {
  rng = rng * 1664525u + 1013904223u;
  return ((float)(rng >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
}

static tiny_weight *add(tiny_store *s, const char *name, int rank, const int64_t *shape, float scale, float offset) {
  tiny_weight *w = &s->w[s->n++];
  snprintf(w->name, sizeof w->name, "%s", name);
  int64_t numel = 1;
  w->t.dtype = SK_BF16;
  w->t.rank = rank;
  for (int i = 0; i < rank; i++) numel *= (w->t.shape[i] = shape[i]);
  w->data = malloc((size_t)numel * 2);
  for (int64_t i = 0; i < numel; i++) w->data[i] = sk_fp32_to_bf16(offset + uniform(scale));
  w->t.data = w->data;
  return w;
}

sk_status tiny_lookup(void *user, const char *name, sk_model_tensor *out) {
  tiny_store *s = user;
  if (s->hide && strcmp(name, s->hide) == 0) return SK_STATUS_NOT_FOUND;
  if (s->per_expert && strstr(name, "experts.") && (strstr(name, "gate_up_proj") || strstr(name, "experts.down_proj")))
    return SK_STATUS_NOT_FOUND;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->w[i].name, name) == 0) {
      *out = s->w[i].t;
      if (s->wrong_shape && strcmp(name, s->wrong_shape) == 0) out->shape[0] += 1;
      return SK_STATUS_OK;
    }
  return SK_STATUS_NOT_FOUND;
}

void tiny_free_store(tiny_store *s) {
  for (int i = 0; i < s->n; i++) free(s->w[i].data);
  s->n = 0;
}

enum { V = TINY_V, H = 64, HEADS = 4, KV = 2, D = 16, INTER = 96, E = 4, MI = 32 };

const char *const TINY_QWEN3_MOE =
    "{\"model_type\": \"qwen3_moe\", \"vocab_size\": 96, \"hidden_size\": 64, \"num_hidden_layers\": 2,"
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 96,"
    " \"moe_intermediate_size\": 32, \"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"norm_topk_prob\": true,"
    " \"mlp_only_layers\": [1], \"rms_norm_eps\": 1e-6, \"hidden_act\": \"silu\", \"max_position_embeddings\": 64,"
    " \"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"tie_word_embeddings\": false}";

const char *const TINY_LLAMA =
    "{\"model_type\": \"llama\", \"vocab_size\": 96, \"hidden_size\": 64, \"num_hidden_layers\": 2,"
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 96, \"attention_bias\": true,"
    " \"rms_norm_eps\": 1e-5, \"hidden_act\": \"silu\", \"max_position_embeddings\": 64, \"rope_theta\": 500000.0,"
    " \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}, \"tie_word_embeddings\": true}";

static void attention_weights(tiny_store *s, int l, int bias, int qk_norm) {
  char n[96];
  const char *proj[] = {"q", "k", "v", "o"};
  const int64_t rows[] = {HEADS * D, KV * D, KV * D, H}, cols[] = {H, H, H, HEADS * D};
  for (int i = 0; i < 4; i++) {
    snprintf(n, sizeof n, "model.layers.%d.self_attn.%s_proj.weight", l, proj[i]);
    add(s, n, 2, (int64_t[]){rows[i], cols[i]}, 0.25f, 0);
    if (bias) {
      snprintf(n, sizeof n, "model.layers.%d.self_attn.%s_proj.bias", l, proj[i]);
      add(s, n, 1, (int64_t[]){rows[i]}, 0.1f, 0);
    }
  }
  for (int i = 0; qk_norm && i < 2; i++) {
    snprintf(n, sizeof n, "model.layers.%d.self_attn.%s_norm.weight", l, i ? "k" : "q");
    add(s, n, 1, (int64_t[]){D}, 0.2f, 1.0f);
  }
  snprintf(n, sizeof n, "model.layers.%d.input_layernorm.weight", l);
  add(s, n, 1, (int64_t[]){H}, 0.2f, 1.0f);
  snprintf(n, sizeof n, "model.layers.%d.post_attention_layernorm.weight", l);
  add(s, n, 1, (int64_t[]){H}, 0.2f, 1.0f);
}

static void dense_weights(tiny_store *s, int l) {
  char n[96];
  const char *proj[] = {"gate", "up", "down"};
  for (int i = 0; i < 3; i++) {
    snprintf(n, sizeof n, "model.layers.%d.mlp.%s_proj.weight", l, proj[i]);
    add(s, n, 2, i == 2 ? (int64_t[]){H, INTER} : (int64_t[]){INTER, H}, 0.2f, 0);
  }
}

/* Per-expert tensors, and the fused ones holding the same numbers. */
static void expert_weights(tiny_store *s, int l) {
  char n[96];
  snprintf(n, sizeof n, "model.layers.%d.mlp.gate.weight", l);
  add(s, n, 2, (int64_t[]){E, H}, 0.5f, 0);
  snprintf(n, sizeof n, "model.layers.%d.mlp.experts.gate_up_proj", l);
  tiny_weight *gu = add(s, n, 3, (int64_t[]){E, 2 * MI, H}, 0, 0);
  snprintf(n, sizeof n, "model.layers.%d.mlp.experts.down_proj", l);
  tiny_weight *down = add(s, n, 3, (int64_t[]){E, H, MI}, 0, 0);
  for (int j = 0; j < E; j++) {
    const char *proj[] = {"gate", "up", "down"};
    for (int i = 0; i < 3; i++) {
      snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%d.%s_proj.weight", l, j, proj[i]);
      tiny_weight *w = add(s, n, 2, i == 2 ? (int64_t[]){H, MI} : (int64_t[]){MI, H}, 0.2f, 0);
      uint16_t *dst = i == 2 ? down->data + (size_t)j * H * MI : gu->data + ((size_t)j * 2 + (size_t)i) * MI * H;
      memcpy(dst, w->data, (size_t)MI * H * 2);
    }
  }
}

void tiny_make_store(tiny_store *s, int moe) {
  memset(s, 0, sizeof *s);
  rng = moe ? 777 : 4242;
  add(s, "model.embed_tokens.weight", 2, (int64_t[]){V, H}, 1.0f, 0);
  for (int l = 0; l < 2; l++) {
    attention_weights(s, l, !moe, moe);
    if (moe && l == 0) expert_weights(s, l);
    else dense_weights(s, l);
  }
  add(s, "model.norm.weight", 1, (int64_t[]){H}, 0.2f, 1.0f);
  if (moe) add(s, "lm_head.weight", 2, (int64_t[]){V, H}, 0.25f, 0);
}

int tiny_is_fused_expert(const char *name) {
  const size_t n = strlen(name), suffix = strlen(".weight");
  return strstr(name, "mlp.experts.") && (n < suffix || strcmp(name + n - suffix, ".weight") != 0);
}

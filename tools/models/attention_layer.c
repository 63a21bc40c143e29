/* The attention scenarios (attention_layer.h): one attention node in its
 * own scope, the caches program inputs (a decode step reads them whole,
 * which is what its bandwidth floor counts). */
#include "attention_layer.h"

#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct preset {
  const char *name, *about;
  int64_t hq, hkv, d;
} preset;

static const preset presets[] = {
    {"qwen3-30b-a3b", "Qwen3-30B-A3B attention: 32 q heads / 4 kv heads, D 128, bf16 cache", 32, 4, 128},
    {"tiny", "a tiny attention: 4 q heads / 2 kv heads, D 64, bf16 cache", 4, 2, 64},
};

int skm_attn_parse(const char *name, skm_attention *out) {
  if (!name || strncmp(name, "attention:", 10) != 0) return 0;
  char buf[128];
  if (snprintf(buf, sizeof buf, "%s", name + 10) >= (int)sizeof buf) return 0;
  char *mode = strchr(buf, ':');
  if (!mode) return 0;
  *mode++ = '\0';
  char *count = strchr(mode, ':');
  if (!count) return 0;
  *count++ = '\0';
  const preset *p = NULL;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, buf) == 0) p = &presets[i];
  const int decode = strcmp(mode, "decode") == 0;
  const char *prefix = decode ? "ctx" : "t";
  if (!p || (!decode && strcmp(mode, "prefill") != 0) || strncmp(count, prefix, strlen(prefix)) != 0) return 0;
  char *end;
  long long n = strtoll(count + strlen(prefix), &end, 10);
  if (*end || end == count + strlen(prefix) || n < 1 || n > 1 << 20) return 0;
  *out = (skm_attention){.preset = p->name, .about = p->about, .hq = p->hq, .hkv = p->hkv, .d = p->d,
                         .t = decode ? 1 : n, .s = n, .decode = decode};
  return 1;
}

void skm_attn_graph(skm_builder *b, const skm_attention *a, const char *options) {
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
  /* every cache row is attended at least once (a decode step's one token
   * attends all s): K and V, 2 bytes a value */
  return 2.0 * (double)a->s * (double)(a->hkv * a->d) * 2.0;
}

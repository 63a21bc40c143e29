/* The config.json readers of family.h, and what the Llama-like families
 * share. Numbers are checked to be integers where sizes are meant (JSON
 * has one number type) and within bounds the builder can hold. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/family.h"

static const cJSON *member(const cJSON *c, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

sk_status sk__cfg_int(const cJSON *c, const char *key, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
  const cJSON *v = member(c, key);
  if (!v) {
    if (dflt == SK__REQUIRED)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s: missing (an integer is required)", key);
    *out = dflt;
    return SK_STATUS_OK;
  }
  const double x = v->valuedouble;
  if (!cJSON_IsNumber(v) || x != floor(x) || fabs(x) > 9007199254740992.0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s: expected an integer", key);
  if (x < (double)lo || x > (double)hi)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s = %.17g: expected an integer in [%lld, %lld]", key, x,
                    (long long)lo, (long long)hi);
  *out = (int64_t)x;
  return SK_STATUS_OK;
}

sk_status sk__cfg_float(const cJSON *c, const char *key, double dflt, double lo, double hi, double *out) {
  const cJSON *v = member(c, key);
  if (!v) {
    if (isnan(dflt)) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s: missing (a number is required)", key);
    *out = dflt;
    return SK_STATUS_OK;
  }
  if (!cJSON_IsNumber(v)) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s: expected a number", key);
  if (!(v->valuedouble >= lo && v->valuedouble <= hi))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s = %.17g: expected a number in [%g, %g]", key,
                    v->valuedouble, lo, hi);
  *out = v->valuedouble;
  return SK_STATUS_OK;
}

sk_status sk__cfg_bool(const cJSON *c, const char *key, bool dflt, bool *out) {
  const cJSON *v = member(c, key);
  if (!v) {
    *out = dflt;
    return SK_STATUS_OK;
  }
  if (!cJSON_IsBool(v)) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s: expected true or false", key);
  *out = cJSON_IsTrue(v);
  return SK_STATUS_OK;
}

sk_status sk__cfg_string(const cJSON *c, const char *key, const char **out) {
  const cJSON *v = member(c, key);
  *out = NULL;
  if (!v) return SK_STATUS_OK;
  if (!cJSON_IsString(v)) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: %s: expected a string", key);
  *out = v->valuestring;
  return SK_STATUS_OK;
}

bool sk__word_in_list(const char *word, const char *list) {
  const size_t n = strlen(word);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ' ');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, word, n) == 0) return true;
    p += len + (end != NULL);
  }
  return false;
}

sk_status sk__cfg_expect(const cJSON *c, const char *key, const char *accepted) {
  const char *s;
  SK_RETURN_IF_ERROR(sk__cfg_string(c, key, &s));
  if (s && !sk__word_in_list(s, accepted))
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: %s = \"%s\": not supported (supported: %s)", key, s, accepted);
  return SK_STATUS_OK;
}

/* RoPE: transformers 5 writes rope_parameters {rope_type, rope_theta,
 * factor, ...}; earlier configs rope_theta and rope_scaling {type or
 * rope_type, factor, ...}. */
static sk_status read_rope(const cJSON *c, sk__rope *r) {
  const cJSON *params = member(c, "rope_parameters");
  const cJSON *scaling = params ? params : member(c, "rope_scaling");
  if (params && !cJSON_IsObject(params))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: rope_parameters: expected an object");
  if (scaling && !cJSON_IsObject(scaling))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: rope_scaling: expected an object or null");
  SK_RETURN_IF_ERROR(sk__cfg_float(params ? params : c, "rope_theta", 10000.0, 1.0000001, 1e12, &r->theta));
  const char *type = NULL;
  if (scaling) {
    SK_RETURN_IF_ERROR(sk__cfg_string(scaling, "rope_type", &type));
    if (!type) SK_RETURN_IF_ERROR(sk__cfg_string(scaling, "type", &type));
  }
  r->factor = 1.0;
  r->beta_fast = 32.0, r->beta_slow = 1.0;
  if (!type || strcmp(type, "default") == 0) return SK_STATUS_OK;
  if (strcmp(type, "linear") == 0) r->scaling_type = 1;
  else if (strcmp(type, "yarn") == 0) r->scaling_type = 2;
  else
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: rope type \"%s\": not supported (supported: default linear yarn)",
                    type);
  SK_RETURN_IF_ERROR(sk__cfg_float(scaling, "factor", NAN, 1.0, 1e6, &r->factor));
  if (r->scaling_type == 2) {
    int64_t orig;
    SK_RETURN_IF_ERROR(sk__cfg_int(scaling, "original_max_position_embeddings", SK__REQUIRED, 1, 1 << 24, &orig));
    r->original_max_positions = orig;
    SK_RETURN_IF_ERROR(sk__cfg_float(scaling, "beta_fast", 32.0, -1e6, 1e6, &r->beta_fast));
    SK_RETURN_IF_ERROR(sk__cfg_float(scaling, "beta_slow", 1.0, -1e6, 1e6, &r->beta_slow));
    SK_RETURN_IF_ERROR(sk__cfg_float(scaling, "mscale", 0.0, 0.0, 1e6, &r->mscale));
    SK_RETURN_IF_ERROR(sk__cfg_float(scaling, "mscale_all_dim", 0.0, 0.0, 1e6, &r->mscale_all_dim));
  }
  return SK_STATUS_OK;
}

sk_status sk__describe_common(const cJSON *c, sk__decoder *d) {
  SK_RETURN_IF_ERROR(sk__cfg_expect(c, "hidden_act", "silu"));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "vocab_size", SK__REQUIRED, 1, (int64_t)1 << 24, &d->vocab));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "hidden_size", SK__REQUIRED, 16, (int64_t)1 << 20, &d->hidden));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_hidden_layers", SK__REQUIRED, 1, SK__MODEL_MAX_LAYERS, &d->layers));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_attention_heads", SK__REQUIRED, 1, 4096, &d->heads));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "intermediate_size", 0, 0, (int64_t)1 << 24, &d->mlp_inter));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "max_position_embeddings", 4096, 1, (int64_t)1 << 24, &d->max_positions));
  SK_RETURN_IF_ERROR(sk__cfg_float(c, "rms_norm_eps", 1e-6, 0.0, 1.0, &d->eps));
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "tie_word_embeddings", false, &d->tie_embeddings));
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "attention_bias", false, &d->qkv_bias));
  return read_rope(c, &d->rope);
}

sk_status sk__describe_llama_like(const cJSON *c, sk__decoder *d) {
  SK_RETURN_IF_ERROR(sk__describe_common(c, d));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_key_value_heads", d->heads, 1, d->heads, &d->kv_heads));
  if (d->heads % d->kv_heads)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "config.json: num_attention_heads = %lld: expected a multiple of num_key_value_heads = %lld",
                    (long long)d->heads, (long long)d->kv_heads);
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "head_dim", d->hidden / d->heads, d->moe_only ? 1 : 16, 512, &d->head_dim));
  if (d->head_dim % 16 && !d->moe_only)
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: head_dim = %lld: the attention op takes multiples of 16",
                    (long long)d->head_dim);
  return SK_STATUS_OK;
}

sk_status sk__describe_moe(const cJSON *c, sk__decoder *d, const char *inter_key, bool renorm_default) {
  /* transformers 5 names the expert count num_local_experts, 4 num_experts */
  int64_t experts = 0;
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_experts", 0, 0, 1 << 16, &experts));
  if (!experts) SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_local_experts", SK__REQUIRED, 1, 1 << 16, &experts));
  d->moe.experts = experts;
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_experts_per_tok", SK__REQUIRED, 1, experts, &d->moe.top_k));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, inter_key, SK__REQUIRED, 1, (int64_t)1 << 24, &d->moe.inter));
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "norm_topk_prob", renorm_default, &d->moe.renorm));
  d->moe.router = SK__ROUTER_SOFTMAX;
  d->moe.weights_rounded = true; /* transformers' Qwen3-MoE router: router_top_value.to(logits' dtype) */
  d->moe.scaling = 1.0;
  for (int64_t i = 0; i < d->layers; i++) d->moe_layer[i] = true;
  return SK_STATUS_OK;
}

/*
 * family.h — a model family: a config.json model_type and how its config
 * fills the decoder description (decoder.h). Each family is one file
 * (family_*.c) defining an sk__family; families.c lists them. The config
 * readers below fail naming the key, its value and what is accepted.
 */
#ifndef SK_MODEL_FAMILY_H
#define SK_MODEL_FAMILY_H

#include <cjson/cJSON.h>

#include "model/decoder.h"

typedef struct sk__family {
  const char *model_types;  /* the model_type values it takes, space-separated */
  /* Fills d (zeroed, family set) from the config; an error names the field. */
  sk_status (*describe)(const cJSON *config, sk__decoder *d);
} sk__family;

/* config.json's text into d (zeroed) through its family (model.c); family
 * (family_size bytes) receives the model_type d->family then points to.
 * Errors name the field. */
sk_status sk__model_describe(const char *json, sk__decoder *d, char *family, size_t family_size);

/* The family of a model_type; NULL when none takes it. */
const sk__family *sk__family_find(const char *model_type);
/* "llama, mistral, ...": every model_type, for messages. */
const char *sk__family_names(void);

/* Whether word is one of the space-separated words of list. */
bool sk__word_in_list(const char *word, const char *list);

/* ---- config readers (an absent or null key takes the default where one is given) ---- */
#define SK__REQUIRED INT64_MIN
sk_status sk__cfg_int(const cJSON *c, const char *key, int64_t dflt, int64_t lo, int64_t hi, int64_t *out);
sk_status sk__cfg_float(const cJSON *c, const char *key, double dflt, double lo, double hi, double *out);
sk_status sk__cfg_bool(const cJSON *c, const char *key, bool dflt, bool *out);
/* A string member, NULL when absent or null; an error when another type. */
sk_status sk__cfg_string(const cJSON *c, const char *key, const char **out);
/* key must be absent, null, or equal one of the space-separated values. */
sk_status sk__cfg_expect(const cJSON *c, const char *key, const char *accepted);

/* What the Llama-like families share: sizes, heads, norms, RoPE
 * (rope_parameters, or rope_theta and rope_scaling), silu, tied
 * embeddings, attention_bias. The caller adds its own fields. */
sk_status sk__describe_llama_like(const cJSON *c, sk__decoder *d);
/* The same without the grouped-query heads (num_key_value_heads, head_dim). */
sk_status sk__describe_common(const cJSON *c, sk__decoder *d);
/* The routed experts: num_experts (or transformers 5's num_local_experts),
 * num_experts_per_tok, the intermediate size under inter_key, and
 * norm_topk_prob (default renorm_default); every layer a MoE layer. */
sk_status sk__describe_moe(const cJSON *c, sk__decoder *d, const char *inter_key, bool renorm_default);

#endif

/* sk_moe_block (superkernel_model.h): one MoE block on its own, built by
 * the model builder's own MoE block (ffn_graph.c's sk__mb_moe) from a
 * description of the block rather than of a model: superkernel.optimize's
 * per-block path hands its blocks here, so a block has one builder
 * whether it runs inside a model or alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "model/family.h"
#include "model/model_graph.h"

#define DEFAULT_MAX_TOKENS 4096 /* the per-block path's: a prompt of up to 4096 tokens in one run */

struct sk_moe_block {
  sk__decoder d;
  char shared_prefix[64];
  char about[256];
  int64_t max_tokens;
  size_t row_bytes;        /* one token's x or y */
  sk_program *program;     /* run with buffers by index: nothing bound between runs (a caller's y may
                              reuse the memory of its last x) */
  sk__weight_store store;  /* w8a8's int8 copies */
};

static sk_status read_dtype(const cJSON *c, sk_dtype *out) {
  const char *s;
  SK_RETURN_IF_ERROR(sk__cfg_string(c, "dtype", &s));
  static const struct { const char *name; sk_dtype dtype; } names[] = {
      {"bfloat16", SK_BF16}, {"float16", SK_FP16}, {"float32", SK_FP32}};
  for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) return *out = names[i].dtype, SK_STATUS_OK;
  return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: dtype%s%s%s: expected \"bfloat16\", \"float16\" or "
                  "\"float32\"", s ? " = \"" : ": missing", s ? s : "", s ? "\"" : "");
}

/* The block's description (the keys superkernel_model.h lists) into blk->d. */
static sk_status describe(const cJSON *c, sk_moe_block *blk) {
  sk__decoder *d = &blk->d;
  sk__moe *m = &d->moe;
  d->family = "MoE block";
  d->layers = 1;
  SK_RETURN_IF_ERROR(read_dtype(c, &d->dtype));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "hidden_size", SK__REQUIRED, 1, 1 << 20, &d->hidden));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_experts", SK__REQUIRED, 1, 1 << 16, &m->experts));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "num_experts_per_tok", SK__REQUIRED, 1, m->experts, &m->top_k));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "moe_intermediate_size", SK__REQUIRED, 1, (int64_t)1 << 24, &m->inter));
  SK_RETURN_IF_ERROR(sk__cfg_expect(c, "router", "softmax sigmoid"));
  const char *router;
  SK_RETURN_IF_ERROR(sk__cfg_string(c, "router", &router));
  const bool sigmoid = router && strcmp(router, "sigmoid") == 0;
  m->router = sigmoid ? SK__ROUTER_SIGMOID_GROUPED : SK__ROUTER_SOFTMAX;
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "norm_topk_prob", false, &m->renorm));
  if (sigmoid && !m->renorm)
    return sk__fail(SK_STATUS_UNSUPPORTED, "config.json: router \"sigmoid\" with norm_topk_prob false: the sigmoid "
                    "gating always renormalizes");
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "router_logits_fp32", false, &m->router_fp32));
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "router_weights_rounded", false, &m->weights_rounded));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "n_group", 1, 1, m->experts, &m->groups));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "topk_group", m->groups, 1, m->groups, &m->topk_group));
  if (m->experts % m->groups)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: n_group = %lld: expected a divisor of the %lld experts",
                    (long long)m->groups, (long long)m->experts);
  if (m->top_k > m->topk_group * (m->experts / m->groups))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: num_experts_per_tok = %lld: more than the %lld experts "
                    "of topk_group groups", (long long)m->top_k, (long long)(m->topk_group * (m->experts / m->groups)));
  SK_RETURN_IF_ERROR(sk__cfg_float(c, "routed_scaling_factor", 1.0, 0.0, 1e6, &m->scaling));
  SK_RETURN_IF_ERROR(sk__cfg_int(c, "shared_intermediate_size", 0, 0, (int64_t)1 << 24, &m->shared_inter));
  const char *prefix;
  SK_RETURN_IF_ERROR(sk__cfg_string(c, "shared_prefix", &prefix));
  if (snprintf(blk->shared_prefix, sizeof blk->shared_prefix, "%s", prefix ? prefix : "shared_experts") >=
      (int)sizeof blk->shared_prefix)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: shared_prefix: longer than %zu bytes",
                    sizeof blk->shared_prefix - 1);
  m->shared_prefix = blk->shared_prefix;
  SK_RETURN_IF_ERROR(sk__cfg_bool(c, "shared_gate", false, &m->shared_gate));
  return sk__cfg_bool(c, "experts_transposed", false, &m->experts_transposed);
}

static sk_status parse(const char *json, sk_moe_block *blk) {
  cJSON *c = cJSON_Parse(json);
  if (!c) {
    const char *at = cJSON_GetErrorPtr();
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: not valid JSON (at byte %lld)",
                    at ? (long long)(at - json) : -1LL);
  }
  sk_status st = cJSON_IsObject(c) ? describe(c, blk)
                                   : sk__fail(SK_STATUS_INVALID_ARGUMENT, "config.json: expected an object");
  cJSON_Delete(c);
  return st;
}

/* x [T, H] -> y [T, H] in one scope. */
static void build(sk__model_builder *b) {
  const sk__decoder *d = b->d;
  b->st = sk_graph_create(&b->g);
  b->quantized_of = SK__MB_NONE;
  if (sk__mb_ok(b)) b->st = sk_graph_set_max_tokens(b->g, b->max_tokens);
  sk_value x = SK__MB_NONE;
  if (sk__mb_ok(b))
    b->st = sk_graph_add_input(b->g, "x", d->dtype, 2, (int64_t[]){SK_DIM_DYNAMIC, d->hidden}, &x);
  if (sk__mb_ok(b)) b->st = sk_graph_begin_scope(b->g, "moe", b->options);
  sk__moe_names n = {.prefix = "", .proj = {"gate_proj", "up_proj", "down_proj"}};
  sk_value y = sk__mb_moe(b, &n, x, SK__MB_NONE);
  if (sk__mb_ok(b)) b->st = sk_graph_end_scope(b->g);
  if (sk__mb_ok(b)) b->st = sk_graph_mark_output(b->g, y, "y");
}

static void about(sk_moe_block *blk, bool w8a8) {
  const sk__moe *m = &blk->d.moe;
  char shared[96] = "";
  if (m->shared_inter)
    snprintf(shared, sizeof shared, " + shared experts (%lld wide%s)", (long long)m->shared_inter,
             m->shared_gate ? ", gated" : "");
  snprintf(blk->about, sizeof blk->about, "%lld experts (H %lld, I %lld), top-%lld %s router%s, %s%s",
           (long long)m->experts, (long long)blk->d.hidden, (long long)m->inter, (long long)m->top_k,
           m->router == SK__ROUTER_SIGMOID_GROUPED ? "sigmoid" : "softmax", shared, sk_dtype_name(blk->d.dtype),
           w8a8 ? ", w8a8" : "");
}

sk_status sk_moe_block_create(const sk_model_config *cfg, sk_moe_block **block_out) {
  sk__clear_error();
  if (!block_out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_moe_block_create: block_out is NULL");
  *block_out = NULL;
  if (!cfg || !cfg->config_json || !cfg->weight)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_moe_block_create: %s is NULL",
                    !cfg ? "cfg" : !cfg->config_json ? "cfg->config_json" : "cfg->weight");
  if (cfg->struct_size != 0 && cfg->struct_size != sizeof *cfg)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_moe_block_create: cfg->struct_size %zu: expected %zu or 0",
                    cfg->struct_size, sizeof *cfg);
  if (cfg->max_tokens < 0 || cfg->max_tokens > (1 << 16))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_moe_block_create: max_tokens %lld: expected 0 (the default, "
                    "%d) or in [1, 65536]", (long long)cfg->max_tokens, DEFAULT_MAX_TOKENS);
  const bool w8a8 = cfg->quantize && strcmp(cfg->quantize, "w8a8") == 0;
  if (cfg->quantize && *cfg->quantize && !w8a8)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_moe_block_create: quantize \"%s\": expected NULL, \"\" or "
                    "\"w8a8\"", cfg->quantize);
  sk_moe_block *blk = calloc(1, sizeof *blk);
  if (!blk) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_moe_block_create: out of memory");
  blk->max_tokens = cfg->max_tokens ? cfg->max_tokens : DEFAULT_MAX_TOKENS;
  sk_status st = parse(cfg->config_json, blk);
  if (st == SK_STATUS_OK) {
    blk->row_bytes = (size_t)blk->d.hidden * sk_dtype_size(blk->d.dtype);
    sk__model_builder b = {.d = &blk->d, .weight = cfg->weight, .weight_user = cfg->weight_user,
                           .max_tokens = blk->max_tokens, .options = cfg->options, .w8a8 = w8a8,
                           .store = &blk->store};
    build(&b);
    st = b.st;
    if (st == SK_STATUS_OK) {
      sk_compile_config cc = {.struct_size = sizeof cc, .team = cfg->team, .executor = cfg->executor,
                              .numerics = cfg->numerics}; /* (no profile: a block has no profile report) */
      st = sk_compile(b.g, &cc, &blk->program);
    }
    sk_graph_destroy(b.g);
    free(b.scratch);
    sk__weight_store_page_out(&blk->store); /* packed now: one copy stays resident */
  }
  if (st != SK_STATUS_OK) {
    sk_moe_block_destroy(blk);
    return sk__fail_within(st, "sk_moe_block_create");
  }
  about(blk, w8a8);
  *block_out = blk;
  return SK_STATUS_OK;
}

void sk_moe_block_destroy(sk_moe_block *blk) {
  if (!blk) return;
  sk_program_destroy(blk->program);
  sk__weight_store_release(&blk->store);
  free(blk);
}

const char *sk_moe_block_about(const sk_moe_block *blk) { return blk ? blk->about : ""; }

sk_status sk_moe_block_run(sk_moe_block *blk, sk_team *team, const void *x, void *y, int64_t tokens) {
  sk__clear_error();
  if (!blk || tokens < 0 || (tokens > 0 && (!x || !y)))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_moe_block_run: %s",
                    !blk ? "block is NULL" : tokens < 0 ? "tokens < 0" : !x ? "x is NULL" : "y is NULL");
  sk_status st = SK_STATUS_OK;
  for (int64_t t0 = 0; t0 < tokens && st == SK_STATUS_OK; t0 += blk->max_tokens) { /* rows are independent */
    const int64_t c = tokens - t0 < blk->max_tokens ? tokens - t0 : blk->max_tokens;
    const size_t at = (size_t)t0 * blk->row_bytes, bytes = (size_t)c * blk->row_bytes;
    const sk_buffer in = {.data = (char *)(uintptr_t)x + at, .bytes = bytes}; /* read only */
    const sk_buffer out = {.data = (char *)y + at, .bytes = bytes};
    st = sk_program_run_by_index(blk->program, team, &in, 1, &out, 1); /* runs of one program take turns */
  }
  return st;
}

/* ---- a model's MoE layer as a block's description ---- */

static const char *dtype_word(const cJSON *config) {
  static const char *const words[] = {"bfloat16", "float16", "float32"};
  for (int k = 0; k < 2; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, k ? "dtype" : "torch_dtype");
    for (size_t i = 0; cJSON_IsString(v) && i < 3; i++)
      if (strcmp(v->valuestring, words[i]) == 0) return words[i];
  }
  return NULL;
}

static sk_status description_of(const sk__decoder *d, const char *dtype, char **json_out) {
  const sk__moe *m = &d->moe;
  cJSON *o = cJSON_CreateObject();
  bool ok = o != NULL;
  if (ok && dtype) ok = cJSON_AddStringToObject(o, "dtype", dtype) != NULL;
  const struct { const char *key; double value; } numbers[] = {
      {"hidden_size", (double)d->hidden}, {"num_experts", (double)m->experts},
      {"num_experts_per_tok", (double)m->top_k}, {"moe_intermediate_size", (double)m->inter},
      {"n_group", (double)(m->groups ? m->groups : 1)}, {"topk_group", (double)(m->topk_group ? m->topk_group : 1)},
      {"routed_scaling_factor", m->scaling}, {"shared_intermediate_size", (double)m->shared_inter}};
  for (size_t i = 0; ok && i < sizeof numbers / sizeof numbers[0]; i++)
    ok = cJSON_AddNumberToObject(o, numbers[i].key, numbers[i].value) != NULL;
  if (ok) ok = cJSON_AddStringToObject(o, "router", m->router == SK__ROUTER_SIGMOID_GROUPED ? "sigmoid" : "softmax");
  const struct { const char *key; bool value; } flags[] = {
      {"norm_topk_prob", m->renorm}, {"router_logits_fp32", m->router_fp32},
      {"router_weights_rounded", m->weights_rounded}, {"shared_gate", m->shared_gate}};
  for (size_t i = 0; ok && i < sizeof flags / sizeof flags[0]; i++)
    ok = cJSON_AddBoolToObject(o, flags[i].key, flags[i].value) != NULL;
  if (ok && m->shared_inter) ok = cJSON_AddStringToObject(o, "shared_prefix", m->shared_prefix) != NULL;
  char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  /* a copy of our own: sk_free's (free), whatever cJSON allocates with */
  *json_out = text ? malloc(strlen(text) + 1) : NULL;
  if (*json_out) memcpy(*json_out, text, strlen(text) + 1);
  cJSON_free(text);
  return *json_out ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_moe_block_description: out of memory");
}

sk_status sk_model_moe_block_description(const char *config_json, int64_t layer, char **json_out, int64_t *layer_out) {
  sk__clear_error();
  if (!config_json || !json_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_moe_block_description: %s is NULL",
                    config_json ? "json_out" : "config_json");
  *json_out = NULL;
  sk__decoder *d = calloc(1, sizeof *d);
  if (!d) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_model_moe_block_description: out of memory");
  char family[64];
  d->moe_only = true;
  sk_status st = sk__model_describe(config_json, d, family, sizeof family);
  if (st == SK_STATUS_OK && !d->moe.experts)
    st = sk__fail(SK_STATUS_UNSUPPORTED, "config.json: model_type \"%s\": a dense model (no MoE layer)", family);
  if (st == SK_STATUS_OK && layer >= d->layers)
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "layer %lld: the model has %lld layers", (long long)layer,
                  (long long)d->layers);
  if (st == SK_STATUS_OK && layer >= 0 && !d->moe_layer[layer])
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "layer %lld is not a MoE layer (the %s config makes it dense)",
                  (long long)layer, family);
  for (int64_t l = 0; st == SK_STATUS_OK && layer < 0 && l < d->layers; l++)
    if (d->moe_layer[l]) layer = l;
  if (st == SK_STATUS_OK && layer < 0)
    st = sk__fail(SK_STATUS_UNSUPPORTED, "config.json: none of its %lld layers is a MoE layer", (long long)d->layers);
  if (st == SK_STATUS_OK) {
    cJSON *c = cJSON_Parse(config_json);
    st = description_of(d, dtype_word(c), json_out);
    cJSON_Delete(c);
  }
  if (st == SK_STATUS_OK && layer_out) *layer_out = layer;
  free(d);
  return st;
}

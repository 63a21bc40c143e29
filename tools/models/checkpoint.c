/*
 * checkpoint.c — checkpoint.h: config.json to a moe-layer description, the
 * layer's tensors checked when opening (so a run never starts on a
 * checkpoint it cannot finish), then converted into the model's weights.
 */
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "superkernel_checkpoint.h"

typedef enum family { QWEN3_MOE, DEEPSEEK_V3, DEEPSEEK_V2 } family;

struct skm_checkpoint {
  sk_checkpoint *files; /* the directory, read by the library */
  skm_moe_layer layer;
  int index;
  bool fused; /* experts.gate_up_proj / experts.down_proj */
  bool fp8;   /* block-scaled FP8 weights (quantization_config) */
  int64_t fp8_block[2]; /* its weight_block_size: rows, columns of one scale */
  char prefix[64]; /* "model.layers.N.mlp." */
  char about[512];
};

static bool is_float(const sk_checkpoint_tensor *t) {
  return t->dtype == SK_FP32 || t->dtype == SK_FP16 || t->dtype == SK_BF16;
}

static bool is_fp8(const sk_checkpoint_tensor *t) { return strcmp(t->dtype_name, "F8_E4M3") == 0; }

/* ---- config.json ---- */

typedef struct config {
  const cJSON *root;
  const char *path;
  char *msg;
  size_t msg_size;
  sk_status st;
} config;

/* Member key of the config; NULL when absent or null. */
static const cJSON *member(const config *c, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->root, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

static const char *type_name(const cJSON *v) {
  return cJSON_IsBool(v) ? "boolean" : cJSON_IsNumber(v) ? "number" : cJSON_IsArray(v) ? "array" : "object";
}

/* Records the first problem (unsupported or malformed) and returns it. */
static sk_status config_fail(config *c, const char *fmt, ...) {
  if (c->st != SK_STATUS_OK) return c->st;
  c->st = SK_STATUS_UNSUPPORTED;
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return skm_error(c->msg, c->msg_size, c->st, "%s: %s", c->path, why);
}

/* An integer member in [lo, hi]; absent or null: dflt, or an error when
 * dflt < lo (required). */
static int64_t config_int(config *c, const char *key, int64_t dflt, int64_t lo, int64_t hi) {
  const cJSON *v = member(c, key);
  if (!v) {
    if (dflt < lo) config_fail(c, "\"%s\" is missing", key);
    return dflt;
  }
  const double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!(x >= (double)lo && x <= (double)hi) || x != floor(x)) {
    config_fail(c, "\"%s\" must be an integer in [%lld, %lld]", key, (long long)lo, (long long)hi);
    return dflt;
  }
  return (int64_t)x;
}

static double config_number(config *c, const char *key, double dflt) {
  const cJSON *v = member(c, key);
  if (!v) return dflt;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) config_fail(c, "\"%s\" must be a finite number", key);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static bool config_bool(config *c, const char *key, bool dflt) {
  const cJSON *v = member(c, key);
  if (!v) return dflt;
  if (!cJSON_IsBool(v)) config_fail(c, "\"%s\" must be true or false", key);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* A string member that must equal one of the allowed values when present. */
static void config_expect(config *c, const char *key, const char *allowed) {
  const cJSON *v = member(c, key);
  if (!v) return;
  if (!cJSON_IsString(v) || strcmp(v->valuestring, allowed) != 0)
    config_fail(c, "\"%s\" is %s%s%s; only \"%s\" is supported", key, cJSON_IsString(v) ? "\"" : "",
                cJSON_IsString(v) ? v->valuestring : type_name(v), cJSON_IsString(v) ? "\"" : "", allowed);
}

/* Whether layer n is a MoE layer; explains why not into why. */
static bool is_moe_layer(config *c, family f, int64_t n, char *why, size_t why_size) {
  if (f == QWEN3_MOE) {
    int64_t step = config_int(c, "decoder_sparse_step", 1, 1, 1 << 20);
    const cJSON *dense = member(c, "mlp_only_layers");
    for (const cJSON *item = cJSON_IsArray(dense) ? dense->child : NULL; item; item = item->next)
      if (cJSON_IsNumber(item) && item->valuedouble == (double)n)
        return snprintf(why, why_size, "it is in \"mlp_only_layers\""), false;
    if ((n + 1) % step != 0)
      return snprintf(why, why_size, "(layer + 1) %% decoder_sparse_step (%lld) is not 0", (long long)step), false;
    return true;
  }
  int64_t first = config_int(c, "first_k_dense_replace", 0, 0, 1 << 20);
  int64_t freq = config_int(c, "moe_layer_freq", 1, 1, 1 << 20);
  if (n < first)
    return snprintf(why, why_size, "layers below first_k_dense_replace (%lld) are dense", (long long)first), false;
  if (n % freq != 0) return snprintf(why, why_size, "layer %% moe_layer_freq (%lld) is not 0", (long long)freq), false;
  return true;
}

/* quantization_config: DeepSeek-V3's published FP8 weights are the one
 * kind read ("quant_method": "fp8", "fmt": "e4m3", "weight_block_size":
 * [rows, columns]): a weight may then be an F8_E4M3 tensor with a float
 * "<name>_scale_inv" holding one scale per block, value = fp8 * scale. */
static void read_quantization(skm_checkpoint *ck, config *c, const cJSON *q) {
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(q, "fmt");
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
  if (!cJSON_IsObject(q) || !cJSON_IsString(method) || strcmp(method->valuestring, "fp8") != 0) {
    config_fail(c, "quantization_config: only block-scaled FP8 (\"quant_method\": \"fp8\", DeepSeek-V3's) is "
                   "supported; use a bf16, fp16 or fp32 checkpoint (the layer can be quantized to int8 on loading: "
                   "moe-layer:int8)");
    return;
  }
  if (fmt && !cJSON_IsNull(fmt) && (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "e4m3") != 0)) {
    config_fail(c, "quantization_config: \"fmt\" must be \"e4m3\"");
    return;
  }
  bool ok = cJSON_IsArray(block) && cJSON_GetArraySize(block) == 2;
  for (int i = 0; ok && i < 2; i++) {
    const cJSON *v = cJSON_GetArrayItem(block, i);
    ok = cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= (1 << 20) && v->valuedouble == floor(v->valuedouble);
    if (ok) ck->fp8_block[i] = (int64_t)v->valuedouble;
  }
  if (!ok) {
    config_fail(c, "quantization_config: \"weight_block_size\" must be [rows, columns], two positive integers");
    return;
  }
  ck->fp8 = true;
}

/* config.json's root into ck->layer and ck->index (dtypes set later). */
static sk_status read_config(skm_checkpoint *ck, config *c, int layer) {
  family fam;
  if (!cJSON_IsObject(c->root)) return config_fail(c, "expected an object");
  const cJSON *type = member(c, "model_type");
  if (!cJSON_IsString(type)) return config_fail(c, "\"model_type\" is missing");
  if (strcmp(type->valuestring, "qwen3_moe") == 0) fam = QWEN3_MOE;
  else if (strcmp(type->valuestring, "deepseek_v3") == 0) fam = DEEPSEEK_V3;
  else if (strcmp(type->valuestring, "deepseek_v2") == 0) fam = DEEPSEEK_V2;
  else
    return config_fail(c, "model_type \"%s\" is not supported (qwen3_moe, deepseek_v3, deepseek_v2)",
                       type->valuestring);
  const cJSON *quantization = member(c, "quantization_config");
  if (quantization) read_quantization(ck, c, quantization);
  if (c->st != SK_STATUS_OK) return c->st;
  skm_moe_layer *m = &ck->layer;
  const bool qwen = fam == QWEN3_MOE;
  m->hidden = config_int(c, "hidden_size", -1, 1, 1 << 20);
  /* Qwen3's config.json says num_experts; transformers 5 writes num_local_experts. */
  const char *experts_key = !qwen                       ? "n_routed_experts"
                            : member(c, "num_experts") ? "num_experts"
                                                       : "num_local_experts";
  m->experts = config_int(c, experts_key, -1, 0, 1 << 16);
  m->top_k = config_int(c, "num_experts_per_tok", -1, 1, 1 << 16);
  m->inter = config_int(c, "moe_intermediate_size", -1, 1, 1 << 20);
  m->shared = qwen ? 0 : config_int(c, "n_shared_experts", 0, 0, 64);
  int64_t n_layers = config_int(c, "num_hidden_layers", -1, 1, 1 << 20);
  config_expect(c, "hidden_act", "silu");
  if (c->st != SK_STATUS_OK) return c->st;
  if (m->experts == 0) return config_fail(c, "%s is 0: the model has no MoE layer", experts_key);
  if (m->top_k > m->experts)
    return config_fail(c, "num_experts_per_tok (%lld) exceeds the experts (%lld)", (long long)m->top_k,
                       (long long)m->experts);
  m->scaling = 1.0, m->groups = 1, m->k_group = 1;
  if (fam == DEEPSEEK_V3) {
    config_expect(c, "scoring_func", "sigmoid");
    config_expect(c, "topk_method", "noaux_tc");
    m->sigmoid = 1;
    m->groups = (int)config_int(c, "n_group", 1, 1, 1 << 16);
    m->k_group = (int)config_int(c, "topk_group", 1, 1, 1 << 16);
    m->renorm = config_bool(c, "norm_topk_prob", true);
    m->scaling = config_number(c, "routed_scaling_factor", 1.0);
    if (c->st == SK_STATUS_OK && (m->experts % m->groups != 0 || m->experts / m->groups <= 2 || m->k_group > m->groups))
      config_fail(c, "n_group %d / topk_group %d over %lld experts: the groups must divide the experts into more "
                     "than 2 each (the top-2 group score) and topk_group be at most n_group",
                  m->groups, m->k_group, (long long)m->experts);
    if (c->st == SK_STATUS_OK && m->top_k > m->k_group * (m->experts / m->groups))
      config_fail(c, "num_experts_per_tok %lld exceeds the experts of topk_group groups", (long long)m->top_k);
  } else if (fam == DEEPSEEK_V2) {
    config_expect(c, "scoring_func", "softmax");
    config_expect(c, "topk_method", "greedy");
    if (config_bool(c, "mlp_bias", false)) config_fail(c, "\"mlp_bias\" true is not supported");
    double scaling = config_number(c, "routed_scaling_factor", 1.0);
    if (c->st == SK_STATUS_OK && scaling != 1.0)
      config_fail(c, "routed_scaling_factor %g with softmax gating is not supported (only 1)", scaling);
    m->renorm = 0; /* transformers' DeepseekV2 router never renormalizes */
  } else {
    m->renorm = config_bool(c, "norm_topk_prob", false);
  }
  if (c->st != SK_STATUS_OK) return c->st;
  char why[160] = "";
  if (layer < 0) {
    for (int64_t n = 0; n < n_layers && layer < 0; n++)
      if (is_moe_layer(c, fam, n, why, sizeof why)) layer = (int)n;
    if (layer < 0) return config_fail(c, "none of its %lld layers is a MoE layer", (long long)n_layers);
  } else if (layer >= n_layers) {
    return skm_error(c->msg, c->msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: layer %d: the model has %lld layers",
                     c->path, layer, (long long)n_layers);
  } else if (!is_moe_layer(c, fam, layer, why, sizeof why)) {
    return skm_error(c->msg, c->msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: layer %d is not a MoE layer: %s", c->path,
                     layer, why);
  }
  ck->index = layer;
  return c->st;
}

/* ---- the layer's tensors ---- */

static const sk_checkpoint_tensor *find(const skm_checkpoint *ck, const char *suffix) {
  char name[256];
  snprintf(name, sizeof name, "%s%s", ck->prefix, suffix);
  return sk_checkpoint_find(ck->files, name);
}

/* The block scales of an FP8 weight t ("<name>_scale_inv"), or NULL. */
static const sk_checkpoint_tensor *scale_of(const skm_checkpoint *ck, const sk_checkpoint_tensor *t) {
  char name[300];
  if (!is_fp8(t) || snprintf(name, sizeof name, "%s_scale_inv", t->name) >= (int)sizeof name) return NULL;
  return sk_checkpoint_find(ck->files, name);
}

static sk_status check_shape(const sk_checkpoint_tensor *t, int rank, const int64_t *shape, char *msg, size_t msg_size) {
  bool same = t->rank == rank;
  for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
  if (same) return SK_STATUS_OK;
  char got[96], want[96];
  return skm_error(msg, msg_size, SK_STATUS_INVALID_SHAPE, "tensor %s: shape %s, the config gives %s", t->name,
                   skm_format_shape(t->rank, t->shape, got, sizeof got), skm_format_shape(rank, shape, want, sizeof want));
}

/* Tensor prefix+suffix must exist, be float and have the given shape. An
 * expert's weight (fp8_ok) of an FP8 checkpoint may be F8_E4M3 [rows,
 * cols] instead, with its float block scales [ceil(rows / block rows),
 * ceil(cols / block cols)]. */
static sk_status need(const skm_checkpoint *ck, const char *suffix, int rank, const int64_t *shape, bool fp8_ok,
                      char *msg, size_t msg_size) {
  const sk_checkpoint_tensor *t = find(ck, suffix);
  if (!t)
    return skm_error(msg, msg_size, SK_STATUS_NOT_FOUND, "tensor %s%s is missing (layer %d)", ck->prefix, suffix,
                     ck->index);
  bool fp8 = fp8_ok && ck->fp8 && is_fp8(t) && rank == 2;
  if (!is_float(t) && !fp8)
    return skm_error(msg, msg_size, SK_STATUS_UNSUPPORTED, "tensor %s: dtype %s is not supported (F32, F16, BF16%s)",
                     t->name, t->dtype_name, ck->fp8 ? "; F8_E4M3 for the unfused experts' weights" : "");
  sk_status s = check_shape(t, rank, shape, msg, msg_size);
  if (s != SK_STATUS_OK || !fp8) return s;
  const sk_checkpoint_tensor *scale = scale_of(ck, t);
  if (!scale)
    return skm_error(msg, msg_size, SK_STATUS_NOT_FOUND, "tensor %s_scale_inv is missing (the FP8 weight's block scales)",
                     t->name);
  if (!is_float(scale))
    return skm_error(msg, msg_size, SK_STATUS_UNSUPPORTED, "tensor %s: dtype %s is not supported (F32, F16, BF16)",
                     scale->name, scale->dtype_name);
  int64_t blocks[2] = {(shape[0] + ck->fp8_block[0] - 1) / ck->fp8_block[0],
                       (shape[1] + ck->fp8_block[1] - 1) / ck->fp8_block[1]};
  return check_shape(scale, 2, blocks, msg, msg_size);
}

static sk_status check_tensors(skm_checkpoint *ck, char *msg, size_t msg_size) {
  const skm_moe_layer *m = &ck->layer;
  const int64_t h = m->hidden, i = m->inter, e = m->experts, si = m->shared * m->inter;
  sk_status s = need(ck, "gate.weight", 2, (int64_t[]){e, h}, false, msg, msg_size);
  if (s == SK_STATUS_OK && m->sigmoid)
    s = need(ck, "gate.e_score_correction_bias", 1, (int64_t[]){e}, false, msg, msg_size);
  ck->fused = find(ck, "experts.gate_up_proj") != NULL;
  if (ck->fused) {
    if (s == SK_STATUS_OK) s = need(ck, "experts.gate_up_proj", 3, (int64_t[]){e, 2 * i, h}, false, msg, msg_size);
    if (s == SK_STATUS_OK) s = need(ck, "experts.down_proj", 3, (int64_t[]){e, h, i}, false, msg, msg_size);
  }
  for (int64_t j = 0; !ck->fused && s == SK_STATUS_OK && j < e; j++) {
    char name[96];
    static const char *const proj[] = {"gate_proj", "up_proj", "down_proj"};
    for (int p = 0; s == SK_STATUS_OK && p < 3; p++) {
      snprintf(name, sizeof name, "experts.%lld.%s.weight", (long long)j, proj[p]);
      s = need(ck, name, 2, p < 2 ? (int64_t[]){i, h} : (int64_t[]){h, i}, true, msg, msg_size);
    }
  }
  if (s == SK_STATUS_OK && si)
    s = need(ck, "shared_experts.gate_proj.weight", 2, (int64_t[]){si, h}, true, msg, msg_size);
  if (s == SK_STATUS_OK && si) s = need(ck, "shared_experts.up_proj.weight", 2, (int64_t[]){si, h}, true, msg, msg_size);
  if (s == SK_STATUS_OK && si)
    s = need(ck, "shared_experts.down_proj.weight", 2, (int64_t[]){h, si}, true, msg, msg_size);
  return s;
}

sk_status skm_checkpoint_open(const char *dir, int layer, skm_checkpoint **out, char *msg, size_t msg_size) {
  *out = NULL;
  char path[4096];
  if (!dir || snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "checkpoint directory: %s",
                     dir ? "path too long" : "none");
  skm_checkpoint *ck = calloc(1, sizeof *ck);
  if (!ck) return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  sk_status s = sk_checkpoint_open(dir, &ck->files);
  if (s != SK_STATUS_OK) {
    skm_error(msg, msg_size, s, "%s", sk_last_error());
    free(ck);
    return s;
  }
  const char *text = sk_checkpoint_config_json(ck->files), *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, true);
  config c = {.root = root, .path = path, .msg = msg, .msg_size = msg_size, .st = SK_STATUS_OK};
  if (!root)
    s = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: invalid JSON at byte %lld", path,
                  end ? (long long)(end - text) : -1LL);
  else s = read_config(ck, &c, layer);
  const char *model_type = s == SK_STATUS_OK ? member(&c, "model_type")->valuestring : "";
  snprintf(ck->prefix, sizeof ck->prefix, "model.layers.%d.mlp.", ck->index);
  skm_moe_layer *m = &ck->layer;
  if (s == SK_STATUS_OK) s = check_tensors(ck, msg, msg_size);
  if (s == SK_STATUS_OK) {
    const sk_checkpoint_tensor *w = find(ck, ck->fused ? "experts.gate_up_proj" : "experts.0.gate_proj.weight");
    m->dtype = m->expert_dtype = w->dtype == SK_FP16 ? SK_FP16 : SK_BF16;
    m->t = 16;
    m->preset = "checkpoint";
    char gating[48] = "softmax";
    if (m->sigmoid) snprintf(gating, sizeof gating, "sigmoid %d groups / %d", m->groups, m->k_group);
    char fp8[64] = "";
    if (ck->fp8)
      snprintf(fp8, sizeof fp8, ", FP8 weights (blocks of %lld x %lld)", (long long)ck->fp8_block[0],
               (long long)ck->fp8_block[1]);
    snprintf(ck->about, sizeof ck->about, "%s layer %d of %s: H %lld, %lld experts, top-%lld, I %lld, %s, %lld shared%s",
             model_type, ck->index, dir, (long long)m->hidden, (long long)m->experts, (long long)m->top_k,
             (long long)m->inter, gating, (long long)m->shared, fp8);
    m->about = ck->about;
  }
  cJSON_Delete(root);
  if (s != SK_STATUS_OK) {
    skm_checkpoint_close(ck);
    return s;
  }
  *out = ck;
  return SK_STATUS_OK;
}

void skm_checkpoint_close(skm_checkpoint *ck) {
  if (!ck) return;
  sk_checkpoint_close(ck->files);
  free(ck);
}

const skm_moe_layer *skm_checkpoint_layer(const skm_checkpoint *ck) { return &ck->layer; }

/* ---- converting into the model's weights ---- */

/* Rows converted at a time: the strided writes of a transpose land in
 * runs of this many contiguous elements. */
#define ROW_BLOCK 16

static void put(void *dst, sk_dtype dtype, int64_t i, float v) {
  if (dtype == SK_FP32) ((float *)dst)[i] = v;
  else if (dtype == SK_FP16) ((uint16_t *)dst)[i] = sk_fp32_to_fp16(v);
  else if (dtype == SK_BF16) ((uint16_t *)dst)[i] = sk_fp32_to_bf16(v);
  else ((int8_t *)dst)[i] = (int8_t)v;
}

/* A torch weight [n, K] to read: element `base` of t on, and for an FP8
 * weight its block scales (value = fp8 * scale[row / block[0]][col /
 * block[1]], in fp32, as DeepSeek's own dequantization; t then starts at
 * base 0). */
typedef struct weight_source {
  const sk_checkpoint_tensor *t, *scale;
  int64_t base;
  const int64_t *block;
} weight_source;

static float weight_at(const weight_source *w, int64_t row, int64_t col, int64_t k_dim) {
  float v = sk_checkpoint_float_at(w->t, w->base + row * k_dim + col);
  if (!w->scale) return v;
  int64_t scale_cols = (k_dim + w->block[1] - 1) / w->block[1];
  return v * sk_checkpoint_float_at(w->scale, row / w->block[0] * scale_cols + col / w->block[1]);
}

/* Columns [col0, col0 + n) of the [K, N] matrix dst are rows [0, n) of the
 * torch weight [n, K] of w (y = x @ dst is torch's x @ weight^T). int8:
 * each column is rounded with its own scale max|w| / 127 (written to
 * scales[col0 + r]; 1 for an all-zero column). */
static sk_status transpose_rows(void *dst, sk_dtype dtype, int64_t k_dim, int64_t n_dim, int64_t col0, int64_t n,
                                const weight_source *w, float *scales) {
  const sk_checkpoint_tensor *t = w->t;
  const int64_t base = w->base;
  if (t->dtype == dtype && !w->scale) { /* the same dtype: the bits move as they are */
    const size_t es = sk_dtype_size(dtype);
    const char *src = (const char *)t->data + (size_t)base * es;
    char *out = dst;
    for (int64_t r0 = 0; r0 < n; r0 += ROW_BLOCK)
      for (int64_t k = 0; k < k_dim; k++)
        for (int64_t r = r0; r < n && r < r0 + ROW_BLOCK; r++)
          memcpy(out + (size_t)(k * n_dim + col0 + r) * es, src + (size_t)(r * k_dim + k) * es, es);
    return SK_STATUS_OK;
  }
  float *rows = malloc(sizeof(float) * ROW_BLOCK * (size_t)k_dim);
  if (!rows) return SK_STATUS_OUT_OF_MEMORY;
  for (int64_t r0 = 0; r0 < n; r0 += ROW_BLOCK) {
    int64_t nr = n - r0 < ROW_BLOCK ? n - r0 : ROW_BLOCK;
    for (int64_t r = 0; r < nr; r++) {
      float *row = rows + r * k_dim, amax = 0.0f;
      for (int64_t k = 0; k < k_dim; k++) row[k] = weight_at(w, r0 + r, k, k_dim);
      if (dtype != SK_INT8) continue;
      for (int64_t k = 0; k < k_dim; k++) amax = fmaxf(amax, fabsf(row[k]));
      float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
      scales[col0 + r0 + r] = scale;
      for (int64_t k = 0; k < k_dim; k++) row[k] = fminf(fmaxf(rintf(row[k] / scale), -127.0f), 127.0f);
    }
    for (int64_t k = 0; k < k_dim; k++)
      for (int64_t r = 0; r < nr; r++) put(dst, dtype, k * n_dim + col0 + r0 + r, rows[r * k_dim + k]);
  }
  free(rows);
  return SK_STATUS_OK;
}

static skm_tensor *weight(skm_io *values, const char *name, sk_dtype dtype, int64_t numel, char *msg, size_t msg_size) {
  skm_tensor *v = skm_io_find_input(values, name);
  if (!v || v->dtype != dtype || v->numel != numel) {
    skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "checkpoint: the model's %s is %s, not %s of %lld elements",
              name, v ? "of another dtype or size" : "missing", sk_dtype_name(dtype), (long long)numel);
    return NULL;
  }
  return v;
}

/* One expert's (or the shared experts') up [H, 2I] and down [I, H] from
 * gate, up and down tensors at element offsets. */
typedef struct mlp_source {
  const sk_checkpoint_tensor *gate, *up, *down;
  int64_t gate_base, up_base, down_base;
} mlp_source;

static sk_status fill_mlp(const skm_checkpoint *ck, const mlp_source *src, int64_t h, int64_t i, sk_dtype dtype,
                          void *up, void *down, float *up_scale, float *down_scale) {
  weight_source gate = {src->gate, scale_of(ck, src->gate), src->gate_base, ck->fp8_block};
  weight_source upw = {src->up, scale_of(ck, src->up), src->up_base, ck->fp8_block};
  weight_source downw = {src->down, scale_of(ck, src->down), src->down_base, ck->fp8_block};
  sk_status s = transpose_rows(up, dtype, h, 2 * i, 0, i, &gate, up_scale);
  if (s == SK_STATUS_OK) s = transpose_rows(up, dtype, h, 2 * i, i, i, &upw, up_scale);
  if (s == SK_STATUS_OK) s = transpose_rows(down, dtype, i, h, 0, h, &downw, down_scale);
  return s;
}

sk_status skm_checkpoint_fill(const skm_checkpoint *ck, const skm_moe_layer *m, skm_io *values, char *msg,
                              size_t msg_size) {
  const skm_moe_layer *c = &ck->layer;
  if (m->hidden != c->hidden || m->inter != c->inter || m->shared != c->shared || m->experts > c->experts)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "checkpoint: the model is not this checkpoint's layer");
  const int64_t h = m->hidden, i = m->inter, e = m->experts, si = m->shared * m->inter;
  const bool w8a8 = m->expert_dtype == SK_INT8;
  const size_t es = sk_dtype_size(m->expert_dtype);
  skm_tensor *gate = weight(values, "moe_gate", SK_FP32, e * h, msg, msg_size);
  skm_tensor *up = gate ? weight(values, "moe_w_up", m->expert_dtype, e * h * 2 * i, msg, msg_size) : NULL;
  skm_tensor *down = up ? weight(values, "moe_w_down", m->expert_dtype, e * i * h, msg, msg_size) : NULL;
  skm_tensor *up_scale = down && w8a8 ? weight(values, "moe_w_up_scale", SK_FP32, e * 2 * i, msg, msg_size) : NULL;
  skm_tensor *down_scale = up_scale ? weight(values, "moe_w_down_scale", SK_FP32, e * h, msg, msg_size) : NULL;
  skm_tensor *bias = down && m->sigmoid ? weight(values, "moe_score_bias", SK_FP32, e, msg, msg_size) : NULL;
  skm_tensor *s_up = down && si ? weight(values, "moe_shared_up", m->dtype, h * 2 * si, msg, msg_size) : NULL;
  skm_tensor *s_down = s_up ? weight(values, "moe_shared_down", m->dtype, si * h, msg, msg_size) : NULL;
  if (!down || (w8a8 && !down_scale) || (m->sigmoid && !bias) || (si && !s_down)) return SK_STATUS_INVALID_ARGUMENT;

  /* The gate and bias: the first e rows, widened (their layouts match). */
  const sk_checkpoint_tensor *g = find(ck, "gate.weight");
  for (int64_t k = 0; k < e * h; k++) ((float *)gate->data)[k] = sk_checkpoint_float_at(g, k);
  if (bias) {
    const sk_checkpoint_tensor *b = find(ck, "gate.e_score_correction_bias");
    for (int64_t k = 0; k < e; k++) ((float *)bias->data)[k] = sk_checkpoint_float_at(b, k);
  }
  sk_status s = SK_STATUS_OK;
  for (int64_t j = 0; s == SK_STATUS_OK && j < e; j++) {
    mlp_source src;
    if (ck->fused) {
      const sk_checkpoint_tensor *gu = find(ck, "experts.gate_up_proj"), *d = find(ck, "experts.down_proj");
      src = (mlp_source){gu, gu, d, j * 2 * i * h, j * 2 * i * h + i * h, j * h * i};
    } else {
      char name[3][96];
      static const char *const proj[] = {"gate_proj", "up_proj", "down_proj"};
      for (int p = 0; p < 3; p++) snprintf(name[p], sizeof name[p], "experts.%lld.%s.weight", (long long)j, proj[p]);
      src = (mlp_source){find(ck, name[0]), find(ck, name[1]), find(ck, name[2]), 0, 0, 0};
    }
    s = fill_mlp(ck, &src, h, i, m->expert_dtype, (char *)up->data + (size_t)(j * h * 2 * i) * es,
                 (char *)down->data + (size_t)(j * i * h) * es, w8a8 ? (float *)up_scale->data + j * 2 * i : NULL,
                 w8a8 ? (float *)down_scale->data + j * h : NULL);
  }
  if (s == SK_STATUS_OK && si) {
    mlp_source src = {find(ck, "shared_experts.gate_proj.weight"), find(ck, "shared_experts.up_proj.weight"),
                      find(ck, "shared_experts.down_proj.weight"), 0, 0, 0};
    s = fill_mlp(ck, &src, h, si, m->dtype, s_up->data, s_down->data, NULL, NULL);
  }
  if (s != SK_STATUS_OK) return skm_error(msg, msg_size, s, "checkpoint: out of memory converting the weights");
  return SK_STATUS_OK;
}

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

/* A number of the layer's description (the library's, below); NAN when absent. */
static double described(const cJSON *d, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);
  return cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsBool(v) ? (double)cJSON_IsTrue(v) : NAN;
}

/* config.json (text, its root parsed) into ck->layer and ck->index (dtypes
 * set later). The layer itself is the library's reading of the model's
 * family (sk_model_moe_block_description: the same as sk_model_create's);
 * this file knows only which families' tensor names it finds, the
 * checkpoint's quantization, and what the moe-layer graph runs. */
static sk_status read_config(skm_checkpoint *ck, config *c, const char *text, int layer) {
  if (!cJSON_IsObject(c->root)) return config_fail(c, "expected an object");
  const cJSON *type = member(c, "model_type");
  if (!cJSON_IsString(type)) return config_fail(c, "\"model_type\" is missing");
  static const char *const families[] = {"qwen3_moe", "deepseek_v3", "deepseek_v2"}; /* model.layers.N.mlp.* */
  bool known = false;
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) known |= strcmp(type->valuestring, families[i]) == 0;
  if (!known)
    return config_fail(c, "model_type \"%s\" is not supported (qwen3_moe, deepseek_v3, deepseek_v2)",
                       type->valuestring);
  const cJSON *quantization = member(c, "quantization_config");
  if (quantization) read_quantization(ck, c, quantization);
  if (c->st != SK_STATUS_OK) return c->st;
  char *json = NULL;
  int64_t found = -1;
  sk_status st = sk_model_moe_block_description(text, layer, &json, &found);
  if (st != SK_STATUS_OK) {
    const char *why = sk_last_error();
    if (strncmp(why, "config.json: ", 13) == 0) why += 13; /* c->path says which file */
    return c->st = skm_error(c->msg, c->msg_size, st, "%s: %s", c->path, why);
  }
  cJSON *d = cJSON_Parse(json);
  sk_free(json);
  if (!d) return c->st = skm_error(c->msg, c->msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  skm_moe_layer *m = &ck->layer;
  m->hidden = (int64_t)described(d, "hidden_size"), m->experts = (int64_t)described(d, "num_experts");
  m->top_k = (int64_t)described(d, "num_experts_per_tok"), m->inter = (int64_t)described(d, "moe_intermediate_size");
  m->shared = (int64_t)described(d, "shared_intermediate_size") / m->inter;
  m->renorm = described(d, "norm_topk_prob") != 0, m->scaling = described(d, "routed_scaling_factor");
  const cJSON *router = cJSON_GetObjectItemCaseSensitive(d, "router");
  m->sigmoid = cJSON_IsString(router) && strcmp(router->valuestring, "sigmoid") == 0;
  m->groups = (int)described(d, "n_group"), m->k_group = (int)described(d, "topk_group");
  const bool gated = described(d, "shared_gate") != 0;
  cJSON_Delete(d);
  /* what the moe-layer graph (moe_layer.c) has no step for */
  if (gated) return config_fail(c, "a sigmoid-gated shared expert is not supported by moe-layer");
  if (!m->sigmoid && m->groups > 1) return config_fail(c, "group-limited softmax routing is not supported by moe-layer");
  if (!m->sigmoid && m->scaling != 1.0)
    return config_fail(c, "routed_scaling_factor %g with softmax gating is not supported (only 1)", m->scaling);
  if (m->sigmoid && m->experts / m->groups <= 2)
    return config_fail(c, "n_group %d over %lld experts: the groups must hold more than 2 experts each (the top-2 "
                          "group score)", m->groups, (long long)m->experts);
  ck->index = (int)found;
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
  else s = read_config(ck, &c, text, layer);
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

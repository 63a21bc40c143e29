/*
 * checkpoint.c — superkernel_checkpoint.h: config.json's text, the index's
 * shards checked, the safetensors files mapped (safetensors.c), and the
 * weight callback of sk_model_create over them; the model's errors get the
 * directory and the file they are about. A block-scaled FP8 weight
 * (DeepSeek-V3's published checkpoints) is dequantized into the model's
 * dtype on lookup, in the weight store's file-backed memory, paged out once
 * the model is made.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint/safetensors.h"
#include "core/error.h"
#include "model/weight_store.h"

#define MAX_CONFIG_BYTES (16u << 20)
#define MAX_INDEX_BYTES (64u << 20)
#define INDEX_NAME "model.safetensors.index.json"

struct sk_checkpoint {
  char *dir;
  char *config;           /* config.json's text */
  sk__st_dir *st;
  const void **copies;    /* per tensor (sk__st_at order): a dequantized or aligned copy, from the store */
  sk__weight_store store;
  int64_t fp8_block[2];   /* quantization_config's weight_block_size (0: no FP8 weights) */
  sk_dtype dtype;         /* the model's: the embedding table's (what FP8 weights become) */
};

/* ---- opening ---- */

/* The whole file at path, NUL-terminated, at most max_bytes; errors name the path. */
static sk_status read_text(const char *path, size_t max_bytes, char **text) {
  *text = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return sk__fail(errno == ENOENT ? SK_STATUS_NOT_FOUND : SK_STATUS_INVALID_ARGUMENT, "%s: %s", path,
                    strerror(errno));
  char *buf = malloc(max_bytes + 1);
  size_t n = buf ? fread(buf, 1, max_bytes + 1, f) : 0;
  bool too_long = buf && n > max_bytes, failed = ferror(f);
  fclose(f);
  if (!buf || too_long || failed) {
    free(buf);
    if (!buf) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    if (failed) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: read error", path);
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: larger than %zu bytes", path, (size_t)max_bytes);
  }
  buf[n] = '\0';
  *text = buf;
  return SK_STATUS_OK;
}

/* Block-scaled FP8 ("quant_method": "fp8", "weight_block_size": [rows,
 * cols]); anything else leaves the weights as they are, and a tensor of
 * another dtype is refused by name at lookup. The library checks the rest
 * of the config itself (a malformed one is its error, with its message). */
static void read_fp8_blocks(sk_checkpoint *ck) {
  cJSON *root = cJSON_Parse(ck->config);
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
  if (cJSON_IsString(method) && strcmp(method->valuestring, "fp8") == 0 && cJSON_GetArraySize(block) == 2)
    for (int i = 0; i < 2; i++) {
      const cJSON *v = cJSON_GetArrayItem(block, i);
      const double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
      ck->fp8_block[i] = x >= 1 && x <= (1 << 20) && x == floor(x) ? (int64_t)x : 0; /* no overflow in block counts */
    }
  if (!ck->fp8_block[0] || !ck->fp8_block[1]) ck->fp8_block[0] = ck->fp8_block[1] = 0;
  cJSON_Delete(root);
}

/* With DIR/model.safetensors.index.json: every file its weight_map names
 * must be there (a missing shard is named, not left to a missing weight). */
static sk_status check_shards(const sk_checkpoint *ck) {
  char path[4096], *text;
  snprintf(path, sizeof path, "%s/%s", ck->dir, INDEX_NAME);
  sk_status st = read_text(path, MAX_INDEX_BYTES, &text);
  if (st == SK_STATUS_NOT_FOUND) {
    sk__clear_error();
    return SK_STATUS_OK; /* one file, or shards without an index */
  }
  if (st != SK_STATUS_OK) return st;
  cJSON *root = cJSON_Parse(text);
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  if (!root)
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: not valid JSON", path);
  else if (!cJSON_IsObject(map))
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: expected an object \"weight_map\"", path);
  for (const cJSON *file = map ? map->child : NULL; st == SK_STATUS_OK && file; file = file->next) {
    char shard[4096];
    struct stat sb;
    if (!cJSON_IsString(file) || strchr(file->valuestring, '/') ||
        snprintf(shard, sizeof shard, "%s/%s", ck->dir, file->valuestring) >= (int)sizeof shard)
      st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: weight_map[\"%s\"]: expected a file name", path, file->string);
    else if (stat(shard, &sb) != 0)
      st = sk__fail(SK_STATUS_NOT_FOUND, "%s: missing (%s puts tensor %s in it)", shard, INDEX_NAME, file->string);
  }
  cJSON_Delete(root);
  free(text);
  return st;
}

sk_status sk_checkpoint_open(const char *dir, sk_checkpoint **out) {
  sk__clear_error();
  if (!out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_checkpoint_open: out is NULL");
  *out = NULL;
  struct stat sb;
  if (!dir || !*dir) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "checkpoint directory: none given");
  if (stat(dir, &sb) != 0)
    return sk__fail(errno == ENOENT ? SK_STATUS_NOT_FOUND : SK_STATUS_INVALID_ARGUMENT, "%s: %s", dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode)) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: not a directory", dir);
  sk_checkpoint *ck = calloc(1, sizeof *ck);
  if (!ck || !(ck->dir = strdup(dir))) {
    free(ck);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  char path[4096];
  sk_status st = snprintf(path, sizeof path, "%s/config.json", dir) < (int)sizeof path
                     ? read_text(path, MAX_CONFIG_BYTES, &ck->config)
                     : sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: path too long", dir);
  if (st == SK_STATUS_OK) st = check_shards(ck);
  if (st == SK_STATUS_OK) st = sk__st_open(dir, &ck->st);
  if (st == SK_STATUS_OK && !(ck->copies = calloc(sk__st_count(ck->st) + 1, sizeof *ck->copies)))
    st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  if (st != SK_STATUS_OK) {
    sk_checkpoint_close(ck);
    return st;
  }
  read_fp8_blocks(ck);
  const sk_checkpoint_tensor *table = sk__st_find(ck->st, "model.embed_tokens.weight");
  ck->dtype = table && sk__st_is_float(table) ? table->dtype : SK_BF16;
  *out = ck;
  return SK_STATUS_OK;
}

void sk_checkpoint_close(sk_checkpoint *ck) {
  if (!ck) return;
  sk__weight_store_release(&ck->store);
  free(ck->copies);
  sk__st_close(ck->st);
  free(ck->config);
  free(ck->dir);
  free(ck);
}

/* ---- reading ---- */

const char *sk_checkpoint_dir(const sk_checkpoint *ck) { return ck ? ck->dir : NULL; }
const char *sk_checkpoint_config_json(const sk_checkpoint *ck) { return ck ? ck->config : NULL; }
size_t sk_checkpoint_file_count(const sk_checkpoint *ck) { return ck ? sk__st_files(ck->st) : 0; }
size_t sk_checkpoint_tensor_count(const sk_checkpoint *ck) { return ck ? sk__st_count(ck->st) : 0; }

const sk_checkpoint_tensor *sk_checkpoint_tensor_at(const sk_checkpoint *ck, size_t i) {
  return ck ? sk__st_at(ck->st, i) : NULL;
}

const sk_checkpoint_tensor *sk_checkpoint_find(const sk_checkpoint *ck, const char *name) {
  return ck ? sk__st_find(ck->st, name) : NULL;
}

float sk_fp8_e4m3_to_fp32(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10); /* m/8 * 2^-6, (1 + m/8) * 2^(e-7) */
  return b & 0x80 ? -v : v;
}

float sk_checkpoint_float_at(const sk_checkpoint_tensor *t, int64_t i) {
  if (!t || !t->data || i < 0 || i >= t->numel) return NAN;
  const unsigned char *p = t->data;
  if (sk__st_is_fp8(t)) return sk_fp8_e4m3_to_fp32(p[i]);
  uint16_t h;
  switch (t->dtype) {
    case SK_FP32: {
      float v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case SK_FP16: memcpy(&h, p + 2 * i, 2); return sk_fp16_to_fp32(h);
    case SK_BF16: memcpy(&h, p + 2 * i, 2); return sk_bf16_to_fp32(h);
    default: return NAN;
  }
}

/* ---- the weight callback ---- */

/* The callback's failure: its words for sk_model_create's message. */
static sk_status weight_fail(sk_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static sk_status weight_fail(sk_status st, const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  sk_model_weight_error(text);
  return st;
}

/* An F8_E4M3 weight [rows, cols] of an FP8 checkpoint, dequantized into
 * the model's dtype: w = fp8 * scale_inv[r / block_rows][c / block_cols]
 * in fp32, rounded once (to nearest even). */
static sk_status dequantize_fp8(sk_checkpoint *ck, const sk_checkpoint_tensor *t, size_t i) {
  char sname[512];
  snprintf(sname, sizeof sname, "%s_scale_inv", t->name);
  const sk_checkpoint_tensor *s = sk__st_find(ck->st, sname);
  if (!ck->fp8_block[0])
    return weight_fail(SK_STATUS_INVALID_DTYPE, "dtype F8_E4M3 in %s/%s: config.json has no block-scaled FP8 "
                       "quantization_config (\"quant_method\": \"fp8\", \"weight_block_size\")", ck->dir, t->file);
  if (t->rank != 2)
    return weight_fail(SK_STATUS_INVALID_SHAPE, "an F8_E4M3 tensor of rank %d in %s/%s: expected [rows, cols]",
                       t->rank, ck->dir, t->file);
  const int64_t rows = t->shape[0], cols = t->shape[1], br = ck->fp8_block[0], bc = ck->fp8_block[1];
  const int64_t sr = (rows + br - 1) / br, sc = (cols + bc - 1) / bc;
  if (!s)
    return weight_fail(SK_STATUS_INVALID_ARGUMENT, "F8_E4M3 in %s/%s without its block scales %s", ck->dir, t->file,
                       sname);
  if (!sk__st_is_float(s) || s->rank != 2 || s->shape[0] != sr || s->shape[1] != sc)
    return weight_fail(SK_STATUS_INVALID_SHAPE, "%s in %s/%s: expected a float [%lld, %lld] (blocks of %lld x %lld), "
                       "got %s of rank %d", sname, ck->dir, s->file, (long long)sr, (long long)sc, (long long)br,
                       (long long)bc, s->dtype_name, s->rank);
  if (ck->copies[i]) return SK_STATUS_OK;
  void *p = sk__weight_store_alloc(&ck->store, (size_t)(rows * cols) * sk_dtype_size(ck->dtype));
  if (!p) return weight_fail(SK_STATUS_OUT_OF_MEMORY, "out of memory dequantizing it");
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const float v = sk_checkpoint_float_at(t, r * cols + c) * sk_checkpoint_float_at(s, (r / br) * sc + c / bc);
      if (ck->dtype == SK_FP32) ((float *)p)[r * cols + c] = v;
      else ((uint16_t *)p)[r * cols + c] = ck->dtype == SK_BF16 ? sk_fp32_to_bf16(v) : sk_fp32_to_fp16(v);
    }
  ck->copies[i] = p;
  return SK_STATUS_OK;
}

sk_status sk_checkpoint_weight(void *checkpoint, const char *name, sk_model_tensor *out) {
  sk_checkpoint *ck = checkpoint;
  if (!ck || !name || !out) return weight_fail(SK_STATUS_INVALID_ARGUMENT, "sk_checkpoint_weight: a NULL argument");
  sk_checkpoint_tensor *t = sk__st_find(ck->st, name);
  if (!t) return SK_STATUS_NOT_FOUND;
  const size_t i = (size_t)(t - sk__st_at(ck->st, 0));
  if (sk__st_is_fp8(t)) {
    SK_RETURN_IF_ERROR(dequantize_fp8(ck, t, i));
    *out = (sk_model_tensor){.dtype = ck->dtype, .rank = 2, .shape = {t->shape[0], t->shape[1]}, .data = ck->copies[i]};
    t->used = 1;
    return SK_STATUS_OK;
  }
  if (!sk__st_is_float(t))
    return weight_fail(SK_STATUS_INVALID_DTYPE, "dtype %s in %s/%s: not supported (F32, F16, BF16, or F8_E4M3 with "
                       "block scales)", t->dtype_name, ck->dir, t->file);
  const void *data = t->data;
  if ((uintptr_t)data % sk_dtype_size(t->dtype)) { /* the library borrows aligned data only */
    if (!ck->copies[i]) {
      void *copy = sk__weight_store_alloc(&ck->store, t->bytes ? t->bytes : 1);
      if (!copy) return weight_fail(SK_STATUS_OUT_OF_MEMORY, "out of memory for an aligned copy");
      memcpy(copy, data, t->bytes);
      ck->copies[i] = copy;
    }
    data = ck->copies[i];
  }
  *out = (sk_model_tensor){.dtype = t->dtype, .rank = t->rank, .data = data};
  memcpy(out->shape, t->shape, sizeof t->shape[0] * (size_t)t->rank);
  t->used = 1;
  return SK_STATUS_OK;
}

/* ---- the model, with errors naming their file ---- */

/* The weight a library message is about ("weight NAME: ..."), into name. */
static bool weight_named(const char *message, char *name, size_t size) {
  const char *p = strstr(message, "weight ");
  if (!p) return false;
  p += strlen("weight ");
  size_t n = strcspn(p, ": ");
  if (n == 0 || n >= size) return false;
  memcpy(name, p, n);
  name[n] = '\0';
  return true;
}

/* sk_model_create's message again, with the directory or file it is about. */
static sk_status with_context(const sk_checkpoint *ck, sk_status st) {
  char message[2048], name[512];
  snprintf(message, sizeof message, "%s", sk_last_error());
  const char *config = "config.json";
  if (strncmp(message, config, strlen(config)) == 0) return sk__fail(st, "%s/%s", ck->dir, message);
  if (!weight_named(message, name, sizeof name)) return sk__fail(st, "%s: %s", ck->dir, message);
  const sk_checkpoint_tensor *t = sk__st_find(ck->st, name);
  if (!t)
    return sk__fail(st, "%s: not among the %zu tensors of %s's %zu *.safetensors file%s", message,
                    sk__st_count(ck->st), ck->dir, sk__st_files(ck->st), sk__st_files(ck->st) == 1 ? "" : "s");
  if (strstr(message, t->file)) return sk__fail(st, "%s", message); /* the callback named it */
  return sk__fail(st, "%s (%s/%s)", message, ck->dir, t->file);
}

sk_status sk_model_create_from_checkpoint(sk_checkpoint *ck, const sk_model_config *cfg, sk_model **model_out) {
  sk__clear_error();
  if (!ck || !model_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create_from_checkpoint: %s is NULL",
                    !ck ? "the checkpoint" : "model_out");
  if (cfg && cfg->struct_size != 0 && cfg->struct_size != sizeof *cfg) /* (before the copy reads past it) */
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create_from_checkpoint: cfg->struct_size %zu: expected %zu "
                    "or 0", cfg->struct_size, sizeof *cfg);
  sk_model_config c = cfg ? *cfg : (sk_model_config){.struct_size = sizeof c};
  if (c.config_json || c.weight || c.weight_user)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_model_create_from_checkpoint: cfg's config_json, weight and "
                    "weight_user must be NULL: the checkpoint gives them");
  c.config_json = ck->config;
  c.weight = sk_checkpoint_weight;
  c.weight_user = ck;
  sk_status st = sk_model_create(&c, model_out);
  sk__weight_store_page_out(&ck->store); /* packed now: the copies go back to their file */
  return st == SK_STATUS_OK ? st : with_context(ck, st);
}

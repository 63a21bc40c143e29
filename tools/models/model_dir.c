/*
 * model_dir.c — model_dir.h: config.json's text, the index's shards
 * checked, the safetensors files mapped (safetensors.c), and the weight
 * callback of sk_model_create over them; the library's errors get the
 * directory and the file they are about. A block-scaled FP8 weight
 * (DeepSeek-V3's published checkpoints) is dequantized into the model's
 * dtype on lookup, in file-backed memory paged out once the model is made.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise */
#include "model_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "models.h"
#include "safetensors.h"

#define MAX_CONFIG_BYTES (16u << 20)
#define MAX_INDEX_BYTES (64u << 20)
#define INDEX_NAME "model.safetensors.index.json"
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* linux/mman.h, Linux 5.4 */
#endif

struct skm_model_dir {
  char *dir;
  char *config;           /* config.json's text */
  skm_st_dir *st;
  bool *taken;            /* per tensor (skm_st_at order): handed to the model */
  void **copies;          /* per tensor: an aligned copy, where the mapping was not */
  size_t *copy_bytes;     /* per tensor: a dequantized FP8 weight's mapping (munmap), 0 for a malloc'd copy */
  char error[1024];       /* the callback's own failure (sk_last_error cannot be set from here) */
  int64_t experts, top_k;
  int64_t fp8_block[2];   /* quantization_config's weight_block_size (0: no FP8 weights) */
  sk_dtype dtype;         /* the model's: the embedding table's (what FP8 weights become) */
};

/* ---- opening ---- */

/* An integer member of config.json's object, or 0. */
static int64_t config_int(const skj_value *root, const char *key) {
  const skj_value *v = skj_get(root, key);
  return v && v->type == SKJ_NUMBER && v->is_integer && v->integer > 0 ? v->integer : 0;
}

/* The expert counts the bandwidth floor needs; the library checks the
 * config itself (a malformed one is its error, with its message). */
static void read_expert_counts(skm_model_dir *d) {
  skj_value root;
  char why[64];
  if (!skj_parse(d->config, strlen(d->config), &root, why, sizeof why)) return;
  d->experts = config_int(&root, "num_experts");
  if (!d->experts) d->experts = config_int(&root, "num_local_experts");
  d->top_k = d->experts ? config_int(&root, "num_experts_per_tok") : 0;
  if (!d->experts) d->experts = config_int(&root, "n_routed_experts");
  if (!d->top_k && d->experts) d->top_k = config_int(&root, "num_experts_per_tok");
  /* block-scaled FP8 ("quant_method": "fp8", "weight_block_size": [rows, cols]); anything else leaves
   * the weights as they are, and a tensor of another dtype is refused by name */
  const skj_value *q = skj_get(&root, "quantization_config"), *method = q ? skj_get(q, "quant_method") : NULL;
  const skj_value *block = q ? skj_get(q, "weight_block_size") : NULL;
  if (method && method->type == SKJ_STRING && strcmp(method->string, "fp8") == 0 && block &&
      block->type == SKJ_ARRAY && block->n == 2)
    for (int i = 0; i < 2; i++)
      d->fp8_block[i] = block->items[i].type == SKJ_NUMBER && block->items[i].is_integer &&
                            block->items[i].integer > 0 && block->items[i].integer <= (1 << 20)
                            ? block->items[i].integer : 0; /* (no overflow in the block counts) */
  if (!d->fp8_block[0] || !d->fp8_block[1]) d->fp8_block[0] = d->fp8_block[1] = 0;
  skj_free(&root);
}

/* With DIR/model.safetensors.index.json: every file its weight_map names
 * must be there (a missing shard is named, not left to a missing weight). */
static sk_status check_shards(const skm_model_dir *d, char *msg, size_t msg_size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", d->dir, INDEX_NAME);
  skj_value root;
  sk_status st = skm_read_json(path, MAX_INDEX_BYTES, &root, msg, msg_size);
  if (st == SK_STATUS_NOT_FOUND) return SK_STATUS_OK; /* one file, or shards without an index */
  if (st != SK_STATUS_OK) return st;
  const skj_value *map = skj_get(&root, "weight_map");
  if (!map || map->type != SKJ_OBJECT)
    st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: expected an object \"weight_map\"", path);
  for (size_t i = 0; st == SK_STATUS_OK && i < map->n; i++) {
    const skj_value *file = &map->items[i];
    char shard[4096];
    struct stat sb;
    if (file->type != SKJ_STRING || strchr(file->string, '/') ||
        snprintf(shard, sizeof shard, "%s/%s", d->dir, file->string) >= (int)sizeof shard)
      st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: weight_map[\"%s\"]: expected a file name", path,
                     map->keys[i]);
    else if (stat(shard, &sb) != 0)
      st = skm_error(msg, msg_size, SK_STATUS_NOT_FOUND, "%s: missing (%s puts tensor %s in it)", shard, INDEX_NAME,
                     map->keys[i]);
  }
  skj_free(&root);
  return st;
}

sk_status skm_model_dir_open(const char *dir, skm_model_dir **out, char *msg, size_t msg_size) {
  *out = NULL;
  struct stat sb;
  if (!dir || !*dir) return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "checkpoint directory: none given");
  if (stat(dir, &sb) != 0)
    return skm_error(msg, msg_size, errno == ENOENT ? SK_STATUS_NOT_FOUND : SK_STATUS_INVALID_ARGUMENT, "%s: %s", dir,
                     strerror(errno));
  if (!S_ISDIR(sb.st_mode)) return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: not a directory", dir);
  skm_model_dir *d = calloc(1, sizeof *d);
  if (!d || !(d->dir = strdup(dir))) {
    free(d);
    return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  char path[4096];
  size_t len;
  sk_status st = snprintf(path, sizeof path, "%s/config.json", dir) < (int)sizeof path
                     ? skm_read_text(path, MAX_CONFIG_BYTES, &d->config, &len, msg, msg_size)
                     : skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: path too long", dir);
  if (st == SK_STATUS_OK) st = check_shards(d, msg, msg_size);
  if (st == SK_STATUS_OK) st = skm_st_open(dir, &d->st, msg, msg_size);
  const size_t n = skm_st_count(d->st);
  if (st == SK_STATUS_OK &&
      (!(d->taken = calloc(n + 1, sizeof *d->taken)) || !(d->copies = calloc(n + 1, sizeof *d->copies)) ||
       !(d->copy_bytes = calloc(n + 1, sizeof *d->copy_bytes))))
    st = skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  if (st != SK_STATUS_OK) {
    skm_model_dir_close(d);
    return st;
  }
  read_expert_counts(d);
  const skm_st_tensor *table = skm_st_find(d->st, "model.embed_tokens.weight");
  d->dtype = table && skm_st_is_float(table) ? table->dtype : SK_BF16;
  *out = d;
  return SK_STATUS_OK;
}

void skm_model_dir_close(skm_model_dir *d) {
  if (!d) return;
  for (size_t i = 0; d->copies && i < skm_st_count(d->st); i++) {
    if (d->copy_bytes && d->copy_bytes[i]) munmap(d->copies[i], d->copy_bytes[i]);
    else free(d->copies[i]);
  }
  free(d->copies);
  free(d->copy_bytes);
  free(d->taken);
  skm_st_close(d->st);
  free(d->config);
  free(d->dir);
  free(d);
}

/* ---- the weight callback ---- */

static sk_status callback_fail(skm_model_dir *d, sk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static sk_status callback_fail(skm_model_dir *d, sk_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->error, sizeof d->error, fmt, ap);
  va_end(ap);
  return st;
}

/* Memory for a dequantized weight: a shared mapping of an unlinked file
 * in $SUPERKERNEL_WEIGHTS_DIR, else $TMPDIR, else /tmp (the library's
 * rule for its own int8 weights), paged out once the model has packed it;
 * NULL where no file can be made (the caller then mallocs). */
static void *file_backed(size_t bytes) {
  const char *dir = getenv("SUPERKERNEL_WEIGHTS_DIR");
  if (!dir || !*dir) dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char path[4096];
  snprintf(path, sizeof path, "%s/superkernel-fp8-XXXXXX", dir);
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  unlink(path);
  void *p = posix_fallocate(fd, 0, (off_t)bytes) == 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                      : MAP_FAILED;
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

static uint16_t round_to_16(float v, sk_dtype dt) {
  return dt == SK_BF16 ? sk_fp32_to_bf16(v) : sk_fp32_to_fp16(v);
}

/* An F8_E4M3 weight [rows, cols] of an FP8 checkpoint, dequantized into
 * the model's dtype: w = fp8 * scale_inv[r / block_rows][c / block_cols]
 * in fp32, rounded once (to nearest even). */
static sk_status dequantize_fp8(skm_model_dir *d, const skm_st_tensor *t, size_t i, const void **data) {
  char sname[512];
  snprintf(sname, sizeof sname, "%s_scale_inv", t->name);
  const skm_st_tensor *s = skm_st_find(d->st, sname);
  if (!d->fp8_block[0])
    return callback_fail(d, SK_STATUS_INVALID_DTYPE, "weight %s: dtype F8_E4M3 in %s/%s: config.json has no "
                         "block-scaled FP8 quantization_config (\"quant_method\": \"fp8\", \"weight_block_size\")",
                         t->name, d->dir, t->file);
  if (t->rank != 2)
    return callback_fail(d, SK_STATUS_INVALID_SHAPE, "weight %s: an F8_E4M3 tensor of rank %d in %s/%s: expected "
                         "[rows, cols]", t->name, t->rank, d->dir, t->file);
  const int64_t rows = t->shape[0], cols = t->shape[1], br = d->fp8_block[0], bc = d->fp8_block[1];
  const int64_t sr = (rows + br - 1) / br, sc = (cols + bc - 1) / bc;
  if (!s)
    return callback_fail(d, SK_STATUS_INVALID_ARGUMENT, "weight %s: F8_E4M3 in %s/%s without its block scales %s", t->name,
                         d->dir, t->file, sname);
  if (!skm_st_is_float(s) || s->rank != 2 || s->shape[0] != sr || s->shape[1] != sc)
    return callback_fail(d, SK_STATUS_INVALID_SHAPE, "weight %s: %s in %s/%s: expected a float [%lld, %lld] (blocks "
                         "of %lld x %lld), got %s of rank %d", sname, sname, d->dir, s->file, (long long)sr,
                         (long long)sc, (long long)br, (long long)bc, s->dtype_name, s->rank);
  const size_t out_size = sk_dtype_size(d->dtype), bytes = (size_t)(rows * cols) * out_size;
  if (!d->copies[i]) {
    void *p = bytes >= (1u << 20) ? file_backed(bytes) : NULL;
    if (p) d->copy_bytes[i] = bytes;
    else if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) p = NULL;
    if (!p) return callback_fail(d, SK_STATUS_OUT_OF_MEMORY, "weight %s: out of memory dequantizing it", t->name);
    const uint8_t *q = t->data;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        const float v = skm_fp8_e4m3_to_float(q[r * cols + c]) * skm_st_float_at(s, (r / br) * sc + c / bc);
        if (d->dtype == SK_FP32) ((float *)p)[r * cols + c] = v;
        else ((uint16_t *)p)[r * cols + c] = round_to_16(v, d->dtype);
      }
    d->copies[i] = p;
  }
  *data = d->copies[i];
  return SK_STATUS_OK;
}

static sk_status lookup(void *user, const char *name, sk_model_tensor *out) {
  skm_model_dir *d = user;
  const skm_st_tensor *t = skm_st_find(d->st, name);
  if (!t) return SK_STATUS_NOT_FOUND;
  const size_t i = (size_t)(t - skm_st_at(d->st, 0));
  if (t->fp8_e4m3) {
    const void *data;
    sk_status st = dequantize_fp8(d, t, i, &data);
    if (st != SK_STATUS_OK) return st;
    *out = (sk_model_tensor){.dtype = d->dtype, .rank = 2, .shape = {t->shape[0], t->shape[1]}, .data = data};
    d->taken[i] = true;
    return SK_STATUS_OK;
  }
  if (!skm_st_is_float(t))
    return callback_fail(d, SK_STATUS_INVALID_DTYPE, "weight %s: dtype %s in %s/%s: not supported (F32, F16, BF16, "
                         "or F8_E4M3 with block scales)", name, t->dtype_name, d->dir, t->file);
  const size_t size = sk_dtype_size(t->dtype);
  const void *data = t->data;
  if ((uintptr_t)data % size) { /* the library borrows aligned data only */
    if (!d->copies[i]) {
      if (posix_memalign(&d->copies[i], 64, t->bytes ? t->bytes : 1) != 0) {
        d->copies[i] = NULL;
        return callback_fail(d, SK_STATUS_OUT_OF_MEMORY, "weight %s: out of memory for an aligned copy", name);
      }
      memcpy(d->copies[i], data, t->bytes);
    }
    data = d->copies[i];
  }
  *out = (sk_model_tensor){.dtype = t->dtype, .rank = t->rank, .data = data};
  memcpy(out->shape, t->shape, sizeof t->shape[0] * (size_t)t->rank);
  d->taken[i] = true;
  return SK_STATUS_OK;
}

/* ---- errors with their file ---- */

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

/* The library's message with the directory or file it is about. */
static void with_context(const skm_model_dir *d, const char *message, char *msg, size_t msg_size) {
  char name[512];
  const char *config = "config.json";
  if (strncmp(message, config, strlen(config)) == 0) {
    snprintf(msg, msg_size, "%s/%s", d->dir, message);
  } else if (weight_named(message, name, sizeof name)) {
    const skm_st_tensor *t = skm_st_find(d->st, name);
    if (t)
      snprintf(msg, msg_size, "%s (%s/%s)", message, d->dir, t->file);
    else
      snprintf(msg, msg_size, "%s: not among the %zu tensors of %s's %zu *.safetensors file%s", message,
               skm_st_count(d->st), d->dir, skm_st_files(d->st), skm_st_files(d->st) == 1 ? "" : "s");
  } else {
    snprintf(msg, msg_size, "%s: %s", d->dir, message);
  }
}

sk_status skm_model_dir_create(skm_model_dir *d, sk_model_config *cfg, sk_model **out, char *msg, size_t msg_size) {
  cfg->config_json = d->config;
  cfg->weight = lookup;
  cfg->weight_user = d;
  d->error[0] = '\0';
  memset(d->taken, 0, skm_st_count(d->st) * sizeof *d->taken);
  sk_status st = sk_model_create(cfg, out);
  for (size_t i = 0; i < skm_st_count(d->st); i++) /* packed now: dequantized FP8 weights go back to their file */
    if (d->copy_bytes[i]) (void)madvise(d->copies[i], d->copy_bytes[i], MADV_PAGEOUT);
  if (st != SK_STATUS_OK) {
    if (d->error[0]) snprintf(msg, msg_size, "%s", d->error); /* names the weight, its dtype and its file */
    else with_context(d, sk_last_error(), msg, msg_size);
  }
  return st;
}

void skm_model_dir_get_usage(const skm_model_dir *d, skm_model_dir_usage *u) {
  *u = (skm_model_dir_usage){.files = skm_st_files(d->st), .tensors = skm_st_count(d->st), .experts = d->experts,
                             .top_k = d->top_k};
  for (size_t i = 0; i < u->tensors; i++) {
    const skm_st_tensor *t = skm_st_at(d->st, i);
    if (!d->taken[i]) continue;
    /* an FP8 weight is held (and read) in the model's dtype */
    const size_t bytes = t->fp8_e4m3 ? (size_t)t->numel * sk_dtype_size(d->dtype) : t->bytes;
    u->taken_bytes += bytes;
    if (strstr(t->name, "mlp.experts.")) u->expert_bytes += bytes;
    if (strcmp(t->name, "model.embed_tokens.weight") == 0) u->embedding_bytes = t->bytes;
  }
}

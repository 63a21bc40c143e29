/*
 * model_dir.c — model_dir.h: config.json's text, the index's shards
 * checked, the safetensors files mapped (safetensors.c), and the weight
 * callback of sk_model_create over them; the library's errors get the
 * directory and the file they are about.
 */
#define _POSIX_C_SOURCE 200809L
#include "model_dir.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json.h"
#include "models.h"
#include "safetensors.h"

#define MAX_CONFIG_BYTES (16u << 20)
#define MAX_INDEX_BYTES (64u << 20)
#define INDEX_NAME "model.safetensors.index.json"

struct skm_model_dir {
  char *dir;
  char *config;           /* config.json's text */
  skm_st_dir *st;
  bool *taken;            /* per tensor (skm_st_at order): handed to the model */
  void **copies;          /* per tensor: an aligned copy, where the mapping was not */
  char error[1024];       /* the callback's own failure (sk_last_error cannot be set from here) */
  int64_t experts, top_k;
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
      (!(d->taken = calloc(n + 1, sizeof *d->taken)) || !(d->copies = calloc(n + 1, sizeof *d->copies))))
    st = skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  if (st != SK_STATUS_OK) {
    skm_model_dir_close(d);
    return st;
  }
  read_expert_counts(d);
  *out = d;
  return SK_STATUS_OK;
}

void skm_model_dir_close(skm_model_dir *d) {
  if (!d) return;
  for (size_t i = 0; d->copies && i < skm_st_count(d->st); i++) free(d->copies[i]);
  free(d->copies);
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

static sk_status lookup(void *user, const char *name, sk_model_tensor *out) {
  skm_model_dir *d = user;
  const skm_st_tensor *t = skm_st_find(d->st, name);
  if (!t) return SK_STATUS_NOT_FOUND;
  if (!skm_st_is_float(t) || t->fp8_e4m3)
    return callback_fail(d, SK_STATUS_INVALID_DTYPE, "weight %s: dtype %s in %s/%s: not supported (F32, F16 or BF16)",
                         name, t->dtype_name, d->dir, t->file);
  const size_t i = (size_t)(t - skm_st_at(d->st, 0)), size = sk_dtype_size(t->dtype);
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
    u->taken_bytes += t->bytes;
    if (strstr(t->name, "mlp.experts.")) u->expert_bytes += t->bytes;
    if (strcmp(t->name, "model.embed_tokens.weight") == 0) u->embedding_bytes = t->bytes;
  }
}

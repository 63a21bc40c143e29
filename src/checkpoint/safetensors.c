/*
 * safetensors.c — safetensors.h: map each file, parse its JSON header
 * (cJSON), check every entry against the file, and keep one table of all
 * tensors sorted by name for lookups.
 */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/error.h"

/* The safetensors library refuses larger headers too. */
#define MAX_HEADER_BYTES (100u << 20)

typedef struct mapped_file {
  char *name;
  char *path; /* dir/name, for messages */
  void *map;
  size_t size;
} mapped_file;

struct sk__st_dir {
  mapped_file *files;
  size_t n_files;
  sk_checkpoint_tensor *tensors; /* sorted by name */
  size_t n_tensors, cap_tensors;
};


static const struct {
  const char *name;
  size_t size;
  sk_dtype dtype;
} dtypes[] = {
    {"F64", 8, SK_DTYPE_INVALID}, {"F32", 4, SK_FP32},  {"F16", 2, SK_FP16},     {"BF16", 2, SK_BF16},
    {"I64", 8, SK_INT64},         {"I32", 4, SK_INT32}, {"I16", 2, SK_DTYPE_INVALID}, {"I8", 1, SK_INT8},
    {"U64", 8, SK_DTYPE_INVALID}, {"U32", 4, SK_DTYPE_INVALID}, {"U16", 2, SK_DTYPE_INVALID},
    {"U8", 1, SK_UINT8},          {"BOOL", 1, SK_BOOL}, {"F8_E4M3", 1, SK_DTYPE_INVALID},
    {"F8_E5M2", 1, SK_DTYPE_INVALID}, {"F8_E8M0", 1, SK_DTYPE_INVALID},
};

static int cmp_tensor(const void *a, const void *b) {
  return strcmp(((const sk_checkpoint_tensor *)a)->name, ((const sk_checkpoint_tensor *)b)->name);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A non-negative integer array of at most max items into out; its length,
 * or -1. cJSON holds numbers as doubles, exact up to 2^53: far past any
 * file's size, and a larger value is refused rather than rounded. */
static int int_array(const cJSON *v, int64_t *out, int max) {
  if (!cJSON_IsArray(v)) return -1;
  int n = 0;
  for (const cJSON *item = v->child; item; item = item->next, n++) {
    if (n == max || !cJSON_IsNumber(item)) return -1;
    const double x = item->valuedouble;
    if (!(x >= 0 && x <= 0x1p53) || x != floor(x)) return -1;
    out[n] = (int64_t)x;
  }
  return n;
}

/* One header entry checked against the data region [data, data + data_size). */
static sk_status add_entry(sk__st_dir *d, const mapped_file *f, const char *data, size_t data_size, const char *name,
                           const cJSON *e) {
#define BAD(...) sk__fail(SK_STATUS_INVALID_ARGUMENT, __VA_ARGS__)
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(e, "shape"),
              *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !sh || !off)
    return BAD("%s: tensor '%s': expected an object with \"dtype\", \"shape\" and \"data_offsets\"", f->path, name);
  size_t k = 0, n_dtypes = sizeof dtypes / sizeof dtypes[0];
  while (k < n_dtypes && strcmp(dtypes[k].name, dt->valuestring) != 0) k++;
  if (k == n_dtypes) return BAD("%s: tensor '%s': unknown dtype '%s'", f->path, name, dt->valuestring);
  sk_checkpoint_tensor t = {.dtype_name = dtypes[k].name, .dtype = dtypes[k].dtype, .file = f->name, .numel = 1};
  t.rank = int_array(sh, t.shape, SK_MODEL_MAX_RANK);
  if (t.rank < 0)
    return BAD("%s: tensor '%s': \"shape\" must be at most %d non-negative integers", f->path, name, SK_MODEL_MAX_RANK);
  int64_t range[2];
  if (int_array(off, range, 2) != 2 || range[0] > range[1] || (uint64_t)range[1] > data_size)
    return BAD("%s: tensor '%s': \"data_offsets\" must be [begin, end] with begin <= end <= %zu (the data's size)",
               f->path, name, data_size);
  for (int i = 0; i < t.rank; i++) {
    if (t.shape[i] && t.numel > INT64_MAX / t.shape[i])
      return BAD("%s: tensor '%s': its shape overflows", f->path, name);
    t.numel *= t.shape[i];
  }
  if ((uint64_t)t.numel > (uint64_t)(range[1] - range[0]) / dtypes[k].size ||
      (uint64_t)t.numel * dtypes[k].size != (uint64_t)(range[1] - range[0]))
    return BAD("%s: tensor '%s': %lld bytes of data for %lld elements of %s", f->path, name,
               (long long)(range[1] - range[0]), (long long)t.numel, t.dtype_name);
#undef BAD
  t.data = data + range[0];
  t.bytes = (size_t)(range[1] - range[0]);
  if (d->n_tensors == d->cap_tensors) {
    size_t cap = d->cap_tensors ? d->cap_tensors * 2 : 64;
    sk_checkpoint_tensor *grown = realloc(d->tensors, cap * sizeof *grown);
    if (!grown) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
    d->tensors = grown, d->cap_tensors = cap;
  }
  if (!(t.name = strdup(name))) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  d->tensors[d->n_tensors++] = t;
  return SK_STATUS_OK;
}

static sk_status map_file(sk__st_dir *d, const char *dir, const char *name) {
  mapped_file *f = &d->files[d->n_files];
  size_t path_size = strlen(dir) + strlen(name) + 2;
  *f = (mapped_file){.name = strdup(name), .path = malloc(path_size)};
  d->n_files++; /* from here on closed with the directory */
  if (!f->name || !f->path) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  snprintf(f->path, path_size, "%s/%s", dir, name);
  const char *path = f->path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  const bool opened = fd >= 0 && fstat(fd, &st) == 0;
  if (!opened || !S_ISREG(st.st_mode)) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s", path, opened ? "not a regular file" : strerror(err));
  }
  if (st.st_size < 8) {
    close(fd);
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %lld bytes: too short for a safetensors file",
                     path, (long long)st.st_size);
  }
  f->size = (size_t)st.st_size;
  f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (f->map == MAP_FAILED) {
    f->map = NULL;
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: mmap: %s", path, strerror(errno));
  }
  const unsigned char *bytes = f->map;
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
  if (n > f->size - 8 || n > MAX_HEADER_BYTES)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                     "%s: header length %llu does not fit the file (%zu bytes; at most %u)", path,
                     (unsigned long long)n, f->size, MAX_HEADER_BYTES);
  const char *end = NULL;
  cJSON *header = cJSON_ParseWithLengthOpts((const char *)bytes + 8, (size_t)n, &end, false);
  if (!header)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: header: invalid JSON at byte %zu of %llu", path,
                    end ? (size_t)(end - ((const char *)bytes + 8)) : (size_t)0, (unsigned long long)n);
  /* only whitespace (the format pads with spaces) after the object */
  const char *stop = (const char *)bytes + 8 + n;
  while (end < stop && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
  sk_status s = SK_STATUS_OK;
  if (end != stop)
    s = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: header: invalid JSON at byte %zu of %llu: text after the value",
                 path, (size_t)(end - ((const char *)bytes + 8)), (unsigned long long)n);
  else if (!cJSON_IsObject(header))
    s = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: header: expected an object", path);
  const char *data = (const char *)bytes + 8 + n;
  for (const cJSON *e = header->child; s == SK_STATUS_OK && e; e = e->next)
    if (strcmp(e->string, "__metadata__") != 0) s = add_entry(d, f, data, f->size - 8 - (size_t)n, e->string, e);
  cJSON_Delete(header);
  return s;
}

sk_status sk__st_open(const char *dir, sk__st_dir **out) {
  *out = NULL;
  DIR *dp = dir ? opendir(dir) : NULL;
  if (!dp)
    return sk__fail(errno == ENOENT || !dir ? SK_STATUS_NOT_FOUND : SK_STATUS_INVALID_ARGUMENT,
                     "%s: %s", dir ? dir : "(null)", dir ? strerror(errno) : "no directory");
  char **names = NULL;
  size_t n = 0, cap = 0;
  sk_status s = SK_STATUS_OK;
  for (struct dirent *e; s == SK_STATUS_OK && (e = readdir(dp));) {
    size_t len = strlen(e->d_name), suffix = strlen(".safetensors");
    if (len <= suffix || strcmp(e->d_name + len - suffix, ".safetensors") != 0) continue;
    if (n == cap) {
      char **grown = realloc(names, (cap = cap ? cap * 2 : 8) * sizeof *grown);
      if (!grown) {
        s = sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
        break;
      }
      names = grown;
    }
    if (!(names[n] = strdup(e->d_name))) s = sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
    else n++;
  }
  closedir(dp);
  if (s == SK_STATUS_OK && n == 0) s = sk__fail(SK_STATUS_NOT_FOUND, "%s: no *.safetensors file", dir);
  sk__st_dir *d = s == SK_STATUS_OK ? calloc(1, sizeof *d) : NULL;
  if (s == SK_STATUS_OK && (!d || !(d->files = calloc(n, sizeof *d->files))))
    s = sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  if (names) qsort(names, n, sizeof *names, cmp_name); /* a fixed order: the same errors every time */
  for (size_t i = 0; s == SK_STATUS_OK && i < n; i++) s = map_file(d, dir, names[i]);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  if (s == SK_STATUS_OK) {
    qsort(d->tensors, d->n_tensors, sizeof *d->tensors, cmp_tensor);
    for (size_t i = 1; s == SK_STATUS_OK && i < d->n_tensors; i++)
      if (strcmp(d->tensors[i - 1].name, d->tensors[i].name) == 0)
        s = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: tensor '%s' is in %s and in %s", dir,
                      d->tensors[i].name, d->tensors[i - 1].file, d->tensors[i].file);
  }
  if (s != SK_STATUS_OK) {
    sk__st_close(d);
    return s;
  }
  *out = d;
  return SK_STATUS_OK;
}

void sk__st_close(sk__st_dir *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n_tensors; i++) free((char *)d->tensors[i].name);
  for (size_t i = 0; i < d->n_files; i++) {
    if (d->files[i].map) munmap(d->files[i].map, d->files[i].size);
    free(d->files[i].name);
    free(d->files[i].path);
  }
  free(d->tensors);
  free(d->files);
  free(d);
}

sk_checkpoint_tensor *sk__st_find(const sk__st_dir *d, const char *name) {
  if (!d || !name) return NULL;
  sk_checkpoint_tensor key = {.name = name};
  return bsearch(&key, d->tensors, d->n_tensors, sizeof key, cmp_tensor);
}

sk_checkpoint_tensor *sk__st_at(const sk__st_dir *d, size_t i) { return d && i < d->n_tensors ? &d->tensors[i] : NULL; }

size_t sk__st_count(const sk__st_dir *d) { return d ? d->n_tensors : 0; }
size_t sk__st_files(const sk__st_dir *d) { return d ? d->n_files : 0; }

int sk__st_is_float(const sk_checkpoint_tensor *t) {
  return t->dtype == SK_FP32 || t->dtype == SK_FP16 || t->dtype == SK_BF16;
}

int sk__st_is_fp8(const sk_checkpoint_tensor *t) { return strcmp(t->dtype_name, "F8_E4M3") == 0; }

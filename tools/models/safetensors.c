/*
 * safetensors.c — safetensors.h: map each file, parse its JSON header
 * (json.c), check every entry against the file, and keep one table of all
 * tensors sorted by name for lookups.
 */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "models.h"

/* The safetensors library refuses larger headers too. */
#define MAX_HEADER_BYTES (100u << 20)

typedef struct mapped_file {
  char *name;
  char *path; /* dir/name, for messages */
  void *map;
  size_t size;
} mapped_file;

struct skm_st_dir {
  mapped_file *files;
  size_t n_files;
  skm_st_tensor *tensors; /* sorted by name */
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
  return strcmp(((const skm_st_tensor *)a)->name, ((const skm_st_tensor *)b)->name);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A non-negative integer array of at most max items into out; its length, or -1. */
static int int_array(const skj_value *v, int64_t *out, int max) {
  if (!v || v->type != SKJ_ARRAY || v->n > (size_t)max) return -1;
  for (size_t i = 0; i < v->n; i++) {
    if (v->items[i].type != SKJ_NUMBER || !v->items[i].is_integer || v->items[i].integer < 0) return -1;
    out[i] = v->items[i].integer;
  }
  return (int)v->n;
}

/* One header entry checked against the data region [data, data + data_size). */
static sk_status add_entry(skm_st_dir *d, const mapped_file *f, const char *data, size_t data_size, const char *name,
                           const skj_value *e, char *msg, size_t msg_size) {
#define BAD(...) skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, __VA_ARGS__)
  const skj_value *dt = skj_get(e, "dtype"), *sh = skj_get(e, "shape"), *off = skj_get(e, "data_offsets");
  if (e->type != SKJ_OBJECT || !dt || dt->type != SKJ_STRING || !sh || !off)
    return BAD("%s: tensor '%s': expected an object with \"dtype\", \"shape\" and \"data_offsets\"", f->path, name);
  size_t k = 0, n_dtypes = sizeof dtypes / sizeof dtypes[0];
  while (k < n_dtypes && strcmp(dtypes[k].name, dt->string) != 0) k++;
  if (k == n_dtypes) return BAD("%s: tensor '%s': unknown dtype '%s'", f->path, name, dt->string);
  skm_st_tensor t = {.dtype_name = dtypes[k].name, .dtype = dtypes[k].dtype, .file = f->name, .numel = 1,
                     .fp8_e4m3 = strcmp(dtypes[k].name, "F8_E4M3") == 0};
  t.rank = int_array(sh, t.shape, SKM_ST_MAX_RANK);
  if (t.rank < 0)
    return BAD("%s: tensor '%s': \"shape\" must be at most %d non-negative integers", f->path, name, SKM_ST_MAX_RANK);
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
    skm_st_tensor *grown = realloc(d->tensors, cap * sizeof *grown);
    if (!grown) return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
    d->tensors = grown, d->cap_tensors = cap;
  }
  if (!(t.name = strdup(name))) return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  d->tensors[d->n_tensors++] = t;
  return SK_STATUS_OK;
}

static sk_status map_file(skm_st_dir *d, const char *dir, const char *name, char *msg, size_t msg_size) {
  mapped_file *f = &d->files[d->n_files];
  size_t path_size = strlen(dir) + strlen(name) + 2;
  *f = (mapped_file){.name = strdup(name), .path = malloc(path_size)};
  d->n_files++; /* from here on closed with the directory */
  if (!f->name || !f->path) return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  snprintf(f->path, path_size, "%s/%s", dir, name);
  const char *path = f->path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    if (fd >= 0) close(fd);
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: %s", path,
                     fd >= 0 && err == 0 ? "not a regular file" : strerror(err));
  }
  if (st.st_size < 8) {
    close(fd);
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: %lld bytes: too short for a safetensors file",
                     path, (long long)st.st_size);
  }
  f->size = (size_t)st.st_size;
  f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (f->map == MAP_FAILED) {
    f->map = NULL;
    return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "%s: mmap: %s", path, strerror(errno));
  }
  const unsigned char *bytes = f->map;
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
  if (n > f->size - 8 || n > MAX_HEADER_BYTES)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT,
                     "%s: header length %llu does not fit the file (%zu bytes; at most %u)", path,
                     (unsigned long long)n, f->size, MAX_HEADER_BYTES);
  skj_value header;
  char why[256];
  if (!skj_parse((const char *)bytes + 8, (size_t)n, &header, why, sizeof why))
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: header: %s", path, why);
  sk_status s = SK_STATUS_OK;
  if (header.type != SKJ_OBJECT)
    s = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: header: expected an object, got %s", path,
                  skj_type_name(header.type));
  const char *data = (const char *)bytes + 8 + n;
  for (size_t i = 0; s == SK_STATUS_OK && i < header.n; i++)
    if (strcmp(header.keys[i], "__metadata__") != 0)
      s = add_entry(d, f, data, f->size - 8 - (size_t)n, header.keys[i], &header.items[i], msg, msg_size);
  skj_free(&header);
  return s;
}

sk_status skm_st_open(const char *dir, skm_st_dir **out, char *msg, size_t msg_size) {
  *out = NULL;
  DIR *dp = dir ? opendir(dir) : NULL;
  if (!dp)
    return skm_error(msg, msg_size, errno == ENOENT || !dir ? SK_STATUS_NOT_FOUND : SK_STATUS_INVALID_ARGUMENT,
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
        s = skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
        break;
      }
      names = grown;
    }
    if (!(names[n] = strdup(e->d_name))) s = skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
    else n++;
  }
  closedir(dp);
  if (s == SK_STATUS_OK && n == 0) s = skm_error(msg, msg_size, SK_STATUS_NOT_FOUND, "%s: no *.safetensors file", dir);
  skm_st_dir *d = s == SK_STATUS_OK ? calloc(1, sizeof *d) : NULL;
  if (s == SK_STATUS_OK && (!d || !(d->files = calloc(n, sizeof *d->files))))
    s = skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  if (names) qsort(names, n, sizeof *names, cmp_name); /* a fixed order: the same errors every time */
  for (size_t i = 0; s == SK_STATUS_OK && i < n; i++) s = map_file(d, dir, names[i], msg, msg_size);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  if (s == SK_STATUS_OK) {
    qsort(d->tensors, d->n_tensors, sizeof *d->tensors, cmp_tensor);
    for (size_t i = 1; s == SK_STATUS_OK && i < d->n_tensors; i++)
      if (strcmp(d->tensors[i - 1].name, d->tensors[i].name) == 0)
        s = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: tensor '%s' is in %s and in %s", dir,
                      d->tensors[i].name, d->tensors[i - 1].file, d->tensors[i].file);
  }
  if (s != SK_STATUS_OK) {
    skm_st_close(d);
    return s;
  }
  *out = d;
  return SK_STATUS_OK;
}

void skm_st_close(skm_st_dir *d) {
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

const skm_st_tensor *skm_st_find(const skm_st_dir *d, const char *name) {
  if (!d || !name) return NULL;
  skm_st_tensor key = {.name = name};
  return bsearch(&key, d->tensors, d->n_tensors, sizeof key, cmp_tensor);
}

const skm_st_tensor *skm_st_at(const skm_st_dir *d, size_t i) { return d && i < d->n_tensors ? &d->tensors[i] : NULL; }

size_t skm_st_count(const skm_st_dir *d) { return d ? d->n_tensors : 0; }
size_t skm_st_files(const skm_st_dir *d) { return d ? d->n_files : 0; }

int skm_st_is_float(const skm_st_tensor *t) {
  return t->dtype == SK_FP32 || t->dtype == SK_FP16 || t->dtype == SK_BF16;
}

float skm_fp8_e4m3_to_float(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10); /* m/8 * 2^-6, (1 + m/8) * 2^(e-7) */
  return b & 0x80 ? -v : v;
}

float skm_st_float_at(const skm_st_tensor *t, int64_t i) {
  const unsigned char *p = t->data;
  if (t->fp8_e4m3) return skm_fp8_e4m3_to_float(p[i]);
  if (t->dtype == SK_FP32) {
    float v;
    memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, p + 2 * i, 2);
  return t->dtype == SK_FP16 ? sk_fp16_to_fp32(h) : sk_bf16_to_fp32(h);
}

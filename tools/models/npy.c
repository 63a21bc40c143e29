/*
 * npy.c — NumPy .npy reading and writing (see npy.h for the rules).
 */
#define _POSIX_C_SOURCE 200809L /* fdopen, mkstemp, O_CLOEXEC */
#include "npy.h"

#include "models.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* The largest header we accept (numpy itself refuses more than 10000 bytes
 * unless told otherwise); ours are under 200. */
#define MAX_HEADER_LEN (1u << 20)

const char *skm_npy_descr(sk_dtype dtype) {
  switch (dtype) {
    case SK_FP32: return "<f4";
    case SK_FP16: return "<f2";
    case SK_BF16: return "<u2";
    case SK_INT8: return "|i1";
    case SK_INT32: return "<i4";
    case SK_INT64: return "<i8";
    case SK_BOOL: return "|b1";
    case SK_UINT8: return "|u1";
    default: return NULL;
  }
}

static const char *shape_str(int rank, const int64_t *shape, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && len < size; d++)
    len += (size_t)snprintf(buf + len, size - len, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

/* numel of a shape, or -1 when it (or its byte size) overflows. */
static int64_t shape_numel(int rank, const int64_t *shape, size_t itemsize) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) {
    if (shape[d] < 0) return -1;
    if (shape[d] != 0 && n > INT64_MAX / shape[d]) return -1;
    n *= shape[d];
  }
  if (itemsize && (uint64_t)n > (uint64_t)(SIZE_MAX / itemsize)) return -1;
  return n;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

sk_status skm_npy_write(const char *path, sk_dtype dtype, int rank, const int64_t *shape, const void *data,
                        char *msg, size_t msg_size) {
  if (!path) return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "npy write: path is NULL");
  const char *descr = skm_npy_descr(dtype);
  if (!descr)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_DTYPE, "%s: cannot write dtype %s", path, sk_dtype_name(dtype));
  if (rank < 0 || rank > SK_MAX_RANK || (rank > 0 && !shape))
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: rank %d is outside 0..%d", path, rank,
                     SK_MAX_RANK);
  size_t itemsize = sk_dtype_size(dtype);
  int64_t numel = shape_numel(rank, shape, itemsize);
  if (numel < 0) {
    char sb[256];
    return skm_error(msg, msg_size, SK_STATUS_INVALID_SHAPE, "%s: invalid shape %s", path, shape_str(rank, shape, sb,
                     sizeof sb));
  }
  size_t bytes = (size_t)numel * itemsize;
  if (bytes && !data) return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: data is NULL", path);

  /* {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
   * spaces and a '\n' so that 10 + header length is a multiple of 64. */
  char header[512];
  int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int d = 0; d < rank; d++)
    len += snprintf(header + len, sizeof header - (size_t)len, "%lld%s", (long long)shape[d],
                    rank == 1 ? "," : d + 1 < rank ? ", " : "");
  len += snprintf(header + len, sizeof header - (size_t)len, "), }");
  size_t total = 10 + (size_t)len + 1;
  size_t padded = (total + 63) / 64 * 64;
  while (10 + (size_t)len + 1 < padded) header[len++] = ' ';
  header[len++] = '\n';

  unsigned char prefix[10];
  memcpy(prefix, magic, 6);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix[8] = (unsigned char)(len & 0xff);
  prefix[9] = (unsigned char)(len >> 8);

  /* Never through a symbolic link (that would overwrite its target,
   * wherever it points), and never half-written: the file is written as a
   * temporary in the same directory and renamed over the name when
   * complete, so a failed write leaves the previous file as it was. */
  struct stat lst;
  if (lstat(path, &lst) == 0 && !S_ISREG(lst.st_mode))
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: is %s, not a regular file: not overwritten", path,
                     S_ISLNK(lst.st_mode)   ? "a symbolic link"
                     : S_ISDIR(lst.st_mode) ? "a directory"
                                            : "a special file");
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: path too long", path);
  int fd = mkstemp(tmp);
  if (fd < 0)
    return skm_error(msg, msg_size, errno == ENOENT ? SK_STATUS_NOT_FOUND : SK_STATUS_SYSTEM_ERROR,
                     "%s: cannot create: %s", path, strerror(errno));
  mode_t mask = umask(0); /* the mode a plain create would give (mkstemp makes 0600) */
  umask(mask);
  FILE *f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "wb") : NULL;
  bool ok = f && fwrite(prefix, 1, sizeof prefix, f) == sizeof prefix &&
            fwrite(header, 1, (size_t)len, f) == (size_t)len && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
  int saved = errno;
  if (!f) close(fd);
  else if (fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    unlink(tmp);
    return skm_error(msg, msg_size, SK_STATUS_SYSTEM_ERROR, "%s: write failed: %s", path, strerror(saved));
  }
  return SK_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Header parsing                                                            */
/* ------------------------------------------------------------------------ */

typedef struct header {
  char descr[32];
  bool fortran_order;
  int rank;
  int64_t shape[SK_MAX_RANK];
  sk_dtype dtype;
} header;

typedef struct cursor {
  const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool take(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* A Python string literal, '...' or "...", without escapes. */
static bool parse_string(cursor *c, char *out, size_t size) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= size) return false;
    out[n++] = *c->p++;
  }
  if (c->p >= c->end) return false;
  c->p++;
  out[n] = '\0';
  return true;
}

static bool parse_word(cursor *c, const char *word) {
  skip_ws(c);
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
  c->p += n;
  return true;
}

/* Maps a descr to a dtype; returns a status and writes why it is refused. */
static sk_status descr_dtype(const char *descr, sk_dtype *dtype, const char **why) {
  static const struct {
    const char *code;
    sk_dtype dtype;
  } codes[] = {{"f4", SK_FP32}, {"f2", SK_FP16}, {"i1", SK_INT8}, {"i4", SK_INT32},
               {"i8", SK_INT64}, {"u2", SK_BF16}, {"V2", SK_BF16}, {"b1", SK_BOOL}, {"u1", SK_UINT8}};
  char order = descr[0];
  const char *code = descr;
  if (order == '<' || order == '>' || order == '|' || order == '=') code = descr + 1;
  else order = '=';
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    if (strcmp(code, codes[i].code) != 0) continue;
    bool single = sk_dtype_size(codes[i].dtype) == 1;
    if (order == '>' && !single) {
      *why = "big-endian data is not supported";
      return SK_STATUS_UNSUPPORTED;
    }
    if (order == '|' && !single && strcmp(code, "V2") != 0) {
      *why = "'|' (no byte order) is only valid for 1-byte dtypes";
      return SK_STATUS_INVALID_DTYPE;
    }
    *dtype = codes[i].dtype;
    return SK_STATUS_OK;
  }
  *why = "unsupported dtype (supported: '<f4' fp32, '<f2' fp16, '|i1' int8, '<i4' int32, '<i8' int64, "
         "'<u2' or '<V2' bf16, '|b1' bool, '|u1' uint8)";
  return SK_STATUS_INVALID_DTYPE;
}

/* The shape tuple: (), (n,), (a, b, ...). */
static sk_status parse_shape(cursor *c, header *h, const char **why) {
  if (!take(c, '(')) {
    *why = "'shape' is not a tuple";
    return SK_STATUS_INVALID_ARGUMENT;
  }
  h->rank = 0;
  bool comma = false; /* the last element was followed by ',' */
  for (;;) {
    if (take(c, ')')) {
      if (h->rank == 1 && !comma) {
        *why = "'shape' is not a tuple (a 1-tuple needs a trailing comma)";
        return SK_STATUS_INVALID_ARGUMENT;
      }
      return SK_STATUS_OK;
    }
    if (h->rank > 0 && !comma) {
      *why = "'shape' is not a tuple of integers";
      return SK_STATUS_INVALID_ARGUMENT;
    }
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
      *why = c->p < c->end && *c->p == '-' ? "'shape' has a negative dimension" : "'shape' is not a tuple of integers";
      return SK_STATUS_INVALID_ARGUMENT;
    }
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) {
        *why = "'shape' has a dimension too large";
        return SK_STATUS_INVALID_ARGUMENT;
      }
      v = v * 10 + (*c->p++ - '0');
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 longs */
    if (h->rank == SK_MAX_RANK) {
      *why = "rank above 8 (SK_MAX_RANK) is not supported";
      return SK_STATUS_UNSUPPORTED;
    }
    h->shape[h->rank++] = v;
    comma = take(c, ',');
  }
}

/* Parses the header dict. Returns a status; *why says what is wrong. */
static sk_status parse_header(const char *text, size_t len, header *h, const char **why, bool *about_descr) {
  cursor c = {text, text + len};
  bool have_descr = false, have_fortran = false, have_shape = false;
  if (memchr(text, '\0', len)) {
    *why = "the header contains a NUL byte";
    return SK_STATUS_INVALID_ARGUMENT;
  }
  if (!take(&c, '{')) {
    *why = "the header is not a dict";
    return SK_STATUS_INVALID_ARGUMENT;
  }
  for (;;) {
    if (take(&c, '}')) break;
    char key[32];
    if (!parse_string(&c, key, sizeof key)) {
      *why = "the header dict has a key that is not a short string";
      return SK_STATUS_INVALID_ARGUMENT;
    }
    if (!take(&c, ':')) {
      *why = "the header dict lacks a ':' after a key";
      return SK_STATUS_INVALID_ARGUMENT;
    }
    if (strcmp(key, "descr") == 0) {
      if (have_descr) goto duplicate;
      have_descr = true;
      if (!parse_string(&c, h->descr, sizeof h->descr)) {
        *why = "'descr' is not a simple dtype string (structured dtypes are not supported)";
        return SK_STATUS_INVALID_DTYPE;
      }
    } else if (strcmp(key, "fortran_order") == 0) {
      if (have_fortran) goto duplicate;
      have_fortran = true;
      if (parse_word(&c, "False")) h->fortran_order = false;
      else if (parse_word(&c, "True")) h->fortran_order = true;
      else {
        *why = "'fortran_order' is neither True nor False";
        return SK_STATUS_INVALID_ARGUMENT;
      }
    } else if (strcmp(key, "shape") == 0) {
      if (have_shape) goto duplicate;
      have_shape = true;
      sk_status st = parse_shape(&c, h, why);
      if (st != SK_STATUS_OK) return st;
    } else {
      *why = "the header dict has a key other than 'descr', 'fortran_order', 'shape'";
      return SK_STATUS_INVALID_ARGUMENT;
    }
    if (take(&c, ',')) continue;
    if (take(&c, '}')) break;
    *why = "the header dict is malformed (expected ',' or '}')";
    return SK_STATUS_INVALID_ARGUMENT;
  }
  skip_ws(&c);
  if (c.p != c.end) {
    *why = "unexpected text after the header dict";
    return SK_STATUS_INVALID_ARGUMENT;
  }
  if (!have_descr || !have_fortran || !have_shape) {
    *why = !have_descr ? "the header lacks 'descr'" : !have_fortran ? "the header lacks 'fortran_order'"
                                                                      : "the header lacks 'shape'";
    return SK_STATUS_INVALID_ARGUMENT;
  }
  if (h->fortran_order) {
    *why = "fortran_order is True (only C order is supported)";
    return SK_STATUS_UNSUPPORTED;
  }
  *about_descr = true;
  return descr_dtype(h->descr, &h->dtype, why);
duplicate:
  *why = "the header dict has a key twice";
  return SK_STATUS_INVALID_ARGUMENT;
}

/* Opens a file and reads its header; on success f is positioned at the data. */
static sk_status open_and_read_header(const char *path, FILE **f_out, header *h, char *msg, size_t msg_size) {
  *f_out = NULL;
  if (!path) return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "npy read: path is NULL");
  /* O_NONBLOCK: opening a FIFO with no writer would wait forever; only a
   * regular file is read (then the flag changes nothing). */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat lst;
  if (fd < 0 && errno == ENOENT && lstat(path, &lst) == 0) /* there, but it points nowhere: not "missing" */
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: a symbolic link to a file that does not exist",
                     path);
  if (fd < 0)
    return skm_error(msg, msg_size, errno == ENOENT ? SK_STATUS_NOT_FOUND : SK_STATUS_SYSTEM_ERROR,
                     "%s: cannot open: %s",
                     path, strerror(errno));
  struct stat fst;
  if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
    close(fd);
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT,
                     "%s: not a regular file (a .npy file is read only from one)",
                     path);
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return skm_error(msg, msg_size, SK_STATUS_SYSTEM_ERROR, "%s: cannot open: %s", path, strerror(errno));
  }
  unsigned char prefix[12];
  size_t got = fread(prefix, 1, 8, f);
  sk_status st = SK_STATUS_OK;
  if (got < 8 && ferror(f)) {
    st = skm_error(msg, msg_size, SK_STATUS_SYSTEM_ERROR, "%s: read error: %s", path, strerror(errno));
    goto out;
  }
  if (got < 8 || memcmp(prefix, magic, 6) != 0) {
    st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: not a .npy file (%s)", path,
                   got >= 6 ? "bad magic: the file does not start with \\x93NUMPY"
                       : "shorter than the 8-byte magic and version");
    goto out;
  }
  unsigned major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0) {
    st = skm_error(msg, msg_size, SK_STATUS_UNSUPPORTED,
                   "%s: unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)",
                   path, major, minor);
    goto out;
  }
  size_t len_bytes = major == 1 ? 2 : 4;
  if (fread(prefix + 8, 1, len_bytes, f) != len_bytes) {
    st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT,
                   "%s: truncated header: the file ends inside the header length",
                   path);
    goto out;
  }
  uint32_t hlen = major == 1 ? (uint32_t)prefix[8] | (uint32_t)prefix[9] << 8
                             : (uint32_t)prefix[8] | (uint32_t)prefix[9] << 8 | (uint32_t)prefix[10] << 16 |
                                   (uint32_t)prefix[11] << 24;
  if (hlen == 0 || hlen > MAX_HEADER_LEN) {
    st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: bad header length %u", path, (unsigned)hlen);
    goto out;
  }
  char *text = malloc(hlen);
  if (!text) {
    st = skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto out;
  }
  got = fread(text, 1, hlen, f);
  if (got != hlen) {
    free(text);
    st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT,
                   "%s: truncated header: the header length says %u bytes, the file holds %zu", path, (unsigned)hlen,
                   got);
    goto out;
  }
  memset(h, 0, sizeof *h);
  const char *why = "";
  bool about_descr = false;
  st = parse_header(text, hlen, h, &why, &about_descr);
  free(text);
  if (st != SK_STATUS_OK) {
    if (about_descr)
      skm_error(msg, msg_size, st, "%s: descr '%s': %s", path, h->descr, why);
    else
      skm_error(msg, msg_size, st, "%s: bad header: %s", path, why);
    goto out;
  }
out:
  if (st != SK_STATUS_OK) {
    fclose(f);
    return st;
  }
  *f_out = f;
  return SK_STATUS_OK;
}

/* Reads exactly bytes of data and checks nothing follows. Closes f. */
static sk_status read_data(FILE *f, const char *path, void *data, size_t bytes, char *msg, size_t msg_size) {
  size_t got = bytes ? fread(data, 1, bytes, f) : 0;
  sk_status st = SK_STATUS_OK;
  if (got != bytes) {
    st = ferror(f) ? skm_error(msg, msg_size, SK_STATUS_SYSTEM_ERROR, "%s: read error: %s", path, strerror(errno))
                   : skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT,
                               "%s: truncated data: expected %zu bytes after the header, found %zu", path, bytes, got);
  } else if (fgetc(f) != EOF) {
    /* A regular file (open_and_read_header): its size tells how much
     * follows, where counting byte by byte took minutes for a large tail. */
    struct stat fst;
    off_t at = ftello(f);
    unsigned long long extra = fstat(fileno(f), &fst) == 0 && at > 0 && fst.st_size >= at
                                   ? (unsigned long long)(fst.st_size - at) + 1
                                   : 1;
    st = skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT,
                   "%s: %llu trailing byte%s after the %zu bytes of array data",
                   path, extra, extra == 1 ? "" : "s", bytes);
  }
  fclose(f);
  return st;
}

sk_status skm_npy_read(const char *path, skm_npy_array *out, char *msg, size_t msg_size) {
  if (!out) return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "npy read: out is NULL");
  memset(out, 0, sizeof *out);
  FILE *f;
  header h;
  sk_status st = open_and_read_header(path, &f, &h, msg, msg_size);
  if (st != SK_STATUS_OK) return st;
  size_t itemsize = sk_dtype_size(h.dtype);
  int64_t numel = shape_numel(h.rank, h.shape, itemsize);
  if (numel < 0) {
    fclose(f);
    char sb[256];
    return skm_error(msg, msg_size, SK_STATUS_INVALID_SHAPE, "%s: shape %s is too large", path,
                     shape_str(h.rank, h.shape, sb, sizeof sb));
  }
  size_t bytes = (size_t)numel * itemsize;
  void *data = malloc(bytes ? bytes : 1);
  if (!data) {
    fclose(f);
    return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, bytes);
  }
  st = read_data(f, path, data, bytes, msg, msg_size);
  if (st != SK_STATUS_OK) {
    free(data);
    return st;
  }
  out->dtype = h.dtype;
  out->rank = h.rank;
  memcpy(out->shape, h.shape, sizeof h.shape);
  out->numel = numel;
  out->data = data;
  out->bytes = bytes;
  return SK_STATUS_OK;
}

void skm_npy_free(skm_npy_array *array) {
  if (!array) return;
  free(array->data);
  memset(array, 0, sizeof *array);
}

sk_status skm_npy_read_into(const char *path, sk_dtype dtype, int rank, const int64_t *shape, void *data,
                            size_t bytes, char *msg, size_t msg_size) {
  char want[256], got[256];
  if (!skm_npy_descr(dtype) || rank < 0 || rank > SK_MAX_RANK || (rank > 0 && !shape))
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: npy read: bad expected dtype or rank",
                     path ? path : "(null)");
  int64_t numel = shape_numel(rank, shape, sk_dtype_size(dtype));
  if (numel < 0 || (size_t)numel * sk_dtype_size(dtype) != bytes || (bytes && !data))
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "%s: npy read: buffer of %zu bytes does not fit %s %s",
                     path ? path : "(null)", bytes, sk_dtype_name(dtype), shape_str(rank, shape, want, sizeof want));
  FILE *f;
  header h;
  sk_status st = open_and_read_header(path, &f, &h, msg, msg_size);
  if (st != SK_STATUS_OK) return st;
  if (h.dtype != dtype) {
    fclose(f);
    return skm_error(msg, msg_size, SK_STATUS_INVALID_DTYPE, "%s: dtype mismatch: expected %s ('%s'), got %s ('%s')",
                     path,
                     sk_dtype_name(dtype), skm_npy_descr(dtype), sk_dtype_name(h.dtype), h.descr);
  }
  bool same = h.rank == rank;
  for (int d = 0; same && d < rank; d++) same = h.shape[d] == shape[d];
  if (!same) {
    fclose(f);
    return skm_error(msg, msg_size, SK_STATUS_INVALID_SHAPE, "%s: shape mismatch: expected %s, got %s", path,
                     shape_str(rank, shape, want, sizeof want), shape_str(h.rank, h.shape, got, sizeof got));
  }
  return read_data(f, path, data, bytes, msg, msg_size);
}

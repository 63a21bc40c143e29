/* test_npy — tools/models/npy.c: round trips for every dtype and for 0-d,
 * empty and rank-8 shapes; numpy-style headers it must accept (versions 2.0
 * and 3.0, double quotes, no trailing comma); and bad files, each rejected
 * with a status and a message naming the file and the problem. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "npy.h"

static char dir[256];
static char msg[1024];

static const char *path_of(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

/* A .npy file with a given version, header dict text (padded with spaces and
 * a '\n' to a multiple of 64, as numpy does) and data bytes. */
static void make_npy(const char *path, int major, const char *dict, const void *data, size_t n) {
  unsigned char buf[4096];
  size_t pre = major == 1 ? 10 : 12, len = strlen(dict);
  size_t hlen = (pre + len + 1 + 63) / 64 * 64 - pre;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
  memset(buf + pre, ' ', hlen);
  memcpy(buf + pre, dict, len);
  buf[pre + hlen - 1] = '\n';
  if (n) memcpy(buf + pre + hlen, data, n);
  write_bytes(path, buf, pre + hlen + n);
}

static long file_size(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

/* The status and message fragments of a failed call. */
#define CHECK_NPY_FAILS(expr, status, ...)                                                          \
  do {                                                                                             \
    msg[0] = '\0';                                                                                 \
    sk_status st_ = (expr);                                                                        \
    CHECK_MSG(st_ == (status), "got %s (%s), want %s", sk_status_string(st_), msg,                \
              sk_status_string(status));                                                           \
    const char *frags_[] = {__VA_ARGS__};                                                          \
    for (size_t i_ = 0; i_ < sizeof frags_ / sizeof frags_[0]; i_++)                               \
      CHECK_MSG(strstr(msg, frags_[i_]) != NULL, "message \"%s\" lacks \"%s\"", msg, frags_[i_]); \
  } while (0)

#define CHECK_NPY_OK(expr)                                                   \
  do {                                                                       \
    msg[0] = '\0';                                                           \
    sk_status st_ = (expr);                                                  \
    CHECK_MSG(st_ == SK_STATUS_OK, "%s: %s", sk_status_string(st_), msg);    \
  } while (0)

/* ---- round trips --------------------------------------------------------- */

static void round_trip(sk_dtype dtype, int rank, const int64_t *shape) {
  const char *path = path_of("rt.npy");
  size_t itemsize = sk_dtype_size(dtype), numel = 1;
  for (int d = 0; d < rank; d++) numel *= (size_t)shape[d];
  size_t bytes = numel * itemsize;
  unsigned char *data = malloc(bytes + 1), *back = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(i * 131 + 7);
  CHECK_NPY_OK(skm_npy_write(path, dtype, rank, shape, data, msg, sizeof msg));
  long size = file_size(path);
  CHECK_MSG(size >= 64 && (size - (long)bytes) % 64 == 0, "%s rank %d: file size %ld, data %zu: header not 64-aligned",
            sk_dtype_name(dtype), rank, size, bytes);

  skm_npy_array a;
  CHECK_NPY_OK(skm_npy_read(path, &a, msg, sizeof msg));
  CHECK(a.dtype == dtype);
  CHECK(a.rank == rank);
  for (int d = 0; d < rank && d < a.rank; d++) CHECK(a.shape[d] == shape[d]);
  CHECK(a.bytes == bytes);
  CHECK(a.numel == (int64_t)numel);
  CHECK(a.data != NULL);
  CHECK(bytes == 0 || memcmp(a.data, data, bytes) == 0);
  skm_npy_free(&a);
  CHECK(a.data == NULL);

  memset(back, 0, bytes + 1);
  CHECK_NPY_OK(skm_npy_read_into(path, dtype, rank, shape, back, bytes, msg, sizeof msg));
  CHECK(bytes == 0 || memcmp(back, data, bytes) == 0);
  remove(path);
  free(data);
  free(back);
}

static void test_round_trip_every_dtype(void) {
  const sk_dtype dtypes[] = {SK_FP32, SK_FP16, SK_BF16, SK_INT8, SK_INT32, SK_INT64, SK_BOOL, SK_UINT8};
  const int64_t s1[] = {5}, s2[] = {3, 4}, s3[] = {6, 48, 64}, s_big[] = {257, 300};
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
    round_trip(dtypes[k], 1, s1);
    round_trip(dtypes[k], 2, s2);
    round_trip(dtypes[k], 3, s3);
    round_trip(dtypes[k], 2, s_big);
  }
}

static void test_round_trip_special_shapes(void) {
  const int64_t empty1[] = {0}, empty3[] = {3, 0, 2}, rank8[] = {2, 1, 3, 1, 2, 2, 1, 3};
  const sk_dtype dtypes[] = {SK_FP32, SK_FP16, SK_INT8, SK_INT64};
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
    round_trip(dtypes[k], 0, NULL); /* 0-d: one element */
    round_trip(dtypes[k], 1, empty1);
    round_trip(dtypes[k], 3, empty3);
    round_trip(dtypes[k], 8, rank8);
  }
}

static void test_header_text(void) {
  /* The exact numpy header of a [6,48,64] fp16 array, and of 0-d / 1-d ones. */
  const char *path = path_of("hdr.npy");
  const struct {
    int rank;
    int64_t shape[3];
    const char *text;
  } cases[] = {
      {3, {6, 48, 64}, "{'descr': '<f2', 'fortran_order': False, 'shape': (6, 48, 64), }"},
      {1, {1}, "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }"},
      {0, {0}, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }"},
  };
  for (size_t k = 0; k < 3; k++) {
    size_t n = 1;
    for (int d = 0; d < cases[k].rank; d++) n *= (size_t)cases[k].shape[d];
    uint16_t *data = calloc(n, 2);
    CHECK_NPY_OK(skm_npy_write(path, SK_FP16, cases[k].rank, cases[k].shape, data, msg, sizeof msg));
    free(data);
    char buf[129] = {0};
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) continue;
    CHECK(fread(buf, 1, 128, f) == 128);
    fclose(f);
    CHECK(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hlen = (unsigned char)buf[8] | (size_t)(unsigned char)buf[9] << 8;
    CHECK((10 + hlen) % 64 == 0);
    CHECK(buf[10 + hlen - 1] == '\n');
    CHECK_MSG(strncmp(buf + 10, cases[k].text, strlen(cases[k].text)) == 0, "header %.60s", buf + 10);
  }
  remove(path);
}

static void test_bf16_mapping(void) {
  CHECK(strcmp(skm_npy_descr(SK_BF16), "<u2") == 0);
  CHECK(strcmp(skm_npy_descr(SK_INT8), "|i1") == 0);
  CHECK(skm_npy_descr(SK_DTYPE_INVALID) == NULL);
  /* What np.save writes for an ml_dtypes bfloat16 array reads as bf16. */
  const char *path = path_of("bf16.npy");
  uint16_t v[2] = {0x3f80, 0xc000}, back[2];
  const char *descrs[] = {"<V2", "|V2", "<u2"};
  for (int k = 0; k < 3; k++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", descrs[k]);
    make_npy(path, 1, dict, v, sizeof v);
    CHECK_NPY_OK(skm_npy_read_into(path, SK_BF16, 1, (int64_t[]){2}, back, sizeof back, msg, sizeof msg));
    CHECK(back[0] == 0x3f80 && back[1] == 0xc000);
    CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP16, 1, (int64_t[]){2}, back, sizeof back, msg, sizeof msg),
                    SK_STATUS_INVALID_DTYPE, path, "expected fp16", "got bf16");
  }
  remove(path);
}

/* numpy's one-byte dtypes: bool '|b1' and uint8 '|u1' (any byte order is
 * fine for one byte; uint8 is not int8). */
static void test_one_byte_mapping(void) {
  CHECK(strcmp(skm_npy_descr(SK_BOOL), "|b1") == 0);
  CHECK(strcmp(skm_npy_descr(SK_UINT8), "|u1") == 0);
  const char *path = path_of("u1.npy");
  uint8_t v[2] = {1, 255}, back[2];
  const struct {
    const char *descr;
    sk_dtype dtype;
  } cases[] = {{"|b1", SK_BOOL}, {"<b1", SK_BOOL}, {"|u1", SK_UINT8}, {">u1", SK_UINT8}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", cases[k].descr);
    make_npy(path, 1, dict, v, sizeof v);
    memset(back, 0, sizeof back);
    CHECK_NPY_OK(skm_npy_read_into(path, cases[k].dtype, 1, (int64_t[]){2}, back, sizeof back, msg, sizeof msg));
    CHECK_MSG(memcmp(back, v, sizeof v) == 0, "%s", cases[k].descr);
  }
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_INT8, 1, (int64_t[]){2}, back, sizeof back, msg, sizeof msg),
                  SK_STATUS_INVALID_DTYPE, path, "expected int8", "got uint8");
  remove(path);
}

static void test_accepted_header_variants(void) {
  const char *path = path_of("var.npy");
  float v[6] = {1, 2, 3, 4, 5, 6}, back[6];
  const struct {
    int major;
    const char *dict;
  } ok[] = {
      {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}"},
      {1, "{'shape': (2,3), 'fortran_order': False, 'descr': '=f4'}"},
      {1, "{'descr':'<f4','fortran_order':False,'shape':(2L, 3L,)}"},
  };
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    make_npy(path, ok[k].major, ok[k].dict, v, sizeof v);
    memset(back, 0, sizeof back);
    CHECK_NPY_OK(skm_npy_read_into(path, SK_FP32, 2, (int64_t[]){2, 3}, back, sizeof back, msg, sizeof msg));
    CHECK_MSG(memcmp(back, v, sizeof v) == 0, "variant %zu", k);
  }
  remove(path);
}

/* ---- bad files ----------------------------------------------------------- */

static const char good_dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

static void test_missing_and_not_npy(void) {
  float buf[6];
  const int64_t shape[] = {2, 3};
  const char *path = path_of("does_not_exist.npy");
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, shape, buf, sizeof buf, msg, sizeof msg), SK_STATUS_NOT_FOUND,
                  path, "cannot open", "No such file");
  skm_npy_array a;
  CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), SK_STATUS_NOT_FOUND, path);

  path = path_of("text.npy");
  const char text[] = "hello, this is not a numpy file at all\n";
  write_bytes(path, text, sizeof text - 1);
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, shape, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, path, "not a .npy file", "bad magic");

  path = path_of("empty.npy");
  write_bytes(path, "", 0);
  CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, path, "not a .npy file");

  path = path_of("magic.npy");
  make_npy(path, 1, good_dict, buf, sizeof buf);
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f) {
    fputc('X', f); /* \x93NUMPY -> XNUMPY */
    fclose(f);
  }
  CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, path, "bad magic");

  /* A directory where the file should be: refused before any read. */
  CHECK_NPY_FAILS(skm_npy_read(dir, &a, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, dir, "not a regular file");
}

static void test_truncated(void) {
  float v[6] = {0}, buf[6];
  const int64_t shape[] = {2, 3};
  const char *path = path_of("trunc.npy");
  unsigned char raw[200];
  make_npy(path, 1, good_dict, v, sizeof v);
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(raw, 1, sizeof raw, f) : 0;
  if (f) fclose(f);
  size_t hlen = raw[8] | (size_t)raw[9] << 8, data_at = 10 + hlen;
  CHECK(hlen == 118); /* numpy's own header for this array */
  CHECK(n == data_at + sizeof v);

  write_bytes(path, raw, 9); /* inside the header length */
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, shape, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, path, "truncated header");
  write_bytes(path, raw, 40); /* inside the header text */
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, shape, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, path, "truncated header", "118 bytes", "holds 30");
  write_bytes(path, raw, data_at + 10); /* inside the data */
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, shape, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, path, "truncated data", "expected 24 bytes", "found 10");
  skm_npy_array a;
  CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, path, "truncated data");
  write_bytes(path, raw, data_at); /* no data at all */
  CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, path, "truncated data",
                  "found 0");

  /* Trailing garbage. */
  memcpy(raw + n, "JUNK", 4);
  write_bytes(path, raw, n + 4);
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, shape, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, path, "4 trailing bytes");
  CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, path, "trailing");
}

static void test_mismatch(void) {
  float v[6] = {0};
  float buf[6];
  uint16_t hbuf[6];
  const char *path = path_of("mismatch.npy");
  make_npy(path, 1, good_dict, v, sizeof v);
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP16, 2, (int64_t[]){2, 3}, hbuf, sizeof hbuf, msg, sizeof msg),
                  SK_STATUS_INVALID_DTYPE, path, "dtype mismatch", "expected fp16 ('<f2')", "got fp32 ('<f4')");
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, (int64_t[]){3, 2}, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_SHAPE, path, "shape mismatch", "expected [3, 2]", "got [2, 3]");
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 1, (int64_t[]){6}, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_SHAPE, path, "expected [6]", "got [2, 3]");
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 3, (int64_t[]){1, 2, 3}, buf, sizeof buf, msg, sizeof msg),
                  SK_STATUS_INVALID_SHAPE, path, "expected [1, 2, 3]", "got [2, 3]");
  /* A caller buffer that does not fit the expected shape is the caller's bug. */
  CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, (int64_t[]){2, 3}, buf, 8, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, path, "8 bytes");
  /* The buffer is untouched by a mismatch. */
  memset(buf, 0x5a, sizeof buf);
  CHECK(skm_npy_read_into(path, SK_FP32, 2, (int64_t[]){3, 2}, buf, sizeof buf, msg, sizeof msg) != SK_STATUS_OK);
  CHECK(((unsigned char *)buf)[0] == 0x5a && ((unsigned char *)buf)[23] == 0x5a);
  remove(path);
}

static void test_bad_headers(void) {
  float v[6] = {0}, buf[6];
  const char *path = path_of("bad.npy");
  const struct {
    const char *dict;
    sk_status status;
    const char *frag;
  } bad[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", SK_STATUS_UNSUPPORTED, "fortran_order is True"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", SK_STATUS_INVALID_DTYPE, "'<f8'"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }", SK_STATUS_INVALID_DTYPE, "unsupported dtype"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", SK_STATUS_UNSUPPORTED, "big-endian"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", SK_STATUS_INVALID_DTYPE,
       "structured"},
      {"{'descr': '<f4', 'shape': (2, 3), }", SK_STATUS_INVALID_ARGUMENT, "lacks 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2, 3), }", SK_STATUS_INVALID_ARGUMENT, "lacks 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False}", SK_STATUS_INVALID_ARGUMENT, "lacks 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", SK_STATUS_INVALID_ARGUMENT,
       "a key other than"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", SK_STATUS_INVALID_ARGUMENT,
       "a key twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", SK_STATUS_INVALID_ARGUMENT, "trailing comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", SK_STATUS_INVALID_ARGUMENT, "negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", SK_STATUS_INVALID_ARGUMENT, "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", SK_STATUS_INVALID_ARGUMENT, "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", SK_STATUS_INVALID_ARGUMENT, "neither True nor False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6)}", SK_STATUS_UNSUPPORTED, "rank above 8"},
      {"['descr', '<f4']", SK_STATUS_INVALID_ARGUMENT, "not a dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x", SK_STATUS_INVALID_ARGUMENT, "after the header"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}", SK_STATUS_INVALID_ARGUMENT, "malformed"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    make_npy(path, 1, bad[k].dict, v, sizeof v);
    CHECK_NPY_FAILS(skm_npy_read_into(path, SK_FP32, 2, (int64_t[]){2, 3}, buf, sizeof buf, msg, sizeof msg),
                    bad[k].status, path, bad[k].frag);
    skm_npy_array a;
    CHECK_NPY_FAILS(skm_npy_read(path, &a, msg, sizeof msg), bad[k].status, path, bad[k].frag);
  }
  /* Unknown versions and a zero header length. */
  make_npy(path, 4, good_dict, v, sizeof v);
  CHECK_NPY_FAILS(skm_npy_read(path, &(skm_npy_array){0}, msg, sizeof msg), SK_STATUS_UNSUPPORTED, path,
                  "version 4.0");
  const unsigned char zero_len[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  write_bytes(path, zero_len, sizeof zero_len);
  CHECK_NPY_FAILS(skm_npy_read(path, &(skm_npy_array){0}, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT, path,
                  "header length 0");
  remove(path);
}

static void test_write_errors(void) {
  const int64_t shape[] = {2};
  float v[2] = {1, 2};
  char path[600];
  snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
  CHECK_NPY_FAILS(skm_npy_write(path, SK_FP32, 1, shape, v, msg, sizeof msg), SK_STATUS_NOT_FOUND, path,
                  "cannot create");
  CHECK_NPY_FAILS(skm_npy_write(path_of("w.npy"), SK_DTYPE_INVALID, 1, shape, v, msg, sizeof msg),
                  SK_STATUS_INVALID_DTYPE, "w.npy", "invalid");
  CHECK_NPY_FAILS(skm_npy_write(path_of("w.npy"), SK_FP32, 9, (int64_t[9]){1}, v, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, "w.npy", "rank 9");
  CHECK_NPY_FAILS(skm_npy_write(path_of("w.npy"), SK_FP32, 1, (int64_t[]){-1}, v, msg, sizeof msg),
                  SK_STATUS_INVALID_SHAPE, "w.npy", "[-1]");
  CHECK_NPY_FAILS(skm_npy_write(path_of("w.npy"), SK_FP32, 1, shape, NULL, msg, sizeof msg),
                  SK_STATUS_INVALID_ARGUMENT, "w.npy", "NULL");
  /* NULL message buffers are allowed. */
  CHECK(skm_npy_write(path, SK_FP32, 1, shape, v, NULL, 0) == SK_STATUS_NOT_FOUND);
  remove(path_of("w.npy"));
}

/* Writing never follows a symbolic link, and a write that fails leaves the
 * previous file as it was (issue 15, item 7): a temporary in the same
 * directory is renamed over the name once complete. */
static void test_safe_writes(void) {
  const int64_t shape[] = {4};
  float v[4] = {1, 2, 3, 4};
  char target[600], link_path[600];
  snprintf(target, sizeof target, "%s/target.txt", dir);
  FILE *f = fopen(target, "w");
  CHECK(f && fputs("keep\n", f) >= 0 && fclose(f) == 0);
  snprintf(link_path, sizeof link_path, "%s/link.npy", dir);
  CHECK(symlink(target, link_path) == 0);
  CHECK_NPY_FAILS(skm_npy_write(link_path, SK_FP32, 1, shape, v, msg, sizeof msg), SK_STATUS_INVALID_ARGUMENT,
                  "link.npy", "a symbolic link", "not overwritten");
  char line[16] = "";
  f = fopen(target, "r");
  CHECK_MSG(f && fgets(line, sizeof line, f) && strcmp(line, "keep\n") == 0, "the link's target was written");
  if (f) fclose(f);
  remove(link_path);
  remove(target);

  /* A failed write (a file-size limit in a child, SIGXFSZ ignored): the
   * previous file stands, and no temporary is left. */
  const char *path = path_of("w.npy");
  CHECK_NPY_OK(skm_npy_write(path, SK_FP32, 1, shape, v, msg, sizeof msg));
  struct stat before;
  CHECK(stat(path, &before) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &rl);
    static float big[1 << 14]; /* 64 KiB: past the limit */
    char m[512];
    sk_status st = skm_npy_write(path, SK_FP32, 1, (int64_t[]){1 << 14}, big, m, sizeof m);
    _exit(st == SK_STATUS_SYSTEM_ERROR && strstr(m, "write failed") ? 0 : 1);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the oversized write did not fail as a write failure");
  skm_npy_array a;
  CHECK_NPY_OK(skm_npy_read(path, &a, msg, sizeof msg));
  CHECK_MSG(a.rank == 1 && a.shape[0] == 4 && memcmp(a.data, v, sizeof v) == 0, "the previous file was damaged");
  skm_npy_free(&a);
  DIR *d = opendir(dir);
  int temporaries = 0;
  for (struct dirent *e; d && (e = readdir(d));) temporaries += strstr(e->d_name, ".tmp-") != NULL;
  if (d) closedir(d);
  CHECK_MSG(temporaries == 0, "%d temporaries left", temporaries);
}

static void setup(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/sk_test_npy_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
}

static void teardown(void) {
  const char *names[] = {"rt.npy", "hdr.npy", "bf16.npy", "var.npy", "text.npy", "empty.npy", "magic.npy",
                         "trunc.npy", "mismatch.npy", "bad.npy", "w.npy"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) remove(path_of(names[i]));
  rmdir(dir);
}

int main(void) {
  setup();
  static const harness_case cases[] = {
      TEST_CASE(test_round_trip_every_dtype), TEST_CASE(test_round_trip_special_shapes),
      TEST_CASE(test_header_text),            TEST_CASE(test_bf16_mapping),
      TEST_CASE(test_one_byte_mapping),       TEST_CASE(test_safe_writes),
      TEST_CASE(test_accepted_header_variants), TEST_CASE(test_missing_and_not_npy),
      TEST_CASE(test_truncated),              TEST_CASE(test_mismatch),
      TEST_CASE(test_bad_headers),            TEST_CASE(test_write_errors),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  teardown();
  return rc;
}

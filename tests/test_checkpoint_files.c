/* test_checkpoint_files — the readers under `sk --weights`: tools/models/json.c
 * (strict JSON: what it accepts, what it refuses and where, deep nesting,
 * escapes, exact integers) and tools/models/safetensors.c (a directory of
 * files mapped and checked: lookups and values; every malformed file
 * refused with a message naming the file and the problem). The end-to-end
 * checks against transformers are tests/python/test_checkpoint.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "safetensors.h"

static char dir[256];
static char msg[1024];

/* expr fails with status and msg (the reader's message) holds fragment. */
#define REFUSED(expr, status, fragment)                                                          \
  do {                                                                                           \
    msg[0] = '\0';                                                                               \
    sk_status st_ = (expr);                                                                      \
    CHECK_MSG(st_ == (status), "got %s, want %s", sk_status_string(st_), sk_status_string(status)); \
    CHECK_MSG(strstr(msg, fragment) != NULL, "message \"%s\" lacks \"%s\"", msg, fragment);       \
  } while (0)

static bool parse(const char *text, skj_value *v) { return skj_parse(text, strlen(text), v, msg, sizeof msg); }

static void test_json_accepts(void) {
  skj_value v;
  CHECK(parse(" {\"a\": [1, -2.5e1, true, false, null, \"x\"], \"b\": {}, \"c\": []} ", &v));
  const skj_value *a = skj_get(&v, "a");
  CHECK(a && a->type == SKJ_ARRAY && a->n == 6);
  if (a && a->n == 6) {
    CHECK(a->items[0].is_integer && a->items[0].integer == 1);
    CHECK(!a->items[1].is_integer && a->items[1].number == -25.0);
    CHECK(a->items[2].type == SKJ_BOOL && a->items[2].boolean && !a->items[3].boolean);
    CHECK(a->items[4].type == SKJ_NULL && strcmp(a->items[5].string, "x") == 0);
  }
  CHECK(skj_get(&v, "b")->type == SKJ_OBJECT && skj_get(&v, "c")->n == 0 && !skj_get(&v, "d"));
  skj_free(&v);
  /* Integers beyond 2^53 stay exact (safetensors offsets are integers). */
  CHECK(parse("[9007199254740993, 0, -0]", &v));
  CHECK(v.items[0].is_integer && v.items[0].integer == 9007199254740993LL);
  skj_free(&v);
  /* Escapes, a surrogate pair, and the last of repeated members. */
  CHECK(parse("{\"k\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\", \"k\": 2}", &v));
  CHECK(skj_get(&v, "k")->integer == 2);
  CHECK(strcmp(v.items[0].string, "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80") == 0);
  skj_free(&v);
  /* The text need not be NUL-terminated: only len bytes are read. */
  CHECK(skj_parse("123456", 3, &v, msg, sizeof msg) && v.integer == 123);
  skj_free(&v);
}

static void test_json_refuses(void) {
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"", "unexpected end"},          {"[1,]", "unexpected character"}, {"{\"a\":1,}", "expected a string"},
      {"01", "text after the value"},  {"1.", "digits expected"},        {"1e+", "digits expected"},
      {"-", "unexpected character"},   {"\"abc", "unterminated"},        {"\"a\tb\"", "control character"},
      {"\"\\x\"", "bad escape"},       {"\"\\u12g4\"", "bad \\u escape"}, {"\"\\ud800\"", "unpaired surrogate"},
      {"\"\\u0000\"", "NUL"},          {"{\"a\" 1}", "expected ':'"},     {"[1 2]", "expected ',' or ']'"},
      {"tru", "unexpected character"}, {"{} {}", "text after the value"}, {"// c\n{}", "unexpected character"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    skj_value v;
    msg[0] = '\0';
    CHECK_MSG(!parse(bad[i].text, &v), "accepted '%s'", bad[i].text);
    CHECK_MSG(strstr(msg, bad[i].why) && strstr(msg, "invalid JSON at byte"), "'%s': %s", bad[i].text, msg);
    CHECK(v.type == SKJ_NULL && v.n == 0);
  }
  /* Nesting is bounded, so a hostile file cannot exhaust the stack. */
  char deep[4 * SKJ_MAX_DEPTH];
  memset(deep, '[', sizeof deep);
  skj_value v;
  CHECK(!skj_parse(deep, sizeof deep, &v, msg, sizeof msg) && strstr(msg, "nested deeper"));
  char ok[2 * SKJ_MAX_DEPTH];
  memset(ok, '[', SKJ_MAX_DEPTH), memset(ok + SKJ_MAX_DEPTH, ']', SKJ_MAX_DEPTH);
  CHECK(skj_parse(ok, sizeof ok, &v, msg, sizeof msg));
  skj_free(&v);
}

/* ---- safetensors ---- */

static void write_st(const char *name, const char *header, const void *data, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  uint64_t len = strlen(header);
  unsigned char le[8];
  for (int i = 0; i < 8; i++) le[i] = (unsigned char)(len >> (8 * i));
  CHECK(fwrite(le, 1, 8, f) == 8 && fwrite(header, 1, len, f) == len && (!n || fwrite(data, 1, n, f) == n));
  fclose(f);
}

static void clear_dir(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  CHECK(system(cmd) == 0);
}

static void test_safetensors_reads(void) {
  clear_dir();
  float f32[3] = {1.5f, -2.0f, 0.25f};
  uint16_t bf16[2] = {sk_fp32_to_bf16(3.0f), sk_fp32_to_bf16(-0.5f)};
  unsigned char data[16];
  memcpy(data, f32, 12), memcpy(data + 12, bf16, 4);
  write_st("a.safetensors",
           "{\"__metadata__\": {\"format\": \"pt\"}, \"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": "
           "[0, 12]}, \"b\": {\"dtype\": \"BF16\", \"shape\": [1, 2], \"data_offsets\": [12, 16]}}",
           data, sizeof data);
  write_st("b.safetensors", "{\"e\": {\"dtype\": \"F8_E4M3\", \"shape\": [0, 5], \"data_offsets\": [0, 0]}}", NULL, 0);
  skm_st_dir *d = NULL;
  CHECK_OK(skm_st_open(dir, &d, msg, sizeof msg));
  if (!d) return;
  CHECK(skm_st_count(d) == 3 && skm_st_files(d) == 2);
  const skm_st_tensor *w = skm_st_find(d, "w"), *b = skm_st_find(d, "b"), *e = skm_st_find(d, "e");
  CHECK(w && b && e && !skm_st_find(d, "__metadata__") && !skm_st_find(d, "x"));
  if (w && b && e) {
    CHECK(w->dtype == SK_FP32 && w->rank == 1 && w->numel == 3 && skm_st_float_at(w, 2) == 0.25f);
    CHECK(b->dtype == SK_BF16 && b->shape[1] == 2 && skm_st_float_at(b, 0) == 3.0f && skm_st_float_at(b, 1) == -0.5f);
    CHECK(e->dtype == SK_DTYPE_INVALID && strcmp(e->dtype_name, "F8_E4M3") == 0 && e->numel == 0 && !skm_st_is_float(e));
    CHECK(strcmp(w->file, "a.safetensors") == 0 && strcmp(e->file, "b.safetensors") == 0);
  }
  skm_st_close(d);
}

/* Every FP8 E4M3 byte against the format's definition in double (sign,
 * 4 exponent bits of bias 7, 3 mantissa bits; exponent 0 subnormal;
 * S.1111.111 NaN, no infinities), a few known values, and an F8_E4M3
 * tensor read through skm_st_float_at. */
static void test_fp8_e4m3_values(void) {
  for (int b = 0; b < 256; b++) {
    int e = (b >> 3) & 15, m = b & 7;
    float got = skm_fp8_e4m3_to_float((uint8_t)b);
    if (e == 15 && m == 7) {
      CHECK_MSG(got != got, "0x%02x: %g, not NaN", b, got);
      continue;
    }
    double want = (e == 0 ? m / 8.0 * ldexp(1.0, -6) : (1.0 + m / 8.0) * ldexp(1.0, e - 7)) * (b & 0x80 ? -1 : 1);
    CHECK_MSG((double)got == want && (b != 0x80 || signbit(got)), "0x%02x: %g, want %g", b, got, want);
  }
  CHECK(skm_fp8_e4m3_to_float(0x38) == 1.0f && skm_fp8_e4m3_to_float(0x7E) == 448.0f &&
        skm_fp8_e4m3_to_float(0x01) == 0x1p-9f && skm_fp8_e4m3_to_float(0xC0) == -2.0f);
  clear_dir();
  unsigned char codes[4] = {0x38, 0xC0, 0x7E, 0x01};
  write_st("f.safetensors", "{\"q\": {\"dtype\": \"F8_E4M3\", \"shape\": [2, 2], \"data_offsets\": [0, 4]}}",
           codes, sizeof codes);
  skm_st_dir *d = NULL;
  CHECK_OK(skm_st_open(dir, &d, msg, sizeof msg));
  const skm_st_tensor *q = d ? skm_st_find(d, "q") : NULL;
  CHECK(q && q->fp8_e4m3 && !skm_st_is_float(q));
  if (q) CHECK(skm_st_float_at(q, 1) == -2.0f && skm_st_float_at(q, 2) == 448.0f && skm_st_float_at(q, 3) == 0x1p-9f);
  skm_st_close(d);
}

static void expect_refused(const char *header, size_t data_bytes, sk_status status, const char *why) {
  clear_dir();
  unsigned char data[64] = {0};
  write_st("m.safetensors", header, data, data_bytes);
  skm_st_dir *d = NULL;
  msg[0] = '\0';
  sk_status st = skm_st_open(dir, &d, msg, sizeof msg);
  CHECK_MSG(st == status && !d, "%s: status %d", header, (int)st);
  CHECK_MSG(strstr(msg, why) && strstr(msg, "m.safetensors"), "%s: %s", header, msg);
  skm_st_close(d);
}

static void test_safetensors_refuses(void) {
  const sk_status bad = SK_STATUS_INVALID_ARGUMENT;
  expect_refused("[]", 0, bad, "expected an object");
  expect_refused("{\"w\": 1}", 0, bad, "expected an object with");
  expect_refused("{\"w\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1, bad, "unknown dtype 'Q4'");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4, bad, "non-negative");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4, bad,
                 "at most 8");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 16]}}", 8, bad, "end <= 8");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8, bad, "begin <= end");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8, bad,
                 "8 bytes of data for 3 elements");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 8]}}", 8,
                 bad, "overflows");
  expect_refused("{\"w\": {\"dtype\": \"F32\"", 0, bad, "invalid JSON");
  /* A header length past the end of the file. */
  clear_dir();
  write_st("m.safetensors", "{}", NULL, 0);
  char path[512];
  snprintf(path, sizeof path, "%s/m.safetensors", dir);
  FILE *f = fopen(path, "r+b");
  CHECK(f && fputc(0x7f, f) != EOF);
  if (f) fclose(f);
  skm_st_dir *d = NULL;
  REFUSED(skm_st_open(dir, &d, msg, sizeof msg), bad, "does not fit the file");
  /* Too short to hold the length; a directory that only looks like a file. */
  clear_dir();
  snprintf(path, sizeof path, "%s/m.safetensors", dir);
  f = fopen(path, "wb");
  CHECK(f && fwrite("abc", 1, 3, f) == 3);
  if (f) fclose(f);
  REFUSED(skm_st_open(dir, &d, msg, sizeof msg), bad, "too short");
  clear_dir();
  CHECK(mkdir(path, 0700) == 0);
  REFUSED(skm_st_open(dir, &d, msg, sizeof msg), bad, "not a regular file");
  /* The same name in two files; no file at all; no directory. */
  clear_dir();
  float v = 1.0f;
  write_st("a.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]}}", &v, 4);
  write_st("b.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", &v, 4);
  REFUSED(skm_st_open(dir, &d, msg, sizeof msg), bad, "tensor 'w' is in a.safetensors and in b.safetensors");
  clear_dir();
  REFUSED(skm_st_open(dir, &d, msg, sizeof msg), SK_STATUS_NOT_FOUND, "no *.safetensors file");
  REFUSED(skm_st_open("/nonexistent-sk-dir", &d, msg, sizeof msg), SK_STATUS_NOT_FOUND, "No such file");
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/sk_test_checkpoint_%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  static const harness_case cases[] = {
      TEST_CASE(test_json_accepts),
      TEST_CASE(test_json_refuses),
      TEST_CASE(test_safetensors_reads),
      TEST_CASE(test_safetensors_refuses),
      TEST_CASE(test_fp8_e4m3_values),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return rc;
}

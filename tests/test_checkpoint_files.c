/* test_checkpoint_files — the library's checkpoint reader
 * (superkernel_checkpoint.h, src/checkpoint/): a directory's safetensors
 * files mapped and checked (lookups and values; every malformed file
 * refused with a message naming the file and the problem), config.json and
 * the index's shards, the weight callback (aligned copies, FP8 weights
 * dequantized with their block scales, dtypes refused by name) and
 * sk_model_create_from_checkpoint's own checks. Whole models made from
 * checkpoint directories are tested through `sk run model` (tests/tools.cmake)
 * and against transformers in tests/python/test_checkpoint.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "superkernel_checkpoint.h"

static char dir[256];

static void write_file(const char *name, const void *bytes, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(!n || fwrite(bytes, 1, n, f) == n);
  fclose(f);
}

/* A safetensors file: the 8-byte header length, the header, the data. */
static void write_st(const char *name, const char *header, const void *data, size_t n) {
  const size_t len = strlen(header);
  unsigned char *bytes = malloc(8 + len + n);
  CHECK(bytes != NULL);
  if (!bytes) return;
  for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)len >> (8 * i));
  memcpy(bytes + 8, header, len);
  if (n) memcpy(bytes + 8 + len, data, n);
  write_file(name, bytes, 8 + len + n);
  free(bytes);
}

/* An empty directory holding only config.json (text). */
static void fresh_dir(const char *config) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  CHECK(system(cmd) == 0);
  write_file("config.json", config, strlen(config));
}

static void test_reads(void) {
  fresh_dir("{\"model_type\": \"none\"}");
  float f32[3] = {1.5f, -2.0f, 0.25f};
  uint16_t bf16[2] = {sk_fp32_to_bf16(3.0f), sk_fp32_to_bf16(-0.5f)};
  unsigned char data[16];
  memcpy(data, f32, 12), memcpy(data + 12, bf16, 4);
  write_st("a.safetensors",
           "{\"__metadata__\": {\"format\": \"pt\"}, \"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": "
           "[0, 12]}, \"b\": {\"dtype\": \"BF16\", \"shape\": [1, 2], \"data_offsets\": [12, 16]}}   ",
           data, sizeof data);
  write_st("b.safetensors", "{\"e\": {\"dtype\": \"F8_E4M3\", \"shape\": [0, 5], \"data_offsets\": [0, 0]}}", NULL, 0);
  sk_checkpoint *ck = NULL;
  CHECK_OK(sk_checkpoint_open(dir, &ck));
  if (!ck) return;
  CHECK(strcmp(sk_checkpoint_config_json(ck), "{\"model_type\": \"none\"}") == 0);
  CHECK(strcmp(sk_checkpoint_dir(ck), dir) == 0);
  CHECK(sk_checkpoint_tensor_count(ck) == 3 && sk_checkpoint_file_count(ck) == 2);
  const sk_checkpoint_tensor *w = sk_checkpoint_find(ck, "w"), *b = sk_checkpoint_find(ck, "b"),
                             *e = sk_checkpoint_find(ck, "e");
  CHECK(w && b && e && !sk_checkpoint_find(ck, "__metadata__") && !sk_checkpoint_find(ck, "x"));
  /* name order */
  CHECK(sk_checkpoint_tensor_at(ck, 0) == b && sk_checkpoint_tensor_at(ck, 2) == w && !sk_checkpoint_tensor_at(ck, 3));
  if (w && b && e) {
    CHECK(w->dtype == SK_FP32 && w->rank == 1 && w->numel == 3 && sk_checkpoint_float_at(w, 2) == 0.25f);
    CHECK(isnan(sk_checkpoint_float_at(w, 3)) && isnan(sk_checkpoint_float_at(w, -1)));
    CHECK(b->dtype == SK_BF16 && b->shape[1] == 2 && sk_checkpoint_float_at(b, 0) == 3.0f &&
          sk_checkpoint_float_at(b, 1) == -0.5f);
    CHECK(e->dtype == SK_DTYPE_INVALID && strcmp(e->dtype_name, "F8_E4M3") == 0 && e->numel == 0);
    CHECK(strcmp(w->file, "a.safetensors") == 0 && strcmp(e->file, "b.safetensors") == 0);
    CHECK(!w->used && !b->used);
  }
  sk_checkpoint_close(ck);
}

/* Every FP8 E4M3 byte against the format's definition in double (sign,
 * 4 exponent bits of bias 7, 3 mantissa bits; exponent 0 subnormal;
 * S.1111.111 NaN, no infinities), and a few known values. */
static void test_fp8_e4m3_values(void) {
  for (int b = 0; b < 256; b++) {
    int e = (b >> 3) & 15, m = b & 7;
    float got = sk_fp8_e4m3_to_fp32((uint8_t)b);
    if (e == 15 && m == 7) {
      CHECK_MSG(got != got, "0x%02x: %g, not NaN", b, got);
      continue;
    }
    double want = (e == 0 ? m / 8.0 * ldexp(1.0, -6) : (1.0 + m / 8.0) * ldexp(1.0, e - 7)) * (b & 0x80 ? -1 : 1);
    CHECK_MSG((double)got == want && (b != 0x80 || signbit(got)), "0x%02x: %g, want %g", b, got, want);
  }
  CHECK(sk_fp8_e4m3_to_fp32(0x38) == 1.0f && sk_fp8_e4m3_to_fp32(0x7E) == 448.0f &&
        sk_fp8_e4m3_to_fp32(0x01) == 0x1p-9f && sk_fp8_e4m3_to_fp32(0xC0) == -2.0f);
}

/* The weight callback: an FP8 weight dequantized with its block scales
 * into the embedding table's dtype, an unaligned tensor copied aligned,
 * an integer tensor refused naming its dtype and file. */
static void test_weight_callback(void) {
  fresh_dir("{\"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [1, 2]}}");
  /* q [2, 3] F8 at 0; its scales [2, 2] F32 at 8; the table [1, 2] BF16 at 24; u [1] BF16 at 29 (odd) */
  unsigned char data[32] = {0x38, 0xC0, 0x7E, 0x01, 0x38, 0x38};
  const float scales[4] = {2.0f, 0.5f, -1.0f, 4.0f};
  memcpy(data + 8, scales, sizeof scales);
  const uint16_t one = sk_fp32_to_bf16(1.0f), seven = sk_fp32_to_bf16(7.0f);
  memcpy(data + 24, &one, 2), memcpy(data + 26, &one, 2), memcpy(data + 29, &seven, 2);
  write_st("m.safetensors",
           "{\"q\": {\"dtype\": \"F8_E4M3\", \"shape\": [2, 3], \"data_offsets\": [0, 6]}, "
           "\"q_scale_inv\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [8, 24]}, "
           "\"model.embed_tokens.weight\": {\"dtype\": \"BF16\", \"shape\": [1, 2], \"data_offsets\": [24, 28]}, "
           "\"i\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [28, 32]}, "
           "\"u\": {\"dtype\": \"BF16\", \"shape\": [1], \"data_offsets\": [29, 31]}}",
           data, sizeof data);
  sk_checkpoint *ck = NULL;
  CHECK_OK(sk_checkpoint_open(dir, &ck));
  if (!ck) return;
  sk_model_tensor t;
  CHECK_OK(sk_checkpoint_weight(ck, "q", &t));
  CHECK(t.dtype == SK_BF16 && t.rank == 2 && t.shape[0] == 2 && t.shape[1] == 3);
  /* row 0: {1, -2} * 2, {448} * 0.5; row 1: {2^-9, 1} * -1, {1} * 4 */
  const float want[6] = {2.0f, -4.0f, 224.0f, -0x1p-9f, -1.0f, 4.0f};
  for (int k = 0; k < 6; k++)
    CHECK_MSG(sk_bf16_to_fp32(((const uint16_t *)t.data)[k]) == want[k], "q[%d] = %g, want %g", k,
              sk_bf16_to_fp32(((const uint16_t *)t.data)[k]), want[k]);
  CHECK(sk_checkpoint_find(ck, "q")->used && !sk_checkpoint_find(ck, "q_scale_inv")->used);
  CHECK_OK(sk_checkpoint_weight(ck, "u", &t));
  CHECK(t.dtype == SK_BF16 && (uintptr_t)t.data % 2 == 0 && sk_bf16_to_fp32(*(const uint16_t *)t.data) == 7.0f);
  CHECK(sk_checkpoint_weight(ck, "nothing", &t) == SK_STATUS_NOT_FOUND);
  CHECK_FAILS(sk_checkpoint_weight(ck, "i", &t), SK_STATUS_INVALID_DTYPE, "dtype I32", "m.safetensors");
  /* FP8 without its scales */
  sk_checkpoint_close(ck);
  fresh_dir("{}");
  write_st("m.safetensors", "{\"q\": {\"dtype\": \"F8_E4M3\", \"shape\": [1, 1], \"data_offsets\": [0, 1]}}", data, 1);
  CHECK_OK(sk_checkpoint_open(dir, &ck));
  if (ck) CHECK_FAILS(sk_checkpoint_weight(ck, "q", &t), SK_STATUS_INVALID_DTYPE, "F8_E4M3", "quantization_config");
  sk_checkpoint_close(ck);
}

/* sk_model_create_from_checkpoint: its own arguments, and the library's
 * config errors with the directory. */
static void test_model_from_checkpoint(void) {
  fresh_dir("{\"model_type\": \"no_such_family\"}");
  float v = 1.0f;
  write_st("m.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", &v, 4);
  sk_checkpoint *ck = NULL;
  CHECK_OK(sk_checkpoint_open(dir, &ck));
  if (!ck) return;
  sk_model *model = NULL;
  CHECK_FAILS(sk_model_create_from_checkpoint(ck, NULL, &model), SK_STATUS_UNSUPPORTED, dir,
              "config.json: model_type", "no_such_family");
  sk_model_config cfg = {.config_json = "{}"};
  CHECK_FAILS(sk_model_create_from_checkpoint(ck, &cfg, &model), SK_STATUS_INVALID_ARGUMENT, "must be NULL");
  cfg = (sk_model_config){.struct_size = 3};
  CHECK_FAILS(sk_model_create_from_checkpoint(ck, &cfg, &model), SK_STATUS_INVALID_ARGUMENT, "struct_size 3");
  CHECK_FAILS(sk_model_create_from_checkpoint(NULL, NULL, &model), SK_STATUS_INVALID_ARGUMENT, "checkpoint");
  CHECK(model == NULL);
  sk_checkpoint_close(ck);
  sk_checkpoint_close(NULL);
}

static void expect_refused(const char *header, size_t data_bytes, sk_status status, const char *why) {
  fresh_dir("{}");
  unsigned char data[64] = {0};
  write_st("m.safetensors", header, data, data_bytes);
  sk_checkpoint *ck = NULL;
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), status, why, "m.safetensors");
  CHECK(ck == NULL);
}

static void test_refuses(void) {
  const sk_status bad = SK_STATUS_INVALID_ARGUMENT;
  expect_refused("[]", 0, bad, "expected an object");
  expect_refused("{\"w\": 1}", 0, bad, "expected an object with");
  expect_refused("{\"w\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1, bad, "unknown dtype 'Q4'");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4, bad, "non-negative");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", 4, bad, "non-negative");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4, bad,
                 "at most 8");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 16]}}", 8, bad, "end <= 8");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8, bad, "begin <= end");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8, bad,
                 "8 bytes of data for 3 elements");
  expect_refused("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 8]}}", 8,
                 bad, "overflows");
  expect_refused("{\"w\": {\"dtype\": \"F32\"", 0, bad, "invalid JSON");
  expect_refused("{} {}", 0, bad, "text after the value");
  /* Nesting far deeper than any header: refused, not a stack overflow. */
  char deep[40001];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = '\0';
  expect_refused(deep, 0, bad, "invalid JSON");
  /* A header length past the end of the file. */
  fresh_dir("{}");
  write_st("m.safetensors", "{}", NULL, 0);
  char path[512];
  snprintf(path, sizeof path, "%s/m.safetensors", dir);
  FILE *f = fopen(path, "r+b");
  CHECK(f && fputc(0x7f, f) != EOF);
  if (f) fclose(f);
  sk_checkpoint *ck = NULL;
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), bad, "does not fit the file");
  /* Too short to hold the length; a directory that only looks like a file. */
  fresh_dir("{}");
  write_file("m.safetensors", "abc", 3);
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), bad, "too short");
  fresh_dir("{}");
  CHECK(mkdir(path, 0700) == 0);
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), bad, "not a regular file");
  /* The same name in two files; no file at all; no config.json; no directory. */
  fresh_dir("{}");
  float v = 1.0f;
  write_st("a.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]}}", &v, 4);
  write_st("b.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", &v, 4);
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), bad, "tensor 'w' is in a.safetensors and in b.safetensors");
  fresh_dir("{}");
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), SK_STATUS_NOT_FOUND, "no *.safetensors file");
  snprintf(path, sizeof path, "%s/config.json", dir);
  CHECK(unlink(path) == 0);
  write_st("a.safetensors", "{}", NULL, 0);
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), SK_STATUS_NOT_FOUND, "config.json", "No such file");
  CHECK_FAILS(sk_checkpoint_open("/nonexistent-sk-dir", &ck), SK_STATUS_NOT_FOUND, "No such file");
  CHECK_FAILS(sk_checkpoint_open(path, &ck), SK_STATUS_NOT_FOUND, "No such file");
  CHECK_FAILS(sk_checkpoint_open(NULL, &ck), bad, "none given");
  /* An index naming a shard that is not there. */
  fresh_dir("{}");
  write_st("a.safetensors", "{}", NULL, 0);
  const char *index = "{\"weight_map\": {\"w\": \"a.safetensors\", \"v\": \"b.safetensors\"}}";
  write_file("model.safetensors.index.json", index, strlen(index));
  CHECK_FAILS(sk_checkpoint_open(dir, &ck), SK_STATUS_NOT_FOUND, "b.safetensors: missing", "tensor v");
  CHECK(ck == NULL);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/sk_test_checkpoint_%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  static const harness_case cases[] = {
      TEST_CASE(test_reads),
      TEST_CASE(test_fp8_e4m3_values),
      TEST_CASE(test_weight_callback),
      TEST_CASE(test_model_from_checkpoint),
      TEST_CASE(test_refuses),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return rc;
}

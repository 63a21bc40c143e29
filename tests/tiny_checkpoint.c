/* tiny_checkpoint — the tiny models of tiny_model.h as Hugging Face
 * checkpoint directories, for the tests of `sk run model` and `sk bench
 * model` (tests/tools.cmake), and the ids those must print:
 *
 *   tiny_checkpoint write DIR llama|qwen3_moe [OPTION...] [-- CMD ARGS...]
 *       DIR/config.json and DIR/model.safetensors (bf16; the experts one
 *       tensor each, as checkpoints store them), then runs CMD if given.
 *       Options make it a bad one (or an odd one):
 *         --drop NAME       leave tensor NAME out
 *         --grow NAME       NAME with one more row than the config says
 *         --fp8 NAME        NAME stored as F8_E4M3 (no scales: refused)
 *         --fp8-all         every *_proj.weight as block-scaled FP8 (16 x 16
 *                           blocks, "<name>_scale_inv" F32; config.json's
 *                           quantization_config says so), DeepSeek-V3's format
 *         --cut N           the safetensors file cut short by N bytes
 *         --keep N          ... cut to its first N bytes
 *         --no-config       no config.json
 *         --model-type T    config.json's model_type is T
 *         --shards          two files and model.safetensors.index.json
 *         --lose-shard      ... without the second file
 *         --odd-offset      every tensor's data at an odd address (the
 *                           reader must copy them to aligned memory)
 *   tiny_checkpoint greedy llama|qwen3_moe IDS N [--fp8-all] [--w8a8]
 *       the N ids greedy decoding of prompt IDS gives through the library
 *       directly (sk_model_forward, the reference executor, the weights in
 *       memory with the experts fused), as `sk run model` prints them;
 *       --fp8-all: with the weights --fp8-all writes, dequantized here
 *       (fp8 * scale in fp32, rounded once to bf16) as the reader must;
 *       --w8a8: the model made with quantize = "w8a8".
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tiny_model.h"

static int fail(const char *fmt, const char *arg) {
  fprintf(stderr, "tiny_checkpoint: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  return 2;
}

/* ---- block-scaled FP8 (--fp8-all) ---- */

#define FP8_BLOCK 16
#define FP8_MAX 448.0f /* E4M3's largest finite value */

/* The value of an E4M3 byte ("e4m3fn": bias 7, no infinities, 0x7F/0xFF NaN). */
static float e4m3_value(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
  return b & 0x80 ? -v : v;
}

/* The E4M3 byte nearest x (|x| <= 448), by search: the test's own encoder. */
static uint8_t e4m3_nearest(float x) {
  uint8_t best = 0;
  for (uint8_t c = 1; c < 0x7F; c++)
    if (fabsf(e4m3_value(c) - fabsf(x)) < fabsf(e4m3_value(best) - fabsf(x))) best = c;
  return (uint8_t)(best | (x < 0 ? 0x80 : 0));
}

static bool fp8_eligible(const tiny_weight *w) {
  const size_t n = strlen(w->name), suffix = strlen("_proj.weight");
  return w->t.rank == 2 && n > suffix && strcmp(w->name + n - suffix, "_proj.weight") == 0;
}

/* Weight w as FP8 codes [rows, cols] and block scales (malloc'd), its
 * bf16 values replaced by what they dequantize to. */
static void fp8_quantize(tiny_weight *w, uint8_t **codes, float **scales, int64_t *sr, int64_t *sc) {
  const int64_t rows = w->t.shape[0], cols = w->t.shape[1];
  *sr = (rows + FP8_BLOCK - 1) / FP8_BLOCK, *sc = (cols + FP8_BLOCK - 1) / FP8_BLOCK;
  *codes = malloc((size_t)(rows * cols));
  *scales = malloc((size_t)(*sr * *sc) * sizeof **scales);
  for (int64_t br = 0; br < *sr; br++)
    for (int64_t bc = 0; bc < *sc; bc++) {
      /* blocks 4x apart in size (1/4 .. 4: exact in bf16), so that a scale
       * read from another block would change the model */
      const float spread = ldexpf(1.0f, (int)((br * 3 + bc) % 5) - 2);
      for (int64_t r = br * FP8_BLOCK; r < rows && r < (br + 1) * FP8_BLOCK; r++)
        for (int64_t c = bc * FP8_BLOCK; c < cols && c < (bc + 1) * FP8_BLOCK; c++)
          w->data[r * cols + c] = sk_fp32_to_bf16(sk_bf16_to_fp32(w->data[r * cols + c]) * spread);
      float amax = 0;
      for (int64_t r = br * FP8_BLOCK; r < rows && r < (br + 1) * FP8_BLOCK; r++)
        for (int64_t c = bc * FP8_BLOCK; c < cols && c < (bc + 1) * FP8_BLOCK; c++)
          amax = fmaxf(amax, fabsf(sk_bf16_to_fp32(w->data[r * cols + c])));
      const float scale = amax > 0 ? amax / FP8_MAX : 1.0f;
      (*scales)[br * *sc + bc] = scale;
      for (int64_t r = br * FP8_BLOCK; r < rows && r < (br + 1) * FP8_BLOCK; r++)
        for (int64_t c = bc * FP8_BLOCK; c < cols && c < (bc + 1) * FP8_BLOCK; c++) {
          const uint8_t q = e4m3_nearest(sk_bf16_to_fp32(w->data[r * cols + c]) / scale);
          (*codes)[r * cols + c] = q;
          w->data[r * cols + c] = sk_fp32_to_bf16(e4m3_value(q) * scale);
        }
    }
}

/* --fp8-all for greedy: the store's values as the FP8 checkpoint holds them,
 * the experts read one tensor each (the fused copies are not quantized). */
static void fp8_store(tiny_store *s) {
  for (int i = 0; i < s->n; i++)
    if (fp8_eligible(&s->w[i])) {
      uint8_t *codes;
      float *scales;
      int64_t sr, sc;
      fp8_quantize(&s->w[i], &codes, &scales, &sr, &sc);
      free(codes);
      free(scales);
    }
  s->per_expert = 1;
}

/* ---- greedy decoding through the library ---- */

static int greedy(const char *json, tiny_store *s, const char *ids_text, long n, const char *quantize) {
  int32_t prompt[256], next;
  int64_t n_prompt = 0;
  for (const char *p = ids_text; *p && n_prompt < 256; n_prompt++) {
    char *end;
    prompt[n_prompt] = (int32_t)strtol(p, &end, 10);
    p = *end == ',' ? end + 1 : end;
  }
  sk_model_config cfg = {.struct_size = sizeof cfg, .config_json = json, .weight = tiny_lookup, .weight_user = s,
                         .executor = SK_EXECUTOR_REFERENCE, .quantize = quantize};
  sk_model *m = NULL;
  sk_model_seq *seq = NULL;
  float logits[TINY_V];
  sk_status st = sk_model_create(&cfg, &m);
  if (st == SK_STATUS_OK) st = sk_model_seq_create(m, &seq);
  if (st == SK_STATUS_OK) st = sk_model_forward(seq, NULL, prompt, n_prompt, logits, 1);
  for (long i = 0; st == SK_STATUS_OK && i < n; i++) {
    next = 0;
    for (int32_t v = 1; v < TINY_V; v++) next = logits[v] > logits[next] ? v : next;
    printf("%s%d", i ? "," : "", next);
    if (i + 1 < n) st = sk_model_forward(seq, NULL, &next, 1, logits, 1);
  }
  printf("\n");
  sk_model_seq_destroy(seq);
  sk_model_destroy(m);
  if (st != SK_STATUS_OK) return fail("the library: %s", sk_last_error());
  return 0;
}

/* ---- writing a directory ---- */

typedef struct options {
  const char *drop, *grow, *fp8, *model_type;
  long cut, keep;
  bool no_config, shards, lose_shard, odd_offset, fp8_all;
} options;

/* One tensor as written. */
typedef struct entry {
  const char *name, *dtype;
  char own_name[128];
  int rank;
  int64_t shape[SK_MODEL_MAX_RANK];
  const void *data;
  size_t bytes;
  void *owned;
} entry;

static int mkdir_p(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1;; p++)
    if (*p == '/' || *p == '\0') {
      const char saved = *p;
      *p = '\0';
      if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
      if (!(*p = saved)) return 0;
    }
}

/* The store's checkpoint tensors as options make them. */
static int entries_of(const tiny_store *s, const options *o, entry *out) {
  int n = 0;
  for (int i = 0; i < s->n; i++) {
    const tiny_weight *w = &s->w[i];
    if (tiny_is_fused_expert(w->name) || (o->drop && strcmp(w->name, o->drop) == 0)) continue;
    entry *e = &out[n++];
    size_t numel = 1;
    *e = (entry){.name = w->name, .dtype = "BF16", .rank = w->t.rank, .data = w->data};
    for (int d = 0; d < w->t.rank; d++) numel *= (size_t)(e->shape[d] = w->t.shape[d]);
    e->bytes = numel * 2;
    if (o->grow && strcmp(w->name, o->grow) == 0) { /* one more row, a copy of the first */
      const size_t row = e->bytes / (size_t)e->shape[0];
      e->owned = malloc(e->bytes + row);
      memcpy(e->owned, w->data, e->bytes);
      memcpy((char *)e->owned + e->bytes, w->data, row);
      e->shape[0]++, e->bytes += row, e->data = e->owned;
    }
    if (o->fp8 && strcmp(w->name, o->fp8) == 0) { /* every element 1.0 in E4M3 */
      e->bytes = numel;
      e->owned = malloc(numel);
      memset(e->owned, 0x38, numel);
      e->dtype = "F8_E4M3", e->data = e->owned;
    }
    if (o->fp8_all && fp8_eligible(w)) { /* codes, and their scales as the next entry */
      uint8_t *codes;
      float *scales;
      int64_t sr, sc;
      fp8_quantize((tiny_weight *)w, &codes, &scales, &sr, &sc);
      e->bytes = numel, e->owned = codes, e->dtype = "F8_E4M3", e->data = codes;
      entry *se = &out[n++];
      *se = (entry){.dtype = "F32", .rank = 2, .shape = {sr, sc}, .data = scales, .bytes = (size_t)(sr * sc) * 4,
                    .owned = scales};
      snprintf(se->own_name, sizeof se->own_name, "%s_scale_inv", w->name);
      se->name = se->own_name;
      if (o->drop && strcmp(se->name, o->drop) == 0) free(scales), n--; /* --drop a scale tensor */
    }
  }
  return n;
}

/* A safetensors file of entries [from, to). */
static int write_safetensors(const char *path, const entry *e, int from, int to, const options *o) {
  size_t cap = 64 + 256 * (size_t)(to - from), len = 0, offset = 0;
  char *h = malloc(cap + 16);
  len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\": {\"format\": \"pt\"}");
  for (int i = from; i < to; i++) {
    len += (size_t)snprintf(h + len, cap - len, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [", e[i].name, e[i].dtype);
    for (int d = 0; d < e[i].rank; d++)
      len += (size_t)snprintf(h + len, cap - len, "%s%lld", d ? ", " : "", (long long)e[i].shape[d]);
    len += (size_t)snprintf(h + len, cap - len, "], \"data_offsets\": [%zu, %zu]}", offset, offset + e[i].bytes);
    offset += e[i].bytes;
  }
  h[len++] = '}';
  while ((8 + len) % 8 != (o->odd_offset ? 1u : 0u)) h[len++] = ' '; /* the format pads with spaces */
  FILE *f = fopen(path, "wb");
  if (!f) return free(h), fail("cannot write %s", path);
  unsigned char n8[8];
  for (int i = 0; i < 8; i++) n8[i] = (unsigned char)((uint64_t)len >> (8 * i));
  bool ok = fwrite(n8, 1, 8, f) == 8 && fwrite(h, 1, len, f) == len;
  for (int i = from; ok && i < to; i++) ok = fwrite(e[i].data, 1, e[i].bytes, f) == e[i].bytes;
  ok = fclose(f) == 0 && ok;
  free(h);
  if (ok && (o->cut || o->keep)) {
    struct stat st;
    ok = stat(path, &st) == 0 &&
         truncate(path, o->keep ? o->keep : st.st_size > o->cut ? st.st_size - o->cut : 0) == 0;
  }
  return ok ? 0 : fail("cannot write %s", path);
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  bool ok = f && fputs(text, f) >= 0;
  if (f) ok = fclose(f) == 0 && ok;
  return ok ? 0 : fail("cannot write %s", path);
}

static int write_dir(const char *dir, const char *json, tiny_store *s, const options *o) {
  static const char *const files[] = {"config.json", "model.safetensors", "model.safetensors.index.json",
                                      "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
  char path[4096];
  if (mkdir_p(dir) != 0) return fail("cannot create %s", dir);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    (void)unlink(path); /* a run before: start afresh */
  }
  int rc = 0;
  if (!o->no_config) {
    char text[2048];
    snprintf(text, sizeof text, "%s", json);
    if (o->model_type) { /* "model_type": "X", -> the given one */
      char *at = strstr(text, "\"model_type\": \"") + strlen("\"model_type\": \""), *end = strchr(at, '"');
      char rest[2048];
      snprintf(rest, sizeof rest, "%s", end);
      snprintf(at, sizeof text - (size_t)(at - text), "%s%s", o->model_type, rest);
    }
    char *end = strrchr(text, '}');
    if (o->fp8_all) /* ..."} -> ..., "quantization_config": {...}} */
      snprintf(end, sizeof text - (size_t)(end - text), ", \"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", "
               "\"activation_scheme\": \"dynamic\", \"weight_block_size\": [%d, %d]}}", FP8_BLOCK, FP8_BLOCK);
    snprintf(path, sizeof path, "%s/config.json", dir);
    rc = write_text(path, text);
  }
  entry *e = calloc(2 * TINY_MAX_WEIGHTS, sizeof *e); /* --fp8-all: a scale tensor each */
  const int n = entries_of(s, o, e);
  if (rc == 0 && !o->shards) {
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rc = write_safetensors(path, e, 0, n, o);
  }
  for (int k = 0; rc == 0 && o->shards && k < 2; k++) {
    snprintf(path, sizeof path, "%s/model-0000%d-of-00002.safetensors", dir, k + 1);
    if (k == 0 || !o->lose_shard) rc = write_safetensors(path, e, k ? n / 2 : 0, k ? n : n / 2, o);
  }
  if (rc == 0 && o->shards) { /* the index: every tensor's file */
    size_t cap = 128 + 160 * (size_t)n, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "{\"metadata\": {}, \"weight_map\": {");
    for (int i = 0; i < n; i++)
      len += (size_t)snprintf(text + len, cap - len, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "",
                              e[i].name, i < n / 2 ? 1 : 2);
    snprintf(text + len, cap - len, "}}\n");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    rc = write_text(path, text);
    free(text);
  }
  for (int i = 0; i < n; i++) free(e[i].owned);
  free(e);
  return rc;
}

static int usage(void) {
  fprintf(stderr, "usage: tiny_checkpoint write DIR llama|qwen3_moe [OPTION...] [-- CMD ARGS...]\n"
                  "       tiny_checkpoint greedy llama|qwen3_moe IDS N [--fp8-all] [--w8a8]\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  const bool write = strcmp(argv[1], "write") == 0;
  const char *family = argv[write ? 3 : 2];
  if ((!write && strcmp(argv[1], "greedy") != 0) || (write && argc < 4)) return usage();
  const int moe = strcmp(family, "qwen3_moe") == 0;
  if (!moe && strcmp(family, "llama") != 0) return fail("unknown family '%s' (llama, qwen3_moe)", family);
  tiny_store *s = calloc(1, sizeof *s);
  tiny_make_store(s, moe);
  const char *json = moe ? TINY_QWEN3_MOE : TINY_LLAMA;
  int rc = 0;
  if (!write) {
    const char *quantize = NULL;
    for (int i = 5; rc == 0 && i < argc; i++) {
      if (strcmp(argv[i], "--fp8-all") == 0) fp8_store(s);
      else if (strcmp(argv[i], "--w8a8") == 0) quantize = "w8a8";
      else rc = usage();
    }
    if (rc == 0) rc = argc >= 5 ? greedy(json, s, argv[3], strtol(argv[4], NULL, 10), quantize) : usage();
  } else {
    options o = {0};
    int i = 4;
    for (; rc == 0 && i < argc && strcmp(argv[i], "--") != 0; i++) {
      const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (strcmp(a, "--no-config") == 0) o.no_config = true;
      else if (strcmp(a, "--shards") == 0) o.shards = true;
      else if (strcmp(a, "--lose-shard") == 0) o.shards = o.lose_shard = true;
      else if (strcmp(a, "--odd-offset") == 0) o.odd_offset = true;
      else if (strcmp(a, "--fp8-all") == 0) o.fp8_all = true;
      else if (v && strcmp(a, "--drop") == 0) o.drop = v, i++;
      else if (v && strcmp(a, "--grow") == 0) o.grow = v, i++;
      else if (v && strcmp(a, "--fp8") == 0) o.fp8 = v, i++;
      else if (v && strcmp(a, "--model-type") == 0) o.model_type = v, i++;
      else if (v && strcmp(a, "--cut") == 0) o.cut = strtol(v, NULL, 10), i++;
      else if (v && strcmp(a, "--keep") == 0) o.keep = strtol(v, NULL, 10), i++;
      else rc = fail("unknown option '%s'", a);
    }
    if (rc == 0) rc = write_dir(argv[2], json, s, &o);
    if (rc == 0 && i + 1 < argc) {
      tiny_free_store(s);
      free(s);
      fflush(NULL);
      execvp(argv[i + 1], argv + i + 1);
      return fail("cannot run %s", argv[i + 1]);
    }
  }
  tiny_free_store(s);
  free(s);
  return rc;
}

/* Whole decoder models (superkernel_model.h) on tiny random weights: a
 * token's logits are bitwise the same whether its prompt ran in one
 * forward, in chunks of any size or token by token, on every executor
 * (the reference executor, each op's oracle, included) and team size;
 * the experts fused or one tensor each give the same bits; a truncated
 * sequence recomputes the same logits; bad configs, weights, ids and
 * lengths fail naming the culprit. w8a8 (every linear layer int8) keeps
 * all of that, and stays near the bf16 logits. (Logits against
 * transformers' own forward: tests/python/test_model.py.) */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "superkernel_model.h"
#include "tiny_model.h"

#define N_PROMPT 13

enum { V = TINY_V };

static sk_team *team_of(int cores) {
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = cores};
  sk_team *t = NULL;
  CHECK_OK(sk_team_create(&tc, &t));
  return t;
}

static const char *quantize; /* every model's sk_model_config.quantize */

static sk_model *make(const char *json, tiny_store *s, int64_t max_tokens, sk_team *team, sk_executor ex) {
  sk_model_config cfg = {.struct_size = sizeof cfg, .config_json = json, .weight = tiny_lookup, .weight_user = s,
                         .max_tokens = max_tokens, .max_context = 32, .team = team, .executor = ex,
                         .quantize = quantize};
  sk_model *m = NULL;
  CHECK_OK(sk_model_create(&cfg, &m));
  return m;
}

static int32_t prompt[N_PROMPT];

/* The prompt's logits [N_PROMPT, V], in forwards of the given sizes (0-terminated). */
static void logits_in_chunks(sk_model *m, sk_team *team, const int *sizes, float *out) {
  sk_model_seq *seq = NULL;
  CHECK_OK(sk_model_seq_create(m, &seq));
  if (!seq) return;
  int64_t at = 0;
  for (int i = 0; at < N_PROMPT; i++) {
    int64_t c = sizes[i] ? sizes[i] : N_PROMPT - at;
    if (c > N_PROMPT - at) c = N_PROMPT - at;
    CHECK_OK(sk_model_forward(seq, team, prompt + at, c, out + at * V, c));
    at += c;
  }
  CHECK(sk_model_seq_length(seq) == N_PROMPT);
  sk_model_seq_destroy(seq);
}

static int same_bits(const float *a, const float *b, int64_t n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

static void check_invariance(const char *json, tiny_store *s) {
  for (int i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 37 + 5) % V);
  static float want[N_PROMPT * V], got[N_PROMPT * V];
  sk_team *one = team_of(1), *two = team_of(2);
  sk_model *m = make(json, s, 16, NULL, SK_EXECUTOR_DEFAULT);
  if (!m) goto done;
  logits_in_chunks(m, NULL, (const int[]){0}, want);
  int finite = 1, varied = 0;
  for (int i = 0; i < N_PROMPT * V; i++) finite &= isfinite(want[i]), varied |= want[i] != want[0];
  CHECK(finite && varied);
  /* attention mixes the context in: another first token changes the last token's logits */
  prompt[0] = (prompt[0] + 1) % V;
  logits_in_chunks(m, NULL, (const int[]){0}, got);
  CHECK(memcmp(want + (N_PROMPT - 1) * V, got + (N_PROMPT - 1) * V, V * sizeof(float)) != 0);
  prompt[0] = (prompt[0] + V - 1) % V;
  const int chunkings[][N_PROMPT + 1] = {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, {3, 4, 6, 0}, {5, 1, 7, 0}};
  for (size_t c = 0; c < sizeof chunkings / sizeof chunkings[0]; c++) {
    logits_in_chunks(m, NULL, chunkings[c], got);
    CHECK_MSG(same_bits(want, got, N_PROMPT * V), "chunking %zu differs", c);
  }
  /* a model of max_tokens 4 runs the prompt in chunks of 4 inside one forward */
  sk_model *small = make(json, s, 4, NULL, SK_EXECUTOR_DEFAULT);
  if (small) logits_in_chunks(small, NULL, (const int[]){0}, got);
  CHECK_MSG(small && same_bits(want, got, N_PROMPT * V), "max_tokens 4 differs");
  sk_model_destroy(small);
  const sk_executor ex[] = {SK_EXECUTOR_REFERENCE, SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (size_t e = 0; e < sizeof ex / sizeof ex[0]; e++)
    for (int cores = 1; cores <= 2; cores++) {
      if (ex[e] == SK_EXECUTOR_REFERENCE && cores > 1) continue;
      sk_team *team = cores == 1 ? one : two;
      sk_model *other = make(json, s, 8, team, ex[e]);
      if (other) logits_in_chunks(other, team, (const int[]){2, 0}, got);
      CHECK_MSG(other && same_bits(want, got, N_PROMPT * V), "executor %s on %d cores differs",
                sk_executor_name(ex[e]), cores);
      sk_model_destroy(other);
    }
  /* rewinding: the tokens after the cut give the same logits again */
  sk_model_seq *seq = NULL;
  CHECK_OK(sk_model_seq_create(m, &seq));
  if (seq) {
    CHECK_OK(sk_model_forward(seq, NULL, prompt, N_PROMPT, NULL, 0));
    CHECK_OK(sk_model_seq_truncate(seq, 5));
    CHECK_OK(sk_model_forward(seq, NULL, prompt + 5, N_PROMPT - 5, got, N_PROMPT - 5));
    CHECK(same_bits(want + 5 * V, got, (N_PROMPT - 5) * V));
    sk_model_seq_destroy(seq);
  }
  sk_model_destroy(m);
done:
  sk_team_destroy(one);
  sk_team_destroy(two);
}

static void test_qwen3_moe_invariance(void) {
  tiny_store s;
  tiny_make_store(&s, 1);
  check_invariance(TINY_QWEN3_MOE, &s);
  tiny_free_store(&s);
}

static void test_llama_invariance(void) {
  tiny_store s;
  tiny_make_store(&s, 0);
  check_invariance(TINY_LLAMA, &s);
  tiny_free_store(&s);
}

/* Experts as one fused tensor or one tensor per expert: the same bits. */
static void test_expert_layouts(void) {
  tiny_store s;
  tiny_make_store(&s, 1);
  for (int i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 11 + 3) % V);
  static float fused[N_PROMPT * V], split[N_PROMPT * V];
  sk_model *m = make(TINY_QWEN3_MOE, &s, 16, NULL, SK_EXECUTOR_DEFAULT);
  if (m) logits_in_chunks(m, NULL, (const int[]){0}, fused);
  sk_model_destroy(m);
  s.per_expert = 1;
  m = make(TINY_QWEN3_MOE, &s, 16, NULL, SK_EXECUTOR_DEFAULT);
  if (m) logits_in_chunks(m, NULL, (const int[]){0}, split);
  CHECK(m && same_bits(fused, split, N_PROMPT * V));
  sk_model_info info;
  CHECK_OK(sk_model_get_info(m, &info));
  CHECK(info.vocab == V && info.layers == 2 && info.dtype == SK_BF16 && info.weight_bytes > 0);
  CHECK(strcmp(info.family, "qwen3_moe") == 0 && strstr(info.about, "4 experts"));
  sk_model_destroy(m);
  tiny_free_store(&s);
}

static void test_w8a8_invariance(void) {
  tiny_store s;
  quantize = "w8a8";
  tiny_make_store(&s, 1);
  check_invariance(TINY_QWEN3_MOE, &s);
  tiny_free_store(&s);
  tiny_make_store(&s, 0);
  check_invariance(TINY_LLAMA, &s);
  tiny_free_store(&s);
  quantize = NULL;
}

/* w8a8's logits near the bf16 model's (every linear layer's int8 rounding,
 * not another model), not equal to them (it did quantize); its experts
 * fused or one tensor each the same bits; half the weight bytes. */
static void test_w8a8_near_bf16(void) {
  tiny_store s;
  tiny_make_store(&s, 1);
  for (int i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 7 + 1) % V);
  static float bf16[N_PROMPT * V], w8a8[N_PROMPT * V], split[N_PROMPT * V];
  sk_model_info bf16_info, info;
  char bf16_about[256] = "", about[256] = ""; /* info.about lives as long as its model */
  sk_model *m = make(TINY_QWEN3_MOE, &s, 16, NULL, SK_EXECUTOR_DEFAULT);
  if (m) logits_in_chunks(m, NULL, (const int[]){0}, bf16);
  CHECK_OK(sk_model_get_info(m, &bf16_info));
  snprintf(bf16_about, sizeof bf16_about, "%s", m ? bf16_info.about : "");
  sk_model_destroy(m);
  quantize = "w8a8";
  m = make(TINY_QWEN3_MOE, &s, 16, NULL, SK_EXECUTOR_DEFAULT);
  if (m) logits_in_chunks(m, NULL, (const int[]){0}, w8a8);
  CHECK_OK(sk_model_get_info(m, &info));
  snprintf(about, sizeof about, "%s", m ? info.about : "");
  sk_model_destroy(m);
  s.per_expert = 1;
  m = make(TINY_QWEN3_MOE, &s, 16, NULL, SK_EXECUTOR_DEFAULT);
  if (m) logits_in_chunks(m, NULL, (const int[]){0}, split);
  CHECK(m && same_bits(w8a8, split, N_PROMPT * V));
  sk_model_destroy(m);
  quantize = NULL;
  double err = 0, norm = 0;
  for (int i = 0; i < N_PROMPT * V; i++) {
    err = fmax(err, fabs((double)w8a8[i] - bf16[i]));
    norm = fmax(norm, fabs((double)bf16[i]));
  }
  CHECK_MSG(err > 0 && err < 0.1 * norm, "w8a8 against bf16: max |diff| %g, max |logit| %g", err, norm);
  CHECK_MSG(strstr(about, ", w8a8") && !strstr(bf16_about, "w8a8"), "%s | %s", about, bf16_about);
  CHECK_MSG(info.weight_bytes < bf16_info.weight_bytes * 3 / 4, "w8a8 %zu bytes, bf16 %zu", info.weight_bytes,
            bf16_info.weight_bytes);
  tiny_free_store(&s);
}

static sk_status create(const char *json, tiny_store *s) {
  sk_model_config cfg = {.config_json = json, .weight = tiny_lookup, .weight_user = s, .max_context = 8};
  sk_model *m = NULL;
  sk_status st = sk_model_create(&cfg, &m);
  sk_model_destroy(m);
  return st;
}

static void test_errors(void) {
  tiny_store s;
  tiny_make_store(&s, 1);
  CHECK_FAILS(create("{\"model_type\": ", &s), SK_STATUS_INVALID_ARGUMENT, "config.json", "not valid JSON");
  CHECK_FAILS(create("{\"model_type\": \"gpt2\"}", &s), SK_STATUS_UNSUPPORTED, "gpt2", "qwen3_moe");
  CHECK_FAILS(create("{\"hidden_size\": 8}", &s), SK_STATUS_INVALID_ARGUMENT, "model_type", "missing");
  CHECK_FAILS(create("{\"model_type\": \"qwen3_moe\", \"vocab_size\": 96}", &s), SK_STATUS_INVALID_ARGUMENT,
              "hidden_size", "missing");
  char json[2048];
  snprintf(json, sizeof json, "%s", TINY_QWEN3_MOE);
  memcpy(strstr(json, "\"silu\""), "\"gelu\"", 6);
  CHECK_FAILS(create(json, &s), SK_STATUS_UNSUPPORTED, "hidden_act", "gelu");
  snprintf(json, sizeof json, "%s", TINY_QWEN3_MOE);
  memcpy(strstr(json, "\"default\""), "\"dynamic\"", 9);
  CHECK_FAILS(create(json, &s), SK_STATUS_UNSUPPORTED, "rope type", "dynamic");
  s.hide = "model.layers.1.self_attn.k_norm.weight";
  CHECK_FAILS(create(TINY_QWEN3_MOE, &s), SK_STATUS_NOT_FOUND, "model.layers.1.self_attn.k_norm.weight", "missing");
  s.hide = NULL;
  s.wrong_shape = "model.layers.0.mlp.experts.down_proj";
  CHECK_FAILS(create(TINY_QWEN3_MOE, &s), SK_STATUS_INVALID_SHAPE, "model.layers.0.mlp.experts.down_proj", "[4, 64, 32]",
              "[5, 64, 32]");
  s.wrong_shape = NULL;

  sk_model *m = make(TINY_QWEN3_MOE, &s, 4, NULL, SK_EXECUTOR_DEFAULT);
  sk_model_seq *seq = NULL;
  if (m) CHECK_OK(sk_model_seq_create(m, &seq));
  if (seq) {
    const int32_t bad[] = {1, 2, V};
    float logits[V];
    CHECK_FAILS(sk_model_forward(seq, NULL, bad, 3, logits, 1), SK_STATUS_INVALID_ARGUMENT, "ids[2] = 96",
                "[0, 96)");
    CHECK(sk_model_seq_length(seq) == 0);
    int32_t many[40] = {0};
    CHECK_FAILS(sk_model_forward(seq, NULL, many, 40, NULL, 0), SK_STATUS_INVALID_ARGUMENT, "max_context 32");
    CHECK_FAILS(sk_model_forward(seq, NULL, many, 2, NULL, 3), SK_STATUS_INVALID_ARGUMENT, "n_logits 3");
    CHECK_FAILS(sk_model_seq_truncate(seq, 1), SK_STATUS_INVALID_ARGUMENT, "length 1");
    CHECK_OK(sk_model_forward(seq, NULL, many, 2, logits, 1));
    CHECK(sk_model_seq_length(seq) == 2);
    sk_model_seq_destroy(seq);
  }
  sk_model_destroy(m);
  CHECK_FAILS(sk_model_create(NULL, &m), SK_STATUS_INVALID_ARGUMENT, "cfg");
  sk_model_config cfg = {.config_json = TINY_QWEN3_MOE, .weight = tiny_lookup, .weight_user = &s, .quantize = "int4"};
  CHECK_FAILS(sk_model_create(&cfg, &m), SK_STATUS_INVALID_ARGUMENT, "quantize \"int4\"", "\"w8a8\"");
  cfg.quantize = "w8a8";
  s.wrong_shape = "model.layers.0.mlp.experts.gate_up_proj"; /* the fused experts, quantized */
  CHECK_FAILS(sk_model_create(&cfg, &m), SK_STATUS_INVALID_SHAPE, "model.layers.0.mlp.experts.gate_up_proj");
  s.wrong_shape = NULL;
  s.hide = "lm_head.weight";
  CHECK_FAILS(sk_model_create(&cfg, &m), SK_STATUS_NOT_FOUND, "lm_head.weight", "missing");
  s.hide = NULL;
  tiny_free_store(&s);
}

int main(void) {
  static const harness_case cases[] = {TEST_CASE(test_qwen3_moe_invariance), TEST_CASE(test_llama_invariance),
                                       TEST_CASE(test_expert_layouts), TEST_CASE(test_w8a8_invariance),
                                       TEST_CASE(test_w8a8_near_bf16), TEST_CASE(test_errors)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

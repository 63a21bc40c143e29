/* The numerics option (sk_compile_config.numerics, $SK_NUMERICS): a
 * program compiled with SK_NUMERICS_AMX sums its bf16 x bf16 products as
 * TDPBF16PS does (docs/ops.md, "Numerics"), on every executor alike (the
 * reference executor computes the same contract), whether its weights are
 * constants packed at compile or inputs, fused in a super kernel or not;
 * stats and describe name the contract; bad values are refused with a
 * message naming them. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "superkernel.h"

static sk_team *team;

static uint16_t bf(float x) { return sk_fp32_to_bf16(x); }

/* g compiled for the shared team, then destroyed; NULL when compile
 * failed (checked). */
static sk_program *compiled(sk_graph *g, sk_executor executor, sk_numerics numerics) {
  sk_compile_config cc = {.team = team, .executor = executor, .numerics = numerics};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cc, &p));
  sk_graph_destroy(g);
  return p;
}

/* y = linear(x, w) in bf16, optionally inside a scope, w a constant or an
 * input; returns the program (NULL when compile failed: checked). */
static sk_program *linear_program(int64_t m, int64_t k, int64_t n, const uint16_t *w, int w_constant, int scoped,
                                  sk_executor executor, sk_numerics numerics) {
  sk_graph *g = NULL;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, wv, y;
  CHECK_OK(sk_graph_add_input(g, "x", SK_BF16, 2, (int64_t[]){m, k}, &x));
  if (w_constant) CHECK_OK(sk_graph_add_constant(g, "w", SK_BF16, 2, (int64_t[]){n, k}, w, SK_CONSTANT_COPY, &wv));
  else CHECK_OK(sk_graph_add_input(g, "w", SK_BF16, 2, (int64_t[]){n, k}, &wv));
  if (scoped) CHECK_OK(sk_graph_begin_scope(g, "sk1", NULL));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &wv, 1}};
  sk_op_desc d = {.op = "linear", .inputs = in, .n_inputs = 2};
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  if (scoped) CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  return compiled(g, executor, numerics);
}

static void run(sk_program *p, const uint16_t *x, size_t x_bytes, const uint16_t *w, size_t w_bytes, int w_input,
                uint16_t *y, size_t y_bytes) {
  sk_buffer ins[] = {{"x", (void *)x, x_bytes}, {"w", (void *)w, w_bytes}};
  sk_buffer outs[] = {{"y", y, y_bytes}};
  CHECK_OK(sk_program_run(p, team, ins, w_input ? 2 : 1, outs, 1));
}

/* x = [2^24, 1, -2^24, 1], w = ones. Default (one chain, each pair's odd
 * step first): 1, 2^24 + 1 -> 2^24, + 1 -> 2^24, - 2^24: 0. AMX: even
 * 2^24 - 2^24 = 0, odd 1 + 1 = 2: 2. */
static void test_contracts_differ_as_defined(void) {
  const uint16_t x[4] = {bf(0x1p24f), bf(1.0f), bf(-0x1p24f), bf(1.0f)};
  const uint16_t w[4] = {bf(1.0f), bf(1.0f), bf(1.0f), bf(1.0f)};
  const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_REFERENCE, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (int amx = 0; amx < 2; amx++)
    for (size_t e = 0; e < sizeof executors / sizeof executors[0]; e++)
      for (int w_constant = 0; w_constant < 2; w_constant++) {
        sk_program *p = linear_program(1, 4, 1, w, w_constant, 1, executors[e],
                                       amx ? SK_NUMERICS_AMX : SK_NUMERICS_DEFAULT);
        if (!p) continue;
        uint16_t y = 0xFFFF;
        run(p, x, sizeof x, w, sizeof w, !w_constant, &y, sizeof y);
        const float want = amx ? 2.0f : 0.0f;
        CHECK_MSG(sk_bf16_to_fp32(y) == want, "%s contract, executor %s, weight %s: got %g, want %g",
                  amx ? "amx" : "default", sk_executor_name(executors[e]), w_constant ? "constant" : "input",
                  (double)sk_bf16_to_fp32(y), (double)want);
        sk_program_stats st = {.struct_size = sizeof st};
        CHECK_OK(sk_program_get_stats(p, &st));
        CHECK(st.numerics == (amx ? SK_NUMERICS_AMX : SK_NUMERICS_DEFAULT));
        char *text = NULL;
        CHECK_OK(sk_program_describe(p, &text));
        CHECK_MSG(text && strstr(text, amx ? "numerics amx" : "numerics default"), "describe: %s", text ? text : "");
        sk_free(text);
        sk_program_destroy(p);
      }
}

/* bf16 products (k with a tail past whole blocks of 32, edges in m and
 * n): under the AMX contract every executor gives the same bits, and
 * they differ from the default contract's somewhere (the option is in
 * effect). */
static void test_executors_agree_under_amx(void) {
  enum { M = 37, K = 200, N = 70 };
  uint16_t *x = malloc(sizeof(uint16_t) * M * K), *w = malloc(sizeof(uint16_t) * N * K);
  /* x: +-2^24 at even k (they cancel in pairs), small values at odd k,
   * which the default chain adds to 2^24 (losing their low bits) and the
   * AMX contract's odd chain sums on their own. */
  uint32_t seed = 7;
  for (int i = 0; i < M * K; i++) {
    const float r = (float)((seed = seed * 1664525u + 1013904223u) >> 9) * 0x1p-23f + 0.5f;
    x[i] = bf(i % 4 == 0 ? 0x1p24f : i % 4 == 2 ? -0x1p24f : r);
  }
  for (int i = 0; i < N * K; i++) /* w is [N, K]: ones where x is +-2^24, so those cancel exactly */
    w[i] = bf(i % 2 == 0 ? 1.0f : (float)((seed = seed * 1664525u + 1013904223u) >> 9) * 0x1p-22f + 0.5f);
  uint16_t *want = malloc(sizeof(uint16_t) * M * N), *got = malloc(sizeof(uint16_t) * M * N);
  sk_program *ref = linear_program(M, K, N, w, 1, 0, SK_EXECUTOR_REFERENCE, SK_NUMERICS_AMX);
  if (ref) run(ref, x, sizeof(uint16_t) * M * K, w, sizeof(uint16_t) * N * K, 0, want, sizeof(uint16_t) * M * N);
  sk_program_destroy(ref);
  const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (size_t e = 0; e < sizeof executors / sizeof executors[0]; e++)
    for (int w_constant = 0; w_constant < 2; w_constant++) {
      sk_program *p = linear_program(M, K, N, w, w_constant, e > 0, executors[e], SK_NUMERICS_AMX);
      if (!p) continue;
      memset(got, 0xA5, sizeof(uint16_t) * M * N);
      run(p, x, sizeof(uint16_t) * M * K, w, sizeof(uint16_t) * N * K, !w_constant, got, sizeof(uint16_t) * M * N);
      CHECK_MSG(memcmp(want, got, sizeof(uint16_t) * M * N) == 0, "executor %s, weight %s: not the reference's bits",
                sk_executor_name(executors[e]), w_constant ? "constant" : "input");
      sk_program_destroy(p);
    }
  sk_program *def = linear_program(M, K, N, w, 1, 0, SK_EXECUTOR_EAGER, SK_NUMERICS_DEFAULT);
  if (def) {
    run(def, x, sizeof(uint16_t) * M * K, w, sizeof(uint16_t) * N * K, 0, got, sizeof(uint16_t) * M * N);
    int differ = 0;
    for (int i = 0; i < M * N; i++) differ += want[i] != got[i];
    CHECK_MSG(differ > 0, "no element differs between the contracts: the AMX one is not in effect");
    printf("%d of %d bf16 outputs differ between the default and AMX contracts\n", differ, M * N);
  }
  sk_program_destroy(def);
  free(x), free(w), free(want), free(got);
}

/* attention over bf16 caches: q [T, 4, 80] (80: two blocks of 32 and a
 * half one), 2 kv heads, values of a wide range so that the contracts'
 * sums part. Under the AMX contract every executor gives the reference's
 * bits, and somewhere not the default contract's. */
enum { AH = 4, AKV = 2, AD = 80 };

typedef struct attention_shape {
  int t, s, first; /* tokens at positions first .. first + t - 1 of an s-row cache */
  int window;
  int inf_at; /* > 0: value row inf_at holds an infinity, which the tokens before it must not read */
} attention_shape;

/* 20 tokens of one scores call; tokens past 256 keys (two chunks of
 * values, several scores calls, each token a block end of its own); a
 * sliding window (each token its own first key, not at a block's start);
 * a cache past 4096 rows (fewer tokens a core takes at a time). */
static const attention_shape SHAPES[] = {
    {20, 64, 30, 0, 0}, {40, 600, 250, 0, 257}, {24, 600, 300, 37, 305}, {20, 4200, 4100, 0, 4105}};
static const attention_shape VALUES_SHAPE = {20, 64, 30, 0, 0};

static sk_program *attention_program(const attention_shape *sh, sk_executor executor, sk_numerics numerics) {
  sk_graph *g = NULL;
  CHECK_OK(sk_graph_create(&g));
  sk_value q, k, v, pos, o;
  CHECK_OK(sk_graph_add_input(g, "q", SK_BF16, 3, (int64_t[]){sh->t, AH, AD}, &q));
  CHECK_OK(sk_graph_add_input(g, "k", SK_BF16, 3, (int64_t[]){sh->s, AKV, AD}, &k));
  CHECK_OK(sk_graph_add_input(g, "v", SK_BF16, 3, (int64_t[]){sh->s, AKV, AD}, &v));
  CHECK_OK(sk_graph_add_input(g, "pos", SK_INT32, 1, (int64_t[]){sh->t}, &pos));
  CHECK_OK(sk_graph_begin_scope(g, "sk1", NULL));
  sk_op_input in[] = {{"q", &q, 1}, {"k_cache", &k, 1}, {"v_cache", &v, 1}, {"positions", &pos, 1}};
  sk_attr at[] = {SK_ATTR_INT("window", sh->window)};
  sk_op_desc d = {.op = "attention", .inputs = in, .n_inputs = 4, .attrs = at, .n_attrs = 1};
  CHECK_OK(sk_graph_add_op(g, &d, &o, 1, NULL));
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, o, "o"));
  return compiled(g, executor, numerics);
}

/* The values' sum as each contract defines it: one token at position 31,
 * q = 0 (every weight 1, l = 32), v[0] = 2^24, v[1] = 1, v[16] = -2^24.
 * Default (one chain in key order): 2^24 + 1 rounds to 2^24, then 0: o = 0.
 * AMX (one block of 32 keys: even keys 2^24 - 2^24 = 0, odd keys 1): o =
 * 1 / 32 (in blocks of 16 keys it would be 0). */
static void test_attention_values_as_defined(void) {
  enum { AT = 20, AS = 64 };
  static uint16_t q[AT * AH * AD], k[AS * AKV * AD], v[AS * AKV * AD], o[AT * AH * AD];
  int32_t pos[AT];
  for (size_t i = 0; i < sizeof k / 2; i++) k[i] = bf(0.5f), v[i] = 0;
  for (size_t i = 0; i < AKV * AD; i++) v[i] = bf(0x1p24f), v[AKV * AD + i] = bf(1.0f), v[16 * AKV * AD + i] = bf(-0x1p24f);
  for (int t = 0; t < AT; t++) pos[t] = 31;
  sk_buffer ins[] = {{"q", q, sizeof q}, {"k", k, sizeof k}, {"v", v, sizeof v}, {"pos", pos, sizeof pos}};
  sk_buffer out[] = {{"o", o, sizeof o}};
  const sk_executor executors[] = {SK_EXECUTOR_REFERENCE, SK_EXECUTOR_EAGER, SK_EXECUTOR_JIT};
  for (int amx = 0; amx < 2; amx++)
    for (size_t e = 0; e < sizeof executors / sizeof executors[0]; e++) {
      sk_program *p = attention_program(&VALUES_SHAPE, executors[e], amx ? SK_NUMERICS_AMX : SK_NUMERICS_DEFAULT);
      if (!p) continue;
      CHECK_OK(sk_program_run(p, team, ins, 4, out, 1));
      const float want = amx ? 1.0f / 32 : 0.0f;
      int wrong = 0;
      for (size_t i = 0; i < sizeof o / 2; i++) wrong += sk_bf16_to_fp32(o[i]) != want;
      CHECK_MSG(wrong == 0, "%s contract, executor %s: %d outputs not %g (o[0] = %g)", amx ? "amx" : "default",
                sk_executor_name(executors[e]), wrong, (double)want, (double)sk_bf16_to_fp32(o[0]));
      sk_program_destroy(p);
    }
}

static float uniform(uint32_t *seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (float)(*seed >> 9) * 0x1p-23f - 0.5f;
}

static void attention_under_amx(const attention_shape *sh) {
  const size_t nq = (size_t)sh->t * AH * AD, nkv = (size_t)sh->s * AKV * AD;
  uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2), *want = malloc(nq * 2),
           *got = malloc(nq * 2);
  int32_t *pos = malloc((size_t)sh->t * sizeof *pos);
  if (!(q && k && v && want && got && pos)) {
    CHECK_MSG(0, "out of memory");
    free(q), free(k), free(v), free(want), free(got), free(pos);
    return;
  }
  uint32_t seed = 11;
  for (size_t i = 0; i < nq; i++) q[i] = bf(uniform(&seed) * (i % 3 ? 1.0f : 64.0f));
  for (size_t i = 0; i < nkv; i++) {
    k[i] = bf(uniform(&seed));
    v[i] = bf(uniform(&seed) * (i % 5 ? 1.0f : 256.0f));
  }
  if (sh->inf_at > 0) /* an infinite value times a weight past a token's position would make its output NaN */
    for (size_t i = 0; i < AKV; i++) v[((size_t)sh->inf_at * AKV + i) * AD + 3] = bf(INFINITY);
  for (int t = 0; t < sh->t; t++) pos[t] = sh->first + t;
  sk_buffer ins[] = {{"q", q, nq * 2}, {"k", k, nkv * 2}, {"v", v, nkv * 2}, {"pos", pos, (size_t)sh->t * 4}};
  sk_buffer out[] = {{"o", want, nq * 2}};
  sk_program *ref = attention_program(sh, SK_EXECUTOR_REFERENCE, SK_NUMERICS_AMX);
  if (ref) CHECK_OK(sk_program_run(ref, team, ins, 4, out, 1));
  sk_program_destroy(ref);
  const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  out[0].data = got;
  for (size_t e = 0; e < sizeof executors / sizeof executors[0]; e++) {
    sk_program *p = attention_program(sh, executors[e], SK_NUMERICS_AMX);
    if (!p) continue;
    memset(got, 0xA5, nq * 2);
    CHECK_OK(sk_program_run(p, team, ins, 4, out, 1));
    CHECK_MSG(memcmp(want, got, nq * 2) == 0,
              "attention %d tokens from %d, window %d, executor %s: not the reference's bits",
              sh->t, sh->first, sh->window, sk_executor_name(executors[e]));
    sk_program_destroy(p);
  }
  sk_program *def = attention_program(sh, SK_EXECUTOR_EAGER, SK_NUMERICS_DEFAULT);
  if (def) {
    CHECK_OK(sk_program_run(def, team, ins, 4, out, 1));
    int differ = 0;
    for (size_t i = 0; i < nq; i++) differ += want[i] != got[i];
    CHECK_MSG(differ > 0, "no attention output differs between the contracts: the AMX one is not in effect");
    printf("%d tokens from %d, window %d: %d of %zu bf16 attention outputs differ between the contracts\n",
           sh->t, sh->first, sh->window, differ, nq);
  }
  sk_program_destroy(def);
  free(q), free(k), free(v), free(want), free(got), free(pos);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

static void test_attention_under_amx(void) {
  /* Below SK_ISA=amx the tiles are emulated, an element at a time: under a
   * sanitizer the cache past 4096 rows then takes minutes (3.5 of the ASan
   * suite's 12). There it runs where the tiles are the CPU's own, and on
   * every ISA path of the plain build. */
  const char *isa = getenv("SK_ISA");
  const bool emulated = !isa || strcmp(isa, "amx") != 0;
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
    if (UNDER_SANITIZER && emulated && SHAPES[i].s > 4096) {
      harness_skip_part("a %d-row cache with emulated tiles under a sanitizer (run by the plain build)", SHAPES[i].s);
      continue;
    }
    attention_under_amx(&SHAPES[i]);
  }
}

static void test_env_and_bad_values(void) {
  const uint16_t w[4] = {bf(1.0f), bf(1.0f), bf(1.0f), bf(1.0f)};
  CHECK(strcmp(sk_numerics_name(SK_NUMERICS_AMX), "amx") == 0);
  CHECK(strcmp(sk_numerics_name(SK_NUMERICS_DEFAULT), "default") == 0);
  CHECK(strcmp(sk_numerics_name((sk_numerics)9), "unknown") == 0);
  sk_graph *g = NULL;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, wv, y;
  CHECK_OK(sk_graph_add_input(g, "x", SK_BF16, 2, (int64_t[]){1, 4}, &x));
  CHECK_OK(sk_graph_add_constant(g, "w", SK_BF16, 2, (int64_t[]){1, 4}, w, SK_CONSTANT_COPY, &wv));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &wv, 1}};
  sk_op_desc d = {.op = "linear", .inputs = in, .n_inputs = 2};
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_program *p = NULL;
  sk_compile_config bad = {.numerics = (sk_numerics)7};
  CHECK_FAILS(sk_compile(g, &bad, &p), SK_STATUS_INVALID_ARGUMENT, "numerics = 7");
  CHECK(p == NULL);
  /* Unset: $SK_NUMERICS decides. */
  const char *old = getenv("SK_NUMERICS");
  char *saved = old ? strdup(old) : NULL;
  setenv("SK_NUMERICS", "fast", 1);
  CHECK_FAILS(sk_compile(g, NULL, &p), SK_STATUS_INVALID_ARGUMENT, "SK_NUMERICS=fast", "default or amx");
  setenv("SK_NUMERICS", "amx", 1);
  CHECK_OK(sk_compile(g, NULL, &p));
  sk_program_stats st = {.struct_size = sizeof st};
  if (p) CHECK_OK(sk_program_get_stats(p, &st));
  CHECK(st.numerics == SK_NUMERICS_AMX);
  sk_program_destroy(p);
  p = NULL;
  /* An explicit choice wins over the environment. */
  sk_compile_config def = {.numerics = SK_NUMERICS_DEFAULT};
  CHECK_OK(sk_compile(g, &def, &p));
  if (p) CHECK_OK(sk_program_get_stats(p, &st));
  CHECK(st.numerics == SK_NUMERICS_DEFAULT);
  sk_program_destroy(p);
  if (saved) setenv("SK_NUMERICS", saved, 1);
  else unsetenv("SK_NUMERICS");
  free(saved);
  sk_graph_destroy(g);
}

int main(void) {
  sk_team_config tc = {.num_cores = 2};
  if (sk_team_create(&tc, &team) != SK_STATUS_OK) return 1;
  const harness_case cases[] = {
      TEST_CASE(test_contracts_differ_as_defined),
      TEST_CASE(test_executors_agree_under_amx),
      TEST_CASE(test_attention_under_amx),
      TEST_CASE(test_attention_values_as_defined),
      TEST_CASE(test_env_and_bad_values),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  sk_team_destroy(team);
  return rc;
}

/* Batch invariance as a property test: for every op whose rows are
 * independent in its maths, a token's output row depends only on that
 * token's input rows and the constants — not on the token count T, the
 * row's position, the other rows of the batch, the team size, the
 * executor, the ISA path (the ISA_VARIANTS registration runs each) or the
 * program's maximum T.
 *
 * For every graph of tokens_cases.h: a dynamic program per executor
 * (eager, interp, jit, reference), team size (1, 2, 3 cores; reference 1)
 * and maximum (16 and 64) runs random batches — a random T, a random
 * multiset of tokens from a small pool (so tokens repeat), a probe token at
 * random positions — and every row of every per-token output must equal,
 * bit for bit, the row that token gets alone: T = 1, on the eager executor
 * of one core (a program built for exactly one token). Rows are made from
 * a hash of (input name, token id, column), so a token has the same input
 * row wherever it sits. SK_TEST_SEED=n draws other batches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tokens_buffers.h"

/* POOL tokens (pool[0] the probe); BATCHES runs per program; MAX_T the
 * larger maximum. */
enum { POOL = 24, BATCHES = 3, MAX_T = 64 };

static sk_team *teams[3];
static uint64_t seed = 0x5EEDB47C4ull, rng;

static uint64_t next_random(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t random_below(int64_t n) { return (int64_t)(next_random() % (uint64_t)n); }

/* What each token of the pool gets alone, per output of the dynamic
 * program (same names). Only per-token outputs (SK_DIM_TOKENS(1): one row
 * per token) are compared: expanded rows (SK_DIM_TOKENS(k), k > 1: the
 * dispatch's expert-sorted rows, its map and row scales) sit where the
 * routing of the whole batch puts them, and static outputs (per-expert
 * counts) sum over the batch — neither is a function of one token. */
typedef struct oracle {
  size_t n_out;
  bool per_token[TC_MAX_IO];
  size_t row_bytes[TC_MAX_IO];
  unsigned char *rows[TC_MAX_IO]; /* POOL rows each */
  int64_t pool[POOL];          /* pool[0]: the probe */
} oracle;

static void make_oracle(const tokens_case *c, const sk_program *dyn, oracle *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < POOL; i++) o->pool[i] = (int64_t)(next_random() >> 20);
  o->n_out = sk_program_num_outputs(dyn);
  sk_graph *g = tc_graph(c, 1, 0);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[0], .executor = SK_EXECUTOR_EAGER};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  CHECK(p && sk_program_num_outputs(p) == o->n_out);
  size_t at[TC_MAX_IO] = {0};
  for (size_t j = 0; p && j < o->n_out; j++) {
    io_rows io = io_at(dyn, SK_IO_OUTPUT, j, 1);
    o->per_token[j] = io.k == 1;
    o->row_bytes[j] = io.row_bytes;
    o->rows[j] = malloc(POOL * io.row_bytes + 1);
    CHECK_OK(sk_program_find(p, SK_IO_OUTPUT, io.name, &at[j]));
  }
  for (int t = 0; p && t < POOL; t++) {
    run_buffers b;
    alloc_buffers(p, 1, &o->pool[t], &b);
    CHECK_OK(sk_program_run(p, teams[0], b.in, b.n_in, b.out, b.n_out));
    for (size_t j = 0; j < o->n_out; j++) {
      if (!o->per_token[j]) continue;
      CHECK(b.out[at[j]].bytes == o->row_bytes[j]);
      memcpy(o->rows[j] + (size_t)t * o->row_bytes[j], b.out[at[j]].data, o->row_bytes[j]);
    }
    free_buffers(&b);
  }
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

static void free_oracle(oracle *o) {
  for (size_t j = 0; j < o->n_out; j++) free(o->rows[j]);
}

/* A random batch of `tokens` rows: pool tokens (repeats likely), and the
 * probe (pool[0]) at 1..3 random positions. which[r]: row r's pool index. */
static void draw_batch(const oracle *o, int64_t tokens, int *which, int64_t *ids) {
  for (int64_t r = 0; r < tokens; r++) which[r] = 1 + (int)random_below(POOL - 1);
  int64_t probes = 1 + random_below(tokens < 3 ? tokens : 3);
  for (int64_t i = 0; i < probes; i++) which[random_below(tokens)] = 0;
  for (int64_t r = 0; r < tokens; r++) ids[r] = o->pool[which[r]];
}

static const int64_t MAXIMA[] = {16, MAX_T};

/* Every per-token row of a run's outputs against the oracle's row of its
 * token; one check per output, naming the first row that differs. */
static void check_rows(const tokens_case *c, const oracle *o, const run_buffers *b, const char *where, int64_t tokens,
                       const int *which) {
  for (size_t j = 0; j < b->n_out; j++) {
    if (!o->per_token[j]) continue; /* expanded or static: not one token's (make_oracle) */
    CHECK_MSG(b->out[j].bytes == (size_t)tokens * o->row_bytes[j], "%s, %s: output '%s' has %zu bytes", c->name, where,
              b->out[j].name, b->out[j].bytes);
    int64_t bad = -1;
    for (int64_t r = 0; r < tokens; r++) {
      const unsigned char *got = (const unsigned char *)b->out[j].data + (size_t)r * o->row_bytes[j];
      if (memcmp(got, o->rows[j] + (size_t)which[r] * o->row_bytes[j], o->row_bytes[j]) != 0) {
        bad = r;
        break;
      }
    }
    CHECK_MSG(bad < 0, "%s, %s, T = %lld: output '%s' row %lld (token %lld%s) differs from the token's row alone (seed %llu)",
              c->name, where, (long long)tokens, b->out[j].name, (long long)bad,
              (long long)(bad < 0 ? 0 : o->pool[which[bad]]), bad >= 0 && which[bad] == 0 ? ", the probe" : "",
              (unsigned long long)seed);
  }
}

static void check_case(const tokens_case *c) {
  oracle o;
  bool have_oracle = false;
  int which[MAX_T];
  int64_t ids[MAX_T];
  for (size_t m = 0; m < sizeof MAXIMA / sizeof MAXIMA[0]; m++) {
    const int64_t max = MAXIMA[m];
    sk_graph *dyn = tc_graph(c, SK_DIM_DYNAMIC, max);
    for (size_t e = 0; e < TC_N_EXECUTORS; e++)
      for (int t = 0; t < 3; t++) {
        sk_program *p = tc_program(dyn, e, t, teams);
        if (!p) continue;
        if (!have_oracle) make_oracle(c, p, &o), have_oracle = true;
        char where[96];
        snprintf(where, sizeof where, "%s, %d cores, max %lld", sk_executor_name(TC_EXECUTORS[e]), t + 1, (long long)max);
        for (int k = 0; k < BATCHES; k++) {
          /* a random T; every third batch the maximum (the largest bucket) */
          int64_t tokens = k == 1 ? max : 1 + random_below(max);
          draw_batch(&o, tokens, which, ids);
          run_buffers b;
          alloc_buffers(p, tokens, ids, &b);
          CHECK_OK(sk_program_run(p, teams[t], b.in, b.n_in, b.out, b.n_out));
          check_rows(c, &o, &b, where, tokens, which);
          free_buffers(&b);
        }
        sk_program_destroy(p);
      }
    sk_graph_destroy(dyn);
  }
  if (have_oracle) free_oracle(&o);
}

static void test_every_case(void) {
  for (size_t i = 0; i < sizeof TOKENS_CASES / sizeof TOKENS_CASES[0]; i++) check_case(&TOKENS_CASES[i]);
}

/* The probe in every row, T = 1, 4, 16, 64: a batch with nothing but one
 * token (all its pairs routed to the same experts, one expert group
 * holding every row) still gives each row the token's row alone. */
static void test_one_token_everywhere(void) {
  const tokens_case *c = &TOKENS_CASES[5]; /* moe softmax: routing that follows the batch */
  sk_graph *dyn = tc_graph(c, SK_DIM_DYNAMIC, MAX_T);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[2], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(dyn, &cfg, &p));
  if (p) {
    oracle o;
    make_oracle(c, p, &o);
    int which[MAX_T] = {0};
    int64_t ids[MAX_T];
    for (int64_t tokens = 1; tokens <= MAX_T; tokens *= 4) {
      for (int64_t r = 0; r < tokens; r++) ids[r] = o.pool[0];
      run_buffers b;
      alloc_buffers(p, tokens, ids, &b);
      CHECK_OK(sk_program_run(p, teams[2], b.in, b.n_in, b.out, b.n_out));
      check_rows(c, &o, &b, "interp, 3 cores, max 64, the probe only", tokens, which);
      free_buffers(&b);
    }
    free_oracle(&o);
  }
  sk_program_destroy(p);
  sk_graph_destroy(dyn);
}

int main(void) {
  const char *s = getenv("SK_TEST_SEED");
  if (s && *s) seed = strtoull(s, NULL, 0);
  rng = seed;
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  static const harness_case cases[] = {TEST_CASE(test_every_case), TEST_CASE(test_one_token_everywhere)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

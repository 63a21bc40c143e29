/* Shared by the attention tests (test_attention.c, test_mla_attention.c):
 * a random source, teams of 1-3 cores, and the invariance harness of a
 * decoder layer — its cache writes (kv_cache_write, in place) and its
 * attention in one program with a run-time token count, run in one pass,
 * in random chunks and token by token, alone or beside a second sequence.
 * Header-only on purpose, like graph_builders.h: CHECK counts into the
 * including test's harness (harness.h keeps its counters per file). */
#ifndef SK_TEST_ATTENTION_TEST_UTIL_H
#define SK_TEST_ATTENTION_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ---- random data and teams ---- */

static uint64_t rng;
static sk_team *teams[4]; /* teams[n]: n cores (setup_teams) */

static inline uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static inline int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

/* n values of dt (fp32, fp16 or bf16), uniform in [-amp, amp). */
static inline void fill(void *data, sk_dtype dt, size_t n, float amp) {
  for (size_t i = 0; i < n; i++) {
    float v = ((float)((double)(next() >> 11) / (double)(1ull << 53)) * 2.0f - 1.0f) * amp;
    if (dt == SK_FP32) ((float *)data)[i] = v;
    else ((uint16_t *)data)[i] = dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
  }
}

/* Seeds the random source (each test its own sequence) and makes teams[1..3]. */
static inline void setup_teams(uint64_t seed) {
  rng = seed;
  for (int n = 1; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
}

static inline void teardown_teams(void) {
  for (int n = 1; n <= 3; n++) sk_team_destroy(teams[n]);
}

/* ---- a layer's sequences ---- */

#define SEQ_MAX_CACHES 2
#define SEQ_MAX_INPUTS 3

/* What a layer's graph binds per sequence, in its input order: n_caches
 * caches of cache_rows rows, then n_inputs inputs of the run's tokens,
 * then positions int32 [T]; it gives one output per sequence. Rows in
 * values of dt. cache_rows is also the programs' maximum token count. */
typedef struct seq_layout {
  const char *what;
  sk_dtype dt;
  int64_t cache_rows;
  int n_caches, n_inputs;
  int64_t cache_row[SEQ_MAX_CACHES], input_row[SEQ_MAX_INPUTS], out_row;
} seq_layout;

/* A sequence: len tokens' inputs (random), its caches and each token's
 * output; rows in bytes. */
typedef struct seq {
  const seq_layout *l;
  int64_t len;
  char *cache[SEQ_MAX_CACHES], *input[SEQ_MAX_INPUTS], *o;
  size_t cache_row[SEQ_MAX_CACHES], input_row[SEQ_MAX_INPUTS], o_row;
} seq;

static inline size_t seq_cache_bytes(const seq *x, int i) { return (size_t)x->l->cache_rows * x->cache_row[i]; }

static inline void seq_init(seq *x, const seq_layout *l, int64_t len) {
  const size_t es = sk_dtype_size(l->dt);
  memset(x, 0, sizeof *x);
  x->l = l;
  x->len = len;
  for (int i = 0; i < l->n_caches; i++) {
    x->cache_row[i] = (size_t)l->cache_row[i] * es;
    x->cache[i] = calloc((size_t)l->cache_rows, x->cache_row[i]);
  }
  for (int i = 0; i < l->n_inputs; i++) {
    x->input_row[i] = (size_t)l->input_row[i] * es;
    x->input[i] = malloc(x->input_row[i] * (size_t)len);
    fill(x->input[i], l->dt, (size_t)(l->input_row[i] * len), 2.0f);
  }
  x->o_row = (size_t)l->out_row * es;
  x->o = calloc((size_t)len, x->o_row);
}

/* Empty caches and outputs: the state before a sequence's first token. */
static inline void seq_reset(seq *x) {
  for (int i = 0; i < x->l->n_caches; i++) memset(x->cache[i], 0, seq_cache_bytes(x, i));
  memset(x->o, 0, (size_t)x->len * x->o_row);
}

static inline void seq_free(seq *x) {
  for (int i = 0; i < x->l->n_caches; i++) free(x->cache[i]);
  for (int i = 0; i < x->l->n_inputs; i++) free(x->input[i]);
  free(x->o);
}

/* The outputs and the final caches, bitwise. */
static inline bool same_seq(const seq *a, const seq *b) {
  bool same = memcmp(a->o, b->o, (size_t)a->len * a->o_row) == 0;
  for (int i = 0; i < a->l->n_caches; i++) same = same && memcmp(a->cache[i], b->cache[i], seq_cache_bytes(a, i)) == 0;
  return same;
}

static inline void copy_inputs(seq *dst, const seq *src) {
  for (int i = 0; i < src->l->n_inputs; i++) memcpy(dst->input[i], src->input[i], (size_t)src->len * src->input_row[i]);
}

/* One run of p: tokens [t0, t0 + n) of each sequence at positions pos. */
static inline sk_status run_tokens(sk_program *p, sk_team *team, seq *xs, int n_seqs, int64_t t0, int64_t n,
                                   const int32_t *pos) {
  sk_buffer in[2 * (SEQ_MAX_CACHES + SEQ_MAX_INPUTS + 1)], out[2];
  size_t k = 0;
  for (int s = 0; s < n_seqs && s < 2; s++) {
    seq *x = &xs[s];
    for (int i = 0; i < x->l->n_caches; i++) in[k++] = (sk_buffer){NULL, x->cache[i], seq_cache_bytes(x, i)};
    for (int i = 0; i < x->l->n_inputs; i++)
      in[k++] = (sk_buffer){NULL, x->input[i] + (size_t)t0 * x->input_row[i], (size_t)n * x->input_row[i]};
    in[k++] = (sk_buffer){NULL, (void *)pos, (size_t)n * sizeof(int32_t)};
    out[s] = (sk_buffer){NULL, x->o + (size_t)t0 * x->o_row, (size_t)n * x->o_row};
  }
  return sk_program_run_by_index(p, team, in, k, out, (size_t)n_seqs);
}

/* Runs tokens [t0, t0 + n) of each sequence at positions t0 .. t0 + n - 1. */
static inline sk_status run_chunk(sk_program *p, sk_team *team, seq *xs, int n_seqs, int64_t t0, int64_t n) {
  int32_t *pos = malloc((size_t)n * sizeof *pos);
  if (!pos) return SK_STATUS_OUT_OF_MEMORY;
  for (int64_t t = 0; t < n; t++) pos[t] = (int32_t)(t0 + t);
  sk_status st = run_tokens(p, team, xs, n_seqs, t0, n, pos);
  free(pos);
  return st;
}

/* Runs whole sequences from empty caches: mode 0 one pass, 1 random
 * chunks, 2 token by token. */
static inline void run_sequences(sk_program *p, sk_team *team, seq *xs, int n_seqs, int mode) {
  for (int s = 0; s < n_seqs; s++) seq_reset(&xs[s]);
  for (int64_t t0 = 0; t0 < xs[0].len;) {
    int64_t left = xs[0].len - t0;
    int64_t n = mode == 0 ? left : mode == 2 ? 1 : 1 + below(left < 9 ? left : 9);
    CHECK_OK(run_chunk(p, team, xs, n_seqs, t0, n));
    t0 += n;
  }
}

/* The invariance promise of a layer (one: a graph of one sequence; two:
 * of two, each its own caches): `trials` sequences (the first fills the
 * caches, the others a random length) run in one pass, in random chunks
 * and token by token, on every executor with teams of 1-3 cores, give
 * every token's output and the final caches bitwise equal to one pass of
 * the references; and a second sequence in the same batch changes
 * nothing. */
static inline void check_invariance(const seq_layout *l, sk_graph *one, sk_graph *two, int trials) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  sk_program *solo[3] = {0}, *batch = NULL, *oracle = NULL;
  for (int e = 0; e < 3; e++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[e + 1], .executor = executors[e]};
    CHECK_OK(sk_compile(one, &cfg, &solo[e]));
  }
  sk_compile_config rc = {.struct_size = sizeof rc, .team = teams[1], .executor = SK_EXECUTOR_REFERENCE};
  CHECK_OK(sk_compile(one, &rc, &oracle));
  sk_compile_config bc = {.struct_size = sizeof bc, .team = teams[2], .executor = SK_EXECUTOR_JIT};
  CHECK_OK(sk_compile(two, &bc, &batch));
  int mismatches = 0;
  for (int trial = 0; trial < trials && solo[0] && solo[1] && solo[2] && batch && oracle; trial++) {
    const int64_t len = trial == 0 ? l->cache_rows : 1 + below(l->cache_rows);
    seq want, got, pair[2];
    seq_init(&want, l, len);
    seq_init(&got, l, len);
    run_sequences(oracle, teams[1], &want, 1, 0); /* one pass through the references */
    bool nonzero = false;
    for (size_t i = 0; i < (size_t)len * want.o_row && !nonzero; i++) nonzero = want.o[i] != 0;
    CHECK_MSG(nonzero, "%s: the outputs are all zero", l->what);
    copy_inputs(&got, &want);
    for (int mode = 0; mode < 3; mode++)
      for (int e = 0; e < 3; e++) {
        run_sequences(solo[e], teams[e + 1], &got, 1, mode);
        if (!same_seq(&got, &want)) mismatches++;
        CHECK_MSG(same_seq(&got, &want),
                  "%s: length %lld, mode %d, executor %d on %d cores differs from one pass of the references",
                  l->what, (long long)len, mode, (int)executors[e], e + 1);
      }
    /* the same sequence beside another one in every run (its own caches) */
    seq_init(&pair[1], l, len);
    pair[0] = got;
    for (int mode = 0; mode < 3; mode++) {
      run_sequences(batch, teams[2], pair, 2, mode);
      CHECK_MSG(same_seq(&pair[0], &want), "%s: length %lld, mode %d: a second sequence in the batch changed the first",
                l->what, (long long)len, mode);
    }
    seq_free(&pair[1]);
    seq_free(&want);
    seq_free(&got);
  }
  printf("  %-36s %s\n", l->what, mismatches ? "MISMATCH" : "one pass = chunks = token by token, any batch");
  for (int e = 0; e < 3; e++) sk_program_destroy(solo[e]);
  sk_program_destroy(batch);
  sk_program_destroy(oracle);
}

#endif

/* kv_cache_write and attention beyond the case table (docs/ops.md):
 *
 *   - the invariance promise: a decoder layer's cache writes and attention
 *     (kv_cache_write of K and V, then attention on their outputs) in one
 *     program with a run-time token count; random prompts run in one pass,
 *     in random chunks and token by token, on different executors and team
 *     sizes: every token's output and the final caches bitwise equal; and a
 *     second sequence in the same batch (its own caches) changes nothing;
 *   - the run-time errors: a position outside [0, S) fails the run naming
 *     it, and the caches are unchanged;
 *   - the graph refusals of state written in place: a constant or an
 *     intermediate cache, a cache another node reads, a later reader of the
 *     written input, the input marked as an output; attention's head dims;
 *   - NaNs, infinities, zeros and huge values scattered over q, K and V
 *     (NaN and infinite scores, NaN weights, all-zero rows with a negative
 *     scale: maxima of -0): the JIT's output bitwise the reference's
 *     (the vector max, shift and normalizer lanes against the scalar
 *     definition; a NaN score makes the head NaN whichever max wins).
 * ctest runs it once per ISA path (SK_ISA). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_builders.h"
#include "harness.h"

#define S 40    /* cache rows */
#define MAXT 40 /* the programs' maximum token count */

typedef struct layer_cfg {
  const char *what;
  sk_dtype dt;
  int64_t hq, hkv, d, window;
  double softcap;
} layer_cfg;

static const layer_cfg CFGS[] = {
    {"bf16 GQA 4:2 D 64", SK_BF16, 4, 2, 64, 0, 0.0},
    {"fp32 MHA 2 D 128 window 9", SK_FP32, 2, 2, 128, 9, 0.0},
    {"fp16 GQA 3:1 D 16 softcap 20", SK_FP16, 3, 1, 16, 0, 20.0},
};

static sk_team *teams[4];
static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

static void fill(void *data, sk_dtype dt, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = (float)((double)(next() >> 11) / (double)(1ull << 53)) * 4.0f - 2.0f;
    if (dt == SK_FP32) ((float *)data)[i] = v;
    else ((uint16_t *)data)[i] = dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
  }
}

/* One layer per sequence, all in scope "layer": caches kc<s>, vc<s> [S,
 * Hkv, D]; per token kn<s>, vn<s> [T, Hkv, D], q<s> [T, Hq, D], pos<s>
 * int32 [T]; output o<s>. */
static sk_graph *layer_graph(const layer_cfg *c, int n_seqs) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_set_max_tokens(g, MAXT));
  CHECK_OK(sk_graph_begin_scope(g, "layer", NULL));
  for (int s = 0; s < n_seqs; s++) {
    char n[6][16];
    const char *base[6] = {"kc", "vc", "kn", "vn", "q", "pos"};
    for (int i = 0; i < 6; i++) snprintf(n[i], sizeof n[i], "%s%d", base[i], s);
    sk_value kc = input(g, n[0], c->dt, 3, (int64_t[]){S, c->hkv, c->d});
    sk_value vc = input(g, n[1], c->dt, 3, (int64_t[]){S, c->hkv, c->d});
    sk_value kn = input(g, n[2], c->dt, 3, (int64_t[]){SK_DIM_DYNAMIC, c->hkv, c->d});
    sk_value vn = input(g, n[3], c->dt, 3, (int64_t[]){SK_DIM_DYNAMIC, c->hkv, c->d});
    sk_value q = input(g, n[4], c->dt, 3, (int64_t[]){SK_DIM_DYNAMIC, c->hq, c->d});
    sk_value pos = input(g, n[5], SK_INT32, 1, (int64_t[]){SK_DIM_DYNAMIC});
    sk_value k2, v2, o;
    op(g, "kv_cache_write", NULL, (sk_op_input[]){{"cache", &kc, 1}, {"new", &kn, 1}, {"positions", &pos, 1}}, 3,
       NULL, 0, &k2, 1);
    op(g, "kv_cache_write", NULL, (sk_op_input[]){{"cache", &vc, 1}, {"new", &vn, 1}, {"positions", &pos, 1}}, 3,
       NULL, 0, &v2, 1);
    sk_attr at[] = {SK_ATTR_INT("window", c->window), SK_ATTR_FLOAT("softcap", c->softcap)};
    op(g, "attention", NULL,
       (sk_op_input[]){{"q", &q, 1}, {"k_cache", &k2, 1}, {"v_cache", &v2, 1}, {"positions", &pos, 1}}, 4, at, 2,
       &o, 1);
    char on[8];
    snprintf(on, sizeof on, "o%d", s);
    CHECK_OK(sk_graph_mark_output(g, o, on));
  }
  CHECK_OK(sk_graph_end_scope(g));
  return g;
}

/* A sequence: L tokens' K, V and q rows, the caches, and each token's output. */
typedef struct seq {
  int64_t len;
  char *kn, *vn, *q, *kc, *vc, *o;
  size_t kv_row, q_row; /* bytes per token */
} seq;

static void seq_init(seq *x, const layer_cfg *c, int64_t len) {
  size_t es = sk_dtype_size(c->dt);
  x->len = len;
  x->kv_row = (size_t)(c->hkv * c->d) * es;
  x->q_row = (size_t)(c->hq * c->d) * es;
  x->kn = malloc(x->kv_row * (size_t)len);
  x->vn = malloc(x->kv_row * (size_t)len);
  x->q = malloc(x->q_row * (size_t)len);
  x->kc = calloc(S, x->kv_row);
  x->vc = calloc(S, x->kv_row);
  x->o = calloc((size_t)len, x->q_row);
  fill(x->kn, c->dt, x->kv_row / es * (size_t)len);
  fill(x->vn, c->dt, x->kv_row / es * (size_t)len);
  fill(x->q, c->dt, x->q_row / es * (size_t)len);
}

static void seq_reset(seq *x) {
  memset(x->kc, 0, S * x->kv_row);
  memset(x->vc, 0, S * x->kv_row);
  memset(x->o, 0, (size_t)x->len * x->q_row);
}

static void seq_free(seq *x) {
  free(x->kn), free(x->vn), free(x->q), free(x->kc), free(x->vc), free(x->o);
}

/* Runs tokens [t0, t0 + n) of each sequence through p (one run, n tokens). */
static sk_status run_chunk(sk_program *p, sk_team *team, seq *xs, int n_seqs, int64_t t0, int64_t n) {
  sk_buffer in[12], out[2];
  int32_t pos[MAXT];
  for (int64_t t = 0; t < n; t++) pos[t] = (int32_t)(t0 + t);
  for (int s = 0; s < n_seqs; s++) {
    seq *x = &xs[s];
    in[6 * s + 0] = (sk_buffer){NULL, x->kc, S * x->kv_row};
    in[6 * s + 1] = (sk_buffer){NULL, x->vc, S * x->kv_row};
    in[6 * s + 2] = (sk_buffer){NULL, x->kn + (size_t)t0 * x->kv_row, (size_t)n * x->kv_row};
    in[6 * s + 3] = (sk_buffer){NULL, x->vn + (size_t)t0 * x->kv_row, (size_t)n * x->kv_row};
    in[6 * s + 4] = (sk_buffer){NULL, x->q + (size_t)t0 * x->q_row, (size_t)n * x->q_row};
    in[6 * s + 5] = (sk_buffer){NULL, pos, (size_t)n * sizeof(int32_t)};
    out[s] = (sk_buffer){NULL, x->o + (size_t)t0 * x->q_row, (size_t)n * x->q_row};
  }
  return sk_program_run_by_index(p, team, in, (size_t)(6 * n_seqs), out, (size_t)n_seqs);
}

/* Runs whole sequences in chunks: mode 0 one pass, 1 random chunks, 2 token by token. */
static void run_sequences(sk_program *p, sk_team *team, seq *xs, int n_seqs, int mode) {
  for (int s = 0; s < n_seqs; s++) seq_reset(&xs[s]);
  for (int64_t t0 = 0; t0 < xs[0].len;) {
    int64_t left = xs[0].len - t0;
    int64_t n = mode == 0 ? left : mode == 2 ? 1 : 1 + below(left < 9 ? left : 9);
    CHECK_OK(run_chunk(p, team, xs, n_seqs, t0, n));
    t0 += n;
  }
}

static bool same_seq(const seq *a, const seq *b) {
  return memcmp(a->o, b->o, (size_t)a->len * a->q_row) == 0 && memcmp(a->kc, b->kc, S * a->kv_row) == 0 &&
         memcmp(a->vc, b->vc, S * a->kv_row) == 0;
}

static void copy_state(seq *dst, const seq *src) {
  memcpy(dst->o, src->o, (size_t)src->len * src->q_row);
  memcpy(dst->kc, src->kc, S * src->kv_row);
  memcpy(dst->vc, src->vc, S * src->kv_row);
}

static void test_invariance_to_chunking_batch_executor_and_team(void) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (size_t ci = 0; ci < sizeof CFGS / sizeof CFGS[0]; ci++) {
    const layer_cfg *c = &CFGS[ci];
    sk_graph *one = layer_graph(c, 1), *two = layer_graph(c, 2);
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
    for (int trial = 0; trial < 4 && solo[0] && solo[1] && solo[2] && batch && oracle; trial++) {
      int64_t len = 1 + below(S);
      seq want, got, pair[2];
      seq_init(&want, c, len);
      seq_init(&got, c, len);
      run_sequences(oracle, teams[1], &want, 1, 0); /* one pass through the references */
      bool nonzero = false;
      for (size_t i = 0; i < (size_t)len * want.q_row && !nonzero; i++) nonzero = want.o[i] != 0;
      CHECK_MSG(nonzero, "%s: the outputs are all zero", c->what);
      for (int mode = 0; mode < 3; mode++)
        for (int e = 0; e < 3; e++) {
          memcpy(got.kn, want.kn, (size_t)len * want.kv_row), memcpy(got.vn, want.vn, (size_t)len * want.kv_row);
          memcpy(got.q, want.q, (size_t)len * want.q_row);
          run_sequences(solo[e], teams[e + 1], &got, 1, mode);
          if (!same_seq(&got, &want)) mismatches++;
          CHECK_MSG(same_seq(&got, &want), "%s: length %lld, mode %d, executor %d on %d cores differs from one pass of the references",
                    c->what, (long long)len, mode, (int)executors[e], e + 1);
        }
      /* the same sequence beside another one in every run (its own caches) */
      seq_init(&pair[1], c, len);
      pair[0] = got;
      copy_state(&pair[0], &want);
      for (int mode = 0; mode < 3; mode++) {
        run_sequences(batch, teams[2], pair, 2, mode);
        CHECK_MSG(same_seq(&pair[0], &want), "%s: length %lld, mode %d: a second sequence in the batch changed the first",
                  c->what, (long long)len, mode);
      }
      seq_free(&pair[1]);
      seq_free(&want);
      seq_free(&got);
    }
    printf("  %-32s %s\n", c->what, mismatches ? "MISMATCH" : "one pass = chunks = token by token, any batch");
    for (int e = 0; e < 3; e++) sk_program_destroy(solo[e]);
    sk_program_destroy(batch);
    sk_program_destroy(oracle);
    sk_graph_destroy(one);
    sk_graph_destroy(two);
  }
}

/* A position outside [0, S) fails the run naming it; the caches keep their bytes. */
static void test_out_of_range_positions_fail_and_write_nothing(void) {
  const layer_cfg *c = &CFGS[0];
  sk_graph *g = layer_graph(c, 1);
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  for (int e = 0; e < 4; e++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[2], .executor = executors[e]};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) continue;
    seq x;
    seq_init(&x, c, 4);
    fill(x.kc, c->dt, S * x.kv_row / 2);
    fill(x.vc, c->dt, S * x.kv_row / 2);
    char *kc0 = malloc(S * x.kv_row), *vc0 = malloc(S * x.kv_row);
    memcpy(kc0, x.kc, S * x.kv_row), memcpy(vc0, x.vc, S * x.kv_row);
    const int32_t bad[2][4] = {{3, 7, S, 1}, {0, -1, 2, 3}};
    const char *frag[2] = {"positions[2] = 40", "positions[1] = -1"};
    for (int b = 0; b < 2; b++) {
      sk_buffer in[6] = {{NULL, x.kc, S * x.kv_row}, {NULL, x.vc, S * x.kv_row}, {NULL, x.kn, 4 * x.kv_row},
                         {NULL, x.vn, 4 * x.kv_row}, {NULL, x.q, 4 * x.q_row}, {NULL, (void *)bad[b], sizeof bad[b]}};
      sk_buffer out[1] = {{NULL, x.o, 4 * x.q_row}};
      CHECK_FAILS(sk_program_run_by_index(p, teams[2], in, 6, out, 1), SK_STATUS_INVALID_ARGUMENT, "kv_cache_write", frag[b],
                  "[0, 40)");
      CHECK_MSG(memcmp(x.kc, kc0, S * x.kv_row) == 0 && memcmp(x.vc, vc0, S * x.kv_row) == 0,
                "executor %d: a failed write changed the caches", (int)executors[e]);
      /* the same program runs on afterwards */
      in[5].data = (void *)(int32_t[]){0, 1, 2, 39};
      CHECK_OK(sk_program_run_by_index(p, teams[2], in, 6, out, 1));
      memcpy(x.kc, kc0, S * x.kv_row), memcpy(x.vc, vc0, S * x.kv_row);
    }
    /* a run without the cache bound is refused like any missing input */
    sk_buffer some[5] = {{"vc0", x.vc, S * x.kv_row}, {"kn0", x.kn, 4 * x.kv_row}, {"vn0", x.vn, 4 * x.kv_row},
                         {"q0", x.q, 4 * x.q_row}, {"pos0", (void *)bad[0], sizeof bad[0]}};
    sk_buffer out[1] = {{"o0", x.o, 4 * x.q_row}};
    CHECK(sk_program_run(p, teams[2], some, 5, out, 1) != SK_STATUS_OK);
    free(kc0), free(vc0);
    seq_free(&x);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

/* attention alone: a position past the caches fails its run, naming it. */
static void test_attention_refuses_a_position_past_the_cache(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value q = input(g, "q", SK_FP32, 3, (int64_t[]){2, 2, 16});
  sk_value k = input(g, "k", SK_FP32, 3, (int64_t[]){8, 1, 16}), v = input(g, "v", SK_FP32, 3, (int64_t[]){8, 1, 16});
  sk_value pos = input(g, "pos", SK_INT64, 1, (int64_t[]){2}), o;
  op(g, "attention", "attn", (sk_op_input[]){{"q", &q, 1}, {"k_cache", &k, 1}, {"v_cache", &v, 1}, {"positions", &pos, 1}},
     4, NULL, 0, &o, 1);
  CHECK_OK(sk_graph_mark_output(g, o, "o"));
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, NULL, &p));
  float qd[64] = {0}, kd[128] = {0}, vd[128] = {0}, od[64];
  int64_t pd[2] = {3, 8};
  sk_buffer in[4] = {{"q", qd, sizeof qd}, {"k", kd, sizeof kd}, {"v", vd, sizeof vd}, {"pos", pd, sizeof pd}};
  sk_buffer out[1] = {{"o", od, sizeof od}};
  if (p) CHECK_FAILS(sk_program_run(p, NULL, in, 4, out, 1), SK_STATUS_INVALID_ARGUMENT, "attn (attention)",
                     "positions[1] = 8", "[0, 8)");
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

static sk_status add_write(sk_graph *g, sk_value cache, sk_value nw, sk_value pos, sk_value *out) {
  sk_op_input in[] = {{"cache", &cache, 1}, {"new", &nw, 1}, {"positions", &pos, 1}};
  sk_op_desc d = {.op = "kv_cache_write", .name = "w", .inputs = in, .n_inputs = 3};
  return sk_graph_add_op(g, &d, out, 1, NULL);
}

static void test_state_written_in_place_is_refused_where_unsound(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  const int64_t shape[3] = {8, 1, 16};
  float zeros[128] = {0};
  sk_value cache = input(g, "cache", SK_FP32, 3, shape), nw = input(g, "new", SK_FP32, 3, (int64_t[]){8, 1, 16});
  sk_value pos = input(g, "pos", SK_INT32, 1, (int64_t[]){8}), konst, out, sq;
  CHECK_OK(sk_graph_add_constant(g, "weights", SK_FP32, 3, shape, zeros, SK_CONSTANT_COPY, &konst));
  CHECK_FAILS(add_write(g, konst, nw, pos, &out), SK_STATUS_INVALID_ARGUMENT, "w: input cache", "constant 'weights'",
              "expected a graph input");
  sq = unary(g, "square", "sq", nw);
  CHECK_FAILS(add_write(g, sq, nw, pos, &out), SK_STATUS_INVALID_ARGUMENT, "the output of node 'sq'",
              "expected a graph input");
  CHECK_FAILS(add_write(g, nw, nw, pos, &out), SK_STATUS_INVALID_ARGUMENT, "already read by node 'sq'");
  CHECK_OK(sk_graph_mark_output(g, pos, "pos_out"));
  sk_value other = input(g, "other", SK_FP32, 3, shape);
  CHECK_OK(sk_graph_mark_output(g, other, "other_out"));
  CHECK_FAILS(add_write(g, other, nw, pos, &out), SK_STATUS_INVALID_ARGUMENT, "marked as graph output 'other_out'");
  CHECK_OK(add_write(g, cache, nw, pos, &out));
  /* the written input: no later reader, not an output; the output is the state */
  CHECK_FAILS(sk_graph_add_op(g, &(sk_op_desc){.op = "square", .name = "late",
                                                .inputs = (sk_op_input[]){{"x", &cache, 1}}, .n_inputs = 1},
                              &sq, 1, NULL),
              SK_STATUS_INVALID_ARGUMENT, "late: input x", "graph input 'cache' is written in place by node 'w'");
  CHECK_FAILS(sk_graph_mark_output(g, cache, "cache_out"), SK_STATUS_INVALID_ARGUMENT, "written in place by node 'w'");
  CHECK_FAILS(add_write(g, cache, nw, pos, &sq), SK_STATUS_INVALID_ARGUMENT, "written in place by node 'w'");
  CHECK_OK(sk_graph_mark_output(g, out, "cache_after"));
  /* the written cache comes out as the output, copied after the run */
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, NULL, &p));
  float c[128] = {0}, n[128], after[128], other_d[128] = {0}, other_out[128], pos_out[8] = {0};
  for (int i = 0; i < 128; i++) n[i] = (float)i;
  int32_t pd[8] = {7, 6, 5, 4, 3, 2, 1, 0};
  sk_buffer in[4] = {{"cache", c, sizeof c}, {"new", n, sizeof n}, {"pos", pd, sizeof pd}, {"other", other_d, sizeof other_d}};
  sk_buffer outs[3] = {{"pos_out", pos_out, sizeof pos_out}, {"other_out", other_out, sizeof other_out},
                       {"cache_after", after, sizeof after}};
  if (p) CHECK_OK(sk_program_run(p, NULL, in, 4, outs, 3));
  bool ok = true;
  for (int r = 0; r < 8; r++)
    for (int i = 0; i < 16; i++) ok = ok && c[(7 - r) * 16 + i] == n[r * 16 + i] && after[(7 - r) * 16 + i] == n[r * 16 + i];
  CHECK_MSG(ok, "the cache and the marked output hold the written rows");
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

static void test_attention_head_dims_and_groups(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value q72 = input(g, "q72", SK_BF16, 3, (int64_t[]){1, 4, 72}), k72 = input(g, "k72", SK_BF16, 3, (int64_t[]){8, 2, 72});
  sk_value q3 = input(g, "q3", SK_BF16, 3, (int64_t[]){1, 3, 64}), k2 = input(g, "k2", SK_BF16, 3, (int64_t[]){8, 2, 64});
  sk_value pos = input(g, "pos", SK_INT32, 1, (int64_t[]){1}), o;
  sk_op_input a[] = {{"q", &q72, 1}, {"k_cache", &k72, 1}, {"v_cache", &k72, 1}, {"positions", &pos, 1}};
  sk_op_desc d = {.op = "attention", .inputs = a, .n_inputs = 4};
  CHECK_FAILS(sk_graph_add_op(g, &d, &o, 1, NULL), SK_STATUS_INVALID_SHAPE, "head dim D = 72", "multiple of 16");
  a[0].values = &q3, a[1].values = &k2, a[2].values = &k2;
  CHECK_FAILS(sk_graph_add_op(g, &d, &o, 1, NULL), SK_STATUS_INVALID_SHAPE, "Hq = 3", "Hkv = 2");
  sk_graph_destroy(g);
}

static void test_special_values_match_the_reference(void) {
  enum { T = 6, HQ = 4, D = 32, SS = 70 }; /* SS > 64: full 16-lane chunks and a tail */
  static const double scales[] = {0.0, -0.3};
  for (int si = 0; si < 2; si++) {
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    sk_value q = input(g, "q", SK_FP32, 3, (int64_t[]){T, HQ, D});
    sk_value k = input(g, "k", SK_FP32, 3, (int64_t[]){SS, 2, D}), v = input(g, "v", SK_FP32, 3, (int64_t[]){SS, 2, D});
    sk_value pos = input(g, "pos", SK_INT32, 1, (int64_t[]){T}), o;
    sk_attr at[] = {SK_ATTR_FLOAT("scale", scales[si])};
    op(g, "attention", "attn", (sk_op_input[]){{"q", &q, 1}, {"k_cache", &k, 1}, {"v_cache", &v, 1}, {"positions", &pos, 1}},
       4, at, 1, &o, 1);
    CHECK_OK(sk_graph_mark_output(g, o, "o"));
    sk_compile_config jc = {.struct_size = sizeof jc, .team = teams[2], .executor = SK_EXECUTOR_JIT};
    sk_compile_config rc = {.struct_size = sizeof rc, .team = teams[1], .executor = SK_EXECUTOR_REFERENCE};
    sk_program *jit = NULL, *ref = NULL;
    CHECK_OK(sk_compile(g, &jc, &jit));
    CHECK_OK(sk_compile(g, &rc, &ref));
    static float qd[T * HQ * D], kd[SS * 2 * D], vd[SS * 2 * D], want[T * HQ * D], got[T * HQ * D];
    const int32_t pd[T] = {SS - 1, 64, 63, 15, 47, 0};
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f};
    int mismatches = 0;
    for (int trial = 0; trial < 24 && jit && ref; trial++) {
      fill(qd, SK_FP32, sizeof qd / sizeof qd[0]), fill(kd, SK_FP32, sizeof kd / sizeof kd[0]);
      fill(vd, SK_FP32, sizeof vd / sizeof vd[0]);
      if (trial % 4 == 1) memset(qd, 0, sizeof qd); /* every score 0 (-0 with scale < 0) */
      for (int n = 0; n < trial % 6; n++) {
        float *where[] = {qd, kd, vd};
        const size_t len[] = {sizeof qd / sizeof qd[0], sizeof kd / sizeof kd[0], sizeof vd / sizeof vd[0]};
        const int w = (int)below(3);
        where[w][below((int64_t)len[w])] = special[below(sizeof special / sizeof special[0])];
      }
      sk_buffer in[4] = {{"q", qd, sizeof qd}, {"k", kd, sizeof kd}, {"v", vd, sizeof vd}, {"pos", (void *)pd, sizeof pd}};
      sk_buffer ow[1] = {{"o", want, sizeof want}}, og[1] = {{"o", got, sizeof got}};
      CHECK_OK(sk_program_run(ref, teams[1], in, 4, ow, 1));
      CHECK_OK(sk_program_run(jit, teams[2], in, 4, og, 1));
      mismatches += memcmp(want, got, sizeof want) != 0;
    }
    CHECK(mismatches == 0);
    sk_program_destroy(jit);
    sk_program_destroy(ref);
    sk_graph_destroy(g);
  }
}

static void setup(void) {
  for (int n = 1; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
}

static void teardown(void) {
  for (int n = 1; n <= 3; n++) sk_team_destroy(teams[n]);
}

int main(void) {
  static const harness_case cases[] = {TEST_CASE(setup),
                                       TEST_CASE(test_state_written_in_place_is_refused_where_unsound),
                                       TEST_CASE(test_attention_head_dims_and_groups),
                                       TEST_CASE(test_attention_refuses_a_position_past_the_cache),
                                       TEST_CASE(test_out_of_range_positions_fail_and_write_nothing),
                                       TEST_CASE(test_invariance_to_chunking_batch_executor_and_team),
                                       TEST_CASE(test_special_values_match_the_reference),
                                       TEST_CASE(teardown)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

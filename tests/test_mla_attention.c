/* mla_attention beyond the case table (docs/ops.md):
 *
 *   - the invariance promise: a DeepSeek layer's latent cache write and
 *     attention (kv_cache_write of [c_kv, k_pe] into a [S, 1, R + P] cache,
 *     then mla_attention on its output, kv_b_weight a constant: the packed
 *     path) in one program with a run-time token count; random prompts run
 *     in one pass, in random chunks and token by token, on every executor
 *     and team size: every token's output and the final cache bitwise equal
 *     to one pass of the references; a second sequence in the same batch
 *     (its own cache) changes nothing;
 *   - the run-time error: a position outside [0, S) fails the run naming it;
 *   - the shape rules build refuses, each with its message.
 * ctest runs it once per ISA path (SK_ISA). */
#include <stdlib.h>
#include <string.h>

#include "graph_builders.h"
#include "harness.h"

#define S 36    /* cache rows */
#define MAXT 36 /* the programs' maximum token count */

typedef struct mla_cfg {
  const char *what;
  sk_dtype dt;
  int64_t h, nope, rope, v, rank;
  double scale;
} mla_cfg;

static const mla_cfg CFGS[] = {
    {"bf16 H 4 R 64 N 32 V 16", SK_BF16, 4, 32, 16, 16, 64, 0.0},
    {"fp32 H 10 R 32 N 16 V 24 scale 0.3", SK_FP32, 10, 16, 16, 24, 32, 0.3},
    {"fp16 H 3 R 48 N 24 V 32 P 32", SK_FP16, 3, 24, 32, 32, 48, 0.0},
};

static sk_team *teams[4];
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

static void fill(void *data, sk_dtype dt, size_t n, float amp) {
  for (size_t i = 0; i < n; i++) {
    float v = ((float)((double)(next() >> 11) / (double)(1ull << 53)) * 2.0f - 1.0f) * amp;
    if (dt == SK_FP32) ((float *)data)[i] = v;
    else ((uint16_t *)data)[i] = dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
  }
}

static int64_t row_d(const mla_cfg *c) { return c->rank + c->rope; }

/* One layer per sequence: cache lc<s> [S, 1, R + P]; per token new<s>
 * [T, 1, R + P], qn<s> [T, H, N], qp<s> [T, H, P], pos<s> int32 [T]; the
 * weight a constant shared by the sequences; output o<s>. */
static sk_graph *layer_graph(const mla_cfg *c, int n_seqs, const void *weight) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_set_max_tokens(g, MAXT));
  sk_value w;
  CHECK_OK(sk_graph_add_constant(g, "kv_b", c->dt, 2, (int64_t[]){c->h * (c->nope + c->v), c->rank}, weight,
                                 SK_CONSTANT_COPY, &w));
  for (int s = 0; s < n_seqs; s++) {
    char n[5][16];
    const char *base[5] = {"lc", "new", "qn", "qp", "pos"};
    for (int i = 0; i < 5; i++) snprintf(n[i], sizeof n[i], "%s%d", base[i], s);
    sk_value lc = input(g, n[0], c->dt, 3, (int64_t[]){S, 1, row_d(c)});
    sk_value nw = input(g, n[1], c->dt, 3, (int64_t[]){SK_DIM_DYNAMIC, 1, row_d(c)});
    sk_value qn = input(g, n[2], c->dt, 3, (int64_t[]){SK_DIM_DYNAMIC, c->h, c->nope});
    sk_value qp = input(g, n[3], c->dt, 3, (int64_t[]){SK_DIM_DYNAMIC, c->h, c->rope});
    sk_value pos = input(g, n[4], SK_INT32, 1, (int64_t[]){SK_DIM_DYNAMIC});
    sk_value lc2, o;
    op(g, "kv_cache_write", NULL, (sk_op_input[]){{"cache", &lc, 1}, {"new", &nw, 1}, {"positions", &pos, 1}}, 3,
       NULL, 0, &lc2, 1);
    sk_attr at[] = {SK_ATTR_FLOAT("scale", c->scale)};
    op(g, "mla_attention", NULL,
       (sk_op_input[]){{"q_nope", &qn, 1}, {"q_pe", &qp, 1}, {"latent_cache", &lc2, 1}, {"positions", &pos, 1},
                       {"kv_b_weight", &w, 1}},
       5, at, 1, &o, 1);
    char on[8];
    snprintf(on, sizeof on, "o%d", s);
    CHECK_OK(sk_graph_mark_output(g, o, on));
  }
  return g;
}

/* A sequence: its tokens' latent rows and queries, its cache and outputs. */
typedef struct seq {
  int64_t len;
  char *nw, *qn, *qp, *lc, *o;
  size_t lat_row, qn_row, qp_row, o_row; /* bytes per token */
} seq;

static void seq_init(seq *x, const mla_cfg *c, int64_t len) {
  size_t es = sk_dtype_size(c->dt);
  x->len = len;
  x->lat_row = (size_t)row_d(c) * es;
  x->qn_row = (size_t)(c->h * c->nope) * es;
  x->qp_row = (size_t)(c->h * c->rope) * es;
  x->o_row = (size_t)(c->h * c->v) * es;
  x->nw = malloc(x->lat_row * (size_t)len);
  x->qn = malloc(x->qn_row * (size_t)len);
  x->qp = malloc(x->qp_row * (size_t)len);
  x->lc = calloc(S, x->lat_row);
  x->o = calloc((size_t)len, x->o_row);
  fill(x->nw, c->dt, x->lat_row / es * (size_t)len, 2.0f);
  fill(x->qn, c->dt, x->qn_row / es * (size_t)len, 2.0f);
  fill(x->qp, c->dt, x->qp_row / es * (size_t)len, 2.0f);
}

static void seq_reset(seq *x) {
  memset(x->lc, 0, S * x->lat_row);
  memset(x->o, 0, (size_t)x->len * x->o_row);
}

static void seq_free(seq *x) { free(x->nw), free(x->qn), free(x->qp), free(x->lc), free(x->o); }

/* Runs tokens [t0, t0 + n) of each sequence through p (one run, n tokens). */
static sk_status run_chunk(sk_program *p, sk_team *team, seq *xs, int n_seqs, int64_t t0, int64_t n) {
  sk_buffer in[10], out[2];
  int32_t pos[MAXT];
  for (int64_t t = 0; t < n; t++) pos[t] = (int32_t)(t0 + t);
  for (int s = 0; s < n_seqs; s++) {
    seq *x = &xs[s];
    in[5 * s + 0] = (sk_buffer){NULL, x->lc, S * x->lat_row};
    in[5 * s + 1] = (sk_buffer){NULL, x->nw + (size_t)t0 * x->lat_row, (size_t)n * x->lat_row};
    in[5 * s + 2] = (sk_buffer){NULL, x->qn + (size_t)t0 * x->qn_row, (size_t)n * x->qn_row};
    in[5 * s + 3] = (sk_buffer){NULL, x->qp + (size_t)t0 * x->qp_row, (size_t)n * x->qp_row};
    in[5 * s + 4] = (sk_buffer){NULL, pos, (size_t)n * sizeof(int32_t)};
    out[s] = (sk_buffer){NULL, x->o + (size_t)t0 * x->o_row, (size_t)n * x->o_row};
  }
  return sk_program_run_by_index(p, team, in, (size_t)(5 * n_seqs), out, (size_t)n_seqs);
}

/* Runs whole sequences: mode 0 one pass, 1 random chunks, 2 token by token. */
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
  return memcmp(a->o, b->o, (size_t)a->len * a->o_row) == 0 && memcmp(a->lc, b->lc, S * a->lat_row) == 0;
}

static void copy_inputs(seq *dst, const seq *src) {
  memcpy(dst->nw, src->nw, (size_t)src->len * src->lat_row);
  memcpy(dst->qn, src->qn, (size_t)src->len * src->qn_row);
  memcpy(dst->qp, src->qp, (size_t)src->len * src->qp_row);
}

static void test_invariance_to_chunking_batch_executor_and_team(void) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (size_t ci = 0; ci < sizeof CFGS / sizeof CFGS[0]; ci++) {
    const mla_cfg *c = &CFGS[ci];
    const size_t wn = (size_t)(c->h * (c->nope + c->v) * c->rank);
    void *weight = malloc(wn * sk_dtype_size(c->dt));
    fill(weight, c->dt, wn, 0.3f);
    sk_graph *one = layer_graph(c, 1, weight), *two = layer_graph(c, 2, weight);
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
    for (int trial = 0; trial < 3 && solo[0] && solo[1] && solo[2] && batch && oracle; trial++) {
      int64_t len = trial == 0 ? S : 1 + below(S);
      seq want, got, pair[2];
      seq_init(&want, c, len);
      seq_init(&got, c, len);
      run_sequences(oracle, teams[1], &want, 1, 0); /* one pass through the references */
      bool nonzero = false;
      for (size_t i = 0; i < (size_t)len * want.o_row && !nonzero; i++) nonzero = want.o[i] != 0;
      CHECK_MSG(nonzero, "%s: the outputs are all zero", c->what);
      copy_inputs(&got, &want);
      for (int mode = 0; mode < 3; mode++)
        for (int e = 0; e < 3; e++) {
          run_sequences(solo[e], teams[e + 1], &got, 1, mode);
          if (!same_seq(&got, &want)) mismatches++;
          CHECK_MSG(same_seq(&got, &want),
                    "%s: length %lld, mode %d, executor %d on %d cores differs from one pass of the references",
                    c->what, (long long)len, mode, (int)executors[e], e + 1);
        }
      /* the same sequence beside another one in every run (its own cache) */
      seq_init(&pair[1], c, len);
      pair[0] = got;
      for (int mode = 0; mode < 3; mode++) {
        run_sequences(batch, teams[2], pair, 2, mode);
        CHECK_MSG(same_seq(&pair[0], &want), "%s: length %lld, mode %d: a second sequence in the batch changed the first",
                  c->what, (long long)len, mode);
      }
      seq_free(&pair[1]);
      seq_free(&want);
      seq_free(&got);
    }
    printf("  %-36s %s\n", c->what, mismatches ? "MISMATCH" : "one pass = chunks = token by token, any batch");
    for (int e = 0; e < 3; e++) sk_program_destroy(solo[e]);
    sk_program_destroy(batch);
    sk_program_destroy(oracle);
    sk_graph_destroy(one);
    sk_graph_destroy(two);
    free(weight);
  }
}

/* A position past the cache fails the run on every executor, naming it. */
static void test_a_position_past_the_cache_fails_the_run(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value qn = input(g, "qn", SK_FP32, 3, (int64_t[]){2, 2, 16}), qp = input(g, "qp", SK_FP32, 3, (int64_t[]){2, 2, 16});
  sk_value lc = input(g, "lc", SK_FP32, 3, (int64_t[]){8, 1, 48}), w = input(g, "w", SK_FP32, 2, (int64_t[]){64, 32});
  sk_value pos = input(g, "pos", SK_INT64, 1, (int64_t[]){2}), o;
  op(g, "mla_attention", "mla",
     (sk_op_input[]){{"q_nope", &qn, 1}, {"q_pe", &qp, 1}, {"latent_cache", &lc, 1}, {"positions", &pos, 1},
                     {"kv_b_weight", &w, 1}},
     5, NULL, 0, &o, 1);
  CHECK_OK(sk_graph_mark_output(g, o, "o"));
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  static float qd[64], lcd[8 * 48], wd[64 * 32], od[64];
  const int64_t bad[2][2] = {{3, 8}, {-1, 0}};
  const char *frag[2] = {"positions[1] = 8", "positions[0] = -1"};
  for (int e = 0; e < 4; e++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[2], .executor = executors[e]};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    for (int b = 0; b < 2 && p; b++) {
      sk_buffer in[5] = {{"qn", qd, sizeof qd}, {"qp", qd, sizeof qd}, {"lc", lcd, sizeof lcd}, {"w", wd, sizeof wd},
                         {"pos", (void *)bad[b], sizeof bad[b]}};
      sk_buffer out[1] = {{"o", od, sizeof od}};
      CHECK_FAILS(sk_program_run(p, teams[2], in, 5, out, 1), SK_STATUS_INVALID_ARGUMENT, "mla (mla_attention)",
                  frag[b], "[0, 8)");
      in[4].data = (void *)(int64_t[]){7, 0}; /* the same program runs on afterwards */
      CHECK_OK(sk_program_run(p, teams[2], in, 5, out, 1));
    }
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

/* Adds mla_attention on tensors of the given shapes; the caller checks the status. */
static sk_status add_mla(sk_graph *g, const int64_t *qn, const int64_t *qp, int cache_rank, const int64_t *lc,
                         const int64_t *w, int64_t t_pos, double scale) {
  static int k;
  char name[5][16];
  for (int i = 0; i < 5; i++) snprintf(name[i], sizeof name[i], "x%d_%d", k, i);
  k++;
  sk_value a = input(g, name[0], SK_BF16, 3, qn), b = input(g, name[1], SK_BF16, 3, qp);
  sk_value c = input(g, name[2], SK_BF16, cache_rank, lc), d = input(g, name[3], SK_BF16, 2, w);
  sk_value pos = input(g, name[4], SK_INT32, 1, (int64_t[]){t_pos}), o;
  sk_attr at[] = {SK_ATTR_FLOAT("scale", scale)};
  sk_op_input in[] = {{"q_nope", &a, 1}, {"q_pe", &b, 1}, {"latent_cache", &c, 1}, {"positions", &pos, 1},
                      {"kv_b_weight", &d, 1}};
  sk_op_desc desc = {.op = "mla_attention", .inputs = in, .n_inputs = 5, .attrs = at, .n_attrs = 1};
  return sk_graph_add_op(g, &desc, &o, 1, NULL);
}

static void test_shapes_build_refuses(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  const int64_t qn[3] = {2, 4, 32}, qp[3] = {2, 4, 16}, lc[3] = {9, 1, 80}, w[2] = {192, 64};
  CHECK_OK(add_mla(g, qn, qp, 3, lc, w, 2, 0.0));
  CHECK_OK(add_mla(g, qn, qp, 2, (int64_t[]){9, 80}, w, 2, 0.0));
  CHECK_FAILS(add_mla(g, qn, (int64_t[]){2, 4, 8}, 3, (int64_t[]){9, 1, 72}, w, 2, 0.0), SK_STATUS_INVALID_SHAPE,
              "input q_pe", "multiple of 16");
  CHECK_FAILS(add_mla(g, qn, (int64_t[]){2, 3, 16}, 3, lc, w, 2, 0.0), SK_STATUS_INVALID_SHAPE, "input q_pe",
              "[2, 4, P]");
  CHECK_FAILS(add_mla(g, qn, qp, 3, (int64_t[]){9, 1, 56}, (int64_t[]){192, 40}, 2, 0.0), SK_STATUS_INVALID_SHAPE,
              "kv_lora_rank R = 40");
  CHECK_FAILS(add_mla(g, qn, qp, 3, lc, (int64_t[]){190, 64}, 2, 0.0), SK_STATUS_INVALID_SHAPE, "input kv_b_weight",
              "[4 * (32 + V), 64]");
  CHECK_FAILS(add_mla(g, qn, qp, 3, lc, (int64_t[]){128, 64}, 2, 0.0), SK_STATUS_INVALID_SHAPE, "input kv_b_weight",
              "1 <= V");
  CHECK_FAILS(add_mla(g, qn, qp, 3, (int64_t[]){9, 1, 64}, w, 2, 0.0), SK_STATUS_INVALID_SHAPE, "input latent_cache",
              "[S, 1, 80]");
  CHECK_FAILS(add_mla(g, qn, qp, 3, (int64_t[]){9, 2, 80}, w, 2, 0.0), SK_STATUS_INVALID_SHAPE, "input latent_cache",
              "got [9, 2, 80]");
  CHECK_FAILS(add_mla(g, qn, qp, 3, lc, w, 3, 0.0), SK_STATUS_INVALID_SHAPE, "input positions", "[2] (q_nope's T)");
  CHECK_FAILS(add_mla(g, qn, qp, 3, lc, w, 2, 1.0 / 0.0), SK_STATUS_INVALID_ATTRIBUTE, "attribute scale", "finite");
  sk_graph_destroy(g);
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
  static const harness_case cases[] = {TEST_CASE(setup), TEST_CASE(test_shapes_build_refuses),
                                       TEST_CASE(test_a_position_past_the_cache_fails_the_run),
                                       TEST_CASE(test_invariance_to_chunking_batch_executor_and_team),
                                       TEST_CASE(teardown)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

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

#include "attention_test_util.h"
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

/* What layer_graph binds per sequence (attention_test_util.h): the cache
 * lc, then the tokens' new latent rows, qn and qp rows, then positions;
 * output o. */
static seq_layout layout_of(const mla_cfg *c) {
  return (seq_layout){.what = c->what, .dt = c->dt, .cache_rows = S, .n_caches = 1, .n_inputs = 3,
                      .cache_row = {row_d(c)}, .input_row = {row_d(c), c->h * c->nope, c->h * c->rope},
                      .out_row = c->h * c->v};
}

static void test_invariance_to_chunking_batch_executor_and_team(void) {
  for (size_t ci = 0; ci < sizeof CFGS / sizeof CFGS[0]; ci++) {
    const mla_cfg *c = &CFGS[ci];
    const seq_layout l = layout_of(c);
    const size_t wn = (size_t)(c->h * (c->nope + c->v) * c->rank);
    void *weight = malloc(wn * sk_dtype_size(c->dt));
    fill(weight, c->dt, wn, 0.3f);
    sk_graph *one = layer_graph(c, 1, weight), *two = layer_graph(c, 2, weight);
    check_invariance(&l, one, two, 3);
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

static void setup(void) { setup_teams(0x9E3779B97F4A7C15ull); }

static void teardown(void) { teardown_teams(); }

int main(void) {
  static const harness_case cases[] = {TEST_CASE(setup), TEST_CASE(test_shapes_build_refuses),
                                       TEST_CASE(test_a_position_past_the_cache_fails_the_run),
                                       TEST_CASE(test_invariance_to_chunking_batch_executor_and_team),
                                       TEST_CASE(teardown)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

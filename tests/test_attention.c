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

#include "attention_test_util.h"
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

/* What layer_graph binds per sequence (attention_test_util.h): caches
 * kc, vc, then the tokens' kn, vn and q rows, then positions; output o. */
enum { KC, VC };
enum { KN, VN, Q };
static seq_layout layout_of(const layer_cfg *c) {
  const int64_t kv = c->hkv * c->d;
  return (seq_layout){.what = c->what, .dt = c->dt, .cache_rows = S, .n_caches = 2, .n_inputs = 3,
                      .cache_row = {kv, kv}, .input_row = {kv, kv, c->hq * c->d}, .out_row = c->hq * c->d};
}

static void test_invariance_to_chunking_batch_executor_and_team(void) {
  for (size_t ci = 0; ci < sizeof CFGS / sizeof CFGS[0]; ci++) {
    const seq_layout l = layout_of(&CFGS[ci]);
    sk_graph *one = layer_graph(&CFGS[ci], 1), *two = layer_graph(&CFGS[ci], 2);
    check_invariance(&l, one, two, 4);
    sk_graph_destroy(one);
    sk_graph_destroy(two);
  }
}

/* A position outside [0, S) fails the run naming it; the caches keep their bytes. */
static void test_out_of_range_positions_fail_and_write_nothing(void) {
  const layer_cfg *c = &CFGS[0];
  const seq_layout l = layout_of(c);
  sk_graph *g = layer_graph(c, 1);
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  for (int e = 0; e < 4; e++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[2], .executor = executors[e]};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) continue;
    seq x;
    seq_init(&x, &l, 4);
    const size_t cache_bytes = seq_cache_bytes(&x, KC);
    fill(x.cache[KC], c->dt, (size_t)(S * l.cache_row[KC]), 2.0f);
    fill(x.cache[VC], c->dt, (size_t)(S * l.cache_row[VC]), 2.0f);
    char *kc0 = malloc(cache_bytes), *vc0 = malloc(cache_bytes);
    memcpy(kc0, x.cache[KC], cache_bytes), memcpy(vc0, x.cache[VC], cache_bytes);
    const int32_t bad[2][4] = {{3, 7, S, 1}, {0, -1, 2, 3}};
    const char *frag[2] = {"positions[2] = 40", "positions[1] = -1"};
    for (int b = 0; b < 2; b++) {
      CHECK_FAILS(run_tokens(p, teams[2], &x, 1, 0, 4, bad[b]), SK_STATUS_INVALID_ARGUMENT, "kv_cache_write", frag[b],
                  "[0, 40)");
      CHECK_MSG(memcmp(x.cache[KC], kc0, cache_bytes) == 0 && memcmp(x.cache[VC], vc0, cache_bytes) == 0,
                "executor %d: a failed write changed the caches", (int)executors[e]);
      /* the same program runs on afterwards */
      CHECK_OK(run_tokens(p, teams[2], &x, 1, 0, 4, (int32_t[]){0, 1, 2, 39}));
      memcpy(x.cache[KC], kc0, cache_bytes), memcpy(x.cache[VC], vc0, cache_bytes);
    }
    /* a run without the cache bound is refused like any missing input */
    sk_buffer some[5] = {{"vc0", x.cache[VC], cache_bytes}, {"kn0", x.input[KN], 4 * x.input_row[KN]},
                         {"vn0", x.input[VN], 4 * x.input_row[VN]}, {"q0", x.input[Q], 4 * x.input_row[Q]},
                         {"pos0", (void *)bad[0], sizeof bad[0]}};
    sk_buffer out[1] = {{"o0", x.o, 4 * x.o_row}};
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
      fill(qd, SK_FP32, sizeof qd / sizeof qd[0], 2.0f), fill(kd, SK_FP32, sizeof kd / sizeof kd[0], 2.0f);
      fill(vd, SK_FP32, sizeof vd / sizeof vd[0], 2.0f);
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

static void setup(void) { setup_teams(0x2545F4914F6CDD1Dull); }

static void teardown(void) { teardown_teams(); }

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

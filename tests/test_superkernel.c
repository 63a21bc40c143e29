/* Super kernels: the scope API, fused results equal to eager bitwise over
 * the option grid and team sizes, and the planner's decisions (type, core
 * sets, barriers, which waits are elided). */
#include <stdbool.h>

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "executors/jit/jit_internal.h"
#include "reference_runner.h"
#include "program/plan.h"

static sk_team *teams[3];

static void test_option_grid(void) {
  static const char *early[] = {"early-start=0", "early-start=1", "early-start=2"};
  static const char *preload[] = {"preload-code=per-func", "preload-code=max", "preload-code=none"};
  sk_graph *g = mixed_model();
  for (int t = 0; t < 3; t++)
    for (int e = 0; e < 3; e++)
      for (int pl = 0; pl < 3; pl++)
        for (int sync = 0; sync < 2; sync++)
          for (int split = 0; split < 2; split++) {
            char options[256];
            snprintf(options, sizeof options, "%s:%s:debug-sync-all=%d:split-mode=%d", early[e], preload[pl], sync,
                     split ? 4 : 1);
            CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, options, (uint64_t)(e * 7 + pl)) == 0, "%s", options);
          }
  /* dcci and core-set options change the plan, never the result. */
  static const char *more[] = {"debug-dcci-all=1", "dcci-before-kernel-start=grouped_.*:dcci-after-kernel-end=square",
                               "dcci-after-kernel-end=.*:dcci-disable-on-kernel=cast", "debug-aic-num=1",
                               "debug-aiv-num=1:debug-aic-num=2", "early-start=0:debug-aiv-num=1"};
  for (int t = 0; t < 3; t++)
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
      if (strstr(more[k], "num=2") && sk_team_num_cores(teams[t]) < 2) continue;
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, more[k], 5) == 0, "%s", more[k]);
    }
  sk_graph_destroy(g);
}

/* The plan of the first super kernel of a compiled program. */
static const sk__plan *first_plan(const sk_program *p) {
  for (size_t s = 0; s < p->n_steps; s++)
    if (p->steps[s].plan) return p->steps[s].plan;
  return NULL;
}

static size_t count_tasks(const sk__plan *plan, sk__task_kind kind) {
  size_t n = 0;
  for (size_t t = 0; t < plan->n_tasks; t++) n += plan->tasks[t].kind == kind;
  return n;
}

static sk_program *compile_with(sk_graph *g, sk_team *team, const char *options) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .default_options = options};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

/* An elementwise chain split the same way by every op: each block reads
 * only its own rows, so early start needs no wait at all; early-start=0
 * puts a vector-core barrier between every pair. */
static void test_plan_elementwise_chain(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){100000});
  CHECK_OK(sk_graph_begin_scope(g, "chain", NULL));
  sk_value y = unary(g, "square", "sq1", x);
  y = binary(g, "add", "add", y, x);
  y = unary(g, "square", "sq2", y);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_program *p = compile_with(g, teams[1], "early-start=1");
  const sk__plan *plan = p ? first_plan(p) : NULL;
  CHECK(plan != NULL);
  if (plan) {
    CHECK(plan->type == SK_SK_MIX_AIV_1_0);
    CHECK(plan->n_subs == 3);
    CHECK_MSG(count_tasks(plan, SK_TASK_WAIT) == 0, "%zu waits", count_tasks(plan, SK_TASK_WAIT));
    CHECK(count_tasks(plan, SK_TASK_BARRIER) == 0);
    CHECK(count_tasks(plan, SK_TASK_RUN) == 3 * (size_t)plan->subs[0].n_blocks);
    char *text = sk__plan_format(plan, p);
    CHECK(text && strstr(text, "MIX_AIV_1_0") && strstr(text, "run sq1 block 0"));
    free(text);
  }
  sk_program_destroy(p);
  p = compile_with(g, teams[1], "early-start=0");
  plan = p ? first_plan(p) : NULL;
  if (plan) {
    CHECK(count_tasks(plan, SK_TASK_WAIT) == 0);
    CHECK_MSG(count_tasks(plan, SK_TASK_BARRIER) == 2 * 2, "2 barrier points x 2 cores");
    CHECK(plan->n_barriers == 2 && plan->barrier_sets[0].n_cores == 2);
  }
  sk_program_destroy(p);
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_INTERP, "early-start=1", 3) == 0);
  sk_graph_destroy(g);
}

/* A consumer tiled differently from its producer needs waits, only for the
 * blocks on other cores; cube-only scopes are MIX_AIC_1_0. */
static void test_plan_waits_and_types(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){256, 64}), w = input(g, "w", SK_FP32, 2, (int64_t[]){64, 64});
  CHECK_OK(sk_graph_begin_scope(g, "cube", NULL));
  sk_op_input in1[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_value h, y;
  op(g, "grouped_matmul", "mm1", in1, 2, NULL, 0, &h, 1);
  sk_op_input in2[] = {{"x", &h, 1}, {"weight", &w, 1}};
  op(g, "grouped_matmul", "mm2", in2, 2, NULL, 0, &y, 1);
  CHECK_OK(sk_graph_end_scope(g));
  sk_value z = unary(g, "square", "after", y);
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  sk_program *p = compile_with(g, teams[1], NULL);
  const sk__plan *plan = p ? first_plan(p) : NULL;
  if (plan) {
    CHECK(plan->type == SK_SK_MIX_AIC_1_0);
    /* Same row tiling on the same cores: no waits. */
    CHECK_MSG(count_tasks(plan, SK_TASK_WAIT) == 0, "%zu waits", count_tasks(plan, SK_TASK_WAIT));
  }
  sk_program_destroy(p);
  /* One cube core for mm1 and mm2 alike: still all on one core, no waits;
   * aic above the team size is an error naming the option. */
  p = compile_with(g, teams[1], "debug-aic-num=1");
  plan = p ? first_plan(p) : NULL;
  if (plan) {
    CHECK(plan->aic_cores == 1 && plan->subs[0].n_cores == 1);
    CHECK(plan->core_begin[2] == plan->core_begin[1]); /* core 1 has nothing to do */
  }
  sk_program_destroy(p);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .default_options = "debug-aic-num=3"};
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_ARGUMENT, "debug-aic-num", "'3'", "team size 2");
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_INTERP, NULL, 1) == 0);
  CHECK(rr_fused_vs_eager(g, teams[2], SK_EXECUTOR_INTERP, "debug-aic-num=2", 1) == 0);
  sk_graph_destroy(g);

  /* Mixed: an elementwise op over the matmul output, tiled by elements, on
   * a 3-core team reads rows of other cores' tiles: waits appear. */
  CHECK_OK(sk_graph_create(&g));
  x = input(g, "x", SK_FP32, 2, (int64_t[]){300, 64});
  w = input(g, "w", SK_FP32, 2, (int64_t[]){64, 200});
  CHECK_OK(sk_graph_begin_scope(g, "mix", "early-start=1"));
  sk_op_input in3[] = {{"x", &x, 1}, {"weight", &w, 1}};
  op(g, "grouped_matmul", "mm", in3, 2, NULL, 0, &h, 1);
  y = unary(g, "square", "sq", h);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  p = compile_with(g, teams[2], NULL);
  plan = p ? first_plan(p) : NULL;
  if (plan) {
    CHECK(plan->type == SK_SK_MIX_AIC_1_1 || plan->type == SK_SK_MIX_AIC_1_2);
    CHECK(count_tasks(plan, SK_TASK_WAIT) > 0);
    CHECK(plan->n_flags > 0);
  }
  sk_program_destroy(p);
  CHECK(rr_fused_vs_eager(g, teams[2], SK_EXECUTOR_INTERP, NULL, 2) == 0);
  sk_graph_destroy(g);
}

static void test_scope_errors(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){8});
  CHECK_FAILS(sk_graph_end_scope(g), SK_STATUS_INVALID_STATE, "no scope is open");
  CHECK_FAILS(sk_graph_begin_scope(g, "bad", "early-start=3"), SK_STATUS_INVALID_ARGUMENT, "scope 'bad'", "early-start",
              "0, 1, 2");
  CHECK_OK(sk_graph_begin_scope(g, "a", NULL));
  CHECK_FAILS(sk_graph_begin_scope(g, "b", NULL), SK_STATUS_INVALID_STATE, "'b'", "'a' is still open");
  sk_value y = unary(g, "square", "sq", x);
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, NULL, &p), SK_STATUS_INVALID_STATE, "scope 'a' is still open");
  CHECK_OK(sk_graph_end_scope(g));
  /* A scope's name may be reopened, but only with the options it was declared with (or none). */
  CHECK_FAILS(sk_graph_begin_scope(g, "a", "early-start=0"), SK_STATUS_INVALID_ARGUMENT, "'a' is reopened",
              "\"early-start=0\"", "declared with none");
  CHECK_OK(sk_graph_begin_scope(g, "empty", NULL));
  CHECK_OK(sk_graph_end_scope(g)); /* a warning only */
  CHECK_FAILS(sk_graph_set_stream(g, 2), SK_STATUS_INVALID_ARGUMENT, "stream 2");
  CHECK_OK(sk_graph_set_stream(g, 1));
  sk_event ev;
  CHECK_FAILS(sk_graph_record_event(g, &ev), SK_STATUS_INVALID_STATE, "stream 1 has no node");
  CHECK_FAILS(sk_graph_wait_event(g, 5), SK_STATUS_NOT_FOUND, "event 5");
  CHECK_OK(sk_compile(g, NULL, &p));
  /* A program planned for 1 core refuses a 2-core team. */
  float xd[8] = {0}, yd[8];
  sk_buffer ins[] = {{"x", xd, sizeof xd}}, outs[] = {{"y", yd, sizeof yd}};
  CHECK_FAILS(sk_program_run(p, teams[1], ins, 1, outs, 1), SK_STATUS_INVALID_ARGUMENT, "team of 1 cores", "run on 2");
  CHECK_OK(sk_program_run(p, NULL, ins, 1, outs, 1));
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* Two chains on two streams joined by events, fused with stream-fusion=1:
 * disjoint cores, equal to eager. */
static void test_stream_fusion(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value a = input(g, "a", SK_FP32, 1, (int64_t[]){50000}), b = input(g, "b", SK_FP32, 1, (int64_t[]){50000});
  CHECK_OK(sk_graph_begin_scope(g, "streams", "stream-fusion=1"));
  sk_value a1 = unary(g, "square", "a_sq", a);
  sk_event ev;
  CHECK_OK(sk_graph_record_event(g, &ev));
  CHECK_OK(sk_graph_set_stream(g, 1));
  sk_value b1 = unary(g, "square", "b_sq", b);
  CHECK_OK(sk_graph_wait_event(g, ev));
  sk_value b2 = binary(g, "add", "b_add", b1, a1); /* reads stream 0's output after the event */
  CHECK_OK(sk_graph_set_stream(g, 0));
  sk_value a2 = unary(g, "square", "a_sq2", a1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, a2, "a2"));
  CHECK_OK(sk_graph_mark_output(g, b2, "b2"));
  sk_program *p = compile_with(g, teams[1], NULL);
  const sk__plan *plan = p ? first_plan(p) : NULL;
  if (plan) {
    CHECK(plan->stream_fused == 1);
    CHECK(plan->subs[0].core_first == 0 && plan->subs[0].n_cores == 1);
    CHECK(plan->subs[1].core_first == 1 && plan->subs[1].n_cores == 1);
    CHECK(count_tasks(plan, SK_TASK_WAIT) >= 1); /* b_add waits for a_sq on the other core */
  }
  sk_program_destroy(p);
  for (int t = 0; t < 3; t++) CHECK(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, NULL, 4) == 0);
  sk_graph_destroy(g);
}

/* Claimed sub-kernels keep early start: mm2's row tiles (constant weights,
 * claimed) each wait for the one or two mm1 tiles of their rows, whichever
 * core ran them, never for all of mm1; a consumer reading every block of a
 * claimed producer (concat, one block) waits for its whole flag instead.
 * Bitwise equal to eager for the interpreter and the JIT, with barriers
 * (early-start=0), debug-sync-all and profiling too. */
static void test_claimed_blocks_wait_for_their_rows(void) {
  static float w1[64 * 128], w2[128 * 64];
  uint64_t seed = 3;
  rr_fill_dtype_range(w1, SK_FP32, 64 * 128, &seed);
  rr_fill_dtype_range(w2, SK_FP32, 128 * 64, &seed);
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){512, 64}), c1, c2, h, y, z;
  CHECK_OK(sk_graph_add_constant(g, "w1", SK_FP32, 2, (int64_t[]){64, 128}, w1, SK_CONSTANT_COPY, &c1));
  CHECK_OK(sk_graph_add_constant(g, "w2", SK_FP32, 2, (int64_t[]){128, 64}, w2, SK_CONSTANT_COPY, &c2));
  CHECK_OK(sk_graph_begin_scope(g, "claimed", NULL));
  sk_op_input in1[] = {{"x", &x, 1}, {"weight", &c1, 1}};
  op(g, "grouped_matmul", "mm1", in1, 2, NULL, 0, &h, 1);
  sk_op_input in2[] = {{"x", &h, 1}, {"weight", &c2, 1}};
  op(g, "grouped_matmul", "mm2", in2, 2, NULL, 0, &y, 1);
  sk_value parts[] = {y, x};
  sk_op_input in3[] = {{"x", parts, 2}};
  op(g, "concat", "cat", in3, 1, (sk_attr[]){SK_ATTR_INT("dim", 1)}, 1, &z, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  sk_program *p = compile_with(g, teams[1], NULL);
  const sk__plan *plan = p ? first_plan(p) : NULL;
  if (plan) {
    const sk__subkernel *mm1 = &plan->subs[0], *mm2 = &plan->subs[1];
    CHECK_MSG(plan->n_subs == 3 && mm1->claimed && mm2->claimed && mm1->n_blocks >= 8 && mm2->n_blocks >= 8,
              "%zu subs, claimed %d %d, %lld / %lld blocks", plan->n_subs, mm1->claimed, mm2->claimed,
              (long long)mm1->n_blocks, (long long)mm2->n_blocks);
    /* The CLAIM task of mm1 carries no whole flag (nobody waits for all of
     * it); mm2's carries one, for cat. */
    int32_t whole1 = -2, whole2 = -2;
    for (size_t t = 0; t < plan->n_tasks; t++)
      if (plan->tasks[t].kind == SK_TASK_CLAIM) *(plan->tasks[t].sub == 0 ? &whole1 : &whole2) = plan->tasks[t].flag;
    CHECK_MSG(whole1 == -1 && whole2 >= 0, "whole flags %d %d", whole1, whole2);
    for (int64_t b = 0; b < mm2->n_blocks; b++) {
      int64_t n = mm2->claim_waits[b + 1] - mm2->claim_waits[b];
      CHECK_MSG(n >= 1 && n <= 2, "mm2 block %lld waits for %lld flags", (long long)b, (long long)n);
      for (int64_t d = mm2->claim_waits[b]; d < mm2->claim_waits[b + 1]; d++) {
        bool of_mm1 = false;
        for (int64_t a = 0; a < mm1->n_blocks; a++) of_mm1 |= mm1->claim_flags[a] == plan->deps[d];
        CHECK_MSG(of_mm1, "mm2 block %lld waits for flag %d, not an mm1 block's", (long long)b, plan->deps[d]);
      }
    }
    CHECK(mm1->claim_waits[0] == mm1->claim_waits[mm1->n_blocks]); /* x comes from outside: no waits */
    /* sk plan lists the runs of claimed blocks; the JIT writes the same
     * lists as tables and waits on them. */
    char *text = sk__plan_format(plan, p), *src = NULL;
    CHECK_MSG(text && strstr(text, "blocks claimed on cores 0-1") && strstr(text, "claimed block") &&
                  strstr(text, ": wait for flag") && strstr(text, "claim blocks of mm2 until none is left, signal flag"),
              "%s", text ? text : "(no text)");
    CHECK_OK(sk__jit_codegen(plan, p, &src));
    CHECK_MSG(src && strstr(src, "static const int32_t claim0_flag[") && strstr(src, "static const int32_t claim1_deps[") &&
                  strstr(src, "sk_wait(env, claim1_deps[d])") && strstr(src, "sk_signal(env, claim0_flag[b])"),
              "the JIT source lacks the claim tables");
    free(text);
    free(src);
  }
  sk_program_destroy(p);
  static const char *options[] = {NULL, "early-start=0", "debug-sync-all=1", "profiling=1"};
  for (size_t o = 0; o < sizeof options / sizeof options[0]; o++)
    for (int t = 1; t < 3; t++) {
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, options[o], 11 + o) == 0, "interp, %s",
                options[o] ? options[o] : "defaults");
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_JIT, options[o], 17 + o) == 0, "jit, %s",
                options[o] ? options[o] : "defaults");
    }
  sk_graph_destroy(g);
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  static const harness_case cases[] = {
      TEST_CASE(test_scope_errors),         TEST_CASE(test_plan_elementwise_chain), TEST_CASE(test_plan_waits_and_types),
      TEST_CASE(test_stream_fusion),        TEST_CASE(test_option_grid),            TEST_CASE(test_claimed_blocks_wait_for_their_rows),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

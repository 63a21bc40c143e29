/* A whole MoE layer in one scope (issue 16), at small sizes, built from the
 * routing ops: the gate (linear), softmax or grouped sigmoid gating,
 * moe_init_routing, two grouped matmuls over the experts with the run-time
 * group list init_routing counts, swiglu between them, an optional shared
 * expert, and moe_finalize_routing with the residual:
 *
 *   logits = linear(cast(x, fp32), gate)                         [T, E]
 *   w, idx = moe_gating_topk_softmax(logits, k)   | moe_gating_topk(sigmoid, groups)
 *   ex, map, ends = moe_init_routing(x, idx, expert_num = E)    [T*k, H]
 *   h = swiglu(grouped_matmul(ex, w_up [E, H, 2I], group_list = ends))
 *   d = grouped_matmul(h, w_down [E, I, H], group_list = ends)  [T*k, H]
 *   s = shared expert of x (grouped_matmul, swiglu, grouped_matmul) or none
 *   y = moe_finalize_routing(d, map, skip1 = x, skip2 = s, scales = w, idx)
 *
 * Every fused executor, team size and a few option strings must give the
 * bits of eager, and the first fused run the bits of every op's reference
 * (rr_fused_vs_eager). Weights are graph constants (packed at compile).
 * The experts' matmuls are claimed sub-kernels (plan.h): their cores take
 * blocks as they go, and the plan's shape says so. */
#include <stdlib.h>

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "runtime/profile.h"
#include "reference_runner.h"
#include "program/plan.h"

typedef struct layer_config {
  const char *name;
  int64_t t, h, e, k, inter;
  sk_dtype dtype;
  int sigmoid_groups; /* 0: softmax gating (Qwen3-MoE); G: sigmoid, G groups, top half kept (DeepSeek-V3) */
  int shared;         /* a shared expert of the same width */
} layer_config;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(rng >> 11) / (double)(1ull << 53);
}

/* A constant of small random values (|v| <= scale) in dtype. */
static sk_value weight(sk_graph *g, const char *name, sk_dtype dt, int rank, const int64_t *shape, double scale) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  float *f = malloc((size_t)n * sizeof *f);
  void *data = malloc((size_t)n * sk_dtype_size(dt) + 1);
  for (int64_t i = 0; i < n; i++) f[i] = (float)uniform(-scale, scale);
  for (int64_t i = 0; i < n; i++) {
    if (dt == SK_FP32) ((float *)data)[i] = f[i];
    else if (dt == SK_FP16) ((uint16_t *)data)[i] = sk_fp32_to_fp16(f[i]);
    else ((uint16_t *)data)[i] = sk_fp32_to_bf16(f[i]);
  }
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_constant(g, name, dt, rank, shape, data, SK_CONSTANT_COPY, &v));
  free(f);
  free(data);
  return v;
}

/* grouped_matmul over the experts (run-time cumulative ends) into one tensor. */
static sk_value experts_matmul(sk_graph *g, const char *name, sk_value x, sk_value w, sk_value ends) {
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"group_list", &ends, 1}};
  sk_attr at[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3)};
  sk_value y;
  return op(g, "grouped_matmul", name, in, 3, at, 2, &y, 1);
}

static sk_value dense_matmul(sk_graph *g, const char *name, sk_value x, sk_value w) {
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_value y;
  return op(g, "grouped_matmul", name, in, 2, NULL, 0, &y, 1);
}

static sk_graph *build_layer(const layer_config *c) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  const int64_t t = c->t, h = c->h, e = c->e, in2 = 2 * c->inter;
  sk_value x = input(g, "x", c->dtype, 2, (int64_t[]){t, h});
  sk_value gate = weight(g, "gate", SK_FP32, 2, (int64_t[]){e, h}, 0.5);
  sk_value w_up = weight(g, "w_up", c->dtype, 3, (int64_t[]){e, h, in2}, 0.3);
  sk_value w_down = weight(g, "w_down", c->dtype, 3, (int64_t[]){e, c->inter, h}, 0.3);
  sk_value bias = c->sigmoid_groups ? weight(g, "score_bias", SK_FP32, 1, (int64_t[]){e}, 0.1) : SK_VALUE_NONE;
  sk_value s_up = c->shared ? weight(g, "shared_up", c->dtype, 2, (int64_t[]){h, in2}, 0.3) : SK_VALUE_NONE;
  sk_value s_down = c->shared ? weight(g, "shared_down", c->dtype, 2, (int64_t[]){c->inter, h}, 0.3) : SK_VALUE_NONE;
  CHECK_OK(sk_graph_begin_scope(g, "moe", NULL));
  sk_op_input cin[] = {{"x", &x, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value xf;
  op(g, "cast", "x_fp32", cin, 1, to32, 1, &xf, 1);
  sk_op_input lin[] = {{"x", &xf, 1}, {"weight", &gate, 1}};
  sk_value logits;
  op(g, "linear", "gate", lin, 2, NULL, 0, &logits, 1);
  sk_value gating[4];
  if (c->sigmoid_groups) {
    sk_op_input gin[] = {{"x", &logits, 1}, {"bias", &bias, 1}};
    sk_attr at[] = {SK_ATTR_INT("k", c->k), SK_ATTR_INT("k_group", c->sigmoid_groups / 2),
                    SK_ATTR_INT("group_count", c->sigmoid_groups), SK_ATTR_INT("group_select_mode", 1),
                    SK_ATTR_INT("norm_type", 1), SK_ATTR_INT("renorm", 1), SK_ATTR_FLOAT("routed_scaling_factor", 2.5)};
    op(g, "moe_gating_topk", "gating", gin, 2, at, 7, gating, 3);
  } else {
    sk_op_input gin[] = {{"x", &logits, 1}};
    sk_attr at[] = {SK_ATTR_INT("k", c->k), SK_ATTR_INT("renorm", 1)};
    op(g, "moe_gating_topk_softmax", "gating", gin, 1, at, 2, gating, 4);
  }
  sk_value weights = gating[0], idx = gating[1], routing[4];
  sk_op_input rin[] = {{"x", &x, 1}, {"expert_idx", &idx, 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", e)};
  op(g, "moe_init_routing", "dispatch", rin, 2, rat, 1, routing, 4);
  sk_value up = experts_matmul(g, "experts_up", routing[0], w_up, routing[2]);
  sk_value act = unary(g, "swiglu", "experts_act", up);
  sk_value down = experts_matmul(g, "experts_down", act, w_down, routing[2]);
  sk_value shared = SK_VALUE_NONE;
  if (c->shared) shared = dense_matmul(g, "shared_down", unary(g, "swiglu", "shared_act", dense_matmul(g, "shared_up", x, s_up)), s_down);
  sk_op_input fin[6] = {{"expanded_permuted_rows", &down, 1}, {"expanded_src_to_dst_row", &routing[1], 1},
                        {"skip1", &x, 1}, {"scales", &weights, 1}, {"export_for_source_row", &idx, 1}};
  size_t n_fin = 5;
  if (c->shared) fin[n_fin++] = (sk_op_input){"skip2", &shared, 1};
  sk_attr fat[] = {SK_ATTR_INT("drop_pad_mode", 2)};
  sk_value y;
  op(g, "moe_finalize_routing", "combine", fin, n_fin, fat, 1, &y, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, routing[2], "expert_ends"));
  return g;
}

static const layer_config CONFIGS[] = {
    {"qwen-like bf16 T=1", 1, 64, 16, 4, 24, SK_BF16, 0, 0},
    {"qwen-like bf16 T=16", 16, 64, 16, 4, 24, SK_BF16, 0, 0},
    {"deepseek-like fp16 T=5, shared", 5, 48, 32, 6, 16, SK_FP16, 8, 1},
    {"deepseek-like bf16 T=64, shared", 64, 32, 32, 8, 40, SK_BF16, 4, 1},
};

static sk_team *teams[3];

static void test_fused_equals_eager(void) {
  static const char *const options[] = {NULL, "early-start=0", "preload-code=none:split-mode=1"};
  for (size_t i = 0; i < sizeof CONFIGS / sizeof CONFIGS[0]; i++) {
    sk_graph *g = build_layer(&CONFIGS[i]);
    for (int t = 0; t < 3; t++)
      for (int o = 0; o < 3; o++) {
        int bad = rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, options[o], 21 + i);
        CHECK_MSG(bad == 0, "%s, %d cores, interp, options %s: %d mismatches", CONFIGS[i].name, t + 1,
                  options[o] ? options[o] : "(default)", bad);
      }
    for (int t = 0; t < 3; t += 2) {
      int bad = rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_JIT, NULL, 31 + i);
      CHECK_MSG(bad == 0, "%s, %d cores, jit: %d mismatches", CONFIGS[i].name, t + 1, bad);
    }
    sk_graph_destroy(g);
  }
}

/* The expert ends are cumulative and end at T * k: every pair is routed
 * (all ids are valid experts), whatever the gate chose. */
static void test_every_pair_is_routed(void) {
  const layer_config *c = &CONFIGS[2];
  sk_graph *g = build_layer(c);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  rr_buffers b;
  CHECK(rr_alloc(p, &b, -1, 1, 5));
  CHECK_OK(sk_program_run(p, teams[1], b.inputs, b.n_inputs, b.outputs, b.n_outputs));
  const int64_t *ends = NULL;
  for (size_t o = 0; o < b.n_outputs; o++)
    if (strcmp(b.outputs[o].name, "expert_ends") == 0) ends = b.outputs[o].data;
  CHECK(ends != NULL);
  for (int64_t j = 0; ends && j < c->e; j++) CHECK(j == 0 ? ends[0] >= 0 : ends[j] >= ends[j - 1]);
  if (ends) CHECK_MSG(ends[c->e - 1] == c->t * c->k, "last end %lld, want %lld", (long long)ends[c->e - 1],
                      (long long)(c->t * c->k));
  rr_free(&b);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

static const sk__plan *first_plan(const sk_program *p) {
  for (size_t s = 0; p && s < p->n_steps; s++)
    if (p->steps[s].plan) return p->steps[s].plan;
  return NULL;
}

static int sub_named(const sk__plan *plan, const sk_program *p, const char *name) {
  for (size_t i = 0; plan && i < plan->n_subs; i++)
    if (strcmp(p->nodes[plan->subs[i].node].name, name) == 0) return (int)i;
  return -1;
}

/* What the plan of a claimed sub-kernel looks like: on each of its cores
 * one CLAIM and no RUN; its consumer (swiglu) waits for the CLAIM's flag
 * unless a barrier (early-start=0) orders them; one core, or a dcci flush
 * around the op, deals the blocks out instead. profiling=1 records each
 * claimed block once per run, on whichever core took it. */
static void test_expert_matmuls_are_claimed(void) {
  static const struct {
    const char *options;
    int cores;
    bool claimed, waits;
  } cases[] = {{NULL, 2, true, true},
               {NULL, 3, true, true},
               {"early-start=0", 2, true, false},
               {"dcci-before-kernel-start=grouped_matmul", 2, false, true},
               {NULL, 1, false, false}};
  sk_graph *g = build_layer(&CONFIGS[1]);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[cases[c].cores - 1],
                             .executor = SK_EXECUTOR_INTERP, .default_options = cases[c].options};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    const sk__plan *plan = first_plan(p);
    int up = sub_named(plan, p, "experts_up"), act = sub_named(plan, p, "experts_act");
    CHECK(plan && up >= 0 && act >= 0);
    if (!plan || up < 0 || act < 0) {
      sk_program_destroy(p);
      continue;
    }
    CHECK_MSG(plan->subs[up].claimed == cases[c].claimed, "case %zu: experts_up claimed %d", c, plan->subs[up].claimed);
    int32_t flag = -1;
    for (int core = 0; core < plan->n_cores; core++) {
      int claims = 0, runs = 0;
      for (size_t t = plan->core_begin[core]; t < plan->core_begin[core + 1]; t++) {
        const sk__task *task = &plan->tasks[t];
        if (task->sub != up) continue;
        claims += task->kind == SK_TASK_CLAIM;
        runs += task->kind == SK_TASK_RUN;
        if (task->kind == SK_TASK_CLAIM) flag = task->flag;
      }
      if (cases[c].claimed)
        CHECK_MSG(claims == 1 && runs == 0, "case %zu, core %d: %d CLAIM, %d RUN tasks", c, core, claims, runs);
      else
        CHECK_MSG(claims == 0, "case %zu, core %d: %d CLAIM tasks, not claimed", c, core, claims);
    }
    if (cases[c].claimed) {
      bool waited = false;
      for (size_t t = 0; t < plan->n_tasks; t++) {
        const sk__task *task = &plan->tasks[t];
        for (int64_t d = 0; task->kind == SK_TASK_WAIT && task->sub == act && d < task->count; d++)
          waited |= flag >= 0 && plan->deps[task->block + d] == flag;
      }
      CHECK_MSG(waited == cases[c].waits && (flag >= 0) == cases[c].waits, "case %zu: flag %d, swiglu waits for it: %d",
                c, (int)flag, waited);
    }
    sk_program_destroy(p);
  }
  /* profiling=1: every claimed block once per run. */
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP,
                           .default_options = "profiling=1"};
  sk_program *p = NULL;
  rr_buffers b = {0};
  CHECK_OK(sk_compile(g, &cfg, &p));
  CHECK(rr_alloc(p, &b, -1, 1, 7));
  const int runs = 3;
  for (int r = 0; r < runs; r++) CHECK_OK(sk_program_run(p, teams[1], b.inputs, b.n_inputs, b.outputs, b.n_outputs));
  const sk__plan *plan = first_plan(p);
  int up = sub_named(plan, p, "experts_up");
  CHECK(up >= 0 && p->profile != NULL);
  if (up >= 0 && p->profile) {
    int64_t n_blocks = plan->subs[up].n_blocks, *seen = calloc((size_t)n_blocks, sizeof *seen);
    for (int core = 0; core < p->profile->n_cores; core++)
      for (size_t r = 0; r < p->profile->cores[core].count; r++) {
        const sk__prof_record *rec = &p->profile->cores[core].records[r];
        if (rec->kind == SK_PROF_RUN && rec->sub == up && rec->block >= 0 && rec->block < n_blocks) seen[rec->block]++;
      }
    for (int64_t blk = 0; blk < n_blocks; blk++)
      CHECK_MSG(seen[blk] == runs, "block %lld recorded %lld times in %d runs", (long long)blk, (long long)seen[blk], runs);
    free(seen);
  }
  rr_free(&b);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  static const harness_case cases[] = {TEST_CASE(test_fused_equals_eager), TEST_CASE(test_every_pair_is_routed),
                                       TEST_CASE(test_expert_matmuls_are_claimed)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

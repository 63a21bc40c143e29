/* Super kernels with ops that need special handling, registered here as
 * test ops: one whose blocks meet at a team barrier (feed-sync-all), one
 * that cannot be fused (strict-scope-check); and a fused scope run many
 * times (the ThreadSanitizer build runs this too). */
#include "core/error.h"
#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "ops/op.h"
#include "reference_runner.h"
#include "runtime/barrier.h"
#include "program/plan.h"
#include "test_extra_ops.h"

static sk_team *teams[3];

static sk_value add_unary(sk_graph *g, const char *type, const char *name, sk_value x) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_op_desc d = {.op = type, .name = name, .inputs = in, .n_inputs = 1};
  sk_value y = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  return y;
}


static sk_graph *allreduce_graph(int64_t rows) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x;
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){rows, 33}, &x));
  CHECK_OK(sk_graph_begin_scope(g, "ar", NULL));
  sk_value s = add_unary(g, "square", "sq", x);
  sk_value y = add_unary(g, "test_allreduce", "allreduce", s);
  sk_value z = add_unary(g, "square", "sq2", y);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  return g;
}

static void test_feed_sync_all(void) {
  /* One block, two cores: the idle core must join the barriers. */
  sk_graph *g = allreduce_graph(1);
  check_feed_sync_all(g, teams[1], teams[2], "allreduce", 2, 3);
  sk_graph_destroy(g);
  /* As many blocks as cores: no complement needed, works without the option. */
  g = allreduce_graph(2);
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_INTERP, NULL, 3) == 0);
  /* More blocks than cores cannot meet at a barrier: refused at compile. */
  sk_compile_config one_core = {.struct_size = sizeof one_core, .team = teams[0]};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &one_core, &p), SK_STATUS_UNSUPPORTED, "allreduce", "2 blocks for 1 cores");
  sk_graph_destroy(g);
}

static void test_strict_scope_check(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x;
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 1, (int64_t[]){1000}, &x));
  CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  sk_value a = add_unary(g, "square", "sq1", x);
  sk_value b = add_unary(g, "test_unfusable", "copy", a);
  sk_value c = add_unary(g, "square", "sq2", b);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, c, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1]};
  sk_program *p = NULL;
  /* Unset: split around the op. */
  CHECK_OK(sk_compile(g, &cfg, &p));
  if (p) {
    CHECK(p->n_steps == 3 && p->steps[0].plan && !p->steps[1].plan && p->steps[2].plan);
    if (p->n_steps == 3 && p->steps[0].plan && p->steps[2].plan)
      CHECK(strcmp(p->steps[0].plan->name, "s.0") == 0 && strcmp(p->steps[2].plan->name, "s.1") == 0);
    sk_program_destroy(p);
  }
  cfg.default_options = "strict-scope-check=bypass";
  CHECK_OK(sk_compile(g, &cfg, &p));
  if (p) {
    CHECK(p->n_steps == 3 && !p->steps[0].plan && !p->steps[1].plan && !p->steps[2].plan);
    sk_program_destroy(p);
  }
  cfg.default_options = "strict-scope-check=abort";
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_UNSUPPORTED, "scope 's'", "copy", "test_unfusable", "abort");
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_INTERP, NULL, 3) == 0);
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_INTERP, "strict-scope-check=bypass", 3) == 0);
  sk_graph_destroy(g);
}

/* A fused scope with cross-core waits, run 10,000 times: flags carry over
 * launches, so a lost wake-up or a stale flag would show as a hang or a
 * wrong result; under TSan, as a report. */
static void test_many_runs(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, w, h, y;
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){24, 16}, &x));
  CHECK_OK(sk_graph_add_input(g, "w", SK_FP32, 2, (int64_t[]){16, 40}, &w));
  CHECK_OK(sk_graph_begin_scope(g, "hot", "early-start=1"));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_op_desc mm = {.op = "grouped_matmul", .inputs = in, .n_inputs = 2};
  CHECK_OK(sk_graph_add_op(g, &mm, &h, 1, NULL));
  y = add_unary(g, "square", "sq", h);
  sk_op_input rin[] = {{"x", &y, 1}};
  sk_attr one_row[] = {SK_ATTR_INTS("shape", ((int64_t[]){1, -1}), 2)};
  sk_op_desc rd = {.op = "reshape", .inputs = rin, .n_inputs = 1, .attrs = one_row, .n_attrs = 1};
  sk_value r;
  CHECK_OK(sk_graph_add_op(g, &rd, &r, 1, NULL));
  sk_value z = add_unary(g, "test_allreduce", "allreduce", r);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .default_options = "feed-sync-all=1"};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  if (p) {
    rr_buffers b;
    CHECK(rr_alloc(p, &b, -1, 1, 1));
    CHECK(rr_check_program(p, teams[1], &b) == 0);
    float first[1];
    memcpy(first, b.outputs[0].data, sizeof first);
    int mismatches = 0;
    for (int run = 0; run < 10000; run++) {
      CHECK_OK(sk_program_run(p, teams[1], b.inputs, b.n_inputs, b.outputs, b.n_outputs));
      mismatches += memcmp(first, b.outputs[0].data, sizeof first) != 0;
    }
    CHECK_MSG(mismatches == 0, "%d of 10000 runs differ", mismatches);
    rr_free(&b);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

int main(void) {
  rr_register_test_ops();
  if (sk__op_find("test_allreduce") == NULL) return 1;
  const sk__op_def again = *sk__op_find("test_unfusable"); /* a type registers once */
  if (sk__op_register(&again) != SK_STATUS_INVALID_ARGUMENT) return 1;
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  static const harness_case cases[] = {TEST_CASE(test_feed_sync_all), TEST_CASE(test_strict_scope_check),
                                       TEST_CASE(test_many_runs)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

/* Super kernels with ops that need special handling, registered here as
 * test ops: one whose blocks meet at a team barrier (feed-sync-all), one
 * that cannot be fused (strict-scope-check); and a fused scope run many
 * times (the ThreadSanitizer build runs this too). */
#include "core/error.h"
#include "exec/program.h"
#include "harness.h"
#include "ops/op.h"
#include "reference_runner.h"
#include "runtime/barrier.h"
#include "superkernel/plan.h"

/* ---- test_allreduce: y[b] = sum of all of x, each block one row ----
 * Block b sums row b into y[b]; barrier; sums y[0..B) in order; barrier;
 * stores the total in y[b]. Two barriers per block. */
static sk_status allreduce_build(sk__build_ctx *ctx) {
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, 0, &x));
  if (x->rank != 2 || x->dtype != SK_FP32) return SK_STATUS_INVALID_SHAPE;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, SK_FP32, 1, x->shape);
  return SK_STATUS_OK;
}

static sk_status allreduce_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  (void)n_cores;
  *out = (sk__tiling){.n_blocks = io->in[0].tensors[0].shape[0]};
  return SK_STATUS_OK;
}

static float row_sum(const sk__tensor *x, int64_t b) {
  const float *row = (const float *)x->data + b * x->shape[1];
  float s = 0;
  for (int64_t j = 0; j < x->shape[1]; j++) s += row[j];
  return s;
}

static void allreduce_run(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  const sk__tensor *x = &io->in[0].tensors[0];
  float *y = io->out[0].data;
  y[block] = row_sum(x, block);
  sk__barrier_wait(io->barrier);
  float total = 0;
  for (int64_t b = 0; b < x->shape[0]; b++) total += y[b];
  sk__barrier_wait(io->barrier);
  y[block] = total;
}

static void allreduce_reference(const sk__node_io *io) {
  const sk__tensor *x = &io->in[0].tensors[0];
  float total = 0;
  for (int64_t b = 0; b < x->shape[0]; b++) total += row_sum(x, b);
  for (int64_t b = 0; b < x->shape[0]; b++) ((float *)io->out[0].data)[b] = total;
}

static const char *const x_slot[] = {"x", NULL};
static const sk__op_def allreduce_op = {
    .type = "test_allreduce", .slot_names = x_slot, .kind = SK_KERNEL_VECTOR, .build = allreduce_build,
    .tile = allreduce_tile, .run_block = allreduce_run, .reference = allreduce_reference, .barriers_per_block = 2,
};

/* ---- test_unfusable: a copy that declares itself unfusable ---- */
static sk_status copy_build(sk__build_ctx *ctx) {
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, 0, &x));
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  *out = *x;
  return SK_STATUS_OK;
}
static sk_status copy_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  (void)io, (void)n_cores;
  *out = (sk__tiling){.n_blocks = 1};
  return SK_STATUS_OK;
}
static void copy_reference(const sk__node_io *io) {
  memcpy(io->out[0].data, io->in[0].tensors[0].data, sk__tensor_bytes(&io->out[0]));
}
static void copy_run(const sk__node_io *io, int64_t block, void *workspace) {
  (void)block, (void)workspace;
  copy_reference(io);
}
static const sk__op_def unfusable_op = {
    .type = "test_unfusable", .slot_names = x_slot, .kind = SK_KERNEL_VECTOR, .build = copy_build,
    .tile = copy_tile, .run_block = copy_run, .reference = copy_reference, .unfusable = true,
};

static sk_team *teams[3];

static sk_value add_unary(sk_graph *g, const char *type, const char *name, sk_value x) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_op_desc d = {.op = type, .name = name, .inputs = in, .n_inputs = 1};
  sk_value y = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  return y;
}

/* Compiles fused with options and eager; runs both; 0 when equal. */
static int fused_equals_eager(sk_graph *g, sk_team *team, const char *options) {
  sk_compile_config fc = {.struct_size = sizeof fc, .team = team, .executor = SK_EXECUTOR_INTERP, .default_options = options};
  sk_compile_config ec = {.struct_size = sizeof ec, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_program *f = NULL, *e = NULL;
  CHECK_OK(sk_compile(g, &fc, &f));
  CHECK_OK(sk_compile(g, &ec, &e));
  int bad = 1;
  if (f && e) {
    rr_buffers a, b;
    CHECK(rr_alloc(f, &a, -1, 1, 3) && rr_alloc(e, &b, -1, 1, 3));
    CHECK_OK(sk_program_run(f, team, a.inputs, a.n_inputs, a.outputs, a.n_outputs));
    CHECK_OK(sk_program_run(e, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs));
    bad = 0;
    for (size_t o = 0; o < a.n_outputs; o++) bad += memcmp(a.outputs[o].data, b.outputs[o].data, a.outputs[o].bytes) != 0;
    rr_free(&a);
    rr_free(&b);
  }
  sk_program_destroy(f);
  sk_program_destroy(e);
  return bad;
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
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1]};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_STATE, "allreduce", "team barrier", "1 blocks for 2 cores",
              "feed-sync-all=1");
  cfg.default_options = "feed-sync-all=1";
  CHECK_OK(sk_compile(g, &cfg, &p));
  if (p) {
    char *text = NULL;
    CHECK_OK(sk_program_describe(p, &text));
    CHECK(text && strstr(text, "complement allreduce's barrier x2"));
    sk_free(text);
    sk_program_destroy(p);
  }
  for (int e = 0; e < 3; e++) {
    char options[64];
    snprintf(options, sizeof options, "feed-sync-all=1:early-start=%d", e);
    CHECK_MSG(fused_equals_eager(g, teams[1], options) == 0, "%s", options);
    CHECK_MSG(fused_equals_eager(g, teams[2], options) == 0, "%s, 3 cores", options);
  }
  sk_graph_destroy(g);
  /* As many blocks as cores: no complement needed, works without the option. */
  g = allreduce_graph(2);
  CHECK(fused_equals_eager(g, teams[1], NULL) == 0);
  /* More blocks than cores cannot meet at a barrier: refused at compile. */
  cfg.default_options = NULL;
  cfg.team = teams[0];
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_UNSUPPORTED, "allreduce", "2 blocks for 1 cores");
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
  CHECK(fused_equals_eager(g, teams[1], NULL) == 0);
  CHECK(fused_equals_eager(g, teams[1], "strict-scope-check=bypass") == 0);
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
  if (sk__op_register(&allreduce_op) != SK_STATUS_OK || sk__op_register(&unfusable_op) != SK_STATUS_OK) return 1;
  if (sk__op_register(&unfusable_op) != SK_STATUS_INVALID_ARGUMENT) return 1; /* a type registers once */
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

/* The run-time token count (superkernel.h, SK_DIM_DYNAMIC): one program
 * compiled for up to `max` tokens runs every T in 1..max, on every executor
 * (eager, interpreted, JIT, reference) and team size, and gives bitwise
 * the outputs of a program built for exactly T tokens (by the reference
 * executor: an independent build). T = 0 writes nothing; T > max, buffers
 * that disagree on T or hold partial rows are refused before anything is
 * written; a graph whose shapes cannot follow T is refused as it is built. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tokens_buffers.h"

static sk_team *teams[3];

/* Token counts to try up to max: all of them for small maxima, else the
 * bucket edges and their neighbours. */
static size_t token_counts(int64_t max, int64_t *out) {
  size_t n = 0;
  if (max <= 9) {
    for (int64_t t = 1; t <= max; t++) out[n++] = t;
    return n;
  }
  for (int64_t b = 1; b <= max; b *= 2) {
    out[n++] = b;
    if (b + 1 < max) out[n++] = b + 1;
    if (b > 2) out[n++] = b - 1;
  }
  out[n++] = max;
  return n;
}


/* The case at every T, executor and team size against its exact builds. */
static void check_case(const tokens_case *c, int64_t max) {
  int64_t counts[64], ids[4096];
  size_t n_counts = token_counts(max, counts);
  for (int64_t r = 0; r < max; r++) ids[r] = r * 7 + 3;
  sk_graph *dyn = tc_graph(c, SK_DIM_DYNAMIC, max);
  /* The expected outputs of each T: a reference program built for it. */
  run_buffers *want = calloc(n_counts, sizeof *want);
  for (size_t k = 0; k < n_counts; k++) {
    sk_graph *g = tc_graph(c, counts[k], 0);
    sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_REFERENCE};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (p) {
      alloc_buffers(p, counts[k], ids, &want[k]);
      CHECK_OK(sk_program_run(p, NULL, want[k].in, want[k].n_in, want[k].out, want[k].n_out));
    }
    sk_program_destroy(p);
    sk_graph_destroy(g);
  }
  for (size_t e = 0; e < TC_N_EXECUTORS; e++)
    for (int t = 0; t < 3; t++) {
      sk_program *p = tc_program(dyn, e, t, teams);
      if (!p) continue;
      CHECK(sk_program_max_tokens(p) == max);
      for (size_t k = 0; k < n_counts; k++) {
        run_buffers b;
        alloc_buffers(p, counts[k], ids, &b);
        CHECK_OK(sk_program_run(p, teams[t], b.in, b.n_in, b.out, b.n_out));
        for (size_t j = 0; j < b.n_out; j++) {
          bool same = b.out[j].bytes == want[k].out[j].bytes &&
                      memcmp(b.out[j].data, want[k].out[j].data, b.out[j].bytes) == 0;
          CHECK_MSG(same, "%s, %s, %d cores, T = %lld of %lld: output '%s' differs from the exact build", c->name,
                    sk_executor_name(TC_EXECUTORS[e]), t + 1, (long long)counts[k], (long long)max, b.out[j].name);
        }
        free_buffers(&b);
      }
      sk_program_destroy(p);
    }
  for (size_t k = 0; k < n_counts; k++) free_buffers(&want[k]);
  free(want);
  sk_graph_destroy(dyn);
}

static void test_every_count_small(void) {
  for (size_t i = 0; i < sizeof TOKENS_CASES / sizeof TOKENS_CASES[0]; i++) check_case(&TOKENS_CASES[i], 7);
}

static void test_bucket_edges(void) {
  check_case(&TOKENS_CASES[0], 100);
  check_case(&TOKENS_CASES[3], 70);
  check_case(&TOKENS_CASES[5], 40);
  check_case(&TOKENS_CASES[6], 33);
}

/* A maximum of 1: one bucket, T in {0, 1}. */
static void test_max_one(void) { check_case(&TOKENS_CASES[5], 1); }

/* T = 0 writes nothing; T > max, disagreeing buffers and partial rows are
 * refused naming the buffer, and write nothing. */
static void test_bad_counts(void) {
  sk_graph *g = tc_graph(&TOKENS_CASES[0], SK_DIM_DYNAMIC, 8);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  int64_t ids[16] = {0};
  run_buffers b;
  alloc_buffers(p, 9, ids, &b); /* 9 > 8 */
  CHECK_FAILS(sk_program_run(p, teams[1], b.in, b.n_in, b.out, b.n_out), SK_STATUS_INVALID_ARGUMENT, "'x'", "at most 8");
  free_buffers(&b);
  alloc_buffers(p, 3, ids, &b);
  unsigned char before = ((unsigned char *)b.out[0].data)[0];
  b.in[1].bytes -= 40 * 2; /* x2 holds 2 tokens, x 3 */
  CHECK_FAILS(sk_program_run(p, teams[1], b.in, b.n_in, b.out, b.n_out), SK_STATUS_INVALID_ARGUMENT, "'x2'",
              "2 tokens", "'x'", "3");
  b.in[1].bytes += 40 * 2 - 1; /* a partial row */
  CHECK_FAILS(sk_program_run(p, teams[1], b.in, b.n_in, b.out, b.n_out), SK_STATUS_INVALID_ARGUMENT, "'x2'", "whole tokens");
  b.in[1].bytes += 1;
  b.out[1].bytes = 0; /* output 'a' for 0 tokens, the rest for 3 */
  CHECK_FAILS(sk_program_run(p, teams[1], b.in, b.n_in, b.out, b.n_out), SK_STATUS_INVALID_ARGUMENT, "'a'", "0 tokens");
  CHECK(((unsigned char *)b.out[0].data)[0] == before);
  /* T = 0: every dynamic buffer empty; nothing runs or is written. */
  for (size_t i = 0; i < b.n_in; i++) b.in[i].bytes = 0;
  for (size_t j = 0; j < b.n_out; j++) b.out[j].bytes = 0;
  CHECK_OK(sk_program_run(p, teams[1], b.in, b.n_in, b.out, b.n_out));
  CHECK(((unsigned char *)b.out[0].data)[0] == before);
  free_buffers(&b);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* Bound buffers (sk_program_bind, run contexts) give T by their sizes, and
 * a bound run at another T after a rebind gives the exact build's bits. */
static void test_bound_runs(void) {
  const tokens_case *c = &TOKENS_CASES[5];
  sk_graph *g = tc_graph(c, SK_DIM_DYNAMIC, 16);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_JIT};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  sk_run_context *ctx = NULL;
  CHECK_OK(sk_run_context_create(p, &ctx));
  int64_t ids[16];
  for (int i = 0; i < 16; i++) ids[i] = 100 + i;
  static const int64_t order[] = {5, 16, 1, 5, 9, 2};
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
    int64_t t = order[k];
    run_buffers want, got, via_ctx;
    alloc_buffers(p, t, ids, &want);
    alloc_buffers(p, t, ids, &got);
    alloc_buffers(p, t, ids, &via_ctx);
    CHECK_OK(sk_program_run(p, teams[1], want.in, want.n_in, want.out, want.n_out));
    for (size_t i = 0; i < got.n_in; i++) {
      CHECK_OK(sk_program_bind(p, SK_IO_INPUT, i, got.in[i].data, got.in[i].bytes));
      CHECK_OK(sk_run_context_bind(ctx, SK_IO_INPUT, i, via_ctx.in[i].data, via_ctx.in[i].bytes));
    }
    for (size_t j = 0; j < got.n_out; j++) {
      CHECK_OK(sk_program_bind(p, SK_IO_OUTPUT, j, got.out[j].data, got.out[j].bytes));
      CHECK_OK(sk_run_context_bind(ctx, SK_IO_OUTPUT, j, via_ctx.out[j].data, via_ctx.out[j].bytes));
    }
    CHECK_OK(sk_program_run_bound(p, teams[1]));
    CHECK_OK(sk_run_context_run(ctx, teams[1]));
    CHECK_OK(sk_program_run_bound(p, teams[1])); /* again, nothing rebound */
    for (size_t j = 0; j < got.n_out; j++) {
      CHECK_MSG(memcmp(got.out[j].data, want.out[j].data, want.out[j].bytes) == 0, "bound run, T = %lld: '%s'",
                (long long)t, got.out[j].name);
      CHECK_MSG(memcmp(via_ctx.out[j].data, want.out[j].data, want.out[j].bytes) == 0, "context run, T = %lld: '%s'",
                (long long)t, got.out[j].name);
    }
    sk_program_unbind_all(p);
    free_buffers(&want);
    free_buffers(&got);
    free_buffers(&via_ctx);
  }
  sk_run_context_destroy(ctx);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* What the program reports: dynamic dims as SK_DIM_TOKENS(k), buckets. */
static void test_reported_shapes(void) {
  sk_graph *g = tc_graph(&TOKENS_CASES[5], SK_DIM_DYNAMIC, 100);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[0], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  int64_t shape[SK_MAX_RANK];
  CHECK_OK(sk_program_input_info(p, 0, NULL, NULL, NULL, shape));
  CHECK(shape[0] == SK_DIM_DYNAMIC && shape[1] == 32);
  size_t expanded;
  CHECK_OK(sk_program_find(p, SK_IO_OUTPUT, "expanded_x", &expanded));
  CHECK_OK(sk_program_output_info(p, expanded, NULL, NULL, NULL, shape));
  CHECK_MSG(shape[0] == SK_DIM_TOKENS(4), "expanded_x rows %lld", (long long)shape[0]);
  sk_program_stats st = {.struct_size = sizeof st};
  CHECK_OK(sk_program_get_stats(p, &st));
  CHECK(st.max_tokens == 100 && st.n_token_buckets == 8); /* 1 2 4 8 16 32 64 100 */
  char *text = NULL;
  CHECK_OK(sk_program_describe(p, &text));
  CHECK(text && strstr(text, "token buckets: 1, 2, 4, 8, 16, 32, 64, 100"));
  sk_free(text);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

static void noop_kernel(void *const *args, int64_t block, int64_t n_blocks, void *workspace, sk_kernel_ctx *ctx) {
  (void)args, (void)block, (void)n_blocks, (void)workspace, (void)ctx;
}

/* Graphs whose shapes cannot follow the count are refused as they are built. */
static void test_refused_graphs(void) {
  sk_graph *g;
  sk_value x, y;
  CHECK_OK(sk_graph_create(&g));
  CHECK_FAILS(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){SK_DIM_DYNAMIC, 4}, &x), SK_STATUS_INVALID_SHAPE,
              "'x'", "sk_graph_set_max_tokens");
  CHECK_FAILS(sk_graph_set_max_tokens(g, 0), SK_STATUS_INVALID_ARGUMENT, "expected 1");
  CHECK_OK(sk_graph_set_max_tokens(g, 16));
  CHECK_FAILS(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){4, SK_DIM_DYNAMIC}, &x), SK_STATUS_INVALID_SHAPE,
              "dimension 1");
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){SK_DIM_DYNAMIC, 4}, &x));
  CHECK_FAILS(sk_graph_set_max_tokens(g, 32), SK_STATUS_INVALID_STATE, "16");
  /* A reshape whose shape fixes 16 tokens. */
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr fixed[] = {SK_ATTR_INTS("shape", ((const int64_t[]){64}), 1)};
  sk_op_desc d = {.struct_size = sizeof d, .op = "reshape", .inputs = in, .n_inputs = 1, .attrs = fixed, .n_attrs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_SHAPE, "reshape", "token count of 1");
  /* A reshape that moves the count off the leading dimension. */
  sk_attr moved[] = {SK_ATTR_INTS("shape", ((const int64_t[]){4, -1}), 2)};
  d.attrs = moved;
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_UNSUPPORTED, "dimension 1", "multiple");
  /* x [T, 4] + a constant [16, 4]: broadcasts at T = 1, matches at 16,
   * and fails between. */
  float zeros[64] = {0};
  sk_value c16;
  CHECK_OK(sk_graph_add_constant(g, "c16", SK_FP32, 2, (int64_t[]){16, 4}, zeros, SK_CONSTANT_COPY, &c16));
  sk_op_input add_in[] = {{"x", &x, 1}, {"y", &c16, 1}};
  sk_op_desc add = {.struct_size = sizeof add, .op = "add", .inputs = add_in, .n_inputs = 2};
  CHECK_FAILS(sk_graph_add_op(g, &add, &y, 1, NULL), SK_STATUS_INVALID_SHAPE, "add", "token count of 9");
  /* A custom kernel (its blocks know nothing of a run's count). */
  sk_kernel_desc kd = {.struct_size = sizeof kd, .name = "tokens_test_copy", .entry = noop_kernel,
                       .type = SK_KERNEL_TYPE_VECTOR, .block_count = 1, .n_params = 2};
  sk_kernel *k = NULL;
  CHECK_OK(sk_kernel_register(&kd, &k));
  sk_op_input kin[] = {{"x", &x, 1}};
  sk_op_desc kdesc = {.struct_size = sizeof kdesc, .op = "tokens_test_copy", .inputs = kin, .n_inputs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &kdesc, &y, 1, NULL), SK_STATUS_UNSUPPORTED, "tokens_test_copy",
              "does not take a run-time token count");
  /* The last row (start -1): a static [1, 4] whose place follows the
   * count; a bucket planned for more tokens read past the live rows (a
   * finding of the schema-driven fuzzer). */
  sk_attr last[] = {SK_ATTR_INT("start", -1)};
  sk_op_desc sl = {.struct_size = sizeof sl, .op = "slice", .inputs = in, .n_inputs = 1, .attrs = last, .n_attrs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &sl, &y, 1, NULL), SK_STATUS_UNSUPPORTED, "slice", "the view starts at byte 240",
              "token count");
  /* The flattened tokens: [T * 4], dynamic. */
  sk_attr flat[] = {SK_ATTR_INTS("shape", ((const int64_t[]){-1}), 1)};
  d.attrs = flat;
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  int64_t shape[SK_MAX_RANK];
  CHECK_OK(sk_graph_value_info(g, y, NULL, NULL, shape));
  CHECK(shape[0] == SK_DIM_TOKENS(4));
  sk_graph_destroy(g);
}

/* A group_index of T entries (one group per token): a run at T < max
 * reads only the T given, and gives the exact build's bits (a fuzzer
 * finding: the kernel read the planned count, past the buffer). */
static void test_dynamic_group_index(void) {
  for (int64_t t = 1; t <= 4; t++) {
    sk_graph *g[2];
    sk_program *p[2] = {0};
    for (int k = 0; k < 2; k++) {
      sk_value x, gi, y[2];
      CHECK_OK(sk_graph_create(&g[k]));
      if (k == 0) CHECK_OK(sk_graph_set_max_tokens(g[k], 4));
      int64_t rows = k == 0 ? SK_DIM_DYNAMIC : t;
      CHECK_OK(sk_graph_add_input(g[k], "x", SK_FP32, 2, (int64_t[]){rows, 8}, &x));
      CHECK_OK(sk_graph_add_input(g[k], "group_index", SK_INT64, 1, (int64_t[]){rows}, &gi));
      sk_op_input in[] = {{"x", &x, 1}, {"group_index", &gi, 1}};
      sk_attr a[] = {SK_ATTR_INT("quant_mode", 1)};
      sk_op_desc d = {.struct_size = sizeof d, .op = "dequant_swiglu_quant", .inputs = in, .n_inputs = 2, .attrs = a,
                      .n_attrs = 1};
      CHECK_OK(sk_graph_add_op(g[k], &d, y, 2, NULL));
      CHECK_OK(sk_graph_mark_output(g[k], y[0], "y"));
      CHECK_OK(sk_graph_mark_output(g[k], y[1], "scale"));
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1],
                               .executor = k == 0 ? SK_EXECUTOR_EAGER : SK_EXECUTOR_REFERENCE};
      CHECK_OK(sk_compile(g[k], &cfg, &p[k]));
    }
    float *xs = malloc((size_t)t * 8 * sizeof *xs);
    int64_t *groups = malloc((size_t)t * sizeof *groups); /* exactly t entries: ASan sees a read past them */
    for (int64_t i = 0; i < t * 8; i++) xs[i] = (float)(i % 7) - 3.0f;
    for (int64_t i = 0; i < t; i++) groups[i] = i < t - 1 ? 1 : 0;
    int8_t y[2][32];
    float scale[2][4];
    for (int k = 0; k < 2 && p[0] && p[1]; k++) {
      sk_buffer ib[] = {{"x", xs, (size_t)t * 8 * sizeof *xs}, {"group_index", groups, (size_t)t * sizeof *groups}};
      sk_buffer ob[] = {{"y", y[k], (size_t)t * 4}, {"scale", scale[k], (size_t)t * sizeof(float)}};
      CHECK_OK(sk_program_run(p[k], teams[1], ib, 2, ob, 2));
    }
    CHECK_MSG(memcmp(y[0], y[1], (size_t)t * 4) == 0 && memcmp(scale[0], scale[1], (size_t)t * sizeof(float)) == 0,
              "T = %lld: dequant_swiglu_quant with a group per token differs from the exact build", (long long)t);
    free(xs);
    free(groups);
    for (int k = 0; k < 2; k++) {
      sk_program_destroy(p[k]);
      sk_graph_destroy(g[k]);
    }
  }
}

/* The graph (with copied constants: norms' gamma, the matmuls' weights)
 * destroyed right after sk_compile: every bucket and the reference's exact
 * builds read the program's own copies (a reviewer's finding: they read
 * the freed graph's). */
static void test_graph_destroyed_after_compile(void) {
  static const int cases[] = {2, 3};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const tokens_case *c = &TOKENS_CASES[cases[i]];
    int64_t ids[8];
    for (int r = 0; r < 8; r++) ids[r] = 40 + r;
    for (int e = 0; e < 2; e++) {
      sk_graph *g = tc_graph(c, SK_DIM_DYNAMIC, 8);
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1],
                               .executor = e ? SK_EXECUTOR_REFERENCE : SK_EXECUTOR_INTERP};
      sk_program *p = NULL;
      CHECK_OK(sk_compile(g, &cfg, &p));
      sk_graph_destroy(g);
      void *scribble[64]; /* reuse the freed memory */
      for (int k = 0; k < 64; k++) memset(scribble[k] = malloc(256), 0x5A, 256);
      sk_graph *ex = tc_graph(c, 3, 0);
      sk_compile_config rc = {.struct_size = sizeof rc, .executor = SK_EXECUTOR_REFERENCE};
      sk_program *want_p = NULL;
      CHECK_OK(sk_compile(ex, &rc, &want_p));
      run_buffers got, want;
      alloc_buffers(want_p, 3, ids, &want);
      alloc_buffers(p, 3, ids, &got);
      CHECK_OK(sk_program_run(want_p, NULL, want.in, want.n_in, want.out, want.n_out));
      CHECK_OK(sk_program_run(p, teams[1], got.in, got.n_in, got.out, got.n_out));
      for (size_t j = 0; j < got.n_out; j++)
        CHECK_MSG(memcmp(got.out[j].data, want.out[j].data, want.out[j].bytes) == 0, "%s, %s: output '%s'", c->name,
                  e ? "reference" : "interp", got.out[j].name);
      free_buffers(&got);
      free_buffers(&want);
      for (int k = 0; k < 64; k++) free(scribble[k]);
      sk_program_destroy(want_p);
      sk_graph_destroy(ex);
      sk_program_destroy(p);
    }
  }
}

/* A maximum without any dynamic input: an ordinary program of static shapes. */
static void test_max_without_dynamic_inputs(void) {
  sk_graph *g;
  sk_value x, y;
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_set_max_tokens(g, 8));
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 1, (int64_t[]){3}, &x));
  y = unary(g, "square", "sq", x);
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, NULL, &p));
  CHECK(sk_program_max_tokens(p) == 0);
  float in[3] = {1, 2, 3}, out[3] = {0};
  sk_buffer ib[] = {{"x", in, sizeof in}}, ob[] = {{"y", out, sizeof out}};
  CHECK_OK(sk_program_run(p, NULL, ib, 1, ob, 1));
  CHECK(out[0] == 1 && out[1] == 4 && out[2] == 9);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* sk_op_infer on metas with a token dimension: as a graph with a maximum. */
static void test_infer(void) {
  sk_tensor_meta in[2] = {{SK_BF16, 2, {SK_DIM_DYNAMIC, 32}}, {SK_INT32, 2, {SK_DIM_DYNAMIC, 4}}}, out[4];
  sk_value none = 0;
  sk_op_input rin[] = {{"x", &none, 1}, {"expert_idx", &none, 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", 16)};
  sk_op_desc d = {.struct_size = sizeof d, .op = "moe_init_routing", .inputs = rin, .n_inputs = 2, .attrs = rat,
                  .n_attrs = 1};
  size_t n = 0;
  CHECK_OK(sk_op_infer(&d, in, 2, out, 4, &n));
  CHECK(n == 4 && out[0].shape[0] == SK_DIM_TOKENS(4) && out[0].shape[1] == 32);
  CHECK(out[2].shape[0] == 16); /* the per-expert counts: static */
  sk_op_input xin[] = {{"x", &none, 1}};
  sk_attr fixed[] = {SK_ATTR_INTS("shape", ((const int64_t[]){64, 4}), 2)};
  sk_op_desc r = {.struct_size = sizeof r, .op = "reshape", .inputs = xin, .n_inputs = 1, .attrs = fixed, .n_attrs = 1};
  in[0] = (sk_tensor_meta){SK_FP32, 2, {SK_DIM_TOKENS(2), 8}};
  CHECK_FAILS(sk_op_supported(&r, in, 1), SK_STATUS_INVALID_SHAPE, "reshape", "elements");
  sk_attr flat[] = {SK_ATTR_INTS("shape", ((const int64_t[]){-1}), 1)};
  r.attrs = flat;
  CHECK_OK(sk_op_infer(&r, in, 1, out, 4, &n));
  CHECK(n == 1 && out[0].rank == 1 && out[0].shape[0] == SK_DIM_TOKENS(16));
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  static const harness_case cases[] = {TEST_CASE(test_every_count_small), TEST_CASE(test_bucket_edges),
                                       TEST_CASE(test_max_one),           TEST_CASE(test_bad_counts),
                                       TEST_CASE(test_bound_runs),        TEST_CASE(test_reported_shapes),
                                       TEST_CASE(test_refused_graphs),    TEST_CASE(test_infer),
                                       TEST_CASE(test_dynamic_group_index), TEST_CASE(test_max_without_dynamic_inputs),
                                       TEST_CASE(test_graph_destroyed_after_compile)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

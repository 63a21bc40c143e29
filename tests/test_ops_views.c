/* The view ops beyond reshape: slice along dim 0 (a view at a byte offset),
 * squeeze and unsqueeze (pure views). Their shape rules and errors; runs on
 * every executor and team size, bitwise against the references, with views
 * as graph outputs (copied out), inside chains, nested (offsets add up),
 * and inside super kernels, where the planner must wait for the producer
 * blocks a consumer reads through a slice's offset. */
#include <stdint.h>

#include "graph_builders.h"

static sk_team *teams[3];

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Compiles g for every team and executor, runs on random inputs and compares
 * with the references. Destroys g. */
static void check_graph(sk_graph *g, uint64_t seed) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (int t = 0; t < 3; t++)
    for (size_t e = 0; e < COUNT(executors); e++) {
      sk_program *p = NULL;
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t], .executor = executors[e]};
      CHECK_OK(sk_compile(g, &cfg, &p));
      if (!p) continue;
      rr_buffers b;
      CHECK(rr_alloc(p, &b, -100, 100, seed));
      CHECK_MSG(rr_check_program(p, teams[t], &b) == 0, "team of %d cores, executor %d", t + 1, (int)executors[e]);
      rr_free(&b);
      sk_program_destroy(p);
    }
  sk_graph_destroy(g);
}

static sk_value view(sk_graph *g, const char *type, sk_value x, const sk_attr *at, size_t n_at) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_value y;
  return op(g, type, NULL, in, 1, at, n_at, &y, 1);
}

static sk_value slice(sk_graph *g, sk_value x, int64_t start, int64_t end) {
  sk_attr at[] = {SK_ATTR_INT("start", start), SK_ATTR_INT("end", end)};
  return view(g, "slice", x, at, 2);
}

/* sk_op_infer of a one-input op: the output meta, or the failure status. */
static sk_status infer1(const char *type, sk_tensor_meta x, const sk_attr *at, size_t n_at, sk_tensor_meta *out) {
  sk_value v = 0;
  sk_op_input in[] = {{"x", &v, 1}};
  sk_op_desc d = {.op = type, .inputs = in, .n_inputs = 1, .attrs = at, .n_attrs = n_at};
  size_t n = 0;
  return sk_op_infer(&d, &x, 1, out, 1, &n);
}

static bool shape_is(sk_tensor_meta m, int rank, const int64_t *shape) {
  if (m.rank != rank) return false;
  for (int d = 0; d < rank; d++)
    if (m.shape[d] != shape[d]) return false;
  return true;
}

#define SHAPE(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})

static void test_shape_rules(void) {
  sk_tensor_meta x = {SK_FP16, 4, {1, 3, 1, 4}}, out;
  const int64_t d0[] = {0}, dm2[] = {-2}, d1[] = {1}, dup[] = {0, -4}, d4[] = {4};
  CHECK_OK(infer1("squeeze", x, NULL, 0, &out));
  CHECK(shape_is(out, SHAPE(3, 4)) && out.dtype == SK_FP16);
  sk_attr a = SK_ATTR_INTS("dims", d0, 1);
  CHECK_OK(infer1("squeeze", x, &a, 1, &out));
  CHECK(shape_is(out, SHAPE(3, 1, 4)));
  a = SK_ATTR_INTS("dims", dm2, 1);
  CHECK_OK(infer1("squeeze", x, &a, 1, &out));
  CHECK(shape_is(out, SHAPE(1, 3, 4)));
  a = SK_ATTR_INTS("dims", d1, 1); /* size 3: kept, as torch */
  CHECK_OK(infer1("squeeze", x, &a, 1, &out));
  CHECK(shape_is(out, SHAPE(1, 3, 1, 4)));
  a = SK_ATTR_INTS("dims", d0, 0); /* given but empty: nothing dropped */
  CHECK_OK(infer1("squeeze", x, &a, 1, &out));
  CHECK(shape_is(out, SHAPE(1, 3, 1, 4)));
  a = SK_ATTR_INTS("dims", dup, 2);
  CHECK_FAILS(infer1("squeeze", x, &a, 1, &out), SK_STATUS_INVALID_ATTRIBUTE, "squeeze", "dims[1]", "twice");
  a = SK_ATTR_INTS("dims", d4, 1);
  CHECK_FAILS(infer1("squeeze", x, &a, 1, &out), SK_STATUS_INVALID_ATTRIBUTE, "squeeze", "dims[0]", "-4..3");
  sk_tensor_meta scalar = {SK_INT32, 0, {0}};
  a = SK_ATTR_INTS("dims", d0, 1); /* a 0-d tensor takes dim 0 and stays 0-d */
  CHECK_OK(infer1("squeeze", scalar, &a, 1, &out));
  CHECK(out.rank == 0);

  sk_tensor_meta y = {SK_BOOL, 2, {3, 4}};
  const struct {
    int64_t dim;
    int64_t want[3];
  } uns[] = {{0, {1, 3, 4}}, {1, {3, 1, 4}}, {2, {3, 4, 1}}, {-1, {3, 4, 1}}, {-3, {1, 3, 4}}};
  for (size_t k = 0; k < COUNT(uns); k++) {
    sk_attr u = SK_ATTR_INT("dim", uns[k].dim);
    CHECK_OK(infer1("unsqueeze", y, &u, 1, &out));
    CHECK_MSG(out.dtype == SK_BOOL && shape_is(out, 3, uns[k].want), "unsqueeze dim %lld", (long long)uns[k].dim);
  }
  sk_attr u = SK_ATTR_INT("dim", 3);
  CHECK_FAILS(infer1("unsqueeze", y, &u, 1, &out), SK_STATUS_INVALID_ATTRIBUTE, "unsqueeze", "dim", "-3..2");
  sk_tensor_meta r8 = {SK_FP32, 8, {1, 1, 1, 1, 1, 1, 1, 2}};
  u = SK_ATTR_INT("dim", 0);
  CHECK_FAILS(infer1("unsqueeze", r8, &u, 1, &out), SK_STATUS_INVALID_SHAPE, "unsqueeze", "rank 8");

  sk_tensor_meta z = {SK_UINT8, 2, {10, 3}};
  const struct {
    int64_t start, end, rows;
  } sl[] = {{2, 5, 3},   {-3, INT64_MAX, 3}, {0, -1, 9},          {20, INT64_MAX, 0}, {0, -20, 0},
            {5, 2, 0},   {INT64_MIN, 4, 4},  {-10, INT64_MIN, 0}, {9, 10, 1},         {0, INT64_MAX, 10}};
  for (size_t k = 0; k < COUNT(sl); k++) {
    sk_attr s[] = {SK_ATTR_INT("start", sl[k].start), SK_ATTR_INT("end", sl[k].end)};
    CHECK_OK(infer1("slice", z, s, 2, &out));
    CHECK_MSG(out.dtype == SK_UINT8 && shape_is(out, 2, (int64_t[]){sl[k].rows, 3}), "slice %lld:%lld -> %lld rows",
              (long long)sl[k].start, (long long)sl[k].end, (long long)out.shape[0]);
  }
  CHECK_OK(infer1("slice", z, NULL, 0, &out)); /* defaults: everything */
  CHECK(shape_is(out, SHAPE(10, 3)));
  CHECK_FAILS(infer1("slice", scalar, NULL, 0, &out), SK_STATUS_INVALID_SHAPE, "slice", "input x", "rank 0");
}

/* A slice of a graph input as an output: copied out from its offset. */
static void test_slice_values_by_hand(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_INT32, 2, (int64_t[]){5, 2});
  CHECK_OK(sk_graph_mark_output(g, slice(g, x, 1, -1), "mid"));
  CHECK_OK(sk_graph_mark_output(g, slice(g, slice(g, x, -3, INT64_MAX), 1, 2), "row3"));
  sk_program *p = NULL;
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1]};
  CHECK_OK(sk_compile(g, &cfg, &p));
  int32_t xv[10] = {0, 1, 10, 11, 20, 21, 30, 31, 40, 41}, mid[6] = {0}, row3[2] = {0};
  sk_buffer in[] = {{"x", xv, sizeof xv}}, out[] = {{"mid", mid, sizeof mid}, {"row3", row3, sizeof row3}};
  if (p) CHECK_OK(sk_program_run(p, teams[1], in, 1, out, 2));
  const int32_t want_mid[6] = {10, 11, 20, 21, 30, 31}, want_row3[2] = {30, 31};
  CHECK(memcmp(mid, want_mid, sizeof mid) == 0);
  CHECK(memcmp(row3, want_row3, sizeof row3) == 0);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* Views of computed values: consumed, marked as outputs, nested through a
 * reshape (offsets add up), and a leading slice (offset 0, shorter) as the
 * only output, which must not take its root's storage (the root is larger). */
static void test_view_chains(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){20, 1000}), b = input(g, "b", SK_FP32, 2, (int64_t[]){12, 1000});
  sk_value y = unary(g, "square", "sq", x);
  sk_value z = slice(g, y, 5, 17);
  sk_value w = binary(g, "add", "add", z, b);
  sk_attr r[] = {SK_ATTR_INTS("shape", ((int64_t[]){-1, 250}), 2)};
  sk_value nested = slice(g, view(g, "reshape", slice(g, y, 3, -2), r, 1), 2, 9); /* rows 3+0.5.. of y */
  sk_value n2 = unary(g, "square", "sq2", nested);
  CHECK_OK(sk_graph_mark_output(g, w, "w"));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, nested, "nested"));
  CHECK_OK(sk_graph_mark_output(g, n2, "n2"));
  check_graph(g, 1);

  CHECK_OK(sk_graph_create(&g));
  x = input(g, "x", SK_BF16, 2, (int64_t[]){10, 100});
  CHECK_OK(sk_graph_mark_output(g, slice(g, unary(g, "square", "sq", x), 0, 3), "head"));
  check_graph(g, 2);

  CHECK_OK(sk_graph_create(&g));
  x = input(g, "x", SK_INT8, 3, (int64_t[]){4, 1, 7});
  sk_attr u0 = SK_ATTR_INT("dim", 0);
  sk_value a = view(g, "unsqueeze", view(g, "squeeze", x, NULL, 0), &u0, 1); /* [1, 4, 7] */
  sk_value s = unary(g, "square", "sq", a);
  sk_attr dims = SK_ATTR_INTS("dims", ((int64_t[]){0}), 1);
  CHECK_OK(sk_graph_mark_output(g, view(g, "squeeze", s, &dims, 1), "sq"));
  CHECK_OK(sk_graph_mark_output(g, a, "a"));
  check_graph(g, 3);
}

/* y = square(v [3, 16384]) on 3 cores: one block (one row) per core. z =
 * slice(y, 1, 3) starts at row 1, so block 0 of w = square(z) reads y's row
 * 1 (core 1's block) and block 1 reads row 2 (core 2's): the planner must
 * shift the reads by the slice's offset to wait for those. */
static sk_graph *slice_in_scope(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value v = input(g, "v", SK_FP32, 2, (int64_t[]){3, 16384});
  CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
  sk_value y = unary(g, "square", "sq", v);
  sk_value z = slice(g, y, 1, 3);
  sk_value w = unary(g, "square", "w", z);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, w, "w"));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  return g;
}

static void test_slice_inside_super_kernel(void) {
  sk_graph *g = slice_in_scope();
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[2], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  char *text = NULL;
  if (p) CHECK_OK(sk_program_describe(p, &text));
  for (int c = 0; text && c < 2; c++) {
    int flags[8], want = plan_block_flag(text, c + 1, "sq", c + 1);
    int n = plan_wait_flags(text, c, "w", flags, 8);
    CHECK_MSG(want >= 0 && n == 1 && flags[0] == want, "core %d: %d waits before w (want flag %d of sq block %d):\n%s",
              c, n, want, c + 1, text);
  }
  sk_free(text);
  sk_program_destroy(p);
  static const char *options[] = {NULL, "early-start=2", "early-start=0", "split-mode=1"};
  for (size_t o = 0; o < COUNT(options); o++)
    for (int t = 0; t < 3; t++) {
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, options[o], 5) == 0, "interp, %d cores", t + 1);
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_JIT, options[o], 6) == 0, "jit, %d cores", t + 1);
    }
  sk_graph_destroy(g);
}

/* squeeze / unsqueeze inside a scope, views of values of the super kernel. */
static void test_dim_views_inside_super_kernel(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP16, 3, (int64_t[]){30, 1, 2000});
  CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
  sk_value s = view(g, "squeeze", unary(g, "square", "sq", x), NULL, 0);
  sk_attr u = SK_ATTR_INT("dim", -1);
  sk_value t = unary(g, "square", "sq2", view(g, "unsqueeze", s, &u, 1));
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, t, "t"));
  CHECK_OK(sk_graph_mark_output(g, s, "s"));
  for (int k = 0; k < 3; k++) {
    CHECK(rr_fused_vs_eager(g, teams[k], SK_EXECUTOR_INTERP, NULL, 7) == 0);
    CHECK(rr_fused_vs_eager(g, teams[k], SK_EXECUTOR_JIT, NULL, 8) == 0);
  }
  sk_graph_destroy(g);
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1, .pin_threads = -1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) {
      fprintf(stderr, "team: %s\n", sk_last_error());
      return 1;
    }
  }
  static const harness_case cases[] = {
      TEST_CASE(test_shape_rules),           TEST_CASE(test_slice_values_by_hand),
      TEST_CASE(test_view_chains),           TEST_CASE(test_slice_inside_super_kernel),
      TEST_CASE(test_dim_views_inside_super_kernel),
  };
  int rc = harness_run(cases, COUNT(cases));
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

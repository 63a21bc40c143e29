/* add / mul with broadcasting and with a scalar operand, square unchanged:
 * bitwise against the reference over shape pairs, every dtype and teams of
 * 1-3 cores (registered once per ISA path); values checked by hand; the
 * errors; and a broadcast operand produced inside a super kernel. */
#include <math.h>

#include "graph_builders.h"

static sk_team *teams[3];

static const sk_dtype all_dtypes[] = {SK_FP32, SK_FP16, SK_BF16, SK_INT8, SK_INT32, SK_INT64, SK_BOOL, SK_UINT8};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Compiles g for each team and executor, runs on random inputs in [lo, hi)
 * and compares with the reference. Destroys g. */
static void check_graph(sk_graph *g, double lo, double hi, uint64_t seed) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP};
  for (int t = 0; t < 3; t++)
    for (size_t e = 0; e < COUNT(executors); e++) {
      sk_program *p = NULL;
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t], .executor = executors[e]};
      CHECK_OK(sk_compile(g, &cfg, &p));
      if (!p) continue;
      rr_buffers b;
      CHECK(rr_alloc(p, &b, lo, hi, seed));
      CHECK_MSG(rr_check_program(p, teams[t], &b) == 0, "team of %d cores, executor %d", t + 1, (int)executors[e]);
      rr_free(&b);
      sk_program_destroy(p);
    }
  sk_graph_destroy(g);
}

static sk_value scalar_op(sk_graph *g, const char *type, sk_value x, double s) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr at[] = {SK_ATTR_FLOAT("scalar", s)};
  sk_value y;
  return op(g, type, NULL, in, 1, at, 1, &y, 1);
}

typedef struct shape_pair {
  int xr, yr;
  int64_t x[5], y[5];
} shape_pair;

static const shape_pair PAIRS[] = {
    {2, 2, {3, 1}, {1, 4}},          {2, 1, {5, 4}, {4}},          {1, 2, {4}, {5, 4}},
    {3, 2, {2, 3, 4}, {3, 1}},       {1, 2, {1}, {7, 9}},          {3, 3, {17, 1, 33}, {1, 65, 1}},
    {2, 2, {0, 4}, {1, 4}},          {2, 2, {6, 1}, {6, 5}},       {5, 3, {2, 1, 3, 1, 5}, {1, 4, 1}},
    {2, 1, {300, 257}, {257}},       {2, 2, {300, 1}, {300, 257}}, {0, 2, {0}, {3, 2}},
    {2, 2, {129, 130}, {129, 130}},  {3, 1, {40, 1, 600}, {1}},
};

static void test_broadcast_every_dtype(void) {
  static const char *ops[] = {"add", "mul"};
  for (size_t o = 0; o < 2; o++)
    for (size_t d = 0; d < N_DTYPES; d++)
      for (size_t k = 0; k < COUNT(PAIRS); k++) {
        const shape_pair *sp = &PAIRS[k];
        sk_graph *g;
        CHECK_OK(sk_graph_create(&g));
        sk_value x = input(g, "x", all_dtypes[d], sp->xr, sp->x), y = input(g, "y", all_dtypes[d], sp->yr, sp->y);
        CHECK_OK(sk_graph_mark_output(g, binary(g, ops[o], NULL, x, y), "out"));
        check_graph(g, -300, 300, 5 + k);
      }
}

static void test_scalar_every_dtype(void) {
  static const double float_scalars[] = {2.5, -0.1, 1e30, -0.0, NAN};
  static const double int_scalars[] = {3, -7, 0};
  static const int64_t shape[] = {37, 1001};
  for (size_t o = 0; o < 2; o++)
    for (size_t d = 0; d < N_DTYPES; d++) {
      sk_dtype dt = all_dtypes[d];
      if (dt == SK_BOOL) continue; /* takes no scalar: test_errors */
      bool is_float = dt == SK_FP32 || dt == SK_FP16 || dt == SK_BF16;
      size_t n = is_float ? COUNT(float_scalars) : COUNT(int_scalars);
      for (size_t k = 0; k < n; k++) {
        double s = is_float ? float_scalars[k] : dt == SK_UINT8 ? fabs(int_scalars[k]) : int_scalars[k];
        sk_graph *g;
        CHECK_OK(sk_graph_create(&g));
        sk_value x = input(g, "x", dt, 2, shape);
        CHECK_OK(sk_graph_mark_output(g, scalar_op(g, o ? "mul" : "add", x, s), "out"));
        check_graph(g, -300, 300, 17 + k);
      }
    }
}

/* Runs g (inputs given, one output) on 2 cores and returns the output in out. */
static void run_small(sk_graph *g, const sk_buffer *in, size_t n_in, void *out, size_t out_bytes) {
  sk_program *p = NULL;
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1]};
  CHECK_OK(sk_compile(g, &cfg, &p));
  sk_buffer o = {"out", out, out_bytes};
  if (p) CHECK_OK(sk_program_run(p, teams[1], in, n_in, &o, 1));
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* Values by hand: the rules, not just agreement with the reference. */
static void test_values_by_hand(void) {
  { /* [2, 1] + [3] -> [2, 3] */
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){2, 1}), y = input(g, "y", SK_FP32, 1, (int64_t[]){3});
    CHECK_OK(sk_graph_mark_output(g, binary(g, "add", NULL, x, y), "out"));
    float xv[2] = {1, 2}, yv[3] = {10, 20, 30}, out[6] = {0};
    sk_buffer in[] = {{"x", xv, sizeof xv}, {"y", yv, sizeof yv}};
    run_small(g, in, 2, out, sizeof out);
    const float want[6] = {11, 21, 31, 12, 22, 32};
    CHECK(memcmp(out, want, sizeof want) == 0);
  }
  { /* bool: or / and, any nonzero byte is true, results 0 / 1 */
    static const char *ops[] = {"add", "mul", "square"};
    static const uint8_t want[3][4] = {{0, 1, 1, 1}, {0, 0, 0, 1}, {0, 0, 1, 1}};
    for (int o = 0; o < 3; o++) {
      sk_graph *g;
      CHECK_OK(sk_graph_create(&g));
      sk_value x = input(g, "x", SK_BOOL, 1, (int64_t[]){4});
      sk_value z = o == 2 ? unary(g, "square", NULL, x)
                          : binary(g, ops[o], NULL, x, input(g, "y", SK_BOOL, 1, (int64_t[]){4}));
      CHECK_OK(sk_graph_mark_output(g, z, "out"));
      uint8_t xv[4] = {0, 0, 2, 255}, yv[4] = {0, 7, 0, 1}, out[4] = {9, 9, 9, 9};
      sk_buffer in[] = {{"x", xv, 4}, {"y", yv, 4}};
      run_small(g, in, o == 2 ? 1 : 2, out, 4);
      CHECK_MSG(memcmp(out, want[o], 4) == 0, "%s: %d %d %d %d", ops[o], out[0], out[1], out[2], out[3]);
    }
  }
  { /* Scalars: int8 wraps, uint8 wraps, fp16 computes in fp32 with the scalar rounded to fp32. */
    struct {
      sk_dtype dt;
      const char *op;
      double s;
      uint64_t x, want; /* element bits */
    } cases[] = {
        {SK_INT8, "add", 100, 100, (uint8_t)-56},
        {SK_INT8, "mul", -1, (uint8_t)-128, (uint8_t)-128},
        {SK_UINT8, "mul", 2, 200, 144},
        {SK_UINT8, "add", 255, 1, 0},
        {SK_INT64, "add", -9223372036854775808.0, 1, (uint64_t)INT64_MIN + 1},
        {SK_FP16, "add", 0.1, 0x3C00, sk_fp32_to_fp16(1.0f + 0.1f)},
        {SK_BF16, "mul", 3.0, 0x3F80, 0x4040},
        {SK_FP16, "mul", 1e30, 0x3C00, 0x7C00}, /* fp32 1e30 -> Inf in fp16 */
    };
    for (size_t k = 0; k < COUNT(cases); k++) {
      sk_graph *g;
      CHECK_OK(sk_graph_create(&g));
      sk_value x = input(g, "x", cases[k].dt, 1, (int64_t[]){1});
      CHECK_OK(sk_graph_mark_output(g, scalar_op(g, cases[k].op, x, cases[k].s), "out"));
      uint64_t xv = cases[k].x, out = 0;
      size_t es = sk_dtype_size(cases[k].dt);
      sk_buffer in[] = {{"x", &xv, es}};
      run_small(g, in, 1, &out, es);
      CHECK_MSG(out == cases[k].want, "case %zu: got 0x%llx, want 0x%llx", k, (unsigned long long)out,
                (unsigned long long)cases[k].want);
    }
  }
}

static sk_status add_status(sk_dtype xd, int xr, const int64_t *xs, sk_dtype yd, int yr, const int64_t *ys,
                            const sk_attr *at, size_t n_at, bool with_y) {
  sk_tensor_meta m[2] = {{xd, xr, {0}}, {yd, yr, {0}}};
  memcpy(m[0].shape, xs, sizeof(int64_t) * (size_t)xr);
  memcpy(m[1].shape, ys, sizeof(int64_t) * (size_t)yr);
  sk_value v[2] = {0, 0};
  sk_op_input in[] = {{"x", &v[0], 1}, {"y", &v[1], 1}};
  sk_op_desc d = {.op = "add", .inputs = in, .n_inputs = with_y ? 2 : 1, .attrs = at, .n_attrs = n_at};
  sk_tensor_meta out;
  size_t n = 0;
  return sk_op_infer(&d, m, with_y ? 2 : 1, &out, 1, &n);
}

static void test_errors_and_infer(void) {
  const int64_t s45[] = {4, 5}, s5[] = {5}, s54[] = {5, 4};
  sk_attr sc = SK_ATTR_FLOAT("scalar", 2.0);
  CHECK_FAILS(add_status(SK_FP32, 2, s45, SK_FP32, 2, s54, NULL, 0, true), SK_STATUS_INVALID_SHAPE, "add", "[5, 4]",
              "[4, 5]", "dimension 1: 4 vs 5");
  CHECK_FAILS(add_status(SK_FP32, 2, s45, SK_FP16, 1, s5, NULL, 0, true), SK_STATUS_INVALID_DTYPE, "add", "input y",
              "fp32", "fp16");
  CHECK_FAILS(add_status(SK_FP32, 2, s45, SK_FP32, 1, s5, &sc, 1, true), SK_STATUS_INVALID_ARGUMENT, "add",
              "both given");
  CHECK_FAILS(add_status(SK_FP32, 2, s45, SK_FP32, 1, s5, NULL, 0, false), SK_STATUS_INVALID_ARGUMENT, "add",
              "input y", "scalar");
  CHECK_FAILS(add_status(SK_BOOL, 2, s45, SK_BOOL, 1, s5, &sc, 1, false), SK_STATUS_INVALID_DTYPE, "add", "bool",
              "scalar");
  sk_attr half = SK_ATTR_FLOAT("scalar", 2.5), big = SK_ATTR_FLOAT("scalar", 128), neg = SK_ATTR_FLOAT("scalar", -1),
          nan = SK_ATTR_FLOAT("scalar", NAN), huge = SK_ATTR_FLOAT("scalar", 9223372036854775808.0);
  CHECK_FAILS(add_status(SK_INT32, 2, s45, SK_INT32, 0, s5, &half, 1, false), SK_STATUS_INVALID_ATTRIBUTE, "add",
              "scalar", "int32", "2.5");
  CHECK_FAILS(add_status(SK_INT8, 2, s45, SK_INT8, 0, s5, &big, 1, false), SK_STATUS_INVALID_ATTRIBUTE, "[-128, 127]",
              "128");
  CHECK_FAILS(add_status(SK_UINT8, 2, s45, SK_UINT8, 0, s5, &neg, 1, false), SK_STATUS_INVALID_ATTRIBUTE,
              "[0, 255]", "-1");
  CHECK_FAILS(add_status(SK_INT64, 2, s45, SK_INT64, 0, s5, &nan, 1, false), SK_STATUS_INVALID_ATTRIBUTE, "nan");
  CHECK_FAILS(add_status(SK_INT64, 2, s45, SK_INT64, 0, s5, &huge, 1, false), SK_STATUS_INVALID_ATTRIBUTE, "int64");
  /* sk_op_supported says the same through the build. */
  sk_tensor_meta b = {SK_BOOL, 1, {4}};
  sk_value v = 0;
  sk_op_input in[] = {{"x", &v, 1}};
  sk_op_desc d = {.op = "mul", .inputs = in, .n_inputs = 1, .attrs = &sc, .n_attrs = 1};
  CHECK_FAILS(sk_op_supported(&d, &b, 1), SK_STATUS_INVALID_DTYPE, "mul", "bool");
  b.dtype = SK_UINT8;
  CHECK_OK(sk_op_supported(&d, &b, 1));
  /* The inferred shape: [3, 1] + [1, 4] -> [3, 4]. */
  sk_tensor_meta m[2] = {{SK_INT8, 2, {3, 1}}, {SK_INT8, 2, {1, 4}}}, out;
  sk_value vs[2] = {0, 0};
  sk_op_input in2[] = {{"x", &vs[0], 1}, {"y", &vs[1], 1}};
  sk_op_desc d2 = {.op = "add", .inputs = in2, .n_inputs = 2};
  size_t n = 0;
  CHECK_OK(sk_op_infer(&d2, m, 2, &out, 1, &n));
  CHECK(n == 1 && out.dtype == SK_INT8 && out.rank == 2 && out.shape[0] == 3 && out.shape[1] == 4);
}

/* A broadcast operand produced inside a super kernel: a block of the
 * consumer reads the whole of it, so it must wait for every producer block
 * (the footprint keeps the whole-tensor span), on every executor. */
static void test_broadcast_inside_super_kernel(void) {
  static const char *options[] = {NULL, "early-start=2", "early-start=0"};
  for (size_t o = 0; o < COUNT(options); o++) {
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    sk_value v = input(g, "v", SK_FP32, 2, (int64_t[]){1, 40000}), x = input(g, "x", SK_FP32, 2, (int64_t[]){3, 40000});
    sk_value w = input(g, "w", SK_FP16, 1, (int64_t[]){40000});
    CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
    sk_value y = unary(g, "square", "sq", v);
    sk_value z = binary(g, "add", "bcast", x, y);
    sk_value hw = unary(g, "square", "sqw", w);
    sk_value u = binary(g, "mul", "bcast16", unary(g, "square", "sq16", input(g, "x16", SK_FP16, 2, (int64_t[]){3, 40000})), hw);
    CHECK_OK(sk_graph_end_scope(g));
    CHECK_OK(sk_graph_mark_output(g, z, "z"));
    CHECK_OK(sk_graph_mark_output(g, u, "u"));
    for (int t = 0; t < 3; t++) {
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, options[o], 3) == 0, "interp, %d cores", t + 1);
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_JIT, options[o], 4) == 0, "jit, %d cores", t + 1);
    }
    sk_graph_destroy(g);
  }
}

/* The plan itself: on 3 cores each block of add reads all of the
 * broadcast [1, 40000] operand, so each core waits for the square blocks of
 * the two others; with equal shapes a block reads only what its own core
 * wrote, and waits for nothing. */
static void test_broadcast_waits_for_whole_operand(void) {
  for (int broadcast = 0; broadcast <= 1; broadcast++) {
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    int64_t rows = broadcast ? 1 : 3;
    sk_value v = input(g, "v", SK_FP32, 2, (int64_t[]){rows, 40000}), x = input(g, "x", SK_FP32, 2, (int64_t[]){3, 40000});
    CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
    sk_value z = binary(g, "add", "bcast", x, unary(g, "square", "sq", v));
    CHECK_OK(sk_graph_end_scope(g));
    CHECK_OK(sk_graph_mark_output(g, z, "z"));
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[2], .executor = SK_EXECUTOR_INTERP};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    char *text = NULL;
    if (p) CHECK_OK(sk_program_describe(p, &text));
    for (int c = 0; text && c < 3; c++) {
      int flags[8];
      int n = plan_wait_flags(text, c, "bcast", flags, 8);
      CHECK_MSG(n == (broadcast ? 2 : 0), "core %d waits for %d flags before add:\n%s", c, n, text);
    }
    sk_free(text);
    sk_program_destroy(p);
    sk_graph_destroy(g);
  }
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
      TEST_CASE(test_broadcast_every_dtype), TEST_CASE(test_scalar_every_dtype),
      TEST_CASE(test_values_by_hand),        TEST_CASE(test_errors_and_infer),
      TEST_CASE(test_broadcast_inside_super_kernel), TEST_CASE(test_broadcast_waits_for_whole_operand),
  };
  int rc = harness_run(cases, COUNT(cases));
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

/* Every op of this release against its plain reference, bitwise, over many
 * shapes (odd sizes included), every dtype, and teams of 1, 2 and 3 cores.
 * Registered once per ISA path. */
#include "harness.h"
#include "reference_runner.h"

static sk_team *teams[3];

static const sk_dtype all_dtypes[] = {SK_FP32, SK_FP16, SK_BF16, SK_INT8, SK_INT32, SK_INT64, SK_BOOL, SK_UINT8};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])
static const sk_dtype float_dtypes[] = {SK_FP32, SK_FP16, SK_BF16};
static const int64_t odd_sizes[] = {1, 7, 17, 63, 65, 257};

/* Compiles g for each team, runs with random inputs in [lo, hi) and checks
 * against the reference. Destroys g. */
static void check_graph(sk_graph *g, double lo, double hi, uint64_t seed) {
  for (int t = 0; t < 3; t++) {
    sk_program *p = NULL;
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t]};
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) break;
    rr_buffers b;
    CHECK(rr_alloc(p, &b, lo, hi, seed));
    CHECK_MSG(rr_check_program(p, teams[t], &b) == 0, "team of %d cores", sk_team_num_cores(teams[t]));
    rr_free(&b);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

static sk_value input(sk_graph *g, const char *name, sk_dtype dt, int rank, const int64_t *shape) {
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_input(g, name, dt, rank, shape, &v));
  return v;
}

static sk_value op1(sk_graph *g, const char *op, const sk_op_input *in, size_t n_in, const sk_attr *attrs,
                    size_t n_attrs) {
  sk_value out = SK_VALUE_NONE;
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .inputs = in, .n_inputs = n_in, .attrs = attrs, .n_attrs = n_attrs};
  CHECK_OK(sk_graph_add_op(g, &d, &out, 1, NULL));
  return out;
}

static void test_elementwise(void) {
  static const char *ops[] = {"square", "add", "mul"};
  for (size_t o = 0; o < 3; o++)
    for (size_t d = 0; d < N_DTYPES; d++)
      for (size_t s = 0; s < 8; s++) {
        int64_t shape[3] = {s < 6 ? odd_sizes[s] : s == 6 ? 100003 : 3, 5, 7};
        int rank = s == 7 ? 3 : 1;
        sk_graph *g;
        CHECK_OK(sk_graph_create(&g));
        sk_value x = input(g, "x", all_dtypes[d], rank, shape), y = input(g, "y", all_dtypes[d], rank, shape);
        sk_op_input in[] = {{"x", &x, 1}, {"y", &y, 1}};
        sk_value out = op1(g, ops[o], in, o == 0 ? 1 : 2, NULL, 0);
        CHECK_OK(sk_graph_mark_output(g, out, "out"));
        check_graph(g, -300, 300, 11 + s);
      }
}

static void test_cast(void) {
  for (size_t a = 0; a < N_DTYPES; a++)
    for (size_t b = 0; b < N_DTYPES; b++)
      for (size_t s = 0; s < 7; s++) {
        int64_t n = s < 6 ? odd_sizes[s] : 50001;
        sk_graph *g;
        CHECK_OK(sk_graph_create(&g));
        sk_value x = input(g, "x", all_dtypes[a], 1, &n);
        sk_op_input in[] = {{"x", &x, 1}};
        sk_attr at[] = {SK_ATTR_INT("dtype", all_dtypes[b])};
        CHECK_OK(sk_graph_mark_output(g, op1(g, "cast", in, 1, at, 1), "y"));
        check_graph(g, -70000, 70000, 5 + s);
      }
}

static void test_concat(void) {
  for (size_t d = 0; d < N_DTYPES; d++)
    for (int dim = -3; dim < 3; dim++)
      for (size_t s = 0; s < 6; s++) {
        sk_graph *g;
        CHECK_OK(sk_graph_create(&g));
        sk_value xs[3];
        int nd = dim < 0 ? dim + 3 : dim;
        for (int i = 0; i < 3; i++) {
          int64_t shape[3] = {4, odd_sizes[s] > 65 ? 65 : odd_sizes[s], 3};
          shape[nd] = odd_sizes[(s + (size_t)i) % 6] % 70;
          char name[8] = {'x', (char)('0' + i), 0};
          xs[i] = input(g, name, all_dtypes[d], 3, shape);
        }
        sk_op_input in[] = {{"x", xs, 3}};
        sk_attr at[] = {SK_ATTR_INT("dim", dim)};
        CHECK_OK(sk_graph_mark_output(g, op1(g, "concat", in, 1, at, 1), "y"));
        check_graph(g, -100, 100, 3 + s);
      }
  /* Along dim 0 of a large tensor: one row split across the team. */
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value xs[2] = {input(g, "a", SK_INT32, 2, (int64_t[]){300, 129}), input(g, "b", SK_INT32, 2, (int64_t[]){257, 129})};
  sk_op_input in[] = {{"x", xs, 2}};
  CHECK_OK(sk_graph_mark_output(g, op1(g, "concat", in, 1, NULL, 0), "y"));
  check_graph(g, -1000, 1000, 9);
}

/* reshape as a view inside a chain, as a graph output of an input (copied),
 * and the same value marked as two outputs. */
static void test_reshape_chains(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_INT32, 2, (int64_t[]){16, 8});
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr at[] = {SK_ATTR_INTS("shape", ((int64_t[]){2, -1, 8}), 3)};
  sk_value r = op1(g, "reshape", in, 1, at, 1);
  sk_op_input in2[] = {{"x", &r, 1}};
  sk_value sq = op1(g, "square", in2, 1, NULL, 0);
  sk_op_input in3[] = {{"x", &sq, 1}};
  sk_attr at3[] = {SK_ATTR_INTS("shape", ((int64_t[]){-1}), 1)};
  sk_value flat = op1(g, "reshape", in3, 1, at3, 1);
  CHECK_OK(sk_graph_mark_output(g, flat, "flat"));
  CHECK_OK(sk_graph_mark_output(g, sq, "squared"));
  CHECK_OK(sk_graph_mark_output(g, r, "view_of_input"));
  CHECK_OK(sk_graph_mark_output(g, flat, "flat_again"));
  check_graph(g, -1000, 1000, 1);
}

static void add_gmm(sk_graph *g, const sk_value *x, const sk_value *w, const sk_value *b, size_t n, const sk_attr *at,
                    size_t n_at, size_t n_outs) {
  sk_op_input in[] = {{"x", x, n}, {"weight", w, n}, {"bias", b, b ? n : 0}};
  sk_value outs[8];
  size_t got = 0;
  sk_op_desc d = {.op = "grouped_matmul", .inputs = in, .n_inputs = b ? 3 : 2, .attrs = at, .n_attrs = n_at};
  CHECK_OK(sk_graph_add_op(g, &d, outs, 8, &got));
  CHECK(got == n_outs);
  for (size_t i = 0; i < got; i++) {
    char name[32];
    snprintf(name, sizeof name, "y%zu", i);
    CHECK_OK(sk_graph_mark_output(g, outs[i], name));
  }
}

static void test_grouped_matmul_lists(void) {
  uint64_t rng = 42;
  for (size_t d = 0; d < 3; d++)
    for (int variant = 0; variant < 12; variant++) {
      sk_dtype dt = float_dtypes[d];
      size_t groups = 1 + (size_t)variant % 3;
      sk_graph *g;
      CHECK_OK(sk_graph_create(&g));
      sk_value x[3], w[3], b[3];
      sk_dtype bias_dt = variant % 2 ? SK_FP32 : dt;
      for (size_t i = 0; i < groups; i++) {
        int64_t m = odd_sizes[rr_next(&rng) % 6], k = odd_sizes[rr_next(&rng) % 6], n = odd_sizes[rr_next(&rng) % 6];
        char name[32];
        snprintf(name, sizeof name, "x%zu", i);
        x[i] = variant == 5 ? input(g, name, dt, 3, (int64_t[]){3, m, k}) : input(g, name, dt, 2, (int64_t[]){m, k});
        snprintf(name, sizeof name, "w%zu", i);
        w[i] = input(g, name, dt, 2, (int64_t[]){k, n});
        snprintf(name, sizeof name, "b%zu", i);
        b[i] = input(g, name, bias_dt, 1, &n);
      }
      sk_attr at[] = {SK_ATTR_INT("group_type", -1), SK_ATTR_INT("output_dtype", float_dtypes[variant % 3])};
      add_gmm(g, x, w, variant % 4 == 3 ? NULL : b, groups, at, variant % 3 ? 2 : 1, groups);
      check_graph(g, -1, 1, (uint64_t)variant);
    }
}

/* The seed shapes: [64,128]x[128,64] and [256,180]x[180,320], fp16. */
static void test_grouped_matmul_seed_shapes(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x[2] = {input(g, "x0", SK_FP16, 2, (int64_t[]){64, 128}), input(g, "x1", SK_FP16, 2, (int64_t[]){256, 180})};
  sk_value w[2] = {input(g, "w0", SK_FP16, 2, (int64_t[]){128, 64}), input(g, "w1", SK_FP16, 2, (int64_t[]){180, 320})};
  sk_value b[2] = {input(g, "b0", SK_FP16, 1, (int64_t[]){64}), input(g, "b1", SK_FP16, 1, (int64_t[]){320})};
  add_gmm(g, x, w, b, 2, NULL, 0, 2);
  check_graph(g, -1, 1, 7);
}

static void test_grouped_matmul_moe(void) {
  for (int variant = 0; variant < 8; variant++) {
    sk_dtype dt = float_dtypes[variant % 3];
    int64_t m = 65, k = 17, n = 63, e = 4;
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    sk_value x = input(g, "x", dt, 2, (int64_t[]){m, k});
    sk_value w[4], b[4];
    size_t nw = 1, nb = 1;
    if (variant & 1) {
      w[0] = input(g, "w", dt, 3, (int64_t[]){e, k, n});
      b[0] = input(g, "b", SK_FP32, 2, (int64_t[]){e, n});
    } else {
      nw = nb = (size_t)e;
      for (int i = 0; i < e; i++) {
        char name[8] = {'w', (char)('0' + i), 0};
        w[i] = input(g, name, dt, 2, (int64_t[]){k, n});
        name[0] = 'b';
        b[i] = input(g, name, dt, 1, &n);
      }
    }
    int counts = variant & 2;
    int64_t cumulative[4] = {10, 10, 40, 60}, per_group[4] = {10, 0, 30, 20};
    int64_t split = variant & 4 ? 2 : 0;
    sk_attr at[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", counts ? per_group : cumulative, 4),
                    SK_ATTR_INT("group_list_type", counts ? 1 : 0), SK_ATTR_INT("split_item", split)};
    sk_op_input in[] = {{"x", &x, 1}, {"weight", w, nw}, {"bias", b, nb}};
    sk_value outs[4];
    size_t got = 0;
    sk_op_desc d = {.op = "grouped_matmul", .inputs = in, .n_inputs = 3, .attrs = at, .n_attrs = 4};
    CHECK_OK(sk_graph_add_op(g, &d, outs, 4, &got));
    CHECK(got == (split ? 1u : 4u));
    for (size_t i = 0; i < got; i++) {
      char name[8] = {'y', (char)('0' + i), 0};
      CHECK_OK(sk_graph_mark_output(g, outs[i], name));
    }
    if (split) { /* rows 60..64 are past the last group: zero */
      int64_t shape[8];
      int rank;
      CHECK_OK(sk_graph_value_info(g, outs[0], NULL, &rank, shape));
      CHECK(rank == 2 && shape[0] == m && shape[1] == n);
    }
    check_graph(g, -1, 1, (uint64_t)variant);
  }
}

/* Like check_graph, with inputs filled per dtype (int8 over its whole range,
 * int64 as packed quant scales). */
static void check_graph_quant(sk_graph *g, uint64_t seed) {
  for (int t = 0; t < 3; t++) {
    sk_program *p = NULL;
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t]};
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) break;
    rr_buffers b;
    CHECK(rr_alloc(p, &b, -1, 1, seed));
    rr_fill_by_dtype(&b, p, seed);
    CHECK_MSG(rr_check_program(p, teams[t], &b) == 0, "team of %d cores", sk_team_num_cores(teams[t]));
    rr_free(&b);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

/* The int8 path: every output dtype, scale dtype, bias kind, with and
 * without per-token scale and offset, lists and the MoE layout. */
static void test_grouped_matmul_int8(void) {
  static const sk_dtype outs[] = {SK_INT32, SK_FP16, SK_BF16, SK_FP32};
  static const sk_dtype scales[] = {SK_FP32, SK_BF16, SK_INT64};
  uint64_t rng = 9;
  for (int variant = 0; variant < 48; variant++) {
    sk_dtype out = outs[variant % 4], scale_dt = scales[(variant / 4) % 3];
    bool with_scale = out != SK_INT32 && variant % 5 != 0, with_pts = out != SK_INT32 && variant % 3 == 0;
    bool with_offset = out != SK_INT32 && variant % 7 < 3, int_bias = variant % 2 == 0, with_bias = variant % 11 != 0;
    bool moe = variant >= 36;
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    int64_t groups = moe ? 3 : 2, k = odd_sizes[rr_next(&rng) % 6], n = odd_sizes[rr_next(&rng) % 6];
    sk_value x[3], w[3], sc[3], of[3], pt[3], bs[3];
    int64_t m_total = 0, counts[3];
    for (int64_t i = 0; i < groups; i++) {
      counts[i] = odd_sizes[rr_next(&rng) % 5];
      m_total += counts[i];
    }
    for (int64_t i = 0; i < groups; i++) {
      char name[32];
      int64_t m = counts[i];
      snprintf(name, sizeof name, "x%lld", (long long)i);
      if (!moe) x[i] = input(g, name, SK_INT8, 2, (int64_t[]){m, k});
      snprintf(name, sizeof name, "w%lld", (long long)i);
      w[i] = input(g, name, SK_INT8, 2, (int64_t[]){k, n});
      snprintf(name, sizeof name, "s%lld", (long long)i);
      sc[i] = input(g, name, scale_dt, 1, (int64_t[]){variant % 2 ? n : 1});
      snprintf(name, sizeof name, "o%lld", (long long)i);
      of[i] = input(g, name, SK_FP32, 1, (int64_t[]){n});
      snprintf(name, sizeof name, "p%lld", (long long)i);
      if (!moe) pt[i] = input(g, name, SK_FP32, 1, &m);
      snprintf(name, sizeof name, "b%lld", (long long)i);
      bs[i] = input(g, name, int_bias ? SK_INT32 : SK_FP16, 1, &n);
    }
    if (moe) {
      x[0] = input(g, "x", SK_INT8, 2, (int64_t[]){m_total + 5, k});
      pt[0] = input(g, "pt", SK_FP32, 1, (int64_t[]){m_total + 5});
    }
    if (out == SK_INT32 && !int_bias) with_bias = false;
    sk_op_input in[6] = {{"x", x, moe ? 1 : (size_t)groups}, {"weight", w, (size_t)groups}};
    size_t n_in = 2;
    if (with_bias) in[n_in++] = (sk_op_input){"bias", bs, (size_t)groups};
    if (with_scale) in[n_in++] = (sk_op_input){"scale", sc, (size_t)groups};
    if (with_offset) in[n_in++] = (sk_op_input){"offset", of, (size_t)groups};
    if (with_pts) in[n_in++] = (sk_op_input){"per_token_scale", pt, moe ? 1 : (size_t)groups};
    sk_attr at[] = {SK_ATTR_INT("output_dtype", out), SK_ATTR_INT("group_type", moe ? 0 : -1),
                    SK_ATTR_INTS("group_list", counts, (size_t)groups), SK_ATTR_INT("group_list_type", 1),
                    SK_ATTR_INT("split_item", 2)};
    sk_value ys[3];
    size_t got = 0;
    sk_op_desc d = {.op = "grouped_matmul", .inputs = in, .n_inputs = n_in, .attrs = at, .n_attrs = moe ? 5 : 2};
    CHECK_OK(sk_graph_add_op(g, &d, ys, 3, &got));
    for (size_t i = 0; i < got; i++) {
      char name[8] = {'y', (char)('0' + i), 0};
      CHECK_OK(sk_graph_mark_output(g, ys[i], name));
    }
    check_graph_quant(g, (uint64_t)variant);
  }
}

/* The int8 epilogue by hand: (acc + bias_i32) * scale * pts + offset, and
 * a float bias after a packed int64 scale. */
static void test_grouped_matmul_int8_by_hand(void) {
  int8_t xd[2] = {3, -2}, wd[4] = {1, 2, 3, 4};
  int32_t bias_i[2] = {10, 20};
  float scale[2] = {0.5f, 2.0f}, pts[1] = {2.0f}, offset[2] = {1.0f, -1.0f}, bias_f[2] = {0.25f, 0.5f}, y[2];
  int64_t packed;
  float half = 0.5f, off = 7.0f;
  CHECK_OK(sk_trans_quant_param(&half, &off, 1, &packed));
  for (int form = 0; form < 2; form++) {
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    sk_value x = input(g, "x", SK_INT8, 2, (int64_t[]){1, 2}), w = input(g, "w", SK_INT8, 2, (int64_t[]){2, 2});
    sk_value b = form ? input(g, "b", SK_FP32, 1, (int64_t[]){2}) : input(g, "b", SK_INT32, 1, (int64_t[]){2});
    sk_value s = form ? input(g, "s", SK_INT64, 1, (int64_t[]){1}) : input(g, "s", SK_FP32, 1, (int64_t[]){2});
    sk_value pt = input(g, "pt", SK_FP32, 1, (int64_t[]){1}), of = input(g, "of", SK_FP32, 1, (int64_t[]){2});
    sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", &b, 1}, {"scale", &s, 1}, {"per_token_scale", &pt, 1},
                        {"offset", &of, 1}};
    sk_attr at[] = {SK_ATTR_INT("output_dtype", SK_FP32)};
    sk_value out;
    sk_op_desc d = {.op = "grouped_matmul", .inputs = in, .n_inputs = form ? 4 : 6, .attrs = at, .n_attrs = 1};
    CHECK_OK(sk_graph_add_op(g, &d, &out, 1, NULL));
    CHECK_OK(sk_graph_mark_output(g, out, "y"));
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, NULL, &p));
    sk_buffer ins[] = {{"x", xd, 2}, {"w", wd, 4}, {"b", form ? (void *)bias_f : (void *)bias_i, 8},
                       {"s", form ? (void *)&packed : (void *)scale, 8}, {"pt", pts, 4}, {"of", offset, 8}};
    sk_buffer outs[] = {{"y", y, sizeof y}};
    CHECK_OK(sk_program_run(p, teams[1], ins, 6, outs, 1));
    /* acc = [3*1 - 2*3, 3*2 - 2*4] = [-3, -2] */
    if (form == 0) CHECK_MSG(y[0] == 8.0f && y[1] == 71.0f, "got %g %g, want 8 71", y[0], y[1]);
    else CHECK_MSG(y[0] == -1.25f && y[1] == -0.5f, "got %g %g, want -1.25 -0.5", y[0], y[1]);
    sk_program_destroy(p);
    sk_graph_destroy(g);
  }
}

/* A chain of ops: the seed's middle segment on fp16 / int32 values. */
static void test_chain(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP16, 2, (int64_t[]){64, 128}), w = input(g, "w", SK_FP16, 2, (int64_t[]){128, 32});
  sk_value y;
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_op_desc d = {.op = "grouped_matmul", .inputs = in, .n_inputs = 2};
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  sk_op_input c_in[] = {{"x", &y, 1}};
  sk_attr c_at[] = {SK_ATTR_INT("dtype", SK_INT32)};
  sk_value yi = op1(g, "cast", c_in, 1, c_at, 1);
  sk_op_input sq_in[] = {{"x", &yi, 1}};
  sk_value s = op1(g, "square", sq_in, 1, NULL, 0);
  sk_value parts[2] = {s, yi};
  sk_op_input cat_in[] = {{"x", parts, 2}};
  sk_value c = op1(g, "concat", cat_in, 1, NULL, 0);
  CHECK_OK(sk_graph_mark_output(g, c, "out"));
  check_graph(g, -2, 2, 99);
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) {
      fprintf(stderr, "team: %s\n", sk_last_error());
      return 1;
    }
  }
  static const harness_case cases[] = {
      TEST_CASE(test_elementwise),         TEST_CASE(test_cast),
      TEST_CASE(test_concat),              TEST_CASE(test_reshape_chains),
      TEST_CASE(test_grouped_matmul_lists), TEST_CASE(test_grouped_matmul_seed_shapes),
      TEST_CASE(test_grouped_matmul_moe),  TEST_CASE(test_grouped_matmul_int8),
      TEST_CASE(test_grouped_matmul_int8_by_hand),
      TEST_CASE(test_chain),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

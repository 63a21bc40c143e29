/* Graph building and running: every rejection path with its status and a
 * message naming the culprit, and the graph left unchanged by a rejected
 * node. */
#include "harness.h"

static sk_graph *g;

static sk_value input(const char *name, sk_dtype dt, int rank, const int64_t *shape) {
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_input(g, name, dt, rank, shape, &v));
  return v;
}

static sk_status add(const char *op, const sk_op_input *in, size_t n_in, const sk_attr *at, size_t n_at,
                     sk_value *outs, size_t max_outs) {
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .inputs = in, .n_inputs = n_in, .attrs = at, .n_attrs = n_at};
  return sk_graph_add_op(g, &d, outs, max_outs, NULL);
}

static void setup(void) { CHECK_OK(sk_graph_create(&g)); }
static void teardown(void) { sk_graph_destroy(g); g = NULL; }

static void test_inputs_and_outputs(void) {
  setup();
  sk_value v;
  CHECK_FAILS(sk_graph_add_input(g, "a", SK_DTYPE_INVALID, 1, (int64_t[]){4}, &v), SK_STATUS_INVALID_DTYPE, "'a'");
  CHECK_FAILS(sk_graph_add_input(g, "a", SK_FP32, 9, (int64_t[9]){0}, &v), SK_STATUS_INVALID_SHAPE, "'a'", "rank 9");
  CHECK_FAILS(sk_graph_add_input(g, "a", SK_FP32, 2, (int64_t[]){4, -1}, &v), SK_STATUS_INVALID_SHAPE, "dimension 1", "-1");
  CHECK_FAILS(sk_graph_add_input(g, "", SK_FP32, 1, (int64_t[]){4}, &v), SK_STATUS_INVALID_ARGUMENT, "empty");
  CHECK_FAILS(sk_graph_add_input(g, NULL, SK_FP32, 1, (int64_t[]){4}, &v), SK_STATUS_INVALID_ARGUMENT, "name");
  CHECK_FAILS(sk_graph_add_input(g, "big", SK_FP32, 2, (int64_t[]){1ll << 40, 1ll << 20}, &v), SK_STATUS_INVALID_SHAPE, "2^48");
  sk_value a = input("a", SK_FP32, 1, (int64_t[]){4});
  CHECK_FAILS(sk_graph_add_input(g, "a", SK_FP32, 1, (int64_t[]){4}, &v), SK_STATUS_INVALID_ARGUMENT, "'a'", "twice");
  CHECK_FAILS(sk_graph_mark_output(g, 99, "y"), SK_STATUS_NOT_FOUND, "'y'", "99");
  CHECK_OK(sk_graph_mark_output(g, a, "y"));
  CHECK_FAILS(sk_graph_mark_output(g, a, "y"), SK_STATUS_INVALID_ARGUMENT, "'y'", "twice");
  CHECK_FAILS(sk_graph_value_info(g, 7, NULL, NULL, NULL), SK_STATUS_NOT_FOUND, "value 7");
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  CHECK_OK(sk_graph_value_info(g, a, &dt, &rank, shape));
  CHECK(dt == SK_FP32 && rank == 1 && shape[0] == 4);
  teardown();
}

static void test_node_descriptor_errors(void) {
  setup();
  sk_value x = input("x", SK_FP32, 2, (int64_t[]){4, 8}), y;
  sk_op_input in[] = {{"x", &x, 1}};
  CHECK_FAILS(add("no_such_op", in, 1, NULL, 0, &y, 1), SK_STATUS_NOT_FOUND, "no_such_op");
  sk_op_input bad_slot[] = {{"z", &x, 1}};
  CHECK_FAILS(add("square", bad_slot, 1, NULL, 0, &y, 1), SK_STATUS_INVALID_ARGUMENT, "square", "'z'", "accepted: x");
  sk_value missing = 1234;
  sk_op_input bad_value[] = {{"x", &missing, 1}};
  CHECK_FAILS(add("square", bad_value, 1, NULL, 0, &y, 1), SK_STATUS_NOT_FOUND, "square", "x[0]", "1234");
  sk_op_input twice[] = {{"x", &x, 1}, {"x", &x, 1}};
  CHECK_FAILS(add("square", twice, 2, NULL, 0, &y, 1), SK_STATUS_INVALID_ARGUMENT, "'x' given twice");
  CHECK_FAILS(add("square", NULL, 0, NULL, 0, &y, 1), SK_STATUS_INVALID_ARGUMENT, "square", "input x", "expected 1 tensor, got 0");
  sk_attr unknown[] = {SK_ATTR_INT("alpha", 2)};
  CHECK_FAILS(add("square", in, 1, unknown, 1, &y, 1), SK_STATUS_INVALID_ATTRIBUTE, "square", "unknown attribute 'alpha'");
  sk_attr wrong_kind[] = {SK_ATTR_FLOAT("dim", 1.5)};
  sk_value xs[2] = {x, x};
  sk_op_input cat[] = {{"x", xs, 2}};
  CHECK_FAILS(add("concat", cat, 1, wrong_kind, 1, &y, 1), SK_STATUS_INVALID_ATTRIBUTE, "concat", "dim", "expected kind int, got float");
  CHECK_FAILS(add("square", in, 1, NULL, 0, NULL, 0), SK_STATUS_INVALID_ARGUMENT, "1 outputs", "room for 0");
  /* A named node's messages use its name. */
  sk_op_desc named = {.op = "square", .name = "my_square", .inputs = bad_slot, .n_inputs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &named, &y, 1, NULL), SK_STATUS_INVALID_ARGUMENT, "my_square");
  /* None of the rejected nodes changed the graph: the next value is 1. */
  CHECK_OK(add("square", in, 1, NULL, 0, &y, 1));
  CHECK(y == 1);
  teardown();
}

static void test_elementwise_errors(void) {
  setup();
  sk_value a = input("a", SK_FP32, 2, (int64_t[]){4, 8}), b = input("b", SK_FP16, 2, (int64_t[]){4, 8}),
           c = input("c", SK_FP32, 2, (int64_t[]){4, 9}), y;
  sk_op_input dt_mismatch[] = {{"x", &a, 1}, {"y", &b, 1}};
  CHECK_FAILS(add("add", dt_mismatch, 2, NULL, 0, &y, 1), SK_STATUS_INVALID_DTYPE, "add", "input y", "fp32", "fp16");
  sk_op_input shape_mismatch[] = {{"x", &a, 1}, {"y", &c, 1}};
  CHECK_FAILS(add("mul", shape_mismatch, 2, NULL, 0, &y, 1), SK_STATUS_INVALID_SHAPE, "mul", "input y", "[4, 8]", "[4, 9]");
  sk_op_input x_only[] = {{"x", &a, 1}};
  CHECK_FAILS(add("cast", x_only, 1, NULL, 0, &y, 1), SK_STATUS_INVALID_ATTRIBUTE, "cast", "dtype is required");
  sk_attr bad_dtype[] = {SK_ATTR_INT("dtype", 42)};
  CHECK_FAILS(add("cast", x_only, 1, bad_dtype, 1, &y, 1), SK_STATUS_INVALID_ATTRIBUTE, "cast", "got 42");
  teardown();
}

static void test_reshape_concat_errors(void) {
  setup();
  sk_value a = input("a", SK_INT32, 2, (int64_t[]){4, 8}), b = input("b", SK_FP32, 2, (int64_t[]){4, 8}),
           c = input("c", SK_INT32, 2, (int64_t[]){5, 9}), y;
  sk_op_input in[] = {{"x", &a, 1}};
  CHECK_FAILS(add("reshape", in, 1, NULL, 0, &y, 1), SK_STATUS_INVALID_ATTRIBUTE, "reshape", "shape is required");
  sk_attr two_infer[] = {SK_ATTR_INTS("shape", ((int64_t[]){-1, -1}), 2)};
  CHECK_FAILS(add("reshape", in, 1, two_infer, 1, &y, 1), SK_STATUS_INVALID_SHAPE, "more than one -1");
  sk_attr wrong_count[] = {SK_ATTR_INTS("shape", ((int64_t[]){5, 7}), 2)};
  CHECK_FAILS(add("reshape", in, 1, wrong_count, 1, &y, 1), SK_STATUS_INVALID_SHAPE, "[4, 8]", "32 elements", "35");
  sk_attr no_fit[] = {SK_ATTR_INTS("shape", ((int64_t[]){5, -1}), 2)};
  CHECK_FAILS(add("reshape", in, 1, no_fit, 1, &y, 1), SK_STATUS_INVALID_SHAPE, "cannot infer -1");
  sk_attr negative[] = {SK_ATTR_INTS("shape", ((int64_t[]){-4, -8}), 2)};
  CHECK_FAILS(add("reshape", in, 1, negative, 1, &y, 1), SK_STATUS_INVALID_SHAPE, "dimension 0", "-4");
  sk_value mixed[2] = {a, b};
  sk_op_input cat_dt[] = {{"x", mixed, 2}};
  CHECK_FAILS(add("concat", cat_dt, 1, NULL, 0, &y, 1), SK_STATUS_INVALID_DTYPE, "concat", "x[1]", "int32", "fp32");
  sk_value shapes[2] = {a, c};
  sk_op_input cat_shape[] = {{"x", shapes, 2}};
  CHECK_FAILS(add("concat", cat_shape, 1, NULL, 0, &y, 1), SK_STATUS_INVALID_SHAPE, "concat", "x[1]", "[5, 9]", "[4, 8]");
  sk_attr bad_dim[] = {SK_ATTR_INT("dim", 2)};
  CHECK_FAILS(add("concat", in, 1, bad_dim, 1, &y, 1), SK_STATUS_INVALID_ATTRIBUTE, "dim", "[-2, 1]", "got 2");
  sk_op_input empty[] = {{"x", NULL, 0}};
  CHECK_FAILS(add("concat", empty, 1, NULL, 0, &y, 1), SK_STATUS_INVALID_ARGUMENT, "non-empty list");
  teardown();
}

static void test_grouped_matmul_errors(void) {
  setup();
  sk_value x0 = input("x0", SK_FP16, 2, (int64_t[]){64, 128}), x1 = input("x1", SK_FP16, 2, (int64_t[]){256, 181});
  sk_value w0 = input("w0", SK_FP16, 2, (int64_t[]){128, 64}), w1 = input("w1", SK_FP16, 2, (int64_t[]){180, 320});
  sk_value wf = input("wf", SK_FP32, 2, (int64_t[]){128, 64}), b0 = input("b0", SK_FP16, 1, (int64_t[]){65});
  sk_value x8 = input("x8", SK_INT8, 2, (int64_t[]){4, 4}), xr1 = input("xr1", SK_FP16, 1, (int64_t[]){128});
  sk_value w3 = input("w3", SK_FP16, 3, (int64_t[]){4, 128, 64});
  sk_value outs[4];
  sk_value xs[2] = {x0, x1}, ws[2] = {w0, w1};
  sk_op_input k_mismatch[] = {{"x", xs, 2}, {"weight", ws, 2}};
  CHECK_FAILS(add("grouped_matmul", k_mismatch, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_SHAPE, "grouped_matmul", "x[1]",
              "180", "181");
  sk_op_input len_mismatch[] = {{"x", xs, 2}, {"weight", ws, 1}};
  CHECK_FAILS(add("grouped_matmul", len_mismatch, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_ARGUMENT, "weight",
              "list of 2", "got 1");
  sk_op_input empty[] = {{"x", NULL, 0}, {"weight", ws, 1}};
  CHECK_FAILS(add("grouped_matmul", empty, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_ARGUMENT, "input x", "non-empty");
  sk_op_input dtype_mix[] = {{"x", &x0, 1}, {"weight", &wf, 1}};
  CHECK_FAILS(add("grouped_matmul", dtype_mix, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_DTYPE, "weight[0]", "fp16", "fp32");
  sk_op_input rank1[] = {{"x", &xr1, 1}, {"weight", &w0, 1}};
  CHECK_FAILS(add("grouped_matmul", rank1, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_SHAPE, "x[0]", "rank >= 2");
  sk_op_input bad_bias[] = {{"x", &x0, 1}, {"weight", &w0, 1}, {"bias", &b0, 1}};
  CHECK_FAILS(add("grouped_matmul", bad_bias, 3, NULL, 0, outs, 4), SK_STATUS_INVALID_SHAPE, "bias[0]", "[64]", "[65]");
  /* The int8 path's own rules. */
  sk_value w8 = input("w8", SK_INT8, 2, (int64_t[]){4, 6}), s6 = input("s6", SK_FP32, 1, (int64_t[]){6});
  sk_value s5 = input("s5", SK_FP32, 1, (int64_t[]){5}), s16 = input("s16", SK_FP16, 1, (int64_t[]){6});
  sk_value pt4 = input("pt4", SK_FP32, 1, (int64_t[]){4}), pt3 = input("pt3", SK_FP32, 1, (int64_t[]){3});
  sk_value bi6 = input("bi6", SK_INT32, 1, (int64_t[]){6}), bf6 = input("bf6", SK_FP32, 1, (int64_t[]){6});
  sk_op_input int8_mixed[] = {{"x", &x8, 1}, {"weight", &w0, 1}};
  CHECK_FAILS(add("grouped_matmul", int8_mixed, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_DTYPE, "weight[0]",
              "int8 (as x[0])", "fp16");
  sk_op_input int8_ok[] = {{"x", &x8, 1}, {"weight", &w8, 1}, {"scale", &s6, 1}, {"per_token_scale", &pt4, 1}};
  CHECK_FAILS(add("grouped_matmul", int8_ok, 4, NULL, 0, outs, 4), SK_STATUS_INVALID_ARGUMENT, "scale",
              "not used with int32 output");
  sk_attr to_fp16[] = {SK_ATTR_INT("output_dtype", SK_FP16)};
  CHECK_OK(add("grouped_matmul", int8_ok, 4, to_fp16, 1, outs, 4));
  sk_attr to_int8[] = {SK_ATTR_INT("output_dtype", SK_INT8)};
  CHECK_FAILS(add("grouped_matmul", int8_ok, 4, to_int8, 1, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "output_dtype",
              "int32, fp16, bf16 or fp32", "int8");
  sk_op_input bad_scale[] = {{"x", &x8, 1}, {"weight", &w8, 1}, {"scale", &s5, 1}};
  CHECK_FAILS(add("grouped_matmul", bad_scale, 3, to_fp16, 1, outs, 4), SK_STATUS_INVALID_SHAPE, "scale[0]", "[6]",
              "[5]");
  sk_op_input fp16_scale[] = {{"x", &x8, 1}, {"weight", &w8, 1}, {"scale", &s16, 1}};
  CHECK_FAILS(add("grouped_matmul", fp16_scale, 3, to_fp16, 1, outs, 4), SK_STATUS_INVALID_DTYPE, "scale[0]",
              "fp32, bf16 or int64", "fp16");
  sk_op_input bad_pts[] = {{"x", &x8, 1}, {"weight", &w8, 1}, {"per_token_scale", &pt3, 1}};
  CHECK_FAILS(add("grouped_matmul", bad_pts, 3, to_fp16, 1, outs, 4), SK_STATUS_INVALID_SHAPE, "per_token_scale[0]",
              "[4]", "[3]");
  sk_op_input float_bias_int32[] = {{"x", &x8, 1}, {"weight", &w8, 1}, {"bias", &bf6, 1}};
  CHECK_FAILS(add("grouped_matmul", float_bias_int32, 3, NULL, 0, outs, 4), SK_STATUS_INVALID_DTYPE, "bias[0]",
              "int32 with int32 output", "fp32");
  sk_op_input int_bias[] = {{"x", &x8, 1}, {"weight", &w8, 1}, {"bias", &bi6, 1}};
  CHECK_OK(add("grouped_matmul", int_bias, 3, NULL, 0, outs, 4));
  sk_op_input scale[] = {{"x", &x0, 1}, {"weight", &w0, 1}, {"scale", &s6, 1}};
  CHECK_FAILS(add("grouped_matmul", scale, 3, NULL, 0, outs, 4), SK_STATUS_INVALID_ARGUMENT, "scale", "int8 path");
  sk_op_input ok[] = {{"x", &x0, 1}, {"weight", &w0, 1}};
  sk_attr bad_type[] = {SK_ATTR_INT("group_type", 2)};
  CHECK_FAILS(add("grouped_matmul", ok, 2, bad_type, 1, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "group_type", "got 2");
  sk_attr list_with_lists[] = {SK_ATTR_INTS("group_list", ((int64_t[]){64}), 1)};
  CHECK_FAILS(add("grouped_matmul", ok, 2, list_with_lists, 1, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "group_list", "absent");
  sk_attr bad_out[] = {SK_ATTR_INT("output_dtype", SK_INT32)};
  CHECK_FAILS(add("grouped_matmul", ok, 2, bad_out, 1, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "output_dtype", "int32");
  /* group_type 0 */
  sk_op_input moe[] = {{"x", &x0, 1}, {"weight", &w3, 1}};
  sk_attr no_list[] = {SK_ATTR_INT("group_type", 0)};
  CHECK_FAILS(add("grouped_matmul", moe, 2, no_list, 1, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "needs the group_list attribute or the group_list input");
  sk_attr decreasing[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", ((int64_t[]){10, 5, 20, 30}), 4)};
  CHECK_FAILS(add("grouped_matmul", moe, 2, decreasing, 2, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "non-decreasing",
              "entry 1", "5");
  sk_attr past_m[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", ((int64_t[]){10, 20, 30, 65}), 4)};
  CHECK_FAILS(add("grouped_matmul", moe, 2, past_m, 2, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "entry 3", "65", "M = 64");
  sk_attr counts_past_m[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", ((int64_t[]){30, 30, 30, 0}), 4),
                             SK_ATTR_INT("group_list_type", 1)};
  CHECK_FAILS(add("grouped_matmul", moe, 2, counts_past_m, 3, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "entry 2", "90");
  sk_attr wrong_len[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", ((int64_t[]){10, 20}), 2)};
  CHECK_FAILS(add("grouped_matmul", moe, 2, wrong_len, 2, outs, 4), SK_STATUS_INVALID_ATTRIBUTE, "expected 4 entries", "got 2");
  sk_attr good[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", ((int64_t[]){10, 20, 30, 40}), 4)};
  CHECK_FAILS(add("grouped_matmul", moe, 2, good, 2, outs, 2), SK_STATUS_INVALID_ARGUMENT, "4 outputs", "room for 2");
  CHECK_OK(add("grouped_matmul", moe, 2, good, 2, outs, 4));
  /* More than 1024 groups. */
  sk_value many[1025];
  for (int i = 0; i < 1025; i++) many[i] = x0;
  sk_op_input too_many[] = {{"x", many, 1025}, {"weight", many, 1025}};
  CHECK_FAILS(add("grouped_matmul", too_many, 2, NULL, 0, outs, 4), SK_STATUS_INVALID_ARGUMENT, "1025", "1024");
  teardown();
}

static void test_compile_and_run_errors(void) {
  setup();
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, NULL, &p), SK_STATUS_INVALID_STATE, "no outputs");
  sk_value x = input("x", SK_FP32, 1, (int64_t[]){4}), y;
  sk_op_input in[] = {{"x", &x, 1}};
  CHECK_OK(add("square", in, 1, NULL, 0, &y, 1));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_compile_config small = {.struct_size = 1};
  CHECK_FAILS(sk_compile(g, &small, &p), SK_STATUS_INVALID_ARGUMENT, "struct_size");
  sk_compile_config bad_exec = {.struct_size = sizeof bad_exec, .executor = (sk_executor)99};
  CHECK_FAILS(sk_compile(g, &bad_exec, &p), SK_STATUS_INVALID_ARGUMENT, "executor = 99");
  sk_compile_config ref = {.struct_size = sizeof ref, .executor = SK_EXECUTOR_REFERENCE};
  sk_program *pr = NULL;
  CHECK_OK(sk_compile(g, &ref, &pr));
  CHECK_OK(sk_compile(g, NULL, &p));
  teardown(); /* the program outlives its graph */
  {
    float xr[4] = {-1, 0.5f, 3, 4}, yr[4] = {0};
    sk_buffer ri[] = {{"x", xr, sizeof xr}}, ro[] = {{"y", yr, sizeof yr}};
    CHECK_OK(sk_program_run(pr, NULL, ri, 1, ro, 1));
    CHECK(yr[0] == 1 && yr[1] == 0.25f && yr[2] == 9 && yr[3] == 16);
    sk_program_destroy(pr);
  }
  float xd[4] = {1, 2, 3, 4}, yd[4] = {0}, wrong[5];
  sk_buffer ins[] = {{"x", xd, sizeof xd}}, outs[] = {{"y", yd, sizeof yd}};
  CHECK_OK(sk_program_run(p, NULL, ins, 1, outs, 1));
  CHECK(yd[0] == 1 && yd[1] == 4 && yd[2] == 9 && yd[3] == 16);
  sk_buffer bad_size[] = {{"x", wrong, sizeof wrong}};
  CHECK_FAILS(sk_program_run(p, NULL, bad_size, 1, outs, 1), SK_STATUS_INVALID_ARGUMENT, "input 'x'", "expected 16 bytes",
              "got 20");
  sk_buffer bad_name[] = {{"q", xd, sizeof xd}};
  CHECK_FAILS(sk_program_run(p, NULL, bad_name, 1, outs, 1), SK_STATUS_NOT_FOUND, "no input named 'q'");
  CHECK_FAILS(sk_program_run(p, NULL, NULL, 0, outs, 1), SK_STATUS_INVALID_ARGUMENT, "input 'x' is not bound");
  sk_buffer twice[] = {{"x", xd, sizeof xd}, {"x", xd, sizeof xd}};
  CHECK_FAILS(sk_program_run(p, NULL, twice, 2, outs, 1), SK_STATUS_INVALID_ARGUMENT, "bound twice");
  sk_buffer aliased[] = {{"y", xd, sizeof xd}};
  CHECK_FAILS(sk_program_run(p, NULL, ins, 1, aliased, 1), SK_STATUS_INVALID_ARGUMENT, "output 'y' overlaps input 'x'");
  CHECK(sk_program_num_inputs(p) == 1 && sk_program_num_outputs(p) == 1);
  const char *name;
  CHECK_OK(sk_program_output_info(p, 0, &name, NULL, NULL, NULL));
  CHECK(strcmp(name, "y") == 0);
  CHECK_FAILS(sk_program_input_info(p, 3, &name, NULL, NULL, NULL), SK_STATUS_NOT_FOUND, "input 3");
  sk_program_destroy(p);
  sk_program_destroy(NULL);
  sk_graph_destroy(NULL);
}

/* An op whose outputs have no element does nothing and needs no scratch,
 * however large its other dims (found by fuzz_graph: dequant_swiglu_quant
 * of fp32 [0, 2^37] sized a per-core workspace by 2^37 and failed to
 * allocate terabytes). Run eager and fused, with 0-byte buffers. */
static void test_empty_outputs_need_nothing(void) {
  sk_graph *graph;
  CHECK_OK(sk_graph_create(&graph));
  sk_value x, out[2] = {SK_VALUE_NONE, SK_VALUE_NONE};
  CHECK_OK(sk_graph_add_input(graph, "x", SK_FP32, 2, (int64_t[]){0, (int64_t)1 << 37}, &x));
  CHECK_OK(sk_graph_begin_scope(graph, "empty", NULL));
  sk_op_input slot = {"x", &x, 1};
  sk_attr mode = SK_ATTR_INT("quant_mode", 1);
  sk_op_desc d = {.struct_size = sizeof d, .op = "dequant_swiglu_quant", .inputs = &slot, .n_inputs = 1,
                  .attrs = &mode, .n_attrs = 1};
  CHECK_OK(sk_graph_add_op(graph, &d, out, 2, NULL));
  CHECK_OK(sk_graph_end_scope(graph));
  CHECK_OK(sk_graph_mark_output(graph, out[0], "q"));
  CHECK_OK(sk_graph_mark_output(graph, out[1], "scale"));
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2};
  CHECK_OK(sk_team_create(&tc, &team));
  const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_REFERENCE};
  for (size_t e = 0; e < 3; e++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executors[e]};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(graph, &cfg, &p));
    char dummy[1];
    sk_buffer in = {"x", dummy, 0};
    sk_buffer outs[2] = {{"q", dummy, 0}, {"scale", dummy, 0}};
    CHECK_MSG(sk_program_run(p, team, &in, 1, outs, 2) == SK_STATUS_OK, "executor %zu: %s", e, sk_last_error());
    sk_program_destroy(p);
  }
  sk_team_destroy(team);
  sk_graph_destroy(graph);
}

TEST_MAIN(TEST_CASE(test_empty_outputs_need_nothing), TEST_CASE(test_inputs_and_outputs), TEST_CASE(test_node_descriptor_errors), TEST_CASE(test_elementwise_errors),
          TEST_CASE(test_reshape_concat_errors), TEST_CASE(test_grouped_matmul_errors),
          TEST_CASE(test_compile_and_run_errors))

/* A catalogue of invalid calls through the public API (issue 8, item 3): one
 * table row per distinct mistake, each with the status it must return and
 * fragments sk_last_error() must contain (the culprit: op, input, attribute,
 * option key or argument, and expected vs actual where the library says
 * them). Every row sets up the valid state it needs, makes one bad call and
 * frees what it created, so the test is clean under AddressSanitizer.
 * The runner prints "catalogue: N entries" and fails below 80 rows. */
#include <math.h>

#include "harness.h"

/* ---- Row plumbing -------------------------------------------------------- */

/* A fresh graph per row (created and destroyed by the runner). */
static sk_graph *G;
/* sk_last_error() right after the bad call (cleanup calls may reset it). */
static char MSG[2048];

static sk_status grab(sk_status s) {
  snprintf(MSG, sizeof MSG, "%s", sk_last_error());
  return s;
}

static sk_value in(const char *name, sk_dtype dt, int rank, const int64_t *shape) {
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_input(G, name, dt, rank, shape, &v));
  return v;
}

/* Adds an op to G and grabs the message. */
static sk_status op(const char *type, const sk_op_input *ins, size_t n_in, const sk_attr *at, size_t n_at) {
  sk_op_desc d = {.struct_size = sizeof d, .op = type, .inputs = ins, .n_inputs = n_in, .attrs = at, .n_attrs = n_at};
  sk_value outs[8];
  return grab(sk_graph_add_op(G, &d, outs, 8, NULL));
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})

/* Common fixtures. */
static sk_value f32(const char *name, int64_t r, int64_t c) { return in(name, SK_FP32, 2, SH(r, c)); }

/* A graph y = square(x), x fp32 [4], optionally inside scope "s". */
static void square_graph(int scoped) {
  sk_value x = in("x", SK_FP32, 1, SH(4)), y;
  if (scoped) CHECK_OK(sk_graph_begin_scope(G, "s", NULL));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_op_desc d = {.op = "square", .inputs = i, .n_inputs = 1};
  CHECK_OK(sk_graph_add_op(G, &d, &y, 1, NULL));
  if (scoped) CHECK_OK(sk_graph_end_scope(G));
  CHECK_OK(sk_graph_mark_output(G, y, "y"));
}

static sk_program *square_program(int scoped, const sk_team *team, sk_executor ex, int profile) {
  square_graph(scoped);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = ex, .profile = profile};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(G, &cfg, &p));
  return p;
}

static sk_team *team_of(int n) {
  sk_team_config c = {.struct_size = sizeof c, .num_cores = n, .pin_threads = -1};
  sk_team *t = NULL;
  CHECK_OK(sk_team_create(&c, &t));
  return t;
}

static void noop_kernel(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)args, (void)block, (void)n_blocks, (void)ws, (void)ctx;
}
static void barrier_kernel(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)args, (void)block, (void)n_blocks, (void)ws;
  sk_kernel_barrier(ctx);
}
static void noop_block(void *arg, int64_t block, int core) { (void)arg, (void)block, (void)core; }

static sk_kernel_desc kdesc(const char *name) {
  sk_kernel_desc d = {.struct_size = sizeof d, .name = name, .entry = noop_kernel, .type = SK_KERNEL_TYPE_VECTOR,
                      .block_count = 4, .n_params = 0};
  return d;
}

/* Registered once, on first use. */
static sk_kernel *K_PLAIN, *K_BARRIER4, *K_BARRIER1, *K_UNFUSABLE, *K_PARAMS;
static sk_status rejecting_infer(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                                 size_t n_in, sk_dtype *out_dtypes, int *out_ranks,
                                 int64_t (*out_shapes)[SK_MAX_RANK], size_t *n_out, void *user) {
  (void)in_dtypes, (void)in_ranks, (void)in_shapes, (void)n_in, (void)out_dtypes, (void)out_ranks, (void)out_shapes;
  (void)n_out, (void)user;
  return SK_STATUS_INVALID_SHAPE;
}
static sk_kernel *K_REJECT;
static void kernels(void) {
  if (K_PLAIN) return;
  sk_kernel_desc d = kdesc("bi_plain");
  CHECK_OK(sk_kernel_register(&d, &K_PLAIN));
  d = kdesc("bi_barrier4");
  d.entry = barrier_kernel, d.barriers_per_block = 1;
  CHECK_OK(sk_kernel_register(&d, &K_BARRIER4));
  d = kdesc("bi_barrier1");
  d.entry = barrier_kernel, d.barriers_per_block = 1, d.block_count = 1;
  CHECK_OK(sk_kernel_register(&d, &K_BARRIER1));
  d = kdesc("bi_unfusable");
  d.unfusable = 1;
  CHECK_OK(sk_kernel_register(&d, &K_UNFUSABLE));
  d = kdesc("bi_params");
  d.n_params = 3;
  CHECK_OK(sk_kernel_register(&d, &K_PARAMS));
  d = kdesc("bi_reject");
  d.n_params = 3, d.infer = rejecting_infer;
  CHECK_OK(sk_kernel_register(&d, &K_REJECT));
}

/* ---- A. NULL pointers ---------------------------------------------------- */

static sk_status null_graph_out(void) { return grab(sk_graph_create(NULL)); }
static sk_status null_graph_add_input(void) {
  sk_value v;
  return grab(sk_graph_add_input(NULL, "x", SK_FP32, 1, SH(4), &v));
}
static sk_status null_shape(void) {
  sk_value v;
  return grab(sk_graph_add_input(G, "x", SK_FP32, 2, NULL, &v));
}
static sk_status null_value_out(void) { return grab(sk_graph_add_input(G, "x", SK_FP32, 1, SH(4), NULL)); }
static sk_status null_graph_add_op(void) {
  sk_op_desc d = {.op = "square"};
  sk_value y;
  return grab(sk_graph_add_op(NULL, &d, &y, 1, NULL));
}
static sk_status null_desc(void) {
  sk_value y;
  return grab(sk_graph_add_op(G, NULL, &y, 1, NULL));
}
static sk_status null_desc_op(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  return op(NULL, i, 1, NULL, 0);
}
static sk_status null_slot_name(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{NULL, &x, 1}};
  return op("square", i, 1, NULL, 0);
}
static sk_status null_slot_values(void) {
  (void)f32("x", 4, 8);
  sk_op_input i[] = {{"x", NULL, 1}};
  return op("square", i, 1, NULL, 0);
}
static sk_status null_inputs_array(void) {
  (void)f32("x", 4, 8);
  return op("square", NULL, 1, NULL, 0);
}
static sk_status null_attrs_array(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  return op("cast", i, 1, NULL, 1);
}
static sk_status null_attr_name(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT(NULL, SK_FP16)};
  return op("cast", i, 1, a, 1);
}
static sk_status null_attr_ints(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INTS("shape", NULL, 2)};
  return op("reshape", i, 1, a, 1);
}
static sk_status null_outputs(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_op_desc d = {.op = "square", .inputs = i, .n_inputs = 1};
  return grab(sk_graph_add_op(G, &d, NULL, 1, NULL));
}
static sk_status null_mark_output_name(void) { return grab(sk_graph_mark_output(G, f32("x", 4, 8), NULL)); }
static sk_status null_mark_output_graph(void) { return grab(sk_graph_mark_output(NULL, 0, "y")); }
static sk_status null_scope_name(void) { return grab(sk_graph_begin_scope(G, NULL, NULL)); }
static sk_status null_scope_graph(void) { return grab(sk_graph_begin_scope(NULL, "s", NULL)); }
static sk_status null_end_scope_graph(void) { return grab(sk_graph_end_scope(NULL)); }
static sk_status null_set_stream_graph(void) { return grab(sk_graph_set_stream(NULL, 1)); }
static sk_status null_event_out(void) { return grab(sk_graph_record_event(G, NULL)); }
static sk_status null_wait_graph(void) { return grab(sk_graph_wait_event(NULL, 0)); }
static sk_status null_value_info_graph(void) { return grab(sk_graph_value_info(NULL, 0, NULL, NULL, NULL)); }
static sk_status null_render_buf(void) { return grab(sk_options_render("", NULL, 16, NULL)); }
static sk_status null_trans_scale(void) {
  int64_t out[2];
  return grab(sk_trans_quant_param(NULL, NULL, 2, out));
}
static sk_status null_trans_out(void) {
  float s[2] = {1, 2};
  return grab(sk_trans_quant_param(s, NULL, 2, NULL));
}
static sk_status null_team_out(void) { return grab(sk_team_create(NULL, NULL)); }
static sk_status null_launch_team(void) { return grab(sk_team_launch(NULL, noop_block, NULL, 4)); }
static sk_status null_launch_fn(void) {
  sk_team *t = team_of(1);
  sk_status s = grab(sk_team_launch(t, NULL, NULL, 4));
  sk_team_destroy(t);
  return s;
}
static sk_status null_compile_graph(void) {
  sk_program *p;
  return grab(sk_compile(NULL, NULL, &p));
}
static sk_status null_program_out(void) {
  square_graph(0);
  return grab(sk_compile(G, NULL, NULL));
}
static sk_status null_run_program(void) { return grab(sk_program_run(NULL, NULL, NULL, 0, NULL, 0)); }
static sk_status null_run_inputs(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  float y[4];
  sk_buffer o[] = {{"y", y, sizeof y}};
  sk_status s = grab(sk_program_run(p, NULL, NULL, 1, o, 1));
  sk_program_destroy(p);
  return s;
}
static sk_status null_buffer_name(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  float x[4] = {0}, y[4];
  sk_buffer i[] = {{NULL, x, sizeof x}}, o[] = {{"y", y, sizeof y}};
  sk_status s = grab(sk_program_run(p, NULL, i, 1, o, 1));
  sk_program_destroy(p);
  return s;
}
static sk_status null_buffer_data(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  float x[4] = {0};
  sk_buffer i[] = {{"x", x, sizeof x}}, o[] = {{"y", NULL, 16}};
  sk_status s = grab(sk_program_run(p, NULL, i, 1, o, 1));
  sk_program_destroy(p);
  return s;
}
/* A float buffer one byte off its alignment (issue 15, item 9: UBSan
 * reported the misaligned loads in the kernels; now refused up front). */
static float ALIGN_STORE[8];
static void *misaligned(void) { return (char *)ALIGN_STORE + 1; }
static sk_status misaligned_run_input(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  float y[4];
  sk_buffer i[] = {{"x", misaligned(), 16}}, o[] = {{"y", y, sizeof y}};
  sk_status s = grab(sk_program_run(p, NULL, i, 1, o, 1));
  sk_program_destroy(p);
  return s;
}
static sk_status misaligned_bind_output(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  sk_status s = grab(sk_program_bind(p, SK_IO_OUTPUT, 0, (char *)ALIGN_STORE + 2, 16));
  sk_program_destroy(p);
  return s;
}
static sk_status misaligned_borrowed_constant(void) {
  sk_value v;
  return grab(sk_graph_add_constant(G, "w", SK_FP32, 1, SH(4), misaligned(), SK_CONSTANT_BORROW, &v));
}
static sk_status null_describe_text(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  sk_status s = grab(sk_program_describe(p, NULL));
  sk_program_destroy(p);
  return s;
}
static sk_status null_describe_program(void) {
  char *t;
  return grab(sk_program_describe(NULL, &t));
}
static sk_status null_jit_source_out(void) {
  sk_program *p = square_program(1, NULL, SK_EXECUTOR_INTERP, 0);
  sk_status s = grab(sk_program_jit_source(p, NULL, NULL));
  sk_program_destroy(p);
  return s;
}
static sk_status null_profile_dir(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 1);
  sk_status s = grab(sk_program_write_profile(p, NULL));
  sk_program_destroy(p);
  return s;
}
static sk_status null_input_info_program(void) { return grab(sk_program_input_info(NULL, 0, NULL, NULL, NULL, NULL)); }
static sk_status null_cache_path_buf(void) { return grab(sk_jit_cache_path(NULL, 64)); }
static sk_status null_kernel_desc(void) {
  sk_kernel *k;
  return grab(sk_kernel_register(NULL, &k));
}
static sk_status null_kernel_out(void) {
  sk_kernel_desc d = kdesc("bi_null_out");
  return grab(sk_kernel_register(&d, NULL));
}
static sk_status null_kernel_name(void) {
  sk_kernel_desc d = kdesc(NULL);
  sk_kernel *k;
  return grab(sk_kernel_register(&d, &k));
}
static sk_status null_kernel_entry(void) {
  sk_kernel_desc d = kdesc("bi_null_entry");
  d.entry = NULL;
  sk_kernel *k;
  return grab(sk_kernel_register(&d, &k));
}
static sk_status null_fused_kernels(void) {
  sk_fused_kernel *fk;
  return grab(sk_fused_kernel_create(NULL, 1, NULL, NULL, &fk));
}
static sk_status null_fused_out(void) {
  kernels();
  return grab(sk_fused_kernel_create(&K_PLAIN, 1, NULL, NULL, NULL));
}
static sk_status null_fused_kernel_entry(void) {
  kernels();
  sk_kernel *ks[2] = {K_PLAIN, NULL};
  sk_fused_kernel *fk;
  return grab(sk_fused_kernel_create(ks, 2, NULL, NULL, &fk));
}
static sk_status null_fused_launch(void) { return grab(sk_fused_kernel_launch(NULL, NULL)); }
static sk_status null_fused_describe_text(void) {
  kernels();
  sk_fused_kernel *fk = NULL;
  CHECK_OK(sk_fused_kernel_create(&K_PLAIN, 1, NULL, NULL, &fk));
  sk_status s = grab(sk_fused_kernel_describe(fk, NULL));
  sk_fused_kernel_destroy(fk);
  return s;
}
static sk_status null_fused_args(void) {
  kernels();
  sk_fused_kernel *fk = NULL;
  CHECK_OK(sk_fused_kernel_create(&K_PARAMS, 1, NULL, NULL, &fk));
  sk_status s = grab(sk_fused_kernel_launch(fk, NULL));
  sk_fused_kernel_destroy(fk);
  return s;
}

/* ---- B. Wrong dtypes ----------------------------------------------------- */

static sk_status dt_mul_int(void) {
  sk_value a = in("a", SK_INT32, 1, SH(4)), b = in("b", SK_INT64, 1, SH(4));
  sk_op_input i[] = {{"x", &a, 1}, {"y", &b, 1}};
  return op("mul", i, 2, NULL, 0);
}
static sk_status dt_concat_half(void) {
  sk_value xs[3] = {in("a", SK_FP16, 1, SH(4)), in("b", SK_FP16, 1, SH(4)), in("c", SK_BF16, 1, SH(4))};
  sk_op_input i[] = {{"x", xs, 3}};
  return op("concat", i, 1, NULL, 0);
}
static sk_status dt_gmm_int32(void) {
  sk_value x = in("x", SK_INT32, 2, SH(4, 8)), w = in("w", SK_INT32, 2, SH(8, 4));
  sk_op_input i[] = {{"x", &x, 1}, {"weight", &w, 1}};
  return op("grouped_matmul", i, 2, NULL, 0);
}
static sk_status dt_gmm_bias(void) {
  sk_value x = in("x", SK_FP16, 2, SH(4, 8)), w = in("w", SK_FP16, 2, SH(8, 4)), b = in("b", SK_BF16, 1, SH(4));
  sk_op_input i[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", &b, 1}};
  return op("grouped_matmul", i, 3, NULL, 0);
}
static sk_status dt_moe_x(void) {
  sk_value x = in("x", SK_INT32, 2, SH(4, 16));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_gating_topk", i, 1, a, 1);
}
static sk_status dt_moe_bias(void) {
  sk_value x = in("x", SK_FP16, 2, SH(4, 16)), b = in("b", SK_FP32, 1, SH(16));
  sk_op_input i[] = {{"x", &x, 1}, {"bias", &b, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_gating_topk", i, 2, a, 1);
}
/* rms_norm, add_rms_norm, swiglu */
static sk_status rms(sk_dtype xd, const int64_t *xs, int xr, sk_dtype gd, int64_t h, double eps) {
  sk_value x = in("x", xd, xr, xs), g = in("g", gd, 1, SH(h));
  sk_op_input i[] = {{"x", &x, 1}, {"gamma", &g, 1}};
  sk_attr a[] = {SK_ATTR_FLOAT("epsilon", eps)};
  return op("rms_norm", i, 2, a, 1);
}
static sk_status rms_int_x(void) { return rms(SK_INT32, SH(4, 8), 2, SK_INT32, 8, 1e-6); }
static sk_status rms_gamma_dtype(void) { return rms(SK_FP16, SH(4, 8), 2, SK_BF16, 8, 1e-6); }
static sk_status rms_gamma_len(void) { return rms(SK_FP16, SH(4, 8), 2, SK_FP16, 7, 1e-6); }
static sk_status rms_empty_h(void) { return rms(SK_FP32, SH(4, 0), 2, SK_FP32, 0, 1e-6); }
static sk_status rms_neg_eps(void) { return rms(SK_FP32, SH(4, 8), 2, SK_FP32, 8, -1e-3); }
static sk_status rms_nan_eps(void) { return rms(SK_FP32, SH(4, 8), 2, SK_FP32, 8, NAN); }
static sk_status add_rms_x2(void) {
  sk_value a = in("a", SK_BF16, 2, SH(4, 8)), b = in("b", SK_BF16, 2, SH(4, 9)), g = in("g", SK_BF16, 1, SH(8));
  sk_op_input i[] = {{"x1", &a, 1}, {"x2", &b, 1}, {"gamma", &g, 1}};
  return op("add_rms_norm", i, 3, NULL, 0);
}
static sk_status swiglu(sk_dtype dt, const int64_t *shape, int rank, int64_t dim) {
  sk_value x = in("x", dt, rank, shape);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("dim", dim)};
  return op("swiglu", i, 1, a, 1);
}
static sk_status swiglu_odd(void) { return swiglu(SK_FP16, SH(4, 7), 2, -1); }
static sk_status swiglu_int(void) { return swiglu(SK_INT8, SH(4, 8), 2, -1); }
static sk_status swiglu_dim(void) { return swiglu(SK_FP32, SH(4, 8), 2, 2); }
static sk_status swiglu_scalar(void) { return swiglu(SK_FP32, SH(1), 0, -1); }
/* moe_init_routing, moe_finalize_routing */
static sk_status init_routing(sk_dtype id_dt, int64_t id_rows, const sk_attr *a, size_t n_a) {
  sk_value x = in("x", SK_FP16, 2, SH(6, 8)), e = in("e", id_dt, 2, SH(id_rows, 2));
  sk_op_input i[] = {{"x", &x, 1}, {"expert_idx", &e, 1}};
  return op("moe_init_routing", i, 2, a, n_a);
}
static sk_status ir_ids_int64(void) { return init_routing(SK_INT64, 6, (sk_attr[]){SK_ATTR_INT("expert_num", 4)}, 1); }
static sk_status ir_ids_rows(void) { return init_routing(SK_INT32, 5, (sk_attr[]){SK_ATTR_INT("expert_num", 4)}, 1); }
static sk_status ir_no_experts(void) { return init_routing(SK_INT32, 6, NULL, 0); }
static sk_status ir_range(void) {
  static const int64_t r[] = {3, 9};
  return init_routing(SK_INT32, 6, (sk_attr[]){SK_ATTR_INT("expert_num", 4), SK_ATTR_INTS("active_expert_range", r, 2)}, 2);
}
static sk_status ir_static(void) {
  return init_routing(SK_INT32, 6, (sk_attr[]){SK_ATTR_INT("expert_num", 4), SK_ATTR_INT("quant_mode", 0)}, 2);
}
static sk_status fr_bias_no_expert(void) {
  sk_value r = in("r", SK_FP32, 2, SH(8, 4)), m = in("m", SK_INT32, 1, SH(8)), b = in("b", SK_FP32, 2, SH(3, 4));
  sk_op_input i[] = {{"expanded_permuted_rows", &r, 1}, {"expanded_src_to_dst_row", &m, 1}, {"bias", &b, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_finalize_routing", i, 3, a, 1);
}
static sk_status fr_map_len(void) {
  sk_value r = in("r", SK_FP32, 2, SH(8, 4)), m = in("m", SK_INT32, 1, SH(7));
  sk_op_input i[] = {{"expanded_permuted_rows", &r, 1}, {"expanded_src_to_dst_row", &m, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_finalize_routing", i, 2, a, 1);
}
static sk_status fr_skip_dtype(void) {
  sk_value r = in("r", SK_FP16, 2, SH(8, 4)), m = in("m", SK_INT32, 1, SH(8)), s1 = in("s", SK_FP32, 2, SH(4, 4));
  sk_op_input i[] = {{"expanded_permuted_rows", &r, 1}, {"expanded_src_to_dst_row", &m, 1}, {"skip1", &s1, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_finalize_routing", i, 3, a, 1);
}
/* scales [N, 0] gives K = 0: refused, never divided by (found by the
 * schema-driven fuzzer, fuzz/regressions/fuzz_graph/finalize-k0-division). */
static sk_status fr_scales_k0(void) {
  sk_value r = in("r", SK_FP32, 2, SH(8, 4)), m = in("m", SK_INT32, 1, SH(8)), s = in("s", SK_FP32, 2, SH(8, 0));
  sk_op_input i[] = {{"expanded_permuted_rows", &r, 1}, {"expanded_src_to_dst_row", &m, 1}, {"scales", &s, 1}};
  return op("moe_finalize_routing", i, 3, NULL, 0);
}
/* linear, moe_gating_topk_softmax */
static sk_status linear_op(sk_dtype wd, int64_t wn, int64_t wk, int64_t bias_n) {
  sk_value x = in("x", SK_FP32, 2, SH(4, 8)), w = in("w", wd, 2, SH(wn, wk)), b = in("b", SK_FP32, 1, SH(bias_n > 0 ? bias_n : 1));
  sk_op_input i[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", &b, 1}};
  return op("linear", i, bias_n > 0 ? 3 : 2, NULL, 0);
}
static sk_status lin_w_k(void) { return linear_op(SK_FP32, 6, 7, 0); }
static sk_status lin_w_dtype(void) { return linear_op(SK_FP16, 6, 8, 0); }
static sk_status lin_bias(void) { return linear_op(SK_FP32, 6, 8, 5); }
static sk_status gts_k(void) {
  sk_value x = in("x", SK_FP16, 2, SH(4, 8));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 9)};
  return op("moe_gating_topk_softmax", i, 1, a, 1);
}
static sk_status dt_dsq_x(void) {
  sk_value x = in("x", SK_INT8, 2, SH(4, 16)), qs = in("qs", SK_FP32, 1, SH(1));
  sk_op_input i[] = {{"x", &x, 1}, {"quant_scale", &qs, 1}};
  return op("dequant_swiglu_quant", i, 2, NULL, 0);
}
static sk_status dt_dsq_weight_scale(void) {
  sk_value x = in("x", SK_INT32, 2, SH(4, 16)), ws = in("ws", SK_FP16, 1, SH(16)), qs = in("qs", SK_FP32, 1, SH(1));
  sk_op_input i[] = {{"x", &x, 1}, {"weight_scale", &ws, 1}, {"quant_scale", &qs, 1}};
  return op("dequant_swiglu_quant", i, 3, NULL, 0);
}
static sk_status dt_dsq_group_index(void) {
  sk_value x = in("x", SK_FP32, 2, SH(4, 16)), gi = in("gi", SK_INT32, 1, SH(2));
  sk_op_input i[] = {{"x", &x, 1}, {"group_index", &gi, 1}};
  sk_attr a[] = {SK_ATTR_INT("quant_mode", 1)};
  return op("dequant_swiglu_quant", i, 2, a, 1);
}
static sk_status dt_qmm_x1(void) {
  sk_value x1 = in("x1", SK_FP16, 2, SH(4, 8)), x2 = in("x2", SK_INT8, 2, SH(8, 4)), s = in("s", SK_FP32, 1, SH(4));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}, {"scale", &s, 1}};
  return op("quant_matmul", i, 3, NULL, 0);
}
static sk_status dt_qmm_scale(void) {
  sk_value x1 = in("x1", SK_INT8, 2, SH(4, 8)), x2 = in("x2", SK_INT8, 2, SH(8, 4)), s = in("s", SK_FP16, 1, SH(4));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}, {"scale", &s, 1}};
  return op("quant_matmul", i, 3, NULL, 0);
}
static sk_status dt_qmm_bias(void) {
  sk_value x1 = in("x1", SK_INT8, 2, SH(4, 8)), x2 = in("x2", SK_INT8, 2, SH(8, 4)), s = in("s", SK_FP32, 1, SH(4)),
           b = in("b", SK_FP32, 1, SH(4));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}, {"scale", &s, 1}, {"bias", &b, 1}};
  return op("quant_matmul", i, 4, NULL, 0); /* int8 output takes an int32 bias only */
}
static sk_status dt_add_bool_scalar(void) {
  sk_value x = in("x", SK_BOOL, 1, SH(4));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_FLOAT("scalar", 1.0)};
  return op("add", i, 1, a, 1);
}
static sk_status dt_add_input_invalid(void) {
  sk_value v;
  return grab(sk_graph_add_input(G, "q", SK_DTYPE_COUNT_, 1, SH(4), &v));
}

/* ---- C. Shape mismatches ------------------------------------------------- */

static sk_status sh_add_transposed(void) {
  sk_value a = f32("a", 4, 8), b = f32("b", 8, 4);
  sk_op_input i[] = {{"x", &a, 1}, {"y", &b, 1}};
  return op("add", i, 2, NULL, 0);
}
static sk_status sh_mul_broadcast(void) {
  sk_value a = in("a", SK_FP16, 3, SH(2, 3, 4)), b = in("b", SK_FP16, 2, SH(2, 4));
  sk_op_input i[] = {{"x", &a, 1}, {"y", &b, 1}};
  return op("mul", i, 2, NULL, 0);
}
static sk_status sh_concat_rank(void) {
  sk_value xs[2] = {f32("a", 4, 8), in("b", SK_FP32, 1, SH(8))};
  sk_op_input i[] = {{"x", xs, 2}};
  return op("concat", i, 1, NULL, 0);
}
static sk_status sh_gmm_weight_rank1(void) {
  sk_value x = f32("x", 4, 8), w = in("w", SK_FP32, 1, SH(8));
  sk_op_input i[] = {{"x", &x, 1}, {"weight", &w, 1}};
  return op("grouped_matmul", i, 2, NULL, 0);
}
static sk_status sh_moe_rank3(void) {
  sk_value x = in("x", SK_FP32, 3, SH(2, 4, 16));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_gating_topk", i, 1, a, 1);
}
static sk_status sh_moe_too_many_experts(void) {
  sk_value x = f32("x", 4, 4096);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_gating_topk", i, 1, a, 1);
}
static sk_status sh_moe_bias(void) {
  sk_value x = f32("x", 4, 16), b = in("b", SK_FP32, 1, SH(17));
  sk_op_input i[] = {{"x", &x, 1}, {"bias", &b, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  return op("moe_gating_topk", i, 2, a, 1);
}
static sk_status sh_dsq_odd(void) {
  sk_value x = f32("x", 4, 15);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("quant_mode", 1)};
  return op("dequant_swiglu_quant", i, 1, a, 1);
}
static sk_status sh_dsq_rank1(void) {
  sk_value x = in("x", SK_FP32, 1, SH(16));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("quant_mode", 1)};
  return op("dequant_swiglu_quant", i, 1, a, 1);
}
static sk_status sh_dsq_activation_scale(void) {
  sk_value x = in("x", SK_INT32, 2, SH(4, 16)), as = in("as", SK_FP32, 1, SH(5));
  sk_op_input i[] = {{"x", &x, 1}, {"activation_scale", &as, 1}};
  sk_attr a[] = {SK_ATTR_INT("quant_mode", 1)};
  return op("dequant_swiglu_quant", i, 2, a, 1);
}
static sk_status sh_dsq_quant_scale(void) {
  sk_value x = f32("x", 4, 16), qs = in("qs", SK_FP32, 1, SH(9));
  sk_op_input i[] = {{"x", &x, 1}, {"quant_scale", &qs, 1}};
  sk_attr a[] = {SK_ATTR_INT("quant_mode", 1)};
  return op("dequant_swiglu_quant", i, 2, a, 1);
}
static sk_status sh_qmm_k(void) {
  sk_value x1 = in("x1", SK_INT8, 2, SH(4, 8)), x2 = in("x2", SK_INT8, 2, SH(9, 4));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}};
  sk_attr a[] = {SK_ATTR_INT("output_dtype", SK_INT32)};
  return op("quant_matmul", i, 2, a, 1);
}
static sk_status sh_qmm_batch(void) {
  sk_value x1 = in("x1", SK_INT8, 3, SH(2, 4, 8)), x2 = in("x2", SK_INT8, 3, SH(3, 8, 4));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}};
  sk_attr a[] = {SK_ATTR_INT("output_dtype", SK_INT32)};
  return op("quant_matmul", i, 2, a, 1);
}
static sk_status sh_qmm_k_limit(void) {
  sk_value x1 = in("x1", SK_INT8, 2, SH(1, 65536)), x2 = in("x2", SK_INT8, 2, SH(65536, 1));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}};
  sk_attr a[] = {SK_ATTR_INT("output_dtype", SK_INT32)};
  return op("quant_matmul", i, 2, a, 1);
}
static sk_status sh_qmm_scale(void) {
  sk_value x1 = in("x1", SK_INT8, 2, SH(4, 8)), x2 = in("x2", SK_INT8, 2, SH(8, 4)), s = in("s", SK_FP32, 1, SH(3));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}, {"scale", &s, 1}};
  return op("quant_matmul", i, 3, NULL, 0);
}

/* ---- D. Element-count overflow ------------------------------------------- */

static sk_status ov_input_product(void) {
  sk_value v;
  return grab(sk_graph_add_input(G, "huge", SK_FP32, 3, SH(1 << 20, 1 << 20, 1 << 20), &v));
}
static sk_status ov_input_wraps(void) {
  sk_value v;
  return grab(sk_graph_add_input(G, "wrap", SK_INT8, 2, SH(INT64_MAX / 2 + 1, 4), &v));
}
/* Regression: reshape once multiplied the target dims without an overflow
 * check, so (2^61 + 4) * 8 = 2^64 + 32 wrapped to 32 = 4 * 8 and the call
 * succeeded with a [2305843009213693956, 8] view of a 32-element tensor.
 * It must fail naming the size limit, as sk_graph_add_input does. */
static sk_status ov_reshape_huge(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INTS("shape", SH((1ll << 61) + 4, 8), 2)};
  return op("reshape", i, 1, a, 1);
}
static sk_status ov_concat_total(void) {
  /* Each input is exactly 2^48 bytes (the limit); the concatenation is twice that. */
  sk_value xs[2] = {in("a", SK_FP32, 2, SH(1ll << 46, 1)), in("b", SK_FP32, 2, SH(1ll << 46, 1))};
  sk_op_input i[] = {{"x", xs, 2}};
  return op("concat", i, 1, NULL, 0);
}

/* ---- E. Attributes out of range ------------------------------------------ */

static sk_status moe_with(sk_attr extra, int with_k) {
  sk_value x = f32("x", 4, 16);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[2] = {SK_ATTR_INT("k", 2), extra};
  return with_k ? op("moe_gating_topk", i, 1, a, 2) : op("moe_gating_topk", i, 1, &a[1], 1);
}
static sk_status at_moe_k_missing(void) { return moe_with(SK_ATTR_INT("renorm", 0), 0); }
static sk_status at_moe_k_zero(void) { return moe_with(SK_ATTR_INT("k", 0), 0); }
static sk_status at_moe_k_big(void) { return moe_with(SK_ATTR_INT("k", 17), 0); }
static sk_status at_moe_k_group(void) {
  sk_value x = f32("x", 4, 16);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2), SK_ATTR_INT("group_count", 4), SK_ATTR_INT("k_group", 5)};
  return op("moe_gating_topk", i, 1, a, 3);
}
static sk_status at_moe_group_count_zero(void) { return moe_with(SK_ATTR_INT("group_count", 0), 1); }
static sk_status at_moe_group_count_divide(void) { return moe_with(SK_ATTR_INT("group_count", 3), 1); }
static sk_status at_moe_norm_type(void) { return moe_with(SK_ATTR_INT("norm_type", 2), 1); }
static sk_status at_moe_renorm(void) { return moe_with(SK_ATTR_INT("renorm", -1), 1); }
static sk_status at_moe_out_flag(void) { return moe_with(SK_ATTR_INT("out_flag", 3), 1); }
static sk_status at_moe_select_mode(void) { return moe_with(SK_ATTR_INT("group_select_mode", 2), 1); }
static sk_status at_moe_mode1_small_groups(void) {
  sk_value x = f32("x", 4, 16);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2), SK_ATTR_INT("group_count", 8), SK_ATTR_INT("k_group", 4),
                 SK_ATTR_INT("group_select_mode", 1)};
  return op("moe_gating_topk", i, 1, a, 4);
}
static sk_status at_moe_eps_negative(void) { return moe_with(SK_ATTR_FLOAT("eps", -1e-3), 1); }
static sk_status at_moe_eps_nan(void) { return moe_with(SK_ATTR_FLOAT("eps", NAN), 1); }
static sk_status dsq_with(sk_attr a) {
  sk_value x = f32("x", 4, 16);
  sk_op_input i[] = {{"x", &x, 1}};
  return op("dequant_swiglu_quant", i, 1, &a, 1);
}
static sk_status at_dsq_quant_mode(void) { return dsq_with(SK_ATTR_INT("quant_mode", 2)); }
static sk_status at_dsq_activate_left(void) { return dsq_with(SK_ATTR_INT("activate_left", 2)); }
static sk_status at_dsq_static_no_scale(void) { return dsq_with(SK_ATTR_INT("quant_mode", 0)); }
static sk_status at_qmm_output_dtype(void) {
  sk_value x1 = in("x1", SK_INT8, 2, SH(4, 8)), x2 = in("x2", SK_INT8, 2, SH(8, 4)), s = in("s", SK_FP32, 1, SH(4));
  sk_op_input i[] = {{"x1", &x1, 1}, {"x2", &x2, 1}, {"scale", &s, 1}};
  sk_attr a[] = {SK_ATTR_INT("output_dtype", SK_BOOL)};
  return op("quant_matmul", i, 3, a, 1);
}
static sk_status gmm_with(const sk_attr *a, size_t n, int moe) {
  sk_value x = f32("x", 8, 4), w = moe ? in("w", SK_FP32, 3, SH(2, 4, 6)) : f32("w", 4, 6);
  sk_op_input i[] = {{"x", &x, 1}, {"weight", &w, 1}};
  return op("grouped_matmul", i, 2, a, n);
}
static sk_status at_gmm_group_type(void) { return gmm_with((sk_attr[]){SK_ATTR_INT("group_type", -2)}, 1, 0); }
static sk_status at_gmm_split_item(void) { return gmm_with((sk_attr[]){SK_ATTR_INT("split_item", 4)}, 1, 0); }
static sk_status at_gmm_split_item_2_no_groups(void) {
  return gmm_with((sk_attr[]){SK_ATTR_INT("split_item", 2)}, 1, 0);
}
static sk_status at_gmm_group_list_type(void) {
  return gmm_with((sk_attr[]){SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", SH(4, 8), 2),
                              SK_ATTR_INT("group_list_type", 2)},
                  3, 1);
}
static sk_status at_gmm_negative_count(void) {
  return gmm_with((sk_attr[]){SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", SH(-1, 4), 2),
                              SK_ATTR_INT("group_list_type", 1)},
                  3, 1);
}
static sk_status at_concat_dim(void) {
  sk_value xs[2] = {f32("a", 4, 8), f32("b", 4, 8)};
  sk_op_input i[] = {{"x", xs, 2}};
  sk_attr a[] = {SK_ATTR_INT("dim", -3)};
  return op("concat", i, 1, a, 1);
}
static sk_status at_cast_invalid(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("dtype", SK_DTYPE_INVALID)};
  return op("cast", i, 1, a, 1);
}
static sk_status at_cast_kind(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_FLOAT("dtype", 2.0)};
  return op("cast", i, 1, a, 1);
}
static sk_status at_add_scalar_fraction(void) {
  sk_value x = in("x", SK_INT32, 1, SH(4));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_FLOAT("scalar", 0.5)};
  return op("add", i, 1, a, 1);
}
static sk_status at_mul_scalar_range(void) {
  sk_value x = in("x", SK_UINT8, 1, SH(4));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_FLOAT("scalar", 256)};
  return op("mul", i, 1, a, 1);
}
static sk_status at_add_y_and_scalar(void) {
  sk_value x = f32("x", 4, 8), y = f32("y", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}, {"y", &y, 1}};
  sk_attr a[] = {SK_ATTR_FLOAT("scalar", 1.0)};
  return op("add", i, 2, a, 1);
}
static sk_status at_add_no_y(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  return op("add", i, 1, NULL, 0);
}
static sk_status at_slice_rank0(void) {
  sk_value x = in("x", SK_FP32, 0, NULL);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("start", 1)};
  return op("slice", i, 1, a, 1);
}
static sk_status at_squeeze_dims_range(void) {
  sk_value x = f32("x", 1, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INTS("dims", SH(2), 1)};
  return op("squeeze", i, 1, a, 1);
}
static sk_status at_squeeze_dims_twice(void) {
  sk_value x = f32("x", 1, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INTS("dims", SH(1, -1), 2)};
  return op("squeeze", i, 1, a, 1);
}
static sk_status at_unsqueeze_dim(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("dim", -4)};
  return op("unsqueeze", i, 1, a, 1);
}
static sk_status at_unsqueeze_missing(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  return op("unsqueeze", i, 1, NULL, 0);
}
static sk_status sh_unsqueeze_rank8(void) {
  sk_value x = in("x", SK_FP32, 8, SH(1, 2, 1, 2, 1, 2, 1, 2));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("dim", 0)};
  return op("unsqueeze", i, 1, a, 1);
}
static sk_status at_reshape_rank9(void) {
  sk_value x = in("x", SK_FP32, 1, SH(1));
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INTS("shape", SH(1, 1, 1, 1, 1, 1, 1, 1, 1), 9)};
  return op("reshape", i, 1, a, 1);
}
static sk_status at_reshape_zero_infer(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INTS("shape", SH(0, -1), 2)};
  return op("reshape", i, 1, a, 1);
}
static sk_status at_attr_twice(void) {
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("dtype", SK_FP16), SK_ATTR_INT("dtype", SK_BF16)};
  return op("cast", i, 1, a, 2);
}
static sk_status at_moe_too_few_outputs(void) {
  sk_value x = f32("x", 4, 16), y;
  sk_op_input i[] = {{"x", &x, 1}};
  sk_attr a[] = {SK_ATTR_INT("k", 2)};
  sk_op_desc d = {.op = "moe_gating_topk", .inputs = i, .n_inputs = 1, .attrs = a, .n_attrs = 1};
  return grab(sk_graph_add_op(G, &d, &y, 1, NULL));
}
static sk_status at_trans_nan_offset(void) {
  float s[3] = {1, 2, 3}, o[3] = {0, NAN, 0};
  int64_t p[3];
  return grab(sk_trans_quant_param(s, o, 3, p));
}

/* ---- F. Option strings --------------------------------------------------- */

static const char *OPT;
static sk_status opt_validate(void) { return grab(sk_options_validate(OPT)); }
#define OPTION_ROW(fn, str) \
  static sk_status fn(void) { OPT = (str); return opt_validate(); }
OPTION_ROW(op_empty_key, "=1")
OPTION_ROW(op_empty_value, "early-start=")
OPTION_ROW(op_empty_quoted_value, "profiling=\"\"")
OPTION_ROW(op_unknown_key, "early-strat=1")
OPTION_ROW(op_repeated_key, "split-mode=4:split-mode=8")
OPTION_ROW(op_repeated_alias, "early_start=0:early-start=1")
OPTION_ROW(op_func_align, "func-align=1")
OPTION_ROW(op_split_mode, "split-mode=65")
OPTION_ROW(op_early_start, "early-start=3")
OPTION_ROW(op_preload, "preload-code=all")
OPTION_ROW(op_strict, "strict-scope-check=x")
OPTION_ROW(op_aic_sign, "debug-aic-num=-1")
OPTION_ROW(op_int_too_big, "profiling=2147483648")
OPTION_ROW(op_hex, "split-mode=0x10")
OPTION_ROW(op_flag_dash, "compile-options=-O2,g")
OPTION_ROW(op_flag_empty_item, "compile-options=-O2,,-g")
OPTION_ROW(op_bad_regex, "dcci-after-kernel-end=add,(")
OPTION_ROW(op_regex_repeats, "dcci-after-kernel-end=a++++++++++++++++++++")
OPTION_ROW(op_regex_interval, "dcci-before-kernel-start=(a{1000}){1000}")
OPTION_ROW(op_regex_nested, "dcci-disable-on-kernel=((((((a+)+)+)+)+)+)")
/* Three repetitions, within the limits: glibc took longer than 30 s to
 * match it against "grouped_matmul_dequant" (exponential backtracking). */
OPTION_ROW(op_regex_backref, "dcci-before-kernel-start=((.*)*\\2\\2)*")
OPTION_ROW(op_regex_count, "dcci-after-kernel-end=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q")
OPTION_ROW(op_stray_quote, "compile-options=\"-Wl,-rpath,/a")
static sk_status op_render_invalid(void) {
  char buf[64];
  size_t need = 99;
  return grab(sk_options_render("stream-fusion=2", buf, sizeof buf, &need));
}
static sk_status op_scope_options(void) { return grab(sk_graph_begin_scope(G, "s", "feed-sync-all=yes")); }
static sk_status op_global_options(void) {
  square_graph(1);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_INTERP, .default_options = "debug_sync_all=9"};
  sk_program *p = NULL;
  return grab(sk_compile(G, &cfg, &p));
}
/* Checked even where no scope reads them: no scope, the eager executor. */
static sk_status op_global_options_unused(void) {
  square_graph(0);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_EAGER, .default_options = "nonsense=1"};
  sk_program *p = NULL;
  return grab(sk_compile(G, &cfg, &p));
}

/* ---- G. API misuse ------------------------------------------------------- */

static sk_status mu_end_twice(void) {
  CHECK_OK(sk_graph_begin_scope(G, "s", NULL));
  square_graph(0);
  CHECK_OK(sk_graph_end_scope(G));
  return grab(sk_graph_end_scope(G));
}
static sk_status mu_nest(void) {
  CHECK_OK(sk_graph_begin_scope(G, "outer", NULL));
  return grab(sk_graph_begin_scope(G, "inner", NULL));
}
static sk_status mu_scope_reopened_other_options(void) {
  CHECK_OK(sk_graph_begin_scope(G, "s", "early-start=0"));
  square_graph(0);
  CHECK_OK(sk_graph_end_scope(G));
  return grab(sk_graph_begin_scope(G, "s", "early-start=2"));
}
static sk_status mu_compile_open_scope(void) {
  CHECK_OK(sk_graph_begin_scope(G, "open", NULL));
  square_graph(0);
  sk_program *p = NULL;
  return grab(sk_compile(G, NULL, &p));
}
/* Scope s = {a1, a2} with a2 needing "outside", which needs a1: no single
 * launch can run s, and strict-scope-check=abort makes that an error. */
static sk_value named_op(const char *type, const char *name, sk_value x, sk_value y) {
  sk_op_input i[] = {{"x", &x, 1}, {"y", &y, 1}};
  sk_op_desc d = {.op = type, .name = name, .inputs = i, .n_inputs = y == SK_VALUE_NONE ? 1 : 2};
  sk_value out = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_op(G, &d, &out, 1, NULL));
  return out;
}
static sk_status mu_scope_not_convex(void) {
  sk_value x = in("x", SK_FP32, 1, SH(4));
  CHECK_OK(sk_graph_begin_scope(G, "s", "strict-scope-check=abort"));
  sk_value a1 = named_op("square", "a1", x, SK_VALUE_NONE);
  CHECK_OK(sk_graph_end_scope(G));
  sk_value b = named_op("square", "outside", a1, SK_VALUE_NONE);
  CHECK_OK(sk_graph_begin_scope(G, "s", NULL));
  sk_value a2 = named_op("add", "a2", a1, b);
  CHECK_OK(sk_graph_end_scope(G));
  CHECK_OK(sk_graph_mark_output(G, a2, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  return grab(sk_compile(G, &cfg, &p));
}
static sk_status run_square(const sk_buffer *i, size_t ni, const sk_buffer *o, size_t no) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  sk_status s = grab(sk_program_run(p, NULL, i, ni, o, no));
  sk_program_destroy(p);
  return s;
}
static float BX[4], BY[4], BBIG[8];
static sk_status mu_run_unbound_output(void) { return run_square((sk_buffer[]){{"x", BX, sizeof BX}}, 1, NULL, 0); }
static sk_status mu_run_misnamed_output(void) {
  return run_square((sk_buffer[]){{"x", BX, sizeof BX}}, 1, (sk_buffer[]){{"z", BY, sizeof BY}}, 1);
}
static sk_status mu_run_output_size(void) {
  return run_square((sk_buffer[]){{"x", BX, sizeof BX}}, 1, (sk_buffer[]){{"y", BBIG, sizeof BBIG}}, 1);
}
static sk_status mu_run_input_as_output(void) {
  return run_square((sk_buffer[]){{"x", BX, sizeof BX}}, 1,
                    (sk_buffer[]){{"y", BY, sizeof BY}, {"x", BBIG, sizeof BX}}, 2);
}
static sk_status mu_team_mismatch(void) {
  sk_team *t2 = team_of(2), *t1 = team_of(1);
  sk_program *p = square_program(1, t2, SK_EXECUTOR_INTERP, 0);
  sk_status s = grab(sk_program_run(p, t1, (sk_buffer[]){{"x", BX, sizeof BX}}, 1,
                                    (sk_buffer[]){{"y", BY, sizeof BY}}, 1));
  sk_program_destroy(p);
  sk_team_destroy(t1);
  sk_team_destroy(t2);
  return s;
}
static sk_status team_cfg(sk_team_config c) {
  sk_team *t = NULL;
  sk_status s = grab(sk_team_create(&c, &t));
  sk_team_destroy(t);
  return s;
}
static sk_status mu_team_negative(void) {
  return team_cfg((sk_team_config){.struct_size = sizeof(sk_team_config), .num_cores = -3});
}
static sk_status mu_team_pin(void) {
  return team_cfg((sk_team_config){.struct_size = sizeof(sk_team_config), .num_cores = 1, .pin_threads = 7});
}
static sk_status mu_team_struct_size(void) {
  return team_cfg((sk_team_config){.struct_size = 64, .num_cores = 1}); /* larger than this release knows */
}
static sk_status mu_launch_negative(void) {
  sk_team *t = team_of(1);
  sk_status s = grab(sk_team_launch(t, noop_block, NULL, -5));
  sk_team_destroy(t);
  return s;
}
static sk_status mu_executor(void) {
  square_graph(0);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_COUNT_};
  sk_program *p = NULL;
  return grab(sk_compile(G, &cfg, &p));
}
static sk_status mu_wait_unknown(void) { return grab(sk_graph_wait_event(G, 42)); }
static sk_status mu_set_stream_2(void) { return grab(sk_graph_set_stream(G, 2)); }
static sk_status mu_set_stream_neg(void) { return grab(sk_graph_set_stream(G, -1)); }
static sk_status mu_mark_none(void) { return grab(sk_graph_mark_output(G, SK_VALUE_NONE, "y")); }
static sk_status mu_output_info_range(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  const char *n;
  sk_status s = grab(sk_program_output_info(p, 5, &n, NULL, NULL, NULL));
  sk_program_destroy(p);
  return s;
}
static sk_status mu_jit_source_unknown(void) {
  sk_program *p = square_program(1, NULL, SK_EXECUTOR_INTERP, 0);
  char *src = NULL;
  sk_status s = grab(sk_program_jit_source(p, "nope", &src));
  sk_free(src);
  sk_program_destroy(p);
  return s;
}
static sk_status mu_empty_scope_name(void) { return grab(sk_graph_begin_scope(G, "", NULL)); }
static sk_status mu_compile_struct_size(void) {
  square_graph(0);
  sk_compile_config cfg = {.struct_size = 2}; /* shorter than its first release */
  sk_program *p = NULL;
  return grab(sk_compile(G, &cfg, &p));
}
static sk_status mu_op_struct_size(void) {
  sk_value x = f32("x", 4, 8), y;
  sk_op_input i[] = {{"x", &x, 1}};
  sk_op_desc d = {.struct_size = 3, .op = "square", .inputs = i, .n_inputs = 1};
  return grab(sk_graph_add_op(G, &d, &y, 1, NULL));
}
static sk_status mu_cache_path_small(void) {
  char buf[2];
  return grab(sk_jit_cache_path(buf, sizeof buf));
}

/* ---- H. Custom kernel registration --------------------------------------- */

static sk_status reg(sk_kernel_desc d) {
  sk_kernel *k = NULL;
  return grab(sk_kernel_register(&d, &k));
}
static sk_status ck_block_zero(void) { sk_kernel_desc d = kdesc("bi_blocks0"); d.block_count = 0; return reg(d); }
static sk_status ck_block_big(void) { sk_kernel_desc d = kdesc("bi_blocksbig"); d.block_count = (1 << 20) + 1; return reg(d); }
static sk_status ck_params_big(void) { sk_kernel_desc d = kdesc("bi_params257"); d.n_params = 257; return reg(d); }
static sk_status ck_params_neg(void) { sk_kernel_desc d = kdesc("bi_paramsneg"); d.n_params = -1; return reg(d); }
static sk_status ck_type(void) { sk_kernel_desc d = kdesc("bi_type7"); d.type = (sk_kernel_type)7; return reg(d); }
static sk_status ck_name_empty(void) { return reg(kdesc("")); }
static sk_status ck_name_space(void) { return reg(kdesc("bad name")); }
static sk_status ck_name_long(void) {
  return reg(kdesc("k234567890123456789012345678901234567890123456789012345678901234"));
}
static sk_status ck_name_builtin(void) { return reg(kdesc("grouped_matmul")); }
static sk_status ck_name_twice(void) { kernels(); return reg(kdesc("bi_plain")); }
static sk_status ck_barriers_neg(void) { sk_kernel_desc d = kdesc("bi_barneg"); d.barriers_per_block = -1; return reg(d); }
static sk_status ck_unfusable(void) { sk_kernel_desc d = kdesc("bi_unf2"); d.unfusable = 2; return reg(d); }
static sk_status ck_struct_size(void) { sk_kernel_desc d = kdesc("bi_small"); d.struct_size = 4; return reg(d); }
static sk_status ck_graph_params(void) {
  kernels();
  sk_value x = f32("x", 4, 8);
  sk_op_input i[] = {{"x", &x, 1}};
  return op("bi_params", i, 1, NULL, 0); /* 1 input + 1 output != 3 params */
}
static sk_status ck_graph_infer_rejects(void) {
  kernels();
  sk_value xs[2] = {f32("a", 4, 8), f32("b", 4, 9)};
  sk_op_input i[] = {{"x", xs, 2}};
  return op("bi_reject", i, 1, NULL, 0);
}

/* ---- I. Runtime-only fusion ---------------------------------------------- */

static sk_status fuse(sk_kernel *const *ks, size_t n, const char *options, int cores) {
  sk_team *t = cores ? team_of(cores) : NULL;
  sk_fused_kernel *fk = NULL;
  sk_status s = grab(sk_fused_kernel_create(ks, n, options, t, &fk));
  sk_fused_kernel_destroy(fk);
  sk_team_destroy(t);
  return s;
}
static sk_status rf_zero(void) { kernels(); return fuse(&K_PLAIN, 0, NULL, 0); }
static sk_status rf_barrier_blocks(void) { kernels(); return fuse((sk_kernel *[]){K_PLAIN, K_BARRIER4}, 2, NULL, 2); }
static sk_status rf_feed_sync(void) { kernels(); return fuse((sk_kernel *[]){K_PLAIN, K_BARRIER1}, 2, NULL, 2); }
static sk_status rf_unfusable_abort(void) {
  kernels();
  return fuse((sk_kernel *[]){K_PLAIN, K_UNFUSABLE}, 2, "strict-scope-check=abort", 0);
}
static sk_status rf_bad_option(void) { kernels(); return fuse(&K_PLAIN, 1, "split-mode=0", 0); }
static sk_status rf_aic_num(void) { kernels(); return fuse(&K_PLAIN, 1, "debug-aiv-num=5", 2); }

/* ---- J. Profiles --------------------------------------------------------- */

static sk_status pf_not_enabled(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 0);
  sk_status s = grab(sk_program_write_profile(p, "bad_inputs_profile_off"));
  sk_program_destroy(p);
  return s;
}
static sk_status pf_nothing_recorded(void) {
  sk_program *p = square_program(0, NULL, SK_EXECUTOR_EAGER, 1);
  sk_status s = grab(sk_program_write_profile(p, "bad_inputs_profile_empty"));
  sk_program_destroy(p);
  return s;
}

/* ---- The catalogue ------------------------------------------------------- */

typedef struct row {
  const char *category, *name;
  sk_status (*call)(void);
  sk_status want;
  const char *frag[3];
} row;

#define ARG SK_STATUS_INVALID_ARGUMENT
#define SHAPE SK_STATUS_INVALID_SHAPE
#define DTYPE SK_STATUS_INVALID_DTYPE
#define ATTR SK_STATUS_INVALID_ATTRIBUTE
#define STATE SK_STATUS_INVALID_STATE
#define NOTF SK_STATUS_NOT_FOUND
#define R(cat, fn, st, ...) {cat, #fn, fn, st, {__VA_ARGS__}}

static const row ROWS[] = {
    /* A. NULL pointers */
    R("null", null_graph_out, ARG, "graph_out"),
    R("null", null_graph_add_input, ARG, "graph"),
    R("null", null_shape, SHAPE, "'x'", "shape is NULL"),
    R("null", null_value_out, ARG, "value_out"),
    R("null", null_graph_add_op, ARG, "graph"),
    R("null", null_desc, ARG, "desc"),
    R("null", null_desc_op, ARG, "op"),
    R("null", null_slot_name, ARG, "square", "name"),
    R("null", null_slot_values, ARG, "square", "x"),
    R("null", null_inputs_array, ARG, "square", "inputs"),
    R("null", null_attrs_array, ARG, "cast", "1 attributes", "NULL"),
    R("null", null_attr_name, ATTR, "cast", "attribute 0", "no name"),
    R("null", null_attr_ints, ATTR, "reshape", "attribute shape", "NULL"),
    R("null", null_outputs, ARG, "outputs"),
    R("null", null_mark_output_name, ARG, "name"),
    R("null", null_mark_output_graph, ARG, "graph"),
    R("null", null_scope_name, ARG, "name"),
    R("null", null_scope_graph, ARG, "graph"),
    R("null", null_end_scope_graph, ARG, "graph"),
    R("null", null_set_stream_graph, ARG, "graph"),
    R("null", null_event_out, ARG, "event_out"),
    R("null", null_wait_graph, ARG, "graph"),
    R("null", null_value_info_graph, ARG, "graph"),
    R("null", null_render_buf, ARG, "buf"),
    R("null", null_trans_scale, ARG, "scale"),
    R("null", null_trans_out, ARG, "packed_out"),
    R("null", null_team_out, ARG, "team_out"),
    R("null", null_launch_team, ARG, "team"),
    R("null", null_launch_fn, ARG, "fn"),
    R("null", null_compile_graph, ARG, "graph"),
    R("null", null_program_out, ARG, "program_out"),
    R("null", null_run_program, ARG, "program"),
    R("null", null_run_inputs, ARG, "sk_program_run", "input buffers are NULL"),
    R("null", null_buffer_name, ARG, "name"),
    R("null", null_buffer_data, ARG, "'y'", "data"),
    R("align", misaligned_run_input, ARG, "input 'x'", "not aligned to 4 bytes"),
    R("align", misaligned_bind_output, ARG, "output 'y'", "not aligned to 4 bytes"),
    R("align", misaligned_borrowed_constant, ARG, "constant 'w'", "not aligned to 4 bytes"),
    R("null", null_describe_text, ARG, "text_out"),
    R("null", null_describe_program, ARG, "program"),
    R("null", null_jit_source_out, ARG, "source_out"),
    R("null", null_profile_dir, ARG, "dir"),
    R("null", null_input_info_program, ARG, "program"),
    R("null", null_cache_path_buf, ARG, "buf"),
    R("null", null_kernel_desc, ARG, "desc"),
    R("null", null_kernel_out, ARG, "kernel_out"),
    R("null", null_kernel_name, ARG, "name"),
    R("null", null_kernel_entry, ARG, "bi_null_entry", "entry"),
    R("null", null_fused_kernels, ARG, "kernels"),
    R("null", null_fused_out, ARG, "out"),
    R("null", null_fused_kernel_entry, ARG, "kernels[1]"),
    R("null", null_fused_launch, ARG, "fk"),
    R("null", null_fused_describe_text, ARG, "text_out"),
    R("null", null_fused_args, ARG, "bi_params", "args"),
    /* B. Wrong dtypes */
    R("dtype", dt_mul_int, DTYPE, "mul", "int32", "int64"),
    R("dtype", dt_concat_half, DTYPE, "concat", "x[2]", "bf16"),
    R("dtype", dt_gmm_int32, DTYPE, "grouped_matmul", "int32"),
    R("dtype", dt_gmm_bias, DTYPE, "grouped_matmul", "bias[0]", "bf16"),
    R("dtype", rms_int_x, DTYPE, "rms_norm", "input x", "int32"),
    R("dtype", rms_gamma_dtype, DTYPE, "rms_norm", "gamma", "bf16"),
    R("shape", rms_gamma_len, SHAPE, "rms_norm", "gamma", "[8]"),
    R("shape", rms_empty_h, SHAPE, "rms_norm", "input x", "H"),
    R("attr", rms_neg_eps, ATTR, "rms_norm", "epsilon", "-0.001"),
    R("attr", rms_nan_eps, ATTR, "rms_norm", "epsilon", "nan"),
    R("shape", add_rms_x2, SHAPE, "add_rms_norm", "x2", "[4, 9]"),
    R("shape", swiglu_odd, SHAPE, "swiglu", "even", "[4, 7]"),
    R("dtype", swiglu_int, DTYPE, "swiglu", "input x", "int8"),
    R("attr", swiglu_dim, ATTR, "swiglu", "dim", "got 2"),
    R("shape", swiglu_scalar, SHAPE, "swiglu", "input x: expected rank >= 1"),
    R("dtype", ir_ids_int64, DTYPE, "moe_init_routing", "expert_idx", "int64"),
    R("shape", ir_ids_rows, SHAPE, "moe_init_routing", "expert_idx", "[6, K]"),
    R("attr", ir_no_experts, ATTR, "moe_init_routing", "expert_num"),
    R("attr", ir_range, ATTR, "moe_init_routing", "active_expert_range", "expert_num (4)"),
    R("attr", ir_static, ATTR, "moe_init_routing", "quant_mode", "static"),
    R("arg", fr_bias_no_expert, ARG, "moe_finalize_routing", "bias", "export_for_source_row"),
    R("shape", fr_map_len, SHAPE, "moe_finalize_routing", "expanded_src_to_dst_row", "K = 2"),
    R("dtype", fr_skip_dtype, DTYPE, "moe_finalize_routing", "skip1", "fp32"),
    R("shape", fr_scales_k0, SHAPE, "moe_finalize_routing", "input scales", "K >= 1"),
    R("shape", lin_w_k, SHAPE, "linear", "weight", "[N, 8]"),
    R("dtype", lin_w_dtype, DTYPE, "linear", "weight", "fp16"),
    R("shape", lin_bias, SHAPE, "linear", "bias", "[6]"),
    R("attr", gts_k, ATTR, "moe_gating_topk_softmax", "attribute k", "got 9"),
    R("dtype", dt_moe_x, DTYPE, "moe_gating_topk", "x", "int32"),
    R("dtype", dt_moe_bias, DTYPE, "moe_gating_topk", "bias", "fp32"),
    R("dtype", dt_dsq_x, DTYPE, "dequant_swiglu_quant", "x", "int8"),
    R("dtype", dt_dsq_weight_scale, DTYPE, "dequant_swiglu_quant", "weight_scale", "fp16"),
    R("dtype", dt_dsq_group_index, DTYPE, "dequant_swiglu_quant", "group_index", "int32"),
    R("dtype", dt_qmm_x1, DTYPE, "quant_matmul", "x1", "fp16"),
    R("dtype", dt_qmm_scale, DTYPE, "quant_matmul", "scale", "fp16"),
    R("dtype", dt_qmm_bias, DTYPE, "quant_matmul", "bias", "fp32"),
    R("dtype", dt_add_bool_scalar, DTYPE, "add", "bool", "scalar"),
    R("dtype", dt_add_input_invalid, DTYPE, "'q'"),
    /* C. Shape mismatches */
    R("shape", sh_add_transposed, SHAPE, "add", "[4, 8]", "[8, 4]"),
    R("shape", sh_mul_broadcast, SHAPE, "[2, 4]", "[2, 3, 4]", "dimension 1: 2 vs 3"),
    R("shape", sh_concat_rank, SHAPE, "concat", "x[1]", "[8]"),
    R("shape", sh_gmm_weight_rank1, SHAPE, "grouped_matmul", "weight[0]"),
    R("shape", sh_moe_rank3, SHAPE, "moe_gating_topk", "x", "rank"),
    R("shape", sh_moe_too_many_experts, SHAPE, "moe_gating_topk", "2048", "4096"),
    R("shape", sh_moe_bias, SHAPE, "moe_gating_topk", "bias", "17"),
    R("shape", sh_dsq_odd, SHAPE, "dequant_swiglu_quant", "x", "15"),
    R("shape", sh_dsq_rank1, SHAPE, "dequant_swiglu_quant", "x", "rank"),
    R("shape", sh_dsq_activation_scale, SHAPE, "dequant_swiglu_quant", "activation_scale", "[5]"),
    R("shape", sh_dsq_quant_scale, SHAPE, "dequant_swiglu_quant", "quant_scale", "[9]"),
    R("shape", sh_qmm_k, SHAPE, "quant_matmul", "x2", "9"),
    R("shape", sh_qmm_batch, SHAPE, "quant_matmul", "2", "3"),
    R("shape", sh_qmm_k_limit, SHAPE, "quant_matmul", "65535", "65536"),
    R("shape", sh_qmm_scale, SHAPE, "quant_matmul", "scale", "[3]"),
    /* D. Element-count overflow */
    R("overflow", ov_input_product, SHAPE, "'huge'", "2^48"),
    R("overflow", ov_input_wraps, SHAPE, "'wrap'", "2^48"),
    R("overflow", ov_reshape_huge, SHAPE, "reshape", "2^48"),
    R("overflow", ov_concat_total, SHAPE, "concat", "2^48"),
    /* E. Attributes out of range */
    R("attr", at_moe_k_missing, ATTR, "moe_gating_topk", "k"),
    R("attr", at_moe_k_zero, ATTR, "moe_gating_topk", "k", "got 0"),
    R("attr", at_moe_k_big, ATTR, "moe_gating_topk", "k", "got 17"),
    R("attr", at_moe_k_group, ATTR, "moe_gating_topk", "k_group", "got 5"),
    R("attr", at_moe_group_count_zero, ATTR, "moe_gating_topk", "group_count", "got 0"),
    R("attr", at_moe_group_count_divide, ATTR, "moe_gating_topk", "group_count", "3"),
    R("attr", at_moe_norm_type, ATTR, "moe_gating_topk", "norm_type", "got 2"),
    R("attr", at_moe_renorm, ATTR, "moe_gating_topk", "renorm", "got -1"),
    R("attr", at_moe_out_flag, ATTR, "moe_gating_topk", "out_flag", "got 3"),
    R("attr", at_moe_select_mode, ATTR, "moe_gating_topk", "group_select_mode", "got 2"),
    R("attr", at_moe_mode1_small_groups, ATTR, "moe_gating_topk", "group_select_mode", "2"),
    R("attr", at_moe_eps_negative, ATTR, "moe_gating_topk", "eps"),
    R("attr", at_moe_eps_nan, ATTR, "moe_gating_topk", "eps", "nan"),
    R("attr", at_dsq_quant_mode, ATTR, "dequant_swiglu_quant", "quant_mode", "got 2"),
    R("attr", at_dsq_activate_left, ATTR, "dequant_swiglu_quant", "activate_left", "got 2"),
    R("attr", at_dsq_static_no_scale, ARG, "dequant_swiglu_quant", "quant_scale"),
    R("attr", at_qmm_output_dtype, ATTR, "quant_matmul", "output_dtype", "got bool"),
    R("attr", at_gmm_group_type, ATTR, "grouped_matmul", "group_type", "got -2"),
    R("attr", at_gmm_split_item, ATTR, "grouped_matmul", "split_item", "got 4"),
    R("attr", at_gmm_split_item_2_no_groups, ATTR, "grouped_matmul", "split_item", "2"),
    R("attr", at_gmm_group_list_type, ATTR, "grouped_matmul", "group_list_type", "got 2"),
    R("attr", at_gmm_negative_count, ATTR, "grouped_matmul", "group_list", "-1"),
    R("attr", at_concat_dim, ATTR, "concat", "dim", "got -3"),
    R("attr", at_cast_invalid, ATTR, "cast", "dtype", "got 0"),
    R("attr", at_cast_kind, ATTR, "cast", "dtype", "expected kind int, got float"),
    R("attr", at_add_scalar_fraction, ATTR, "add", "int32", "0.5"),
    R("attr", at_mul_scalar_range, ATTR, "mul", "[0, 255]", "256"),
    R("attr", at_add_y_and_scalar, ARG, "add", "scalar", "both"),
    R("attr", at_add_no_y, ARG, "add", "input y", "scalar"),
    R("attr", at_slice_rank0, SHAPE, "slice", "input x", "rank 0"),
    R("attr", at_squeeze_dims_range, ATTR, "squeeze", "dims[0]", "got 2"),
    R("attr", at_squeeze_dims_twice, ATTR, "squeeze", "dims[1]", "twice"),
    R("attr", at_unsqueeze_dim, ATTR, "unsqueeze", "dim", "got -4"),
    R("attr", at_unsqueeze_missing, ATTR, "unsqueeze", "dim", "required"),
    R("attr", sh_unsqueeze_rank8, SHAPE, "unsqueeze", "rank 8"),
    R("attr", at_reshape_rank9, SHAPE, "reshape", "shape", "9"),
    R("attr", at_reshape_zero_infer, SHAPE, "reshape", "-1"),
    R("attr", at_attr_twice, ATTR, "cast", "dtype", "twice"),
    R("attr", at_moe_too_few_outputs, ARG, "3 outputs", "room for 1"),
    R("attr", at_trans_nan_offset, ARG, "offset", "1"),
    /* F. Option strings */
    R("options", op_empty_key, ARG, "empty key", "'=1'", "known keys"),
    R("options", op_empty_value, ARG, "option early-start", "empty value", "accepted: 0, 1, 2"),
    R("options", op_empty_quoted_value, ARG, "option profiling", "empty value", "accepted: 0, 1"),
    R("options", op_unknown_key, ARG, "unknown key 'early-strat'", "did you mean 'early-start'"),
    R("options", op_repeated_key, ARG, "option split-mode", "given twice"),
    R("options", op_repeated_alias, ARG, "option early-start", "given twice", "'early_start'"),
    R("options", op_func_align, ARG, "option func-align", "illegal value '1'", "power of two"),
    R("options", op_split_mode, ARG, "option split-mode", "illegal value '65'", "1..64"),
    R("options", op_early_start, ARG, "option early-start", "illegal value '3'", "accepted: 0, 1, 2"),
    R("options", op_preload, ARG, "option preload-code", "illegal value 'all'", "max, none, per-func"),
    R("options", op_strict, ARG, "option strict-scope-check", "illegal value 'x'", "abort, bypass"),
    R("options", op_aic_sign, ARG, "option debug-aic-num", "illegal value '-1'"),
    R("options", op_int_too_big, ARG, "option profiling", "'2147483648'"),
    R("options", op_hex, ARG, "option split-mode", "'0x10'"),
    R("options", op_flag_dash, ARG, "option compile-options", "flag 'g' does not start with '-'"),
    R("options", op_flag_empty_item, ARG, "option compile-options", "item 2 is empty"),
    R("options", op_bad_regex, ARG, "option dcci-after-kernel-end", "pattern '('"),
    R("options", op_regex_repeats, ARG, "option dcci-after-kernel-end", "too complex", "more than 4 repetition"),
    R("options", op_regex_backref, ARG, "option dcci-before-kernel-start", "too complex", "back-reference"),
    R("options", op_regex_count, ARG, "option dcci-after-kernel-end", "17 patterns, at most 16"),
    R("options", op_regex_interval, ARG, "option dcci-before-kernel-start", "too complex", "interval"),
    R("options", op_regex_nested, ARG, "option dcci-disable-on-kernel", "too complex", "repetition operators"),
    R("options", op_stray_quote, ARG, "option compile-options", "double quote"),
    R("options", op_render_invalid, ARG, "option stream-fusion", "illegal value '2'"),
    R("options", op_scope_options, ARG, "option feed-sync-all", "'yes'"),
    R("options", op_global_options, ARG, "global options", "debug-sync-all", "'9'"),
    R("options", op_global_options_unused, ARG, "global options", "nonsense"),
    /* G. API misuse */
    R("misuse", mu_end_twice, STATE, "no scope"),
    R("misuse", mu_nest, STATE, "'inner'", "'outer'"),
    R("misuse", mu_scope_reopened_other_options, ARG, "'s' is reopened", "\"early-start=2\"", "\"early-start=0\""),
    R("misuse", mu_compile_open_scope, STATE, "'open'"),
    R("misuse", mu_scope_not_convex, ARG, "scope 's' is not convex", "outside (square)", "its node a2"),
    R("misuse", mu_run_unbound_output, ARG, "output 'y' is not bound"),
    R("misuse", mu_run_misnamed_output, NOTF, "no output named 'z'"),
    R("misuse", mu_run_output_size, ARG, "output 'y'", "expected 16 bytes", "got 32"),
    R("misuse", mu_run_input_as_output, NOTF, "'x'"),
    R("misuse", mu_team_mismatch, ARG, "2 cores", "1"),
    R("misuse", mu_team_negative, ARG, "num_cores", "-3"),
    R("misuse", mu_team_pin, ARG, "pin_threads", "7"),
    R("misuse", mu_team_struct_size, ARG, "struct_size = 64", "expected "),
    R("misuse", mu_launch_negative, ARG, "n_blocks", "-5"),
    R("misuse", mu_executor, ARG, "executor = 6"),
    R("misuse", mu_wait_unknown, NOTF, "event 42"),
    R("misuse", mu_set_stream_2, ARG, "stream", "2"),
    R("misuse", mu_set_stream_neg, ARG, "stream", "-1"),
    R("misuse", mu_mark_none, NOTF, "'y'"),
    R("misuse", mu_output_info_range, NOTF, "output 5"),
    R("misuse", mu_jit_source_unknown, NOTF, "'nope'"),
    R("misuse", mu_empty_scope_name, ARG, "empty"),
    R("misuse", mu_compile_struct_size, ARG, "struct_size"),
    R("misuse", mu_op_struct_size, ARG, "struct_size", "3"),
    R("misuse", mu_cache_path_small, ARG, "cache directory", "too long"),
    /* H. Custom kernel registration */
    R("custom", ck_block_zero, ARG, "'bi_blocks0'", "block_count = 0", "1..1048576"),
    R("custom", ck_block_big, ARG, "'bi_blocksbig'", "block_count = 1048577"),
    R("custom", ck_params_big, ARG, "'bi_params257'", "n_params = 257"),
    R("custom", ck_params_neg, ARG, "'bi_paramsneg'", "n_params = -1"),
    R("custom", ck_type, ARG, "'bi_type7'", "type", "7"),
    R("custom", ck_name_empty, ARG, "name"),
    R("custom", ck_name_space, ARG, "'bad name'", "name"),
    R("custom", ck_name_long, ARG, "name", "63"),
    R("custom", ck_name_builtin, ARG, "'grouped_matmul'"),
    R("custom", ck_name_twice, ARG, "'bi_plain'"),
    R("custom", ck_barriers_neg, ARG, "'bi_barneg'", "barriers_per_block", "-1"),
    R("custom", ck_unfusable, ARG, "'bi_unf2'", "unfusable", "2"),
    R("custom", ck_struct_size, ARG, "struct_size"),
    R("custom", ck_graph_params, ARG, "kernel bi_params", "takes 3 parameters", "2 arguments"),
    R("custom", ck_graph_infer_rejects, SHAPE, "bi_reject", "x[1] fp32 [4, 9]"),
    /* I. Runtime-only fusion */
    R("fusion", rf_zero, ARG, "n"),
    R("fusion", rf_barrier_blocks, SK_STATUS_UNSUPPORTED, "bi_barrier4", "4 blocks", "2 cores"),
    R("fusion", rf_feed_sync, STATE, "bi_barrier1", "1 blocks for 2 cores", "feed-sync-all=1"),
    R("fusion", rf_unfusable_abort, SK_STATUS_UNSUPPORTED, "bi_unfusable", "unfusable", "strict-scope-check=abort"),
    R("fusion", rf_bad_option, ARG, "option split-mode", "'0'"),
    R("fusion", rf_aic_num, ARG, "debug-aiv-num", "5", "2"),
    /* J. Profiles */
    R("profile", pf_not_enabled, STATE, "profile"),
    R("profile", pf_nothing_recorded, STATE, "nothing"),
};

int main(void) {
  size_t n = sizeof ROWS / sizeof ROWS[0], bad = 0;
  sk_set_log_level(SK_LOG_OFF); /* rows that warn on the way (skipped pieces) stay quiet */
  for (size_t r = 0; r < n; r++) {
    const row *e = &ROWS[r];
    /* SK_BAD_INPUTS_SKIP=name,name: leave rows out (to get past a known
     * library bug, e.g. under UBSan, while it is being fixed). */
    const char *skip = getenv("SK_BAD_INPUTS_SKIP");
    if (skip && strstr(skip, e->name)) {
      fprintf(stderr, "SKIP [%s] %s\n", e->category, e->name);
      continue;
    }
    int before = harness_failures;
    MSG[0] = 0;
    CHECK_OK(sk_graph_create(&G));
    sk_status got = e->call();
    sk_graph_destroy(G);
    G = NULL;
    CHECK_MSG(got == e->want, "%s: got %s, want %s (\"%s\")", e->name, sk_status_string(got),
              sk_status_string(e->want), MSG);
    for (int f = 0; f < 3 && e->frag[f]; f++)
      CHECK_MSG(strstr(MSG, e->frag[f]) != NULL, "%s: message \"%s\" lacks \"%s\"", e->name, MSG, e->frag[f]);
    if (harness_failures != before) {
      bad++;
      fprintf(stderr, "FAIL [%s] %s\n", e->category, e->name);
    } else {
      printf("ok   [%s] %s: %s\n", e->category, e->name, MSG);
    }
  }
  /* Per-category counts. */
  const char *seen[32];
  size_t counts[32], n_seen = 0;
  for (size_t r = 0; r < n; r++) {
    size_t c = 0;
    while (c < n_seen && strcmp(seen[c], ROWS[r].category) != 0) c++;
    if (c == n_seen) seen[n_seen] = ROWS[r].category, counts[n_seen++] = 0;
    counts[c]++;
  }
  for (size_t c = 0; c < n_seen; c++) printf("  %-8s %zu\n", seen[c], counts[c]);
  printf("catalogue: %zu entries, %zu failed (%d checks)\n", n, bad, harness_checks);
  CHECK_MSG(n >= 80, "catalogue has %zu entries, want at least 80", n);
  return harness_failures ? 1 : 0;
}

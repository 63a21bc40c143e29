/* Custom kernels (superkernel.h, "Custom kernels"): registration checks;
 * kernels used in graphs next to built-in ops, fused and eager, with the
 * flags of the sub-kernel descriptor (unfusable, team barriers); and
 * runtime-only fusion, checked against each kernel launched alone. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "reference_runner.h"
#include "program/plan.h"

static sk_team *teams[3]; /* 1, 2 and 3 cores */

/* Block b's share [begin, end) of n elements split into n_blocks. */
static void chunk(int64_t n, int64_t block, int64_t n_blocks, int64_t *begin, int64_t *end) {
  *begin = n * block / n_blocks;
  *end = n * (block + 1) / n_blocks;
}

static int64_t arg_numel(sk_kernel_ctx *ctx, int i) {
  int rank = 0;
  int64_t shape[SK_MAX_RANK], n = 1;
  if (sk_kernel_arg_info(ctx, i, NULL, &rank, shape) != SK_STATUS_OK) return -1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

/* ======================================================================
 * Graph kernels: arguments are the node's inputs, then its outputs.
 * ==================================================================== */

/* g_pow: y = x^p (fp32), p from the user pointer; any shape. */
static void g_pow_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  const float *x = args[0];
  float *y = args[1];
  float p = *(const float *)sk_kernel_user(ctx);
  int64_t b, e;
  chunk(arg_numel(ctx, 0), block, n_blocks, &b, &e);
  for (int64_t i = b; i < e; i++) y[i] = powf(x[i], p);
}

static sk_status fp32_only(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                           size_t n_in, sk_dtype *out_dtypes, int *out_ranks, int64_t (*out_shapes)[SK_MAX_RANK],
                           size_t *n_out, void *user) {
  (void)user;
  if (n_in != 1 || in_dtypes[0] != SK_FP32) return SK_STATUS_INVALID_DTYPE;
  out_dtypes[0] = SK_FP32;
  out_ranks[0] = in_ranks[0];
  memcpy(out_shapes[0], in_shapes[0], sizeof(int64_t) * (size_t)in_ranks[0]);
  *n_out = 1;
  return SK_STATUS_OK;
}

/* g_addsub (CUBE, to mix kernel types): s = x + y, d = x - y; two outputs
 * with the inputs' shape, which must be equal. */
static void g_addsub_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  const float *x = args[0], *y = args[1];
  float *s = args[2], *d = args[3];
  float *scratch = ws; /* exercised: every block writes and reads its workspace */
  int64_t b, e;
  chunk(arg_numel(ctx, 2), block, n_blocks, &b, &e);
  for (int64_t i = b; i < e; i++) {
    scratch[0] = x[i] + y[i];
    s[i] = scratch[0];
    d[i] = x[i] - y[i];
  }
}

static sk_status addsub_infer(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                              size_t n_in, sk_dtype *out_dtypes, int *out_ranks, int64_t (*out_shapes)[SK_MAX_RANK],
                              size_t *n_out, void *user) {
  (void)user;
  if (n_in != 2 || in_dtypes[0] != SK_FP32 || in_dtypes[1] != SK_FP32) return SK_STATUS_INVALID_DTYPE;
  if (in_ranks[0] != in_ranks[1] || memcmp(in_shapes[0], in_shapes[1], sizeof(int64_t) * (size_t)in_ranks[0]))
    return SK_STATUS_INVALID_SHAPE;
  for (int o = 0; o < 2; o++) {
    out_dtypes[o] = SK_FP32;
    out_ranks[o] = in_ranks[0];
    memcpy(out_shapes[o], in_shapes[0], sizeof(int64_t) * (size_t)in_ranks[0]);
  }
  *n_out = 2;
  return SK_STATUS_OK;
}

/* g_copy: unfusable copy (default infer: like input 0). */
static void g_copy_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  int64_t b, e;
  chunk(arg_numel(ctx, 0), block, n_blocks, &b, &e);
  memcpy((float *)args[1] + b, (const float *)args[0] + b, (size_t)(e - b) * sizeof(float));
}

/* g_scale_sum1 / g_scale_sum2: y = x * sum(x), partial[b] = sum of block b's
 * chunk; the blocks meet at a barrier once (after writing their partial
 * sums) and then each sums all partials in order. Outputs: y like x, and
 * partial fp32 [n_blocks]. */
static void g_scale_sum_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  const float *x = args[0];
  float *y = args[1], *partial = args[2];
  int64_t b, e;
  chunk(arg_numel(ctx, 0), block, n_blocks, &b, &e);
  float s = 0;
  for (int64_t i = b; i < e; i++) s += x[i];
  partial[block] = s;
  sk_kernel_barrier(ctx);
  float total = 0;
  for (int64_t k = 0; k < n_blocks; k++) total += partial[k];
  for (int64_t i = b; i < e; i++) y[i] = x[i] * total;
}

static sk_status scale_sum_infer(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                                 size_t n_in, sk_dtype *out_dtypes, int *out_ranks,
                                 int64_t (*out_shapes)[SK_MAX_RANK], size_t *n_out, void *user) {
  sk_status st = fp32_only(in_dtypes, in_ranks, in_shapes, n_in, out_dtypes, out_ranks, out_shapes, n_out, NULL);
  if (st != SK_STATUS_OK) return st;
  out_dtypes[1] = SK_FP32;
  out_ranks[1] = 1;
  out_shapes[1][0] = *(const int64_t *)user;
  *n_out = 2;
  return SK_STATUS_OK;
}

static float g_pow_exponent = 3.0f;
static int64_t blocks_1 = 1, blocks_2 = 2;
static sk_kernel *g_pow, *g_addsub, *g_copy, *g_scale_sum1, *g_scale_sum2;

static sk_kernel *must_register(sk_kernel_desc d) {
  d.struct_size = sizeof d;
  sk_kernel *k = NULL;
  CHECK_OK(sk_kernel_register(&d, &k));
  return k;
}

static void register_graph_kernels(void) {
  g_pow = must_register((sk_kernel_desc){.name = "g_pow", .entry = g_pow_entry, .block_count = 5, .n_params = 2,
                                         .infer = fp32_only, .user = &g_pow_exponent});
  g_addsub = must_register((sk_kernel_desc){.name = "g_addsub", .entry = g_addsub_entry, .type = SK_KERNEL_TYPE_CUBE,
                                            .block_count = 3, .workspace_bytes = 64, .n_params = 4,
                                            .infer = addsub_infer});
  g_copy = must_register(
      (sk_kernel_desc){.name = "g_copy", .entry = g_copy_entry, .block_count = 2, .n_params = 2, .unfusable = 1});
  g_scale_sum1 = must_register((sk_kernel_desc){.name = "g_scale_sum1", .entry = g_scale_sum_entry, .block_count = 1,
                                                .n_params = 3, .barriers_per_block = 1, .infer = scale_sum_infer,
                                                .user = &blocks_1});
  g_scale_sum2 = must_register((sk_kernel_desc){.name = "g_scale_sum2", .entry = g_scale_sum_entry,
                                                .type = SK_KERNEL_TYPE_MIX, .block_count = 2, .n_params = 3,
                                                .barriers_per_block = 1, .infer = scale_sum_infer,
                                                .user = &blocks_2});
}

/* ======================================================================
 * Registration
 * ==================================================================== */

static void noop_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)args, (void)block, (void)n_blocks, (void)ws, (void)ctx;
}

static void test_register_errors(void) {
  sk_kernel *k = NULL;
  sk_kernel_desc ok = {.struct_size = sizeof ok, .name = "r_ok", .entry = noop_entry, .block_count = 1};
  sk_kernel_desc d;
  CHECK_FAILS(sk_kernel_register(NULL, &k), SK_STATUS_INVALID_ARGUMENT, "desc is NULL");
  CHECK_FAILS(sk_kernel_barrier(NULL), SK_STATUS_INVALID_ARGUMENT, "sk_kernel_barrier", "ctx is NULL");
  CHECK_FAILS(sk_kernel_arg_info(NULL, 0, NULL, NULL, NULL), SK_STATUS_INVALID_ARGUMENT, "ctx is NULL");
  CHECK_FAILS(sk_kernel_register(&ok, NULL), SK_STATUS_INVALID_ARGUMENT, "kernel_out is NULL");
  d = ok, d.struct_size = 4;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "struct_size = 4", "sizeof(sk_kernel_desc)");
  d = ok, d.struct_size = sizeof d + 8; /* a newer header */
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "struct_size", "expected");
  d = ok, d.name = NULL;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "name is NULL");
  d = ok, d.name = "";
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "name is empty");
  d = ok, d.name = "has space";
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "'has space'", "character 3", "letters");
  d = ok, d.entry = NULL;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "'r_ok'", "entry is NULL");
  d = ok, d.type = (sk_kernel_type)7;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "'r_ok'", "type = 7", "SK_KERNEL_TYPE_VECTOR");
  d = ok, d.block_count = 0;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "'r_ok'", "block_count = 0", "1..");
  d = ok, d.n_params = -1;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "'r_ok'", "n_params = -1", "0..256");
  d = ok, d.n_params = SK_KERNEL_MAX_PARAMS + 1;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "n_params = 257");
  d = ok, d.barriers_per_block = -2;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "barriers_per_block = -2");
  d = ok, d.unfusable = 2;
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "unfusable = 2", "0 or 1");
  d = ok, d.name = "square";
  CHECK_FAILS(sk_kernel_register(&d, &k), SK_STATUS_INVALID_ARGUMENT, "'square'", "already exists");
  CHECK(k == NULL);
  CHECK_OK(sk_kernel_register(&ok, &k));
  CHECK(k != NULL);
  sk_kernel *again = NULL;
  CHECK_FAILS(sk_kernel_register(&ok, &again), SK_STATUS_INVALID_ARGUMENT, "'r_ok'", "already exists");
  CHECK(again == NULL);
  /* A descriptor from an older, shorter struct: no infer, no user. */
  d = ok, d.name = "r_short", d.struct_size = offsetof(sk_kernel_desc, infer);
  CHECK_OK(sk_kernel_register(&d, &k));
}

/* ======================================================================
 * Graph use
 * ==================================================================== */

static sk_value add_node(sk_graph *g, const char *type, const char *name, const sk_value *in, size_t n_in,
                         sk_value *outs, size_t max_outs) {
  sk_op_input slot = {"x", in, n_in};
  sk_op_desc d = {.struct_size = sizeof d, .op = type, .name = name, .inputs = &slot, .n_inputs = 1};
  outs[0] = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_op(g, &d, outs, max_outs, NULL));
  return outs[0];
}

static sk_value add_cast(sk_graph *g, sk_value x, sk_dtype to) {
  sk_op_input slot = {"x", &x, 1};
  sk_attr a = SK_ATTR_INT("dtype", to);
  sk_op_desc d = {.struct_size = sizeof d, .op = "cast", .inputs = &slot, .n_inputs = 1, .attrs = &a, .n_attrs = 1};
  sk_value y = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  return y;
}


/* x -> square -> g_pow -> cast(fp16) -> out0, with g_addsub(g_pow, y) in
 * the same scope feeding two more outputs (a graph input on one side). */
static sk_graph *mixed_graph(const char *scope_options) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, y, v[2];
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){37, 11}, &x));
  CHECK_OK(sk_graph_add_input(g, "y", SK_FP32, 2, (int64_t[]){37, 11}, &y));
  CHECK_OK(sk_graph_begin_scope(g, "mix", scope_options));
  sk_value sq = add_node(g, "square", "sq", &x, 1, v, 1);
  sk_value pw = add_node(g, "g_pow", "pow", &sq, 1, v, 1);
  sk_value h = add_cast(g, pw, SK_FP16);
  sk_value pair[2] = {pw, y};
  add_node(g, "g_addsub", "addsub", pair, 2, v, 2);
  sk_value s = v[0], d = v[1];
  sk_value d2 = add_node(g, "square", "sq2", &d, 1, v, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, h, "h"));
  CHECK_OK(sk_graph_mark_output(g, s, "s"));
  CHECK_OK(sk_graph_mark_output(g, d2, "d2"));
  return g;
}

static void test_graph_fused_vs_eager(void) {
  for (int e = 0; e < 3; e++) {
    char options[32];
    snprintf(options, sizeof options, "early-start=%d", e);
    sk_graph *g = mixed_graph(options);
    for (int t = 0; t < 3; t++) {
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, NULL, 7) == 0, "%s, %d cores, interp", options, t + 1);
      CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_DEFAULT, NULL, 7) == 0, "%s, %d cores, default", options, t + 1);
    }
    sk_graph_destroy(g);
  }
  /* The plan names the custom sub-kernels with their types; CUBE + VECTOR
   * make a MIX super kernel. */
  sk_graph *g = mixed_graph(NULL);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  char *text = NULL;
  if (p) CHECK_OK(sk_program_describe(p, &text));
  CHECK(text && strstr(text, "pow (g_pow, VECTOR), 5 blocks") && strstr(text, "addsub (g_addsub, CUBE), 3 blocks") &&
        strstr(text, "MIX_AIC_1_2") && strstr(text, "workspace 64 bytes"));
  sk_free(text);
  sk_program_destroy(p);
  /* The reference executor runs every kernel's blocks in order. */
  CHECK(rr_fused_vs_eager(g, teams[2], SK_EXECUTOR_REFERENCE, NULL, 7) == 0);
  sk_graph_destroy(g);
}

static void test_graph_errors(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, y, i8, v[4];
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 1, (int64_t[]){10}, &x));
  CHECK_OK(sk_graph_add_input(g, "y", SK_FP32, 1, (int64_t[]){11}, &y));
  CHECK_OK(sk_graph_add_input(g, "i8", SK_INT8, 1, (int64_t[]){10}, &i8));
  sk_value pair[2] = {x, y};
  sk_op_input slot = {"x", pair, 2};
  sk_op_desc d = {.struct_size = sizeof d, .op = "g_addsub", .name = "bad_addsub", .inputs = &slot, .n_inputs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &d, v, 4, NULL), SK_STATUS_INVALID_SHAPE, "bad_addsub", "kernel g_addsub",
              "infer", "x[0] fp32 [10], x[1] fp32 [11]");
  slot = (sk_op_input){"x", &i8, 1};
  d.op = "g_pow", d.name = NULL;
  CHECK_FAILS(sk_graph_add_op(g, &d, v, 4, NULL), SK_STATUS_INVALID_DTYPE, "g_pow", "x[0] int8 [10]");
  /* g_copy has no infer: one output like x[0]; two inputs make 3 arguments. */
  slot = (sk_op_input){"x", pair, 2};
  d.op = "g_copy";
  CHECK_FAILS(sk_graph_add_op(g, &d, v, 4, NULL), SK_STATUS_INVALID_ARGUMENT, "g_copy takes 2 parameters",
              "2 inputs and 1 outputs");
  slot = (sk_op_input){"x", NULL, 0};
  CHECK_FAILS(sk_graph_add_op(g, &d, v, 4, NULL), SK_STATUS_INVALID_ARGUMENT, "no infer function", "x is empty");
  CHECK(g->n_nodes == 0);
  sk_graph_destroy(g);
}

static void test_graph_unfusable(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, v[1];
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 1, (int64_t[]){1001}, &x));
  CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  sk_value a = add_node(g, "square", "sq1", &x, 1, v, 1);
  sk_value b = add_node(g, "g_copy", "copy", &a, 1, v, 1);
  sk_value c = add_node(g, "g_pow", "pow", &b, 1, v, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, c, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p)); /* strict-scope-check unset: split around it */
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
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_UNSUPPORTED, "scope 's'", "copy", "g_copy", "abort");
  for (int t = 0; t < 3; t++) {
    CHECK(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, NULL, 7) == 0);
    CHECK(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, "strict-scope-check=bypass", 7) == 0);
  }
  sk_graph_destroy(g);
}

static sk_graph *barrier_graph(const char *kernel) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, v[2];
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){9, 7}, &x));
  CHECK_OK(sk_graph_begin_scope(g, "bar", NULL));
  sk_value a = add_node(g, "square", "sq", &x, 1, v, 1);
  add_node(g, kernel, "scale_sum", &a, 1, v, 2);
  sk_value y = v[0], part = v[1];
  sk_value z = add_node(g, "g_pow", "pow", &y, 1, v, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  CHECK_OK(sk_graph_mark_output(g, part, "partial"));
  return g;
}

static void test_graph_barrier_kernel(void) {
  /* One block with a barrier on two cores: the idle core must join. */
  sk_graph *g = barrier_graph("g_scale_sum1");
  check_feed_sync_all(g, teams[1], teams[2], "scale_sum", 1, 7);
  CHECK(rr_fused_vs_eager(g, teams[0], SK_EXECUTOR_INTERP, NULL, 7) == 0); /* one core: nothing idle */
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_REFERENCE, NULL, 7) == 0);
  sk_graph_destroy(g);
  /* Two blocks: fine on two cores without the option; the reference runs
   * both at once on a temporary team; one core cannot hold both. */
  g = barrier_graph("g_scale_sum2");
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_INTERP, NULL, 7) == 0);
  CHECK(rr_fused_vs_eager(g, teams[2], SK_EXECUTOR_INTERP, "feed-sync-all=1", 7) == 0);
  CHECK(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_REFERENCE, NULL, 7) == 0);
  sk_compile_config one_core = {.struct_size = sizeof one_core, .team = teams[0], .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &one_core, &p), SK_STATUS_UNSUPPORTED, "scale_sum", "2 blocks for 1 cores");
  sk_graph_destroy(g);
}

/* ======================================================================
 * Runtime-only fusion: arguments are whatever the caller passes.
 * ==================================================================== */

/* Set when sk_kernel_arg_info knows shapes without a graph (it must not). */
static atomic_int arg_info_misuse;

/* r_pow: y[i] = x[i]^p; args {x, y, &p, &n}. */
static void r_pow_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  if (sk_kernel_arg_info(ctx, 0, NULL, NULL, NULL) != SK_STATUS_NOT_FOUND) atomic_store(&arg_info_misuse, 1);
  const float *x = args[0];
  float *y = args[1];
  float p = *(const float *)args[2];
  int64_t b, e;
  chunk(*(const int64_t *)args[3], block, n_blocks, &b, &e);
  for (int64_t i = b; i < e; i++) y[i] = powf(x[i], p);
}

/* r_isinf (CUBE or VECTOR variants): z[i] = isinf(y[i]); args {y, z, &n}. */
static void r_isinf_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws, (void)ctx;
  const float *y = args[0];
  int8_t *z = args[1];
  int64_t b, e;
  chunk(*(const int64_t *)args[2], block, n_blocks, &b, &e);
  for (int64_t i = b; i < e; i++) z[i] = (int8_t)(isinf(y[i]) ? 1 : 0);
}

/* r_sum: out[i] = sum of z (int8) times i's parity, with one barrier; the
 * per-block partial sums live in the workspace-free args {z, out, partial,
 * &n}. */
static void r_sum_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  const int8_t *z = args[0];
  int32_t *out = args[1], *partial = args[2];
  int64_t n = *(const int64_t *)args[3], b, e;
  chunk(n, block, n_blocks, &b, &e);
  int32_t s = 0;
  for (int64_t i = b; i < e; i++) s += z[i];
  partial[block] = s;
  sk_kernel_barrier(ctx);
  int32_t total = 0;
  for (int64_t k = 0; k < n_blocks; k++) total += partial[k];
  for (int64_t i = b; i < e; i++) out[i] = (i & 1) ? total : -total;
}

/* r_neg: unfusable y[i] = -x[i]; args {x, y, &n}; uses its workspace. */
static void r_neg_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ctx;
  const float *x = args[0];
  float *y = args[1], *tmp = ws;
  int64_t b, e;
  chunk(*(const int64_t *)args[2], block, n_blocks, &b, &e);
  for (int64_t i = b; i < e; i++) {
    tmp[i % 16] = -x[i];
    y[i] = tmp[i % 16];
  }
}

static sk_kernel *r_pow, *r_isinf, *r_isinf_cube, *r_sum1, *r_sum2, *r_neg;

static void register_runtime_kernels(void) {
  r_pow = must_register((sk_kernel_desc){.name = "r_pow", .entry = r_pow_entry, .block_count = 8, .n_params = 4});
  r_isinf = must_register((sk_kernel_desc){.name = "r_isinf", .entry = r_isinf_entry, .block_count = 4, .n_params = 3});
  r_isinf_cube = must_register((sk_kernel_desc){.name = "r_isinf_cube", .entry = r_isinf_entry,
                                                .type = SK_KERNEL_TYPE_CUBE, .block_count = 5, .n_params = 3});
  r_sum1 = must_register((sk_kernel_desc){.name = "r_sum1", .entry = r_sum_entry, .block_count = 1, .n_params = 4,
                                          .barriers_per_block = 1});
  r_sum2 = must_register((sk_kernel_desc){.name = "r_sum2", .entry = r_sum_entry, .block_count = 2, .n_params = 4, .barriers_per_block = 1});
  r_neg = must_register((sk_kernel_desc){.name = "r_neg", .entry = r_neg_entry, .block_count = 3,
                                         .workspace_bytes = 16 * sizeof(float), .n_params = 3, .unfusable = 1});
}

#define N 1000

typedef struct buffers {
  float x[N], y[N], y2[N];
  int8_t z[N];
  int32_t out[N], partial[4];
  float p;
  int64_t n;
} buffers;

static void fill_x(buffers *b, uint64_t seed) {
  uint64_t s = seed;
  for (int i = 0; i < N; i++) {
    b->x[i] = (float)rr_uniform(&s, -3, 3);
    if (i % 7 == 3) b->x[i] = (float)rr_uniform(&s, 1e12, 1e14) * (i % 2 ? -1.0f : 1.0f); /* overflows */
  }
  b->n = N;
}

/* pow -> isinf -> sum (-> neg on the side) fused under options, launched
 * `launches` times with new scalars each time, vs the same kernels each
 * launched alone (a fused kernel of one) with the same argument lists; the
 * first launch also against plain loops. */
static void check_chain(sk_kernel *isinf_kernel, sk_kernel *sum_kernel, bool with_neg, sk_team *team,
                        const char *options, int launches) {
  static buffers a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  fill_x(&a, 11);
  fill_x(&b, 11);
  sk_kernel *kernels[4] = {r_pow, isinf_kernel, sum_kernel, r_neg};
  void *args_a[4][4] = {{a.x, a.y, &a.p, &a.n}, {a.y, a.z, &a.n}, {a.z, a.out, a.partial, &a.n}, {a.y, a.y2, &a.n}};
  void *args_b[4][4] = {{b.x, b.y, &b.p, &b.n}, {b.y, b.z, &b.n}, {b.z, b.out, b.partial, &b.n}, {b.y, b.y2, &b.n}};
  void *const *list_a[4] = {args_a[0], args_a[1], args_a[2], args_a[3]};
  size_t n = with_neg ? 4 : 3;
  sk_fused_kernel *fk = NULL, *alone[4] = {NULL, NULL, NULL, NULL};
  CHECK_OK(sk_fused_kernel_create(kernels, n, options, team, &fk));
  for (size_t i = 0; i < n; i++) CHECK_OK(sk_fused_kernel_create(&kernels[i], 1, "feed-sync-all=1", team, &alone[i]));
  int mismatches = 0;
  for (int run = 0; fk && run < launches; run++) {
    a.p = b.p = (float)(1 + run % 4); /* new scalars each launch; 3 and 4 overflow the large x */
    CHECK_OK(sk_fused_kernel_launch(fk, list_a));
    for (size_t i = 0; i < n; i++) {
      void *const *one[1] = {args_b[i]};
      if (alone[i]) CHECK_OK(sk_fused_kernel_launch(alone[i], one));
    }
    mismatches += memcmp(&a, &b, sizeof a) != 0;
    if (run == 0) {
      int bad = 0;
      for (int i = 0; i < N; i++) {
        float want = powf(a.x[i], a.p);
        bad += memcmp(&want, &a.y[i], sizeof want) != 0 || a.z[i] != (isinf(want) ? 1 : 0);
      }
      CHECK_MSG(bad == 0, "%d elements differ from plain loops", bad);
    }
  }
  int infs = 0;
  for (int i = 0; i < N; i++) infs += a.z[i];
  CHECK_MSG(launches < 3 || infs > 0, "no element overflowed to inf");
  CHECK_MSG(mismatches == 0, "%s: %d of %d launches differ from the kernels launched alone", options, mismatches,
            launches);
  for (size_t i = 0; i < n; i++) sk_fused_kernel_destroy(alone[i]);
  sk_fused_kernel_destroy(fk);
}

/* Every executor $SK_EXECUTOR can pick for a fused kernel; the tests set
 * it and then put back what the suite was started with. */
static const char *const executors[] = {"interp", "jit", "eager"};
static char saved_executor[32];

static void restore_executor(void) {
  if (saved_executor[0]) setenv("SK_EXECUTOR", saved_executor, 1);
  else unsetenv("SK_EXECUTOR");
}

static void test_runtime_fused_vs_alone(void) {
  const char *options[] = {NULL, "compile-options=-g", "debug-sync-all=1", "preload-code=max:debug-dcci-all=1",
                           "early-start=2", "debug-aiv-num=1:debug-aic-num=1"};
  for (size_t e = 0; e < sizeof executors / sizeof executors[0]; e++) {
    setenv("SK_EXECUTOR", executors[e], 1);
    for (int t = 0; t < 3; t++)
      for (size_t o = 0; o < sizeof options / sizeof options[0]; o++) {
        char fso[128];
        snprintf(fso, sizeof fso, "feed-sync-all=1%s%s", options[o] ? ":" : "", options[o] ? options[o] : "");
        check_chain(r_isinf, r_sum1, false, teams[t], fso, 3);
        check_chain(r_isinf_cube, r_sum1, true, teams[t], fso, 3);
        if (t > 0 && !strstr(fso, "debug-aiv-num")) check_chain(r_isinf, r_sum2, true, teams[t], fso, 3);
      }
    check_chain(r_isinf, r_sum1, true, NULL, "feed-sync-all=1", 3); /* no team: the calling thread */
  }
  restore_executor();
  CHECK(atomic_load(&arg_info_misuse) == 0);
}

/* Flags, barriers and the epoch carry over launches. */
static void test_runtime_many_launches(void) {
  for (size_t e = 0; e < 2; e++) {
    setenv("SK_EXECUTOR", executors[e], 1);
    check_chain(r_isinf, r_sum2, false, teams[1], "feed-sync-all=1", 2000);
    check_chain(r_isinf_cube, r_sum1, true, teams[2], "feed-sync-all=1", 1000);
  }
  restore_executor();
}

static void test_runtime_errors(void) {
  sk_fused_kernel *fk = NULL;
  sk_kernel *two[2] = {r_pow, r_isinf};
  sk_kernel *with_null[2] = {r_pow, NULL};
  CHECK_FAILS(sk_fused_kernel_create(two, 2, NULL, teams[1], NULL), SK_STATUS_INVALID_ARGUMENT, "out is NULL");
  CHECK_FAILS(sk_fused_kernel_create(NULL, 2, NULL, teams[1], &fk), SK_STATUS_INVALID_ARGUMENT, "kernels is NULL");
  CHECK_FAILS(sk_fused_kernel_create(two, 0, NULL, teams[1], &fk), SK_STATUS_INVALID_ARGUMENT, "n is 0");
  CHECK_FAILS(sk_fused_kernel_create(with_null, 2, NULL, teams[1], &fk), SK_STATUS_INVALID_ARGUMENT,
              "kernels[1] is NULL");
  CHECK_FAILS(sk_fused_kernel_create(two, 2, "bogus=1", teams[1], &fk), SK_STATUS_INVALID_ARGUMENT,
              "sk_fused_kernel_create", "bogus");
  CHECK_FAILS(sk_fused_kernel_create(two, 2, "early-start=7", teams[1], &fk), SK_STATUS_INVALID_ARGUMENT,
              "early-start", "0, 1, 2");
  CHECK_FAILS(sk_fused_kernel_create(two, 2, "debug-aiv-num=3", teams[1], &fk), SK_STATUS_INVALID_ARGUMENT,
              "debug-aiv-num", "team size 2");
  sk_kernel *bar[2] = {r_pow, r_sum1};
  CHECK_FAILS(sk_fused_kernel_create(bar, 2, NULL, teams[1], &fk), SK_STATUS_INVALID_STATE, "r_sum1", "team barrier",
              "1 blocks for 2 cores", "feed-sync-all=1");
  bar[1] = r_sum2;
  CHECK_FAILS(sk_fused_kernel_create(bar, 2, NULL, teams[0], &fk), SK_STATUS_UNSUPPORTED, "r_sum2", "2 blocks for 1 cores");
  CHECK_FAILS(sk_fused_kernel_create(bar, 2, "debug-aiv-num=1:debug-aic-num=1", teams[1], &fk), SK_STATUS_UNSUPPORTED,
              "r_sum2", "2 blocks", "1 cores");
  sk_kernel *unf[3] = {r_pow, r_neg, r_isinf};
  CHECK_FAILS(sk_fused_kernel_create(unf, 3, "strict-scope-check=abort", teams[1], &fk), SK_STATUS_UNSUPPORTED,
              "r_neg", "cannot be fused", "strict-scope-check=abort");
  CHECK(fk == NULL);
  /* Launch errors. */
  CHECK_OK(sk_fused_kernel_create(two, 2, NULL, teams[1], &fk));
  void *const *missing[2] = {NULL, NULL};
  CHECK_FAILS(sk_fused_kernel_launch(fk, missing), SK_STATUS_INVALID_ARGUMENT, "r_pow", "takes 4 parameters");
  CHECK_FAILS(sk_fused_kernel_launch(fk, NULL), SK_STATUS_INVALID_ARGUMENT, "args is NULL");
  CHECK_FAILS(sk_fused_kernel_launch(NULL, missing), SK_STATUS_INVALID_ARGUMENT, "fk is NULL");
  char *text = NULL;
  CHECK_FAILS(sk_fused_kernel_describe(fk, NULL), SK_STATUS_INVALID_ARGUMENT, "text_out is NULL");
  CHECK_FAILS(sk_fused_kernel_describe(NULL, &text), SK_STATUS_INVALID_ARGUMENT, "fk is NULL");
  sk_fused_kernel_destroy(fk);
  sk_fused_kernel_destroy(NULL);
}

static void test_runtime_describe(void) {
  sk_kernel *kernels[4] = {r_pow, r_isinf, r_pow, r_isinf};
  sk_fused_kernel *fk = NULL;
  setenv("SK_EXECUTOR", "interp", 1);
  CHECK_OK(sk_fused_kernel_create(kernels, 2, "compile-options=-g:early-start=1", teams[1], &fk));
  char *text = NULL;
  if (fk) CHECK_OK(sk_fused_kernel_describe(fk, &text));
  CHECK(text && strstr(text, "fused kernel r_pow+r_isinf: 2 kernels in 1 step, interpreted, 2 cores"));
  CHECK(text && strstr(text, "super kernel r_pow+r_isinf: MIX_AIV_1_0, block dim 8"));
  CHECK(text && strstr(text, "early-start=0") && strstr(text, "compile-options=-g"));
  CHECK(text && strstr(text, "sub 0: r_pow (r_pow, VECTOR), 8 blocks on cores 0-1"));
  CHECK(text && strstr(text, "sub 1: r_isinf (r_isinf, VECTOR), 4 blocks on cores 0-1"));
  CHECK(text && strstr(text, "core 0: barrier 0 over cores 0-1 (after r_pow)") &&
        strstr(text, "core 1: barrier 0 over cores 0-1 (after r_pow)"));
  CHECK(text && !strstr(text, "wait for flag"));
  sk_free(text);
  sk_fused_kernel_destroy(fk);
  /* A kernel twice; unfusable kernels split the run (strict-scope-check unset). */
  sk_kernel *split[5] = {r_pow, r_isinf, r_neg, r_pow, r_isinf_cube};
  CHECK_OK(sk_fused_kernel_create(split, 5, NULL, teams[2], &fk));
  text = NULL;
  if (fk) CHECK_OK(sk_fused_kernel_describe(fk, &text));
  CHECK(text && strstr(text, "5 kernels in 3 steps"));
  CHECK(text && strstr(text, "super kernel r_pow+r_isinf+r_neg+r_pow+r_isinf_cube.0: MIX_AIV_1_0"));
  CHECK(text && strstr(text, "kernel r_neg: own launch, 3 blocks (unfusable)"));
  CHECK(text && strstr(text, "super kernel r_pow+r_isinf+r_neg+r_pow+r_isinf_cube.1: MIX_AIC_1_2"));
  CHECK(text && strstr(text, "sub 0: r_pow#2 (r_pow, VECTOR)"));
  CHECK(text && strstr(text, "barrier 0 over cores 0-2 (after r_pow#2)"));
  sk_free(text);
  sk_fused_kernel_destroy(fk);
  CHECK_OK(sk_fused_kernel_create(split, 5, "strict-scope-check=bypass", teams[2], &fk));
  text = NULL;
  if (fk) CHECK_OK(sk_fused_kernel_describe(fk, &text));
  CHECK(text && strstr(text, "5 kernels in 5 steps") && strstr(text, "kernel r_pow#2: own launch, 8 blocks\n"));
  sk_free(text);
  sk_fused_kernel_destroy(fk);
  /* The JIT compiles each super kernel (compile-options are its flags);
   * eager runs every kernel on its own. */
  setenv("SK_EXECUTOR", "jit", 1);
  CHECK_OK(sk_fused_kernel_create(kernels, 2, "compile-options=-g", teams[1], &fk));
  text = NULL;
  if (fk) CHECK_OK(sk_fused_kernel_describe(fk, &text));
  CHECK(text && strstr(text, "2 kernels in 1 step, JIT-compiled, 2 cores"));
  sk_free(text);
  sk_fused_kernel_destroy(fk);
  setenv("SK_EXECUTOR", "eager", 1);
  CHECK_OK(sk_fused_kernel_create(kernels, 2, NULL, teams[1], &fk));
  text = NULL;
  if (fk) CHECK_OK(sk_fused_kernel_describe(fk, &text));
  CHECK(text && strstr(text, "2 kernels in 2 steps, eager") && strstr(text, "kernel r_isinf: own launch, 4 blocks"));
  sk_free(text);
  sk_fused_kernel_destroy(fk);
  setenv("SK_EXECUTOR", "fast", 1);
  CHECK_FAILS(sk_fused_kernel_create(kernels, 2, NULL, teams[1], &fk), SK_STATUS_INVALID_ARGUMENT, "SK_EXECUTOR=fast",
              "eager, interp, jit or auto");
  restore_executor();
}

/* Unfusable kernels under every strict-scope-check setting give the same
 * bits as the kernels alone. */
static void test_runtime_unfusable(void) {
  for (int t = 0; t < 6; t++) {
    setenv("SK_EXECUTOR", executors[t / 3], 1);
    check_chain(r_isinf, r_sum1, true, teams[t % 3], "feed-sync-all=1:strict-scope-check=bypass", 3);
    sk_kernel *kernels[3] = {r_neg, r_pow, r_neg};
    static float x[N], y[N], z[N], w[N];
    static volatile float two = 2.0f; /* not a constant: powf(v, 2.0f) may become v * v */
    float p = two;
    int64_t n = N;
    uint64_t s = 5;
    for (int i = 0; i < N; i++) x[i] = (float)rr_uniform(&s, -2, 2);
    void *a0[3] = {x, y, &n}, *a1[4] = {y, z, &p, &n}, *a2[3] = {z, w, &n};
    void *const *args[3] = {a0, a1, a2};
    sk_fused_kernel *fk = NULL;
    CHECK_OK(sk_fused_kernel_create(kernels, 3, NULL, teams[t % 3], &fk));
    if (fk) CHECK_OK(sk_fused_kernel_launch(fk, args));
    int bad = 0;
    for (int i = 0; i < N; i++) {
      float want = -powf(-x[i], p);
      bad += memcmp(&want, &w[i], sizeof want) != 0;
    }
    CHECK_MSG(bad == 0, "%d elements differ, %d cores, %s", bad, t % 3 + 1, executors[t / 3]);
    sk_fused_kernel_destroy(fk);
  }
  restore_executor();
}

int main(void) {
  const char *executor = getenv("SK_EXECUTOR");
  if (executor) snprintf(saved_executor, sizeof saved_executor, "%s", executor);
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  register_graph_kernels();
  register_runtime_kernels();
  static const harness_case cases[] = {
      TEST_CASE(test_register_errors),      TEST_CASE(test_graph_fused_vs_eager), TEST_CASE(test_graph_errors),
      TEST_CASE(test_graph_unfusable),      TEST_CASE(test_graph_barrier_kernel), TEST_CASE(test_runtime_fused_vs_alone),
      TEST_CASE(test_runtime_many_launches), TEST_CASE(test_runtime_errors),      TEST_CASE(test_runtime_describe),
      TEST_CASE(test_runtime_unfusable),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

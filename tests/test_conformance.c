/* Conformance: one table of cases, every built-in op (the list of
 * sk_op_count / sk_op_info) with at least one, each run through the eager,
 * interpreted and JIT executors on teams of 1, 2 and 3 cores and compared
 * bit for bit with the op's plain reference — the way ggml's
 * test-backend-ops runs one table over every backend. ctest registers it
 * once per ISA path (SK_ISA). Each case runs twice: every tensor a graph
 * input, and every slot but the first a graph constant (weights: what ops
 * pack at compile). Each case also checks sk_op_infer against the shapes
 * the graph inferred. */
#include <stdbool.h>
#include <string.h>

#include "harness.h"
#include "reference_runner.h"

#define MAX_LIST 3
#define MAX_CASE_SLOTS 8
#define MAX_CASE_ATTRS 6

typedef struct tensor_spec {
  sk_dtype dtype;
  int rank;
  int64_t shape[4];
} tensor_spec;

typedef struct slot_spec {
  const char *name; /* NULL ends the list */
  int count;        /* tensors in the slot (a list slot may take several) */
  tensor_spec t[MAX_LIST];
  double lo, hi;    /* when hi > lo: its values are drawn from [lo, hi) (indices a run checks) */
} slot_spec;

typedef struct conf_case {
  const char *op;
  const char *what;
  slot_spec slots[MAX_CASE_SLOTS];
  sk_attr attrs[MAX_CASE_ATTRS];
  size_t n_attrs;
} conf_case;

#define T(dt, ...) {dt, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {__VA_ARGS__}}
#define ONE(nm, ...) {.name = nm, .count = 1, .t = {__VA_ARGS__}}
/* One tensor whose values are drawn from [lo, hi): row and expert indices. */
#define IN_RANGE(nm, l, h, ...) {.name = nm, .count = 1, .t = {__VA_ARGS__}, .lo = l, .hi = h}

static const int64_t reshape_to[] = {3, -1};
static const int64_t counts_5_5_10[] = {5, 5, 10};
static const int64_t ends_8_20[] = {8, 20};
static const int64_t dim_minus_2[] = {-2};
static const int64_t range_2_9[] = {2, 9};

static const conf_case CASES[] = {
    {"reshape", "fp32 [4,6] -> [3,-1]", {ONE("x", T(SK_FP32, 4, 6))}, {SK_ATTR_INTS("shape", reshape_to, 2)}, 1},
    {"slice", "fp16 [9,5] rows 2:-3", {ONE("x", T(SK_FP16, 9, 5))}, {SK_ATTR_INT("start", 2), SK_ATTR_INT("end", -3)}, 2},
    {"slice", "int32 [4,3,2] rows -1:", {ONE("x", T(SK_INT32, 4, 3, 2))}, {SK_ATTR_INT("start", -1)}, 1},
    {"squeeze", "bool [1,6,1] every 1", {ONE("x", T(SK_BOOL, 1, 6, 1))}, {{0}}, 0},
    {"squeeze", "fp32 [3,1,4] dims [-2]", {ONE("x", T(SK_FP32, 3, 1, 4))}, {SK_ATTR_INTS("dims", dim_minus_2, 1)}, 1},
    {"unsqueeze", "uint8 [5,7] dim 1", {ONE("x", T(SK_UINT8, 5, 7))}, {SK_ATTR_INT("dim", 1)}, 1},
    {"square", "fp16 [37,5]", {ONE("x", T(SK_FP16, 37, 5))}, {{0}}, 0},
    {"square", "int32 [3000]", {ONE("x", T(SK_INT32, 3000))}, {{0}}, 0},
    {"add", "bf16 [3,50]", {ONE("x", T(SK_BF16, 3, 50)), ONE("y", T(SK_BF16, 3, 50))}, {{0}}, 0},
    {"add", "int8 [40000]", {ONE("x", T(SK_INT8, 40000)), ONE("y", T(SK_INT8, 40000))}, {{0}}, 0},
    {"mul", "fp32 [1000]", {ONE("x", T(SK_FP32, 1000)), ONE("y", T(SK_FP32, 1000))}, {{0}}, 0},
    {"add", "fp16 [4,1,33] + [5,1]", {ONE("x", T(SK_FP16, 4, 1, 33)), ONE("y", T(SK_FP16, 5, 1))}, {{0}}, 0},
    {"mul", "bool [3,7000] * [7000]", {ONE("x", T(SK_BOOL, 3, 7000)), ONE("y", T(SK_BOOL, 7000))}, {{0}}, 0},
    {"add", "int32 [40000,1] + [1,3]", {ONE("x", T(SK_INT32, 40000, 1)), ONE("y", T(SK_INT32, 1, 3))}, {{0}}, 0},
    {"add", "uint8 + scalar 7", {ONE("x", T(SK_UINT8, 300))}, {SK_ATTR_FLOAT("scalar", 7)}, 1},
    {"mul", "bf16 * scalar -1.5", {ONE("x", T(SK_BF16, 3, 17000))}, {SK_ATTR_FLOAT("scalar", -1.5)}, 1},
    {"cast", "fp32 -> fp16", {ONE("x", T(SK_FP32, 7, 9))}, {SK_ATTR_INT("dtype", SK_FP16)}, 1},
    {"cast", "int32 -> bf16", {ONE("x", T(SK_INT32, 33))}, {SK_ATTR_INT("dtype", SK_BF16)}, 1},
    {"cast", "fp32 -> bool", {ONE("x", T(SK_FP32, 3, 41))}, {SK_ATTR_INT("dtype", SK_BOOL)}, 1},
    {"cast", "bool -> fp16", {ONE("x", T(SK_BOOL, 20000))}, {SK_ATTR_INT("dtype", SK_FP16)}, 1},
    {"cast", "uint8 -> bf16", {ONE("x", T(SK_UINT8, 77))}, {SK_ATTR_INT("dtype", SK_BF16)}, 1},
    {"cast", "int64 -> uint8", {ONE("x", T(SK_INT64, 5, 9))}, {SK_ATTR_INT("dtype", SK_UINT8)}, 1},
    {"cast", "bf16 -> uint8", {ONE("x", T(SK_BF16, 40000))}, {SK_ATTR_INT("dtype", SK_UINT8)}, 1},
    {"concat", "fp16 dim -1", {{.name = "x", .count = 2, .t = {T(SK_FP16, 2, 3), T(SK_FP16, 2, 5)}}}, {SK_ATTR_INT("dim", -1)}, 1},
    {"grouped_matmul", "fp16 lists", {{.name = "x", .count = 2, .t = {T(SK_FP16, 16, 32), T(SK_FP16, 3, 8)}},
                                      {.name = "weight", .count = 2, .t = {T(SK_FP16, 32, 24), T(SK_FP16, 8, 40)}}}, {{0}}, 0},
    {"grouped_matmul", "bf16 experts, counts, split 2",
     {ONE("x", T(SK_BF16, 20, 32)), ONE("weight", T(SK_BF16, 3, 32, 16))},
     {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", counts_5_5_10, 3), SK_ATTR_INT("group_list_type", 1),
      SK_ATTR_INT("split_item", 2)}, 4},
    {"grouped_matmul", "bf16 experts [E,N,K] transposed",
     {ONE("x", T(SK_BF16, 20, 32)), ONE("weight", T(SK_BF16, 3, 40, 32)), ONE("bias", T(SK_FP32, 3, 40))},
     {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", counts_5_5_10, 3), SK_ATTR_INT("group_list_type", 1),
      SK_ATTR_INT("split_item", 3), SK_ATTR_INT("transpose_weight", 1)}, 5},
    {"grouped_matmul", "fp32 lists [N,K] transposed", {{.name = "x", .count = 2, .t = {T(SK_FP32, 7, 32), T(SK_FP32, 3, 8)}},
                                      {.name = "weight", .count = 2, .t = {T(SK_FP32, 24, 32), T(SK_FP32, 40, 8)}}},
     {SK_ATTR_INT("transpose_weight", 1)}, 1},
    {"grouped_matmul", "int8 experts -> int32",
     {ONE("x", T(SK_INT8, 20, 64)), ONE("weight", T(SK_INT8, 2, 64, 16))},
     {SK_ATTR_INT("group_type", 0), SK_ATTR_INTS("group_list", ends_8_20, 2), SK_ATTR_INT("split_item", 3)}, 3},
    {"moe_gating_topk", "fp32 sigmoid, groups",
     {ONE("x", T(SK_FP32, 9, 16)), ONE("bias", T(SK_FP32, 16))},
     {SK_ATTR_INT("k", 4), SK_ATTR_INT("k_group", 2), SK_ATTR_INT("group_count", 4), SK_ATTR_INT("norm_type", 1),
      SK_ATTR_INT("out_flag", 1)}, 5},
    {"moe_gating_topk", "fp16 softmax", {ONE("x", T(SK_FP16, 5, 8))}, {SK_ATTR_INT("k", 2)}, 1},
    {"dequant_swiglu_quant", "int32 dynamic",
     {ONE("x", T(SK_INT32, 7, 32)), ONE("weight_scale", T(SK_FP32, 32)), ONE("activation_scale", T(SK_FP32, 7))},
     {SK_ATTR_INT("quant_mode", 1)}, 1},
    {"dequant_swiglu_quant", "fp16 dynamic, left", {ONE("x", T(SK_FP16, 5, 16))},
     {SK_ATTR_INT("quant_mode", 1), SK_ATTR_INT("activate_left", 1)}, 2},
    {"quant_matmul", "int8 out, packed scale",
     {ONE("x1", T(SK_INT8, 5, 32)), ONE("x2", T(SK_INT8, 32, 24)), ONE("scale", T(SK_INT64, 24))}, {{0}}, 0},
    {"quant_matmul", "fp16 out, per-token",
     {ONE("x1", T(SK_INT8, 2, 5, 32)), ONE("x2", T(SK_INT8, 32, 24)), ONE("scale", T(SK_FP32, 24)),
      ONE("pertoken_scale", T(SK_FP32, 5))},
     {SK_ATTR_INT("output_dtype", SK_FP16)}, 1},
    {"rms_norm", "fp16 [37,96], fp16 gamma", {ONE("x", T(SK_FP16, 37, 96)), ONE("gamma", T(SK_FP16, 96))}, {{0}}, 0},
    {"rms_norm", "bf16 [3,5,40], fp32 gamma, eps 1e-5", {ONE("x", T(SK_BF16, 3, 5, 40)), ONE("gamma", T(SK_FP32, 40))},
     {SK_ATTR_FLOAT("epsilon", 1e-5)}, 1},
    {"rms_norm", "fp32 [700,33]", {ONE("x", T(SK_FP32, 700, 33)), ONE("gamma", T(SK_FP32, 33))}, {{0}}, 0},
    {"add_rms_norm", "fp16 [19,70]",
     {ONE("x1", T(SK_FP16, 19, 70)), ONE("x2", T(SK_FP16, 19, 70)), ONE("gamma", T(SK_FP16, 70))}, {{0}}, 0},
    {"add_rms_norm", "fp32 [4,1,17], eps 0",
     {ONE("x1", T(SK_FP32, 4, 1, 17)), ONE("x2", T(SK_FP32, 4, 1, 17)), ONE("gamma", T(SK_FP32, 17))},
     {SK_ATTR_FLOAT("epsilon", 0)}, 1},
    {"swiglu", "fp16 [9,64]", {ONE("x", T(SK_FP16, 9, 64))}, {{0}}, 0},
    {"swiglu", "bf16 [4,6,5] dim 1", {ONE("x", T(SK_BF16, 4, 6, 5))}, {SK_ATTR_INT("dim", 1)}, 1},
    {"swiglu", "fp32 [5000,2]", {ONE("x", T(SK_FP32, 5000, 2))}, {{0}}, 0},
    {"moe_init_routing", "fp16, 10 ids of 8 experts",
     {ONE("x", T(SK_FP16, 37, 24)), IN_RANGE("expert_idx", 0, 10, T(SK_INT32, 37, 3)), ONE("scale", T(SK_FP32, 37))},
     {SK_ATTR_INT("expert_num", 8)}, 1},
    {"moe_init_routing", "bf16 dynamic int8, range, gather, counts, active 50",
     {ONE("x", T(SK_BF16, 40, 33)), IN_RANGE("expert_idx", -1, 12, T(SK_INT32, 40, 2))},
     {SK_ATTR_INT("expert_num", 12), SK_ATTR_INT("quant_mode", 1), SK_ATTR_INTS("active_expert_range", range_2_9, 2),
      SK_ATTR_INT("row_idx_type", 1), SK_ATTR_INT("expert_tokens_num_type", 1), SK_ATTR_INT("active_num", 50)}, 6},
    {"moe_init_routing", "decode: one bf16 token, 8 of 16 experts, dynamic int8",
     {ONE("x", T(SK_BF16, 1, 300)), IN_RANGE("expert_idx", 0, 16, T(SK_INT32, 1, 8))},
     {SK_ATTR_INT("expert_num", 16), SK_ATTR_INT("quant_mode", 1)}, 2},
    {"moe_init_routing", "fp32 3 tokens, 6 of 4 experts, dynamic int8",
     {ONE("x", T(SK_FP32, 3, 130)), IN_RANGE("expert_idx", 0, 4, T(SK_INT32, 3, 6))},
     {SK_ATTR_INT("expert_num", 4), SK_ATTR_INT("quant_mode", 1)}, 2},
    {"moe_finalize_routing", "fp16, skips, bias, fp32 scales, column order",
     {ONE("expanded_permuted_rows", T(SK_FP16, 60, 20)), ONE("skip1", T(SK_FP16, 21, 20)), ONE("skip2", T(SK_FP16, 21, 20)),
      ONE("bias", T(SK_FP16, 5, 20)), ONE("scales", T(SK_FP32, 21, 3)),
      IN_RANGE("expanded_src_to_dst_row", -1, 60, T(SK_INT32, 63)), IN_RANGE("export_for_source_row", 0, 5, T(SK_INT32, 21, 3))},
     {{0}}, 0},
    {"moe_finalize_routing", "fp32, row order, k 2",
     {ONE("expanded_permuted_rows", T(SK_FP32, 30, 65)), IN_RANGE("expanded_src_to_dst_row", -1, 30, T(SK_INT32, 64))},
     {SK_ATTR_INT("drop_pad_mode", 2), SK_ATTR_INT("k", 2)}, 2},
    {"moe_gating_topk_softmax", "fp16 [33,64] k 6", {ONE("x", T(SK_FP16, 33, 64))}, {SK_ATTR_INT("k", 6)}, 1},
    {"moe_gating_topk_softmax", "fp32 [5,128] k 8 renorm", {ONE("x", T(SK_FP32, 5, 128))},
     {SK_ATTR_INT("k", 8), SK_ATTR_INT("renorm", 1)}, 2},
    {"linear", "fp32 [7,40] x [24,40]^T + bias", {ONE("x", T(SK_FP32, 7, 40)), ONE("weight", T(SK_FP32, 24, 40)),
     ONE("bias", T(SK_FP32, 24))}, {{0}}, 0},
    {"linear", "bf16 [2,3,33] x [70,33]^T", {ONE("x", T(SK_BF16, 2, 3, 33)), ONE("weight", T(SK_BF16, 70, 33))}, {{0}}, 0},
    {"linear", "fp16 [40,16] x [8,16]^T", {ONE("x", T(SK_FP16, 40, 16)), ONE("weight", T(SK_FP16, 8, 16))}, {{0}}, 0},
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

static sk_team *teams[4];

/* The case as one node inside scope "sk" (so the fused executors fuse it),
 * every output marked; with constants, every slot after the first holds
 * graph constants (copied) instead of inputs. Also checks sk_op_infer on
 * the same description. */
static sk_graph *build_case(const conf_case *c, bool constants) {
  sk_graph *g = NULL;
  CHECK_OK(sk_graph_create(&g));
  sk_value values[MAX_CASE_SLOTS][MAX_LIST];
  sk_op_input ins[MAX_CASE_SLOTS];
  sk_tensor_meta metas[MAX_CASE_SLOTS * MAX_LIST];
  size_t n_ins = 0, n_metas = 0;
  for (; n_ins < MAX_CASE_SLOTS && c->slots[n_ins].name; n_ins++) {
    const slot_spec *s = &c->slots[n_ins];
    for (int j = 0; j < s->count; j++) {
      char name[64];
      snprintf(name, sizeof name, "%s%d", s->name, j);
      const tensor_spec *t = &s->t[j];
      if (constants && n_ins > 0) {
        int64_t numel = 1;
        for (int d = 0; d < t->rank; d++) numel *= t->shape[d];
        void *data = calloc((size_t)numel + 1, sk_dtype_size(t->dtype));
        uint64_t seed = 1234 + (uint64_t)n_metas;
        if (s->hi > s->lo) rr_fill(data, t->dtype, (size_t)numel, s->lo, s->hi, &seed);
        else rr_fill_dtype_range(data, t->dtype, (size_t)numel, &seed);
        CHECK_OK(sk_graph_add_constant(g, name, t->dtype, t->rank, t->shape, data, SK_CONSTANT_COPY,
                                       &values[n_ins][j]));
        free(data);
      } else {
        CHECK_OK(sk_graph_add_input(g, name, t->dtype, t->rank, t->shape, &values[n_ins][j]));
      }
      metas[n_metas] = (sk_tensor_meta){.dtype = t->dtype, .rank = t->rank};
      memcpy(metas[n_metas++].shape, t->shape, sizeof t->shape);
    }
    ins[n_ins] = (sk_op_input){s->name, values[n_ins], (size_t)s->count};
  }
  sk_op_desc d = {.op = c->op, .inputs = ins, .n_inputs = n_ins, .attrs = c->attrs, .n_attrs = c->n_attrs};
  sk_value outs[8];
  size_t n_out = 0;
  CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
  CHECK_OK(sk_graph_add_op(g, &d, outs, 8, &n_out));
  CHECK_OK(sk_graph_end_scope(g));
  sk_tensor_meta inferred[8];
  size_t n_inferred = 0;
  CHECK_OK(sk_op_infer(&d, metas, n_metas, inferred, 8, &n_inferred));
  CHECK_MSG(n_inferred == n_out, "%s: sk_op_infer gave %zu outputs, the graph %zu", c->op, n_inferred, n_out);
  for (size_t o = 0; o < n_out && o < n_inferred; o++) {
    sk_tensor_meta m = {0};
    CHECK_OK(sk_graph_value_info(g, outs[o], &m.dtype, &m.rank, m.shape));
    CHECK_MSG(m.dtype == inferred[o].dtype && m.rank == inferred[o].rank &&
                  memcmp(m.shape, inferred[o].shape, (size_t)m.rank * sizeof(int64_t)) == 0,
              "%s (%s): output %zu: sk_op_infer disagrees with the graph", c->op, c->what, o);
    char name[32];
    snprintf(name, sizeof name, "out%zu", o);
    CHECK_OK(sk_graph_mark_output(g, outs[o], name));
  }
  CHECK_OK(sk_op_supported(&d, metas, n_metas));
  return g;
}

static int run_case(const conf_case *c, sk_graph *g, sk_executor ex, int cores) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[cores], .executor = ex};
  sk_program *p = NULL;
  sk_status st = sk_compile(g, &cfg, &p);
  CHECK_MSG(st == SK_STATUS_OK, "%s (%s): compile: %s", c->op, c->what, sk_last_error());
  if (st != SK_STATUS_OK) return 1;
  rr_buffers b;
  int bad = 1;
  if (rr_alloc(p, &b, -1, 1, 7)) {
    rr_fill_by_dtype(&b, p, 11);
    /* Inputs of a slot with a range (named <slot><j>) get values from it. */
    for (size_t i = 0; i < b.n_inputs; i++)
      for (int s = 0; s < MAX_CASE_SLOTS && c->slots[s].name; s++) {
        const slot_spec *sl = &c->slots[s];
        size_t len = strlen(sl->name);
        if (sl->hi > sl->lo && strncmp(b.inputs[i].name, sl->name, len) == 0 && b.inputs[i].name[len] >= '0' &&
            b.inputs[i].name[len] <= '9') {
          uint64_t seed = 99 + i;
          const char *name;
          sk_dtype dt;
          int rank;
          int64_t shape[SK_MAX_RANK];
          CHECK_OK(sk_program_input_info(p, i, &name, &dt, &rank, shape));
          rr_fill(b.inputs[i].data, dt, b.inputs[i].bytes / sk_dtype_size(dt), sl->lo, sl->hi, &seed);
        }
      }
    bad = rr_check_program(p, teams[cores], &b);
    rr_free(&b);
  }
  CHECK_MSG(bad == 0, "%s (%s): executor %d on %d cores differs from the reference", c->op, c->what, (int)ex, cores);
  sk_program_destroy(p);
  return bad;
}

static void test_every_case_on_every_executor(void) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (size_t i = 0; i < N_CASES; i++)
    for (int constants = 0; constants < 2; constants++) {
      sk_graph *g = build_case(&CASES[i], constants);
      int bad = 0;
      for (size_t e = 0; e < 3; e++)
        for (int cores = 1; cores <= 3; cores++) bad += run_case(&CASES[i], g, executors[e], cores);
      printf("  %-22s %-32s %-10s %s\n", CASES[i].op, CASES[i].what, constants ? "constants" : "inputs",
             bad ? "MISMATCH" : "bitwise equal x9");
      sk_graph_destroy(g);
    }
}

/* The table covers every built-in op: a new op without a case fails here. */
static void test_every_op_has_a_case(void) {
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    CHECK_OK(sk_op_info(i, &s));
    bool found = false;
    for (size_t k = 0; k < N_CASES && !found; k++) found = strcmp(CASES[k].op, s.name) == 0;
    CHECK_MSG(found, "op %s has no conformance case", s.name);
  }
}

static void setup(void) {
  for (int n = 1; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
}

static void teardown(void) {
  for (int n = 1; n <= 3; n++) sk_team_destroy(teams[n]);
}

TEST_MAIN(TEST_CASE(setup), TEST_CASE(test_every_op_has_a_case), TEST_CASE(test_every_case_on_every_executor),
          TEST_CASE(teardown))

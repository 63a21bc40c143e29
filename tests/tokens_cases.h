/* Graphs for the run-time token count tests (test_tokens.c,
 * test_batch_invariance.c): each builder makes its graph either with a
 * run-time token count (tokens = SK_DIM_DYNAMIC, max = the maximum) or
 * with static shapes for exactly `tokens` tokens — the same graph, so a
 * dynamic program's run at T can be checked against an independent build
 * for T. Every token-dependent input is a float input of T rows; weights
 * are constants drawn from a fixed seed (the same in both builds). */
#ifndef SK_TEST_TOKENS_CASES_H
#define SK_TEST_TOKENS_CASES_H

#include <stdlib.h>

#include "graph_builders.h"
#include "harness.h"

typedef struct tokens_case {
  const char *name;
  void (*build)(sk_graph *g, int64_t tokens, sk_dtype dt);
  sk_dtype dtype;
} tokens_case;

static uint64_t tc_rng;
static float tc_uniform(float lo, float hi) {
  tc_rng = tc_rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (float)((double)(tc_rng >> 11) / (double)(1ull << 53));
}

static inline void tc_store(void *data, sk_dtype dt, int64_t i, float v) {
  if (dt == SK_FP32) ((float *)data)[i] = v;
  else if (dt == SK_FP16) ((uint16_t *)data)[i] = sk_fp32_to_fp16(v);
  else ((uint16_t *)data)[i] = sk_fp32_to_bf16(v);
}

/* A constant of values in [-scale, scale]: the same data in every build of
 * a case (the seed is the name's). */
static inline sk_value tc_weight(sk_graph *g, const char *name, sk_dtype dt, int rank, const int64_t *shape,
                                 float scale) {
  tc_rng = 0x9E3779B97F4A7C15ull;
  for (const char *c = name; *c; c++) tc_rng = tc_rng * 31 + (unsigned char)*c;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  void *data = malloc((size_t)n * sk_dtype_size(dt) + 1);
  for (int64_t i = 0; i < n; i++) tc_store(data, dt, i, tc_uniform(-scale, scale));
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_constant(g, name, dt, rank, shape, data, SK_CONSTANT_COPY, &v));
  free(data);
  return v;
}

/* The graph's token-dependent input: [tokens, h] (tokens may be SK_DIM_DYNAMIC). */
static inline sk_value tc_tokens_input(sk_graph *g, const char *name, sk_dtype dt, int64_t tokens, int64_t h) {
  return input(g, name, dt, 2, (int64_t[]){tokens, h});
}

/* square, add of a [1, H] row and of a second token input, mul by a scalar, cast. */
static inline void tc_elementwise(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 40;
  CHECK_OK(sk_graph_begin_scope(g, "ew", NULL));
  sk_value x = tc_tokens_input(g, "x", dt, t, h), x2 = tc_tokens_input(g, "x2", dt, t, h);
  sk_value row = tc_weight(g, "row", dt, 2, (int64_t[]){1, h}, 1.0f);
  sk_value sq = unary(g, "square", "sq", x);
  sk_value a = binary(g, "add", "add_row", sq, row);
  sk_value b = binary(g, "add", "add_x2", a, x2);
  sk_op_input min[] = {{"x", &b, 1}};
  sk_attr scalar[] = {SK_ATTR_FLOAT("scalar", 0.75)};
  sk_value m, c;
  op(g, "mul", "mul_scalar", min, 1, scalar, 1, &m, 1);
  sk_op_input cin[] = {{"x", &m, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  op(g, "cast", "to_fp32", cin, 1, to32, 1, &c, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, c, "y"));
  CHECK_OK(sk_graph_mark_output(g, a, "a"));
}

/* rms_norm, add_rms_norm, swiglu, a reshape to [T, 2, H/2] and back, concat along dim 1. */
static inline void tc_norms(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 64;
  sk_value x = tc_tokens_input(g, "x", dt, t, h), r = tc_tokens_input(g, "r", dt, t, h);
  sk_value gamma = tc_weight(g, "gamma", dt, 1, (int64_t[]){h}, 1.0f);
  CHECK_OK(sk_graph_begin_scope(g, "norms", NULL));
  sk_op_input nin[] = {{"x", &x, 1}, {"gamma", &gamma, 1}};
  sk_value n[2], an[3];
  op(g, "rms_norm", "norm", nin, 2, NULL, 0, n, 2);
  sk_op_input ain[] = {{"x1", &n[0], 1}, {"x2", &r, 1}, {"gamma", &gamma, 1}};
  op(g, "add_rms_norm", "add_norm", ain, 3, NULL, 0, an, 3);
  sk_value act = unary(g, "swiglu", "act", an[0]);
  sk_op_input rin[] = {{"x", &act, 1}};
  sk_attr shape3[] = {SK_ATTR_INTS("shape", ((const int64_t[]){-1, 2, h / 4}), 3)};
  sk_value r3, back, cat;
  op(g, "reshape", "split_rows", rin, 1, shape3, 1, &r3, 1);
  sk_op_input bin[] = {{"x", &r3, 1}};
  sk_attr shape2[] = {SK_ATTR_INTS("shape", ((const int64_t[]){-1, h / 2}), 2)};
  op(g, "reshape", "join_rows", bin, 1, shape2, 1, &back, 1);
  sk_value parts[] = {back, an[0]};
  sk_op_input cin[] = {{"x", parts, 2}};
  sk_attr dim1[] = {SK_ATTR_INT("dim", 1)};
  op(g, "concat", "cat", cin, 1, dim1, 1, &cat, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, cat, "y"));
  CHECK_OK(sk_graph_mark_output(g, n[1], "rstd"));
  CHECK_OK(sk_graph_mark_output(g, an[2], "x_sum"));
}

/* linear (fp32 gate) and dense grouped matmuls on a constant weight. */
static inline void tc_matmuls(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 48, n = 80;
  sk_value x = tc_tokens_input(g, "x", dt, t, h);
  sk_value w = tc_weight(g, "w", dt, 2, (int64_t[]){h, n}, 0.3f);
  sk_value w2 = tc_weight(g, "w2", dt, 2, (int64_t[]){n, h}, 0.3f);
  sk_value gate = tc_weight(g, "gate", SK_FP32, 2, (int64_t[]){16, h}, 0.5f);
  CHECK_OK(sk_graph_begin_scope(g, "mm", NULL));
  sk_op_input in1[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_value h1, h2, xf, logits;
  op(g, "grouped_matmul", "up", in1, 2, NULL, 0, &h1, 1);
  sk_op_input in2[] = {{"x", &h1, 1}, {"weight", &w2, 1}};
  op(g, "grouped_matmul", "down", in2, 2, NULL, 0, &h2, 1);
  sk_op_input cin[] = {{"x", &x, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  op(g, "cast", "x_fp32", cin, 1, to32, 1, &xf, 1);
  sk_op_input lin[] = {{"x", &xf, 1}, {"weight", &gate, 1}};
  op(g, "linear", "gate", lin, 2, NULL, 0, &logits, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, h2, "y"));
  CHECK_OK(sk_graph_mark_output(g, logits, "logits"));
}

/* A whole MoE layer (test_moe_layer.c's): gate, gating, dispatch, the
 * experts' grouped matmuls on the run-time group list, swiglu, a shared
 * expert, combine. softmax: Qwen3-MoE's routing; else DeepSeek-V3's
 * grouped sigmoid. */
static inline void tc_moe(sk_graph *g, int64_t t, sk_dtype dt, bool sigmoid) {
  const int64_t h = 32, e = 16, k = 4, inter = 24;
  sk_value x = tc_tokens_input(g, "x", dt, t, h);
  sk_value gate = tc_weight(g, "gate", SK_FP32, 2, (int64_t[]){e, h}, 0.5f);
  sk_value w_up = tc_weight(g, "w_up", dt, 3, (int64_t[]){e, h, 2 * inter}, 0.3f);
  sk_value w_down = tc_weight(g, "w_down", dt, 3, (int64_t[]){e, inter, h}, 0.3f);
  sk_value s_up = tc_weight(g, "s_up", dt, 2, (int64_t[]){h, 2 * inter}, 0.3f);
  sk_value s_down = tc_weight(g, "s_down", dt, 2, (int64_t[]){inter, h}, 0.3f);
  sk_value bias = sigmoid ? tc_weight(g, "bias", SK_FP32, 1, (int64_t[]){e}, 0.1f) : SK_VALUE_NONE;
  CHECK_OK(sk_graph_begin_scope(g, "moe", NULL));
  sk_op_input cin[] = {{"x", &x, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value xf, logits, gating[4], routing[4], up, down, sh, y;
  op(g, "cast", "x_fp32", cin, 1, to32, 1, &xf, 1);
  sk_op_input lin[] = {{"x", &xf, 1}, {"weight", &gate, 1}};
  op(g, "linear", "gate", lin, 2, NULL, 0, &logits, 1);
  if (sigmoid) {
    sk_op_input gin[] = {{"x", &logits, 1}, {"bias", &bias, 1}};
    sk_attr at[] = {SK_ATTR_INT("k", k), SK_ATTR_INT("k_group", 2), SK_ATTR_INT("group_count", 4),
                    SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1), SK_ATTR_INT("renorm", 1),
                    SK_ATTR_FLOAT("routed_scaling_factor", 2.5)};
    op(g, "moe_gating_topk", "gating", gin, 2, at, 7, gating, 3);
  } else {
    sk_op_input gin[] = {{"x", &logits, 1}};
    sk_attr at[] = {SK_ATTR_INT("k", k), SK_ATTR_INT("renorm", 1)};
    op(g, "moe_gating_topk_softmax", "gating", gin, 1, at, 2, gating, 4);
  }
  sk_op_input rin[] = {{"x", &x, 1}, {"expert_idx", &gating[1], 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", e)};
  op(g, "moe_init_routing", "dispatch", rin, 2, rat, 1, routing, 4);
  sk_attr gat[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3)};
  sk_op_input uin[] = {{"x", &routing[0], 1}, {"weight", &w_up, 1}, {"group_list", &routing[2], 1}};
  op(g, "grouped_matmul", "experts_up", uin, 3, gat, 2, &up, 1);
  sk_value act = unary(g, "swiglu", "experts_act", up);
  sk_op_input din[] = {{"x", &act, 1}, {"weight", &w_down, 1}, {"group_list", &routing[2], 1}};
  op(g, "grouped_matmul", "experts_down", din, 3, gat, 2, &down, 1);
  sk_op_input sin[] = {{"x", &x, 1}, {"weight", &s_up, 1}};
  op(g, "grouped_matmul", "shared_up", sin, 2, NULL, 0, &sh, 1);
  sk_value sact = unary(g, "swiglu", "shared_act", sh), sdown;
  sk_op_input sdin[] = {{"x", &sact, 1}, {"weight", &s_down, 1}};
  op(g, "grouped_matmul", "shared_down", sdin, 2, NULL, 0, &sdown, 1);
  sk_op_input fin[] = {{"expanded_permuted_rows", &down, 1}, {"expanded_src_to_dst_row", &routing[1], 1},
                       {"skip1", &x, 1}, {"scales", &gating[0], 1}, {"export_for_source_row", &gating[1], 1},
                       {"skip2", &sdown, 1}};
  sk_attr fat[] = {SK_ATTR_INT("drop_pad_mode", 2)};
  op(g, "moe_finalize_routing", "combine", fin, 6, fat, 1, &y, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, routing[2], "expert_ends"));
  CHECK_OK(sk_graph_mark_output(g, routing[0], "expanded_x"));
}

static inline void tc_moe_softmax(sk_graph *g, int64_t t, sk_dtype dt) { tc_moe(g, t, dt, false); }
static inline void tc_moe_sigmoid(sk_graph *g, int64_t t, sk_dtype dt) { tc_moe(g, t, dt, true); }

static const tokens_case TOKENS_CASES[] = {
    {"elementwise fp16", tc_elementwise, SK_FP16},     {"elementwise fp32", tc_elementwise, SK_FP32},
    {"norms bf16", tc_norms, SK_BF16},                 {"matmuls bf16", tc_matmuls, SK_BF16},
    {"matmuls fp32", tc_matmuls, SK_FP32},             {"moe softmax bf16", tc_moe_softmax, SK_BF16},
    {"moe sigmoid fp16", tc_moe_sigmoid, SK_FP16},
};

/* The case's graph: dynamic up to max (tokens = SK_DIM_DYNAMIC) or for
 * exactly `tokens`. */
static inline sk_graph *tc_graph(const tokens_case *c, int64_t tokens, int64_t max) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  if (tokens == SK_DIM_DYNAMIC) CHECK_OK(sk_graph_set_max_tokens(g, max));
  c->build(g, tokens, c->dtype);
  return g;
}

#endif

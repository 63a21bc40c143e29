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
  /* integer inputs (ids, positions): v in [-1, 1) as an index in [0, 64) */
  int64_t index = (int64_t)((v + 1.0f) * 32.0f);
  if (index > 63) index = 63;
  if (dt == SK_FP32) ((float *)data)[i] = v;
  else if (dt == SK_INT32) ((int32_t *)data)[i] = (int32_t)index;
  else if (dt == SK_INT64) ((int64_t *)data)[i] = index;
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

/* A layer's shared expert: grouped_matmul, swiglu, grouped_matmul on x. */
static inline sk_value tc_shared_expert(sk_graph *g, sk_value x, sk_value s_up, sk_value s_down) {
  sk_op_input in_up[] = {{"x", &x, 1}, {"weight", &s_up, 1}};
  sk_value h, out;
  op(g, "grouped_matmul", "shared_up", in_up, 2, NULL, 0, &h, 1);
  sk_value act = unary(g, "swiglu", "shared_act", h);
  sk_op_input in_down[] = {{"x", &act, 1}, {"weight", &s_down, 1}};
  return op(g, "grouped_matmul", "shared_down", in_down, 2, NULL, 0, &out, 1);
}

/* moe_finalize_routing of a layer: the experts' rows `down` back to their
 * tokens, weighted by the gating's weights, with the residual x and the
 * shared expert's output. */
static inline sk_value tc_combine(sk_graph *g, sk_value x, sk_value down, const sk_value *routing,
                                  const sk_value *gating, sk_value shared) {
  sk_op_input fin[] = {{"expanded_permuted_rows", &down, 1}, {"expanded_src_to_dst_row", &routing[1], 1},
                       {"skip1", &x, 1}, {"scales", &gating[0], 1}, {"export_for_source_row", &gating[1], 1},
                       {"skip2", &shared, 1}};
  sk_attr fat[] = {SK_ATTR_INT("drop_pad_mode", 2)};
  sk_value y;
  return op(g, "moe_finalize_routing", "combine", fin, 6, fat, 1, &y, 1);
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
  sk_value xf, logits, gating[4], routing[4], up, down, y;
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
  y = tc_combine(g, x, down, routing, gating, tc_shared_expert(g, x, s_up, s_down));
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, routing[2], "expert_ends"));
  CHECK_OK(sk_graph_mark_output(g, routing[0], "expanded_x"));
}

static inline void tc_moe_softmax(sk_graph *g, int64_t t, sk_dtype dt) { tc_moe(g, t, dt, false); }
static inline void tc_moe_sigmoid(sk_graph *g, int64_t t, sk_dtype dt) { tc_moe(g, t, dt, true); }

/* An int8 constant of values in [-127, 127] (the seed is the name's, as
 * tc_weight's). */
static inline sk_value tc_int8_weight(sk_graph *g, const char *name, int rank, const int64_t *shape) {
  tc_rng = 0x9E3779B97F4A7C15ull;
  for (const char *c = name; *c; c++) tc_rng = tc_rng * 31 + (unsigned char)*c;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  int8_t *data = malloc((size_t)n + 1);
  for (int64_t i = 0; i < n; i++) data[i] = (int8_t)(int)tc_uniform(-127.4f, 127.4f);
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_constant(g, name, SK_INT8, rank, shape, data, SK_CONSTANT_COPY, &v));
  free(data);
  return v;
}

/* The views on token rows: unsqueeze to [T, 1, H] and [T, H, 1], a slice
 * of every row (start 0: a slice past row 0 cannot follow T), a broadcast
 * mul by a [1, 1, H] row, squeeze back to [T, H]. */
static inline void tc_views(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 24;
  sk_value x = tc_tokens_input(g, "x", dt, t, h);
  sk_value row = tc_weight(g, "row", dt, 3, (int64_t[]){1, 1, h}, 1.0f);
  CHECK_OK(sk_graph_begin_scope(g, "views", NULL));
  sk_value u, s, m, q, u2, q2, s2;
  sk_op_input uin[] = {{"x", &x, 1}};
  sk_attr dim1[] = {SK_ATTR_INT("dim", 1)};
  op(g, "unsqueeze", "rows_3d", uin, 1, dim1, 1, &u, 1);
  sk_op_input sin[] = {{"x", &u, 1}};
  sk_attr all_rows[] = {SK_ATTR_INT("start", 0)};
  op(g, "slice", "every_row", sin, 1, all_rows, 1, &s, 1);
  sk_op_input min[] = {{"x", &s, 1}, {"y", &row, 1}};
  op(g, "mul", "scale_cols", min, 2, NULL, 0, &m, 1);
  sk_op_input qin[] = {{"x", &m, 1}};
  sk_attr drop1[] = {SK_ATTR_INTS("dims", ((const int64_t[]){1}), 1)};
  op(g, "squeeze", "rows_2d", qin, 1, drop1, 1, &q, 1);
  sk_value sq = unary(g, "square", "sq", q);
  sk_op_input u2in[] = {{"x", &sq, 1}};
  sk_attr last[] = {SK_ATTR_INT("dim", -1)};
  op(g, "unsqueeze", "cols_3d", u2in, 1, last, 1, &u2, 1);
  sk_op_input q2in[] = {{"x", &u2, 1}};
  sk_attr drop_last[] = {SK_ATTR_INTS("dims", ((const int64_t[]){-1}), 1)};
  op(g, "squeeze", "cols_2d", q2in, 1, drop_last, 1, &q2, 1);
  sk_value y = binary(g, "add", "add_x", q2, x);
  sk_op_input s2in[] = {{"x", &y, 1}};
  sk_attr to_end[] = {SK_ATTR_INT("start", 0), SK_ATTR_INT("end", INT64_MAX)};
  op(g, "slice", "out_rows", s2in, 1, to_end, 2, &s2, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, s2, "y"));
  CHECK_OK(sk_graph_mark_output(g, m, "scaled"));
}

/* The seed's sk2 on token rows: int32 rows (x scaled and cast) through
 * dequant_swiglu_quant (weight scale, the rows' activation scale, dynamic
 * quantization with a quant scale), then quant_matmul three ways (fp16
 * output with a packed int64 scale; bf16 with per-channel and per-token
 * scales and a float bias; int8 with an offset) and an int8
 * grouped_matmul (group_type -1) with per-token scales; also
 * dequant_swiglu_quant of float rows. */
static inline void tc_quant(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 64, n = 48;
  sk_value x = tc_tokens_input(g, "x", dt, t, 2 * h);
  sk_value a_scale = input(g, "a_scale", SK_FP32, 2, (int64_t[]){t, 1});
  sk_value w_scale = tc_weight(g, "w_scale", SK_FP32, 1, (int64_t[]){2 * h}, 0.002f);
  sk_value q_scale = tc_weight(g, "q_scale", SK_FP32, 2, (int64_t[]){1, h}, 2.0f);
  sk_value w8 = tc_int8_weight(g, "w8", 2, (int64_t[]){h, n});
  sk_value w8b = tc_int8_weight(g, "w8b", 2, (int64_t[]){h, n});
  sk_value ch_scale = tc_weight(g, "ch_scale", SK_FP32, 1, (int64_t[]){n}, 0.01f);
  sk_value q8_scale = tc_weight(g, "q8_scale", SK_FP32, 1, (int64_t[]){n}, 0.002f); /* int8 out: few clipped */
  sk_value offset = tc_weight(g, "offset", SK_FP32, 1, (int64_t[]){n}, 20.0f);
  sk_value bias = tc_weight(g, "bias", SK_FP32, 1, (int64_t[]){n}, 1.0f);
  float packed_from[1] = {0.0004f};
  int64_t packed[1];
  CHECK_OK(sk_trans_quant_param(packed_from, NULL, 1, packed));
  sk_value pscale = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_constant(g, "packed_scale", SK_INT64, 1, (int64_t[]){1}, packed, SK_CONSTANT_COPY, &pscale));
  CHECK_OK(sk_graph_begin_scope(g, "sk2", NULL));
  sk_value xf, xs, xi, dsq[2], fdsq[2], o16, o_bf16, o8, g8;
  sk_op_input cin[] = {{"x", &x, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  op(g, "cast", "x_fp32", cin, 1, to32, 1, &xf, 1);
  sk_op_input min[] = {{"x", &xf, 1}};
  sk_attr big[] = {SK_ATTR_FLOAT("scalar", 3000.0)};
  op(g, "mul", "x_scaled", min, 1, big, 1, &xs, 1);
  sk_op_input iin[] = {{"x", &xs, 1}};
  sk_attr toi32[] = {SK_ATTR_INT("dtype", SK_INT32)};
  op(g, "cast", "x_int32", iin, 1, toi32, 1, &xi, 1);
  sk_op_input din[] = {{"x", &xi, 1}, {"weight_scale", &w_scale, 1}, {"activation_scale", &a_scale, 1},
                       {"quant_scale", &q_scale, 1}};
  sk_attr dat[] = {SK_ATTR_INT("activate_left", 0), SK_ATTR_INT("quant_mode", 1)};
  op(g, "dequant_swiglu_quant", "dsq", din, 4, dat, 2, dsq, 2);
  sk_op_input fin[] = {{"x", &x, 1}};
  sk_attr fat[] = {SK_ATTR_INT("activate_left", 1), SK_ATTR_INT("quant_mode", 1)};
  op(g, "dequant_swiglu_quant", "dsq_float", fin, 1, fat, 2, fdsq, 2);
  sk_op_input q16in[] = {{"x1", &dsq[0], 1}, {"x2", &w8, 1}, {"scale", &pscale, 1}};
  sk_attr fp16_out[] = {SK_ATTR_INT("output_dtype", SK_FP16)};
  op(g, "quant_matmul", "qmm_fp16", q16in, 3, fp16_out, 1, &o16, 1);
  sk_op_input qbin[] = {{"x1", &dsq[0], 1}, {"x2", &w8b, 1}, {"scale", &ch_scale, 1},
                        {"pertoken_scale", &dsq[1], 1}, {"bias", &bias, 1}};
  sk_attr bf16_out[] = {SK_ATTR_INT("output_dtype", SK_BF16)};
  op(g, "quant_matmul", "qmm_bf16", qbin, 5, bf16_out, 1, &o_bf16, 1);
  sk_op_input q8in[] = {{"x1", &fdsq[0], 1}, {"x2", &w8, 1}, {"scale", &q8_scale, 1}, {"offset", &offset, 1}};
  sk_attr int8_out[] = {SK_ATTR_INT("output_dtype", SK_INT8)};
  op(g, "quant_matmul", "qmm_int8", q8in, 4, int8_out, 1, &o8, 1);
  sk_op_input gin[] = {{"x", &fdsq[0], 1}, {"weight", &w8b, 1}, {"scale", &ch_scale, 1},
                       {"per_token_scale", &fdsq[1], 1}};
  sk_attr gat[] = {SK_ATTR_INT("output_dtype", SK_FP32)};
  op(g, "grouped_matmul", "gmm_int8", gin, 4, gat, 1, &g8, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, o16, "y_fp16"));
  CHECK_OK(sk_graph_mark_output(g, o_bf16, "y_bf16"));
  CHECK_OK(sk_graph_mark_output(g, o8, "y_int8"));
  CHECK_OK(sk_graph_mark_output(g, g8, "y_gmm"));
  CHECK_OK(sk_graph_mark_output(g, dsq[1], "dsq_scale"));
  CHECK_OK(sk_graph_mark_output(g, fdsq[0], "dsq_float"));
}

/* A w8a8 MoE layer (tools/models/moe_layer.c's int8 path): bf16 x and
 * shared expert, DeepSeek's grouped sigmoid gating; moe_init_routing
 * quantizes the routed rows to int8 (dynamic, a scale per row) and counts
 * rows per expert; the up projection int8 -> int32; dequant_swiglu_quant
 * with the experts' channel scales and the rows' scales, requantized per
 * row; the down projection int8 -> bf16 with the experts' channel scales
 * and the rows' scales; the combine. */
static inline void tc_moe_w8a8(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 32, e = 16, k = 4, inter = 24;
  sk_value x = tc_tokens_input(g, "x", dt, t, h);
  sk_value gate = tc_weight(g, "gate", SK_FP32, 2, (int64_t[]){e, h}, 0.5f);
  sk_value w_up = tc_int8_weight(g, "w_up", 3, (int64_t[]){e, h, 2 * inter});
  sk_value w_down = tc_int8_weight(g, "w_down", 3, (int64_t[]){e, inter, h});
  sk_value up_scale = tc_weight(g, "up_scale", SK_FP32, 2, (int64_t[]){e, 2 * inter}, 0.005f);
  sk_value down_scale = tc_weight(g, "down_scale", SK_FP32, 2, (int64_t[]){e, h}, 0.002f);
  sk_value s_up = tc_weight(g, "s_up", dt, 2, (int64_t[]){h, 2 * inter}, 0.3f);
  sk_value s_down = tc_weight(g, "s_down", dt, 2, (int64_t[]){inter, h}, 0.3f);
  sk_value bias = tc_weight(g, "bias", SK_FP32, 1, (int64_t[]){e}, 0.1f);
  CHECK_OK(sk_graph_begin_scope(g, "moe", NULL));
  sk_op_input cin[] = {{"x", &x, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value xf, logits, gating[3], routing[4], acc, q[2], down, y;
  op(g, "cast", "x_fp32", cin, 1, to32, 1, &xf, 1);
  sk_op_input lin[] = {{"x", &xf, 1}, {"weight", &gate, 1}};
  op(g, "linear", "gate", lin, 2, NULL, 0, &logits, 1);
  sk_op_input gin[] = {{"x", &logits, 1}, {"bias", &bias, 1}};
  sk_attr at[] = {SK_ATTR_INT("k", k), SK_ATTR_INT("k_group", 2), SK_ATTR_INT("group_count", 4),
                  SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1), SK_ATTR_INT("renorm", 1),
                  SK_ATTR_FLOAT("routed_scaling_factor", 2.5)};
  op(g, "moe_gating_topk", "gating", gin, 2, at, 7, gating, 3);
  sk_op_input rin[] = {{"x", &x, 1}, {"expert_idx", &gating[1], 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", e), SK_ATTR_INT("quant_mode", 1),
                   SK_ATTR_INT("expert_tokens_num_type", 1)};
  op(g, "moe_init_routing", "dispatch", rin, 2, rat, 3, routing, 4);
  static const sk_attr w8a8[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3),
                                 SK_ATTR_INT("group_list_type", 1), SK_ATTR_INT("output_dtype", SK_BF16)};
  sk_op_input uin[] = {{"x", &routing[0], 1}, {"weight", &w_up, 1}, {"group_list", &routing[2], 1}};
  op(g, "grouped_matmul", "experts_up", uin, 3, w8a8, 3, &acc, 1); /* int32 */
  sk_op_input din[] = {{"x", &acc, 1}, {"weight_scale", &up_scale, 1}, {"activation_scale", &routing[3], 1},
                       {"group_index", &routing[2], 1}};
  sk_attr dat[] = {SK_ATTR_INT("quant_mode", 1), SK_ATTR_INT("activate_left", 1)};
  op(g, "dequant_swiglu_quant", "experts_act", din, 4, dat, 2, q, 2);
  sk_op_input win[] = {{"x", &q[0], 1}, {"weight", &w_down, 1}, {"scale", &down_scale, 1},
                       {"per_token_scale", &q[1], 1}, {"group_list", &routing[2], 1}};
  op(g, "grouped_matmul", "experts_down", win, 5, w8a8, 4, &down, 1);
  y = tc_combine(g, x, down, routing, gating, tc_shared_expert(g, x, s_up, s_down));
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, routing[2], "expert_counts"));
  CHECK_OK(sk_graph_mark_output(g, routing[0], "expanded_x"));
  CHECK_OK(sk_graph_mark_output(g, routing[3], "expanded_scale"));
  CHECK_OK(sk_graph_mark_output(g, gating[0], "topk_w"));
  CHECK_OK(sk_graph_mark_output(g, gating[1], "topk_idx"));
}

/* A decoder's per-token ops: embedding of int32 ids (a constant table of
 * 64 rows), softmax and argmax of the rows, rotary_embedding of q and k at
 * int64 positions (YaRN, partial, interleaved). */
static inline void tc_decoder(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t v = 64, h = 48, d = 32;
  sk_value ids = input(g, "ids", SK_INT32, 1, (int64_t[]){t});
  sk_value q = input(g, "q", dt, 3, (int64_t[]){t, 4, d}), k = input(g, "k", dt, 3, (int64_t[]){t, 2, d});
  sk_value pos = input(g, "positions", SK_INT64, 1, (int64_t[]){t});
  sk_value table = tc_weight(g, "table", dt, 2, (int64_t[]){v, h}, 4.0f);
  CHECK_OK(sk_graph_begin_scope(g, "decoder", NULL));
  sk_value e, sm, am, rope[2];
  sk_op_input ein[] = {{"table", &table, 1}, {"ids", &ids, 1}};
  op(g, "embedding", "embed", ein, 2, NULL, 0, &e, 1);
  sk_op_input xin[] = {{"x", &e, 1}};
  op(g, "softmax", "softmax", xin, 1, NULL, 0, &sm, 1);
  op(g, "argmax", "argmax", xin, 1, NULL, 0, &am, 1);
  sk_op_input rin[] = {{"q", &q, 1}, {"k", &k, 1}, {"positions", &pos, 1}};
  sk_attr rat[] = {SK_ATTR_INT("max_positions", 64), SK_ATTR_INT("rotary_dim", 16), SK_ATTR_INT("layout", 1),
                   SK_ATTR_INT("scaling_type", 2), SK_ATTR_FLOAT("factor", 4.0),
                   SK_ATTR_INT("original_max_positions", 16)};
  op(g, "rotary_embedding", "rope", rin, 3, rat, 6, rope, 2);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, sm, "softmax"));
  CHECK_OK(sk_graph_mark_output(g, am, "argmax"));
  CHECK_OK(sk_graph_mark_output(g, rope[0], "q_out"));
  CHECK_OK(sk_graph_mark_output(g, rope[1], "k_out"));
  CHECK_OK(sk_graph_mark_output(g, e, "embedded"));
}

/* DeepSeek's latent attention: q_nope, q_pe per token at int64 positions
 * in [0, 64) against a constant latent cache of 64 rows (R 32, P 16) and
 * kv_b_weight (H 3, N 16, V 24). */
static inline void tc_mla(sk_graph *g, int64_t t, sk_dtype dt) {
  sk_value qn = input(g, "q_nope", dt, 3, (int64_t[]){t, 3, 16}), qp = input(g, "q_pe", dt, 3, (int64_t[]){t, 3, 16});
  sk_value pos = input(g, "positions", SK_INT64, 1, (int64_t[]){t});
  sk_value cache = tc_weight(g, "latent", dt, 3, (int64_t[]){64, 1, 48}, 2.0f);
  sk_value w = tc_weight(g, "kv_b", dt, 2, (int64_t[]){3 * (16 + 24), 32}, 0.3f), o;
  sk_op_input in[] = {{"q_nope", &qn, 1}, {"q_pe", &qp, 1}, {"latent_cache", &cache, 1}, {"positions", &pos, 1},
                      {"kv_b_weight", &w, 1}};
  op(g, "mla_attention", "mla", in, 5, NULL, 0, &o, 1);
  CHECK_OK(sk_graph_mark_output(g, o, "o"));
}

/* DeepSeek MLA's latent split and Qwen2-MoE's gated shared expert: a
 * projection of x split along its last dimension ([c_kv, k_pe]), q
 * [T, 4, 24] split along dims 2 and 1, and one part scaled by the sigmoid
 * of a one-column gate (a [T, 1] broadcast); the projection's sigmoid. */
static inline void tc_split_gate(sk_graph *g, int64_t t, sk_dtype dt) {
  const int64_t h = 48;
  sk_value x = tc_tokens_input(g, "x", dt, t, h), q = input(g, "q", dt, 3, (int64_t[]){t, 4, 24});
  sk_value w = tc_weight(g, "w_kv_a", dt, 2, (int64_t[]){h, 40}, 0.3f);
  sk_value gw = tc_weight(g, "w_gate", dt, 2, (int64_t[]){h, 1}, 0.5f);
  CHECK_OK(sk_graph_begin_scope(g, "split_gate", NULL));
  sk_value kv, gate, parts[2], qparts[3], heads[2];
  sk_op_input kin[] = {{"x", &x, 1}, {"weight", &w, 1}}, gin[] = {{"x", &x, 1}, {"weight", &gw, 1}};
  op(g, "grouped_matmul", "kv_a", kin, 2, NULL, 0, &kv, 1);
  op(g, "grouped_matmul", "gate", gin, 2, NULL, 0, &gate, 1);
  sk_op_input sin[] = {{"x", &kv, 1}}, qin[] = {{"x", &q, 1}};
  sk_attr sat[] = {SK_ATTR_INTS("sizes", ((const int64_t[]){32, 8}), 2)};
  op(g, "split", "kv_split", sin, 1, sat, 1, parts, 2);
  sk_attr qat[] = {SK_ATTR_INTS("sizes", ((const int64_t[]){16, 5, 3}), 3), SK_ATTR_INT("dim", 2)};
  op(g, "split", "q_split", qin, 1, qat, 2, qparts, 3);
  sk_attr hat[] = {SK_ATTR_INTS("sizes", ((const int64_t[]){1, 3}), 2), SK_ATTR_INT("dim", -2)};
  op(g, "split", "head_split", qin, 1, hat, 2, heads, 2);
  sk_value gated = binary(g, "mul", "gated", parts[0], unary(g, "sigmoid", "gate_sigmoid", gate));
  sk_value kv_sig = unary(g, "sigmoid", "kv_sigmoid", kv);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, gated, "gated"));
  CHECK_OK(sk_graph_mark_output(g, parts[1], "k_pe"));
  CHECK_OK(sk_graph_mark_output(g, qparts[1], "q_mid"));
  CHECK_OK(sk_graph_mark_output(g, heads[0], "head0"));
  CHECK_OK(sk_graph_mark_output(g, kv_sig, "kv_sigmoid"));
}

static const tokens_case TOKENS_CASES[] = {
    {"elementwise fp16", tc_elementwise, SK_FP16},     {"elementwise fp32", tc_elementwise, SK_FP32},
    {"norms bf16", tc_norms, SK_BF16},                 {"matmuls bf16", tc_matmuls, SK_BF16},
    {"matmuls fp32", tc_matmuls, SK_FP32},             {"moe softmax bf16", tc_moe_softmax, SK_BF16},
    {"moe sigmoid fp16", tc_moe_sigmoid, SK_FP16},     {"views fp16", tc_views, SK_FP16},
    {"quant fp16", tc_quant, SK_FP16},                 {"quant bf16", tc_quant, SK_BF16},
    {"moe w8a8 bf16", tc_moe_w8a8, SK_BF16},     {"decoder bf16", tc_decoder, SK_BF16},
    {"decoder fp32", tc_decoder, SK_FP32},             {"mla bf16", tc_mla, SK_BF16},
    {"split gate bf16", tc_split_gate, SK_BF16},
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

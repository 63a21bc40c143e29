/*
 * moe_layer.c — the `moe-layer` model family (issue 16): one MoE block of a
 * real model's shape, as one super kernel.
 *
 *   moe-layer:PRESET[:tN][:bf16|fp16|int8][:eN][:skew]
 *
 * PRESET is a model's MoE block (the table below, from the models'
 * config.json), tN the tokens T (default 16), the dtype of x and the
 * expert weights (default bf16; int8: w8a8, below), eN the routed experts
 * kept (default all; fewer so a large model fits in memory: top-k must
 * stay <= N), skew a skewed routing (skm_moe_adjust_values). The graph,
 * in scope "moe":
 *
 *   logits = linear(cast(moe_x, fp32), moe_gate)                  [T, E] fp32
 *   w, idx = moe_gating_topk_softmax(logits, k, renorm)           (softmax presets)
 *          | moe_gating_topk(logits, moe_score_bias, sigmoid, groups)  (DeepSeek)
 *   ex, map, ends = moe_init_routing(moe_x, idx, expert_num = E)
 *   d = grouped_matmul(swiglu(grouped_matmul(ex, moe_w_up, ends)), moe_w_down, ends)
 *   s = the shared experts (one dense MLP of shared * I) of moe_x, if any
 *   y = moe_finalize_routing(d, map, skip1 = moe_x, skip2 = s, scales = w, idx)
 *
 * w8a8 (int8): x and the shared experts bf16, the routed experts' weights
 * int8 with per-channel fp32 scales, as vLLM-Ascend's DeepSeek decode runs
 * them: moe_init_routing quantizes each routed row to int8 (dynamic, its
 * scale per row) and counts rows per expert; the up projection is int8 ->
 * int32; dequant_swiglu_quant dequantizes it (the expert's channel scales
 * and the row's scale), applies SwiGLU and requantizes per row; the down
 * projection is int8 -> bf16 with the expert's channel scales and the
 * rows' scales; the combine is as above. expert_ends is then the counts.
 *
 * Outputs y [T, H] and expert_ends (int64 [E], cumulative rows per expert).
 * The weights are the moe_* tensors (models.c's skm_is_weight); their
 * values are drawn uniformly with ranges that keep activations of unit
 * size at every preset (models.c's ranges).
 */
#include "moe_layer.h"

#include "model_builder.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct preset {
  const char *name;
  int64_t hidden, experts, top_k, inter, shared; /* shared: shared experts (their MLP is shared * inter wide) */
  int groups, k_group;                           /* sigmoid grouped gating (DeepSeek-V3); 0: softmax */
  int renorm;
  double scaling;                                /* routed_scaling_factor (sigmoid gating) */
  const char *about;
} preset;

static const preset presets[] = {
    {"tiny", 64, 16, 4, 32, 1, 4, 2, 1, 2.5, "a test size: H 64, 16 experts, top-4, sigmoid 4 groups / 2, 1 shared"},
    {"qwen3-30b-a3b", 2048, 128, 8, 768, 0, 0, 0, 1, 1.0, "Qwen3-30B-A3B: H 2048, 128 experts, top-8, I 768, softmax"},
    {"deepseek-v2-lite", 2048, 64, 6, 1408, 2, 0, 0, 0, 1.0,
     "DeepSeek-V2-Lite: H 2048, 64 routed + 2 shared, top-6, I 1408, softmax"},
    {"deepseek-v3", 7168, 256, 8, 2048, 1, 8, 4, 1, 2.5,
     "DeepSeek-V3: H 7168, 256 experts, top-8, I 2048, sigmoid 8 groups / 4, 1 shared"},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

const char *skm_moe_presets(void) { return "tiny, qwen3-30b-a3b, deepseek-v2-lite, deepseek-v3"; }

/* The layer of a checkpoint (skm_moe_use_checkpoint): what "moe-layer" and
 * "moe-layer:MODIFIERS" name while it is set. */
static skm_moe_layer checkpoint_layer;
static bool have_checkpoint;

void skm_moe_use_checkpoint(const skm_moe_layer *layer) {
  have_checkpoint = layer != NULL;
  if (layer) checkpoint_layer = *layer;
}

int skm_moe_parse(const char *name, skm_moe_layer *out) {
  static const char prefix[] = "moe-layer:";
  if (name && have_checkpoint && strcmp(name, "moe-layer") == 0) return *out = checkpoint_layer, 1;
  if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
  char buf[128];
  if (snprintf(buf, sizeof buf, "%s", name + sizeof prefix - 1) >= (int)sizeof buf) return 0;
  /* The parts between ':': buf cut in place. */
  char *parts[8];
  int n_parts = 0;
  for (char *at = buf; at && n_parts < 8;) {
    parts[n_parts++] = at;
    at = strchr(at, ':');
    if (at) *at++ = '\0';
  }
  const preset *p = NULL;
  for (size_t i = 0; i < N_PRESETS; i++)
    if (strcmp(presets[i].name, parts[0]) == 0) p = &presets[i];
  if (!p && !have_checkpoint) return 0;
  skm_moe_layer m = have_checkpoint ? checkpoint_layer : (skm_moe_layer){0};
  int first = 0; /* the first modifier */
  if (p) {
    m = (skm_moe_layer){.t = 16, .dtype = SK_BF16, .expert_dtype = SK_BF16};
    m.hidden = p->hidden, m.experts = p->experts, m.top_k = p->top_k, m.inter = p->inter, m.shared = p->shared;
    m.sigmoid = p->groups > 0, m.groups = p->groups, m.k_group = p->k_group, m.renorm = p->renorm;
    m.scaling = p->scaling, m.preset = p->name, m.about = p->about;
    first = 1;
  }
  const int64_t max_experts = m.experts;
  bool has_t = false;
  for (int k = first; k < n_parts; k++) {
    const char *part = parts[k];
    char *end;
    if (strcmp(part, "bf16") == 0) m.dtype = m.expert_dtype = SK_BF16;
    else if (strcmp(part, "fp16") == 0) m.dtype = m.expert_dtype = SK_FP16;
    else if (strcmp(part, "int8") == 0) m.dtype = SK_BF16, m.expert_dtype = SK_INT8;
    else if (strcmp(part, "skew") == 0 && p) m.skew = 1; /* a checkpoint's gate is its own */
    else if (strncmp(part, "tmax=", 5) == 0) {
      long long v = strtoll(part + 5, &end, 10);
      if (*end || end == part + 5 || v < 1 || v > 1 << 16) return 0;
      m.tmax = v;
      if (!has_t) m.t = m.t < v ? m.t : v;
    }
    else if ((part[0] == 't' || part[0] == 'e') && part[1] >= '0' && part[1] <= '9') {
      long long v = strtoll(part + 1, &end, 10);
      if (*end || v < 1 || v > (part[0] == 't' ? 1 << 16 : max_experts)) return 0;
      if (part[0] == 't') m.t = v, has_t = true;
      else m.experts = v;
    } else {
      return 0;
    }
  }
  /* Fewer experts: the grouped sigmoid gating keeps its groups while they
   * still divide the experts into more than 2 each (mode 1's rule) and
   * hold top-k, else it runs ungrouped; top-k at most the experts. */
  if (m.sigmoid && (m.experts % m.groups != 0 || m.experts / m.groups <= 2 ||
                    m.top_k > m.k_group * (m.experts / m.groups)))
    m.groups = 1, m.k_group = 1;
  if (m.top_k > m.experts) return 0;
  if (m.tmax && m.t > m.tmax) return 0; /* a run cannot have more tokens than the program's maximum */
  *out = m;
  return 1;
}

/* ---- building ---- */

static sk_value matmul(skm_builder *b, const char *name, sk_value x, sk_value w, const sk_value *ends) {
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"group_list", ends, 1}};
  sk_attr experts[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3)};
  sk_value y = SK_VALUE_NONE;
  skm_builder_node(b, name, "grouped_matmul", in, ends ? 3 : 2, ends ? experts : NULL, ends ? 2 : 0, &y, 1);
  return y;
}

static sk_value act(skm_builder *b, const char *name, sk_value x) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_value y = SK_VALUE_NONE;
  skm_builder_node(b, name, "swiglu", in, 1, NULL, 0, &y, 1);
  return y;
}

/* The w8a8 experts (the top of the file says how): routing = init_routing's
 * int8 rows, map, counts, row scales. The up projection: int32 rows. */
static const sk_attr W8A8_GMM[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3),
                                   SK_ATTR_INT("group_list_type", 1), SK_ATTR_INT("output_dtype", SK_BF16)};

static sk_value quantized_up(skm_builder *b, const sk_value *routing, sk_value up) {
  sk_op_input uin[] = {{"x", &routing[0], 1}, {"weight", &up, 1}, {"group_list", &routing[2], 1}};
  sk_value acc = SK_VALUE_NONE;
  skm_builder_node(b, "experts_up", "grouped_matmul", uin, 3, W8A8_GMM, 3, &acc, 1); /* int32 */
  return acc;
}

/* dequant_swiglu_quant and the down projection of quantized_up's rows:
 * the bf16 rows [T*k, H]. */
static sk_value quantized_down(skm_builder *b, const sk_value *routing, sk_value acc, sk_value down, sk_value up_scale,
                               sk_value down_scale) {
  sk_value q[2] = {SK_VALUE_NONE, SK_VALUE_NONE}, y = SK_VALUE_NONE;
  sk_op_input din[] = {{"x", &acc, 1}, {"weight_scale", &up_scale, 1}, {"activation_scale", &routing[3], 1},
                       {"group_index", &routing[2], 1}};
  sk_attr dat[] = {SK_ATTR_INT("quant_mode", 1), SK_ATTR_INT("activate_left", 1)};
  skm_builder_node(b, "experts_act", "dequant_swiglu_quant", din, 4, dat, 2, q, 2);
  sk_op_input win[] = {{"x", &q[0], 1}, {"weight", &down, 1}, {"scale", &down_scale, 1},
                       {"per_token_scale", &q[1], 1}, {"group_list", &routing[2], 1}};
  skm_builder_node(b, "experts_down", "grouped_matmul", win, 5, W8A8_GMM, 4, &y, 1);
  return y;
}

void skm_moe_graph(skm_builder *b, const skm_moe_layer *m, const char *options) {
  const int64_t t = m->t, h = m->hidden, e = m->experts, i2 = 2 * m->inter, si = m->shared * m->inter;
  const bool w8a8 = m->expert_dtype == SK_INT8;
  /* NONE until added: a failed step leaves the builder's error, and every
   * later call returns at once. */
  sk_value x = SK_VALUE_NONE, gate = SK_VALUE_NONE, up = SK_VALUE_NONE, down = SK_VALUE_NONE;
  sk_value up_scale = SK_VALUE_NONE, down_scale = SK_VALUE_NONE, bias = SK_VALUE_NONE;
  sk_value s_up = SK_VALUE_NONE, s_down = SK_VALUE_NONE;
  if (m->tmax) { /* one program for every count up to tmax */
    sk_status st = sk_graph_set_max_tokens(b->g, m->tmax);
    if (st != SK_STATUS_OK) skm_builder_fail(b, st, "the maximum token count");
  }
  skm_builder_input(b, "moe_x", m->dtype, 2, (int64_t[]){m->tmax ? SK_DIM_DYNAMIC : t, h}, &x);
  skm_builder_input(b, "moe_gate", SK_FP32, 2, (int64_t[]){e, h}, &gate);
  skm_builder_input(b, "moe_w_up", m->expert_dtype, 3, (int64_t[]){e, h, i2}, &up);
  skm_builder_input(b, "moe_w_down", m->expert_dtype, 3, (int64_t[]){e, m->inter, h}, &down);
  if (w8a8) {
    skm_builder_input(b, "moe_w_up_scale", SK_FP32, 2, (int64_t[]){e, i2}, &up_scale);
    skm_builder_input(b, "moe_w_down_scale", SK_FP32, 2, (int64_t[]){e, h}, &down_scale);
  }
  if (m->sigmoid) skm_builder_input(b, "moe_score_bias", SK_FP32, 1, (int64_t[]){e}, &bias);
  if (si) {
    skm_builder_input(b, "moe_shared_up", m->dtype, 2, (int64_t[]){h, 2 * si}, &s_up);
    skm_builder_input(b, "moe_shared_down", m->dtype, 2, (int64_t[]){si, h}, &s_down);
  }
  skm_builder_scope(b, "moe", options);

  sk_op_input cin[] = {{"x", &x, 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value xf = SK_VALUE_NONE, logits = SK_VALUE_NONE, gating[4] = {SK_VALUE_NONE, SK_VALUE_NONE};
  skm_builder_node(b, "x_fp32", "cast", cin, 1, to32, 1, &xf, 1);
  sk_op_input lin[] = {{"x", &xf, 1}, {"weight", &gate, 1}};
  skm_builder_node(b, "gate", "linear", lin, 2, NULL, 0, &logits, 1);
  if (m->sigmoid) {
    sk_op_input gin[] = {{"x", &logits, 1}, {"bias", &bias, 1}};
    sk_attr at[] = {SK_ATTR_INT("k", m->top_k), SK_ATTR_INT("k_group", m->k_group), SK_ATTR_INT("group_count", m->groups),
                    SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1), SK_ATTR_INT("renorm", m->renorm),
                    SK_ATTR_FLOAT("routed_scaling_factor", m->scaling)};
    skm_builder_node(b, "gating", "moe_gating_topk", gin, 2, at, 7, gating, 3);
  } else {
    sk_op_input gin[] = {{"x", &logits, 1}};
    sk_attr at[] = {SK_ATTR_INT("k", m->top_k), SK_ATTR_INT("renorm", m->renorm)};
    skm_builder_node(b, "gating", "moe_gating_topk_softmax", gin, 1, at, 2, gating, 4);
  }
  /* The order is each core's order in the super kernel (the planner keeps
   * it): the shared expert needs only x, so its up projection comes before
   * the dispatch, for the cores with no block of the gate or the gating to
   * claim its items meanwhile; its down projection between the routed up
   * projection and what waits for all of it, so the core done first with
   * the routed items fills the others' last ones (what the NPU's second
   * stream does, stream-fusion=1). */
  sk_value s_h = si ? matmul(b, "shared_up", x, s_up, NULL) : SK_VALUE_NONE;
  sk_value routing[4] = {SK_VALUE_NONE, SK_VALUE_NONE, SK_VALUE_NONE, SK_VALUE_NONE};
  sk_op_input rin[] = {{"x", &x, 1}, {"expert_idx", &gating[1], 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", e), SK_ATTR_INT("quant_mode", w8a8 ? 1 : -1),
                   SK_ATTR_INT("expert_tokens_num_type", w8a8 ? 1 : 0)};
  skm_builder_node(b, "dispatch", "moe_init_routing", rin, 2, rat, 3, routing, 4);
  sk_value u = w8a8 ? quantized_up(b, routing, up) : matmul(b, "experts_up", routing[0], up, &routing[2]);
  sk_value shared = si ? matmul(b, "shared_down", act(b, "shared_act", s_h), s_down, NULL) : SK_VALUE_NONE;
  sk_value d = w8a8 ? quantized_down(b, routing, u, down, up_scale, down_scale)
                    : matmul(b, "experts_down", act(b, "experts_act", u), down, &routing[2]);
  sk_op_input fin[6] = {{"expanded_permuted_rows", &d, 1}, {"expanded_src_to_dst_row", &routing[1], 1},
                        {"skip1", &x, 1}, {"scales", &gating[0], 1}, {"export_for_source_row", &gating[1], 1},
                        {"skip2", &shared, 1}};
  sk_attr fat[] = {SK_ATTR_INT("drop_pad_mode", 2)};
  sk_value y = SK_VALUE_NONE;
  skm_builder_node(b, "combine", "moe_finalize_routing", fin, si ? 6 : 5, fat, 1, &y, 1);
  skm_builder_scope(b, NULL, NULL);
  skm_builder_output(b, y, "y");
  skm_builder_output(b, routing[2], "expert_ends");
}

double skm_moe_bytes(const skm_moe_layer *m, const int64_t *expert_ends) {
  const double es = (double)sk_dtype_size(m->dtype), wes = (double)sk_dtype_size(m->expert_dtype);
  /* w8a8: int8 weights and their fp32 channel scales (2I + H per expert) */
  double per_expert = (double)(m->hidden * 3 * m->inter) * wes;
  if (m->expert_dtype == SK_INT8) per_expert += (double)(2 * m->inter + m->hidden) * 4.0;
  int64_t hit = 0;
  const bool counts = m->expert_dtype == SK_INT8; /* w8a8: expert_ends holds counts */
  for (int64_t e = 0; e < m->experts; e++)
    hit += counts ? expert_ends[e] > 0 : expert_ends[e] > (e ? expert_ends[e - 1] : 0);
  double bytes = (double)hit * per_expert + (double)(m->experts * m->hidden) * 4.0;
  bytes += (double)(m->hidden * 3 * m->shared * m->inter) * es;
  bytes += 2.0 * (double)(m->t * m->hidden) * es;
  return bytes;
}

void skm_moe_adjust_values(const skm_moe_layer *m, skm_io *values) {
  skm_tensor *gate = m->skew ? skm_io_find_input(values, "moe_gate") : NULL;
  if (!gate) return;
  int64_t hot = m->experts / 8 > m->top_k ? m->experts / 8 : m->top_k;
  for (int64_t k = 0; k < hot * m->hidden && k < gate->numel; k++) ((float *)gate->data)[k] *= SKM_MOE_SKEW;
}

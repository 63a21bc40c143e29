/* A layer's feed-forward block (model_graph.h): the SwiGLU MLP, or the
 * MoE block (router, dispatch, routed experts, shared experts, combine
 * with the residual). */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/model_graph.h"

#define NONE SK__MB_NONE
#define W(...) sk__mb_weight(b, d->dtype, __VA_ARGS__)
#define L (long long)l

static sk_value swiglu_of(sk__model_builder *b, const char *name, sk_value gate, sk_value up) {
  sk_value both[] = {gate, up};
  sk_op_input cin[] = {{"x", both, 2}};
  sk_attr last[] = {SK_ATTR_INT("dim", -1)};
  sk_value gu = sk__mb_one(b, "gate_up", "concat", cin, 1, last, 1);
  sk_op_input sin[] = {{"x", &gu, 1}};
  return sk__mb_one(b, name, "swiglu", sin, 1, NULL, 0);
}

sk_value sk__mb_mlp(sk__model_builder *b, const char *prefix, int64_t inter, sk_value h) {
  const int64_t hid = b->d->hidden;
  const char *fmt = "%s%s_proj.weight";
  sk_value g = sk__mb_proj(b, "gate_proj", h, inter, hid, NONE, fmt, prefix, "gate");
  sk_value u = sk__mb_proj(b, "up_proj", h, inter, hid, NONE, fmt, prefix, "up");
  sk_value a = swiglu_of(b, "mlp_act", g, u);
  return sk__mb_proj(b, "down_proj", a, hid, inter, NONE, fmt, prefix, "down");
}

void sk__mb_moe_names(sk__model_builder *b, int64_t l, sk__moe_names *out) {
  const sk__moe *m = &b->d->moe;
  *out = (sk__moe_names){.proj = {"gate_proj", "up_proj", "down_proj"}};
  snprintf(out->prefix, sizeof out->prefix, "model.layers.%lld.mlp.", L);
  if (!m->checkpoint_block) return;
  char name[SK__MB_NAME_MAX];
  sk_model_tensor t;
  snprintf(name, sizeof name, "%sgate.weight", out->prefix);
  if (b->weight(b->weight_user, name, &t) != SK_STATUS_NOT_FOUND) return; /* (an error: reported at its lookup) */
  snprintf(out->prefix, sizeof out->prefix, "model.layers.%lld.%s.", L, m->checkpoint_block);
  for (int k = 0; k < 3; k++) out->proj[k] = m->checkpoint_proj[k];
}

/* grouped_matmul of the routed rows by one [E, N, K] weight or E [N, K]
 * ones (torch's layout; transposed: one [E, K, N]), bias NONE or [E, N]. */
static sk_value experts_matmul(sk__model_builder *b, const char *name, sk_value rows, const sk_value *w, int64_t n_w,
                               sk_value ends, sk_value bias, bool transposed) {
  sk_op_input in[] = {{"x", &rows, 1}, {"weight", w, (size_t)n_w}, {"group_list", &ends, 1}, {"bias", &bias, 1}};
  sk_attr at[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3),
                  SK_ATTR_INT("transpose_weight", transposed ? 0 : 1)};
  return sk__mb_one(b, name, "grouped_matmul", in, bias != NONE ? 4 : 3, at, 3);
}

/* An optional weight (NONE where the caller has none). */
static sk_value optional(sk__model_builder *b, const char *prefix, const char *what, int rank, const int64_t *shape) {
  char name[SK__MB_NAME_MAX];
  snprintf(name, sizeof name, "%s%s", prefix, what);
  sk_value v = NONE;
  (void)sk__mb_try_weight(b, name, b->d->dtype, rank, shape, &v);
  return v;
}

/* The routed experts of rows (moe_init_routing's), cumulative ends: fused
 * weights (transformers' in-memory experts.gate_up_proj [E, 2I, H],
 * experts.down_proj [E, H, I], or transposed; their biases where the
 * caller has them) or one tensor per expert as checkpoints store them
 * (experts.J.<proj>.weight): the same bits. */
static sk_value experts(sk__model_builder *b, const sk__moe_names *n, sk_value rows, sk_value ends) {
  const sk__decoder *d = b->d;
  const int64_t e = d->moe.experts, in = d->moe.inter, hid = d->hidden;
  const bool tr = d->moe.experts_transposed;
  char name[SK__MB_NAME_MAX];
  snprintf(name, sizeof name, "%sexperts.gate_up_proj", n->prefix);
  sk_value gate_up;
  sk_status st = sk__mb_try_weight(b, name, d->dtype, 3, tr ? (int64_t[]){e, hid, 2 * in} : (int64_t[]){e, 2 * in, hid},
                                   &gate_up);
  if (st == SK_STATUS_OK) {
    sk_value bias_up = optional(b, n->prefix, "experts.gate_up_proj_bias", 2, (int64_t[]){e, 2 * in});
    sk_value bias_down = optional(b, n->prefix, "experts.down_proj_bias", 2, (int64_t[]){e, hid});
    sk_value up = experts_matmul(b, "experts_up", rows, &gate_up, 1, ends, bias_up, tr);
    sk_op_input sin[] = {{"x", &up, 1}};
    sk_value a = sk__mb_one(b, "experts_act", "swiglu", sin, 1, NULL, 0);
    sk_value down = W(3, tr ? (int64_t[]){e, in, hid} : (int64_t[]){e, hid, in}, "%sexperts.down_proj", n->prefix);
    return experts_matmul(b, "experts_down", a, &down, 1, ends, bias_down, tr);
  }
  if (st != SK_STATUS_NOT_FOUND) return NONE;
  sk_value *w = calloc((size_t)(3 * e), sizeof *w);
  if (!w) {
    sk__mb_failed(b, sk__fail(SK_STATUS_OUT_OF_MEMORY, "%sexperts: out of memory listing them", n->prefix));
    return NONE;
  }
  for (int64_t j = 0; j < e && sk__mb_ok(b); j++) {
    const char *fmt = "%sexperts.%lld.%s.weight";
    w[j] = W(2, (int64_t[]){in, hid}, fmt, n->prefix, (long long)j, n->proj[0]);
    w[e + j] = W(2, (int64_t[]){in, hid}, fmt, n->prefix, (long long)j, n->proj[1]);
    w[2 * e + j] = W(2, (int64_t[]){hid, in}, fmt, n->prefix, (long long)j, n->proj[2]);
  }
  sk_value g = experts_matmul(b, "experts_gate", rows, w, e, ends, NONE, false);
  sk_value u = experts_matmul(b, "experts_up", rows, w + e, e, ends, NONE, false);
  sk_value y = experts_matmul(b, "experts_down", swiglu_of(b, "experts_act", g, u), w + 2 * e, e, ends, NONE, false);
  free(w);
  return y;
}

/* gating[0] the k weights, gating[1] the k experts (int32), as transformers' routers. */
static void route(sk__model_builder *b, const sk__moe_names *n, sk_value h, sk_value gating[4]) {
  const sk__decoder *d = b->d;
  const sk__moe *m = &d->moe;
  const int64_t e = m->experts;
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value logits;
  if (m->router_fp32) { /* DeepSeek: F.linear(x.float(), weight.float()) */
    sk_op_input cin[] = {{"x", &h, 1}};
    sk_value x32 = sk__mb_one(b, "router_x_fp32", "cast", cin, 1, to32, 1);
    sk_value gate = sk__mb_weight_fp32(b, 2, (int64_t[]){e, d->hidden}, "%sgate.weight", n->prefix);
    logits = sk__mb_linear(b, "router", x32, gate, NONE);
  } else { /* logits in the model's dtype, softmax in fp32 */
    sk_value gate = W(2, (int64_t[]){e, d->hidden}, "%sgate.weight", n->prefix);
    sk_value lg = sk__mb_linear(b, "router", h, gate, NONE);
    sk_op_input cin[] = {{"x", &lg, 1}};
    logits = sk__mb_one(b, "router_fp32", "cast", cin, 1, to32, 1);
  }
  sk_op_input gin[] = {{"x", &logits, 1}, {"bias", NULL, 1}};
  const bool sigmoid = m->router == SK__ROUTER_SIGMOID_GROUPED;
  /* every group kept is no group step: the op then runs ungrouped (and
   * needs none of the group rules, more than 2 experts a group say) */
  const bool grouped = m->groups > 1 && m->topk_group < m->groups;
  if (sigmoid || grouped) { /* DeepSeek-V3's router, or V2's group-limited greedy one */
    sk_value bias = NONE;
    if (sigmoid) {
      bias = sk__mb_weight_fp32(b, 1, (int64_t[]){e}, "%sgate.e_score_correction_bias", n->prefix);
      gin[1].values = &bias;
    }
    sk_attr at[] = {SK_ATTR_INT("k", m->top_k), SK_ATTR_INT("k_group", grouped ? m->topk_group : 1),
                    SK_ATTR_INT("group_count", grouped ? m->groups : 1), SK_ATTR_INT("group_select_mode", sigmoid),
                    SK_ATTR_INT("norm_type", sigmoid), SK_ATTR_INT("renorm", m->renorm),
                    SK_ATTR_FLOAT("routed_scaling_factor", m->scaling)};
    sk__mb_node(b, "gating", "moe_gating_topk", gin, sigmoid ? 2 : 1, at, 7, gating, 3);
    return;
  }
  sk_attr at[] = {SK_ATTR_INT("k", m->top_k), SK_ATTR_INT("renorm", m->renorm)};
  sk__mb_node(b, "gating", "moe_gating_topk_softmax", gin, 1, at, 2, gating, 4);
  if (m->weights_rounded && d->dtype != SK_FP32) {
    sk_op_input cin[] = {{"x", &gating[0], 1}};
    sk_attr to[] = {SK_ATTR_INT("dtype", d->dtype)};
    gating[0] = sk__mb_one(b, "router_weights", "cast", cin, 1, to, 1);
  }
  if (m->scaling != 1.0) { /* DeepSeek-V2: the k weights times routed_scaling_factor */
    sk_op_input min[] = {{"x", &gating[0], 1}};
    sk_attr sat[] = {SK_ATTR_FLOAT("scalar", m->scaling)};
    gating[0] = sk__mb_one(b, "routed_scaling", "mul", min, 1, sat, 1);
  }
}

/* The shared experts' output (Qwen2-MoE's times its sigmoid gate), or NONE. */
static sk_value shared(sk__model_builder *b, const sk__moe_names *n, sk_value h) {
  const sk__decoder *d = b->d;
  const sk__moe *m = &d->moe;
  if (!m->shared_inter) return NONE;
  char prefix[SK__MB_NAME_MAX];
  snprintf(prefix, sizeof prefix, "%s%s.", n->prefix, m->shared_prefix);
  sk_value y = sk__mb_mlp(b, prefix, m->shared_inter, h);
  if (!m->shared_gate) return y;
  sk_value w = W(2, (int64_t[]){1, d->hidden}, "%sshared_expert_gate.weight", n->prefix);
  sk_op_input sin[] = {{"x", (sk_value[]){sk__mb_linear(b, "shared_gate", h, w, NONE)}, 1}};
  sk_value gate = sk__mb_one(b, "shared_gate_sigmoid", "sigmoid", sin, 1, NULL, 0);
  sk_op_input min[] = {{"x", &y, 1}, {"y", &gate, 1}};
  return sk__mb_one(b, "shared_gated", "mul", min, 2, NULL, 0);
}

sk_value sk__mb_moe(sk__model_builder *b, const sk__moe_names *n, sk_value h, sk_value resid) {
  sk_value gating[4] = {NONE, NONE, NONE, NONE};
  route(b, n, h, gating);
  sk_value s = shared(b, n, h);
  sk_value routing[4] = {NONE, NONE, NONE, NONE}, rows;
  if (b->w8a8) {
    rows = sk__mb_experts_w8a8(b, n, h, gating[1], routing);
  } else {
    sk_op_input rin[] = {{"x", &h, 1}, {"expert_idx", &gating[1], 1}};
    sk_attr rat[] = {SK_ATTR_INT("expert_num", b->d->moe.experts)};
    sk__mb_node(b, "dispatch", "moe_init_routing", rin, 2, rat, 1, routing, 4);
    rows = experts(b, n, routing[0], routing[2]);
  }
  sk_op_input fin[6] = {{"expanded_permuted_rows", &rows, 1}, {"expanded_src_to_dst_row", &routing[1], 1},
                        {"scales", &gating[0], 1}, {"export_for_source_row", &gating[1], 1}};
  size_t n_in = 4;
  if (resid != NONE) fin[n_in++] = (sk_op_input){"skip1", &resid, 1};
  if (s != NONE) fin[n_in++] = (sk_op_input){"skip2", &s, 1};
  sk_attr fat[] = {SK_ATTR_INT("drop_pad_mode", 2)};
  return sk__mb_one(b, "combine", "moe_finalize_routing", fin, n_in, fat, 1);
}

/* w8a8 (sk_model_config.quantize = "w8a8"; model_graph.h): every linear
 * layer's weight quantized per output channel to int8 at create, its input
 * per row at run time.
 *
 * Weights (as superkernel.optimize's per-block w8a8 does): for output
 * channel n of a [N, K] weight, amax = max |w[n, :]| (each widened
 * exactly), s = amax > 0 ? amax / 127 : 1, q[k, n] = clip(rint(w[n, k] / s),
 * -127, 127) (rint half to even, a true division), stored [K, N] (the int8
 * GEMM's layout) beside the fp32 scales [N].
 *
 * A linear layer: dynamic_quant(x) -> (xq, row scales); quant_matmul(xq,
 * q, scale, pertoken_scale = row scales, bias) in the model's dtype. The
 * routed experts: moe_init_routing's dynamic int8 rows, grouped_matmul's
 * int8 path to int32, dequant_swiglu_quant (the gate|up channel scales and
 * the row's scale; SwiGLU; requantized per row), grouped_matmul's int8 path
 * to the model's dtype. Every step keeps its op's per-row contract, so a
 * token's logits stay the same bits in any batch, chunking, team or ISA. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "model/model_graph.h"

#define NONE SK__MB_NONE
#define ROWS SK__W8A8_ROWS /* output channels quantized together: their rows widened once, stores of 8 bytes */

static int8_t quantize_value(float v, float s) {
  float t = v / s;
  t = t != t ? 0.0f : t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
  return (int8_t)(int32_t)((t + 0x1.8p23f) - 0x1.8p23f); /* rint, half to even (|t| <= 127) */
}

void sk__w8a8_quantize_channels(const void *w, sk_dtype dt, int64_t n, int64_t k, int64_t n_stride, int64_t k_stride,
                                int8_t *q, int64_t q_ld, float *scale, float *rows) {
  for (int64_t n0 = 0; n0 < n; n0 += ROWS) {
    const int64_t nb = n - n0 < ROWS ? n - n0 : ROWS;
    float s[ROWS];
    for (int64_t i = 0; i < nb; i++) {
      float amax = 0.0f, *r = rows + i * k;
      for (int64_t c = 0; c < k; c++) {
        r[c] = sk__load_f32(w, dt, (size_t)((n0 + i) * n_stride + c * k_stride)); /* exact */
        amax = fmaxf(amax, fabsf(r[c]));
      }
      s[i] = amax > 0.0f ? amax / 127.0f : 1.0f;
      scale[n0 + i] = s[i];
    }
    for (int64_t c = 0; c < k; c++)
      for (int64_t i = 0; i < nb; i++) q[c * q_ld + n0 + i] = quantize_value(rows[i * k + c], s[i]);
  }
}

/* The scratch rows sk__w8a8_quantize_channels needs for a depth of k. */
static float *scratch_rows(sk__model_builder *b, int64_t k) {
  if (b->scratch_k < k) {
    free(b->scratch);
    b->scratch = malloc((size_t)(ROWS * k) * sizeof(float));
    b->scratch_k = b->scratch ? k : 0;
    if (!b->scratch) sk__mb_failed(b, sk__fail(SK_STATUS_OUT_OF_MEMORY, "w8a8: out of memory quantizing weights"));
  }
  return b->scratch;
}

/* int8 [rows_k, cols_n] and fp32 scales [scales] in the model's store,
 * added to the graph as borrowed constants `name` and `name`.scale. */
static bool quantized_constants(sk__model_builder *b, const char *name, int rank, const int64_t *q_shape,
                                int64_t n_scales, int8_t **q, float **scale, sk_value *qv, sk_value *sv) {
  size_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= (size_t)q_shape[i];
  *q = sk__weight_store_alloc(b->store, numel);
  *scale = sk__weight_store_alloc(b->store, (size_t)n_scales * sizeof(float));
  if (!*q || !*scale) { /* (not "weight NAME": name may be the model's own, no checkpoint tensor) */
    sk__mb_failed(b, sk__fail(SK_STATUS_OUT_OF_MEMORY, "w8a8: %s: out of memory (%zu bytes of int8)", name, numel));
    return false;
  }
  char sname[SK__MB_NAME_MAX + 32];
  snprintf(sname, sizeof sname, "%s.scale", name);
  int64_t s_shape[2] = {n_scales, 0};
  if (rank == 3) s_shape[0] = q_shape[0], s_shape[1] = n_scales / q_shape[0];
  sk_status st = sk_graph_add_constant(b->g, name, SK_INT8, rank, q_shape, *q, SK_CONSTANT_BORROW, qv);
  if (st == SK_STATUS_OK)
    st = sk_graph_add_constant(b->g, sname, SK_FP32, rank - 1, s_shape, *scale, SK_CONSTANT_BORROW, sv);
  if (st != SK_STATUS_OK) {
    sk__mb_failed(b, st);
    return false;
  }
  b->weight_bytes += numel + (size_t)n_scales * sizeof(float);
  return true;
}

sk_value sk__mb_proj(sk__model_builder *b, const char *name, sk_value x, int64_t rows, int64_t cols, sk_value bias,
                     const char *fmt, ...) {
  char wname[SK__MB_NAME_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(wname, sizeof wname, fmt, ap);
  va_end(ap);
  const int64_t shape[] = {rows, cols};
  if (!b->w8a8) return sk__mb_linear(b, name, x, sk__mb_weight(b, b->d->dtype, 2, shape, "%s", wname), bias);
  sk_model_tensor t;
  if (!sk__mb_lookup(b, wname, b->d->dtype, 2, shape, &t)) return NONE;
  sk_value xq[2] = {b->quantized[0], b->quantized[1]};
  if (x != b->quantized_of) { /* projections of one input (q, k, v) quantize it once */
    char node[80];
    snprintf(node, sizeof node, "%s_x_int8", name);
    sk_op_input qin[] = {{"x", &x, 1}};
    sk__mb_node(b, node, "dynamic_quant", qin, 1, NULL, 0, xq, 2);
    b->quantized_of = x, b->quantized[0] = xq[0], b->quantized[1] = xq[1];
  }
  float *tmp = scratch_rows(b, cols);
  int8_t *q;
  float *scale;
  sk_value qv = NONE, sv = NONE;
  if (!tmp || !sk__mb_ok(b) || !quantized_constants(b, wname, 2, (int64_t[]){cols, rows}, rows, &q, &scale, &qv, &sv))
    return NONE;
  sk__w8a8_quantize_channels(t.data, t.dtype, rows, cols, cols, 1, q, rows, scale, tmp);
  sk_op_input in[] = {{"x1", &xq[0], 1}, {"x2", &qv, 1}, {"scale", &sv, 1}, {"pertoken_scale", &xq[1], 1},
                      {"bias", &bias, 1}};
  sk_attr at[] = {SK_ATTR_INT("output_dtype", b->d->dtype)};
  return sk__mb_one(b, name, "quant_matmul", in, bias != NONE ? 5 : 4, at, 1);
}

/* The routed experts' weights as grouped_matmul's int8 operands: up [E, H,
 * 2I] (gate | up columns) with scales [E, 2I], down [E, I, H] with [E, H],
 * from the fused tensors (transformers' layout or transposed) or one per
 * expert. */
static bool expert_weights(sk__model_builder *b, const sk__moe_names *n, sk_value up[2], sk_value down[2]) {
  const sk__decoder *d = b->d;
  const int64_t e = d->moe.experts, in = d->moe.inter, hid = d->hidden;
  const bool tr = d->moe.experts_transposed;
  char fused[SK__MB_NAME_MAX], name[SK__MB_NAME_MAX];
  snprintf(fused, sizeof fused, "%sexperts.gate_up_proj", n->prefix);
  sk_model_tensor gu, dn;
  sk_status st = sk__mb_try_lookup(b, fused, d->dtype, 3, tr ? (int64_t[]){e, hid, 2 * in} : (int64_t[]){e, 2 * in, hid},
                                   &gu);
  if (st != SK_STATUS_OK && st != SK_STATUS_NOT_FOUND) return false;
  /* every weight looked up (and checked) before gigabytes are allocated for their int8 copies */
  snprintf(name, sizeof name, "%sexperts.down_proj", n->prefix);
  if (st == SK_STATUS_OK &&
      !sk__mb_lookup(b, name, d->dtype, 3, tr ? (int64_t[]){e, in, hid} : (int64_t[]){e, hid, in}, &dn))
    return false;
  for (int k = 0; st == SK_STATUS_OK && k < 2; k++) { /* the int8 GEMMs take no bias: refused, never dropped */
    sk_model_tensor t;
    snprintf(name, sizeof name, "%sexperts.%s_proj_bias", n->prefix, k ? "down" : "gate_up");
    if (b->weight(b->weight_user, name, &t) == SK_STATUS_OK) {
      sk__mb_failed(b, sk__fail(SK_STATUS_UNSUPPORTED, "weight %s: w8a8 experts with biases are not supported", name));
      return false;
    }
  }
  for (int64_t j = 0; st != SK_STATUS_OK && j < e; j++) {
    for (int k = 0; k < 3; k++) {
      sk_model_tensor t;
      snprintf(name, sizeof name, "%sexperts.%lld.%s.weight", n->prefix, (long long)j, n->proj[k]);
      if (!sk__mb_lookup(b, name, d->dtype, 2, k == 2 ? (int64_t[]){hid, in} : (int64_t[]){in, hid}, &t)) return false;
    }
  }
  int8_t *qu, *qd;
  float *su, *sd, *tmp = scratch_rows(b, in > hid ? in : hid);
  snprintf(name, sizeof name, "%sexperts.up_int8", n->prefix);
  if (!tmp || !quantized_constants(b, name, 3, (int64_t[]){e, hid, 2 * in}, e * 2 * in, &qu, &su, &up[0], &up[1]))
    return false;
  snprintf(name, sizeof name, "%sexperts.down_int8", n->prefix);
  if (!quantized_constants(b, name, 3, (int64_t[]){e, in, hid}, e * hid, &qd, &sd, &down[0], &down[1])) return false;
  const size_t es = sk_dtype_size(d->dtype);
  if (st == SK_STATUS_OK) {
    /* channel i, depth c of expert j: [2I, H] at i * H + c, transposed [H, 2I] at c * 2I + i */
    for (int64_t j = 0; j < e; j++) {
      sk__w8a8_quantize_channels((const char *)gu.data + (size_t)(j * 2 * in * hid) * es, d->dtype, 2 * in, hid,
                        tr ? 1 : hid, tr ? 2 * in : 1, qu + j * hid * 2 * in, 2 * in, su + j * 2 * in, tmp);
      sk__w8a8_quantize_channels((const char *)dn.data + (size_t)(j * hid * in) * es, d->dtype, hid, in, tr ? 1 : in,
                        tr ? hid : 1, qd + j * in * hid, hid, sd + j * hid, tmp);
    }
    return true;
  }
  for (int64_t j = 0; j < e; j++) {
    const char *fmt = "%sexperts.%lld.%s.weight";
    sk_model_tensor g, u, dw;
    snprintf(name, sizeof name, fmt, n->prefix, (long long)j, n->proj[0]);
    if (!sk__mb_lookup(b, name, d->dtype, 2, (int64_t[]){in, hid}, &g)) return false;
    snprintf(name, sizeof name, fmt, n->prefix, (long long)j, n->proj[1]);
    if (!sk__mb_lookup(b, name, d->dtype, 2, (int64_t[]){in, hid}, &u)) return false;
    snprintf(name, sizeof name, fmt, n->prefix, (long long)j, n->proj[2]);
    if (!sk__mb_lookup(b, name, d->dtype, 2, (int64_t[]){hid, in}, &dw)) return false;
    int8_t *qj = qu + j * hid * 2 * in;
    sk__w8a8_quantize_channels(g.data, d->dtype, in, hid, hid, 1, qj, 2 * in, su + j * 2 * in, tmp);
    sk__w8a8_quantize_channels(u.data, d->dtype, in, hid, hid, 1, qj + in, 2 * in, su + j * 2 * in + in, tmp);
    sk__w8a8_quantize_channels(dw.data, d->dtype, hid, in, in, 1, qd + j * in * hid, hid, sd + j * hid, tmp);
  }
  return true;
}

sk_value sk__mb_experts_w8a8(sk__model_builder *b, const sk__moe_names *n, sk_value h, sk_value expert_idx,
                             sk_value routing[4]) {
  sk_value up[2] = {NONE, NONE}, down[2] = {NONE, NONE};
  if (!sk__mb_ok(b) || !expert_weights(b, n, up, down)) return NONE;
  sk_op_input rin[] = {{"x", &h, 1}, {"expert_idx", &expert_idx, 1}};
  sk_attr rat[] = {SK_ATTR_INT("expert_num", b->d->moe.experts), SK_ATTR_INT("quant_mode", 1),
                   SK_ATTR_INT("expert_tokens_num_type", 1)};
  sk__mb_node(b, "dispatch", "moe_init_routing", rin, 2, rat, 3, routing, 4); /* int8 rows, map, counts, scales */
  sk_attr gmm[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3), SK_ATTR_INT("group_list_type", 1),
                   SK_ATTR_INT("output_dtype", b->d->dtype)};
  sk_op_input uin[] = {{"x", &routing[0], 1}, {"weight", &up[0], 1}, {"group_list", &routing[2], 1}};
  sk_value acc = sk__mb_one(b, "experts_up", "grouped_matmul", uin, 3, gmm, 3); /* int32 */
  sk_value q[2] = {NONE, NONE};
  sk_op_input din[] = {{"x", &acc, 1}, {"weight_scale", &up[1], 1}, {"activation_scale", &routing[3], 1},
                       {"group_index", &routing[2], 1}};
  sk_attr dat[] = {SK_ATTR_INT("quant_mode", 1), SK_ATTR_INT("activate_left", 1)};
  sk__mb_node(b, "experts_act", "dequant_swiglu_quant", din, 4, dat, 2, q, 2);
  sk_op_input win[] = {{"x", &q[0], 1}, {"weight", &down[0], 1}, {"scale", &down[1], 1},
                       {"per_token_scale", &q[1], 1}, {"group_list", &routing[2], 1}};
  return sk__mb_one(b, "experts_down", "grouped_matmul", win, 5, gmm, 4);
}

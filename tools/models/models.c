/*
 * models.c — example01 and the benchmark scenarios (shared/spec/models.md),
 * built with the public C API; deterministic inputs; buffer helpers.
 *
 *   sk1:  g1 = grouped_matmul(x=gmm1_x, weight=gmm1_weight, bias=gmm1_bias)   # [S,64], [T,320]
 *         g2 = grouped_matmul(x=g1, weight=gmm2_weight)                        # [S,56], [T,256]
 *         y, idx, out = moe_gating_topk(g2[1], bias=moe1_bias, k=8, k_group=4,
 *                                       group_count=8, group_select_mode=1, norm_type=1)
 *         r1 = reshape(idx, [2,8,128] for T = 256, else [-1,128]); s = square(r1)
 *         c = concat([s, data1], dim=0); r2 = reshape(c, [-1,128])              # [T*8/128 + 32, 128]
 *   sk2:  q, qs = dequant_swiglu_quant(r2, dsq_input_0, dsq_input_1, dsq_input_2,
 *                                      activate_left=0, quant_mode=1)
 *         output = quant_matmul(q, data2, scale=scale, output_dtype=fp16)       # [6, rows, 64] fp16
 *
 * example02 (examples/example02_super_kernel_profiling): six scopes, T = 64, E = 128, H = 64:
 *   sk1..sk5: scores = grouped_matmul(x=h, weight=w [, bias=b in sk3]); y, idx, norm = moe_gating_topk(
 *             scores, k=8, k_group=4, group_count=8, group_select_mode=1, norm_type=1, out_flag=1);
 *             h = cast(norm, fp16)                 (h = x for sk1; sk5 has its own options early-start=0)
 *   sk6:      quantized, _ = dequant_swiglu_quant(dsq_x, weight_scale=dsq_scale, quant_mode=1)
 *   outputs:  routing = h of sk5 [64, 128] fp16, quantized [64, 64] int8
 */
#include "models.h"
#include "model_builder.h"
#include "attention_layer.h"
#include "moe_layer.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The model table                                                           */
/* ------------------------------------------------------------------------ */

enum { KIND_MOE, KIND_PROFILING };

typedef struct model_def {
  const char *name;
  const char *description;
  int64_t t, small_rows;
  int kind; /* KIND_MOE: example01's graph at T rows; KIND_PROFILING: example02's six scopes */
} model_def;

/* example02's sizes: tokens, experts (the routing width), dequant_swiglu_quant's half width. */
enum { EX02_T = 64, EX02_E = 128, EX02_H = 64 };

static const model_def models[] = {
    {"example01", "the seed model (example01_super_kernel_base): T=256, small group 64 rows", 256, 64, KIND_MOE},
    {"seed", "scenario seed: exactly example01 (T=256, small group 64 rows)", 256, 64, KIND_MOE},
    {"decode", "scenario decode: T=16, small group 8 rows (launch/sync overhead dominates)", 16, 8, KIND_MOE},
    {"prefill", "scenario prefill: T=4096, small group 64 rows (compute dominates)", 4096, 64, KIND_MOE},
    {"example02", "the profiling model (example02_super_kernel_profiling): six scopes, T=64", EX02_T, 0,
     KIND_PROFILING},
};
#define N_MODELS (sizeof models / sizeof models[0])

const char *const skm_model_names[] = {"example01", "seed", "decode", "prefill", "example02", NULL};

const char *skm_model_list(void) {
  return "example01, seed, decode, prefill, example02, moe-layer:PRESET[:tN][:bf16|fp16|int8][:eN][:skew] (PRESET: tiny, "
         "qwen3-30b-a3b, deepseek-v2-lite, deepseek-v3), moe-layer[:tN][:dtype][:eN] with --weights DIR, "
         "attention:PRESET:decode:ctxN, attention:PRESET:prefill:tN (PRESET: qwen3-30b-a3b, tiny), "
         "mla:PRESET:decode:ctxN, mla:PRESET:prefill:tN (PRESET: deepseek-v2-lite, tiny)";
}

sk_status skm_error(char *msg, size_t msg_size, sk_status st, const char *fmt, ...) {
  if (!msg || msg_size == 0) return st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msg_size, fmt, ap);
  va_end(ap);
  return st;
}

static int64_t dsq_rows_of(int64_t t) { return t == 256 ? 48 : t * 8 / 128 + 32; }

int skm_model_lookup(const char *name, skm_model_info *info) {
  skm_moe_layer moe;
  if (skm_moe_parse(name, &moe)) {
    if (info) *info = (skm_model_info){.name = name, .description = moe.about, .t = moe.t};
    return 1;
  }
  skm_attention attn;
  if (skm_attn_parse(name, &attn)) {
    if (info) *info = (skm_model_info){.name = name, .description = attn.about, .t = attn.t};
    return 1;
  }
  for (size_t i = 0; name && i < N_MODELS; i++) {
    if (strcmp(models[i].name, name) != 0) continue;
    if (info) {
      info->name = models[i].name;
      info->description = models[i].description;
      info->t = models[i].t;
      info->small_rows = models[i].small_rows;
      info->dsq_rows = models[i].kind == KIND_PROFILING ? EX02_T : dsq_rows_of(models[i].t);
    }
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Building                                                                  */
/* ------------------------------------------------------------------------ */

enum {
  GMM1_X0, GMM1_X1, GMM1_W0, GMM1_W1, GMM1_B0, GMM1_B1, GMM2_W0, GMM2_W1, MOE1_BIAS,
  DSQ0, DSQ1, DSQ2, DATA1, DATA2, SCALE, N_INPUTS
};

void skm_builder_fail(skm_builder *b, sk_status st, const char *what) {
  if (b->st != SK_STATUS_OK) return;
  b->st = st;
  skm_error(b->msg, b->msg_size, st, "%s: %s: %s", what, sk_status_string(st), sk_last_error());
}

static const char *const weight_names[] = {
    "gmm1_weight_0", "gmm1_weight_1", "gmm1_bias_0", "gmm1_bias_1", "gmm2_weight_0", "gmm2_weight_1", "moe1_bias",
    "dsq_input_0", "dsq_input_2", "data2", "scale", "w", "b", "dsq_scale", "mla_kv_b_weight", NULL};

int skm_is_weight(const char *name) {
  if (strncmp(name, "moe_", 4) == 0 && strcmp(name, "moe_x") != 0) return 1; /* the moe-layer's */
  for (int i = 0; weight_names[i]; i++)
    if (strcmp(weight_names[i], name) == 0) return 1;
  return 0;
}

void skm_builder_input(skm_builder *b, const char *name, sk_dtype dtype, int rank, const int64_t *shape, sk_value *out) {
  if (b->st != SK_STATUS_OK) return;
  sk_status st;
  const skm_tensor *w = NULL;
  if (b->weights && skm_is_weight(name)) {
    w = skm_io_find_input((skm_io *)b->weights, name);
    if (!w) {
      b->st = skm_error(b->msg, b->msg_size, SK_STATUS_NOT_FOUND, "%s: no values for this weight", name);
      return;
    }
    st = sk_graph_add_constant(b->g, name, dtype, rank, shape, w->data, b->borrow ? SK_CONSTANT_BORROW : SK_CONSTANT_COPY,
                               out);
  } else {
    st = sk_graph_add_input(b->g, name, dtype, rank, shape, out);
  }
  if (st != SK_STATUS_OK) skm_builder_fail(b, st, name);
}

void skm_builder_node(skm_builder *b, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                 const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs) {
  if (b->st != SK_STATUS_OK) return;
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                  .attrs = attrs, .n_attrs = n_attrs};
  sk_status st = sk_graph_add_op(b->g, &d, outs, max_outs, NULL);
  if (st != SK_STATUS_OK) skm_builder_fail(b, st, name);
}

void skm_builder_scope(skm_builder *b, const char *name, const char *options) {
  if (b->st != SK_STATUS_OK) return;
  sk_status st = name ? sk_graph_begin_scope(b->g, name, options) : sk_graph_end_scope(b->g);
  if (st != SK_STATUS_OK) skm_builder_fail(b, st, name ? name : "end of scope");
}

void skm_builder_output(skm_builder *b, sk_value value, const char *name) {
  if (b->st != SK_STATUS_OK) return;
  sk_status st = sk_graph_mark_output(b->g, value, name);
  if (st != SK_STATUS_OK) skm_builder_fail(b, st, name);
}

static void build_graph(skm_builder *b, int64_t t, int64_t small, const char *options) {
  const int seed_layout = t == 256;
  const int64_t rows = dsq_rows_of(t);
  sk_value in[N_INPUTS];
  skm_builder_input(b, "gmm1_x_0", SK_FP16, 2, (int64_t[]){small, 128}, &in[GMM1_X0]);
  skm_builder_input(b, "gmm1_x_1", SK_FP16, 2, (int64_t[]){t, 180}, &in[GMM1_X1]);
  skm_builder_input(b, "gmm1_weight_0", SK_FP16, 2, (int64_t[]){128, 64}, &in[GMM1_W0]);
  skm_builder_input(b, "gmm1_weight_1", SK_FP16, 2, (int64_t[]){180, 320}, &in[GMM1_W1]);
  skm_builder_input(b, "gmm1_bias_0", SK_FP16, 1, (int64_t[]){64}, &in[GMM1_B0]);
  skm_builder_input(b, "gmm1_bias_1", SK_FP16, 1, (int64_t[]){320}, &in[GMM1_B1]);
  skm_builder_input(b, "gmm2_weight_0", SK_FP16, 2, (int64_t[]){64, 56}, &in[GMM2_W0]);
  skm_builder_input(b, "gmm2_weight_1", SK_FP16, 2, (int64_t[]){320, 256}, &in[GMM2_W1]);
  skm_builder_input(b, "moe1_bias", SK_FP16, 1, (int64_t[]){256}, &in[MOE1_BIAS]);
  skm_builder_input(b, "dsq_input_0", SK_FP32, 1, (int64_t[]){128}, &in[DSQ0]);
  skm_builder_input(b, "dsq_input_1", SK_FP32, 2, (int64_t[]){rows, 1}, &in[DSQ1]);
  skm_builder_input(b, "dsq_input_2", SK_FP32, 2, (int64_t[]){1, 64}, &in[DSQ2]);
  if (seed_layout)
    skm_builder_input(b, "data1", SK_INT32, 3, (int64_t[]){4, 8, 128}, &in[DATA1]);
  else
    skm_builder_input(b, "data1", SK_INT32, 2, (int64_t[]){32, 128}, &in[DATA1]);
  skm_builder_input(b, "data2", SK_INT8, 3, (int64_t[]){6, 64, 64}, &in[DATA2]);
  skm_builder_input(b, "scale", SK_INT64, 1, (int64_t[]){1}, &in[SCALE]);

  /* ---- sk1: grouped_matmul -> grouped_matmul -> moe_gating_topk ---- */
  skm_builder_scope(b, "sk1", options);
  sk_value g1[2], g2[2], moe[3];
  sk_op_input gmm1_in[] = {{"x", &in[GMM1_X0], 2}, {"weight", &in[GMM1_W0], 2}, {"bias", &in[GMM1_B0], 2}};
  sk_attr lists[] = {SK_ATTR_INT("group_type", -1)};
  skm_builder_node(b, "gmm1", "grouped_matmul", gmm1_in, 3, lists, 1, g1, 2);
  sk_op_input gmm2_in[] = {{"x", g1, 2}, {"weight", &in[GMM2_W0], 2}};
  skm_builder_node(b, "gmm2", "grouped_matmul", gmm2_in, 2, lists, 1, g2, 2);
  sk_op_input moe_in[] = {{"x", &g2[1], 1}, {"bias", &in[MOE1_BIAS], 1}};
  sk_attr moe_attrs[] = {SK_ATTR_INT("k", 8), SK_ATTR_INT("k_group", 4), SK_ATTR_INT("group_count", 8),
                         SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1)};
  skm_builder_node(b, "moe1", "moe_gating_topk", moe_in, 2, moe_attrs, 5, moe, 3);
  sk_value idx = moe[1];
  skm_builder_scope(b, NULL, NULL);

  /* ---- unfused middle segment: reshape -> square -> concat -> reshape ---- */
  sk_value r1, s, c, r2;
  sk_op_input r1_in[] = {{"x", &idx, 1}};
  static const int64_t seed_shape[] = {2, 8, 128}, rows_shape[] = {-1, 128};
  sk_attr r1_shape[] = {seed_layout ? SK_ATTR_INTS("shape", seed_shape, 3) : SK_ATTR_INTS("shape", rows_shape, 2)};
  skm_builder_node(b, "reshape1", "reshape", r1_in, 1, r1_shape, 1, &r1, 1);
  sk_op_input s_in[] = {{"x", &r1, 1}};
  skm_builder_node(b, "square", "square", s_in, 1, NULL, 0, &s, 1);
  sk_value parts[2] = {s, in[DATA1]};
  sk_op_input c_in[] = {{"x", parts, 2}};
  sk_attr dim0[] = {SK_ATTR_INT("dim", 0)};
  skm_builder_node(b, "concat", "concat", c_in, 1, dim0, 1, &c, 1);
  sk_op_input r2_in[] = {{"x", &c, 1}};
  sk_attr r2_shape[] = {SK_ATTR_INTS("shape", rows_shape, 2)};
  skm_builder_node(b, "reshape2", "reshape", r2_in, 1, r2_shape, 1, &r2, 1);

  /* ---- sk2: dequant_swiglu_quant -> quant_matmul ---- */
  skm_builder_scope(b, "sk2", options);
  sk_value dsq[2], out = SK_VALUE_NONE;
  sk_op_input dsq_in[] = {{"x", &r2, 1},
                          {"weight_scale", &in[DSQ0], 1},
                          {"activation_scale", &in[DSQ1], 1},
                          {"quant_scale", &in[DSQ2], 1}};
  sk_attr dsq_attrs[] = {SK_ATTR_INT("activate_left", 0), SK_ATTR_INT("quant_mode", 1)};
  skm_builder_node(b, "dsq", "dequant_swiglu_quant", dsq_in, 4, dsq_attrs, 2, dsq, 2);
  sk_op_input qmm_in[] = {{"x1", &dsq[0], 1}, {"x2", &in[DATA2], 1}, {"scale", &in[SCALE], 1}};
  sk_attr qmm_attrs[] = {SK_ATTR_INT("output_dtype", SK_FP16)};
  skm_builder_node(b, "qmm", "quant_matmul", qmm_in, 3, qmm_attrs, 1, &out, 1);
  skm_builder_scope(b, NULL, NULL);
  skm_builder_output(b, out, "output");
}

/* One routing scope of example02: scores = x @ w (+ bias), gating top-k;
 * returns the normalized scores cast back to fp16 for the next scope. */
static sk_value routing_scope(skm_builder *b, int index, sk_value x, sk_value w, const sk_value *bias,
                              const char *options) {
  char scope_name[8], name[32];
  snprintf(scope_name, sizeof scope_name, "sk%d", index);
  skm_builder_scope(b, scope_name, options);
  sk_op_input mm_in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", bias, 1}};
  sk_value scores = SK_VALUE_NONE, gate[3] = {SK_VALUE_NONE, SK_VALUE_NONE, SK_VALUE_NONE}, next = SK_VALUE_NONE;
  snprintf(name, sizeof name, "gmm_%d", index);
  skm_builder_node(b, name, "grouped_matmul", mm_in, bias ? 3 : 2, NULL, 0, &scores, 1);
  sk_op_input moe_in[] = {{"x", &scores, 1}};
  sk_attr moe_attrs[] = {SK_ATTR_INT("k", 8), SK_ATTR_INT("k_group", 4), SK_ATTR_INT("group_count", 8),
                         SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1), SK_ATTR_INT("out_flag", 1)};
  snprintf(name, sizeof name, "moe_%d", index);
  skm_builder_node(b, name, "moe_gating_topk", moe_in, 1, moe_attrs, 6, gate, 3);
  sk_op_input cast_in[] = {{"x", &gate[2], 1}};
  sk_attr to_fp16[] = {SK_ATTR_INT("dtype", SK_FP16)};
  snprintf(name, sizeof name, "cast_%d", index);
  skm_builder_node(b, name, "cast", cast_in, 1, to_fp16, 1, &next, 1);
  skm_builder_scope(b, NULL, NULL);
  return next;
}

/* example02's graph. Scope sk5 keeps its own options (early-start=0, as in
 * the example); the others take `options`. */
static void build_profiling_graph(skm_builder *b, const char *options) {
  sk_value x = SK_VALUE_NONE, w = SK_VALUE_NONE, bias = SK_VALUE_NONE, dx = SK_VALUE_NONE, ws = SK_VALUE_NONE;
  skm_builder_input(b, "x", SK_FP16, 2, (int64_t[]){EX02_T, EX02_E}, &x);
  skm_builder_input(b, "w", SK_FP16, 2, (int64_t[]){EX02_E, EX02_E}, &w);
  skm_builder_input(b, "b", SK_FP16, 1, (int64_t[]){EX02_E}, &bias);
  skm_builder_input(b, "dsq_x", SK_INT32, 2, (int64_t[]){EX02_T, 2 * EX02_H}, &dx);
  skm_builder_input(b, "dsq_scale", SK_FP32, 1, (int64_t[]){2 * EX02_H}, &ws);
  sk_value h = routing_scope(b, 1, x, w, NULL, options);
  h = routing_scope(b, 2, h, w, NULL, options);
  h = routing_scope(b, 3, h, w, &bias, options);
  h = routing_scope(b, 4, h, w, NULL, options);
  h = routing_scope(b, 5, h, w, NULL, "early-start=0");
  skm_builder_scope(b, "sk6", options);
  sk_op_input dsq_in[] = {{"x", &dx, 1}, {"weight_scale", &ws, 1}};
  sk_attr dsq_attrs[] = {SK_ATTR_INT("quant_mode", 1)};
  sk_value q[2] = {SK_VALUE_NONE, SK_VALUE_NONE};
  skm_builder_node(b, "dsq", "dequant_swiglu_quant", dsq_in, 2, dsq_attrs, 1, q, 2);
  skm_builder_scope(b, NULL, NULL);
  skm_builder_output(b, h, "routing");
  skm_builder_output(b, q[0], "quantized");
}

int skm_gemm_shapes(const char *model, skm_gemm *out, int max) {
  skm_model_info mi;
  if (!skm_model_lookup(model, &mi)) return 0;
  skm_gemm list[8];
  int n = 0;
  skm_moe_layer moe;
  skm_attention attn;
  if (skm_attn_parse(model, &attn)) return 0; /* no GEMM: bound by its cache's bytes, or its own FLOPs */
  if (skm_moe_parse(model, &moe)) {
    /* The layer's FLOPs as dense products: the gate, all T * k routed rows
     * through one expert's up and down projections, the shared MLP. A
     * compute floor: decode is bound by the weights' bytes instead. */
    int64_t rows = moe.t * moe.top_k;
    list[n++] = (skm_gemm){1, moe.t, moe.hidden, moe.experts};
    list[n++] = (skm_gemm){1, rows, moe.hidden, 2 * moe.inter};
    list[n++] = (skm_gemm){1, rows, moe.inter, moe.hidden};
    if (moe.shared) {
      list[n++] = (skm_gemm){1, moe.t, moe.hidden, 2 * moe.shared * moe.inter};
      list[n++] = (skm_gemm){1, moe.t, moe.shared * moe.inter, moe.hidden};
    }
  } else if (mi.small_rows == 0) { /* example02: five routing matmuls */
    for (int i = 0; i < 5; i++) list[n++] = (skm_gemm){1, EX02_T, EX02_E, EX02_E};
  } else {
    list[n++] = (skm_gemm){1, mi.small_rows, 128, 64}; /* gmm1 */
    list[n++] = (skm_gemm){1, mi.t, 180, 320};
    list[n++] = (skm_gemm){1, mi.small_rows, 64, 56}; /* gmm2 */
    list[n++] = (skm_gemm){1, mi.t, 320, 256};
    list[n++] = (skm_gemm){6, mi.dsq_rows, 64, 64};  /* quant_matmul */
  }
  for (int i = 0; i < n && i < max; i++) out[i] = list[i];
  return n;
}

sk_status skm_build(const char *model, const skm_config *cfg, sk_graph **graph_out, skm_model_info *info,
                    char *msg, size_t msg_size) {
  if (msg && msg_size) msg[0] = '\0';
  if (!graph_out)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "skm_build: graph_out is NULL");
  *graph_out = NULL;
  skm_model_info mi;
  if (!skm_model_lookup(model, &mi))
    return skm_error(msg, msg_size, SK_STATUS_NOT_FOUND, "unknown model '%s' (known: %s)", model ? model : "(null)",
                     skm_model_list());
  skm_builder b = {.st = SK_STATUS_OK, .msg = msg, .msg_size = msg_size, .weights = cfg ? cfg->weights : NULL,
                   .borrow = cfg && cfg->borrow_weights};
  sk_status st = sk_graph_create(&b.g);
  if (st != SK_STATUS_OK) {
    skm_builder_fail(&b, st, "sk_graph_create");
    return st;
  }
  const model_def *def = NULL;
  for (size_t i = 0; i < N_MODELS; i++)
    if (strcmp(models[i].name, mi.name) == 0) def = &models[i];
  skm_moe_layer moe;
  const char *options = cfg ? cfg->options : NULL;
  skm_attention attn;
  if (skm_attn_parse(model, &attn))
    skm_attn_graph(&b, &attn, options);
  else if (skm_moe_parse(model, &moe))
    skm_moe_graph(&b, &moe, options);
  else if (def && def->kind == KIND_PROFILING)
    build_profiling_graph(&b, options);
  else
    build_graph(&b, mi.t, mi.small_rows, options);
  if (b.st != SK_STATUS_OK) {
    /* Prefix the model so the message says where it came from. */
    if (msg && msg_size) {
      char tmp[1024];
      snprintf(tmp, sizeof tmp, "%s", msg);
      skm_error(msg, msg_size, b.st, "model %s: %s", mi.name, tmp);
    }
    sk_graph_destroy(b.g);
    return b.st;
  }
  *graph_out = b.g;
  if (info) *info = mi;
  return SK_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */

static void *alloc_zeroed(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void *p = aligned_alloc(64, rounded);
  if (p) memset(p, 0, rounded);
  return p;
}

static sk_status describe_all(const sk_program *p, int outputs, int64_t tokens, skm_tensor *ts, size_t n, char *msg,
                              size_t msg_size) {
  for (size_t i = 0; i < n; i++) {
    skm_tensor *t = &ts[i];
    sk_status st = outputs ? sk_program_output_info(p, i, &t->name, &t->dtype, &t->rank, t->shape)
                           : sk_program_input_info(p, i, &t->name, &t->dtype, &t->rank, t->shape);
    if (st != SK_STATUS_OK)
      return skm_error(msg, msg_size, st, "%s %zu: %s", outputs ? "output" : "input", i, sk_last_error());
    if (t->rank > 0 && t->shape[0] < 0) { /* SK_DIM_TOKENS(k): k rows a token */
      t->tokens_k = -t->shape[0];
      t->shape[0] = t->tokens_k * tokens;
    }
    t->numel = 1;
    for (int d = 0; d < t->rank; d++) t->numel *= t->shape[d];
    t->bytes = (size_t)t->numel * sk_dtype_size(t->dtype);
    t->data = alloc_zeroed(t->bytes);
    if (!t->data)
      return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory allocating %zu bytes for %s", t->bytes,
                       t->name);
  }
  return SK_STATUS_OK;
}

sk_status skm_io_alloc(const sk_program *program, skm_io *io, char *msg, size_t msg_size) {
  return skm_io_alloc_at(program, -1, io, msg, msg_size);
}

int64_t skm_model_run_tokens(const char *model) {
  skm_moe_layer moe;
  return skm_moe_parse(model, &moe) && moe.tmax ? moe.t : -1;
}

sk_status skm_io_alloc_at(const sk_program *program, int64_t tokens, skm_io *io, char *msg, size_t msg_size) {
  memset(io, 0, sizeof *io);
  if (tokens < 0) tokens = sk_program_max_tokens(program);
  if (!program)
    return skm_error(msg, msg_size, SK_STATUS_INVALID_ARGUMENT, "skm_io_alloc: program is NULL");
  size_t ni = sk_program_num_inputs(program), no = sk_program_num_outputs(program);
  io->inputs = calloc(ni + 1, sizeof *io->inputs);
  io->outputs = calloc(no + 1, sizeof *io->outputs);
  io->in_buffers = calloc(ni + 1, sizeof *io->in_buffers);
  io->out_buffers = calloc(no + 1, sizeof *io->out_buffers);
  if (!io->inputs || !io->outputs || !io->in_buffers || !io->out_buffers) {
    skm_io_free(io);
    return skm_error(msg, msg_size, SK_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  io->n_inputs = ni;
  io->n_outputs = no;
  sk_status st = describe_all(program, 0, tokens, io->inputs, ni, msg, msg_size);
  if (st == SK_STATUS_OK) st = describe_all(program, 1, tokens, io->outputs, no, msg, msg_size);
  if (st != SK_STATUS_OK) {
    skm_io_free(io);
    return st;
  }
  for (size_t i = 0; i < ni; i++)
    io->in_buffers[i] = (sk_buffer){io->inputs[i].name, io->inputs[i].data, io->inputs[i].bytes};
  for (size_t i = 0; i < no; i++)
    io->out_buffers[i] = (sk_buffer){io->outputs[i].name, io->outputs[i].data, io->outputs[i].bytes};
  return SK_STATUS_OK;
}

void skm_io_free(skm_io *io) {
  if (!io) return;
  sk_program_destroy(io->owner);
  for (size_t i = 0; io->inputs && i < io->n_inputs; i++) free(io->inputs[i].data);
  for (size_t i = 0; io->outputs && i < io->n_outputs; i++) free(io->outputs[i].data);
  free(io->inputs);
  free(io->outputs);
  free(io->in_buffers);
  free(io->out_buffers);
  memset(io, 0, sizeof *io);
}

skm_tensor *skm_io_find_input(skm_io *io, const char *name) {
  for (size_t i = 0; i < io->n_inputs; i++)
    if (strcmp(io->inputs[i].name, name) == 0) return &io->inputs[i];
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */
/* ------------------------------------------------------------------------ */

/* Value ranges (uniform, [lo, hi); integers are floored): example01's. They
 * keep every op in its meaningful range: activations near unit size, silu
 * arguments within a few units, fp16 outputs far from overflow, and they do
 * not depend on T. */
typedef struct input_range {
  const char *name;
  double lo, hi;
} input_range;

static const input_range ranges[] = {
    {"gmm1_x_0", -1, 1},
    {"gmm1_x_1", -1, 1},
    {"gmm1_weight_0", -0.088, 0.088},
    {"gmm1_weight_1", -0.075, 0.075},
    {"gmm1_bias_0", -0.1, 0.1},
    {"gmm1_bias_1", -0.1, 0.1},
    {"gmm2_weight_0", -0.125, 0.125},
    {"gmm2_weight_1", -0.056, 0.056},
    {"moe1_bias", -0.1, 0.1},
    {"dsq_input_0", 1e-5, 1e-4},
    {"dsq_input_1", 0.5, 1.5},
    {"dsq_input_2", 0.5, 1.5},
    {"data1", 0, 65536},
    {"data2", -128, 128},
    {"scale", 0, 0},
    /* example02's (the example's fill(): fp16 in [-0.125, 0.125), int32 in
     * [-1000, 1000), fp32 in [0.001, 0.011)) */
    {"x", -0.125, 0.125},
    {"w", -0.125, 0.125},
    {"b", -0.125, 0.125},
    {"dsq_x", -1000, 1000},
    {"dsq_scale", 0.001, 0.011},
    /* the moe-layer's: unit activations at every preset's width */
    {"moe_x", -1, 1},
    {"moe_gate", -0.05, 0.05},
    {"moe_w_up", -0.03, 0.03},
    {"moe_w_down", -0.03, 0.03},
    {"moe_shared_up", -0.03, 0.03},
    {"moe_shared_down", -0.03, 0.03},
    {"moe_score_bias", -0.1, 0.1},
    /* w8a8: int8 weights over their whole range times these give the
     * bf16 weights' +-0.03 */
    {"moe_w_up_scale", 0.0002, 0.00026},
    {"moe_w_down_scale", 0.0002, 0.00026},
};

static void range_of(const skm_tensor *t, double *lo, double *hi) {
  for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
    if (strcmp(ranges[i].name, t->name) == 0) {
      *lo = ranges[i].lo;
      *hi = ranges[i].hi;
      return;
    }
  switch (t->dtype) {
    case SK_INT8: *lo = -128, *hi = 128; break;
    case SK_INT32: case SK_INT64: *lo = 0, *hi = 1024; break;
    case SK_UINT8: *lo = 0, *hi = 256; break;
    case SK_BOOL: *lo = 0, *hi = 2; break;
    default: *lo = -1, *hi = 1; break;
  }
}

static double uniform(uint64_t *rng, double lo, double hi) {
  *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(*rng >> 11) * 0x1p-53;
}

void skm_fill_inputs(skm_io *io, uint64_t seed) {
  uint64_t rng = seed;
  for (size_t k = 0; k < io->n_inputs; k++) {
    skm_tensor *t = &io->inputs[k];
    double lo, hi;
    range_of(t, &lo, &hi);
    const int packed_scale = strcmp(t->name, "scale") == 0 && t->dtype == SK_INT64;
    for (int64_t i = 0; i < t->numel; i++) {
      double v = uniform(&rng, lo, hi); /* drawn for every element, as example01 does */
      switch (t->dtype) {
        case SK_FP16: ((uint16_t *)t->data)[i] = sk_fp32_to_fp16((float)v); break;
        case SK_BF16: ((uint16_t *)t->data)[i] = sk_fp32_to_bf16((float)v); break;
        case SK_FP32: ((float *)t->data)[i] = (float)v; break;
        case SK_INT32: ((int32_t *)t->data)[i] = (int32_t)floor(v); break;
        case SK_INT8: ((int8_t *)t->data)[i] = (int8_t)floor(v); break;
        case SK_INT64: if (!packed_scale) ((int64_t *)t->data)[i] = (int64_t)floor(v); break;
        case SK_UINT8: case SK_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)floor(v); break;
        default: break;
      }
    }
    if (packed_scale) {
      float quant_scale = 1.0f / 4096.0f; /* keeps |output| well inside fp16 */
      for (int64_t i = 0; i < t->numel; i++) sk_trans_quant_param(&quant_scale, NULL, 1, (int64_t *)t->data + i);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Checksums and formatting                                                  */
/* ------------------------------------------------------------------------ */

double skm_checksum(const skm_tensor *t) {
  double sum = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    switch (t->dtype) {
      case SK_FP16: sum += sk_fp16_to_fp32(((const uint16_t *)t->data)[i]); break;
      case SK_BF16: sum += sk_bf16_to_fp32(((const uint16_t *)t->data)[i]); break;
      case SK_FP32: sum += ((const float *)t->data)[i]; break;
      case SK_INT8: sum += ((const int8_t *)t->data)[i]; break;
      case SK_INT32: sum += ((const int32_t *)t->data)[i]; break;
      case SK_INT64: sum += (double)((const int64_t *)t->data)[i]; break;
      case SK_UINT8: sum += ((const uint8_t *)t->data)[i]; break;
      case SK_BOOL: sum += ((const uint8_t *)t->data)[i] != 0; break;
      default: break;
    }
  }
  return sum;
}

uint64_t skm_hash(const skm_tensor *t) {
  uint64_t h = 14695981039346656037ull;
  const unsigned char *p = t->data;
  for (size_t i = 0; i < t->bytes; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

const char *skm_format_shape(int rank, const int64_t *shape, char *buf, size_t size) {
  size_t len = 0;
  if (size == 0) return buf;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && len < size; d++)
    len += (size_t)snprintf(buf + len, size - len, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

sk_status skm_values(const char *model, const skm_config *cfg, uint64_t seed, skm_io *values, char *msg,
                     size_t msg_size) {
  memset(values, 0, sizeof *values);
  skm_config all_inputs = {.options = cfg ? cfg->options : NULL};
  sk_graph *g = NULL;
  sk_status st = skm_build(model, &all_inputs, &g, NULL, msg, msg_size);
  if (st != SK_STATUS_OK) return st;
  /* Compiled only to name and size its inputs: eager, nothing to JIT. */
  sk_compile_config cc = {.struct_size = sizeof cc, .executor = SK_EXECUTOR_EAGER};
  sk_program *p = NULL;
  st = sk_compile(g, &cc, &p);
  sk_graph_destroy(g);
  if (st != SK_STATUS_OK)
    return skm_error(msg, msg_size, st, "model %s: compiling for its values: %s", model, sk_last_error());
  st = skm_io_alloc(p, values, msg, msg_size);
  if (st != SK_STATUS_OK) {
    sk_program_destroy(p);
    return st;
  }
  values->owner = p;
  skm_fill_inputs(values, seed);
  skm_moe_layer moe;
  if (skm_moe_parse(model, &moe)) skm_moe_adjust_values(&moe, values);
  skm_attention attn;
  if (skm_attn_parse(model, &attn)) skm_attn_adjust_values(&attn, values);
  return SK_STATUS_OK;
}

sk_status skm_fill_from(skm_io *io, const skm_io *values, char *msg, size_t msg_size) {
  for (size_t i = 0; i < io->n_inputs; i++) {
    skm_tensor *t = &io->inputs[i];
    const skm_tensor *v = skm_io_find_input((skm_io *)values, t->name);
    /* A token input takes the first rows of values made for more tokens. */
    bool fits = v && (t->tokens_k || v->tokens_k ? v->bytes >= t->bytes : v->bytes == t->bytes);
    if (!fits)
      return skm_error(msg, msg_size, v ? SK_STATUS_INVALID_SHAPE : SK_STATUS_NOT_FOUND, "input %s: %s", t->name,
                       v ? "size differs from its values" : "no values for it");
    memcpy(t->data, v->data, t->bytes);
  }
  return SK_STATUS_OK;
}

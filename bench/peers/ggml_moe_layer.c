/*
 * ggml_moe_layer — the ggml peer of `sk run moe-layer --weights DIR`: the
 * same checkpoint layer built with ggml ops exactly as llama.cpp's
 * build_moe_ffn builds it (ggml_mul_mat gate, softmax or sigmoid + bias with
 * group selection, ggml_argsort_top_k, ggml_mul_mat_id for the experts,
 * ggml_swiglu_split, weights multiplied and the k expert outputs added),
 * the shared experts as llama.cpp's dense FFN, plus the residual, so it
 * computes sk's y = x + block(x). Built by bench/peers/build_ggml.sh against
 * the ggml inside llama-cpp-python's source distribution.
 *
 *   ggml_moe_layer DIR LAYER TYPE THREADS ITERS X.f32 Y.f32
 *
 * TYPE is the experts' and shared experts' weight type: f16, bf16 or q8_0
 * (converted from the checkpoint here, as llama.cpp's converter and
 * llama-quantize would; the gate stays f32, as llama-quantize keeps
 * ffn_gate_inp). X.f32 holds T x H floats (T from its size); Y.f32 gets y.
 * Prints "median N us over ITERS runs" (after one warm-up run).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkpoint.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "superkernel_checkpoint.h"

static void die(const char *what) {
  fprintf(stderr, "ggml_moe_layer: %s\n", what);
  exit(1);
}

static const sk_checkpoint_tensor *tensor(const sk_checkpoint *st, int layer, const char *suffix) {
  char name[256];
  snprintf(name, sizeof name, "model.layers.%d.mlp.%s", layer, suffix);
  const sk_checkpoint_tensor *t = sk_checkpoint_find(st, name);
  if (!t) {
    fprintf(stderr, "ggml_moe_layer: tensor %s is missing (per-expert tensors only)\n", name);
    exit(1);
  }
  return t;
}

/* rows x cols of t (from element `base`) into row `row0` of the ggml tensor dst. */
static void put_rows(struct ggml_tensor *dst, int64_t row0, const sk_checkpoint_tensor *t, int64_t rows, int64_t cols) {
  float *f = malloc(sizeof(float) * (size_t)(rows * cols));
  if (!f) die("out of memory");
  for (int64_t i = 0; i < rows * cols; i++) f[i] = sk_checkpoint_float_at(t, i);
  char *out = (char *)dst->data + (size_t)row0 * ggml_row_size(dst->type, cols);
  if (dst->type == GGML_TYPE_F32) memcpy(out, f, sizeof(float) * (size_t)(rows * cols));
  else if (dst->type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(f, (ggml_fp16_t *)out, rows * cols);
  else if (dst->type == GGML_TYPE_BF16) ggml_fp32_to_bf16_row_ref(f, (ggml_bf16_t *)out, rows * cols);
  else ggml_quantize_chunk(dst->type, f, out, 0, rows, cols, NULL);
  free(f);
}

/* The experts' `proj` weights as one [cols, rows, E] tensor (ggml's order). */
static struct ggml_tensor *experts(struct ggml_context *ctx, const sk_checkpoint *st, int layer, const char *proj,
                                   enum ggml_type type, int64_t rows, int64_t cols, int64_t e) {
  struct ggml_tensor *w = ggml_new_tensor_3d(ctx, type, cols, rows, e);
  for (int64_t j = 0; j < e; j++) {
    char suffix[96];
    snprintf(suffix, sizeof suffix, "experts.%lld.%s.weight", (long long)j, proj);
    put_rows(w, j * rows, tensor(st, layer, suffix), rows, cols);
  }
  return w;
}

static struct ggml_tensor *matrix(struct ggml_context *ctx, const sk_checkpoint *st, int layer, const char *suffix,
                                  enum ggml_type type, int64_t rows, int64_t cols) {
  struct ggml_tensor *w = ggml_new_tensor_2d(ctx, type, cols, rows);
  put_rows(w, 0, tensor(st, layer, suffix), rows, cols);
  return w;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 8) die("usage: ggml_moe_layer DIR LAYER f16|bf16|q8_0 THREADS ITERS X.f32 Y.f32");
  const char *dir = argv[1];
  const int layer = atoi(argv[2]), threads = atoi(argv[4]), iters = atoi(argv[5]);
  enum ggml_type type = strcmp(argv[3], "f16") == 0    ? GGML_TYPE_F16
                        : strcmp(argv[3], "bf16") == 0 ? GGML_TYPE_BF16
                        : strcmp(argv[3], "q8_0") == 0 ? GGML_TYPE_Q8_0
                                                       : GGML_TYPE_COUNT;
  if (type == GGML_TYPE_COUNT || threads < 1 || iters < 1) die("bad TYPE, THREADS or ITERS");
  char msg[1024];
  skm_checkpoint *ck;
  sk_checkpoint *st;
  if (skm_checkpoint_open(dir, layer, &ck, msg, sizeof msg) != SK_STATUS_OK) die(msg);
  if (sk_checkpoint_open(dir, &st) != SK_STATUS_OK) die(sk_last_error());
  const skm_moe_layer *m = skm_checkpoint_layer(ck);
  const int64_t h = m->hidden, e = m->experts, k = m->top_k, i = m->inter, si = m->shared * m->inter;

  FILE *f = fopen(argv[6], "rb");
  if (!f) die("cannot open X.f32");
  fseek(f, 0, SEEK_END);
  const int64_t t = ftell(f) / (int64_t)(sizeof(float) * h);
  fseek(f, 0, SEEK_SET);
  if (t < 1) die("X.f32 holds no full row of H floats");

  /* The weights, converted once. */
  size_t wbytes = ggml_row_size(GGML_TYPE_F32, h) * e + ggml_row_size(GGML_TYPE_F32, e) +
                  3 * ggml_row_size(type, h) * (i * e + si) + ggml_row_size(type, i) * h * e + (size_t)(16 << 20);
  struct ggml_context *wctx = ggml_init((struct ggml_init_params){.mem_size = wbytes});
  if (!wctx) die("out of memory for the weights");
  struct ggml_tensor *gate = matrix(wctx, st, layer, "gate.weight", GGML_TYPE_F32, e, h);
  struct ggml_tensor *up = experts(wctx, st, layer, "up_proj", type, i, h, e);
  struct ggml_tensor *gate_e = experts(wctx, st, layer, "gate_proj", type, i, h, e);
  struct ggml_tensor *down = experts(wctx, st, layer, "down_proj", type, h, i, e);
  struct ggml_tensor *bias = NULL, *s_up = NULL, *s_gate = NULL, *s_down = NULL;
  if (m->sigmoid) bias = matrix(wctx, st, layer, "gate.e_score_correction_bias", GGML_TYPE_F32, 1, e);
  if (si) {
    s_up = matrix(wctx, st, layer, "shared_experts.up_proj.weight", type, si, h);
    s_gate = matrix(wctx, st, layer, "shared_experts.gate_proj.weight", type, si, h);
    s_down = matrix(wctx, st, layer, "shared_experts.down_proj.weight", type, h, si);
  }

  /* The graph: llama.cpp's build_moe_ffn for this config. */
  size_t cbytes = (size_t)(256 << 20) + (size_t)(t * k) * (size_t)(3 * i + 2 * h + e) * sizeof(float) * 4;
  struct ggml_context *ctx = ggml_init((struct ggml_init_params){.mem_size = cbytes});
  if (!ctx) die("out of memory for the graph");
  struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, h, t);
  if (fread(x->data, sizeof(float), (size_t)(t * h), f) != (size_t)(t * h)) die("cannot read X.f32");
  fclose(f);
  struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 4096, false);
  struct ggml_tensor *logits = ggml_mul_mat(ctx, gate, x); /* [E, T] */
  struct ggml_tensor *probs = m->sigmoid ? ggml_sigmoid(ctx, logits) : ggml_soft_max(ctx, logits);
  struct ggml_tensor *selection = bias ? ggml_add(ctx, probs, bias) : probs;
  if (m->sigmoid && m->groups > 1) {
    const int64_t per = e / m->groups;
    struct ggml_tensor *groups = ggml_reshape_3d(ctx, selection, per, m->groups, t);
    struct ggml_tensor *top2 = ggml_argsort_top_k(ctx, groups, 2);
    struct ggml_tensor *scores = ggml_get_rows(ctx, ggml_reshape_4d(ctx, groups, 1, per, m->groups, t), top2);
    scores = ggml_sum_rows(ctx, ggml_reshape_3d(ctx, scores, 2, m->groups, t));
    scores = ggml_reshape_2d(ctx, scores, m->groups, t);
    struct ggml_tensor *kept = ggml_argsort_top_k(ctx, scores, m->k_group);
    selection = ggml_get_rows(ctx, groups, kept);
    selection = ggml_set_rows(ctx, ggml_fill(ctx, groups, -INFINITY), selection, kept);
    selection = ggml_reshape_2d(ctx, selection, e, t);
  }
  struct ggml_tensor *selected = ggml_argsort_top_k(ctx, selection, (int)k); /* [k, T] */
  struct ggml_tensor *weights = ggml_get_rows(ctx, ggml_reshape_3d(ctx, probs, 1, e, t), selected);
  if (m->renorm) {
    weights = ggml_reshape_2d(ctx, weights, k, t);
    struct ggml_tensor *sum = ggml_clamp(ctx, ggml_sum_rows(ctx, weights), 6.103515625e-5f, INFINITY);
    weights = ggml_reshape_3d(ctx, ggml_div(ctx, weights, sum), 1, k, t);
  }
  if (m->scaling != 1.0) weights = ggml_scale(ctx, weights, (float)m->scaling);
  ggml_build_forward_expand(gf, weights);
  struct ggml_tensor *cur = ggml_reshape_3d(ctx, x, h, 1, t);
  struct ggml_tensor *u = ggml_mul_mat_id(ctx, up, cur, selected);
  struct ggml_tensor *g = ggml_mul_mat_id(ctx, gate_e, cur, selected);
  struct ggml_tensor *ex = ggml_mul_mat_id(ctx, down, ggml_swiglu_split(ctx, g, u), selected); /* [H, k, T] */
  ex = ggml_mul(ctx, ex, weights);
  ggml_build_forward_expand(gf, ex);
  struct ggml_tensor *views[64] = {0};
  if (k < 1 || k > 64) die("top-k outside 1..64");
  for (int64_t j = 0; j < k; j++) {
    views[j] = ggml_view_2d(ctx, ex, h, t, ex->nb[2], (size_t)j * ex->nb[1]);
    ggml_build_forward_expand(gf, views[j]);
  }
  struct ggml_tensor *y = views[0];
  for (int64_t j = 1; j < k; j++) y = ggml_add(ctx, y, views[j]);
  if (si) {
    struct ggml_tensor *s = ggml_swiglu_split(ctx, ggml_mul_mat(ctx, s_gate, x), ggml_mul_mat(ctx, s_up, x));
    y = ggml_add(ctx, y, ggml_mul_mat(ctx, s_down, s));
  }
  y = ggml_add(ctx, y, x); /* sk's layer adds the residual */
  ggml_build_forward_expand(gf, y);

  double *times = malloc(sizeof(double) * (size_t)iters);
  if (!times) die("out of memory");
  for (int r = -1; r < iters; r++) {
    double t0 = now_us();
    if (ggml_graph_compute_with_ctx(ctx, gf, threads) != GGML_STATUS_SUCCESS) die("ggml_graph_compute failed");
    if (r >= 0) times[r] = now_us() - t0;
  }
  qsort(times, (size_t)iters, sizeof *times, cmp_double);
  printf("ggml %s T=%lld: median %.1f us over %d runs\n", ggml_type_name(type), (long long)t, times[iters / 2],
         iters);
  f = fopen(argv[7], "wb");
  if (!f || fwrite(y->data, sizeof(float), (size_t)(t * h), f) != (size_t)(t * h)) die("cannot write Y.f32");
  fclose(f);
  free(times);
  ggml_free(ctx);
  ggml_free(wctx);
  sk_checkpoint_close(st);
  skm_checkpoint_close(ck);
  return 0;
}

/* One MoE block on its own (sk_moe_block, superkernel_model.h): the
 * builder of a model's MoE layers run from a description of the block.
 * Every router it has (softmax with and without renormalization, rounded
 * weights, DeepSeek-V2's group-limited greedy, DeepSeek-V3's grouped
 * sigmoid with its correction bias) and the shared experts (plain and
 * Qwen2-MoE's gated) against a plain fp64 reference of the maths on fp32
 * weights; the experts fused, one tensor each or transposed give the same
 * bits (their biases too); a token's row the same bits alone, in a batch
 * and in chunks; w8a8 near the reference and the same bits over layouts,
 * biases refused, and w8a8's quantization rule itself; a model's MoE
 * layer described by its family makes its block; bad descriptions,
 * weights and arguments fail naming them. (Against transformers' own blocks: tests/python/test_optimize.py.) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/model_graph.h"
#include "superkernel_model.h"

enum { H = 32, I = 12, S = 24, T = 11, MAX_W = 256 }; /* 2I != H: a layout's shapes tell */

/* ---- weights: fp32, drawn from a fixed seed, by name ---- */

typedef struct weight {
  char name[64];
  sk_model_tensor t;
  float *data;
} weight;

typedef struct store {
  weight w[MAX_W];
  int n;
  int64_t e;               /* experts */
  int fused, transposed;   /* which expert layout the lookup offers */
  int biases;              /* the fused experts' biases */
  const char *hide, *wrong_shape;
} store;

static uint32_t seed = 12345;
static float draw(float scale) {
  seed = seed * 1664525u + 1013904223u;
  return scale * ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f);
}

static float *add(store *s, const char *name, int rank, const int64_t *shape, float scale) {
  weight *w = &s->w[s->n++];
  snprintf(w->name, sizeof w->name, "%s", name);
  w->t = (sk_model_tensor){.dtype = SK_FP32, .rank = rank};
  size_t n = 1;
  for (int i = 0; i < rank; i++) w->t.shape[i] = shape[i], n *= (size_t)shape[i];
  w->data = malloc(n * sizeof *w->data);
  for (size_t i = 0; i < n; i++) w->data[i] = draw(scale);
  w->t.data = w->data;
  return w->data;
}

static weight *find(store *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->w[i].name, name) == 0) return &s->w[i];
  return NULL;
}

/* The block's weights: router, correction bias, the experts one tensor
 * each, then the same numbers fused ([E, 2I, H], [E, H, I]) and
 * transposed ([E, H, 2I], [E, I, H]), biases, shared experts and gate. */
static void make_store(store *s, int64_t e) {
  memset(s, 0, sizeof *s);
  s->e = e, s->fused = 1;
  add(s, "gate.weight", 2, (int64_t[]){e, H}, 0.5f);
  add(s, "gate.e_score_correction_bias", 1, (int64_t[]){e}, 0.2f);
  float *gu = malloc((size_t)(e * 2 * I * H) * sizeof *gu), *dn = malloc((size_t)(e * H * I) * sizeof *dn);
  for (int64_t j = 0; j < e; j++) {
    char name[64];
    static const char *proj[] = {"gate_proj", "up_proj", "down_proj"};
    for (int k = 0; k < 3; k++) {
      snprintf(name, sizeof name, "experts.%lld.%s.weight", (long long)j, proj[k]);
      const float *w = add(s, name, 2, k < 2 ? (int64_t[]){I, H} : (int64_t[]){H, I}, 0.3f);
      if (k < 2) memcpy(gu + (j * 2 * I + k * I) * H, w, (size_t)(I * H) * sizeof *w);
      else memcpy(dn + j * H * I, w, (size_t)(H * I) * sizeof *w);
    }
  }
  memcpy(add(s, "experts.gate_up_proj", 3, (int64_t[]){e, 2 * I, H}, 0), gu, (size_t)(e * 2 * I * H) * sizeof *gu);
  memcpy(add(s, "experts.down_proj", 3, (int64_t[]){e, H, I}, 0), dn, (size_t)(e * H * I) * sizeof *dn);
  float *gut = add(s, "T.experts.gate_up_proj", 3, (int64_t[]){e, H, 2 * I}, 0);
  float *dnt = add(s, "T.experts.down_proj", 3, (int64_t[]){e, I, H}, 0);
  for (int64_t j = 0; j < e; j++) {
    for (int64_t n = 0; n < 2 * I; n++)
      for (int64_t k = 0; k < H; k++) gut[(j * H + k) * 2 * I + n] = gu[(j * 2 * I + n) * H + k];
    for (int64_t n = 0; n < H; n++)
      for (int64_t k = 0; k < I; k++) dnt[(j * I + k) * H + n] = dn[(j * H + n) * I + k];
  }
  free(gu), free(dn);
  add(s, "experts.gate_up_proj_bias", 2, (int64_t[]){e, 2 * I}, 0.2f);
  add(s, "experts.down_proj_bias", 2, (int64_t[]){e, H}, 0.2f);
  add(s, "shared_experts.gate_proj.weight", 2, (int64_t[]){S, H}, 0.3f);
  add(s, "shared_experts.up_proj.weight", 2, (int64_t[]){S, H}, 0.3f);
  add(s, "shared_experts.down_proj.weight", 2, (int64_t[]){H, S}, 0.3f);
  add(s, "shared_expert_gate.weight", 2, (int64_t[]){1, H}, 0.5f);
}

static void free_store(store *s) {
  for (int i = 0; i < s->n; i++) free(s->w[i].data);
  s->n = 0;
}

static sk_status lookup(void *user, const char *name, sk_model_tensor *out) {
  store *s = user;
  if (s->hide && strcmp(name, s->hide) == 0) return SK_STATUS_NOT_FOUND;
  const int fused = strncmp(name, "experts.gate_up_proj", 20) == 0 || strncmp(name, "experts.down_proj", 17) == 0;
  const int bias = fused && strstr(name, "_bias") != NULL;
  if (bias ? !s->biases : fused && !s->fused) return SK_STATUS_NOT_FOUND;
  if (strncmp(name, "experts.", 8) == 0 && name[8] >= '0' && name[8] <= '9' && s->fused) return SK_STATUS_NOT_FOUND;
  char key[80];
  snprintf(key, sizeof key, "%s%s", fused && !bias && s->transposed ? "T." : "", name);
  const weight *w = find(s, key);
  if (!w) return SK_STATUS_NOT_FOUND;
  *out = w->t;
  if (s->wrong_shape && strcmp(name, s->wrong_shape) == 0) out->shape[0] += 1;
  return SK_STATUS_OK;
}

/* ---- the reference: the block's maths in fp64 ---- */

typedef struct desc {
  int64_t e, k, groups, topk_group;
  int sigmoid, renorm, shared, shared_gate;
  double scaling;
} desc;

static double silu(double a) { return a / (1.0 + exp(-a)); }

static double dot(const float *a, const float *b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

/* y [H] of one row x [H], from the per-expert tensors (biases: s->biases). */
static void reference(store *s, const desc *d, const float *x, double *y) {
  const int64_t e = d->e, g = e / d->groups;
  double norm[64], v[64];
  const float *gate = find(s, "gate.weight")->data, *cb = find(s, "gate.e_score_correction_bias")->data;
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < e; j++) norm[j] = dot(gate + j * H, x, H), mx = fmax(mx, norm[j]);
  for (int64_t j = 0; j < e; j++) {
    if (d->sigmoid) norm[j] = 1.0 / (1.0 + exp(-norm[j]));
    else norm[j] = exp(norm[j] - mx), sum += norm[j];
  }
  for (int64_t j = 0; j < e; j++) {
    if (!d->sigmoid) norm[j] /= sum;
    v[j] = norm[j] + (d->sigmoid ? cb[j] : 0.0);
  }
  int kept[64] = {0};
  for (int64_t grp = 0; grp < d->groups; grp++) kept[grp] = d->groups == 1;
  for (int64_t pick = 0; d->groups > 1 && pick < d->topk_group; pick++) { /* the best groups */
    int64_t best = -1;
    double best_score = -INFINITY;
    for (int64_t grp = 0; grp < d->groups; grp++) {
      if (kept[grp]) continue;
      double a = -INFINITY, b = -INFINITY; /* the group's best two */
      for (int64_t j = grp * g; j < (grp + 1) * g; j++)
        if (v[j] > a) b = a, a = v[j];
        else if (v[j] > b) b = v[j];
      const double score = d->sigmoid ? a + b : a;
      if (best < 0 || score > best_score) best = grp, best_score = score;
    }
    kept[best] = 1;
  }
  int64_t idx[8];
  double w[8], wsum = 0;
  int taken[64] = {0};
  for (int64_t p = 0; p < d->k; p++) {
    int64_t best = -1;
    for (int64_t j = 0; j < e; j++)
      if (kept[j / g] && !taken[j] && (best < 0 || v[j] > v[best])) best = j;
    taken[best] = 1, idx[p] = best, w[p] = norm[best], wsum += norm[best];
  }
  for (int64_t p = 0; p < d->k; p++) w[p] = (d->renorm ? w[p] / wsum : w[p]) * d->scaling;
  for (int64_t n = 0; n < H; n++) y[n] = 0;
  const float *bgu = find(s, "experts.gate_up_proj_bias")->data, *bdn = find(s, "experts.down_proj_bias")->data;
  for (int64_t p = 0; p < d->k; p++) {
    char name[64];
    double a[I];
    const int64_t j = idx[p];
    for (int64_t c = 0; c < I; c++) {
      snprintf(name, sizeof name, "experts.%lld.gate_proj.weight", (long long)j);
      double gt = dot(find(s, name)->data + c * H, x, H) + (s->biases ? bgu[j * 2 * I + c] : 0);
      snprintf(name, sizeof name, "experts.%lld.up_proj.weight", (long long)j);
      double up = dot(find(s, name)->data + c * H, x, H) + (s->biases ? bgu[j * 2 * I + I + c] : 0);
      a[c] = silu(gt) * up;
    }
    snprintf(name, sizeof name, "experts.%lld.down_proj.weight", (long long)j);
    const float *dw = find(s, name)->data;
    for (int64_t n = 0; n < H; n++) {
      double o = s->biases ? bdn[j * H + n] : 0;
      for (int64_t c = 0; c < I; c++) o += dw[n * I + c] * a[c];
      y[n] += w[p] * o;
    }
  }
  if (!d->shared) return;
  const float *sg = find(s, "shared_experts.gate_proj.weight")->data, *su = find(s, "shared_experts.up_proj.weight")->data;
  const float *sd = find(s, "shared_experts.down_proj.weight")->data;
  double a[S], f = 1.0;
  for (int64_t c = 0; c < S; c++) a[c] = silu(dot(sg + c * H, x, H)) * dot(su + c * H, x, H);
  if (d->shared_gate) f = 1.0 / (1.0 + exp(-dot(find(s, "shared_expert_gate.weight")->data, x, H)));
  for (int64_t n = 0; n < H; n++) {
    double o = 0;
    for (int64_t c = 0; c < S; c++) o += sd[n * S + c] * a[c];
    y[n] += f * o;
  }
}

/* ---- the block ---- */

static void description(const desc *d, const char *dtype, int transposed, char *json, size_t size) {
  snprintf(json, size,
           "{\"dtype\": \"%s\", \"hidden_size\": %d, \"num_experts\": %lld, \"num_experts_per_tok\": %lld, "
           "\"moe_intermediate_size\": %d, \"router\": \"%s\", \"norm_topk_prob\": %s, \"n_group\": %lld, "
           "\"topk_group\": %lld, \"routed_scaling_factor\": %.17g, \"shared_intermediate_size\": %d, "
           "\"shared_gate\": %s, \"router_logits_fp32\": true, \"experts_transposed\": %s}",
           dtype, H, (long long)d->e, (long long)d->k, I, d->sigmoid ? "sigmoid" : "softmax",
           d->renorm ? "true" : "false", (long long)d->groups, (long long)d->topk_group, d->scaling,
           d->shared ? S : 0, d->shared_gate ? "true" : "false", transposed ? "true" : "false");
}

static sk_moe_block *make(const char *json, store *s, int64_t max_tokens, const char *quantize) {
  sk_model_config cfg = {.struct_size = sizeof cfg, .config_json = json, .weight = lookup, .weight_user = s,
                         .max_tokens = max_tokens, .quantize = quantize};
  sk_moe_block *b = NULL;
  CHECK_OK(sk_moe_block_create(&cfg, &b));
  return b;
}

static float x[T * H];

static void run(sk_moe_block *b, float *y, int64_t tokens) {
  if (b) CHECK_OK(sk_moe_block_run(b, NULL, x, y, tokens));
}

static int same_bits(const float *a, const float *b, int64_t n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* d's block against the reference, then the other layouts (per expert,
 * transposed) and runs (one token at a time, chunks of 4) the same bits. */
static void check_block(const char *what, const desc *d, int biases) {
  store s;
  make_store(&s, d->e);
  s.biases = biases;
  for (int i = 0; i < T * H; i++) x[i] = draw(1.0f);
  char json[1024];
  description(d, "float32", 0, json, sizeof json);
  static float y[T * H], other[T * H];
  sk_moe_block *b = make(json, &s, 0, NULL);
  run(b, y, T);
  double err = 0, big = 0, want[H];
  for (int t = 0; t < T; t++) {
    reference(&s, d, x + t * H, want);
    for (int n = 0; n < H; n++) err = fmax(err, fabs(y[t * H + n] - want[n])), big = fmax(big, fabs(want[n]));
  }
  CHECK_MSG(b && big > 0.1 && err <= 2e-5 * big, "%s: max |block - reference| %g, max |reference| %g", what, err, big);
  for (int t = 0; b && t < T; t++) CHECK_OK(sk_moe_block_run(b, NULL, x + t * H, other + t * H, 1));
  CHECK_MSG(same_bits(y, other, T * H), "%s: a token alone", what);
  sk_moe_block_destroy(b);
  b = make(json, &s, 4, NULL); /* runs of at most 4 tokens: 11 in three chunks */
  run(b, other, T);
  CHECK_MSG(same_bits(y, other, T * H), "%s: in chunks of 4", what);
  sk_moe_block_destroy(b);
  s.transposed = 1;
  char transposed[1024];
  description(d, "float32", 1, transposed, sizeof transposed);
  b = make(transposed, &s, 0, NULL);
  run(b, other, T);
  CHECK_MSG(same_bits(y, other, T * H), "%s: transposed experts", what);
  sk_moe_block_destroy(b);
  if (!biases) { /* (the one-tensor-each layout has no biases) */
    s.fused = 0, s.transposed = 0;
    b = make(json, &s, 0, NULL);
    run(b, other, T);
    CHECK_MSG(same_bits(y, other, T * H), "%s: one tensor per expert", what);
    sk_moe_block_destroy(b);
  }
  free_store(&s);
}

static void test_softmax(void) {
  check_block("softmax, renormalized, biases", &(desc){.e = 8, .k = 2, .groups = 1, .topk_group = 1, .renorm = 1,
                                                       .scaling = 1.0}, 1);
  check_block("softmax, gated shared expert", &(desc){.e = 8, .k = 3, .groups = 1, .topk_group = 1, .shared = 1,
                                                     .shared_gate = 1, .scaling = 1.0}, 0);
}

static void test_group_limited_softmax(void) { /* DeepSeek-V2's group_limited_greedy */
  check_block("softmax, 4 groups keep 2", &(desc){.e = 16, .k = 3, .groups = 4, .topk_group = 2, .scaling = 1.5,
                                                  .shared = 1}, 0);
}

static void test_sigmoid(void) { /* DeepSeek-V3's */
  check_block("sigmoid, 4 groups keep 2", &(desc){.e = 16, .k = 3, .groups = 4, .topk_group = 2, .sigmoid = 1,
                                                  .renorm = 1, .scaling = 2.5, .shared = 1}, 0);
  /* every group kept: no group step, so groups of 2 experts (which the grouped sigmoid refuses) are fine;
   * optimize's per-block path passes transformers' n_group / topk_group as they are */
  check_block("sigmoid, 4 groups keep 4", &(desc){.e = 8, .k = 2, .groups = 4, .topk_group = 4, .sigmoid = 1,
                                                  .renorm = 1, .scaling = 1.0}, 0);
}

/* w8a8 (routed and shared experts int8): near the reference, not equal to
 * the float block; the same bits over the experts' layouts; biases refused. */
static void test_w8a8(void) {
  const desc d = {.e = 8, .k = 2, .groups = 1, .topk_group = 1, .renorm = 1, .scaling = 1.0, .shared = 1};
  store s;
  make_store(&s, d.e);
  for (int i = 0; i < T * H; i++) x[i] = draw(1.0f);
  char json[1024];
  description(&d, "float32", 0, json, sizeof json);
  static float y[T * H], q[T * H], other[T * H];
  sk_moe_block *b = make(json, &s, 0, NULL);
  run(b, y, T);
  sk_moe_block_destroy(b);
  b = make(json, &s, 0, "w8a8");
  run(b, q, T);
  CHECK(b && strstr(sk_moe_block_about(b), "w8a8") && strstr(sk_moe_block_about(b), "8 experts"));
  sk_moe_block_destroy(b);
  double err = 0, big = 0;
  for (int i = 0; i < T * H; i++) err = fmax(err, fabs(q[i] - y[i])), big = fmax(big, fabs(y[i]));
  CHECK_MSG(err > 0 && err < 0.05 * big, "w8a8 against fp32: max |diff| %g, max |y| %g", err, big);
  s.transposed = 1;
  char transposed[1024];
  description(&d, "float32", 1, transposed, sizeof transposed);
  b = make(transposed, &s, 0, "w8a8");
  run(b, other, T);
  CHECK_MSG(same_bits(q, other, T * H), "w8a8: transposed experts");
  sk_moe_block_destroy(b);
  s.fused = 0;
  b = make(json, &s, 0, "w8a8");
  run(b, other, T);
  CHECK_MSG(same_bits(q, other, T * H), "w8a8: one tensor per expert");
  sk_moe_block_destroy(b);
  s.fused = 1, s.transposed = 0, s.biases = 1;
  sk_model_config cfg = {.config_json = json, .weight = lookup, .weight_user = &s, .quantize = "w8a8"};
  CHECK_FAILS(sk_moe_block_create(&cfg, &b), SK_STATUS_UNSUPPORTED, "experts.gate_up_proj_bias", "w8a8", "biases");
  CHECK(b == NULL);
  free_store(&s);
}

/* The rule (model_graph.h): s = max |w| / 127 per output channel (1 for
 * an all-zero one), q = rint(w / s) half to even, |q| <= 127; a channel's
 * largest weight gives +-127; the same q from a transposed layout. */
static void test_w8a8_rule(void) {
  enum { N = 11, K = 37 }; /* N past one group of SK__W8A8_ROWS channels */
  static float w[N * K], wt[K * N], rows[SK__W8A8_ROWS * K], scale[N], scale_t[N];
  static int8_t q[K * N], q_t[K * N];
  for (int i = 0; i < N * K; i++) w[i] = draw(3.0f);
  for (int c = 0; c < K; c++) w[3 * K + c] = 0.0f; /* an all-zero channel */
  /* channel 5: s = 127 * 2^-4 / 127 = 2^-4 exactly, and values on the half steps */
  static const float halves[] = {127.0f, 2.5f, 3.5f, -2.5f, -0.5f, 0.5f, 1.5f};
  static const int8_t rounded[] = {127, 2, 4, -2, 0, 0, 2};
  for (int c = 0; c < K; c++) w[5 * K + c] = c < 7 ? halves[c] * 0.0625f : 0.0f;
  for (int i = 0; i < N; i++)
    for (int c = 0; c < K; c++) wt[c * N + i] = w[i * K + c];
  sk__w8a8_quantize_channels(w, SK_FP32, N, K, K, 1, q, N, scale, rows);
  sk__w8a8_quantize_channels(wt, SK_FP32, N, K, 1, N, q_t, N, scale_t, rows);
  CHECK(memcmp(q, q_t, sizeof q) == 0 && memcmp(scale, scale_t, sizeof scale) == 0);
  CHECK(scale[3] == 1.0f && scale[5] == 0.0625f);
  for (int c = 0; c < 7; c++) CHECK_MSG(q[c * N + 5] == rounded[c], "%g: q %d", halves[c], q[c * N + 5]);
  for (int i = 0; i < N; i++) {
    int top = 0;
    float amax = 0.0f;
    for (int c = 0; c < K; c++) amax = fmaxf(amax, fabsf(w[i * K + c]));
    CHECK_MSG(i == 3 || scale[i] == amax / 127.0f, "channel %d: scale %g, amax %g", i, scale[i], amax);
    for (int c = 0; c < K; c++) {
      const int v = q[c * N + i];
      top = abs(v) > top ? abs(v) : top;
      CHECK_MSG(fabs(v * (double)scale[i] - w[i * K + c]) <= scale[i] * 0.5000001, "channel %d, %d: q %d", i, c, v);
    }
    CHECK_MSG(top == (i == 3 ? 0 : 127), "channel %d: max |q| %d", i, top);
  }
}

/* A model's MoE layer described by its family (sk_model_moe_block_description):
 * the description makes the block of that layer; dense layers, layers past
 * the model and dense models fail naming them. Attention dims the attention
 * ops would refuse (head_dim 10, rope dims 8) do not matter here. */
static void test_description_of_a_model(void) {
  static const char qwen[] =
      "{\"model_type\": \"qwen3_moe\", \"vocab_size\": 64, \"hidden_size\": 32, \"num_hidden_layers\": 3,"
      " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 10, \"intermediate_size\": 48,"
      " \"moe_intermediate_size\": 12, \"num_experts\": 8, \"num_experts_per_tok\": 2, \"norm_topk_prob\": true,"
      " \"mlp_only_layers\": [0], \"rms_norm_eps\": 1e-6, \"hidden_act\": \"silu\", \"torch_dtype\": \"float32\"}";
  char *json = NULL;
  int64_t layer = -7;
  CHECK_OK(sk_model_moe_block_description(qwen, -1, &json, &layer));
  CHECK_MSG(layer == 1 && json && strstr(json, "\"num_experts\":8") && strstr(json, "\"dtype\":\"float32\"") &&
                strstr(json, "\"router\":\"softmax\"") && strstr(json, "\"router_weights_rounded\":true") &&
                strstr(json, "\"norm_topk_prob\":true") && strstr(json, "\"shared_intermediate_size\":0"),
            "layer %lld: %s", (long long)layer, json ? json : "(none)");
  store s;
  make_store(&s, 8);
  for (int i = 0; i < T * H; i++) x[i] = draw(1.0f);
  static float y[T * H];
  sk_moe_block *b = json ? make(json, &s, 0, NULL) : NULL;
  run(b, y, T);
  const desc d = {.e = 8, .k = 2, .groups = 1, .topk_group = 1, .renorm = 1, .scaling = 1.0};
  double err = 0, big = 0, want[H];
  for (int t = 0; t < T; t++) {
    reference(&s, &d, x + t * H, want);
    for (int n = 0; n < H; n++) err = fmax(err, fabs(y[t * H + n] - want[n])), big = fmax(big, fabs(want[n]));
  }
  CHECK_MSG(b && err <= 2e-5 * big, "max |block - reference| %g of %g", err, big);
  sk_moe_block_destroy(b);
  free_store(&s);
  sk_free(json);
  json = NULL;
  static const char deepseek[] =
      "{\"model_type\": \"deepseek_v3\", \"vocab_size\": 64, \"hidden_size\": 32, \"num_hidden_layers\": 2,"
      " \"num_attention_heads\": 4, \"intermediate_size\": 48, \"moe_intermediate_size\": 12, \"n_routed_experts\": 16,"
      " \"num_experts_per_tok\": 3, \"n_shared_experts\": 2, \"first_k_dense_replace\": 1, \"n_group\": 4,"
      " \"topk_group\": 2, \"routed_scaling_factor\": 2.5, \"norm_topk_prob\": true, \"topk_method\": \"noaux_tc\","
      " \"scoring_func\": \"sigmoid\", \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8,"
      " \"v_head_dim\": 8, \"rms_norm_eps\": 1e-6, \"hidden_act\": \"silu\"}";
  CHECK_OK(sk_model_moe_block_description(deepseek, 1, &json, NULL));
  CHECK_MSG(json && strstr(json, "\"router\":\"sigmoid\"") && strstr(json, "\"n_group\":4") &&
                strstr(json, "\"topk_group\":2") && strstr(json, "\"routed_scaling_factor\":2.5") &&
                strstr(json, "\"shared_intermediate_size\":24") && strstr(json, "\"router_logits_fp32\":true") &&
                strstr(json, "\"shared_prefix\":\"shared_experts\"") && !strstr(json, "dtype"),
            "%s", json ? json : "(none)");
  sk_free(json);
  CHECK_FAILS(sk_model_moe_block_description(qwen, 0, &json, NULL), SK_STATUS_INVALID_ARGUMENT,
              "layer 0 is not a MoE layer");
  CHECK_FAILS(sk_model_moe_block_description(qwen, 3, &json, NULL), SK_STATUS_INVALID_ARGUMENT, "layer 3",
              "the model has 3 layers");
  CHECK_FAILS(sk_model_moe_block_description("{\"model_type\": \"gpt2\"}", -1, &json, NULL), SK_STATUS_UNSUPPORTED,
              "gpt2");
  CHECK_FAILS(sk_model_moe_block_description(qwen, -1, NULL, NULL), SK_STATUS_INVALID_ARGUMENT, "json_out");
  CHECK(json == NULL);
}

static sk_status create(const char *json, store *s) {
  sk_model_config cfg = {.config_json = json, .weight = lookup, .weight_user = s};
  sk_moe_block *b = NULL;
  sk_status st = sk_moe_block_create(&cfg, &b);
  sk_moe_block_destroy(b);
  return st;
}

static void test_errors(void) {
  store s;
  make_store(&s, 8);
  const desc d = {.e = 8, .k = 2, .groups = 1, .topk_group = 1, .renorm = 1, .scaling = 1.0, .shared = 1};
  char json[1024], bad[1200];
  description(&d, "float32", 0, json, sizeof json);
  CHECK_FAILS(create("{\"dtype\": ", &s), SK_STATUS_INVALID_ARGUMENT, "not valid JSON");
  CHECK_FAILS(create("[1]", &s), SK_STATUS_INVALID_ARGUMENT, "expected an object");
  CHECK_FAILS(create("{\"hidden_size\": 32}", &s), SK_STATUS_INVALID_ARGUMENT, "dtype", "missing");
  CHECK_FAILS(create("{\"dtype\": \"float64\"}", &s), SK_STATUS_INVALID_ARGUMENT, "dtype = \"float64\"", "bfloat16");
  CHECK_FAILS(create("{\"dtype\": \"float32\", \"hidden_size\": 32}", &s), SK_STATUS_INVALID_ARGUMENT, "num_experts",
              "missing");
  snprintf(bad, sizeof bad, "%s", json);
  memcpy(strstr(bad, "\"softmax\""), "\"relu\"   ", 9);
  CHECK_FAILS(create(bad, &s), SK_STATUS_UNSUPPORTED, "router", "relu", "sigmoid");
  snprintf(bad, sizeof bad, "{\"dtype\": \"float32\", \"hidden_size\": 32, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"moe_intermediate_size\": 16, \"n_group\": 3}");
  CHECK_FAILS(create(bad, &s), SK_STATUS_INVALID_ARGUMENT, "n_group = 3", "divisor");
  snprintf(bad, sizeof bad, "{\"dtype\": \"float32\", \"hidden_size\": 32, \"num_experts\": 8, \"num_experts_per_tok\": 9, "
           "\"moe_intermediate_size\": 16}");
  CHECK_FAILS(create(bad, &s), SK_STATUS_INVALID_ARGUMENT, "num_experts_per_tok = 9");
  snprintf(bad, sizeof bad, "{\"dtype\": \"float32\", \"hidden_size\": 32, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"moe_intermediate_size\": 16, \"router\": \"sigmoid\"}");
  CHECK_FAILS(create(bad, &s), SK_STATUS_UNSUPPORTED, "sigmoid", "norm_topk_prob");
  s.hide = "gate.weight";
  CHECK_FAILS(create(json, &s), SK_STATUS_NOT_FOUND, "sk_moe_block_create", "weight gate.weight", "missing");
  s.hide = "shared_experts.down_proj.weight";
  CHECK_FAILS(create(json, &s), SK_STATUS_NOT_FOUND, "shared_experts.down_proj.weight", "missing");
  s.hide = NULL;
  s.wrong_shape = "experts.down_proj";
  CHECK_FAILS(create(json, &s), SK_STATUS_INVALID_SHAPE, "experts.down_proj", "[8, 32, 12]", "[9, 32, 12]");
  s.wrong_shape = NULL;
  description(&d, "bfloat16", 0, bad, sizeof bad); /* fp32 weights for a bf16 block (the fp32 router takes any) */
  CHECK_FAILS(create(bad, &s), SK_STATUS_INVALID_SHAPE, "shared_experts.gate_proj.weight", "bf16", "fp32");

  sk_moe_block *b = NULL;
  CHECK_FAILS(sk_moe_block_create(NULL, &b), SK_STATUS_INVALID_ARGUMENT, "cfg");
  sk_model_config cfg = {.config_json = json, .weight = lookup, .weight_user = &s, .quantize = "int4"};
  CHECK_FAILS(sk_moe_block_create(&cfg, &b), SK_STATUS_INVALID_ARGUMENT, "quantize \"int4\"", "\"w8a8\"");
  cfg.quantize = NULL, cfg.struct_size = 3;
  CHECK_FAILS(sk_moe_block_create(&cfg, &b), SK_STATUS_INVALID_ARGUMENT, "struct_size 3");
  cfg.struct_size = 0, cfg.max_tokens = -1;
  CHECK_FAILS(sk_moe_block_create(&cfg, &b), SK_STATUS_INVALID_ARGUMENT, "max_tokens -1");
  cfg.max_tokens = 0, cfg.weight = NULL;
  CHECK_FAILS(sk_moe_block_create(&cfg, &b), SK_STATUS_INVALID_ARGUMENT, "cfg->weight");
  CHECK(b == NULL);
  b = make(json, &s, 0, NULL);
  float y[H];
  CHECK_FAILS(sk_moe_block_run(b, NULL, NULL, y, 1), SK_STATUS_INVALID_ARGUMENT, "x is NULL");
  CHECK_FAILS(sk_moe_block_run(b, NULL, x, y, -1), SK_STATUS_INVALID_ARGUMENT, "tokens < 0");
  CHECK_FAILS(sk_moe_block_run(NULL, NULL, x, y, 1), SK_STATUS_INVALID_ARGUMENT, "block is NULL");
  CHECK_OK(sk_moe_block_run(b, NULL, NULL, NULL, 0)); /* no tokens: nothing to do */
  /* a run's x at the last run's y (torch hands freed memory out again): nothing stays bound between runs */
  static float chain[3][T * H];
  memcpy(chain[0], x, sizeof chain[0]);
  CHECK_OK(sk_moe_block_run(b, NULL, chain[0], chain[1], T));
  CHECK_OK(sk_moe_block_run(b, NULL, chain[1], chain[2], T));
  CHECK_OK(sk_moe_block_run(b, NULL, chain[2], chain[0], T));
  sk_moe_block_destroy(b);
  sk_moe_block_destroy(NULL);
  free_store(&s);
}

int main(void) {
  static const harness_case cases[] = {TEST_CASE(test_softmax), TEST_CASE(test_group_limited_softmax),
                                       TEST_CASE(test_sigmoid), TEST_CASE(test_w8a8), TEST_CASE(test_w8a8_rule),
                                       TEST_CASE(test_description_of_a_model), TEST_CASE(test_errors)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

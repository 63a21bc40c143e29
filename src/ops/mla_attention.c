/* mla_attention(q_nope, q_pe, latent_cache, positions, kv_b_weight; scale)
 * -> o: DeepSeek-V2/V3 multi-head latent attention in its absorbed form
 * (docs/ops.md): every head attends the one compressed cache row per key,
 * [c_kv (R), k_pe (P)], and kv_b_proj's weight is folded into the query and
 * the output instead of expanding the keys and values.
 *
 *   q_nope [T, H, N], q_pe [T, H, P] (rotated), latent_cache [S, 1, R + P]
 *   or [S, R + P] (kv_cache_write's output), kv_b_weight [H (N + V), R]
 *   (transformers' kv_b_proj.weight: per head N rows of W_UK, then V rows
 *   of W_UV), one dtype (fp32, fp16, bf16); positions int32 / int64 [T];
 *   o [T, H, V] of q's dtype.
 *
 * Token t, head h, keys j = 0 .. pos, pos = positions[t]; in fp32:
 *
 *   q_lat[r] = fmaf chain over i = 0 .. N-1 of q_nope[i] * W_UK[h][i][r]
 *   s_j      = dot([q_lat, q_pe], latent_j) * scale   (attention's dot:
 *              16 lanes over the R + P values, folded pairwise)
 *   m, p_j = sk__expf(s_j - m), l (16 lanes over j)    as attention
 *   c[r]     = (fmaf chain over j in increasing order of p_j * c_kv_j[r]) / l
 *   o[e]     = dot(W_UV[h][e], c)                      (the same dot over R)
 *
 * rounded to q's dtype, a NaN stored as the canonical quiet NaN. Every sum
 * over keys runs from key 0 in increasing j, a function of the position
 * alone: a token's output is bitwise the same prefilled in one pass, in
 * chunks or decoded token by token, on any executor, team and ISA.
 *
 * The reference computes it element by element (the oracle); the kernel
 * runs the same operations with kernels/attention's loops (dots,
 * accumulate, the softmax's; each bitwise its scalar definition), the SIMD
 * converters and exp, in work items and steps it shares with attention
 * (attention_common.h: one group of all H heads, over one latent row per
 * key). */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/attention/attention.h"
#include "kernels/convert/convert.h"
#include "ops/attention_common.h"
#include "ops/index_input.h"
#include "ops/op_util.h"

enum { SLOT_QN, SLOT_QPE, SLOT_CACHE, SLOT_POSITIONS, SLOT_W };

#define MAX_RANK 4096 /* kv_lora_rank: a multiple of 16 up to this (DeepSeek: 512) */
#define MAX_ROPE 512  /* qk_rope_head_dim: a multiple of 16 up to this (64) */
#define MAX_HEAD 1024 /* qk_nope_head_dim, v_head_dim: 1 up to this (128) */

typedef struct mla_params {
  int64_t t, h, s;       /* planned tokens, heads, cache rows */
  int64_t nope, rope, v; /* head dims */
  int64_t rank, d;       /* kv_lora_rank; d = rank + rope, a cache row */
  sk__attn_heads heads;  /* one group of the h heads, in work items */
  float scale;
} mla_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("q_nope", "[T, H, N] fp32, fp16 or bf16: the queries' parts without position", .dtypes = SK__FLOATS,
           SK__RANK(3, 3)),
    SK__IN("q_pe", "[T, H, P], q_nope's dtype: the rotated parts (P a multiple of 16)", SK__SAME_DTYPE_AS(SLOT_QN),
           SK__RANK(3, 3)),
    SK__IN("latent_cache", "[S, 1, R + P] or [S, R + P], q_nope's dtype: per key c_kv (after kv_a_layernorm) then "
           "the rotated k_pe (kv_cache_write's output)", SK__SAME_DTYPE_AS(SLOT_QN), SK__RANK(2, 3)),
    SK__IN("positions", "int32 or int64 [T]: each query's position, in [0, S); it attends rows up to it",
           .dtypes = SK_DTYPE_BIT(SK_INT32) | SK_DTYPE_BIT(SK_INT64), SK__RANK(1, 1)),
    SK__IN("kv_b_weight", "[H * (N + V), R], q_nope's dtype: kv_b_proj.weight (per head N rows W_UK, V rows W_UV; "
           "R a multiple of 16)", SK__SAME_DTYPE_AS(SLOT_QN), SK__RANK(2, 2)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_FLOAT("scale", 0.0, "scores' factor (transformers' scaling, YaRN's mscale^2 included); 0: 1 / sqrt(N + P)"),
};
static const sk_op_output_info outputs[] = {SK__OUT("o", "[T, H, V], q_nope's dtype: o_proj's input per head")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *qn, *qpe, *c, *pos, *w;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_QN, &qn));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_QPE, &qpe));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_CACHE, &c));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_POSITIONS, &pos));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_W, &w));
  char s1[SK_SHAPE_STR_MAX];
  const int64_t t = qn->shape[0], h = qn->shape[1], nope = qn->shape[2], rope = qpe->shape[2], rank = w->shape[1];
  if (h < 1 || nope < 1 || nope > MAX_HEAD)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input q_nope: expected [T, H, N] with H >= 1 and 1 <= N <= %d, got %s",
                    op, MAX_HEAD, sk__shape_str(qn->rank, qn->shape, s1, sizeof s1));
  if (qpe->shape[0] != t || qpe->shape[1] != h || rope < 16 || rope > MAX_ROPE || rope % 16 != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input q_pe: expected [%lld, %lld, P] (q_nope's T, H) with P a "
                    "multiple of 16 in [16, %d], got %s", op, (long long)t, (long long)h, MAX_ROPE,
                    sk__shape_str(qpe->rank, qpe->shape, s1, sizeof s1));
  if (rank < 16 || rank > MAX_RANK || rank % 16 != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input kv_b_weight: kv_lora_rank R = %lld (its columns): expected a "
                    "multiple of 16 in [16, %d]", op, (long long)rank, MAX_RANK);
  const int64_t per_head = w->shape[0] / h, v = per_head - nope;
  if (w->shape[0] % h != 0 || v < 1 || v > MAX_HEAD)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input kv_b_weight: expected [H * (N + V), R] = [%lld * (%lld + V), "
                    "%lld] with 1 <= V <= %d, got %s", op, (long long)h, (long long)nope, (long long)rank, MAX_HEAD,
                    sk__shape_str(w->rank, w->shape, s1, sizeof s1));
  if (c->shape[c->rank - 1] != rank + rope || (c->rank == 3 && c->shape[1] != 1))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input latent_cache: expected [S, 1, %lld] or [S, %lld] (R + P: "
                    "kv_b_weight's R = %lld, q_pe's P = %lld), got %s", op, (long long)(rank + rope),
                    (long long)(rank + rope), (long long)rank, (long long)rope,
                    sk__shape_str(c->rank, c->shape, s1, sizeof s1));
  if (pos->shape[0] != t)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input positions: expected [%lld] (q_nope's T), got %s", op,
                    (long long)t, sk__shape_str(pos->rank, pos->shape, s1, sizeof s1));
  double scale;
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "scale", &scale));
  if (!isfinite((float)scale))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute scale: expected a finite value, got %g", op, scale);
  mla_params *p = sk__ctx_params(ctx);
  p->t = t, p->h = h, p->s = c->shape[0];
  p->nope = nope, p->rope = rope, p->v = v, p->rank = rank, p->d = rank + rope;
  p->heads = sk__attn_heads_of(1, h);
  p->scale = scale != 0 ? (float)scale : (float)(1.0 / sqrt((double)(nope + rope)));
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, qn->dtype, 3, (int64_t[]){t, h, v});
  return SK_STATUS_OK;
}

/* ---- what the reference and the kernel share ---- */

static int64_t position(const sk__node_io *io, int64_t t) {
  return sk__index_at(&io->in[SLOT_POSITIONS].tensors[0], t);
}

/* Whether every live position is a cache row; else the run error names the
 * first that is not (the output is then unspecified). */
static bool positions_valid(const sk__node_io *io, int64_t n_tokens) {
  const mla_params *p = io->params;
  return sk__indices_in_range(io, &io->in[SLOT_POSITIONS].tensors[0], n_tokens, p->s,
                              "%s (mla_attention): input positions[%lld] = %lld: expected a cache row in [0, %lld) "
                              "(the latent cache's S)");
}

static inline float canonical(float o) { return o == o ? o : sk__canonical_nan(); }

/* ---- the reference: the definition at the top, element by element ---- */

#define LOAD(tensor, i) sk__load_f32((tensor)->data, (tensor)->dtype, (size_t)(i))

/* One (t, h): qcat [d], pj [pos + 1] and c [rank] are scratch. */
static void ref_head(const sk__node_io *io, int64_t t, int64_t h, float *qcat, float *pj, float *c) {
  const mla_params *p = io->params;
  const sk__tensor *qn = &io->in[SLOT_QN].tensors[0], *qpe = &io->in[SLOT_QPE].tensors[0];
  const sk__tensor *cache = &io->in[SLOT_CACHE].tensors[0], *w = &io->in[SLOT_W].tensors[0];
  const int64_t pos = position(io, t), n = pos + 1, uk = h * (p->nope + p->v) * p->rank, uv = uk + p->nope * p->rank;
  for (int64_t r = 0; r < p->rank; r++) {
    float acc = 0.0f;
    for (int64_t i = 0; i < p->nope; i++)
      acc = fmaf(LOAD(qn, (t * p->h + h) * p->nope + i), LOAD(w, uk + i * p->rank + r), acc);
    qcat[r] = acc;
  }
  for (int64_t i = 0; i < p->rope; i++) qcat[p->rank + i] = LOAD(qpe, (t * p->h + h) * p->rope + i);
  float m = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    float part[SK_ATTN_LANES] = {0};
    for (int64_t i = 0; i < p->d; i++)
      part[i % SK_ATTN_LANES] = fmaf(qcat[i], LOAD(cache, j * p->d + i), part[i % SK_ATTN_LANES]);
    pj[j] = sk__attn_fold16(part) * p->scale;
    if (pj[j] > m) m = pj[j];
  }
  float lanes[SK_ATTN_LANES] = {0};
  for (int64_t j = 0; j < n; j++) {
    pj[j] = sk__expf(pj[j] - m);
    lanes[j % SK_ATTN_LANES] = lanes[j % SK_ATTN_LANES] + pj[j];
  }
  const float l = sk__attn_fold16(lanes);
  for (int64_t r = 0; r < p->rank; r++) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n; j++) acc = fmaf(pj[j], LOAD(cache, j * p->d + r), acc);
    c[r] = acc / l;
  }
  for (int64_t e = 0; e < p->v; e++) {
    float part[SK_ATTN_LANES] = {0};
    for (int64_t r = 0; r < p->rank; r++)
      part[r % SK_ATTN_LANES] = fmaf(LOAD(w, uv + e * p->rank + r), c[r], part[r % SK_ATTN_LANES]);
    sk__store_f32(io->out[0].data, io->out[0].dtype, (size_t)((t * p->h + h) * p->v + e),
                  canonical(sk__attn_fold16(part)));
  }
}

static void reference(const sk__node_io *io) {
  const mla_params *p = io->params;
  const int64_t n_tokens = sk__live_rows(io, &io->in[SLOT_QN].tensors[0]);
  if (!positions_valid(io, n_tokens)) return;
  float *scratch = malloc((size_t)(p->d + p->s + p->rank) * sizeof *scratch);
  if (!scratch) return; /* the oracle of tests only: they see the output untouched */
  for (int64_t t = 0; t < n_tokens; t++)
    for (int64_t h = 0; h < p->h; h++) ref_head(io, t, h, scratch, scratch + p->d, scratch + p->d + p->s);
  free(scratch);
}

/* ---- packing, tiling and the kernel ---- */

/* A bf16 / fp16 kv_b_weight that is a constant, widened to fp32 once at
 * compile in its own layout (per head W_UK's N rows then W_UV's V rows of
 * R): what every item reads. An fp32 weight is read where it is; a weight
 * that is a graph input is widened per item. */
static sk_status pack(const sk__node_io *io, void **packed, size_t *bytes) {
  const sk__tensor *w = &io->in[SLOT_W].tensors[0];
  *packed = NULL, *bytes = 0;
  if (!w->data || w->dtype == SK_FP32) return SK_STATUS_OK;
  const size_t n = (size_t)(w->shape[0] * w->shape[1]);
  float *f = sk__aligned_alloc(n * sizeof *f);
  if (!f) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s (mla_attention): out of memory for its fp32 kv_b_weight "
                          "(%zu bytes)", io->name ? io->name : "node", n * sizeof *f);
  sk__convert(w->data, w->dtype, f, SK_FP32, n, io->isa);
  *packed = f, *bytes = n * sizeof *f;
  return SK_STATUS_OK;
}

/* Per core, in floats: the items' [q_lat, q_pe] rows, latent contexts,
 * scores over every key, outputs and normalizers; one q_nope row, one
 * block of SK_ATTN_KEYS widened cache rows, and one head's widened weight
 * when it is not packed. */
static size_t workspace_floats(const mla_params *p) {
  return (size_t)(p->heads.sub * (p->d + p->rank + p->s + p->v + 1) + p->nope + SK_ATTN_KEYS * p->d +
                  (p->nope + p->v) * p->rank);
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const mla_params *p = io->params;
  const int64_t items = p->t * sk__attn_items_per_token(&p->heads);
  *out = sk__flat_tiling(items, sk__flat_block_size(items, n_cores, 1, 1));
  out->workspace_bytes = workspace_floats(p) * sizeof(float);
  return SK_STATUS_OK;
}

/* Block b reads its items' q_nope and q_pe rows and writes their output
 * rows (one range each), the whole cache, weight and positions. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const mla_params *p = io->params;
  int64_t first, end;
  sk__attn_block_rows(&p->heads, p->t, io->n_blocks, block, &first, &end);
  const int64_t es = (int64_t)sk_dtype_size(io->out[0].dtype);
  reads[SLOT_QN] = (sk__span){first * p->nope * es, end * p->nope * es};
  reads[SLOT_QPE] = (sk__span){first * p->rope * es, end * p->rope * es};
  writes[0] = (sk__span){first * p->v * es, end * p->v * es};
}

/* Head h's weight block (W_UK's N rows, then W_UV's V rows) in fp32. */
static const float *head_weight(const sk__node_io *io, int64_t h, float *scratch) {
  const mla_params *p = io->params;
  const sk__tensor *w = &io->in[SLOT_W].tensors[0];
  const size_t n = (size_t)((p->nope + p->v) * p->rank), at = (size_t)h * n;
  if (io->packed) return (const float *)io->packed + at;
  if (w->dtype == SK_FP32) return (const float *)w->data + at;
  sk__convert((const char *)w->data + at * sk_dtype_size(w->dtype), w->dtype, scratch, SK_FP32, n, io->isa);
  return scratch;
}

/* Cache rows j .. j + nk - 1, their first `width` values, as fp32 rows:
 * in place for fp32 (row stride d), else widened into buf (row stride
 * width) once for all the item's heads. */
static const float *cache_rows(const sk__node_io *io, const sk__attention_kernels *kern, int64_t j, size_t nk,
                               size_t width, float *buf, size_t *stride) {
  const mla_params *p = io->params;
  const sk__tensor *cache = &io->in[SLOT_CACHE].tensors[0];
  const size_t d = (size_t)p->d;
  const char *src = (const char *)cache->data + (size_t)j * d * sk_dtype_size(cache->dtype);
  return sk__attn_rows_f32(kern, src, cache->dtype, d, nk, width, buf, stride, io->isa);
}

/* One item: token t, heads [h0, h1). The keys go in blocks of
 * SK_ATTN_KEYS, a block's rows widened once for all the item's heads; the
 * softmax needs every score before the first context term, so there are
 * two passes over the blocks (a whole widened cache would not stay in
 * cache at decode's lengths: re-widening the bf16 rows is cheaper). */
static void run_item(const sk__node_io *io, const sk__attention_kernels *kern, int64_t t, int64_t h0, int64_t h1,
                     float *ws) {
  const mla_params *p = io->params;
  const sk__tensor *qn = &io->in[SLOT_QN].tensors[0], *qpe = &io->in[SLOT_QPE].tensors[0];
  const sk_dtype dt = qn->dtype;
  const size_t es = sk_dtype_size(dt), d = (size_t)p->d, rank = (size_t)p->rank, nope = (size_t)p->nope;
  const size_t nh = (size_t)(h1 - h0), s = (size_t)p->s, v = (size_t)p->v;
  const int64_t n = position(io, t) + 1;
  const size_t sub = (size_t)p->heads.sub;
  float *qcat = ws, *ctx = qcat + sub * d, *scores = ctx + sub * rank, *o = scores + sub * s;
  float *l = o + sub * v, *qrow = l + sub, *kvf = qrow + nope, *wbuf = kvf + SK_ATTN_KEYS * d;
  /* [q_lat, q_pe] per head: q_lat the fmaf chain over N of W_UK's rows,
   * SK_ATTN_KEYS rows a call (the same chain, in increasing i) */
  for (size_t h = 0; h < nh; h++) {
    const float *wh = head_weight(io, h0 + (int64_t)h, wbuf);
    float *q = qcat + h * d;
    const size_t at = (size_t)(t * p->h + h0) + h;
    sk__convert((const char *)qn->data + at * nope * es, dt, qrow, SK_FP32, nope, io->isa);
    sk__convert((const char *)qpe->data + at * (size_t)p->rope * es, dt, q + rank, SK_FP32, (size_t)p->rope, io->isa);
    for (size_t r = 0; r < rank; r++) q[r] = 0.0f;
    for (size_t i = 0; i < nope; i += SK_ATTN_KEYS) {
      const size_t nk = nope - i < SK_ATTN_KEYS ? nope - i : SK_ATTN_KEYS;
      kern->accumulate(q, 1, qrow + i, 1, wh + i * rank, rank, nk, rank);
    }
  }
  /* scores, block by block: each score its own dot, as one key at a time */
  for (int64_t j0 = 0; j0 < n; j0 += SK_ATTN_KEYS) {
    const size_t nk = (size_t)(n - j0 < SK_ATTN_KEYS ? n - j0 : SK_ATTN_KEYS);
    size_t ks;
    const float *kr = cache_rows(io, kern, j0, nk, d, kvf, &ks);
    kern->dots(qcat, nh, kr, ks, nk, d, scores + j0, s);
  }
  for (size_t h = 0; h < nh; h++) { /* p_j and the normalizer, as attention's */
    float *sc = scores + h * s;
    const float m = kern->scale_max(sc, (size_t)n, p->scale);
    l[h] = sk__attn_exp_normalizer(kern, sc, (size_t)n, m, io->isa);
  }
  /* latent contexts, block by block in increasing key order (c_kv only:
   * the first R values of a row, so only those are widened) */
  for (size_t i = 0; i < nh * rank; i++) ctx[i] = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += SK_ATTN_KEYS) {
    const size_t nk = (size_t)(n - j0 < SK_ATTN_KEYS ? n - j0 : SK_ATTN_KEYS);
    size_t vs;
    const float *vr = cache_rows(io, kern, j0, nk, rank, kvf, &vs);
    kern->accumulate(ctx, nh, scores + j0, s, vr, vs, nk, rank);
  }
  /* o = W_UV c, one dot over R per output value */
  for (size_t h = 0; h < nh; h++) {
    float *c = ctx + h * rank;
    for (size_t r = 0; r < rank; r++) c[r] = c[r] / l[h];
    const float *wh = head_weight(io, h0 + (int64_t)h, wbuf);
    kern->dots(wh + nope * rank, v, c, rank, 1, rank, o + h * v, 1);
  }
  for (size_t i = 0; i < nh * v; i++) o[i] = canonical(o[i]);
  sk__convert(o, SK_FP32, (char *)io->out[0].data + (size_t)(t * p->h + h0) * v * es, dt, nh * v, io->isa);
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const mla_params *p = io->params;
  const int64_t n_tokens = sk__live_rows(io, &io->in[SLOT_QN].tensors[0]);
  int64_t i0, i1;
  sk__attn_block_items(&p->heads, p->t, n_tokens, io->n_blocks, block, &i0, &i1);
  if (i0 >= i1 || !positions_valid(io, n_tokens)) return;
  const sk__attention_kernels *kern = sk__attention_config_for(io->isa);
  for (int64_t i = i0; i < i1; i++) {
    int64_t t, h0, h1;
    sk__attn_item_heads(&p->heads, i, &t, &h0, &h1);
    run_item(io, kern, t, h0, h1, workspace);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "attention dots, exp, dtype conversion");
}

const sk__op_def sk__op_mla_attention = {
    .type = "mla_attention",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "DeepSeek multi-head latent attention, absorbed form: causal attention of T queries against a latent "
           "cache [c_kv, k_pe] up to each one's position, kv_b_proj folded into query and output, every sum in a "
           "fixed order from the first key",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .pack = pack,
    .params_size = sizeof(mla_params),
    .dynamic_rows = true, /* per token: a block computes its live tokens' items only */
};

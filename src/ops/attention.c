/* attention(q, k_cache, v_cache, positions; scale, softcap, window) -> o:
 * causal scaled-dot-product attention of T query tokens against a KV cache
 * (docs/ops.md), grouped-query heads.
 *
 *   q [T, Hq, D]; k_cache, v_cache [S, Hkv, D] of q's dtype (fp32, fp16,
 *   bf16); positions int32 / int64 [T]; o [T, Hq, D] of q's dtype.
 *
 * Token t, q head h, kv head g = h / (Hq / Hkv), keys j = lo .. pos with
 * pos = positions[t], lo = 0 or max(0, pos - window + 1). In fp32:
 *
 *   s_j  = dot(q, k_j) * scale     dot: 16 lanes over d, lane l the fmaf
 *                                  chain over d = l (mod 16) from d = 0,
 *                                  folded pairwise (l + 8, + 4, + 2, + 1)
 *   s_j  = softcap * tanh(s_j / softcap)   (softcap > 0 only), tanh(x) =
 *          sign(x) (1 - e) / (1 + e), e = sk__expf(-2 |x|)
 *   m    = the largest s_j (compared in increasing j; a NaN is skipped)
 *   p_j  = sk__expf(s_j - m)
 *   l    = 16 lanes over j (lane (j - lo) mod 16, added in increasing j),
 *          folded pairwise
 *   o[d] = (fmaf chain over j in increasing order of p_j * v_j[d], from 0) / l
 *
 * rounded to q's dtype, a NaN stored as the canonical quiet NaN. Every sum
 * runs over keys counted from lo, which depends on the token's position
 * alone, never on where a chunk, a block or a team's share starts: a
 * token's output is bitwise the same prefilled in one pass, in chunks, or
 * decoded token by token, in any batch, on any executor, team and ISA.
 *
 * Under the AMX contract (numerics amx, bf16; docs/ops.md, "Numerics") the
 * dot and the output's sum are TDPBF16PS's: d in blocks of 32 for the
 * dot, the keys from lo in blocks of 32 with p_j rounded to bf16 for the
 * sum (kernels/attention/attention_amx.h); the rest is as above.
 *
 * The reference computes it element by element (the oracle); the kernel
 * runs the same operations with the per-ISA loops of kernels/attention
 * (dots, accumulate, the softmax's), the SIMD converters and exp, in work
 * items and steps it shares with mla_attention (attention_common.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_amx.h"
#include "kernels/convert/convert.h"
#include "kernels/gemm/bf16_contract.h"
#include "ops/attention_common.h"
#include "ops/index_input.h"
#include "ops/op_util.h"

enum { SLOT_Q, SLOT_K, SLOT_V, SLOT_POSITIONS };

#define MAX_D 512          /* head dims: multiples of 16 up to this */
#define BLOCKS_PER_CORE 16 /* blocks of a multi-token run per core */

/* Items token t runs together (consecutive in a block, so heads
 * [h0, h1) of several kv heads), one key block of each in turn: a core then
 * reads JOINT_ITEMS * D contiguous values of every cache row instead of D
 * in every Hkv * D, which the memory system streams better. Each item's
 * arithmetic is its own, in its own order: the same bits. */
#define JOINT_ITEMS 2

typedef struct attn_params {
  int64_t t, hq, d, s;      /* planned tokens, q heads, head dim, cache rows */
  sk__attn_heads heads;     /* Hkv groups (one per kv head) of q heads, in work items */
  int64_t window;           /* 0: every key up to the position */
  float scale, softcap;     /* softcap 0: off */
} attn_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("q", "[T, Hq, D] fp32, fp16 or bf16: the queries", .dtypes = SK__FLOATS, SK__RANK(3, 3)),
    SK__IN("k_cache", "[S, Hkv, D], q's dtype: the keys (kv_cache_write's output)", SK__SAME_DTYPE_AS(SLOT_Q),
           SK__RANK(3, 3)),
    SK__IN("v_cache", "[S, Hkv, D], q's dtype: the values", SK__SAME_DTYPE_AS(SLOT_Q), SK__RANK(3, 3)),
    SK__IN("positions", "int32 or int64 [T]: each query's position, in [0, S); it attends rows up to it",
           .dtypes = SK_DTYPE_BIT(SK_INT32) | SK_DTYPE_BIT(SK_INT64), SK__RANK(1, 1)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_FLOAT("scale", 0.0, "scores' factor; 0: 1 / sqrt(D)"),
    SK__ATTR_FLOAT("softcap", 0.0, "logit soft cap: s = softcap * tanh(s / softcap); 0: off"),
    SK__ATTR_INT("window", 0, 0, (int64_t)1 << 40, "sliding window: the last `window` keys; 0: off"),
};
static const sk_op_output_info outputs[] = {SK__OUT("o", "[T, Hq, D], q's dtype")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *q, *k, *v, *pos;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_Q, &q));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_K, &k));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_V, &v));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_POSITIONS, &pos));
  char s1[SK_SHAPE_STR_MAX], s2[SK_SHAPE_STR_MAX];
  const int64_t d = q->shape[2];
  if (d < 16 || d > MAX_D || d % 16 != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input q: head dim D = %lld: expected a multiple of 16 in [16, %d]",
                    op, (long long)d, MAX_D);
  if (k->shape[2] != d || k->shape[1] < 1)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input k_cache: expected [S, Hkv, %lld] (q's D, Hkv >= 1), got %s",
                    op, (long long)d, sk__shape_str(k->rank, k->shape, s1, sizeof s1));
  if (!sk__tensor_same_shape(k, v))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input v_cache: expected k_cache's shape %s, got %s", op,
                    sk__shape_str(k->rank, k->shape, s1, sizeof s1), sk__shape_str(v->rank, v->shape, s2, sizeof s2));
  if (q->shape[1] < 1 || q->shape[1] % k->shape[1] != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input q: Hq = %lld: expected a positive multiple of k_cache's Hkv = %lld",
                    op, (long long)q->shape[1], (long long)k->shape[1]);
  if (pos->shape[0] != q->shape[0])
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input positions: expected [%lld] (q's T), got %s", op,
                    (long long)q->shape[0], sk__shape_str(pos->rank, pos->shape, s1, sizeof s1));
  double scale, softcap;
  int64_t window;
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "scale", &scale));
  SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, "softcap", &softcap));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "window", &window));
  if (!isfinite((float)scale))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute scale: expected a finite value, got %g", op, scale);
  if (!(softcap >= 0) || !isfinite((float)softcap))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute softcap: expected a finite value >= 0, got %g", op,
                    softcap);
  attn_params *p = sk__ctx_params(ctx);
  p->t = q->shape[0];
  p->hq = q->shape[1];
  p->d = d;
  p->s = k->shape[0];
  p->heads = sk__attn_heads_of(k->shape[1], p->hq / k->shape[1]);
  p->window = window;
  p->scale = scale != 0 ? (float)scale : (float)(1.0 / sqrt((double)d));
  p->softcap = (float)softcap;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, q->dtype, 3, q->shape);
  return SK_STATUS_OK;
}

/* ---- what the reference and the kernel share ---- */

static int64_t position(const sk__node_io *io, int64_t t) {
  return sk__index_at(&io->in[SLOT_POSITIONS].tensors[0], t);
}

/* Whether every live position is a cache row; else the run error names the
 * first that is not (the output is then unspecified). */
static bool positions_valid(const sk__node_io *io, int64_t n_tokens) {
  const attn_params *p = io->params;
  return sk__indices_in_range(io, &io->in[SLOT_POSITIONS].tensors[0], n_tokens, p->s,
                              "%s (attention): input positions[%lld] = %lld: expected a cache row in [0, %lld) (the "
                              "caches' S)");
}

/* The first key token t attends (its last is its position). */
static int64_t first_key(const attn_params *p, int64_t pos) {
  return p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
}

/* The AMX contract's products (docs/ops.md, "Numerics"): bf16 q, k, v. */
static bool amx_products(const sk__node_io *io) {
  return io->numerics == SK_NUMERICS_AMX && io->in[SLOT_Q].tensors[0].dtype == SK_BF16;
}

/* tanh(x) through the library's exp (bitwise on every ISA), given e = e^-2|x|. */
static inline float tanh_from(float x, float e) {
  float y = (1.0f - e) / (1.0f + e);
  return x < 0 ? -y : y;
}

static inline float finish(float acc, float l) {
  float o = acc / l;
  return o == o ? o : sk__canonical_nan();
}

/* ---- the reference: the definition at the top, element by element ---- */

static float ref_score(const sk__node_io *io, int64_t t, int64_t h, int64_t j) {
  const attn_params *p = io->params;
  const sk__tensor *q = &io->in[SLOT_Q].tensors[0], *k = &io->in[SLOT_K].tensors[0];
  const int64_t hkv = p->heads.hkv, g = h / p->heads.group;
  float s;
  if (amx_products(io)) { /* the contract's dot: d in blocks of 32 */
    float qv[MAX_D], kv[MAX_D], acc = 0.0f;
    for (int64_t i = 0; i < p->d; i++) {
      qv[i] = sk__load_f32(q->data, q->dtype, (size_t)((t * p->hq + h) * p->d + i));
      kv[i] = sk__load_f32(k->data, k->dtype, (size_t)((j * hkv + g) * p->d + i));
    }
    for (int64_t d0 = 0; d0 < p->d; d0 += SK__AMX_BF16_K) acc = sk__bf16_amx_block(qv, kv, 1, (size_t)p->d, (size_t)d0, acc);
    s = acc * p->scale;
  } else {
    float part[SK_ATTN_LANES] = {0};
    for (int64_t i = 0; i < p->d; i++) {
      float qi = sk__load_f32(q->data, q->dtype, (size_t)((t * p->hq + h) * p->d + i));
      float ki = sk__load_f32(k->data, k->dtype, (size_t)((j * hkv + g) * p->d + i));
      part[i % SK_ATTN_LANES] = fmaf(qi, ki, part[i % SK_ATTN_LANES]);
    }
    s = sk__attn_fold16(part) * p->scale;
  }
  if (p->softcap > 0) {
    float x = s / p->softcap;
    s = p->softcap * tanh_from(x, sk__expf(-2.0f * fabsf(x)));
  }
  return s;
}

static void reference(const sk__node_io *io) {
  const attn_params *p = io->params;
  const sk__tensor *v = &io->in[SLOT_V].tensors[0];
  const int64_t n_tokens = sk__live_rows(io, &io->in[SLOT_Q].tensors[0]);
  if (!positions_valid(io, n_tokens)) return;
  const size_t rows = (size_t)(p->s > 0 ? p->s : 1);
  float *pj = malloc(rows * sizeof *pj), *pb = malloc(rows * sizeof *pb), *vcol = malloc(rows * sizeof *vcol);
  if (!pj || !pb || !vcol) { /* the oracle of tests only: they see the output untouched */
    free(pj), free(pb), free(vcol);
    return;
  }
  for (int64_t t = 0; t < n_tokens; t++)
    for (int64_t h = 0; h < p->hq; h++) {
      const int64_t pos = position(io, t), lo = first_key(p, pos), n = pos - lo + 1, g = h / p->heads.group;
      float m = -INFINITY;
      for (int64_t j = 0; j < n; j++) {
        pj[j] = ref_score(io, t, h, lo + j);
        if (pj[j] > m) m = pj[j];
      }
      float lanes[SK_ATTN_LANES] = {0};
      for (int64_t j = 0; j < n; j++) {
        pj[j] = sk__expf(pj[j] - m);
        lanes[j % SK_ATTN_LANES] = lanes[j % SK_ATTN_LANES] + pj[j];
      }
      const float l = sk__attn_fold16(lanes);
      const bool amx = amx_products(io);
      for (int64_t j = 0; amx && j < n; j++) { /* the weights as the values product reads them: bf16 */
        const uint32_t u = (uint32_t)sk__attn_bf16_weight(pj[j]) << 16;
        memcpy(&pb[j], &u, sizeof u);
      }
      for (int64_t i = 0; i < p->d; i++) {
        float acc = 0.0f;
        for (int64_t j = 0; j < n; j++) {
          const float vj = sk__load_f32(v->data, v->dtype, (size_t)(((lo + j) * p->heads.hkv + g) * p->d + i));
          if (amx) vcol[j] = vj;
          else acc = fmaf(pj[j], vj, acc);
        }
        /* AMX: the contract's sum over the keys from lo in blocks of 32 */
        for (int64_t j0 = 0; amx && j0 < n; j0 += SK__AMX_BF16_K)
          acc = sk__bf16_amx_block(pb, vcol, 1, (size_t)n, (size_t)j0, acc);
        sk__store_f32(io->out[0].data, io->out[0].dtype, (size_t)((t * p->hq + h) * p->d + i), finish(acc, l));
      }
    }
  free(pj);
  free(pb);
  free(vcol);
}

/* ---- tiling and the kernel ---- */

/* Under the AMX contract a core takes up to amx_tokens() tokens of one
 * item slot (the same heads of one kv head) at a time: their scores (the
 * heads of 16 / heads-an-item tokens fill a tile's q rows), each one's 16
 * rows of value sums, and the values packed AMX_CHUNK keys at a time for
 * all of them. */
#define AMX_CHUNK 256
/* Score rows a core holds: 64 (8 tokens of 8 heads) up to 4096 keys, 1 MiB;
 * past that 16, so that a long context's workspace stays 16 rows of keys. */
static int64_t amx_score_rows(const attn_params *p) { return p->s <= 4096 ? 64 : 16; }
static int64_t amx_tokens(const attn_params *p) {
  const int64_t by_sums = 16384 / (16 * p->d), by_scores = amx_score_rows(p) / p->heads.sub;
  const int64_t most = by_sums < by_scores ? by_sums : by_scores;
  return most > 1 ? most : 1;
}

/* The AMX contract's workspace, in floats: scores of amx_score_rows() q
 * rows over every key, the softmax's scratch, the normalizers, the packed
 * q rows, the tokens' sums, one token's output, a chunk's weight tiles, a
 * chunk's packed values and a token's last block, and the tiles' scratch. */
static size_t amx_floats(const attn_params *p) {
  const size_t d = (size_t)p->d, s = (size_t)p->s, rows = (size_t)amx_score_rows(p);
  return (rows + 1) * s + rows + sk__attn_amx_q_words(d) + (size_t)amx_tokens(p) * 16 * d + 16 * d + AMX_CHUNK * 8 +
         (AMX_CHUNK / SK_ATTN_AMX_KEYS + 1) * sk__attn_amx_block_words(d) + 2048;
}

/* Per core, in floats: q and o for a part's heads, a block of key rows and
 * one of value rows (widened), scores for a part's heads over every key,
 * and the soft cap's scratch over every key. */
static size_t workspace_floats(const attn_params *p) {
  const int64_t most = JOINT_ITEMS * p->heads.sub; /* heads run_items takes */
  const size_t fma = (size_t)(2 * most * p->d + 2 * SK_ATTN_KEYS * p->d + (most + 1) * p->s + 2 * most);
  return fma > amx_floats(p) ? fma : amx_floats(p); /* one path runs */
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const attn_params *p = io->params;
  const int64_t items = p->t * sk__attn_items_per_token(&p->heads);
  /* A later token attends more keys: in one contiguous share per core the
   * last core would get most of a prefill's work. Many small blocks, dealt
   * to the cores in turn, even it out; a decode step (T = 1) keeps one
   * share per core. */
  const int64_t blocks = p->t > 1 ? (int64_t)(n_cores > 0 ? n_cores : 1) * BLOCKS_PER_CORE : n_cores;
  *out = sk__flat_tiling(items, sk__flat_block_size(items, (int)(blocks < items ? blocks : items), 1, 1));
  out->workspace_bytes = workspace_floats(p) * sizeof(float);
  return SK_STATUS_OK;
}

/* Block b reads the q rows of its items and writes their output rows (one
 * range each), the whole caches and positions. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const attn_params *p = io->params;
  int64_t first, end;
  sk__attn_block_rows(&p->heads, p->t, io->n_blocks, block, &first, &end);
  const int64_t row = p->d * (int64_t)sk_dtype_size(io->out[0].dtype);
  reads[SLOT_Q] = writes[0] = (sk__span){first * row, end * row};
}

/* How many rows ahead kv_rows asks for: a kv head's rows are D values in
 * every Hkv * D, a stride the hardware prefetchers follow poorly, and decode
 * reads each once (memory-bound). */
#define PREFETCH_ROWS (2 * SK_ATTN_KEYS)

/* Rows row .. row + nk - 1 of kv head g of a cache as fp32 rows: in place
 * for fp32 (row stride Hkv * D), else widened into buf (row stride D).
 * Prefetches the rows PREFETCH_ROWS further on, up to row `end`. */
static const float *kv_rows(const sk__node_io *io, const sk__attention_kernels *kern, const sk__tensor *c,
                            int64_t row, int64_t end, int64_t g, size_t nk, float *buf, size_t *stride) {
  const attn_params *p = io->params;
  const size_t d = (size_t)p->d, es = sk_dtype_size(c->dtype), row_elems = (size_t)p->heads.hkv * d;
  const char *src = (const char *)c->data + ((size_t)row * row_elems + (size_t)g * d) * es;
  for (int64_t r = row + PREFETCH_ROWS; r < row + PREFETCH_ROWS + (int64_t)nk && r < end; r++)
    for (size_t b = 0; b < d * es; b += 64) __builtin_prefetch(src + (size_t)(r - row) * row_elems * es + b);
  return sk__attn_rows_f32(kern, src, c->dtype, row_elems, nk, d, buf, stride, io->isa);
}

/* The scores of nh heads (row stride ss, n keys each) scaled, capped and
 * turned into weights p_j in place; l[h] each head's normalizer. */
static void softmax_rows(const sk__node_io *io, const sk__attention_kernels *kern, float *scores, size_t ss, size_t nh,
                         int64_t n, float *scratch, float *l) {
  const attn_params *p = io->params;
  for (size_t h = 0; h < nh; h++) {
    float *s = scores + h * ss;
    float m = kern->scale_max(s, (size_t)n, p->scale);
    if (p->softcap > 0) {
      for (int64_t j = 0; j < n; j++) scratch[j] = -2.0f * fabsf(s[j] / p->softcap);
      sk__expf_array(scratch, scratch, (size_t)n, io->isa);
      for (int64_t j = 0; j < n; j++) s[j] = p->softcap * tanh_from(s[j] / p->softcap, scratch[j]);
      m = kern->scale_max(s, (size_t)n, 1.0f); /* x * 1 == x, NaNs included: the max after the cap */
    }
    l[h] = sk__attn_exp_normalizer(kern, s, (size_t)n, m, io->isa); /* p_j; lane (j - lo) mod 16 of l */
  }
}

/* Under the AMX contract (bf16): tokens t .. t + r - 1 (one first key lo),
 * heads [a, b) of one kv head. Their q rows are the scores' columns (one
 * pass over the keys for all), each token's softmax is its own, and the
 * values are packed a chunk of keys at a time for all of them; each
 * token's sums run over its own blocks from lo, its last block's values
 * packed again without the keys past its position when another token
 * reads further. */
static void run_tokens_amx(const sk__node_io *io, const sk__attention_kernels *kern, int64_t t, int64_t r,
                           int64_t a, int64_t b, float *ws) {
  const attn_params *p = io->params;
  const sk__attention_amx *amx = sk__attention_amx_for(io->isa);
  const uint16_t *q = io->in[SLOT_Q].tensors[0].data, *k = io->in[SLOT_K].tensors[0].data,
                 *v = io->in[SLOT_V].tensors[0].data;
  const size_t d = (size_t)p->d, nh = (size_t)(b - a), ss = (size_t)p->s, row = (size_t)p->heads.hkv * d;
  const size_t g = (size_t)(a / p->heads.group), words = sk__attn_amx_block_words(d);
  const size_t rows = (size_t)amx_score_rows(p);
  float *scores = ws, *scratch = scores + rows * ss, *l = scratch + ss;
  uint32_t *qt = (uint32_t *)(void *)(l + rows);
  float *acc = (float *)(void *)(qt + sk__attn_amx_q_words(d)), *o = acc + (size_t)amx_tokens(p) * 16 * d;
  uint16_t *w = (uint16_t *)(void *)(o + 16 * d);
  uint32_t *vp = (uint32_t *)(void *)(w + AMX_CHUNK * 16), *tail = vp + AMX_CHUNK / SK_ATTN_AMX_KEYS * words;
  void *tiles = tail + words;
  const int64_t lo = first_key(p, position(io, t));
  int64_t n[64], most = 0;
  for (int64_t i = 0; i < r; i++) {
    n[i] = position(io, t + i) - lo + 1;
    most = n[i] > most ? n[i] : most;
  }
  for (int64_t i0 = 0, per = 16 / (int64_t)nh; i0 < r; i0 += per) { /* the tokens of one tile's q rows */
    const int64_t ti = r - i0 < per ? r - i0 : per;
    int64_t keys = 0;
    for (int64_t i = i0; i < i0 + ti; i++) keys = n[i] > keys ? n[i] : keys;
    amx->pack_q(q + (size_t)((t + i0) * p->hq + a) * d, (size_t)ti, nh, (size_t)p->hq * d, d, qt);
    for (int64_t j0 = 0; j0 < keys; j0 += SK_ATTN_AMX_SCORE_KEYS)
      amx->scores(qt, (size_t)ti * nh, k + (size_t)(lo + j0) * row + g * d, row,
                  (size_t)(keys - j0 < SK_ATTN_AMX_SCORE_KEYS ? keys - j0 : SK_ATTN_AMX_SCORE_KEYS), d,
                  scores + (size_t)i0 * nh * ss + j0, ss, tiles);
  }
  for (int64_t i = 0; i < r; i++)
    softmax_rows(io, kern, scores + (size_t)i * nh * ss, ss, nh, n[i], scratch, l + i * nh);
  for (int64_t c0 = 0; c0 < most; c0 += AMX_CHUNK) {
    const int64_t ck = most - c0 < AMX_CHUNK ? most - c0 : AMX_CHUNK;
    const uint16_t *vc = v + (size_t)(lo + c0) * row + g * d;
    amx->pack_v(vc, row, (size_t)ck, d, vp);
    for (int64_t i = 0; i < r; i++) {
      if (n[i] <= c0) continue;
      const int64_t nk = n[i] - c0 < AMX_CHUNK ? n[i] - c0 : AMX_CHUNK;
      const int64_t nb = (nk + SK_ATTN_AMX_KEYS - 1) / SK_ATTN_AMX_KEYS;
      const uint32_t *last = NULL;
      if (nk % SK_ATTN_AMX_KEYS != 0 && nk < ck) { /* vp's last block of this token holds keys past its position */
        amx->pack_v(vc + (size_t)(nb - 1) * SK_ATTN_AMX_KEYS * row, row, (size_t)(nk % SK_ATTN_AMX_KEYS), d, tail);
        last = tail;
      }
      amx->weights(scores + (size_t)i * nh * ss + c0, nh, ss, (size_t)nk, w);
      amx->values(w, (size_t)nb, vp, last, d, acc + (size_t)i * 16 * d, c0 == 0);
    }
  }
  for (int64_t i = 0; i < r; i++) {
    for (size_t h = 0; h < nh; h++)
      for (size_t e = 0; e < d; e++) o[h * d + e] = finish(acc[((size_t)i * 16 + h) * d + e], l[(size_t)i * nh + h]);
    sk__convert(o, SK_FP32, (char *)io->out[0].data + (size_t)((t + i) * p->hq + a) * d * 2, SK_BF16, nh * d, io->isa);
  }
}

/* A block's items under the AMX contract: item slot s of a token (heads
 * [a, b) of one kv head) for each of the block's tokens that has it, up to
 * amx_tokens() tokens of one first key together. */
static void run_block_amx(const sk__node_io *io, const sk__attention_kernels *kern, int64_t i0, int64_t i1, float *ws) {
  const attn_params *p = io->params;
  const int64_t per = sk__attn_items_per_token(&p->heads);
  for (int64_t s = 0; s < per; s++) {
    int64_t t0, a, b;
    sk__attn_item_heads(&p->heads, s, &t0, &a, &b);
    const int64_t ta = (i0 - s + per - 1) / per, tb = (i1 - s + per - 1) / per; /* t * per + s in [i0, i1) */
    const int64_t most = amx_tokens(p);
    for (int64_t t = ta; t < tb;) {
      const int64_t lo = first_key(p, position(io, t));
      int64_t r = 1;
      while (r < most && t + r < tb && first_key(p, position(io, t + r)) == lo) r++;
      run_tokens_amx(io, kern, t, r, a, b, ws);
      t += r;
    }
  }
}

/* Token t, heads [h0, h1) (items of kv heads h0 / group .. (h1 - 1) /
 * group, at most JOINT_ITEMS * sub heads). The keys go in blocks of
 * SK_ATTN_KEYS, each block's rows read once for all of a kv head's heads. */
static void run_items(const sk__node_io *io, const sk__attention_kernels *kern, int64_t t, int64_t h0, int64_t h1,
                      float *ws) {
  const attn_params *p = io->params;
  const sk__tensor *q = &io->in[SLOT_Q].tensors[0], *k = &io->in[SLOT_K].tensors[0], *v = &io->in[SLOT_V].tensors[0];
  const sk_dtype dt = q->dtype;
  const size_t es = sk_dtype_size(dt), d = (size_t)p->d, nh = (size_t)(h1 - h0), ss = (size_t)p->s;
  const int64_t pos = position(io, t), lo = first_key(p, pos), n = pos - lo + 1;
  const int64_t group = p->heads.group, most = JOINT_ITEMS * p->heads.sub;
  float *qf = ws, *o = qf + most * p->d, *kvf = o + most * p->d, *scores = kvf + SK_ATTN_KEYS * d;
  float *scratch = scores + most * p->s, *l = scratch + p->s;
  sk__convert((const char *)q->data + (size_t)(t * p->hq + h0) * d * es, dt, qf, SK_FP32, nh * d, io->isa);
  for (int64_t j0 = 0; j0 < n; j0 += SK_ATTN_KEYS) {
    const size_t nk = (size_t)(n - j0 < SK_ATTN_KEYS ? n - j0 : SK_ATTN_KEYS);
    for (int64_t a = h0; a < h1;) { /* each kv head's heads in [h0, h1): [a, b) */
      const int64_t g = a / group, b = (g + 1) * group < h1 ? (g + 1) * group : h1;
      size_t ks;
      const float *kr = kv_rows(io, kern, k, lo + j0, pos + 1, g, nk, kvf, &ks);
      kern->dots(qf + (size_t)(a - h0) * d, (size_t)(b - a), kr, ks, nk, d, scores + (size_t)(a - h0) * ss + j0, ss);
      a = b;
    }
  }
  softmax_rows(io, kern, scores, ss, nh, n, scratch, l);
  /* values, block by block (keys in increasing order), into every head's accumulator */
  for (size_t i = 0; i < nh * d; i++) o[i] = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += SK_ATTN_KEYS) {
    const size_t nk = (size_t)(n - j0 < SK_ATTN_KEYS ? n - j0 : SK_ATTN_KEYS);
    for (int64_t a = h0; a < h1;) {
      const int64_t g = a / group, b = (g + 1) * group < h1 ? (g + 1) * group : h1;
      size_t vs;
      const float *vr = kv_rows(io, kern, v, lo + j0, pos + 1, g, nk, kvf, &vs);
      kern->accumulate(o + (size_t)(a - h0) * d, (size_t)(b - a), scores + (size_t)(a - h0) * ss + j0, ss, vr, vs, nk,
                       d);
      a = b;
    }
  }
  for (size_t h = 0; h < nh; h++)
    for (size_t i = 0; i < d; i++) o[h * d + i] = finish(o[h * d + i], l[h]);
  sk__convert(o, SK_FP32, (char *)io->out[0].data + (size_t)(t * p->hq + h0) * d * es, dt, nh * d, io->isa);
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const attn_params *p = io->params;
  const int64_t n_tokens = sk__live_rows(io, &io->in[SLOT_Q].tensors[0]);
  int64_t i0, i1;
  sk__attn_block_items(&p->heads, p->t, n_tokens, io->n_blocks, block, &i0, &i1);
  if (i0 >= i1 || !positions_valid(io, n_tokens)) return;
  const sk__attention_kernels *kern = sk__attention_config_for(io->isa);
  if (amx_products(io)) {
    run_block_amx(io, kern, i0, i1, workspace);
    return;
  }
  for (int64_t i = i0; i < i1;) { /* up to JOINT_ITEMS consecutive items of one token at a time */
    int64_t t, h0, h1, u = i + 1, tu, a, b;
    sk__attn_item_heads(&p->heads, i, &t, &h0, &h1);
    for (; u < i1 && u < i + JOINT_ITEMS; u++, h1 = b) {
      sk__attn_item_heads(&p->heads, u, &tu, &a, &b);
      if (tu != t) break;
    }
    run_items(io, kern, t, h0, h1, workspace);
    i = u;
  }
}

static const char *kernel_name(const sk__node_io *io) {
  if (amx_products(io)) return sk__attention_amx_for(io->isa)->name;
  return SK__VECTOR_KERNEL_NAME(io->isa, "attention dots, exp, dtype conversion");
}

const sk__op_def sk__op_attention = {
    .type = "attention",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "causal attention of T queries against a KV cache up to each one's position (grouped-query heads, "
           "optional scale, softcap, sliding window), every sum in a fixed order from the first key",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .params_size = sizeof(attn_params),
    .dynamic_rows = true, /* per token: a block computes its live tokens' items only */
};

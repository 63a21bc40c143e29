/* moe_init_routing (torch_npu's npu_moe_init_routing_v2, dropless): tokens
 * sorted by expert, so each expert's rows are contiguous for a grouped
 * matmul.
 *
 *   x [N, H] fp32 / fp16 / bf16, expert_idx [N, K] int32, scale? fp32 [N]
 *   -> expanded_x [R, H], expanded_row_idx [N*K] int32,
 *      expert_tokens [hi - lo] int64, expanded_scale [R] fp32
 *
 * The (token, slot) pairs are numbered i = n * K + k. The pairs whose
 * expert lies in active_expert_range [lo, hi) (default [0, expert_num)) are
 * sorted by expert, stably (equal experts in increasing i): sorted[d] is
 * the pair of destination row d, for d < A (the number of such pairs).
 *   expanded_x[d]       = x[sorted[d] / K] for d < A, zeros for A <= d < R
 *                         (quant_mode 1: that row quantized to int8, below)
 *   expanded_row_idx    row_idx_type 0 (scatter): [i] = the d of pair i, or
 *                         -1 when pair i was left out; 1 (gather): [d] =
 *                         sorted[d] for d < A, -1 after
 *   expert_tokens[e-lo] expert_tokens_num_type 0: pairs of experts lo..e
 *                         (cumulative), 1: of expert e (counts)
 *   expanded_scale[d]   quant_mode 1: the row's scale; else scale[token]
 *                         when scale is given, 0 otherwise (and for d >= A)
 * R = N * K, or active_num when 0 <= active_num < N * K (rows past R are
 * not kept). An expert id outside the range (including any outside
 * [0, expert_num)) is left out, as torch_npu does for the inactive ones.
 *
 * quant_mode 1 (dynamic int8), per source row in fp32: m = max |x| (NaN
 * ignored); m == 0: all 0, scale 0; else s = m / 127, q = clip(rint(x / s),
 * -128, 127) (rint: half to even; NaN -> 0), scale = s: the rule of
 * dequant_swiglu_quant's dynamic mode.
 *
 * Every block sorts (a counting sort over the N*K ids, cheap next to
 * copying the rows) and then writes its range of destination rows; block 0
 * also writes expanded_row_idx and expert_tokens.
 *
 * A run-time token count (op.h): x, expert_idx, scale, expanded_row_idx
 * and (with R = N * K) expanded_x / expanded_scale follow the tokens, and
 * only the live tokens' pairs are routed, so every output is what a
 * program built for those tokens writes: N, N * K and R are the live ones
 * (live_counts), expert_tokens (static) counts the live pairs only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/int8_quantize.h"
#include "ops/op_util.h"

enum { SLOT_X, SLOT_EXPERT_IDX, SLOT_SCALE };
enum { OUT_X, OUT_ROW_IDX, OUT_TOKENS, OUT_SCALE };

#define MAX_EXPERTS 65536
#define MAX_PAIRS ((int64_t)1 << 24)

typedef struct init_params {
  int64_t n, h, k, rows; /* rows: R */
  int64_t lo, hi;        /* the active experts */
  int count_type, quant_mode, row_idx_type;
  bool has_scale;
} init_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[N, H] fp32, fp16 or bf16: the tokens", .dtypes = SK__FLOATS, SK__RANK(2, 2)),
    SK__IN("expert_idx", "int32 [N, K]: each token's K experts", .dtypes = SK__DTYPES1(SK_INT32), SK__RANK(2, 2)),
    SK__IN_OPT("scale", "fp32 [N]: a per-token value carried to expanded_scale (quant_mode -1)",
               .dtypes = SK__DTYPES1(SK_FP32)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT_REQUIRED("expert_num", 1, MAX_EXPERTS, "experts E"),
    SK__ATTR_INT("active_num", -1, -1, MAX_PAIRS, "rows of expanded_x kept (-1: all N*K)"),
    SK__ATTR_INT("expert_tokens_num_type", 0, 0, 1, "expert_tokens: 0 cumulative, 1 counts"),
    SK__ATTR_INT("quant_mode", -1, -1, 1, "-1 none, 1 dynamic int8 per row (0, static, is not supported)"),
    SK__ATTR_INTS("active_expert_range", "[lo, hi): the experts routed (default [0, expert_num))"),
    SK__ATTR_INT("row_idx_type", 0, 0, 1, "expanded_row_idx: 0 scatter (pair -> row), 1 gather (row -> pair)"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("expanded_x", "[R, H]: x's dtype, or int8 (quant_mode 1)"),
    SK__OUT("expanded_row_idx", "int32 [N*K]"),
    SK__OUT("expert_tokens", "int64 [hi - lo]: cumulative or per-expert pair counts"),
    SK__OUT("expanded_scale", "fp32 [R]"),
};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x, *idx;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_EXPERT_IDX, &idx));
  const sk__tensor *scale = sk__ctx_optional(ctx, SLOT_SCALE);
  char s[SK_SHAPE_STR_MAX];
  if (x->rank != 2 || x->shape[1] < 1)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected rank 2 [N, H] with H >= 1, got %s", op,
                    sk__shape_str(x->rank, x->shape, s, sizeof s));
  if (idx->rank != 2 || idx->shape[0] != x->shape[0] || idx->shape[1] < 1 || idx->shape[0] * idx->shape[1] > MAX_PAIRS)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input expert_idx: expected [%lld, K] (x's rows) with 1 <= N*K <= %lld, got %s",
                    op, (long long)x->shape[0], (long long)MAX_PAIRS, sk__shape_str(idx->rank, idx->shape, s, sizeof s));
  init_params *p = sk__ctx_params(ctx);
  p->n = x->shape[0], p->h = x->shape[1], p->k = idx->shape[1];
  int64_t e, active, type, quant, row_type;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "expert_num", &e));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "active_num", &active));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "expert_tokens_num_type", &type));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "quant_mode", &quant));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "row_idx_type", &row_type));
  if (quant == 0)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute quant_mode: 0 (static) is not supported (use -1 or 1)", op);
  p->lo = 0, p->hi = e;
  const int64_t *range;
  size_t n_range;
  SK_RETURN_IF_ERROR(sk__ctx_attr_ints(ctx, "active_expert_range", &range, &n_range));
  if (n_range) {
    if (n_range != 2 || range[0] < 0 || range[0] >= range[1] || range[1] > e)
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                      "%s: attribute active_expert_range: expected [lo, hi) with 0 <= lo < hi <= expert_num (%lld)", op,
                      (long long)e);
    p->lo = range[0], p->hi = range[1];
  }
  if (scale) {
    if (quant == 1)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input scale: not supported with quant_mode 1 (smooth scales)", op);
    if (scale->dtype != SK_FP32 || scale->rank != 1 || scale->shape[0] != p->n)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input scale: expected fp32 [%lld], got %s %s", op, (long long)p->n,
                      sk_dtype_name(scale->dtype), sk__shape_str(scale->rank, scale->shape, s, sizeof s));
    p->has_scale = true;
  }
  int64_t pairs = p->n * p->k;
  p->rows = active >= 0 && active < pairs ? active : pairs;
  p->count_type = (int)type, p->quant_mode = (int)quant, p->row_idx_type = (int)row_type;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 4, &out));
  sk__tensor_init(&out[OUT_X], quant == 1 ? SK_INT8 : x->dtype, 2, (int64_t[]){p->rows, p->h});
  sk__tensor_init(&out[OUT_ROW_IDX], SK_INT32, 1, (int64_t[]){pairs});
  sk__tensor_init(&out[OUT_TOKENS], SK_INT64, 1, (int64_t[]){p->hi - p->lo});
  sk__tensor_init(&out[OUT_SCALE], SK_FP32, 1, (int64_t[]){p->rows});
  return SK_STATUS_OK;
}

/* The pairs N * K and rows R of this run: the params' planned ones, or
 * under a run-time token count those of the live tokens. R is
 * min(active_num, N * K) (p->rows is that for the planned N), and never
 * more than expanded_x's live rows (the same count in every graph that
 * takes a run-time count: R is then N * K, or active_num <= K fixed). */
typedef struct live_counts {
  int64_t pairs, rows;
} live_counts;

static live_counts live(const sk__node_io *io) {
  const init_params *p = io->params;
  live_counts n = {.pairs = sk__live_rows(io, &io->in[SLOT_X].tensors[0]) * p->k, .rows = p->rows};
  if (n.rows > n.pairs) n.rows = n.pairs;
  const int64_t out_rows = sk__live_rows(io, &io->out[OUT_X]);
  if (n.rows > out_rows) n.rows = out_rows;
  return n;
}

/* ---- the sort, shared by the reference and the kernel ---- */

/* sorted[0 .. A) (returned): the first `pairs` pairs of active experts by
 * expert, stably; count (hi - lo + 1 entries) ends as each expert's first
 * row. */
static int64_t sort_pairs(const init_params *p, int64_t pairs, const int32_t *idx, int32_t *sorted, int64_t *count) {
  const int64_t span = p->hi - p->lo;
  memset(count, 0, (size_t)(span + 1) * sizeof *count);
  for (int64_t i = 0; i < pairs; i++)
    if (idx[i] >= p->lo && idx[i] < p->hi) count[idx[i] - p->lo + 1]++;
  for (int64_t e = 0; e < span; e++) count[e + 1] += count[e];
  int64_t available = count[span];
  for (int64_t i = 0; i < pairs; i++)
    if (idx[i] >= p->lo && idx[i] < p->hi) sorted[count[idx[i] - p->lo]++] = (int32_t)i;
  /* count[e] is now expert e's end, which is expert e + 1's first row. */
  return available;
}

/* Dynamic int8 of one fp32 row (the rule at the top); returns its scale. */
static float quantize_row(const float *v, int64_t h, int8_t *q) {
  float m = 0.0f;
  for (int64_t j = 0; j < h; j++) {
    float a = fabsf(v[j]);
    m = a > m ? a : m; /* a NaN compares false: ignored */
  }
  if (m == 0.0f) {
    memset(q, 0, (size_t)h);
    return 0.0f;
  }
  float s = m / 127.0f;
  for (int64_t j = 0; j < h; j++) {
    float r = rintf(v[j] / s);
    q[j] = r != r ? 0 : r > 127.0f ? 127 : r < -128.0f ? -128 : (int8_t)r;
  }
  return s;
}

/* The dynamic rule the kernel runs: SIMD, the same bits (int8_quantize.h). */
static float quantize_row_fast(const float *v, int64_t h, int8_t *q) {
  float s;
  sk__int8_quantize_dynamic(v, h, q, &s);
  return s;
}

/* How route converts and quantizes rows: the reference's plain forms, or
 * the kernel's SIMD ones, which also copy a row whose token is the previous
 * row's (a decode step: one token, K rows) instead of quantizing it again. */
typedef struct row_ops {
  sk__convert_fn convert;
  float (*quantize)(const float *v, int64_t h, int8_t *q);
  bool reuse;
  sk__isa isa;
} row_ops;

/* Destination rows [d0, d1) (within the live R) and, with whole, the index
 * outputs. scratch: N*K int32 + (hi - lo + 1) int64 + H floats (planned N;
 * the live pairs use its start). */
static void route(const sk__node_io *io, int64_t d0, int64_t d1, bool whole, void *scratch, const row_ops *ops) {
  const init_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const int32_t *idx = io->in[SLOT_EXPERT_IDX].tensors[0].data;
  const int64_t pairs = live(io).pairs, span = p->hi - p->lo;
  int32_t *sorted = scratch;
  int64_t *count = (int64_t *)(void *)((char *)scratch + ((size_t)(p->n * p->k) * 4 + 7) / 8 * 8);
  float *row = (float *)(void *)(count + span + 1);
  const int64_t available = sort_pairs(p, pairs, idx, sorted, count);
  const size_t xs = sk_dtype_size(x->dtype), out_es = sk_dtype_size(io->out[OUT_X].dtype);
  float *scale_out = io->out[OUT_SCALE].data;
  const float *scale_in = p->has_scale ? io->in[SLOT_SCALE].tensors[0].data : NULL;
  int64_t last_token = -1; /* whose row is at d - 1, written by this call */
  for (int64_t d = d0; d < d1; d++) {
    char *dst = (char *)io->out[OUT_X].data + (size_t)(d * p->h) * out_es;
    if (d >= available) {
      memset(dst, 0, (size_t)p->h * out_es);
      scale_out[d] = 0.0f;
      continue;
    }
    const int64_t token = sorted[d] / p->k;
    const char *src = (const char *)x->data + (size_t)(token * p->h) * xs;
    if (p->quant_mode == 1 && ops->reuse && token == last_token) {
      memcpy(dst, dst - (size_t)p->h, (size_t)p->h);
      scale_out[d] = scale_out[d - 1];
    } else if (p->quant_mode == 1) {
      ops->convert(src, x->dtype, row, SK_FP32, (size_t)p->h, ops->isa);
      scale_out[d] = ops->quantize(row, p->h, (int8_t *)dst);
    } else {
      memcpy(dst, src, (size_t)p->h * xs);
      scale_out[d] = scale_in ? scale_in[token] : 0.0f;
    }
    last_token = token;
  }
  if (!whole) return;
  int32_t *row_idx = io->out[OUT_ROW_IDX].data;
  for (int64_t i = 0; i < pairs; i++) row_idx[i] = -1;
  for (int64_t d = 0; d < available; d++) {
    if (p->row_idx_type == 0) row_idx[sorted[d]] = (int32_t)d;
    else row_idx[d] = sorted[d];
  }
  int64_t *tokens = io->out[OUT_TOKENS].data;
  for (int64_t e = 0; e < span; e++) {
    int64_t first = e == 0 ? 0 : count[e - 1], end = count[e];
    tokens[e] = p->count_type == 0 ? end : end - first;
  }
}

static size_t scratch_bytes(const init_params *p) {
  return ((size_t)(p->n * p->k) * 4 + 7) / 8 * 8 + (size_t)(p->hi - p->lo + 1) * 8 + (size_t)p->h * sizeof(float);
}

static void reference(const sk__node_io *io) {
  const init_params *p = io->params;
  void *scratch = malloc(scratch_bytes(p));
  if (!scratch) return; /* the oracle of tests only */
  const row_ops plain = {sk__convert_reference_isa, quantize_row, false, SK_ISA_SCALAR};
  route(io, 0, p->rows, true, scratch, &plain);
  free(scratch);
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const init_params *p = io->params;
  /* At least 1 block, so block 0 writes the index outputs even when R = 0. */
  int64_t rows = p->rows > 0 ? p->rows : 1;
  int64_t min_rows = p->h >= 4096 ? 4 : 16384 / p->h;
  *out = sk__flat_tiling(rows, sk__flat_block_size(rows, n_cores, 1, min_rows));
  out->workspace_bytes = scratch_bytes(p);
  return SK_STATUS_OK;
}

/* Block b writes its rows of expanded_x and expanded_scale; block 0 the
 * index outputs. What it reads of x depends on the ids: all of it. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const init_params *p = io->params;
  (void)reads;
  int64_t d0, d1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &d0, &d1);
  const int64_t row_bytes = p->h * (int64_t)sk_dtype_size(io->out[OUT_X].dtype);
  writes[OUT_X] = (sk__span){d0 * row_bytes, d1 * row_bytes};
  writes[OUT_SCALE] = (sk__span){d0 * 4, d1 * 4};
  if (block != 0) writes[OUT_ROW_IDX] = writes[OUT_TOKENS] = (sk__span){0, 0};
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const init_params *p = io->params;
  int64_t d0, d1;
  sk__flat_block_range(p->rows, io->n_blocks, block, &d0, &d1);
  sk__clip(&d0, &d1, live(io).rows);
  /* Block 0 writes the index outputs even when no live row is its own. */
  if (d0 == d1 && block != 0) return;
  const row_ops fast = {sk__convert, quantize_row_fast, true, io->isa};
  route(io, d0, d1, block == 0, workspace, &fast);
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_moe_init_routing = {
    .type = "moe_init_routing",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "tokens sorted by expert (npu_moe_init_routing_v2, dropless): expanded rows, the row index map, "
           "per-expert counts for grouped_matmul's group_list, optional dynamic int8",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .dynamic_rows = true, /* routes the live tokens' pairs only */
    .params_size = sizeof(init_params),
};

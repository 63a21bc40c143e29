/* moe_gating_topk: tiling and the fast kernel, in the arithmetic order fixed
 * at the top of moe_gating_topk.c.
 *
 * A block is a range of rows: about one block per core (at least 4 rows
 * each), or, when enough rows are shared by several cores, about eight a
 * core for them to claim (sk__moe_tile). Per row, the norm is built in
 * place in the row of `out`: widening and exp / sigmoid through the SIMD
 * converters and activation arrays, the max and the sixteen partial sums as
 * loops over 16 independent lanes (vectorized on the baseline ISA without
 * reassociating anything). The selection (kernels/moe): on AVX-512 the few
 * candidates at or above the floor (below) ranked at once (sk__moe_pick);
 * otherwise a sorted list of the k best so far, whose SIMD paths compare a
 * vector of scores with the current k-th best and insert only the lanes
 * that beat it. Above INSERT_MAX winners the candidates are sorted instead
 * (insertion would cost E * k).
 *
 * Sigmoid of fp16 / bf16 x is a lookup: x has 65536 possible values, so the
 * norm of each is computed once per process (a table of 256 KiB per dtype,
 * built by the very widening and sk__sigmoidf_array the direct path uses,
 * so the bits are the same), read for the whole block by a loop of loads.
 *
 * The expert scan gets a floor when the group step already knows k values
 * of the kept groups (their tops): no expert below the least of them can be
 * among the k best, so only the few at or above it are offered. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/cpu.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "kernels/moe/moe_select.h"
#include "ops/moe_gating_topk.h"
#include "ops/op_util.h"
#include "ops/row_reduce.h"

/* Above this many winners, sort the candidates instead of inserting. */
#define INSERT_MAX 64

static int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

/* y is kept in fp32 for whole rows up to this many values, then converted
 * to x's dtype at once (a call per row cost more than the conversion). */
#define Y_CHUNK 256

typedef struct { float v; int32_t i; } cand;

/* Workspace layout, per core (every region keeps the next one aligned). */
typedef struct row_scratch {
  float *bias, *v, *score, *second, *list_v, *y;
  int32_t *list_i;
  unsigned char *kept;
  cand *cands;
} row_scratch;

static size_t scratch_layout(const moe_params *p, void *base, row_scratch *s) {
  int64_t e = pad16(p->e), g = pad16(p->group_count), k = pad16(p->k > p->k_group ? p->k : p->k_group);
  char *at = base;
  size_t off = 0;
#define TAKE(field, type, count)                                      \
  do {                                                                \
    if (s) s->field = (type *)(void *)(at + off);                     \
    off += (size_t)(count) * sizeof(type);                            \
  } while (0)
  TAKE(bias, float, e);
  TAKE(v, float, e);
  TAKE(score, float, g);
  TAKE(second, float, g);
  TAKE(list_v, float, k);
  TAKE(y, float, k > Y_CHUNK ? k : Y_CHUNK);
  TAKE(list_i, int32_t, k);
  TAKE(kept, unsigned char, g);
  TAKE(cands, cand, e);
#undef TAKE
  return off;
}

/* Blocks a core, about, when several cores share the rows: claimed, so a
 * core the machine runs slower takes fewer, and a block starts as soon as
 * the producer tiles of its rows are done. At least CLAIM_MIN_ROWS rows a
 * block (each block widens the bias again). */
#define CLAIM_BLOCKS_PER_CORE 8
#define CLAIM_MIN_ROWS 8

sk_status sk__moe_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const moe_params *p = io->params;
  int64_t claimed = sk__flat_block_size(p->t, n_cores * CLAIM_BLOCKS_PER_CORE, 1, CLAIM_MIN_ROWS);
  if (n_cores > 1 && sk__ceil_div(p->t, claimed) > n_cores) {
    *out = sk__flat_tiling(p->t, claimed);
    out->claim = true;
  } else {
    *out = sk__flat_tiling(p->t, sk__flat_block_size(p->t, n_cores, 1, 4));
  }
  out->workspace_bytes = scratch_layout(p, NULL, NULL);
  return SK_STATUS_OK;
}

/* A block reads its rows of x (and the whole bias) and writes its rows of
 * y, expert_idx and out (the planner's footprint). */
void sk__moe_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const moe_params *p = io->params;
  int64_t r0, r1, es = (int64_t)sk_dtype_size(p->dtype);
  sk__flat_block_range(p->t, io->n_blocks, block, &r0, &r1);
  reads[sk__io_input_index(io, MOE_X, 0)] = (sk__span){r0 * p->e * es, r1 * p->e * es};
  writes[MOE_Y] = (sk__span){r0 * p->k * es, r1 * p->k * es};
  writes[MOE_IDX] = (sk__span){r0 * p->k * 4, r1 * p->k * 4};
  writes[MOE_OUT] = (sk__span){r0 * p->e * 4, r1 * p->e * 4};
}

/* ---- norm ----------------------------------------------------------------- */

/* norm of one row into `norm` (the row of out), x row in the op's dtype. */
static void norm_row(const moe_params *p, const void *x, float *norm, sk__isa isa) {
  int64_t n = p->e;
  const float *xf = x;
  if (p->dtype != SK_FP32) {
    sk__convert(x, p->dtype, norm, SK_FP32, (size_t)n, isa);
    xf = norm;
  }
  if (p->norm_type == 1) {
    sk__sigmoidf_array(xf, norm, (size_t)n, isa);
    return;
  }
  float m = sk__max_lanes(xf, n);
  for (int64_t e = 0; e < n; e++) norm[e] = xf[e] - m;
  sk__expf_array(norm, norm, (size_t)n, isa);
  float s = sk__sum_lanes(norm, n);
  if (s != s) s = sk__canonical_nan();
  for (int64_t e = 0; e < n; e++) norm[e] = norm[e] / s;
}

/* ---- sigmoid tables for the 16-bit dtypes --------------------------------- */

static float sigmoid_fp16[65536], sigmoid_bf16[65536];
static pthread_once_t once_fp16 = PTHREAD_ONCE_INIT, once_bf16 = PTHREAD_ONCE_INIT;

/* table[c] = the norm norm_row gives the code c of dtype: widened by
 * sk__convert, then sk__sigmoidf_array (bitwise the same on every ISA). */
static void build_table(float *table, sk_dtype dtype) {
  uint16_t code[4096];
  sk__isa isa = sk__cpu_isa();
  for (uint32_t c0 = 0; c0 < 65536; c0 += 4096) {
    for (uint32_t j = 0; j < 4096; j++) code[j] = (uint16_t)(c0 + j);
    sk__convert(code, dtype, table + c0, SK_FP32, 4096, isa);
    sk__sigmoidf_array(table + c0, table + c0, 4096, isa);
  }
}
static void build_fp16(void) { build_table(sigmoid_fp16, SK_FP16); }
static void build_bf16(void) { build_table(sigmoid_bf16, SK_BF16); }

/* The lookup table for p, or NULL (softmax, or fp32 x). */
static const float *sigmoid_table(const moe_params *p) {
  if (p->norm_type != 1) return NULL;
  if (p->dtype == SK_FP16) return pthread_once(&once_fp16, build_fp16), sigmoid_fp16;
  if (p->dtype == SK_BF16) return pthread_once(&once_bf16, build_bf16), sigmoid_bf16;
  return NULL;
}

/* norm[e] = table[code[e]]: a plain loop of loads, measured faster than
 * vector gathers of 8 or 16 on AMD Zen 5 (Intel cores with the GDS
 * microcode mitigation are known to run gathers slower still). */
static void look_up(const float *table, const uint16_t *code, float *norm, int64_t n) {
#pragma GCC unroll 8
  for (int64_t e = 0; e < n; e++) norm[e] = table[code[e]];
}

/* ---- selection ------------------------------------------------------------ */

static int cand_order(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->v != y->v) return x->v > y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* The k best of val over the ranges [g * size, (g + 1) * size) of the groups
 * with keep[g] (keep NULL: one range [0, n_groups * size)). */
static void top_k(const float *val, int64_t n_groups, int64_t size, const unsigned char *keep, int64_t k,
                  float floor, sk__moe_list *out, cand *cands, sk__isa isa) {
  if (!keep) size *= n_groups, n_groups = 1;
  out->n = 0;
  out->k = k;
  if (k <= INSERT_MAX) {
    if (keep)
      sk__moe_scan_groups(out, val, size, n_groups, keep, floor, isa);
    else
      sk__moe_scan(out, val, 0, size, floor, isa);
    return;
  }
  int64_t n = 0;
  for (int64_t g = 0; g < n_groups; g++)
    if (!keep || keep[g])
      for (int64_t e = g * size; e < (g + 1) * size; e++) cands[n++] = (cand){val[e], (int32_t)e};
  qsort(cands, (size_t)n, sizeof *cands, cand_order);
  for (int64_t j = 0; j < k; j++) out->v[j] = cands[j].v, out->i[j] = cands[j].i;
  out->n = k;
}

static bool grouped(const moe_params *p) { return p->group_count > 1 && p->k_group < p->group_count; }

/* Selection of one row from its scores v and (grouped) its group scores
 * (s->score, s->second). */
static void select_row(const moe_params *p, const float *v, row_scratch *s, int32_t *idx, sk__isa isa) {
  const unsigned char *keep = NULL;
  sk__moe_list l = {s->list_v, s->list_i, 0, 0};
  float floor = -INFINITY;
  if (grouped(p)) {
    int mode = p->group_select_mode;
    if (p->group_count <= SK_MOE_KEEP_RANKED) {
      sk__moe_keep_groups(s->score, p->group_count, p->k_group, s->kept, isa);
    } else {
      top_k(s->score, 1, p->group_count, NULL, p->k_group, -INFINITY, &l, s->cands, isa);
      for (int64_t g = 0; g < p->group_count; g++) s->kept[g] = 0;
      for (int64_t j = 0; j < p->k_group; j++) s->kept[l.i[j]] = 1;
    }
    keep = s->kept;
    /* The floor: each kept group holds its top1 (mode 0: its score) and,
     * in mode 1, its top2 (second): k_group or 2 k_group distinct experts
     * at or above the least of those values; enough when that is >= k. */
    const float *tops = mode == 0 ? (p->k <= p->k_group ? s->score : NULL)
                                  : (p->k <= 2 * p->k_group ? s->second : NULL);
    if (tops) {
      floor = INFINITY;
      for (int64_t g = 0; g < p->group_count; g++)
        if (s->kept[g]) floor = tops[g] < floor ? tops[g] : floor;
    }
  }
  if (keep && sk__moe_pick(v, p->group_size, p->group_count, keep, floor, p->k, idx, isa)) return;
  top_k(v, p->group_count, p->group_size, keep, p->k, floor, &l, s->cands, isa);
  for (int64_t j = 0; j < p->k; j++) idx[j] = l.i[j];
}

/* ---- the block ------------------------------------------------------------ */

void sk__moe_run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const moe_params *p = io->params;
  int64_t r0, r1, n = p->e, k = p->k;
  if (!sk__moe_block_rows(io, block, &r0, &r1)) return;
  row_scratch s;
  scratch_layout(p, workspace, &s);
  sk__isa isa = io->isa;
  size_t es = sk_dtype_size(p->dtype);
  if (p->has_bias) sk__convert(io->in[MOE_BIAS].tensors[0].data, p->dtype, s.bias, SK_FP32, (size_t)n, isa);
  /* The whole block's norms first: row by row, the vector loads of the
   * scores would read a row just written by scalar stores, which no store
   * forwarding serves (measured 2x slower). */
  const float *table = sigmoid_table(p);
  if (table)
    look_up(table, (const uint16_t *)io->in[MOE_X].tensors[0].data + r0 * n, (float *)io->out[MOE_OUT].data + r0 * n,
            (r1 - r0) * n);
  int64_t chunk_rows = k > Y_CHUNK ? 1 : Y_CHUNK / k, chunk_start = r0;
  for (int64_t t = r0; t < r1; t++) {
    float *norm = (float *)io->out[MOE_OUT].data + t * n;
    int32_t *idx = (int32_t *)io->out[MOE_IDX].data + t * k;
    const char *xr = (const char *)io->in[MOE_X].tensors[0].data + (size_t)(t * n) * es;
    if (!table) norm_row(p, xr, norm, isa);
    const float *bias = p->has_bias ? s.bias : NULL;
    if (grouped(p))
      sk__moe_scores_grouped(bias, norm, s.v, p->group_size, p->group_count, p->group_select_mode, s.score,
                             s.second, isa);
    else
      sk__moe_scores(bias, norm, s.v, n, isa);
    select_row(p, s.v, &s, idx, isa);
    float *y = s.y + (t - chunk_start) * k;
    for (int64_t j = 0; j < k; j++) y[j] = norm[idx[j]];
    if (p->norm_type != 0 || p->renorm != 0) {
      float sum = 0.0f;
      for (int64_t j = 0; j < k; j++) sum = sum + y[j];
      float d = sum + p->eps;
      for (int64_t j = 0; j < k; j++) y[j] = y[j] / d;
    }
    for (int64_t j = 0; j < k; j++) {
      y[j] = y[j] * p->routed_scaling_factor;
      if (y[j] != y[j]) y[j] = sk__canonical_nan();
    }
    if (t + 1 == r1 || t + 1 - chunk_start == chunk_rows) {
      sk__convert(s.y, SK_FP32, (char *)io->out[MOE_Y].data + (size_t)(chunk_start * k) * es, p->dtype,
                  (size_t)((t + 1 - chunk_start) * k), isa);
      chunk_start = t + 1;
    }
  }
}

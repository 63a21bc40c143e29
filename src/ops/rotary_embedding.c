/* rotary_embedding(q, k, positions; ...) -> q_out, k_out: RoPE as
 * transformers applies it (apply_rotary_pos_emb with its rotary embedding
 * classes' cos / sin: default, linear and YaRN inv_freq and YaRN's
 * attention factor).
 *
 *   q [T, Hq, D], k [T, Hk, D] fp32 / fp16 / bf16 (one dtype), positions
 *   int32 / int64 [T] -> q_out, k_out (q's and k's shapes, the dtype)
 *
 * The cos / sin table [max_positions, R / 2] (R = rotary_dim) is made once,
 * at compile (the op's pack), by rope_table_row below: fp32 inv_freq as
 * transformers computes it, angle = inv_freq[i] * (float)pos (one fp32
 * product), cos and sin of that angle in double rounded to fp32 (so the
 * table does not depend on the ISA), times the attention factor in fp32.
 * Per pair (x1, x2) of a head — neox: (i, i + R/2), interleaved: (2i, 2i+1)
 * — in fp32, products rounded before they are added (never fused):
 *   out1 = round(x1 * c - x2 * s),  out2 = round(x2 * c + x1 * s)
 * and the dims from R on are copied. A position outside [0, max_positions)
 * fails the run naming it; every block checks all the live positions
 * before it writes. The reference computes the same table entries with the
 * same function, element by element. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/convert/convert.h"
#include "ops/index_input.h"
#include "ops/op_util.h"
#include "ops/rope_freq.h"

enum { SLOT_Q, SLOT_K, SLOT_POS };
enum { OUT_Q, OUT_K };

/* Positions are exact in fp32 below 2^24; the table stays within 1 GiB
 * (a 1 M-position context of rotary_dim 128 needs 512 MiB). */
#define MAX_POSITIONS ((int64_t)1 << 24)
#define MAX_TABLE_BYTES ((int64_t)1 << 30)

static const sk_op_slot_info inputs[] = {
    SK__IN("q", "[T, Hq, D] fp32, fp16 or bf16", .dtypes = SK__FLOATS, SK__RANK(3, 3)),
    SK__IN("k", "[T, Hk, D], q's dtype", SK__SAME_DTYPE_AS(SLOT_Q), SK__RANK(3, 3)),
    SK__IN("positions", "int32 or int64 [T]: each token's position, in [0, max_positions) (checked when the op runs)",
           .dtypes = SK_DTYPE_BIT(SK_INT32) | SK_DTYPE_BIT(SK_INT64), SK__RANK(1, 1)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT_REQUIRED("max_positions", 1, MAX_POSITIONS, "rows of the cos / sin table (positions it serves)"),
    SK__ATTR_INT_DERIVED("rotary_dim", 2, ROPE_MAX_DIM, "even, at most D: the rotated dims of each head; default D"),
    SK__ATTR_INT("layout", 0, 0, 1, "pairs: 0 neox (i, i + rotary_dim/2: rotate_half), 1 interleaved (2i, 2i+1: GPT-J)"),
    SK__ATTR_FLOAT("theta", 10000.0, "rope_theta, the base (> 1)"),
    SK__ATTR_INT("scaling_type", 0, 0, 2, "0 none (default), 1 linear, 2 yarn"),
    SK__ATTR_FLOAT("factor", 1.0, "linear / yarn: the scaling factor (>= 1)"),
    SK__ATTR_INT("original_max_positions", 0, 0, MAX_POSITIONS, "yarn: original_max_position_embeddings (> 0)"),
    SK__ATTR_FLOAT("beta_fast", 32.0, "yarn: beta_fast"),
    SK__ATTR_FLOAT("beta_slow", 1.0, "yarn: beta_slow"),
    SK__ATTR_FLOAT("mscale", 0.0, "yarn: mscale (with mscale_all_dim: their ratio is the attention factor)"),
    SK__ATTR_FLOAT("mscale_all_dim", 0.0, "yarn: mscale_all_dim"),
    SK__ATTR_FLOAT("attention_factor", 0.0, "yarn: multiplies cos and sin; 0: derived as transformers does"),
    SK__ATTR_INT("truncate", 1, 0, 1, "yarn: 1 floor / ceil the correction range (transformers' default)"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("q_out", "q's shape and dtype: rotated"),
    SK__OUT("k_out", "k's shape and dtype: rotated"),
};

/* The attributes as rope_freq.h takes them, with the op's messages. */
static sk_status read_config(sk__build_ctx *ctx, int64_t d, rope_config *c) {
  const char *op = sk__ctx_op(ctx);
  int64_t v;
  memset(c, 0, sizeof *c);
  c->rotary_dim = d;
  if (sk__ctx_has_attr(ctx, "rotary_dim")) SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "rotary_dim", &c->rotary_dim));
  if (c->rotary_dim % 2 || c->rotary_dim > d)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute rotary_dim: expected an even value <= %lld (D), got %lld",
                    op, (long long)d, (long long)c->rotary_dim);
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "layout", &v));
  c->interleaved = v == 1;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "scaling_type", &v));
  c->scaling = (int)v;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "max_positions", &c->max_positions));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "original_max_positions", &c->original_max_positions));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "truncate", &v));
  c->truncate = v == 1;
  static const char *const floats[] = {"theta", "factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                                       "attention_factor"};
  double *dst[] = {&c->theta, &c->factor, &c->beta_fast, &c->beta_slow, &c->mscale, &c->mscale_all_dim,
                   &c->attention_factor};
  for (size_t i = 0; i < SK__COUNT(floats); i++) SK_RETURN_IF_ERROR(sk__ctx_attr_float(ctx, floats[i], dst[i]));
  char why[160];
  if (!sk__rope_config_check(c, why, sizeof why))
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: %s", op, why);
  if (c->max_positions * c->rotary_dim * 4 > MAX_TABLE_BYTES)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute max_positions: a table of %lld x %lld floats is past 1 GiB", op,
                    (long long)c->max_positions, (long long)c->rotary_dim);
  return SK_STATUS_OK;
}

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *q, *k, *pos;
  char s1[SK_SHAPE_STR_MAX], s2[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_Q, &q));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_K, &k));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_POS, &pos));
  const int64_t t = q->shape[0], d = q->shape[2];
  if (d < 2 || d > ROPE_MAX_DIM)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input q: expected [T, Hq, D] with 2 <= D <= %d, got %s", op,
                    ROPE_MAX_DIM, sk__shape_str(q->rank, q->shape, s1, sizeof s1));
  if (k->shape[0] != t || k->shape[2] != d)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input k: expected [%lld, Hk, %lld] (q's T and D), got %s", op,
                    (long long)t, (long long)d, sk__shape_str(k->rank, k->shape, s2, sizeof s2));
  if (pos->shape[0] != t)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input positions: expected [%lld] (q's T), got %s", op, (long long)t,
                    sk__shape_str(pos->rank, pos->shape, s2, sizeof s2));
  rope_params *p = sk__ctx_params(ctx);
  SK_RETURN_IF_ERROR(read_config(ctx, d, &p->c));
  p->t = t, p->hq = q->shape[1], p->hk = k->shape[1], p->d = d, p->dtype = q->dtype;
  sk__rope_inv_freq(&p->c, p->inv_freq, &p->attention_factor);
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 2, &out));
  sk__tensor_init(&out[OUT_Q], q->dtype, 3, q->shape);
  sk__tensor_init(&out[OUT_K], k->dtype, 3, k->shape);
  return SK_STATUS_OK;
}

/* Whether the n live positions are all rows of the table; else the run
 * error, naming the first bad one, before anything is read through them. */
static bool positions_valid(const sk__node_io *io, int64_t n) {
  const rope_params *p = io->params;
  return sk__indices_in_range(io, &io->in[SLOT_POS].tensors[0], n, p->c.max_positions,
                              "%s (rotary_embedding): positions[%lld] = %lld is out of range for max_positions %lld");
}

/* One head row v (fp32, D values) rotated into w with the position's
 * cos / sin (R / 2 each): the rule at the top. */
static void rotate(const rope_params *p, const float *v, const float *cs, float *w) {
  const int64_t half = p->c.rotary_dim / 2, step = p->c.interleaved ? 1 : half, stride = p->c.interleaved ? 2 : 1;
  for (int64_t i = 0; i < half; i++) {
    const int64_t a = i * stride, b = a + step;
    const float c = cs[i], s = cs[half + i];
    float x1c = v[a] * c, x2s = v[b] * s, x2c = v[b] * c, x1s = v[a] * s;
    w[a] = x1c - x2s;
    w[b] = x2c + x1s;
  }
  for (int64_t j = p->c.rotary_dim; j < p->d; j++) w[j] = v[j];
}

/* The tokens [t0, t1) of both tensors; cs_of gives a token's cos / sin
 * row (the packed table's, or made into scratch). */
static void tokens(const sk__node_io *io, int64_t t0, int64_t t1, float *scratch, sk__convert_fn convert) {
  const rope_params *p = io->params;
  const float *table = io->packed;
  const sk__tensor *pos = &io->in[SLOT_POS].tensors[0];
  const size_t es = sk_dtype_size(p->dtype), d = (size_t)p->d, r = (size_t)p->c.rotary_dim;
  float *v = scratch, *w = v + d, *cs = w + d;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t at = sk__index_at(pos, t);
    const float *row = cs;
    if (table) row = table + (size_t)at * r;
    else sk__rope_table_row(&p->c, p->inv_freq, p->attention_factor, at, cs);
    for (int which = 0; which < 2; which++) {
      const int64_t heads = which ? p->hk : p->hq;
      const char *x = io->in[which ? SLOT_K : SLOT_Q].tensors[0].data;
      char *y = io->out[which ? OUT_K : OUT_Q].data;
      for (int64_t h = 0; h < heads; h++) {
        const size_t off = ((size_t)(t * heads + h)) * d * es;
        convert(x + off, p->dtype, v, SK_FP32, d, io->isa);
        rotate(p, v, row, w);
        convert(w, SK_FP32, y + off, p->dtype, d, io->isa);
      }
    }
  }
}

static size_t scratch_bytes(const rope_params *p) { return (size_t)(2 * p->d + p->c.rotary_dim) * sizeof(float); }

static void reference(const sk__node_io *io) {
  const rope_params *p = io->params;
  const int64_t n = sk__live_rows(io, &io->in[SLOT_POS].tensors[0]);
  if (!positions_valid(io, n)) return;
  float *scratch = malloc(scratch_bytes(p));
  if (!scratch) return; /* the oracle of tests only: they see the outputs untouched */
  sk__node_io plain = *io;
  plain.packed = NULL; /* the reference makes every entry itself */
  tokens(&plain, 0, n, scratch, sk__convert_reference_isa);
  free(scratch);
}

/* Blocks of tokens, at least 16 K values each. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const rope_params *p = io->params;
  *out = sk__row_tiling(p->t, (p->hq + p->hk) * p->d, n_cores, 16384);
  out->workspace_bytes = scratch_bytes(p);
  return SK_STATUS_OK;
}

/* The table, once: max_positions rows of R floats (R / 2 cos, then R / 2
 * sin), from no input (the attributes alone). */
static sk_status pack(const sk__node_io *io, void **packed, size_t *bytes) {
  const rope_params *p = io->params;
  const size_t r = (size_t)p->c.rotary_dim, n = (size_t)p->c.max_positions * r * sizeof(float);
  float *table = sk__aligned_alloc(n);
  if (!table) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s (rotary_embedding): out of memory for its cos / sin table "
                              "(%zu bytes)", io->name ? io->name : "node", n);
  for (int64_t at = 0; at < p->c.max_positions; at++)
    sk__rope_table_row(&p->c, p->inv_freq, p->attention_factor, at, table + (size_t)at * r);
  *packed = table;
  *bytes = n;
  return SK_STATUS_OK;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const rope_params *p = io->params;
  const int64_t n = sk__live_rows(io, &io->in[SLOT_POS].tensors[0]);
  int64_t t0, t1;
  sk__flat_block_range(p->t, io->n_blocks, block, &t0, &t1);
  sk__clip(&t0, &t1, n);
  if (t0 < t1 && positions_valid(io, n)) tokens(io, t0, t1, workspace, sk__convert);
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_rotary_embedding = {
    .type = "rotary_embedding",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "RoPE of q and k at run-time positions (transformers' apply_rotary_pos_emb): neox or interleaved pairs, "
           "partial rotary_dim, default / linear / YaRN frequencies from a table made at compile",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .pack = pack,
    .params_size = sizeof(rope_params),
    .dynamic_rows = true, /* per token: a block computes its live tokens only */
};

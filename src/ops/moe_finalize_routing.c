/* moe_finalize_routing (torch_npu's npu_moe_finalize_routing): the experts'
 * output rows combined back into tokens, weighted, plus the residuals.
 *
 *   expanded_permuted_rows [R, H] fp32 / fp16 / bf16
 *   skip1?, skip2? [N, H] (the rows' dtype)    bias? [E, H] (the rows' dtype)
 *   scales? [N, K] (fp32 or the rows' dtype)
 *   expanded_src_to_dst_row int32 [N*K]        export_for_source_row? int32 [N, K]
 *   -> y [N, H], the rows' dtype
 *
 * Pair (n, k) is entry i of expanded_src_to_dst_row: i = k * N + n with
 * drop_pad_mode 0 (torch_npu's column order), i = n * K + k with 2 (the
 * order moe_init_routing writes). Per element, in fp32 (docs/ops.md):
 *
 *   acc = skip1[n, h] (0 when absent); acc = acc + skip2[n, h] (if given)
 *   for k = 0 .. K-1, in order, with d = expanded_src_to_dst_row[i(n, k)]:
 *     d == -1: nothing (a pair moe_init_routing left out)
 *     r = rows[d, h];  r = r + bias[e, h] with e = export_for_source_row[n, k]
 *     acc = acc + scales[n, k] * r            (scale 1 when absent)
 *   y = round(acc), a NaN acc stored as the canonical quiet NaN
 *
 * Products are rounded before they are added (never fused). d outside
 * [-1, R) or e outside [0, E) is run-time data the graph cannot check: the
 * run fails naming the node, the entry and its value.
 *
 * A run-time token count (op.h): y, skip1, skip2, scales,
 * export_for_source_row and the map follow the tokens, the rows R = N * K
 * too (or stay static); N and R are then the live ones (live_counts), in
 * the pair order and in the check of d, as a program built for them. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/run_error.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

/* The required slots first (front ends give optional inputs defaults, which
 * cannot precede a required one); torch_npu's order otherwise. */
enum { SLOT_ROWS, SLOT_SRC_TO_DST, SLOT_SKIP1, SLOT_SKIP2, SLOT_BIAS, SLOT_SCALES, SLOT_EXPERT };

typedef struct finalize_params {
  int64_t n, k, h, r, e; /* tokens, slots, hidden, rows, experts (bias rows) */
  int order;             /* 0: i = k * N + n; 2: i = n * K + k */
} finalize_params;

static const sk_op_slot_info inputs[] = {
    SK__IN("expanded_permuted_rows", "[R, H] fp32, fp16 or bf16: the experts' outputs, in moe_init_routing's order",
           .dtypes = SK__FLOATS, SK__RANK(2, 2)),
    SK__IN("expanded_src_to_dst_row", "int32 [N*K]: each pair's row, -1 for none", .dtypes = SK__DTYPES1(SK_INT32),
           SK__RANK(1, 1)),
    SK__IN_OPT("skip1", "[N, H], the rows' dtype: added first (a residual)", SK__SAME_DTYPE_AS(SLOT_ROWS)),
    SK__IN_OPT("skip2", "[N, H], the rows' dtype: added second (e.g. the shared expert's output)",
               SK__SAME_DTYPE_AS(SLOT_ROWS)),
    SK__IN_OPT("bias", "[E, H], the rows' dtype: each expert's bias, added to its rows", SK__SAME_DTYPE_AS(SLOT_ROWS)),
    SK__IN_OPT("scales", "[N, K], fp32 or the rows' dtype: the routing weights", .dtypes = SK__FLOATS),
    SK__IN_OPT("export_for_source_row", "int32 [N, K]: each pair's expert (needed with bias)",
               .dtypes = SK__DTYPES1(SK_INT32)),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("drop_pad_mode", 0, 0, 2, "pair order of expanded_src_to_dst_row: 0 column (k * N + n), 2 row (n * K + k)"),
    SK__ATTR_INT("k", 1, 1, 1024, "slots per token K when neither scales nor export_for_source_row gives it"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "[N, H], the rows' dtype")};

static sk_status need(const char *op, int slot, const sk__tensor *t, sk_dtype d1, sk_dtype d2, int64_t a, int64_t b) {
  char s[SK_SHAPE_STR_MAX];
  bool dtype_ok = t->dtype == d1 || t->dtype == d2;
  bool shape_ok = t->rank == (b < 0 ? 1 : 2) && t->shape[0] == a && (b < 0 || t->shape[1] == b);
  if (dtype_ok && shape_ok) return SK_STATUS_OK;
  char want[64];
  if (b < 0) snprintf(want, sizeof want, "[%lld]", (long long)a);
  else snprintf(want, sizeof want, "[%lld, %lld]", (long long)a, (long long)b);
  return sk__fail(dtype_ok ? SK_STATUS_INVALID_SHAPE : SK_STATUS_INVALID_DTYPE, "%s: input %s: expected %s%s%s %s, got %s %s",
                  op, inputs[slot].name, sk_dtype_name(d1), d2 != d1 ? " or " : "", d2 != d1 ? sk_dtype_name(d2) : "", want,
                  sk_dtype_name(t->dtype), sk__shape_str(t->rank, t->shape, s, sizeof s));
}

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *rows, *map;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_ROWS, &rows));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_SRC_TO_DST, &map));
  const sk__tensor *skip1 = sk__ctx_optional(ctx, SLOT_SKIP1), *skip2 = sk__ctx_optional(ctx, SLOT_SKIP2);
  const sk__tensor *bias = sk__ctx_optional(ctx, SLOT_BIAS), *scales = sk__ctx_optional(ctx, SLOT_SCALES);
  const sk__tensor *expert = sk__ctx_optional(ctx, SLOT_EXPERT);
  char s[SK_SHAPE_STR_MAX];
  if (rows->shape[1] < 1)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input expanded_permuted_rows: expected [R, H] with H >= 1, got %s", op,
                    sk__shape_str(rows->rank, rows->shape, s, sizeof s));
  finalize_params *p = sk__ctx_params(ctx);
  p->r = rows->shape[0], p->h = rows->shape[1];
  int64_t k, mode;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "k", &k));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "drop_pad_mode", &mode));
  if (mode == 1)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute drop_pad_mode: 1 (drop / pad) is not supported (0 or 2)", op);
  const sk__tensor *shaper = scales ? scales : expert; /* [N, K] */
  if (shaper && shaper->rank == 2) k = shaper->shape[1];
  if (k < 1) /* K from scales or export_for_source_row [N, 0] */
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected [N, K] with K >= 1, got %s", op,
                    scales ? "scales" : "export_for_source_row", sk__shape_str(shaper->rank, shaper->shape, s, sizeof s));
  if (map->shape[0] % k != 0)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input expanded_src_to_dst_row: expected [N*K] with K = %lld, got %s", op,
                    (long long)k, sk__shape_str(map->rank, map->shape, s, sizeof s));
  p->k = k, p->n = map->shape[0] / k, p->order = (int)mode;
  if (skip1) SK_RETURN_IF_ERROR(need(op, SLOT_SKIP1, skip1, rows->dtype, rows->dtype, p->n, p->h));
  if (skip2) SK_RETURN_IF_ERROR(need(op, SLOT_SKIP2, skip2, rows->dtype, rows->dtype, p->n, p->h));
  if (scales) SK_RETURN_IF_ERROR(need(op, SLOT_SCALES, scales, SK_FP32, rows->dtype, p->n, p->k));
  if (expert) SK_RETURN_IF_ERROR(need(op, SLOT_EXPERT, expert, SK_INT32, SK_INT32, p->n, p->k));
  if (bias) {
    if (!expert)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input bias needs export_for_source_row (each pair's expert)", op);
    if (bias->rank != 2 || bias->shape[0] < 1)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected [E, %lld], got %s", op, (long long)p->h,
                      sk__shape_str(bias->rank, bias->shape, s, sizeof s));
    SK_RETURN_IF_ERROR(need(op, SLOT_BIAS, bias, rows->dtype, rows->dtype, bias->shape[0], p->h));
    p->e = bias->shape[0];
  }
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, rows->dtype, 2, (int64_t[]){p->n, p->h});
  return SK_STATUS_OK;
}

static const void *data_of(const sk__node_io *io, int slot) {
  return io->in[slot].count ? io->in[slot].tensors[0].data : NULL;
}

/* The tokens N and expert rows R of this run: the params' planned ones, or
 * under a run-time token count the live rows of y and of the rows input. */
typedef struct live_counts {
  int64_t n, r;
} live_counts;

static live_counts live(const sk__node_io *io) {
  return (live_counts){sk__live_rows(io, &io->out[0]), sk__live_rows(io, &io->in[SLOT_ROWS].tensors[0])};
}

/* Entry i of the map for pair (n, k) of N tokens: the order drop_pad_mode
 * names. */
static int64_t pair_index(const finalize_params *p, const live_counts *c, int64_t n, int64_t k) {
  return p->order == 0 ? k * c->n + n : n * p->k + k;
}

static int64_t pair_row(const finalize_params *p, const live_counts *c, const int32_t *map, int64_t n, int64_t k) {
  return map[pair_index(p, c, n, k)];
}

/* Whether token n's indices are all valid (a row: one of the R rows of
 * this run); else the run error is set, before anything is read through
 * them. */
static bool check_token(const sk__node_io *io, const live_counts *c, int64_t n) {
  const finalize_params *p = io->params;
  const int32_t *map = data_of(io, SLOT_SRC_TO_DST), *expert = data_of(io, SLOT_EXPERT);
  const bool bias = data_of(io, SLOT_BIAS) != NULL;
  for (int64_t k = 0; k < p->k; k++) {
    int64_t i = pair_index(p, c, n, k);
    if (map[i] < -1 || map[i] >= c->r) {
      sk__run_error_set(io->run_error, SK_STATUS_INVALID_ARGUMENT,
                        "%s (moe_finalize_routing): input expanded_src_to_dst_row[%lld] = %d: expected -1 or a row in "
                        "[0, %lld)", io->name ? io->name : "node", (long long)i, map[i], (long long)c->r);
      return false;
    }
    if (bias && (expert[n * p->k + k] < 0 || expert[n * p->k + k] >= p->e)) {
      sk__run_error_set(io->run_error, SK_STATUS_INVALID_ARGUMENT,
                        "%s (moe_finalize_routing): input export_for_source_row[%lld, %lld] = %d: expected an expert in "
                        "[0, %lld) (bias's rows)", io->name ? io->name : "node", (long long)n, (long long)k,
                        expert[n * p->k + k], (long long)p->e);
      return false;
    }
  }
  return true;
}

/* The rule at the top, element by element. */
static void reference(const sk__node_io *io) {
  const finalize_params *p = io->params;
  const sk_dtype dt = io->in[SLOT_ROWS].tensors[0].dtype;
  const void *rows = data_of(io, SLOT_ROWS), *skip1 = data_of(io, SLOT_SKIP1), *skip2 = data_of(io, SLOT_SKIP2);
  const void *bias = data_of(io, SLOT_BIAS), *scales = data_of(io, SLOT_SCALES);
  const sk_dtype scale_dt = scales ? io->in[SLOT_SCALES].tensors[0].dtype : SK_FP32;
  const int32_t *map = data_of(io, SLOT_SRC_TO_DST), *expert = data_of(io, SLOT_EXPERT);
  const live_counts c = live(io);
  for (int64_t n = 0; n < p->n; n++) {
    if (!check_token(io, &c, n)) return;
    for (int64_t h = 0; h < p->h; h++) {
      const size_t at = (size_t)(n * p->h + h);
      float acc = skip1 ? sk__load_f32(skip1, dt, at) : 0.0f;
      if (skip2) acc = acc + sk__load_f32(skip2, dt, at);
      for (int64_t k = 0; k < p->k; k++) {
        int64_t d = pair_row(p, &c, map, n, k);
        if (d < 0) continue;
        float r = sk__load_f32(rows, dt, (size_t)(d * p->h + h));
        if (bias) r = r + sk__load_f32(bias, dt, (size_t)(expert[n * p->k + k] * p->h + h));
        float w = scales ? sk__load_f32(scales, scale_dt, (size_t)(n * p->k + k)) : 1.0f;
        float prod = w * r;
        acc = acc + prod;
      }
      sk__store_f32(io->out[0].data, dt, at, acc == acc ? acc : sk__canonical_nan());
    }
  }
}

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const finalize_params *p = io->params;
  int64_t min_rows = p->h >= 4096 ? 1 : 4096 / p->h;
  *out = sk__flat_tiling(p->n, sk__flat_block_size(p->n, n_cores, 1, min_rows));
  out->workspace_bytes = 3 * (size_t)p->h * sizeof(float);
  return SK_STATUS_OK;
}

/* Block b writes its tokens' rows and reads their skip rows; which expert
 * rows it reads depends on the map: all of them. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const finalize_params *p = io->params;
  int64_t n0, n1;
  sk__flat_block_range(p->n, io->n_blocks, block, &n0, &n1);
  const int64_t row_bytes = p->h * (int64_t)sk_dtype_size(io->out[0].dtype);
  for (int slot = SLOT_SKIP1; slot <= SLOT_SKIP2; slot++)
    if (io->in[slot].count) reads[sk__io_input_index(io, slot, 0)] = (sk__span){n0 * row_bytes, n1 * row_bytes};
  writes[0] = (sk__span){n0 * row_bytes, n1 * row_bytes};
}

/* The same operations row by row: each element sees the reference's
 * sequence (skip1, + skip2, then per k: row + bias, times the weight,
 * added), so the bits agree; the rows are converted with the SIMD
 * converters. workspace: 3 H floats. */
static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const finalize_params *p = io->params;
  const sk_dtype dt = io->in[SLOT_ROWS].tensors[0].dtype;
  const size_t es = sk_dtype_size(dt);
  const char *rows = data_of(io, SLOT_ROWS), *skip1 = data_of(io, SLOT_SKIP1), *skip2 = data_of(io, SLOT_SKIP2);
  const char *bias = data_of(io, SLOT_BIAS);
  const void *scales = data_of(io, SLOT_SCALES);
  const sk_dtype scale_dt = scales ? io->in[SLOT_SCALES].tensors[0].dtype : SK_FP32;
  const int32_t *map = data_of(io, SLOT_SRC_TO_DST), *expert = data_of(io, SLOT_EXPERT);
  const sk__isa isa = io->isa;
  const int64_t h = p->h;
  float *acc = workspace, *r = acc + h, *bias_row = r + h;
  const live_counts c = live(io);
  int64_t n0, n1;
  sk__flat_block_range(p->n, io->n_blocks, block, &n0, &n1);
  sk__clip(&n0, &n1, c.n);
  for (int64_t n = n0; n < n1; n++) {
    if (!check_token(io, &c, n)) return;
    if (skip1) sk__convert(skip1 + (size_t)(n * h) * es, dt, acc, SK_FP32, (size_t)h, isa);
    else for (int64_t j = 0; j < h; j++) acc[j] = 0.0f;
    if (skip2) {
      sk__convert(skip2 + (size_t)(n * h) * es, dt, r, SK_FP32, (size_t)h, isa);
      for (int64_t j = 0; j < h; j++) acc[j] = acc[j] + r[j];
    }
    for (int64_t k = 0; k < p->k; k++) {
      int64_t d = pair_row(p, &c, map, n, k);
      if (d < 0) continue;
      float w = scales ? sk__load_f32(scales, scale_dt, (size_t)(n * p->k + k)) : 1.0f;
      sk__convert(rows + (size_t)(d * h) * es, dt, r, SK_FP32, (size_t)h, isa);
      if (bias) {
        sk__convert(bias + (size_t)(expert[n * p->k + k] * h) * es, dt, bias_row, SK_FP32, (size_t)h, isa);
        for (int64_t j = 0; j < h; j++) r[j] = r[j] + bias_row[j];
      }
      for (int64_t j = 0; j < h; j++) {
        float prod = w * r[j];
        acc[j] = acc[j] + prod;
      }
    }
    for (int64_t j = 0; j < h; j++)
      if (acc[j] != acc[j]) acc[j] = sk__canonical_nan();
    sk__convert(acc, SK_FP32, (char *)io->out[0].data + (size_t)(n * h) * es, dt, (size_t)h, isa);
  }
}

/* Its vector kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "dtype conversion");
}

const sk__op_def sk__op_moe_finalize_routing = {
    .type = "moe_finalize_routing",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "the experts' rows combined back per token: skip1 + skip2 + sum_k scales * (row + bias)",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .dynamic_rows = true, /* per token, its pairs indexed among the live ones */
    .params_size = sizeof(finalize_params),
};

/* linear(x, weight, bias?) as torch's: y = x @ weight^T + bias, the router
 * gate of a MoE layer and any dense projection.
 *
 *   x [..., K], weight [N, K], bias? [N], all of one float dtype -> y [..., N]
 *
 * The arithmetic is the GEMM contract of kernels/gemm/gemm.h with
 * B = weight^T: per output one fmaf chain over k in order from +0, then the
 * bias added, rounded once to the dtype. B is weight transposed: a
 * constant weight is transposed and packed once, at compile (the pack
 * hook); otherwise each block transposes the columns it computes into its
 * workspace (exact copies, so the bits do not depend on which). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/gemm/gemm.h"
#include "ops/op_util.h"
#include "ops/packed_weights.h"

enum { SLOT_X, SLOT_WEIGHT, SLOT_BIAS };

typedef struct linear_params {
  int64_t m, n, k;
  sk_dtype dtype;
} linear_params;

/* The block grid: nb_m x nb_n tiles of tile_m rows and tile_n columns. */
typedef struct linear_plan {
  int64_t tile_m, tile_n, nb_n;
} linear_plan;

static const sk_op_slot_info inputs[] = {
    SK__IN("x", "[..., K] fp32, fp16 or bf16", .dtypes = SK__FLOATS, SK__RANK(1, -1)),
    SK__IN("weight", "[N, K], x's dtype (torch's layout: y = x @ weight^T)", SK__SAME_DTYPE_AS(SLOT_X)),
    SK__IN_OPT("bias", "[N], x's dtype", SK__SAME_DTYPE_AS(SLOT_X)),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "[..., N], x's dtype")};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x, *w;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_X, &x));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, SLOT_WEIGHT, &w));
  const sk__tensor *b = sk__ctx_optional(ctx, SLOT_BIAS);
  char s[SK_SHAPE_STR_MAX];
  int64_t k = x->shape[x->rank - 1];
  if (w->rank != 2 || w->shape[1] != k)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input weight: expected [N, %lld] (K of x), got %s", op, (long long)k,
                    sk__shape_str(w->rank, w->shape, s, sizeof s));
  int64_t n = w->shape[0];
  if (b) {
    if (b->rank != 1 || b->shape[0] != n)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected [%lld] (N of weight), got %s", op, (long long)n,
                      sk__shape_str(b->rank, b->shape, s, sizeof s));
  }
  linear_params *p = sk__ctx_params(ctx);
  p->k = k, p->n = n, p->dtype = x->dtype;
  p->m = 1; /* the rows: every dimension but the last (K may be 0) */
  for (int d = 0; d < x->rank - 1; d++) p->m *= x->shape[d];
  int64_t shape[SK_MAX_RANK];
  memcpy(shape, x->shape, sizeof shape);
  shape[x->rank - 1] = n;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, x->dtype, x->rank, shape);
  return SK_STATUS_OK;
}

/* weight [N, K] columns [n0, n1) transposed into bt [K, n1 - n0]. */
static void transpose(const void *w, size_t es, int64_t k, int64_t n0, int64_t n1, void *bt) {
  const int64_t nb = n1 - n0;
  for (int64_t j = 0; j < nb; j++)
    for (int64_t q = 0; q < k; q++)
      memcpy((char *)bt + (size_t)(q * nb + j) * es, (const char *)w + (size_t)((n0 + j) * k + q) * es, es);
}

static const void *bias_of(const sk__node_io *io) {
  return io->in[SLOT_BIAS].count ? io->in[SLOT_BIAS].tensors[0].data : NULL;
}

static void reference(const sk__node_io *io) {
  const linear_params *p = io->params;
  const size_t es = sk_dtype_size(p->dtype);
  void *bt = malloc((size_t)(p->k * p->n) * es + 1);
  if (!bt) return; /* the oracle of tests only */
  transpose(io->in[SLOT_WEIGHT].tensors[0].data, es, p->k, 0, p->n, bt);
  sk__gemm_problem g = {.m = p->m, .n = p->n, .k = p->k, .a = io->in[SLOT_X].tensors[0].data, .a_dtype = p->dtype,
                        .lda = p->k, .b = bt, .b_dtype = p->dtype, .ldb = p->n, .bias = bias_of(io),
                        .bias_dtype = p->dtype, .c = io->out[0].data, .c_dtype = p->dtype, .ldc = p->n,
                        .numerics = io->numerics};
  sk__gemm_reference(&g);
  free(bt);
}

/* Column strips of whole micro-panels first (one per core when N allows),
 * then row strips for the cores left. */
static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const linear_params *p = io->params;
  int64_t mr, nr;
  sk__gemm_micro_tile_for(io->isa, io->numerics, p->dtype, p->dtype, &mr, &nr);
  int64_t panels = sk__ceil_div(p->n > 0 ? p->n : 1, nr);
  int64_t nb_n = panels < n_cores ? panels : n_cores;
  int64_t tile_n = sk__ceil_div(panels, nb_n) * nr;
  nb_n = sk__ceil_div(p->n > 0 ? p->n : 1, tile_n);
  int64_t nb_m = n_cores / nb_n > 1 && p->m >= 2 * mr ? n_cores / nb_n : 1;
  int64_t tile_m = sk__ceil_div(sk__ceil_div(p->m > 0 ? p->m : 1, nb_m), mr) * mr;
  nb_m = sk__ceil_div(p->m > 0 ? p->m : 1, tile_m);
  linear_plan *plan = malloc(sizeof *plan);
  if (!plan) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "linear: out of memory");
  *plan = (linear_plan){tile_m, tile_n, nb_n};
  *out = (sk__tiling){.n_blocks = p->m > 0 && p->n > 0 ? nb_m * nb_n : 0, .plan = plan};
  size_t transposed = (size_t)(p->k * tile_n) * sk_dtype_size(p->dtype);
  out->workspace_bytes = sk__gemm_workspace_size(tile_m, tile_n, p->k) + (transposed + 63) / 64 * 64;
  return SK_STATUS_OK;
}

static sk_status pack(const sk__node_io *io, void **packed, size_t *bytes) {
  const linear_params *p = io->params;
  *packed = NULL, *bytes = 0;
  const void *w = io->in[SLOT_WEIGHT].tensors[0].data;
  if (!w || p->k == 0 || p->n == 0) return SK_STATUS_OK;
  const size_t es = sk_dtype_size(p->dtype);
  void *bt = malloc((size_t)(p->k * p->n) * es);
  if (!bt) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "linear: out of memory packing the weight");
  transpose(w, es, p->k, 0, p->n, bt);
  sk__weight_matrix mat = {bt, p->dtype, p->k, p->n, p->n, false};
  sk_status st = sk__pack_weights(SK_PACK_FLOAT, &mat, 1, "linear", io->isa, io->numerics, packed, bytes);
  free(bt);
  return st;
}

/* The rows (x's dims but the last) this run has: with a run-time token
 * count (op.h) x's live leading rows times its middle dims, else p->m. */
static int64_t live_m(const sk__node_io *io) {
  const linear_params *p = io->params;
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  if (x->rank < 2) return p->m; /* [K]: one row, no leading token dim */
  return x->shape[0] > 0 ? p->m / x->shape[0] * sk__live_rows(io, x) : 0;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const linear_params *p = io->params;
  const linear_plan *plan = io->plan;
  const int64_t rows = live_m(io);
  int64_t m0 = block / plan->nb_n * plan->tile_m, m1 = m0 + plan->tile_m < p->m ? m0 + plan->tile_m : p->m;
  sk__clip(&m0, &m1, rows); /* a planned tile clipped to the rows this run has */
  if (m0 >= m1) return;
  const int64_t n0 = block % plan->nb_n * plan->tile_n;
  const int64_t n1 = n0 + plan->tile_n < p->n ? n0 + plan->tile_n : p->n;
  const size_t es = sk_dtype_size(p->dtype);
  const sk__isa isa = io->isa;
  int64_t nr;
  sk__gemm_micro_tile(isa, NULL, &nr);
  /* Packed panels serve a tile that starts on a panel (the tiling's are). */
  const void *packed = n0 % nr == 0 ? sk__packed_weight(io->packed, SK_PACK_FLOAT, io->isa, io->numerics, 0) : NULL;
  sk__gemm_problem g = {.m = rows, .n = p->n, .k = p->k, .a = io->in[SLOT_X].tensors[0].data, .a_dtype = p->dtype,
                        .lda = p->k, .b_dtype = p->dtype, .ldb = p->n, .bias = bias_of(io), .bias_dtype = p->dtype,
                        .c = io->out[0].data, .c_dtype = p->dtype, .ldc = p->n, .b_packed = packed,
                        .numerics = io->numerics};
  char *gemm_ws = workspace;
  if (!packed) {
    /* This block's columns of B, as a [K, n1 - n0] matrix starting at n0 = 0. */
    void *bt = gemm_ws + sk__gemm_workspace_size(plan->tile_m, plan->tile_n, p->k);
    transpose(io->in[SLOT_WEIGHT].tensors[0].data, es, p->k, n0, n1, bt);
    g.b = bt, g.ldb = n1 - n0, g.n = n1 - n0;
    g.bias = g.bias ? (const char *)g.bias + (size_t)n0 * es : NULL;
    g.c = (char *)g.c + (size_t)n0 * es;
    sk__gemm_tile(&g, m0, m1, 0, n1 - n0, gemm_ws, isa);
    return;
  }
  sk__gemm_tile(&g, m0, m1, n0, n1, gemm_ws, isa);
}

/* Block (bm, bn) reads its rows of x and writes its tile of y. */
static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const linear_params *p = io->params;
  const linear_plan *plan = io->plan;
  const int64_t m0 = block / plan->nb_n * plan->tile_m;
  const int64_t m1 = m0 + plan->tile_m < p->m ? m0 + plan->tile_m : p->m;
  const int64_t es = (int64_t)sk_dtype_size(p->dtype);
  reads[0] = (sk__span){m0 * p->k * es, m1 * p->k * es};
  writes[0] = (sk__span){m0 * p->n * es, m1 * p->n * es}; /* whole rows: the tile's columns are inside them */
}

/* The micro-kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  return sk__gemm_kernel_name(io->isa, io->numerics, io->in[0].tensors[0].dtype, io->in[1].tensors[0].dtype);
}

const sk__op_def sk__op_linear = {
    .type = "linear",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = x @ weight^T + bias (torch.nn.functional.linear), fp32 accumulation",
    .kind = SK_KERNEL_CUBE,
    .build = build,
    .tile = tile,
    .run_block = run_block,
    .reference = reference,
    .kernel_name = kernel_name,
    .footprint = footprint,
    .pack = pack,
    .dynamic_rows = true, /* run_block clips to x's live rows */
    .params_size = sizeof(linear_params),
};

/* grouped_matmul: the per-block kernel and its footprint, over the tiles
 * of grouped_matmul_tiling.c: a tile of one group's output, a tile of a
 * run-time group list's rows (each expert's part in it, rows past the last
 * expert zeroed), or a tile of zero rows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/packed_groups.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/grouped_matmul.h"
#include "ops/op_util.h"

/* Output [m0, m1) x [n0, n1) of one group. */
static void compute(const sk__node_io *io, const gmm_group *q, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                    void *workspace) {
  if (((const gmm_params *)io->params)->quant) {
    int64_t tn = n1 - n0;
    int32_t *acc = workspace;
    void *panels = (char *)workspace + sk__align_up((size_t)((m1 - m0) * tn) * sizeof(int32_t));
    sk__qgemm_problem qp = {.m = q->m, .n = q->n, .k = q->k, .a = q->x, .lda = q->k, .b = q->w, .ldb = q->n,
                            .b_packed = q->w_packed};
    sk__qgemm_tile(&qp, m0, m1, n0, n1, acc, tn, panels, io->isa);
    sk__gmm_quant_epilogue(q, acc, tn, m0, m1, n0, n1, io->isa);
    return;
  }
  sk__gemm_problem f = sk__gmm_float_problem(q);
  int64_t nr;
  sk__gemm_micro_tile(io->isa, NULL, &nr);
  if (q->w_trans && (!q->w_packed || n0 % nr != 0)) {
    /* A weight read transposed without panels for this tile (not a
     * constant, or a tile off a panel's start, which the tilings avoid):
     * its columns of B as a [K, n1 - n0] matrix after the GEMM's scratch. */
    f.b_packed = NULL;
    size_t es = sk_dtype_size(q->y_dtype);
    void *bt = (char *)workspace + sk__gemm_workspace_size(m1 - m0, n1 - n0, q->k);
    sk__gmm_transpose_cols(q, n0, n1, bt);
    f.b = bt, f.ldb = f.n = n1 - n0;
    if (f.bias) f.bias = (const char *)f.bias + (size_t)n0 * sk_dtype_size(f.bias_dtype);
    f.c = (char *)f.c + (size_t)n0 * es;
    sk__gemm_tile(&f, m0, m1, 0, n1 - n0, workspace, io->isa);
    return;
  }
  sk__gemm_tile(&f, m0, m1, n0, n1, workspace, io->isa);
}

/* Zeroes rows [m0, m1), columns [n0, n1) of the single [M, N] output. */
static void zero_rows(const sk__node_io *io, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const sk__tensor *y = &io->out[0];
  size_t es = sk_dtype_size(y->dtype), row = (size_t)y->shape[1] * es;
  for (int64_t r = m0; r < m1; r++) memset((char *)y->data + (size_t)r * row + (size_t)n0 * es, 0, (size_t)(n1 - n0) * es);
}

/* ---- a run-time token count (op.h, sk__node_io.tokens) ----
 * The tiles are those of the planned rows; a block computes its tile
 * clipped to the rows of x (and y) this run has. Those rows are x's
 * leading ones: with group_type 0 x's rows, with group_type -1 each x_g's
 * leading rows times its middle dims (the rows of its GEMM). */

/* group_type 0: the rows of x (and of the single [M, N] output) this run has. */
static int64_t live_x_rows(const sk__node_io *io) { return sk__live_rows(io, &io->in[GMM_X].tensors[0]); }

/* group_type 0 with the group_list attribute: its rows are fixed at build
 * and cannot follow the run's tokens, so a run with fewer rows of x than
 * the list covers fails (into the run error) rather than read and write
 * rows that do not exist. True when every listed row is live. */
static bool attribute_rows_live(const sk__node_io *io) {
  const gmm_params *p = io->params;
  int64_t live = live_x_rows(io);
  if (p->rows_used <= live) return true;
  sk__run_error_set(io->run_error, SK_STATUS_INVALID_ARGUMENT,
                    "%s (grouped_matmul): attribute group_list covers %lld rows of x, but this run has %lld (a "
                    "list fixed at build cannot follow a run-time token count: give the group_list input)",
                    io->name, (long long)p->rows_used, (long long)live);
  return false;
}

/* group_type -1: group g's GEMM rows (x_g's dims but the last) in this run. */
static int64_t list_live_m(const sk__node_io *io, int64_t g, int64_t planned_m) {
  const sk__tensor *x = &io->in[GMM_X].tensors[g];
  return x->shape[0] > 0 ? planned_m / x->shape[0] * sk__live_rows(io, x) : 0;
}

static void run_runtime_tile(const sk__node_io *io, const gmm_tile *tile, void *workspace) {
  const gmm_params *p = io->params;
  int64_t m0 = tile->m0, m1 = tile->m1;
  sk__clip(&m0, &m1, live_x_rows(io));
  if (m0 >= m1) return; /* the tile's rows are past this run's */
  int64_t begin[GMM_MAX_GROUPS], end[GMM_MAX_GROUPS], rows_used;
  if (!sk__gmm_runtime_rows(io, begin, end, &rows_used)) return; /* the run fails, naming the entry */
  for (int64_t e = 0; e < p->n_groups; e++) {
    int64_t lo = begin[e] > m0 ? begin[e] : m0, hi = end[e] < m1 ? end[e] : m1;
    if (lo >= hi) continue;
    gmm_group q = sk__gmm_group_rows(io, e, lo, hi - lo);
    compute(io, &q, 0, hi - lo, tile->n0, tile->n1, workspace);
  }
  if (rows_used < m1) zero_rows(io, rows_used > m0 ? rows_used : m0, m1, tile->n0, tile->n1);
}

/* GMM_EXPERT_TILE: the tile's strip of the m0-th expert with rows. */
static void run_expert_tile(const sk__node_io *io, const gmm_tile *tile, void *workspace) {
  const gmm_params *p = io->params;
  int64_t live = live_x_rows(io);
  /* Each expert with rows has at least one: no more than `live` have any. */
  if (tile->m0 >= live) return;
  int64_t begin[GMM_MAX_GROUPS], end[GMM_MAX_GROUPS], rows_used;
  if (!sk__gmm_runtime_rows(io, begin, end, &rows_used)) return; /* the run fails, naming the entry */
  for (int64_t e = 0, hit = 0; e < p->n_groups; e++) {
    if (begin[e] >= end[e] || hit++ < tile->m0) continue;
    gmm_group q = sk__gmm_group_rows(io, e, begin[e], end[e] - begin[e]);
    /* The tiling's row tiles at most (its workspace's), the strip of the
     * weights then in the cache. */
    for (int64_t m0 = 0; m0 < q.m; m0 += GMM_TILE_ROWS)
      compute(io, &q, m0, q.m - m0 < GMM_TILE_ROWS ? q.m : m0 + GMM_TILE_ROWS, tile->n0, tile->n1, workspace);
    break;
  }
  int64_t m1 = tile->m1 < live ? tile->m1 : live;
  if (tile->m0 == 0 && rows_used < m1) zero_rows(io, rows_used, m1, tile->n0, tile->n1);
}

/* GMM_ZERO_TILE: rows [m0, m1) past the attribute list's, those of them this run has. */
static void run_zero_tile(const sk__node_io *io, const gmm_tile *tile) {
  if (!attribute_rows_live(io)) return;
  int64_t m0 = tile->m0, m1 = tile->m1;
  sk__clip(&m0, &m1, live_x_rows(io));
  if (m0 < m1) zero_rows(io, m0, m1, 0, io->out[0].shape[1]);
}

/* A tile of one group known at compile. */
static void run_group_tile(const sk__node_io *io, const gmm_tile *tile, void *workspace) {
  const gmm_params *p = io->params;
  if (tile->m0 >= tile->m1 || tile->n0 >= tile->n1) return; /* a balancing tiling's empty piece */
  gmm_group q = sk__gmm_group(io, tile->group);
  int64_t m0 = tile->m0, m1 = tile->m1;
  if (p->group_type == 0) {
    if (!attribute_rows_live(io)) return; /* then the group's rows are all live: nothing to clip */
  } else {
    q.m = q.per_token_scale.len = list_live_m(io, tile->group, q.m);
    sk__clip(&m0, &m1, q.m);
    if (m0 >= m1) return;
  }
  compute(io, &q, m0, m1, tile->n0, tile->n1, workspace);
}

void sk__gmm_run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const gmm_tile *tile = &((const gmm_tile *)io->plan)[block];
  if (tile->group == GMM_EXPERT_TILE) run_expert_tile(io, tile, workspace);
  else if (tile->group == GMM_RUNTIME_TILE) run_runtime_tile(io, tile, workspace);
  else if (tile->group == GMM_ZERO_TILE) run_zero_tile(io, tile);
  else run_group_tile(io, tile, workspace);
}

/* A tile reads its rows of its group's x (and its group's other operands
 * whole) and writes its rows of its group's output; other groups' tensors
 * are untouched. Rows are whole rows even for a column tile: conservative. */
void sk__gmm_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const gmm_params *p = io->params;
  const gmm_tile *tile = &((const gmm_tile *)io->plan)[block];
  if (tile->group == GMM_RUNTIME_TILE || tile->group == GMM_EXPERT_TILE) {
    /* Rows of x and y (an expert's: any of them); every expert's operands may be read. */
    const sk__tensor *x = &io->in[GMM_X].tensors[0], *y = &io->out[0];
    int64_t xrow = x->shape[1] * (int64_t)sk_dtype_size(x->dtype), yrow = y->shape[1] * (int64_t)sk_dtype_size(y->dtype);
    int64_t m0 = tile->group == GMM_EXPERT_TILE ? 0 : tile->m0;
    reads[sk__io_input_index(io, GMM_X, 0)] = (sk__span){m0 * xrow, tile->m1 * xrow};
    writes[0] = (sk__span){m0 * yrow, tile->m1 * yrow};
    return;
  }
  for (int s = 0; s < SK__MAX_SLOTS; s++)
    for (size_t j = 0; j < io->in[s].count; j++) {
      bool mine = tile->group >= 0 && (io->in[s].count == 1 || (int64_t)j == tile->group);
      if (!mine) reads[sk__io_input_index(io, s, j)] = (sk__span){0, 0};
    }
  for (size_t o = 0; o < io->n_out; o++) writes[o] = (sk__span){0, 0};
  int64_t row0 = 0, g = tile->group;
  if (p->group_type == 0 && g >= 0) row0 = p->row_begin[g];
  if (g >= 0) {
    const sk__tensor *x = &io->in[GMM_X].tensors[p->group_type == -1 ? g : 0];
    int64_t row_bytes = x->shape[x->rank - 1] * (int64_t)sk_dtype_size(x->dtype);
    reads[sk__io_input_index(io, GMM_X, p->group_type == -1 ? (size_t)g : 0)] =
        (sk__span){(row0 + tile->m0) * row_bytes, (row0 + tile->m1) * row_bytes};
  }
  size_t out = p->group_type == -1 || p->split_item < 2 ? (size_t)(g < 0 ? 0 : g) : 0;
  if (p->split_item < 2) row0 = 0; /* per-group outputs start at the group's first row */
  const sk__tensor *y = &io->out[out];
  int64_t out_row_bytes = y->shape[y->rank - 1] * (int64_t)sk_dtype_size(y->dtype);
  writes[out] = (sk__span){(row0 + tile->m0) * out_row_bytes, (row0 + tile->m1) * out_row_bytes};
}

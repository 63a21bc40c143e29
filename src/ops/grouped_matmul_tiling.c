/* grouped_matmul: block tiling and the per-block kernel.
 *
 * A block is one output tile of one group. Tiles are sized so the team gets
 * about one tile-worth of equal work per core: a tile repacks its weight
 * panel, so more, smaller tiles than cores would pay that packing again and
 * again. Tile heights are multiples of the micro-kernel's MR, capped so
 * packed panels stay cache-sized. Results never depend on the tiling (the
 * GEMM contract fixes every element's summation order). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/grouped_matmul.h"
#include "ops/op_util.h"

#define TILE_M_MAX 256
#define TILE_N_MAX 512

typedef struct gmm_tile {
  int64_t group; /* -1: zero-fill rows [m0, m1) of the single output */
  int64_t m0, m1, n0, n1;
} gmm_tile;

typedef struct gmm_tiles {
  int64_t count, cap;
  gmm_tile *tiles;
} gmm_tiles;

static bool push(gmm_tiles *t, gmm_tile tile) {
  if (t->count == t->cap) {
    int64_t cap = t->cap ? t->cap * 2 : 16;
    gmm_tile *p = realloc(t->tiles, (size_t)cap * sizeof *p);
    if (!p) return false;
    t->tiles = p;
    t->cap = cap;
  }
  t->tiles[t->count++] = tile;
  return true;
}

/* Splits [0, extent) into `parts` ranges whose lengths are multiples of
 * grain (the last takes the remainder). Returns the range length used. */
static int64_t part_length(int64_t extent, int64_t parts, int64_t grain) {
  return sk__ceil_div(sk__ceil_div(extent, parts), grain) * grain;
}

/* int8 path: the int32 accumulator tile, then the kernel's packed panels. */
static size_t quant_workspace(int64_t tm, int64_t tn, int64_t k) {
  return sk__align_up((size_t)(tm * tn) * sizeof(int32_t)) + sk__qgemm_workspace_size(tm, tn, k);
}

/* Splits an m x n output into about `want` tiles (at least enough to keep
 * tiles within TILE_M_MAX x TILE_N_MAX). Every tile packs its A rows
 * (tm x k) and its B columns (k x tn), so among the splits into `want`
 * tiles the one with the smallest tm + tn packs least: a short, wide
 * output (decode: 16 rows) is split by columns, not into 8-row slivers
 * that would each pack all of B. */
static void split_group(int64_t m, int64_t n, int64_t want, int64_t mr, int64_t nr, int64_t *tm_out, int64_t *tn_out) {
  int64_t min_rows = sk__ceil_div(m, TILE_M_MAX), min_cols = sk__ceil_div(n, TILE_N_MAX);
  int64_t max_rows = sk__ceil_div(m, mr), max_cols = sk__ceil_div(n, nr);
  int64_t best_tm = 0, best_tn = 0, best_cost = INT64_MAX;
  for (int64_t r = 1; r <= want; r++) {
    int64_t rows = r, cols = sk__ceil_div(want, r);
    if (rows < min_rows) rows = min_rows;
    if (cols < min_cols) cols = min_cols;
    if (rows > max_rows) rows = max_rows;
    if (cols > max_cols) cols = max_cols;
    int64_t tm = part_length(m, rows, mr), tn = part_length(n, cols, nr);
    int64_t tiles = sk__ceil_div(m, tm) * sk__ceil_div(n, tn);
    /* Fewer tiles than wanted leave cores idle: count that first. */
    int64_t cost = (tiles < want ? (want - tiles) * (m + n) * 4 : 0) + tm + tn;
    if (cost < best_cost) best_cost = cost, best_tm = tm, best_tn = tn;
  }
  *tm_out = best_tm;
  *tn_out = best_tn;
}

sk_status sk__gmm_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const gmm_params *p = io->params;
  int64_t mr, nr;
  if (p->quant) sk__qgemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  else sk__gemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  double total = 0;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    total += (double)q.m * (double)q.n * (double)(q.k + 1);
  }
  /* Work per tile that gives each core about one tile of the whole op. */
  double target = n_cores > 1 ? total / n_cores : INFINITY;
  gmm_tiles t = {0};
  size_t workspace = 0;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m == 0 || q.n == 0) continue;
    double work = (double)q.m * (double)q.n * (double)(q.k + 1);
    int64_t want = (int64_t)llround(work / target);
    if (want < 1) want = 1;
    int64_t tm, tn;
    split_group(q.m, q.n, want, mr, nr, &tm, &tn);
    size_t ws = p->quant ? quant_workspace(tm, tn, q.k) : sk__gemm_workspace_size(tm, tn, q.k);
    if (ws > workspace) workspace = ws;
    for (int64_t m0 = 0; m0 < q.m; m0 += tm)
      for (int64_t n0 = 0; n0 < q.n; n0 += tn)
        if (!push(&t, (gmm_tile){g, m0, m0 + tm < q.m ? m0 + tm : q.m, n0, n0 + tn < q.n ? n0 + tn : q.n})) {
          free(t.tiles);
          return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory tiling");
        }
  }
  if (p->group_type == 0 && p->split_item >= 2 && p->rows_used < io->out[0].shape[0]) {
    if (!push(&t, (gmm_tile){-1, p->rows_used, io->out[0].shape[0], 0, io->out[0].shape[1]})) {
      free(t.tiles);
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory tiling");
    }
  }
  out->n_blocks = t.count;
  out->workspace_bytes = workspace;
  out->plan = t.tiles;
  return SK_STATUS_OK;
}

void sk__gmm_run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const gmm_tile *tile = &((const gmm_tile *)io->plan)[block];
  if (tile->group < 0) {
    const sk__tensor *y = &io->out[0];
    size_t row = (size_t)y->shape[1] * sk_dtype_size(y->dtype);
    memset((char *)y->data + (size_t)tile->m0 * row, 0, (size_t)(tile->m1 - tile->m0) * row);
    return;
  }
  gmm_group q = sk__gmm_group(io, tile->group);
  if (((const gmm_params *)io->params)->quant) {
    int64_t tn = tile->n1 - tile->n0;
    int32_t *acc = workspace;
    void *panels = (char *)workspace + sk__align_up((size_t)((tile->m1 - tile->m0) * tn) * sizeof(int32_t));
    sk__qgemm_problem qp = {.m = q.m, .n = q.n, .k = q.k, .a = q.x, .lda = q.k, .b = q.w, .ldb = q.n,
                            .b_packed = q.w_packed};
    sk__qgemm_tile(&qp, tile->m0, tile->m1, tile->n0, tile->n1, acc, tn, panels, sk__cpu_isa());
    sk__gmm_quant_epilogue(&q, acc, tn, tile->m0, tile->m1, tile->n0, tile->n1);
    return;
  }
  sk__gemm_problem f = sk__gmm_float_problem(&q);
  sk__gemm_tile(&f, tile->m0, tile->m1, tile->n0, tile->n1, workspace, sk__cpu_isa());
}

/* A tile reads its rows of its group's x (and its group's other operands
 * whole) and writes its rows of its group's output; other groups' tensors
 * are untouched. Rows are whole rows even for a column tile: conservative. */
void sk__gmm_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const gmm_params *p = io->params;
  const gmm_tile *tile = &((const gmm_tile *)io->plan)[block];
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

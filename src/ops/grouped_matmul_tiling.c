/* grouped_matmul: block tiling and the per-block kernel.
 *
 * A block is one output tile of one group. With groups known at compile
 * the tiles give each core the same work (grouped_matmul_balance.c); where
 * that cannot be done, tiles are sized so the team gets about one
 * tile-worth of work per core: a tile repacks its weight panel, so more,
 * smaller tiles than cores would pay that packing again and again. Tile heights are multiples of the micro-kernel's MR, capped so
 * packed panels stay cache-sized. Results never depend on the tiling (the
 * GEMM contract fixes every element's summation order).
 *
 * With a run-time group list (the group_list input) the experts' rows are
 * unknown at compile: tiles then cut the whole [M, N] output, and each
 * block reads the list, checks it and computes the part of every expert
 * that falls in its rows (an empty expert falls in none and costs nothing),
 * zero-filling rows past the last expert. */
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

#define TILE_M_MAX 256
#define TILE_N_MAX 512

bool sk__gmm_push(sk__gmm_tiles *t, gmm_tile tile) {
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
/* A float tile's: the GEMM's, and a transposed weight's columns. */
static size_t float_workspace(const gmm_params *p, int64_t tm, int64_t tn, int64_t k) {
  return sk__gemm_workspace_size(tm, tn, k) + (p->trans_w ? sk__gmm_trans_scratch(tn, k) : 0);
}

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

/* The weight bytes one decode work item streams. Small, so that a core the
 * machine runs slower (cores do not keep one speed) leaves the rest to the
 * others and the last item costs little; not so small that claiming it,
 * reading the routing and packing its rows of x weigh: about 35 us of one
 * core's share of memory bandwidth. */
#define ITEM_WEIGHT_BYTES ((int64_t)512 * 1024)

/* Strips of n columns (units of `unit` columns dealt evenly) for work items
 * of about ITEM_WEIGHT_BYTES of a k-deep weight, at least enough to keep
 * strips within TILE_N_MAX. The unit is a group of the packed weights
 * (packed_groups.h): a strip of whole groups reads them as one run. */
static int64_t item_strips(int64_t n, int64_t k, sk_dtype w_dtype, int64_t unit) {
  int64_t units = sk__ceil_div(n, unit), unit_bytes = unit * k * (int64_t)sk_dtype_size(w_dtype);
  int64_t strips = sk__ceil_div(units * unit_bytes, ITEM_WEIGHT_BYTES);
  if (strips < sk__ceil_div(n, TILE_N_MAX)) strips = sk__ceil_div(n, TILE_N_MAX);
  return strips > units ? units : strips;
}

/* The strips of item_strips as tiles of group rows [m0, m1): units dealt
 * evenly, widths within one unit. False when out of memory. */
static bool push_strips(sk__gmm_tiles *t, int64_t group, int64_t m0, int64_t m1, int64_t n, int64_t strips, int64_t unit) {
  int64_t units = sk__ceil_div(n, unit);
  for (int64_t c = 0; c < strips; c++) {
    int64_t n0 = c * units / strips * unit, n1 = (c + 1) * units / strips * unit;
    if (!sk__gmm_push(t, (gmm_tile){group, m0, m1, n0, n1 < n ? n1 : n})) return false;
  }
  return true;
}

/* A run-time group list: the experts' rows are known only when a run reads
 * it, so are the blocks' costs, and cores claim the blocks one at a time
 * (tiling.claim).
 *
 * While every row fits one tile (decode: T * k rows) a block is one work
 * item: a column strip of one expert, the j-th with rows in this run; j
 * runs to min(experts, rows), the most that can have rows, and the items
 * past the experts hit cost a look at the list. Each item streams about
 * ITEM_WEIGHT_BYTES of one expert's weights, whatever the routing; strips
 * are whole NR-column units dealt evenly. (Row tiles would not do: a row
 * tile's work is the experts its rows fall in. qwen3-30b-a3b at T = 1 cut
 * its 8 rows 6 + 2 and one core streamed three experts for each one of the
 * other's.)
 *
 * Past that (prefill), tiles cut the whole [M, N] output, about one per core
 * (within the tile size caps): a tile widens its weight panels, so more
 * tiles would widen them again; claiming still evens out the experts. */
static sk_status tile_runtime(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, int64_t unit,
                              sk__tiling *out) {
  const gmm_params *p = io->params;
  gmm_group q = sk__gmm_group_rows(io, 0, 0, io->in[GMM_X].tensors[0].shape[0]);
  sk__gmm_tiles t = {0};
  int64_t tm, tn;
  bool ok = true;
  if (q.m > 0 && q.m <= TILE_M_MAX && q.n > 0 && n_cores > 1) {
    int64_t strips = item_strips(q.n, q.k, q.w_dtype, unit), experts = p->n_groups < q.m ? p->n_groups : q.m;
    tm = sk__ceil_div(q.m, mr) * mr;
    tn = sk__ceil_div(sk__ceil_div(q.n, unit), strips) * unit;
    for (int64_t j = 0; ok && j < experts; j++) ok = push_strips(&t, GMM_EXPERT_TILE, j, q.m, q.n, strips, unit);
  } else {
    split_group(q.m, q.n, n_cores, mr, nr, &tm, &tn);
    for (int64_t m0 = 0; ok && m0 < q.m; m0 += tm)
      for (int64_t n0 = 0; ok && n0 < q.n; n0 += tn)
        ok = sk__gmm_push(&t, (gmm_tile){GMM_RUNTIME_TILE, m0, m0 + tm < q.m ? m0 + tm : q.m, n0, n0 + tn < q.n ? n0 + tn : q.n});
  }
  if (!ok) {
    free(t.tiles);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory tiling");
  }
  out->n_blocks = t.count;
  out->workspace_bytes = p->quant ? quant_workspace(tm, tn, q.k) : float_workspace(p, tm, tn, q.k);
  out->plan = t.tiles;
  out->claim = n_cores > 1;
  return SK_STATUS_OK;
}

/* The plain tiling (what sk__gmm_balanced_tiles falls back to): each group
 * cut into tiles in proportion to its share of the work, about one tile of
 * the whole op per core. False when out of memory. */
static bool proportional_tiles(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, sk__gmm_tiles *t) {
  const gmm_params *p = io->params;
  double total = 0;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    total += (double)q.m * (double)q.n * (double)(q.k + 1);
  }
  double target = n_cores > 1 ? total / n_cores : INFINITY;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m == 0 || q.n == 0) continue;
    double work = (double)q.m * (double)q.n * (double)(q.k + 1);
    int64_t want = (int64_t)llround(work / target);
    if (want < 1) want = 1;
    int64_t tm, tn;
    split_group(q.m, q.n, want, mr, nr, &tm, &tn);
    for (int64_t m0 = 0; m0 < q.m; m0 += tm)
      for (int64_t n0 = 0; n0 < q.n; n0 += tn)
        if (!sk__gmm_push(t, (gmm_tile){g, m0, m0 + tm < q.m ? m0 + tm : q.m, n0, n0 + tn < q.n ? n0 + tn : q.n}))
          return false;
  }
  return true;
}

/* Groups known at compile whose weights outweigh their rows (a shared
 * expert at decode): streaming the weights is the work, and that goes at
 * the speed of each core's share of memory, which differs from core to
 * core. So the groups are cut into work items of about ITEM_WEIGHT_BYTES
 * (column strips of all of a group's rows) for the cores to claim. False
 * when a group's rows exceed one tile or the weights give the team fewer
 * than 8 items a core (the seed's small layers keep their even, dealt
 * tiles, whose early-start waits a claimed sub-kernel would not have). */
static bool weight_stream_items(const sk__node_io *io, int n_cores, int64_t unit, sk__gmm_tiles *t, bool *oom) {
  const gmm_params *p = io->params;
  *oom = false;
  if (n_cores < 2) return false;
  int64_t bytes = 0;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m > TILE_M_MAX) return false;
    if (q.m > 0) bytes += q.k * q.n * (int64_t)sk_dtype_size(q.w_dtype);
  }
  if (bytes < (int64_t)n_cores * 8 * ITEM_WEIGHT_BYTES) return false;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m == 0 || q.n == 0) continue;
    if (!push_strips(t, g, 0, q.m, q.n, item_strips(q.n, q.k, q.w_dtype, unit), unit)) return !(*oom = true);
  }
  return true;
}

sk_status sk__gmm_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const gmm_params *p = io->params;
  int64_t mr, nr;
  if (p->quant) sk__qgemm_micro_tile(io->isa, &mr, &nr);
  else sk__gemm_micro_tile(io->isa, &mr, &nr);
  /* Work items that stream weights are strips of whole packed groups. */
  const int64_t unit = SK_PACKED_GROUP_COLUMNS;
  if (p->runtime_groups) return tile_runtime(io, n_cores, mr, nr, unit, out);
  sk__gmm_tiles t = {0};
  bool oom, items = weight_stream_items(io, n_cores, unit, &t, &oom);
  if (!items && !oom) items = sk__gmm_claimed_tiles(io, n_cores, mr, nr, TILE_M_MAX, TILE_N_MAX, &t, &oom);
  if (oom) {
    free(t.tiles);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory tiling");
  }
  if (!items && sk__gmm_balanced_tiles(io, n_cores, mr, nr, TILE_M_MAX, TILE_N_MAX, &t.tiles, &t.count)) {
    t.cap = t.count;
  } else if (!items && !proportional_tiles(io, n_cores, mr, nr, &t)) {
    free(t.tiles);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory tiling");
  }
  size_t workspace = 0;
  for (int64_t i = 0; i < t.count; i++) {
    const gmm_tile *tile = &t.tiles[i];
    int64_t tm = tile->m1 - tile->m0, tn = tile->n1 - tile->n0, k = sk__gmm_group(io, tile->group).k;
    size_t ws = p->quant ? quant_workspace(tm, tn, k) : float_workspace(p, tm, tn, k);
    if (ws > workspace) workspace = ws;
  }
  if (p->group_type == 0 && p->split_item >= 2 && p->rows_used < io->out[0].shape[0]) {
    if (!sk__gmm_push(&t, (gmm_tile){GMM_ZERO_TILE, p->rows_used, io->out[0].shape[0], 0, io->out[0].shape[1]})) {
      free(t.tiles);
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory tiling");
    }
  }
  out->n_blocks = t.count;
  out->workspace_bytes = workspace;
  out->plan = t.tiles;
  out->claim = items;
  return SK_STATUS_OK;
}

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
    sk__gmm_quant_epilogue(q, acc, tn, m0, m1, n0, n1);
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
    compute(io, &q, 0, q.m, tile->n0, tile->n1, workspace);
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

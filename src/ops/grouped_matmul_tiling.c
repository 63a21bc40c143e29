/* grouped_matmul: block tiling (the per-block kernel is
 * grouped_matmul_kernel.c).
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

#define TILE_M_MAX GMM_TILE_ROWS
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

/* A prefill's expert tile: at most this many columns (its workspace's). */
#define PREFILL_STRIP_COLUMNS 4096

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
 * Past that (prefill) a block is still one expert's: all its columns (up to
 * PREFILL_STRIP_COLUMNS a strip) of all its rows, which it computes
 * TILE_M_MAX rows at a time. Each expert's rows are packed once and its
 * weights streamed from memory once, where tiles cutting the [M, N] output
 * packed rows again for each column tile, read again the weights of every
 * expert whose rows cross a tile's edge, and gave the cores whole tiles of
 * experts to claim: `sk bench moe-layer:qwen3-30b-a3b:t512` at 2 threads
 * ran 5-8% faster under each contract and int8 (Intel Xeon, family 6 model
 * 167). */
static sk_status tile_runtime(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, int64_t unit,
                              sk__tiling *out) {
  const gmm_params *p = io->params;
  gmm_group q = sk__gmm_group_rows(io, 0, 0, io->in[GMM_X].tensors[0].shape[0]);
  sk__gmm_tiles t = {0};
  int64_t tm, tn;
  bool ok = true;
  if (q.m > 0 && q.n > 0 && n_cores > 1) {
    const bool prefill = q.m > TILE_M_MAX;
    int64_t strips = prefill ? sk__ceil_div(q.n, PREFILL_STRIP_COLUMNS) : item_strips(q.n, q.k, q.w_dtype, unit);
    int64_t units = sk__ceil_div(q.n, unit), experts = p->n_groups < q.m ? p->n_groups : q.m;
    if (strips > units) strips = units;
    tm = prefill ? TILE_M_MAX : sk__ceil_div(q.m, mr) * mr;
    tn = sk__ceil_div(units, strips) * unit;
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
  else
    sk__gemm_micro_tile_for(io->isa, io->numerics, io->in[GMM_X].tensors[0].dtype, io->in[GMM_WEIGHT].tensors[0].dtype,
                            &mr, &nr);
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
    if (tm <= 0 || tn <= 0) continue; /* a balancing empty piece: no work, no workspace */
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

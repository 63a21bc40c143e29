/* grouped_matmul: tiles that give every core the same work, dealt
 * (sk__gmm_balanced_tiles) or, with constant weights, claimed
 * (sk__gmm_claimed_tiles, at the end).
 *
 * Block b of a sub-kernel runs on core b % n (the planner's rule, and the
 * team's for eager runs). Tiles cut per group in proportion to its work
 * leave remainders: the seed's decode step cut gmm1 into 3 tiles for 2
 * cores (one small group's tile and two halves of the large group), so core
 * 0 ran the small tile and a half while core 1 waited for it.
 *
 * Here each group is a row of units: NR-column strips when it is at least
 * as wide as tall (a column strip packs its own columns of B, which no
 * other strip needs, and only the small A again), MR-row strips otherwise. The units of all groups, in order, are
 * cut into n_cores runs of equal work. A run becomes one piece per group it
 * touches; pieces longer than the tile limit are split, and cores with fewer
 * pieces split their largest until every core has the same count P. Blocks
 * are then dealt round by round (block r * n + c is core c's r-th piece), so
 * the b % n rule hands each core exactly its run. Results do not depend on
 * the tiles (the GEMM contract fixes every element's summation order). */
#include <stdlib.h>
#include <string.h>

#include "ops/grouped_matmul.h"
#include "ops/op_util.h"

/* How one group is cut. */
typedef struct axis {
  bool by_cols;
  int64_t unit;     /* nr columns or mr rows */
  int64_t extent;   /* n or m */
  int64_t units;    /* ceil(extent / unit); 0 for an empty group */
  double per_line;  /* work of one column (m * (k + 1)) or one row (n * (k + 1)) */
} axis;

typedef struct piece {
  int64_t group, u0, u1; /* units [u0, u1) of the group */
} piece;

typedef struct pieces {
  piece *v;
  int64_t n, cap;
} pieces;

static bool insert_piece(pieces *l, int64_t at, piece p) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 8;
    piece *grown = realloc(l->v, (size_t)cap * sizeof *grown);
    if (!grown) return false;
    l->v = grown;
    l->cap = cap;
  }
  memmove(&l->v[at + 1], &l->v[at], (size_t)(l->n - at) * sizeof *l->v);
  l->v[at] = p;
  l->n++;
  return true;
}

/* Splits piece i of l into two at the middle unit. */
static bool split_piece(pieces *l, int64_t i) {
  piece p = l->v[i];
  int64_t mid = p.u0 + (p.u1 - p.u0) / 2;
  l->v[i].u1 = mid;
  return insert_piece(l, i + 1, (piece){p.group, mid, p.u1});
}

static double units_work(const axis *a, int64_t u0, int64_t u1) {
  int64_t e1 = u1 * a->unit < a->extent ? u1 * a->unit : a->extent;
  return (double)(e1 - u0 * a->unit) * a->per_line;
}

/* Units of all groups in order, cut into n_cores runs of equal work: a
 * boundary falls before the unit whose middle passes it. */
static bool cut_runs(const axis *ax, int64_t n_groups, int n_cores, double total, pieces *cores) {
  double target = total / n_cores, done = 0;
  int c = 0;
  for (int64_t g = 0; g < n_groups; g++)
    for (int64_t u = 0; u < ax[g].units; u++) {
      double w = units_work(&ax[g], u, u + 1);
      while (c < n_cores - 1 && done + w / 2 > (c + 1) * target) c++;
      pieces *l = &cores[c];
      if (l->n > 0 && l->v[l->n - 1].group == g && l->v[l->n - 1].u1 == u) l->v[l->n - 1].u1 = u + 1;
      else if (!insert_piece(l, l->n, (piece){g, u, u + 1})) return false;
      done += w;
    }
  for (int i = 0; i < n_cores; i++)
    if (cores[i].n == 0) return false; /* a unit worth several cores' shares */
  return true;
}

/* Pieces longer than the tile limit are split evenly; then every core gets
 * as many pieces as the one with most, by halving its largest (or, where
 * none has two units, adding an empty one). */
static bool even_counts(const axis *ax, int n_cores, int64_t max_m, int64_t max_n, pieces *cores) {
  int64_t most = 0;
  for (int c = 0; c < n_cores; c++) {
    pieces *l = &cores[c];
    for (int64_t i = 0; i < l->n; i++) {
      const axis *a = &ax[l->v[i].group];
      int64_t limit = (a->by_cols ? max_n : max_m) / a->unit;
      if (limit < 1) limit = 1;
      int64_t len = l->v[i].u1 - l->v[i].u0, parts = sk__ceil_div(len, limit);
      for (int64_t j = parts - 1; j >= 1; j--) { /* cut the tail off, part by part */
        int64_t at = l->v[i].u0 + len * j / parts;
        piece tail = {l->v[i].group, at, l->v[i].u1};
        l->v[i].u1 = at;
        if (!insert_piece(l, i + 1, tail)) return false;
      }
    }
    if (l->n > most) most = l->n;
  }
  for (int c = 0; c < n_cores; c++) {
    pieces *l = &cores[c];
    while (l->n < most) {
      int64_t best = -1;
      for (int64_t i = 0; i < l->n; i++)
        if (l->v[i].u1 - l->v[i].u0 >= 2 &&
            (best < 0 || units_work(&ax[l->v[i].group], l->v[i].u0, l->v[i].u1) >
                             units_work(&ax[l->v[best].group], l->v[best].u0, l->v[best].u1)))
          best = i;
      /* No piece left to halve (a core's run is one unit: AMX's 32-row
       * micro-tiles make coarse units): an empty piece keeps the dealing
       * in step; the core's work is still its run's. */
      piece last = l->v[l->n - 1];
      if (best < 0 ? !insert_piece(l, l->n, (piece){last.group, last.u0, last.u0}) : !split_piece(l, best)) return false;
    }
  }
  return true;
}

bool sk__gmm_balanced_tiles(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, int64_t max_m, int64_t max_n,
                            gmm_tile **tiles_out, int64_t *count_out) {
  const gmm_params *p = io->params;
  if (n_cores < 2 || p->runtime_groups || p->n_groups < 1) return false;
  axis *ax = calloc((size_t)p->n_groups, sizeof *ax);
  pieces *cores = calloc((size_t)n_cores, sizeof *cores);
  gmm_tile *tiles = NULL;
  bool ok = ax && cores;
  double total = 0;
  for (int64_t g = 0; ok && g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m == 0 || q.n == 0) continue;
    bool by_cols = q.m <= q.n;
    if (by_cols ? q.m > max_m : q.n > max_n) { /* would need cuts both ways: the plain tiling */
      ok = false;
      break;
    }
    int64_t unit = by_cols ? nr : mr, extent = by_cols ? q.n : q.m;
    ax[g] = (axis){by_cols, unit, extent, sk__ceil_div(extent, unit),
                   (double)(by_cols ? q.m : q.n) * (double)(q.k + 1)};
    total += (double)extent * ax[g].per_line;
  }
  ok = ok && total > 0 && cut_runs(ax, p->n_groups, n_cores, total, cores) &&
       even_counts(ax, n_cores, max_m, max_n, cores);
  int64_t rounds = ok ? cores[0].n : 0;
  if (ok) ok = (tiles = malloc((size_t)(rounds * n_cores) * sizeof *tiles)) != NULL;
  for (int64_t r = 0; ok && r < rounds; r++)
    for (int c = 0; c < n_cores; c++) {
      piece pc = cores[c].v[r];
      const axis *a = &ax[pc.group];
      gmm_group q = sk__gmm_group(io, pc.group);
      int64_t e0 = pc.u0 * a->unit, e1 = pc.u1 * a->unit < a->extent ? pc.u1 * a->unit : a->extent;
      tiles[r * n_cores + c] = a->by_cols ? (gmm_tile){pc.group, 0, q.m, e0, e1} : (gmm_tile){pc.group, e0, e1, 0, q.n};
    }
  for (int c = 0; cores && c < n_cores; c++) free(cores[c].v);
  free(cores);
  free(ax);
  if (!ok) {
    free(tiles);
    return false;
  }
  *tiles_out = tiles;
  *count_out = rounds * n_cores;
  return true;
}

/* Claimed tiles, about this many a core: enough that the last ones cost
 * little when the cores run at different speeds. */
#define CLAIM_TILES_PER_CORE 8
/* Rows of a claimed row tile, at least, in micro-tiles of MR: each tile
 * reads all of its group's packed weights (columns within max_n), which
 * fewer rows would not repay; nor are the rows of a group whose weight is
 * too large for a core's cache (over CLAIM_CACHED_WEIGHT_BYTES: a shared
 * expert at prefill) cut into more than CLAIM_TILES_PER_CORE tiles, so it
 * is streamed at most that many times. (The seed's 230 KB weights, cut in
 * 8 tiles of 32 rows, left eager 5% slower than in 11 of 24.) (Column strips of decode's few rows, claimed, ran 1.5x slower
 * than the dealt tiles: a strip of one or two NR units is too narrow.) */
#define CLAIM_TILE_MIN_MR 4
#define CLAIM_CACHED_WEIGHT_BYTES ((int64_t)1 << 20)

/* Tiles for the cores to claim, where the weights are constants (packed
 * at compile, before any run): a tile reads the packed panels and packs
 * only its own rows of x, so row tiles pack nothing twice, however many
 * there are. Each group's rows are cut into MR-multiple tiles of about 1 /
 * (CLAIM_TILES_PER_CORE * n_cores) of the op's work (columns within
 * max_n). A core the machine runs slower takes fewer, and a consumer's row
 * tile (a second matmul, the gating) can start once the tiles of its rows
 * are done. False when some weight is not a constant, when the rows make
 * too few tiles to even the cores out (decode), or out of memory (*oom). */
bool sk__gmm_claimed_tiles(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, int64_t max_m, int64_t max_n,
                           sk__gmm_tiles *t, bool *oom) {
  const gmm_params *p = io->params;
  *oom = false;
  if (n_cores < 2 || p->runtime_groups || p->n_groups < 1) return false;
  double total = 0;
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m == 0 || q.n == 0) continue;
    if (!q.w) return false; /* a weight that changes from run to run: not packed */
    total += (double)q.m * (double)q.n * (double)(q.k + 1);
  }
  if (total <= 0) return false;
  double target = total / (CLAIM_TILES_PER_CORE * n_cores);
  int64_t min_rows = CLAIM_TILE_MIN_MR * mr;
  bool ok = true;
  for (int64_t g = 0; ok && g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (q.m == 0 || q.n == 0) continue;
    int64_t units = sk__ceil_div(q.n, nr), col_parts = sk__ceil_div(q.n, max_n);
    int64_t rows = (int64_t)(target / ((double)q.n * (double)(q.k + 1))) / mr * mr;
    int64_t least = min_rows;
    if (q.k * q.n * (int64_t)sk_dtype_size(q.w_dtype) > CLAIM_CACHED_WEIGHT_BYTES) /* streamed: read <= 8 times */
      least = sk__ceil_div(sk__ceil_div(q.m, CLAIM_TILES_PER_CORE), mr) * mr;
    if (least < min_rows) least = min_rows;
    rows = rows < least ? least : rows > max_m ? max_m / mr * mr : rows;
    for (int64_t m0 = 0; ok && m0 < q.m; m0 += rows)
      for (int64_t c = 0; ok && c < col_parts; c++) {
        int64_t n0 = c * units / col_parts * nr, n1 = (c + 1) * units / col_parts * nr;
        ok = sk__gmm_push(t, (gmm_tile){g, m0, m0 + rows < q.m ? m0 + rows : q.m, n0, n1 < q.n ? n1 : q.n});
      }
  }
  if (!ok || t->count < CLAIM_TILES_PER_CORE / 2 * n_cores) { /* too few to even out the cores: the dealt tiles */
    free(t->tiles);
    *t = (sk__gmm_tiles){0};
    *oom = !ok;
    return false;
  }
  return true;
}

/* grouped_matmul, shared between its files: grouped_matmul.c (validation,
 * shape rule, reference), grouped_matmul_quant.c (the int8 path's inputs and
 * epilogue), grouped_matmul_tiling.c (tiling and the block kernel) and
 * grouped_matmul_balance.c (tiles that share the work evenly). */
#ifndef SK_OPS_GROUPED_MATMUL_H
#define SK_OPS_GROUPED_MATMUL_H

#include <stdbool.h>

#include "core/run_error.h"
#include "kernels/gemm/gemm.h"
#include "ops/op.h"

enum { GMM_X, GMM_WEIGHT, GMM_BIAS, GMM_SCALE, GMM_OFFSET, GMM_PER_TOKEN_SCALE, GMM_GROUP_LIST };

/* Groups (experts) of one node, at most. */
#define GMM_MAX_GROUPS 1024

typedef struct gmm_params {
  int group_type;      /* -1: lists; 0: one x split by group_list rows */
  int split_item;      /* 0/1: one output per group; 2/3: one [M, N] output */
  bool quant;          /* int8 x and weight: int32 accumulation + epilogue */
  sk_dtype out_dtype;
  int64_t n_groups;
  int64_t *row_begin;  /* group_type 0: rows of each expert, from group_list */
  int64_t *row_end;
  int64_t rows_used;   /* group_type 0: rows covered by groups; the rest are zero */
  /* group_type 0 with the group_list input: the rows of each expert are
   * known only when a run reads the tensor (row_begin / row_end NULL). */
  bool runtime_groups;
  int list_type;       /* group_list_type: 0 cumulative ends, 1 counts */
  bool trans_w;        /* transpose_weight: weights are [N, K] (torch's Linear layout) */
} gmm_params;

/* A per-group vector operand (bias, scale, offset, per-token scale): len
 * elements, or 1 broadcast over all; data NULL when absent. */
typedef struct gmm_vec {
  const void *data;
  sk_dtype dtype;
  int64_t len;
} gmm_vec;

/* One group's matmul with the node's tensors bound: y[m, n] = x[m, k] @ w[k, n],
 * all row-major and dense, pointers already at the group's first row. */
typedef struct gmm_group {
  int64_t m, n, k;
  const void *x, *w;
  void *y;
  sk_dtype x_dtype, w_dtype, y_dtype;
  gmm_vec bias, scale, offset, per_token_scale; /* per_token_scale: [m] */
  const void *w_packed; /* w packed at compile (packed_weights.h), or NULL */
  bool w_trans;         /* w is [n, k] (transpose_weight): read transposed */
  sk_numerics numerics; /* the program's contract (the float path's GEMM) */
} gmm_group;

/* Columns [n0, n1) of a transposed weight (q->w_trans: [n, k]) as a
 * [k, n1 - n0] row-major B, into dst (NULL: malloc'd; NULL when out of
 * memory). What a tile without packed panels, and the reference, read. */
void *sk__gmm_transpose_cols(const gmm_group *q, int64_t n0, int64_t n1, void *dst);
/* Scratch a tile of a transposed weight without panels needs besides the
 * GEMM's: its columns of B (any float dtype). */
static inline size_t sk__gmm_trans_scratch(int64_t tn, int64_t k) {
  return ((size_t)(tn * k) * sizeof(float) + 63) / 64 * 64;
}

/* Group g of a node whose tensors may or may not have data yet. */
gmm_group sk__gmm_group(const sk__node_io *io, int64_t g);
/* group_type 0: rows [row0, row0 + m) of x and y taken as group g's. */
gmm_group sk__gmm_group_rows(const sk__node_io *io, int64_t g, int64_t row0, int64_t m);

/* The group_list attribute into row_begin / row_end (build time); the form
 * of a group_list input (its rows are read by each run). */
sk_status sk__gmm_parse_group_list(sk__build_ctx *ctx, gmm_params *p, int64_t m);
sk_status sk__gmm_check_runtime_list(sk__build_ctx *ctx, gmm_params *p, const sk__tensor *list);

/* A run-time group list read and checked: each expert's rows. Fails (into
 * io's run error, naming the op and the entry) on a decreasing cumulative
 * list, a negative count, or rows past M (the rows of x this run has: see
 * sk__node_io.tokens); returns false then. */
bool sk__gmm_runtime_rows(const sk__node_io *io, int64_t *row_begin, int64_t *row_end, int64_t *rows_used);

/* Float path: the group as a GEMM problem. */
sk__gemm_problem sk__gmm_float_problem(const gmm_group *q);

/* int8 path: validates scale / offset / per_token_scale / bias dtypes and
 * output dtype against the groups (after the shapes are known). */
sk_status sk__gmm_check_quant(sk__build_ctx *ctx, const gmm_params *p);
/* int8 path: writes y[m0:m1, n0:n1] from the int32 accumulators acc (tile
 * origin at (m0, n0), leading dimension ldacc), converting rows on isa's
 * path (the node's io->isa). */
void sk__gmm_quant_epilogue(const gmm_group *q, const int32_t *acc, int64_t ldacc, int64_t m0, int64_t m1,
                            int64_t n0, int64_t n1, sk__isa isa);
/* int8 path: the plain reference of one group. */
void sk__gmm_quant_reference(const gmm_group *q);

sk_status sk__gmm_tile(const sk__node_io *io, int n_cores, sk__tiling *out);

/* One block of the tiling: an output tile of one group (grouped_matmul_tiling.c). */
typedef struct gmm_tile {
  int64_t group; /* >= 0: that group's rows; GMM_ZERO_TILE; GMM_RUNTIME_TILE; GMM_EXPERT_TILE */
  int64_t m0, m1, n0, n1;
} gmm_tile;

enum {
  GMM_ZERO_TILE = -1,    /* zero-fill rows [m0, m1) of the single output */
  GMM_RUNTIME_TILE = -2, /* rows [m0, m1) of x and y, experts found at run time */
  /* Columns [n0, n1) of the m0-th expert that has rows in this run (in
   * list order; none: nothing to do), within rows [0, m1) of x and y; the
   * one with m0 == 0 also zero-fills its columns of the rows past the
   * last expert. */
  GMM_EXPERT_TILE = -3
};

/* The most rows a tile packs and multiplies at once (its workspace's); an
 * expert tile computes its expert's rows this many at a time. */
#define GMM_TILE_ROWS 256

/* Tiles of a node with groups known at compile that give each of the
 * n_cores cores the same work when block b runs on core b % n_cores
 * (grouped_matmul_balance.c). Tiles are whole micro-tiles (mr rows, nr
 * columns) where the extents allow and at most max_m x max_n. Returns
 * false when that cannot be done (a group too large across its cut, fewer
 * micro-tiles than cores, out of memory): the caller then tiles as before. */
bool sk__gmm_balanced_tiles(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, int64_t max_m, int64_t max_n,
                            gmm_tile **tiles, int64_t *count);

/* A growing list of tiles, as the tilings build theirs. */
typedef struct sk__gmm_tiles {
  int64_t count, cap;
  gmm_tile *tiles;
} sk__gmm_tiles;

/* Appends tile to t (grouped_matmul_tiling.c); false when out of memory
 * (t keeps what it had). */
bool sk__gmm_push(sk__gmm_tiles *t, gmm_tile tile);

/* Tiles of constant (compile-packed) weights for the cores to claim, into
 * the empty list t (grouped_matmul_balance.c); false, t left empty, when a
 * weight is not a constant, the tiles would be too few, or out of memory
 * (*oom set). */
bool sk__gmm_claimed_tiles(const sk__node_io *io, int n_cores, int64_t mr, int64_t nr, int64_t max_m, int64_t max_n,
                           sk__gmm_tiles *t, bool *oom);

/* The pack hook: constant weights (every group's) into GEMM panels once. */
sk_status sk__gmm_pack(const sk__node_io *io, void **packed, size_t *bytes);
void sk__gmm_run_block(const sk__node_io *io, int64_t block, void *workspace);
void sk__gmm_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes);

#endif

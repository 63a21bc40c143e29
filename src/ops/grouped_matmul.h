/* grouped_matmul, shared between its validation / reference file and its
 * tiling / kernel file. Float path only in this release (int8 comes with the
 * MoE-operators issue). */
#ifndef SK_OPS_GROUPED_MATMUL_H
#define SK_OPS_GROUPED_MATMUL_H

#include "kernels/gemm/gemm.h"
#include "ops/op.h"

enum { GMM_X, GMM_WEIGHT, GMM_BIAS, GMM_SCALE, GMM_OFFSET, GMM_PER_TOKEN_SCALE };

typedef struct gmm_params {
  int group_type;      /* -1: lists; 0: one x split by group_list rows */
  int split_item;      /* 0/1: one output per group; 2/3: one [M, N] output */
  sk_dtype out_dtype;
  int64_t n_groups;
  int64_t *row_begin;  /* group_type 0: rows of each expert, from group_list */
  int64_t *row_end;
  int64_t rows_used;   /* group_type 0: rows covered by groups; the rest are zero */
} gmm_params;

/* The GEMM problem of group g with the node's tensors bound. */
sk__gemm_problem sk__gmm_group_problem(const sk__node_io *io, int64_t g);

sk_status sk__gmm_tile(const sk__node_io *io, int n_cores, sk__tiling *out);
void sk__gmm_run_block(const sk__node_io *io, int64_t block, void *workspace);

#endif

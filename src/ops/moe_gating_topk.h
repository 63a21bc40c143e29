/* moe_gating_topk, shared between its validation / reference file and its
 * tiling / kernel file. The arithmetic order both follow is written at the
 * top of moe_gating_topk.c. */
#ifndef SK_OPS_MOE_GATING_TOPK_H
#define SK_OPS_MOE_GATING_TOPK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ops/op.h"
#include "ops/op_util.h"

enum { MOE_X, MOE_BIAS };
enum { MOE_Y, MOE_IDX, MOE_OUT };

/* Per-row scratch lives in the per-core workspace, so E is bounded. */
#define MOE_MAX_EXPERTS 2048

typedef struct moe_params {
  int64_t t, e;                 /* x is [t, e] */
  int64_t k, k_group, group_count, group_size;
  int group_select_mode;        /* 0: group max, 1: sum of the group's top two */
  int norm_type;                /* 0: softmax, 1: sigmoid */
  int renorm, out_flag;
  float routed_scaling_factor;  /* rounded to fp32 once, at build */
  float eps;                    /* likewise */
  sk_dtype dtype;               /* x, bias and y */
  int has_bias;
} moe_params;

/* Rows of x that exist in this run: p->t is the planned count (a
 * run-time token count may have fewer, op.h). */
static inline int64_t sk__moe_live_rows(const sk__node_io *io) {
  return sk__live_rows(io, &io->in[MOE_X].tensors[0]);
}

/* Block b's rows [*r0, *r1): its planned range clipped to the live rows;
 * false when none are left (the block has nothing to do). */
static inline bool sk__moe_block_rows(const sk__node_io *io, int64_t block, int64_t *r0, int64_t *r1) {
  const moe_params *p = io->params;
  sk__flat_block_range(p->t, io->n_blocks, block, r0, r1);
  sk__clip(r0, r1, sk__moe_live_rows(io));
  return *r0 < *r1;
}

sk_status sk__moe_tile(const sk__node_io *io, int n_cores, sk__tiling *out);
void sk__moe_run_block(const sk__node_io *io, int64_t block, void *workspace);
void sk__moe_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes);

#endif

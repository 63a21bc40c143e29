/* dequant_swiglu_quant, shared between its validation / reference file and
 * its kernel file. The arithmetic both follow is written at the top of
 * dequant_swiglu_quant.c. */
#ifndef SK_OPS_DEQUANT_SWIGLU_QUANT_H
#define SK_OPS_DEQUANT_SWIGLU_QUANT_H

#include <stdint.h>

#include "ops/op.h"

enum { DSQ_X, DSQ_WEIGHT_SCALE, DSQ_ACTIVATION_SCALE, DSQ_BIAS, DSQ_QUANT_SCALE, DSQ_QUANT_OFFSET, DSQ_GROUP_INDEX };

typedef struct dsq_params {
  int activate_left; /* 1: o = silu(L) * R; 0: o = silu(R) * L */
  int quant_mode;    /* 0 static, 1 dynamic */
} dsq_params;

/* The end (exclusive) of group g's rows given the end of group g - 1:
 * negative counts count as 0 and ends are cut at T (run-time data, see
 * docs/ops.md). */
static inline int64_t sk__dsq_group_end(const int64_t *counts, int64_t g, int64_t prev_end, int64_t t) {
  int64_t c = counts[g] < 0 ? 0 : counts[g];
  return c > t - prev_end ? t : prev_end + c;
}

sk_status sk__dsq_tile(const sk__node_io *io, int n_cores, sk__tiling *out);
void sk__dsq_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes);
void sk__dsq_run_block(const sk__node_io *io, int64_t block, void *workspace);

#endif

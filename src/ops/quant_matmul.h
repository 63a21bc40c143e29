/* quant_matmul, shared between its validation / reference file and its
 * tiling / kernel file. */
#ifndef SK_OPS_QUANT_MATMUL_H
#define SK_OPS_QUANT_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/op.h"

enum { QMM_X1, QMM_X2, QMM_SCALE, QMM_OFFSET, QMM_PERTOKEN, QMM_BIAS };

typedef struct qmm_params {
  sk_dtype out_dtype;
  int64_t m, k, n;
  int64_t batch;                       /* matrices in the output (product of its batch dims) */
  int batch_rank;                      /* output rank - 2 */
  int64_t batch_shape[SK_MAX_RANK];    /* the output's batch dims */
  int64_t x1_stride[SK_MAX_RANK];      /* per output batch dim: x1 matrices to step (0 = broadcast) */
  int64_t x2_stride[SK_MAX_RANK];
  sk_dtype scale_dtype;                /* SK_DTYPE_INVALID = no scale (int32 output only) */
  bool scale_per_col, offset_per_col;  /* [n] rather than [1] */
  bool has_offset, has_pertoken;
  bool truncate_scale;                 /* fp32 scale cut to 19 bits (fp16 / int8 out, no per-token) */
  bool packed_offset;                  /* int8 out, int64 scale, no offset input: its offset field */
  sk_dtype bias_dtype;                 /* SK_DTYPE_INVALID = no bias */
  bool bias_batched;                   /* bias [batch, 1, n] */
} qmm_params;

/* The output matrix b's x1 and x2 matrix indices (numpy broadcasting). */
void sk__qmm_batch_index(const qmm_params *p, int64_t b, int64_t *x1_index, int64_t *x2_index);

/* Column j's scale as used by the epilogue (decoded from int64, widened
 * from bf16, truncated to 19 bits when the rule says so) and, for int8
 * output, its offset already rounded (rint), 0 without one. */
void sk__qmm_column_params(const sk__node_io *io, int64_t j, float *scale, float *offset);

/* The canonical quiet NaN every NaN result is stored as (see docs/ops.md). */
#define SK__QMM_NAN_BITS 0x7FC00000u

/* The tiling's plan (sk__tiling.plan), what a block reads to find its tile. */
typedef struct qmm_plan {
  int64_t tm, tn;               /* tile size */
  int64_t row_parts, col_parts; /* tiles per matrix */
  size_t qgemm_ws;              /* bytes of the workspace's qgemm part (64-aligned) */
} qmm_plan;

sk_status sk__qmm_tile(const sk__node_io *io, int n_cores, sk__tiling *out);
void sk__qmm_run_block(const sk__node_io *io, int64_t block, void *workspace);
/* The pack hook: a constant x2's matrices into int8 GEMM panels once. */
sk_status sk__qmm_pack(const sk__node_io *io, void **packed, size_t *bytes);
void sk__qmm_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes);

#endif

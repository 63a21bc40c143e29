/* quant_matmul: block tiling and the packing of constant weights (the
 * per-block kernel is quant_matmul_kernel.c).
 *
 * A block is one output tile (rows x columns) of one output matrix. As in
 * grouped_matmul, tiles are sized so the team gets about one tile of equal
 * work per core (a tile packs its own B panels), heights multiples of the
 * int8 micro-kernel's MR, widths of NR. The int32 tile is computed into the
 * core's workspace (int32 output: straight into the output), then the
 * epilogue of quant_matmul.c's header comment writes the output rows. Every
 * element's value depends only on its own inputs, never on the tiling.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/convert/convert.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/op_util.h"
#include "ops/packed_weights.h"
#include "ops/quant_matmul.h"

#define TILE_M_MAX 256
#define TILE_N_MAX 512

static int64_t part_length(int64_t extent, int64_t parts, int64_t grain) {
  return sk__ceil_div(sk__ceil_div(extent, parts), grain) * grain;
}

sk_status sk__qmm_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  const qmm_params *p = io->params;
  memset(out, 0, sizeof *out);
  if (p->batch == 0 || p->m == 0 || p->n == 0) return SK_STATUS_OK;
  int64_t mr, nr;
  sk__qgemm_micro_tile(io->isa, &mr, &nr);
  /* Each core gets about one tile's worth of the whole op; a matrix is cut
   * into `want` tiles when it is that many cores' worth. */
  double work = (double)p->m * (double)p->n * (double)(p->k + 1);
  double target = n_cores > 1 ? work * (double)p->batch / n_cores : INFINITY;
  int64_t want = (int64_t)llround(work / target);
  if (want < 1) want = 1;
  int64_t row_parts = sk__ceil_div(p->m, TILE_M_MAX), max_row_parts = sk__ceil_div(p->m, mr);
  if (row_parts < want) row_parts = want < max_row_parts ? want : max_row_parts;
  int64_t col_parts = sk__ceil_div(p->n, TILE_N_MAX), max_col_parts = sk__ceil_div(p->n, nr);
  int64_t want_cols = sk__ceil_div(want, row_parts);
  if (col_parts < want_cols) col_parts = want_cols < max_col_parts ? want_cols : max_col_parts;
  qmm_plan *plan = malloc(sizeof *plan);
  if (!plan) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "quant_matmul: out of memory tiling");
  plan->tm = part_length(p->m, row_parts, mr);
  plan->tn = part_length(p->n, col_parts, nr);
  plan->row_parts = sk__ceil_div(p->m, plan->tm);
  plan->col_parts = sk__ceil_div(p->n, plan->tn);
  plan->qgemm_ws = sk__align_up(sk__qgemm_workspace_size(plan->tm, plan->tn, p->k));
  /* [qgemm][int32 tile][scale, offset, int32 bias, float bias, fp32 row: tn each] */
  out->workspace_bytes = plan->qgemm_ws + sk__align_up((size_t)(plan->tm * plan->tn) * 4) +
                         5 * sk__align_up((size_t)plan->tn * 4);
  out->n_blocks = p->batch * plan->row_parts * plan->col_parts;
  out->plan = plan;
  return SK_STATUS_OK;
}

/* Rounds to an integer (half to even) for |v| <= 2^22: adding 1.5 * 2^23
 * leaves no fraction bits, so the fp32 add rounds in the default mode. */
sk_status sk__qmm_pack(const sk__node_io *io, void **packed, size_t *bytes) {
  const qmm_params *p = io->params;
  const sk__tensor *x2 = &io->in[QMM_X2].tensors[0];
  int64_t n_mats = p->k > 0 && p->n > 0 ? sk__tensor_numel(x2) / (p->k * p->n) : 0;
  sk__weight_matrix *mats = calloc((size_t)n_mats + 1, sizeof *mats);
  if (!mats) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "quant_matmul: out of memory");
  for (int64_t i = 0; i < n_mats; i++)
    mats[i] = (sk__weight_matrix){x2->data ? (const int8_t *)x2->data + i * p->k * p->n : NULL, SK_INT8, p->k, p->n,
                                  p->n, false};
  sk_status st = sk__pack_weights(SK_PACK_INT8, mats, n_mats, "quant_matmul", io->isa, io->numerics, packed, bytes);
  free(mats);
  return st;
}

/* What of the planned output this run has (a run-time token count, op.h):
 * y's leading dimension follows the tokens (the shape rule carries x1's or
 * x2's), so without batch dims y's rows (x1's, pertoken_scale's) are the
 * token rows, and with them its leading batch dim: only the matrices of
 * its live entries exist. Both are the planned extents in a static run. */

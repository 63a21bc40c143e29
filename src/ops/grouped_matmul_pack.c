/* grouped_matmul: packing constant weights once, at compile.
 *
 * Every tile of the float path packs the columns of B it reads into the
 * micro-kernel's fp32 panels before it multiplies. When the weights are
 * graph constants that work is the same on every run, so the pack hook
 * does it once for the whole of each group's B, in the layout of the GEMM
 * path chosen at compile (sk__cpu_isa), and the tiles read the panels
 * instead (sk__gemm_problem.b_packed). The panels hold the same fp32
 * values a tile would pack, so results are bitwise unchanged. A weight that
 * is not a constant (its data unknown at compile) leaves the node unpacked.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "ops/grouped_matmul.h"

/* The packed block: a header with each group's panels' byte offset from
 * the block's start (0: the group has no panels), then the panels. */
typedef struct gmm_packed {
  sk__isa isa;
  int64_t n_groups;
  size_t offset[];
} gmm_packed;

sk_status sk__gmm_pack(const sk__node_io *io, void **packed, size_t *bytes) {
  const gmm_params *p = io->params;
  *packed = NULL;
  *bytes = 0;
  if (p->quant) return SK_STATUS_OK; /* the int8 path packs per tile */
  sk__isa isa = sk__cpu_isa();
  size_t total = sk__align_up(sizeof(gmm_packed) + (size_t)p->n_groups * sizeof(size_t));
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    if (!q.w && q.k > 0 && q.n > 0) return SK_STATUS_OK; /* not a constant */
    total += sk__align_up(sk__gemm_packed_b_size(isa, q.k, q.n));
  }
  gmm_packed *block = sk__aligned_alloc(total);
  if (!block) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "grouped_matmul: out of memory packing %zu bytes of weights", total);
  block->isa = isa;
  block->n_groups = p->n_groups;
  size_t at = sk__align_up(sizeof(gmm_packed) + (size_t)p->n_groups * sizeof(size_t));
  for (int64_t g = 0; g < p->n_groups; g++) {
    gmm_group q = sk__gmm_group(io, g);
    size_t size = sk__gemm_packed_b_size(isa, q.k, q.n);
    block->offset[g] = size ? at : 0;
    if (size) sk__gemm_pack_b(isa, q.w, q.w_dtype, q.n, q.k, q.n, (float *)(void *)((char *)block + at));
    at += sk__align_up(size);
  }
  *packed = block;
  *bytes = total;
  return SK_STATUS_OK;
}

const float *sk__gmm_packed_weight(const sk__node_io *io, int64_t g) {
  const gmm_packed *block = io->packed;
  /* Panels of another ISA's width would be read wrongly: only the path
   * packed for (SK_ISA is read once per process, so this always holds in
   * practice; the check keeps a mismatch merely slow). */
  if (!block || block->isa != sk__cpu_isa() || g >= block->n_groups || !block->offset[g]) return NULL;
  return (const float *)(const void *)((const char *)block + block->offset[g]);
}

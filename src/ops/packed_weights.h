/* Weights packed once, at compile (an op's pack hook): each weight matrix
 * of a node in the panel layout its GEMM's micro-kernel reads, so no run
 * repacks them. The panels hold exactly the values a tile would pack, so
 * results are bitwise unchanged; they are laid out for the GEMM path
 * chosen at compile (sk__cpu_isa), and a node run on another path simply
 * packs per tile as without constants. */
#ifndef SK_OPS_PACKED_WEIGHTS_H
#define SK_OPS_PACKED_WEIGHTS_H

#include "ops/op.h"

typedef enum sk__pack_kind {
  SK_PACK_FLOAT, /* fp32 / fp16 / bf16 B for kernels/gemm (fp32 panels) */
  SK_PACK_INT8,  /* int8 B for kernels/qgemm (panels and column sums) */
} sk__pack_kind;

/* One weight matrix B [k, n] (row stride ldb elements); data NULL when it
 * is not a constant (then nothing of the node is packed). */
typedef struct sk__weight_matrix {
  const void *data;
  sk_dtype dtype;
  int64_t k, n, ldb;
  /* data is B transposed, [n, k] dense (torch's Linear layout): packed
   * through a transposed copy of one matrix at a time. */
  bool transposed;
} sk__weight_matrix;

/* Packs mats[0..n) for the kernels of isa and numerics (the node's
 * io->isa, io->numerics: bf16 panels take the AMX contract's layout) into
 * one aligned block (*packed, *bytes; both NULL / 0 when some matrix is
 * not a constant). `op` names the node in errors. */
sk_status sk__pack_weights(sk__pack_kind kind, const sk__weight_matrix *mats, int64_t n, const char *op,
                           sk__isa isa, sk_numerics numerics, void **packed, size_t *bytes);

/* Matrix i's packed B in a node's io->packed for the kernels of isa,
 * numerics and kind, or NULL (not packed, or packed for another path or
 * kind). */
const void *sk__packed_weight(const void *packed, sk__pack_kind kind, sk__isa isa, sk_numerics numerics, int64_t i);

#endif

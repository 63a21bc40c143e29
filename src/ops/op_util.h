/* Small helpers shared by the op files: block splitting of flat ranges and
 * dtype predicates for messages. */
#ifndef SK_OPS_OP_UTIL_H
#define SK_OPS_OP_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ops/op.h"

/* The tensor of optional single slot i at build time, NULL when it is
 * absent (the schema gives a single slot at most one tensor). */
static inline const sk__tensor *sk__ctx_optional(sk__build_ctx *ctx, int i) {
  const sk__slot *s = sk__ctx_slot(ctx, i);
  return s->count ? &s->tensors[0] : NULL;
}

/* The name of a node's vector kernels for sk plan and sk_program_describe
 * (op.h: kernel_name): what they compute, and the path the families
 * (conversion, activation, MoE selection) take for the node's ISA,
 * AVX-512 from that rung up, else AVX2, else scalar. */
#define SK__VECTOR_KERNEL_NAME(isa, what) \
  ((isa) >= SK_ISA_AVX512 ? what " (avx512)" : (isa) >= SK_ISA_AVX2 ? what " (avx2)" : what " (scalar)")

static inline bool sk__is_float(sk_dtype d) { return d == SK_FP32 || d == SK_FP16 || d == SK_BF16; }

/* The one quiet NaN a NaN result is stored as where two NaNs can meet:
 * which NaN operand an x86 add or multiply propagates depends on the
 * operand order the compiler picked, and every path is compared bitwise. */
static inline float sk__canonical_nan(void) {
  uint32_t u = 0x7FC00000u;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline int64_t sk__ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Splits n elements into blocks of whole multiples of grain, at least
 * min_block elements each, about one block per core (more cores, smaller
 * blocks). Deterministic in (n, n_cores). */
static inline int64_t sk__flat_block_size(int64_t n, int n_cores, int64_t grain, int64_t min_block) {
  int64_t per_core = sk__ceil_div(n, n_cores > 0 ? n_cores : 1);
  if (per_core < min_block) per_core = min_block;
  return sk__ceil_div(per_core, grain) * grain;
}

/* Tiling of a flat range: n_blocks of block_size elements (the last shorter). */
static inline sk__tiling sk__flat_tiling(int64_t n, int64_t block_size) {
  sk__tiling t = {0};
  t.n_blocks = n > 0 ? sk__ceil_div(n, block_size) : 0;
  return t;
}

/* Tiling of `rows` rows of `row_values` values each into blocks of whole
 * rows, about one per core, each of at least min_values values (or one
 * row): the split of row-wise ops, whose results never depend on it. */
static inline sk__tiling sk__row_tiling(int64_t rows, int64_t row_values, int n_cores, int64_t min_values) {
  int64_t min_rows = row_values >= min_values ? 1 : min_values / (row_values > 0 ? row_values : 1);
  return sk__flat_tiling(rows, sk__flat_block_size(rows, n_cores, 1, min_rows));
}

/* Element range [*begin, *end) of block b when n elements are split into
 * n_blocks nearly equal contiguous blocks (the last may be shorter). */
static inline void sk__flat_block_range(int64_t n, int64_t n_blocks, int64_t b, int64_t *begin, int64_t *end) {
  int64_t bs = sk__ceil_div(n, n_blocks);
  *begin = b * bs < n ? b * bs : n;
  *end = *begin + bs < n ? *begin + bs : n;
}

/* ---- a run-time token count (op.h, sk__node_io.tokens) ---- */

/* Rows of t's leading dimension that exist in this run: all of them unless
 * t is dynamic and the run has fewer tokens than were planned. */
static inline int64_t sk__live_rows(const sk__node_io *io, const sk__tensor *t) {
  if (t->rank == 0) return 1;
  if (!t->dynamic || io->planned_tokens <= 0 || io->tokens >= io->planned_tokens) return t->shape[0];
  return t->shape[0] / io->planned_tokens * io->tokens;
}

/* Elements of t that exist in this run (its live rows, whole). */
static inline int64_t sk__live_numel(const sk__node_io *io, const sk__tensor *t) {
  int64_t rows = sk__live_rows(io, t);
  if (t->rank == 0 || rows == t->shape[0]) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->shape[d];
    return n;
  }
  int64_t n = rows;
  for (int d = 1; d < t->rank; d++) n *= t->shape[d];
  return n;
}

/* Clips a planned range [*begin, *end) to [0, live). */
static inline void sk__clip(int64_t *begin, int64_t *end, int64_t live) {
  if (*end > live) *end = live;
  if (*begin > *end) *begin = *end;
}

/* The reference of a view op: a copy of the bytes it views, from byte
 * offset on in its input (the executors alias instead of copying). */
static inline void sk__view_reference(const sk__node_io *io, int64_t offset) {
  const char *from = (const char *)io->in[0].tensors[0].data + offset;
  if (io->out[0].data != from) memcpy(io->out[0].data, from, sk__tensor_bytes(&io->out[0]));
}

#endif

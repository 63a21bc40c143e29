/* Shared by the elementwise op's definition (elementwise.c) and its fast
 * kernel (elementwise_kernel.c): the parsed attributes and the per-element
 * arithmetic both the kernel and the reference use. */
#ifndef SK_OPS_ELEMENTWISE_H
#define SK_OPS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/broadcast.h"
#include "ops/op.h"

enum { SK__EW_SLOT_X, SK__EW_SLOT_Y };

typedef enum { SK__EW_SQUARE, SK__EW_ADD, SK__EW_MUL } sk__ew_kind;

typedef struct sk__ew_params {
  sk__ew_kind kind;
  bool has_scalar;    /* y is the attribute `scalar`, not a tensor */
  float scalar_f32;   /* float x: the scalar rounded to fp32 */
  int64_t scalar_int; /* integer x: the scalar, exact */
  sk__bcast_loop loop; /* over the output; operand 0 is x, 1 is y (x for square) */
} sk__ew_params;

static inline float sk__ew_f32(sk__ew_kind kind, float a, float b) {
  return kind == SK__EW_SQUARE ? a * a : kind == SK__EW_ADD ? a + b : a * b;
}

/* Integer arithmetic in uint64 wraps exactly like two's complement in the
 * narrower type once the result is truncated back. For bool operands (0 or
 * 1) stored back as != 0, add is logical or, mul and square logical and. */
static inline uint64_t sk__ew_u64(sk__ew_kind kind, uint64_t a, uint64_t b) {
  return kind == SK__EW_SQUARE ? a * a : kind == SK__EW_ADD ? a + b : a * b;
}

/* Element i of an integer or bool buffer (bool: any nonzero byte is 1). */
static inline uint64_t sk__ew_load_int(const void *p, sk_dtype dt, int64_t i) {
  switch (dt) {
    case SK_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case SK_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case SK_BOOL: return ((const uint8_t *)p)[i] != 0;
    case SK_UINT8: return ((const uint8_t *)p)[i];
    default: return (uint64_t)((const int64_t *)p)[i];
  }
}

/* Stores the low bits of v (bool: v != 0). */
static inline void sk__ew_store_int(void *p, sk_dtype dt, int64_t i, uint64_t v) {
  switch (dt) {
    case SK_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case SK_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case SK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case SK_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
  }
}

/* The fast kernel: output elements [begin, end) of the node. */
void sk__ew_compute(const sk__node_io *io, int64_t begin, int64_t end);

#endif

/* Broadcasting of two operands to one output shape (numpy / torch rules):
 * shapes are right-aligned, a missing dimension counts as 1, and a
 * dimension of 1 stretches to the other operand's size. */
#ifndef SK_OPS_BROADCAST_H
#define SK_OPS_BROADCAST_H

#include <stdint.h>

#include "ops/op.h"

/* The broadcast shape of x and y (out_shape holds SK_MAX_RANK dims). Fails
 * with SK_STATUS_INVALID_SHAPE naming op, input y, both shapes and the first
 * output dimension where they disagree. */
sk_status sk__broadcast_shapes(const char *op, const sk__tensor *x, const sk__tensor *y, int *out_rank,
                               int64_t *out_shape);

/* How to walk an output of a broadcast: its dimensions with size-1 ones
 * dropped and neighbours merged wherever both operands are contiguous across
 * them (so equal shapes become one flat run), and each operand's element
 * stride per dimension (0 where it is broadcast). */
typedef struct sk__bcast_loop {
  int rank; /* >= 1 */
  int64_t shape[SK_MAX_RANK];
  int64_t stride[2][SK_MAX_RANK];
} sk__bcast_loop;

/* The loop over an output of out_rank / out_shape reading a and b, each of
 * a shape that broadcasts to it; b may be NULL (a scalar: stride 0). */
void sk__bcast_loop_init(sk__bcast_loop *loop, int out_rank, const int64_t *out_shape, const sk__tensor *a,
                         const sk__tensor *b);

/* Element offsets in a and b of flat output element i. */
static inline void sk__bcast_offsets(const sk__bcast_loop *loop, int64_t i, int64_t *off_a, int64_t *off_b) {
  int64_t a = 0, b = 0;
  for (int d = loop->rank - 1; d >= 0; d--) {
    int64_t idx = i % loop->shape[d];
    i /= loop->shape[d];
    a += idx * loop->stride[0][d];
    b += idx * loop->stride[1][d];
  }
  *off_a = a;
  *off_b = b;
}

#endif

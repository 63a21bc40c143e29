/* Broadcast shapes and the loop that walks a broadcast output (broadcast.h). */
#include "ops/broadcast.h"

#include "core/error.h"

/* Dimension d of t counted from the right (0 = last); 1 past its rank. */
static int64_t dim_from_right(const sk__tensor *t, int d) { return d < t->rank ? t->shape[t->rank - 1 - d] : 1; }

sk_status sk__broadcast_shapes(const char *op, const sk__tensor *x, const sk__tensor *y, int *out_rank,
                               int64_t *out_shape) {
  int rank = x->rank > y->rank ? x->rank : y->rank;
  for (int d = 0; d < rank; d++) {
    int64_t a = dim_from_right(x, d), b = dim_from_right(y, d);
    if (a != b && a != 1 && b != 1) {
      char xs[SK_SHAPE_STR_MAX], ys[SK_SHAPE_STR_MAX];
      return sk__fail(SK_STATUS_INVALID_SHAPE,
                      "%s: input y: shape %s does not broadcast with x's %s (output dimension %d: %lld vs %lld)", op,
                      sk__shape_str(y->rank, y->shape, ys, sizeof ys), sk__shape_str(x->rank, x->shape, xs, sizeof xs),
                      rank - 1 - d, (long long)b, (long long)a);
    }
    out_shape[rank - 1 - d] = a == 1 ? b : a;
  }
  *out_rank = rank;
  return SK_STATUS_OK;
}

/* t's element stride along output dimension d (right-aligned); 0 where t is
 * broadcast. */
static int64_t stride_of(const sk__tensor *t, int out_rank, int d) {
  if (!t) return 0;
  int td = d - (out_rank - t->rank);
  return td < 0 || t->shape[td] == 1 ? 0 : t->strides[td];
}

void sk__bcast_loop_init(sk__bcast_loop *loop, int out_rank, const int64_t *out_shape, const sk__tensor *a,
                         const sk__tensor *b) {
  *loop = (sk__bcast_loop){.rank = 0};
  for (int d = 0; d < out_rank; d++) {
    if (out_shape[d] == 1) continue; /* one index: no stride matters */
    int64_t sa = stride_of(a, out_rank, d), sb = stride_of(b, out_rank, d);
    int k = loop->rank - 1;
    /* Merge into the previous dimension when both operands step across the
     * pair as one run (a broadcast operand: 0 and 0). */
    if (k >= 0 && loop->stride[0][k] == sa * out_shape[d] && loop->stride[1][k] == sb * out_shape[d]) {
      loop->shape[k] *= out_shape[d];
      loop->stride[0][k] = sa;
      loop->stride[1][k] = sb;
      continue;
    }
    loop->shape[loop->rank] = out_shape[d];
    loop->stride[0][loop->rank] = sa;
    loop->stride[1][loop->rank] = sb;
    loop->rank++;
  }
  if (loop->rank == 0) { /* every dimension is 1: one element */
    loop->rank = 1;
    loop->shape[0] = 1;
  }
}

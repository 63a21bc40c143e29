#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

void sk__tensor_init(sk__tensor *t, sk_dtype dtype, int rank, const int64_t *shape) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  /* Unsigned: ops call this on inferred output shapes before
   * sk_graph_add_op checks them (sk__shape_check), so it must not overflow. */
  uint64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->strides[i] = (int64_t)stride;
    stride *= (uint64_t)shape[i];
  }
}

int64_t sk__tensor_numel(const sk__tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

size_t sk__tensor_bytes(const sk__tensor *t) {
  return (size_t)sk__tensor_numel(t) * sk_dtype_size(t->dtype);
}

sk__tensor sk__tensor_view(const sk__tensor *t, int rank, const int64_t *shape) {
  sk__tensor v;
  sk__tensor_init(&v, t->dtype, rank, shape);
  v.data = t->data;
  return v;
}

bool sk__tensor_same_shape(const sk__tensor *a, const sk__tensor *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* 2^48 bytes: far beyond any real tensor, and small enough that sums and
 * products of a few sizes cannot overflow int64 anywhere downstream. */
#define SK_MAX_TENSOR_BYTES ((int64_t)1 << 48)

bool sk__shape_check(sk_dtype dtype, int rank, const int64_t *shape, char *why, size_t why_size) {
  if (rank < 0 || rank > SK_MAX_RANK) {
    snprintf(why, why_size, "rank %d outside [0, %d]", rank, SK_MAX_RANK);
    return false;
  }
  if (rank > 0 && !shape) {
    snprintf(why, why_size, "shape is NULL for rank %d", rank);
    return false;
  }
  int64_t bytes = (int64_t)sk_dtype_size(dtype);
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) {
      snprintf(why, why_size, "dimension %d is %lld (must be >= 0)", i, (long long)shape[i]);
      return false;
    }
    /* A zero dimension counts as 1 here: it empties the tensor but must not
     * excuse the others, or strides and partial products of the dims of
     * [0, 2^40, 2^40] would overflow int64. */
    int64_t d = shape[i] > 0 ? shape[i] : 1;
    if (bytes > SK_MAX_TENSOR_BYTES / d) {
      snprintf(why, why_size, "size exceeds 2^48 bytes");
      return false;
    }
    bytes *= d;
  }
  return true;
}

const char *sk__shape_str(int rank, const int64_t *shape, char *buf, size_t size) {
  size_t used = 0;
  used += (size_t)snprintf(buf + used, size - used, "[");
  for (int i = 0; i < rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

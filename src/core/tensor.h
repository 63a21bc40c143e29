/* Tensors: dtype, rank <= 8, shape and contiguous row-major strides (in
 * elements), and a data pointer that may be NULL while a graph is built. */
#ifndef SK_CORE_TENSOR_H
#define SK_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superkernel.h"

typedef struct sk__tensor {
  void *data;
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MAX_RANK];
  int64_t strides[SK_MAX_RANK];
  /* Its leading dimension follows the run-time token count (superkernel.h,
   * SK_DIM_DYNAMIC): shape[0] is the count the program was planned for
   * times a fixed multiple, and a run with fewer tokens has only that
   * multiple of its own count as live rows (ops/op_util.h, sk__live_rows). */
  bool dynamic;
} sk__tensor;

/* Fills dtype, rank, shape and contiguous strides; data = NULL. The caller
 * has validated rank and dims (sk__shape_check). */
void sk__tensor_init(sk__tensor *t, sk_dtype dtype, int rank, const int64_t *shape);
int64_t sk__tensor_numel(const sk__tensor *t);
size_t sk__tensor_bytes(const sk__tensor *t);
/* A view of t with another shape of the same element count (no copy). */
sk__tensor sk__tensor_view(const sk__tensor *t, int rank, const int64_t *shape);
/* Whether data is aligned for dtype's elements (to its size): the kernels
 * read elements through typed pointers, which C requires to be aligned.
 * numpy, torch and malloc buffers always are. */
static inline bool sk__dtype_aligned(sk_dtype dtype, const void *data) {
  size_t a = sk_dtype_size(dtype);
  return a == 0 || (uintptr_t)data % a == 0;
}

bool sk__tensor_same_shape(const sk__tensor *a, const sk__tensor *b);

/* Checks rank in [0, SK_MAX_RANK], every dim >= 0, and that the element
 * count and byte size fit comfortably in int64 / size_t. Returns false and
 * writes a reason into why (≥ 96 bytes) otherwise. */
bool sk__shape_check(sk_dtype dtype, int rank, const int64_t *shape, char *why, size_t why_size);

/* "[256, 180]" into buf; returns buf. */
const char *sk__shape_str(int rank, const int64_t *shape, char *buf, size_t size);
#define SK_SHAPE_STR_MAX 200

#endif

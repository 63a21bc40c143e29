/* Aligned allocation: every tensor buffer and workspace is 64-byte aligned so
 * SIMD loads never split a cache line at a buffer's start. */
#ifndef SK_CORE_ALLOC_H
#define SK_CORE_ALLOC_H

#include <stddef.h>

#define SK_ALIGNMENT 64

/* Returns NULL on failure or size 0 overflow; free with sk__aligned_free. */
void *sk__aligned_alloc(size_t size);
void *sk__aligned_calloc(size_t size);
void sk__aligned_free(void *p);

/* size rounded up to a multiple of SK_ALIGNMENT (no overflow check needed by
 * callers: sizes come from validated shapes well below SIZE_MAX / 2). */
static inline size_t sk__align_up(size_t size) {
  return (size + SK_ALIGNMENT - 1) & ~(size_t)(SK_ALIGNMENT - 1);
}

#endif

/* Aligned allocation: every tensor buffer and workspace is 64-byte aligned so
 * SIMD loads never split a cache line at a buffer's start. */
#ifndef SK_CORE_ALLOC_H
#define SK_CORE_ALLOC_H

#include <stddef.h>

#include "superkernel.h"

#define SK_ALIGNMENT 64

/* Returns NULL on failure or size 0 overflow; free with sk__aligned_free. */
void *sk__aligned_alloc(size_t size);
void *sk__aligned_calloc(size_t size);
void sk__aligned_free(void *p);

/* Memory that kernels stream through (weights packed at compile): of at
 * least SK_STREAMED_MIN bytes it is aligned to 2 MiB and, where the kernel
 * offers it (Linux madvise), asked to be backed by transparent huge pages.
 * A stream then crosses a page every 2 MiB instead of every 4 KiB: the
 * hardware prefetchers, which stop at page boundaries, keep running, and
 * one TLB entry covers 512 times the bytes. Smaller sizes are plain
 * sk__aligned_alloc. Free with sk__aligned_free. */
#define SK_STREAMED_MIN ((size_t)4 << 20)
void *sk__alloc_streamed(size_t size);

/* size rounded up to a multiple of SK_ALIGNMENT (no overflow check needed by
 * callers: sizes come from validated shapes well below SIZE_MAX / 2). */
static inline size_t sk__align_up(size_t size) {
  return (size + SK_ALIGNMENT - 1) & ~(size_t)(SK_ALIGNMENT - 1);
}

/* Grows *array (of elem bytes, capacity *cap) to hold at least need
 * elements, doubling; SK_STATUS_OUT_OF_MEMORY (the array kept) when it
 * cannot. */
sk_status sk__grow(void **array, size_t *cap, size_t need, size_t elem);
/* A malloc'd copy of s; NULL when out of memory. */
char *sk__strdup(const char *s);

#endif

#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *sk__aligned_alloc(size_t size) {
  void *p = NULL;
  if (size == 0) size = SK_ALIGNMENT;
  if (posix_memalign(&p, SK_ALIGNMENT, size) != 0) return NULL;
  return p;
}

void *sk__aligned_calloc(size_t size) {
  void *p = sk__aligned_alloc(size);
  if (p) memset(p, 0, size ? size : SK_ALIGNMENT);
  return p;
}

void sk__aligned_free(void *p) { free(p); }

void *sk__alloc_streamed(size_t size) {
  if (size < SK_STREAMED_MIN) return sk__aligned_alloc(size);
  const size_t huge = (size_t)2 << 20;
  void *p = NULL;
  if (posix_memalign(&p, huge, size) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  /* A hint over the whole 2 MiB pages inside the block (the tail's page
   * is shared with whatever follows); refused (THP "never"), the memory
   * is simply 4 KiB pages. */
  (void)madvise(p, size & ~(huge - 1), MADV_HUGEPAGE);
#endif
  return p;
}

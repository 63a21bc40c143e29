#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "core/alloc.h"
#include "core/error.h"

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

sk_status sk__grow(void **array, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return SK_STATUS_OK;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need) n *= 2;
  void *p = realloc(*array, n * elem);
  if (!p) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory growing an array");
  *array = p;
  *cap = n;
  return SK_STATUS_OK;
}

char *sk__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void sk_free(void *p) { free(p); }

#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

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

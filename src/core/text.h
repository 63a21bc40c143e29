/* A growing text buffer with printf-style appends, for generated C and
 * readable plans. A failed allocation marks the text failed; the caller
 * checks once at the end. */
#ifndef SK_CORE_TEXT_H
#define SK_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "superkernel.h"

typedef struct sk__text {
  char *buf;
  size_t len, cap;
  bool failed;
} sk__text;

void sk__text_put(sk__text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the text to *out (the caller frees it) and empties t; when an
 * append failed, frees it and returns SK_STATUS_OUT_OF_MEMORY naming fn. */
sk_status sk__text_take(sk__text *t, const char *fn, char **out);

#endif

/* A growing text buffer with printf-style appends, for generated C and
 * readable plans. A failed allocation marks the text failed; the caller
 * checks once at the end. */
#ifndef SK_CORE_TEXT_H
#define SK_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sk__text {
  char *buf;
  size_t len, cap;
  bool failed;
} sk__text;

void sk__text_put(sk__text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

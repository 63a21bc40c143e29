#include "core/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

void sk__text_put(sk__text *t, const char *fmt, ...) {
  if (t->failed) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = true;
    return;
  }
  if (t->buf && t->len + (size_t)n < t->cap) {
    t->len += (size_t)n;
    return;
  }
  size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)n;
  char *grown = realloc(t->buf, cap);
  if (!grown) {
    t->failed = true;
    return;
  }
  t->buf = grown;
  t->cap = cap;
  va_start(ap, fmt);
  vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

sk_status sk__text_take(sk__text *t, const char *fn, char **out) {
  if (!t->failed && !t->buf) sk__text_put(t, "%s", ""); /* an empty text is "" */
  if (t->failed) {
    free(t->buf);
    *t = (sk__text){0};
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  *out = t->buf;
  *t = (sk__text){0};
  return SK_STATUS_OK;
}

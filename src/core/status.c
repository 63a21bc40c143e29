/* Status strings (from the one X-macro list) and the per-thread last error. */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"

static const char *const status_strings[] = {
#define SK__STATUS_STRING(name, text) text,
    SK_STATUS_MAP(SK__STATUS_STRING)
#undef SK__STATUS_STRING
};

const char *sk_status_string(sk_status status) {
  if ((unsigned)status >= (unsigned)SK_STATUS_COUNT_) return "unknown status";
  return status_strings[status];
}

/* Thread-local like dlerror(): a message belongs to the thread whose call
 * failed, so concurrent users of the library never see each other's. */
static _Thread_local char last_error[1024];

const char *sk_last_error(void) { return last_error; }

void sk__clear_error(void) { last_error[0] = '\0'; }

sk_status sk__fail(sk_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  sk__log(SK_LOG_DEBUG, "%s: %s", sk_status_string(status), last_error);
  return status;
}

sk_status sk__fail_within(sk_status status, const char *fmt, ...) {
  char inner[sizeof last_error];
  snprintf(inner, sizeof inner, "%s", last_error);
  int n;
  va_list ap;
  va_start(ap, fmt);
  n = vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  /* The callee's message after ": ", cut where the buffer ends. */
  size_t at = n < 0 ? 0 : (size_t)n < sizeof last_error ? (size_t)n : sizeof last_error - 1;
  const char *parts[2] = {": ", inner};
  for (int i = 0; i < 2; i++)
    for (const char *c = parts[i]; *c && at + 1 < sizeof last_error; c++) last_error[at++] = *c;
  last_error[at] = '\0';
  sk__log(SK_LOG_DEBUG, "%s: %s", sk_status_string(status), last_error);
  return status;
}

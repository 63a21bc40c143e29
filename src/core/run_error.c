/* Errors found while a run is in progress (run_error.h). */
#include "core/run_error.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"

void sk__run_error_set(sk__run_error *e, sk_status status, const char *fmt, ...) {
  if (!e) return;
  int none = 0;
  if (!atomic_compare_exchange_strong_explicit(&e->state, &none, -1, memory_order_acquire, memory_order_relaxed))
    return; /* another block failed first */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  atomic_store_explicit(&e->state, (int)status, memory_order_release);
}

void sk__run_error_clear(sk__run_error *e) { atomic_store_explicit(&e->state, 0, memory_order_relaxed); }

sk_status sk__run_error_take(sk__run_error *e) {
  int state = atomic_load_explicit(&e->state, memory_order_acquire);
  if (state == 0) return SK_STATUS_OK;
  /* -1 (a message being written) cannot be seen here: the run loop takes
   * the slot after the launch, which waited for every block. */
  sk_status st = sk__fail(state > 0 ? (sk_status)state : SK_STATUS_INTERNAL, "%s", e->message);
  atomic_store_explicit(&e->state, 0, memory_order_relaxed);
  return st;
}

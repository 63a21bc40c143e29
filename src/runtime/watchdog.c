/* The watchdog's bookkeeping (see watchdog.h); the deadline itself is
 * enforced inside the waits (wait.c). */
#include "runtime/watchdog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

int64_t sk__watchdog_resolve_ms(int64_t configured_ms) {
  if (configured_ms != 0) return configured_ms;
  const char *env = getenv("SK_WATCHDOG_MS");
  if (env && *env) {
    char *end;
    errno = 0;
    long long v = strtoll(env, &end, 10);
    if (errno == 0 && *end == '\0' && v != 0) return v;
    sk__log(SK_LOG_WARN, "SK_WATCHDOG_MS='%s' is not a non-zero integer (ms; negative: never); using %d", env,
            SK_WATCHDOG_DEFAULT_MS);
  }
  return SK_WATCHDOG_DEFAULT_MS;
}

void sk__watchdog_init(sk__watchdog *wd, int64_t timeout_ms) {
  /* Clamp so neither the conversion to ns nor now + timeout can overflow
   * (~73 years is "never"). */
  if (timeout_ms > INT64_MAX / 4 / 1000000) timeout_ms = INT64_MAX / 4 / 1000000;
  wd->timeout_ns = timeout_ms > 0 ? timeout_ms * 1000000 : 0;
  atomic_init(&wd->tripped, 0);
  wd->message[0] = '\0';
}

void sk__watchdog_trip(sk__watchdog *wd, const char *who, const char *what, int core) {
  int expected = 0;
  /* The message is written after the claim and read by the launcher after
   * the launch completes (the team's completion count is the release/acquire
   * pair), so other cores never read it while it is being written. */
  if (!atomic_compare_exchange_strong(&wd->tripped, &expected, 1)) return;
  snprintf(wd->message, sizeof wd->message,
           "watchdog: %s: core %d waited %lld ms %s; a block never got there (a kernel that skips its barrier) "
           "or took longer than that; the run was abandoned (the limit is the compile config's watchdog_ms or "
           "$SK_WATCHDOG_MS)",
           who ? who : "?", core < 0 ? 0 : core, (long long)(wd->timeout_ns / 1000000), what ? what : "");
}

static _Thread_local sk__watchdog *tl_current;

void sk__watchdog_set_current(sk__watchdog *wd) { tl_current = wd; }
sk__watchdog *sk__watchdog_current(void) { return tl_current; }

sk_status sk__watchdog_take(sk__watchdog *wd) {
  if (!sk__watchdog_tripped(wd)) return SK_STATUS_OK;
  atomic_store(&wd->tripped, 0);
  return sk__fail(SK_STATUS_TIMEOUT, "%s", wd->message);
}

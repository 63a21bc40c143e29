/* The log hook. The default handler writes "superkernel: warning: ..." lines
 * to stderr, each distinct warning once; the level comes from $SK_LOG_LEVEL
 * the first time it is needed. A handler set by the caller gets every
 * message. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "core/error.h"
#include "core/fork.h"

static const char *level_name(sk_log_level level) {
  switch (level) {
    case SK_LOG_DEBUG: return "debug";
    case SK_LOG_INFO: return "info";
    case SK_LOG_WARN: return "warning";
    case SK_LOG_ERROR: return "error";
    default: return "log";
  }
}

/* Whether the default handler has printed this warning before. One call
 * can meet the same cause many times (an options string is parsed for the
 * program and again for each scope, $SK_WATCHDOG_MS is read by each run
 * context), and a warning repeated is noise that hides the next one: like
 * Python's warnings, each distinct text is printed once per process. The
 * last 256 distinct texts are remembered, by a 64-bit FNV-1a hash. */
static bool seen_before(const char *message) {
  static sk__fork_mutex seen_lock = SK__FORK_MUTEX_INITIALIZER;
  static uint64_t seen[256];
  static size_t n_seen;
  uint64_t h = 1469598103934665603u;
  for (const unsigned char *c = (const unsigned char *)message; *c; c++) h = (h ^ *c) * 1099511628211u;
  sk__fork_mutex_lock(&seen_lock);
  size_t n = n_seen < 256 ? n_seen : 256;
  bool found = false;
  for (size_t i = 0; i < n && !found; i++) found = seen[i] == h;
  if (!found) seen[n_seen++ % 256] = h;
  sk__fork_mutex_unlock(&seen_lock);
  return found;
}

void sk_log_default(sk_log_level level, const char *message) {
  if (!message) return;
  if (level == SK_LOG_WARN && seen_before(message)) return;
  fprintf(stderr, "superkernel: %s: %s\n", level_name(level), message);
}

static void default_handler(sk_log_level level, const char *message, void *user) {
  (void)user;
  sk_log_default(level, message);
}

/* Handler and user pointer change together, so they sit under one lock;
 * the level is read on every sk__log call, so it is a lone atomic. */
static sk__fork_mutex handler_lock = SK__FORK_MUTEX_INITIALIZER;
static sk_log_fn handler = default_handler;
static void *handler_user;
static atomic_int current_level = -1; /* -1: not yet read from the environment */

/* $SK_LOG_LEVEL: debug, info, warn, error or off; unset or empty: warn.
 * Anything else is warn too, and *bad says so: like the other $SK_*
 * variables, a typo is a warning, not a failure (logging is never
 * correctness). */
static sk_log_level level_from_env(const char **bad) {
  *bad = NULL;
  const char *s = getenv("SK_LOG_LEVEL");
  if (!s || !*s) return SK_LOG_WARN;
  static const char *const names[] = {"debug", "info", "warn", "error", "off"};
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) return (sk_log_level)i;
  *bad = s;
  return SK_LOG_WARN;
}

sk_log_level sk_get_log_level(void) {
  int level = atomic_load_explicit(&current_level, memory_order_relaxed);
  if (level < 0) {
    const char *bad;
    level = (int)level_from_env(&bad);
    int expected = -1;
    if (!atomic_compare_exchange_strong(&current_level, &expected, level)) return (sk_log_level)expected;
    /* Only the thread that settled the level warns, and only now: the
     * warning goes through sk__log, which asks for the level again. */
    if (bad)
      sk__log(SK_LOG_WARN, "SK_LOG_LEVEL=\"%.64s\" ignored: expected debug, info, warn, error or off; logging at warn",
              bad);
  }
  return (sk_log_level)level;
}

void sk_set_log_level(sk_log_level level) {
  /* Compared as int: the enum has no negative values, so the compiler may
   * make it unsigned and a "< DEBUG" test on it would never be true. */
  int l = (int)level;
  if (l < (int)SK_LOG_DEBUG) l = SK_LOG_DEBUG;
  if (l > (int)SK_LOG_OFF) l = SK_LOG_OFF;
  atomic_store(&current_level, l);
}

void sk_set_log_handler(sk_log_fn fn, void *user) {
  sk__fork_mutex_lock(&handler_lock);
  handler = fn ? fn : default_handler;
  handler_user = fn ? user : NULL;
  sk__fork_mutex_unlock(&handler_lock);
}

void sk__log(sk_log_level level, const char *fmt, ...) {
  if (level < sk_get_log_level() || level >= SK_LOG_OFF) return;
  char message[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  sk__fork_mutex_lock(&handler_lock);
  sk_log_fn fn = handler;
  void *user = handler_user;
  sk__fork_mutex_unlock(&handler_lock);
  fn(level, message, user);
}

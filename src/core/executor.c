/* Executor names, from the one list SK_EXECUTOR_MAP (superkernel.h), and
 * how SK_EXECUTOR_DEFAULT resolves through $SK_EXECUTOR (executor.h). */
#include "core/executor.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char *const NAMES[] = {
#define SK__EXECUTOR_NAME(name, text) text,
    SK_EXECUTOR_MAP(SK__EXECUTOR_NAME)
#undef SK__EXECUTOR_NAME
};

const char *sk_executor_name(sk_executor executor) {
  return executor >= 0 && executor < SK_EXECUTOR_COUNT_ ? NAMES[executor] : "invalid";
}

/* "a, b, c or d" of every name (env_only: those $SK_EXECUTOR may give). */
static const char *names_list(char *buf, size_t size, bool env_only) {
  int listed[SK_EXECUTOR_COUNT_], n = 0;
  for (int e = 0; e < SK_EXECUTOR_COUNT_; e++)
    if (!env_only || (e != SK_EXECUTOR_DEFAULT && e != SK_EXECUTOR_REFERENCE)) listed[n++] = e;
  buf[0] = '\0';
  for (int k = 0; k < n; k++) {
    strncat(buf, k == 0 ? "" : k + 1 == n ? " or " : ", ", size - strlen(buf) - 1);
    strncat(buf, NAMES[listed[k]], size - strlen(buf) - 1);
  }
  return buf;
}

sk_status sk_executor_parse(const char *name, sk_executor *executor_out) {
  sk__clear_error();
  if (!name || !executor_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_executor_parse: %s is NULL", !name ? "name" : "executor_out");
  for (int e = 0; e < SK_EXECUTOR_COUNT_; e++)
    if (strcmp(name, NAMES[e]) == 0) {
      *executor_out = (sk_executor)e;
      return SK_STATUS_OK;
    }
  char accepted[128];
  return sk__fail(SK_STATUS_INVALID_ARGUMENT, "executor '%s': expected %s", name,
                  names_list(accepted, sizeof accepted, false));
}

sk_status sk__executor_resolve(sk_executor requested, const char *who, sk_executor *out) {
  *out = requested;
  if (requested != SK_EXECUTOR_DEFAULT) return SK_STATUS_OK;
  const char *env = getenv("SK_EXECUTOR");
  *out = SK_EXECUTOR_AUTO;
  if (!env || !*env) return SK_STATUS_OK;
  sk_executor e;
  /* The environment picks among the executors that run super kernels or not;
   * the reference executor is for tests, asked for in code. */
  if (sk_executor_parse(env, &e) == SK_STATUS_OK && e != SK_EXECUTOR_DEFAULT && e != SK_EXECUTOR_REFERENCE) {
    *out = e;
    return SK_STATUS_OK;
  }
  char accepted[128];
  return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: SK_EXECUTOR=%s: expected %s", who, env,
                  names_list(accepted, sizeof accepted, true));
}

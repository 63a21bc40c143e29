/* See numerics.h. */
#include "core/numerics.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

const char *sk_numerics_name(sk_numerics numerics) {
  switch (numerics) {
    case SK_NUMERICS_UNSET: return "unset";
    case SK_NUMERICS_DEFAULT: return "default";
    case SK_NUMERICS_AMX: return "amx";
  }
  return "unknown";
}

sk_status sk__numerics_resolve(sk_numerics asked, const char *fn, sk_numerics *out) {
  if (asked == SK_NUMERICS_DEFAULT || asked == SK_NUMERICS_AMX) {
    *out = asked;
    return SK_STATUS_OK;
  }
  if (asked != SK_NUMERICS_UNSET)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: numerics = %d: expected SK_NUMERICS_UNSET, _DEFAULT or _AMX", fn,
                    (int)asked);
  const char *env = getenv("SK_NUMERICS");
  if (!env || !*env || strcmp(env, "default") == 0) *out = SK_NUMERICS_DEFAULT;
  else if (strcmp(env, "amx") == 0) *out = SK_NUMERICS_AMX;
  else
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: SK_NUMERICS=%s: expected default or amx", fn, env);
  return SK_STATUS_OK;
}

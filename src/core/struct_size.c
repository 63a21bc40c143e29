/* The struct_size rule (struct_size.h). */
#include "core/struct_size.h"

#include "core/error.h"

sk_status sk__struct_size(const char *fn, const char *what, const char *type, size_t given, size_t min, size_t max,
                          size_t *size_out) {
  size_t size = given ? given : max;
  if (size < min || size > max)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "%s: %s = %zu: expected %zu..%zu, or 0 (set it to sizeof(%s) of the header you compiled with)", fn,
                    what, given, min, max, type);
  *size_out = size;
  return SK_STATUS_OK;
}

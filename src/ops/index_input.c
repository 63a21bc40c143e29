/* The range check of index inputs (index_input.h). */
#include "ops/index_input.h"

#include "core/run_error.h"

bool sk__indices_in_range(const sk__node_io *io, const sk__tensor *ix, int64_t n, int64_t bound, const char *message) {
  for (int64_t i = 0; i < n; i++) {
    const int64_t at = sk__index_at(ix, i);
    if (at < 0 || at >= bound) {
      sk__run_error_set(io->run_error, SK_STATUS_INVALID_ARGUMENT, message, io->name ? io->name : "node",
                        (long long)i, (long long)at, (long long)bound);
      return false;
    }
  }
  return true;
}

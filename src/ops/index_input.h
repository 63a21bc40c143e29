/* Index inputs read when an op runs: int32 or int64 tensors whose values
 * pick rows of another tensor (attention's and kv_cache_write's positions,
 * rotary_embedding's positions into its table, embedding's ids). The graph
 * knows their shapes, never their values, so an op checks every live entry
 * before it reads or writes through any of them; a value out of range fails
 * the run (core/run_error.h) with the op's message, naming the entry, its
 * value and the bound. Every block makes the same check, so a failed run
 * has written nothing through a bad index on any core. */
#ifndef SK_OPS_INDEX_INPUT_H
#define SK_OPS_INDEX_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/op.h"

/* Entry i of index tensor ix (int32 or int64: the schema admits no other). */
static inline int64_t sk__index_at(const sk__tensor *ix, int64_t i) {
  return ix->dtype == SK_INT64 ? ((const int64_t *)ix->data)[i] : ((const int32_t *)ix->data)[i];
}

/* Whether ix's first n entries all lie in [0, bound). Else the run error of
 * io is set, naming the first entry that does not, and false is returned.
 * message is a printf format given, in this order, the node's name
 * (const char *), the entry's index, its value and the bound (long long
 * each): "%s (attention): input positions[%lld] = %lld: expected a cache
 * row in [0, %lld) ...". */
bool sk__indices_in_range(const sk__node_io *io, const sk__tensor *ix, int64_t n, int64_t bound, const char *message)
    __attribute__((format(printf, 5, 0)));

#endif

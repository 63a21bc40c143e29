/* An error found by a kernel while a run is in progress: data the graph
 * could not check (a run-time group list that decreases, say). Blocks run
 * on several cores at once and return nothing, so the first block to fail
 * records its message here and the others' are dropped; the run loop takes
 * it after the step and fails the run with it. A block that reports an
 * error leaves its outputs unspecified and must not read or write outside
 * its tensors. */
#ifndef SK_CORE_RUN_ERROR_H
#define SK_CORE_RUN_ERROR_H

#include <stdatomic.h>

#include "superkernel.h"

typedef struct sk__run_error {
  atomic_int state; /* 0 none, -1 being written, else the sk_status */
  char message[512];
} sk__run_error;

/* Records status and the message (first caller wins; safe from any core). */
void sk__run_error_set(sk__run_error *e, sk_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* After a step: SK_STATUS_OK, or the recorded status with its message as
 * this thread's sk_last_error(); the slot is then empty again. */
sk_status sk__run_error_take(sk__run_error *e);
/* Forgets what the slot holds (a run's start: nothing of an earlier one). */
void sk__run_error_clear(sk__run_error *e);

#endif

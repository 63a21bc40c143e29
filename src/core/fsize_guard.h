/* Writing past the file-size limit (RLIMIT_FSIZE, `ulimit -f`) raises
 * SIGXFSZ, whose default action kills the process. A library must not
 * change the process's signal dispositions, so while a guard is held the
 * calling thread blocks SIGXFSZ: such a write then fails with EFBIG, which
 * the caller reports; release takes back any SIGXFSZ the writes raised,
 * and restores the thread's signal mask. Children forked meanwhile get
 * their own mask (the JIT's reaper resets it). */
#ifndef SK_CORE_FSIZE_GUARD_H
#define SK_CORE_FSIZE_GUARD_H

#include <signal.h>
#include <stdbool.h>

typedef struct sk__fsize_guard {
  sigset_t old_mask;
  bool was_pending; /* a SIGXFSZ pending before: not ours to take */
} sk__fsize_guard;

void sk__fsize_guard_hold(sk__fsize_guard *g);
void sk__fsize_guard_release(sk__fsize_guard *g);

#endif

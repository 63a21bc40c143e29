/* See fsize_guard.h. */
#include "core/fsize_guard.h"

#include <pthread.h>
#include <time.h>

void sk__fsize_guard_hold(sk__fsize_guard *g) {
  sigset_t xfsz, pending;
  sigemptyset(&xfsz);
  sigaddset(&xfsz, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz, &g->old_mask);
  g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
}

void sk__fsize_guard_release(sk__fsize_guard *g) {
  if (!g->was_pending) {
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    const struct timespec now = {0, 0};
    while (sigtimedwait(&xfsz, NULL, &now) == SIGXFSZ) {}
  }
  pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}

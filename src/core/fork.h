/* fork(): what a child must not inherit as it is.
 *
 * A child of fork() has only the thread that called fork(). A mutex that
 * another thread of the parent held at that moment (a program's run, a JIT
 * cache lookup, a kernel registration) is copied held, and the child's
 * first lock of it would wait for ever for a thread that does not exist
 * there. The library's mutexes that a child may take are sk__fork_mutex:
 * each remembers the fork generation it was made (or last renewed) in, and
 * its first lock in a later generation sets a fresh, free mutex in its
 * place. What such a mutex guards is state the holder was changing in the
 * parent; the child's copy of it is whatever that thread left, which each
 * user below tolerates (a program's run state is set again by every run;
 * the JIT cache's directory is re-read).
 *
 * The generation counts the forks in this process's ancestry since the
 * pthread_atfork handler was registered, which happens at the first call
 * of sk__fork_generation (a team's creation, a fork mutex's init or first
 * lock): a mutex never locked before a fork cannot have been held at it. */
#ifndef SK_CORE_FORK_H
#define SK_CORE_FORK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* The current fork generation (registers the handler at the first call). */
unsigned sk__fork_generation(void);

/* Whether the generation tracks forks (false only when pthread_atfork
 * failed: then callers compare process ids instead). */
bool sk__fork_tracked(void);

typedef struct sk__fork_mutex {
  pthread_mutex_t mutex;
  atomic_uint generation; /* the fork generation mutex was made for */
} sk__fork_mutex;

/* For a static mutex (generation 0, before any fork was counted). */
#define SK__FORK_MUTEX_INITIALIZER {PTHREAD_MUTEX_INITIALIZER, 0}

void sk__fork_mutex_init(sk__fork_mutex *m);
void sk__fork_mutex_destroy(sk__fork_mutex *m);
void sk__fork_mutex_lock(sk__fork_mutex *m);
void sk__fork_mutex_unlock(sk__fork_mutex *m);

#endif

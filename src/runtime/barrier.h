/* A reusable sense-reversing barrier over a fixed number of threads.
 *
 * The team's barrier (sk__team_barrier) is one of these over all cores of the
 * team; the planner makes its own over subsets of cores (the cube cores, the
 * vector cores of a super-kernel), which is why the count is a parameter and
 * not tied to a team. Waiting spins, yields, then sleeps (runtime/wait.h).
 *
 * Usage:
 *   sk__barrier_t *b = sk__aligned_alloc(sizeof *b);   // 64-byte aligned!
 *   sk__barrier_init(b, 3);
 *   ... each of the 3 participants, any number of times, in step:
 *   sk__barrier_wait(b);
 *
 * The struct has 64-byte-aligned members (counters on separate cache lines),
 * so it must live in 64-byte-aligned storage: sk__aligned_alloc, a static, or
 * a member of such a struct. Plain malloc is not enough.
 *
 * Every participant must call sk__barrier_wait the same number of times;
 * exactly `count` distinct threads take part in each episode. No destroy is
 * needed (no system resources are held); the memory may be freed once no
 * thread is inside sk__barrier_wait.
 */
#ifndef SK_RUNTIME_BARRIER_H
#define SK_RUNTIME_BARRIER_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/wait.h"
#include "superkernel.h"

typedef struct sk__barrier {
  /* Arrivals in the current episode; every participant writes it once per
   * episode, so it has a line of its own. */
  alignas(64) atomic_uint arrived;
  unsigned count; /* participants per episode; read-only after init */
  /* The generation ("sense"): bumped by the last arriver of each episode;
   * waiters spin on it. Separate line so waiters' reads do not slow arrivals. */
  sk__wait_word generation;
  sk__wait_watch watch; /* the watchdog and names for its message, or none */
} sk__barrier_t;

/* Prepares b for count participants (1..1024*1024). Returns
 * SK_STATUS_INVALID_ARGUMENT (with a message) for a NULL b or a bad count. */
sk_status sk__barrier_init(sk__barrier_t *b, int count);

/* Puts the barrier under watchdog wd (runtime/watchdog.h): a participant
 * that waits longer than its timeout trips it, naming `who` and `what`
 * (both must outlive the barrier). */
void sk__barrier_watch(sk__barrier_t *b, sk__watchdog *wd, const char *who, const char *what);

/* Blocks until all count participants of this episode have arrived. Every
 * write a participant made before its call is visible to every participant
 * after the call returns. Returns false instead when the barrier's watchdog
 * tripped (this wait timed out, or another one did): the episode did not
 * complete, and the barrier must be reset before it is used again. */
bool sk__barrier_wait(sk__barrier_t *b);

/* Whether a participant arriving now would wait: other participants of
 * this episode have yet to arrive (a relaxed peek, for deciding whether to
 * do useful work before waiting). */
static inline bool sk__barrier_others_pending(sk__barrier_t *b) {
  return atomic_load_explicit(&b->arrived, memory_order_relaxed) + 1 < b->count;
}

/* Back to the state sk__barrier_init left (the watch is kept), after a
 * launch abandoned by the watchdog. No thread may be inside a wait. */
void sk__barrier_reset(sk__barrier_t *b);

#endif

/* Spin → yield → sleep waiting on a 32-bit word (see wait.h).
 *
 * Lost wake-ups. A waiter about to sleep and a waker publishing a new value
 * run this handshake:
 *
 *   waiter                               waker
 *   sleepers += 1            (seq_cst)   value += delta          (seq_cst)
 *   v = value                (seq_cst)   s = sleepers            (seq_cst)
 *   if v is still old: futex_wait(old)   if s > 0: futex_wake(all)
 *
 * All four accesses are seq_cst, so they fall in one total order: either the
 * waiter's read of value comes after the waker's update (it sees the new value
 * and does not sleep), or the waker's read of sleepers comes after the
 * waiter's increment (it sees s > 0 and wakes). In the second case the waiter
 * may not be inside futex_wait yet; the kernel then finds value != old when it
 * gets there and returns at once (futex compares and sleeps atomically). No
 * fences are used (ThreadSanitizer does not model atomic_thread_fence), only
 * seq_cst operations on the two variables.
 *
 * The futex carries no ordering of its own: after every wake the word is
 * re-read with acquire (seq_cst) ordering, and that read is what makes the
 * publisher's writes visible.
 */
#include "runtime/wait.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(atomic_uint) == sizeof(uint32_t) && sizeof(uint32_t) == 4,
               "the futex word must be a plain 32-bit integer");

/* Spin and yield budgets. With a CPU per thread, 4000 pauses are about 0.1 ms
 * (PAUSE costs ~25 ns on the EPYC this was tuned on, ~40 ns on Skylake and
 * later Intel cores, a few ns on older ones): long enough to
 * cover the gap between back-to-back launches or barrier episodes, short
 * enough that an idle team stops burning CPU quickly. Oversubscribed, a few
 * pauses catch only the case where the value is about to change; yields then
 * hand the CPU to whoever we wait for, and the futex takes us off the run
 * queue altogether. */
enum {
  SPINS_DEDICATED = 4000,
  YIELDS_DEDICATED = 64,
  SPINS_OVERSUBSCRIBED = 32,
  YIELDS_OVERSUBSCRIBED = 8,
};

/* Worker threads of all live teams and the CPUs they share. Callers are
 * counted once, not once per team: one thread that owns several teams (a
 * benchmark comparing team sizes) is still one thread. Read relaxed once per
 * wait: a stale value only picks a less suitable budget. */
static atomic_int g_threads;
static atomic_int g_cpus;

void sk__wait_account(int delta_threads, int cpus) {
  if (delta_threads > 0 && cpus > 0)
    atomic_store_explicit(&g_cpus, cpus, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_threads, delta_threads, memory_order_relaxed);
}

void sk__wait_after_fork(void) { atomic_store_explicit(&g_threads, 0, memory_order_relaxed); }

static void wait_budget(int *spins, int *yields) {
  int threads = atomic_load_explicit(&g_threads, memory_order_relaxed);
  int cpus = atomic_load_explicit(&g_cpus, memory_order_relaxed);
  if (cpus > 0 && threads + 1 > cpus) {
    *spins = SPINS_OVERSUBSCRIBED;
    *yields = YIELDS_OVERSUBSCRIBED;
  } else {
    *spins = SPINS_DEDICATED;
    *yields = YIELDS_DEDICATED;
  }
}

/* Sleeps while *addr == expected, at most timeout_ns (0: no limit). EAGAIN
 * (value already changed), EINTR, ETIMEDOUT and spurious returns are all
 * handled by the caller re-reading the word. */
static void futex_wait(atomic_uint *addr, uint32_t expected, int64_t timeout_ns) {
  struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000), .tv_nsec = (long)(timeout_ns % 1000000000)};
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, timeout_ns > 0 ? &ts : NULL, NULL, 0);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* While asleep, a watched wait wakes this often to see whether another
 * core has tripped the watchdog (it cannot wake us: we sleep on our word). */
#define WATCH_POLL_NS ((int64_t)20 * 1000000)

static void futex_wake_all(atomic_uint *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void sk__wait_wake(sk__wait_word *w) {
  if (atomic_load_explicit(&w->sleepers, memory_order_seq_cst) > 0)
    futex_wake_all(&w->value);
}

/* The common loop. until_equal = 0: wait while value == v; 1: wait until
 * value == v. *out gets the value that ended the wait. wd may be NULL. */
static sk__wait_result wait_word(sk__wait_word *w, uint32_t v, int until_equal, sk__watchdog *wd, uint32_t *out) {
#define SK__WAIT_DONE(x) (until_equal ? (x) == v : (x) != v)
  uint32_t cur = atomic_load_explicit(&w->value, memory_order_acquire);
  *out = cur;
  if (SK__WAIT_DONE(cur)) return SK_WAIT_OK;

  int spins, yields;
  wait_budget(&spins, &yields);

  for (int i = 0; i < spins; i++) {
    sk__cpu_relax();
    /* Now and then give the CPU away: the thread we wait for may have been
     * placed on ours (the caller is never pinned), and would otherwise wait
     * out the whole spin. A yield with nobody else runnable costs ~0.5 us.
     * Then also look at the watchdog: a tripped one ends every wait. */
    if ((i & 255) == 255) {
      sched_yield();
      if (sk__watchdog_tripped(wd)) return SK_WAIT_ABORTED;
    }
    *out = cur = atomic_load_explicit(&w->value, memory_order_acquire);
    if (SK__WAIT_DONE(cur)) return SK_WAIT_OK;
  }
  for (int i = 0; i < yields; i++) {
    sched_yield();
    *out = cur = atomic_load_explicit(&w->value, memory_order_acquire);
    if (SK__WAIT_DONE(cur)) return SK_WAIT_OK;
    if (sk__watchdog_tripped(wd)) return SK_WAIT_ABORTED;
  }
  bool watched = wd && wd->timeout_ns > 0;
  int64_t deadline = watched ? now_ns() + wd->timeout_ns : 0;
  for (;;) {
    int64_t slice = 0;
    if (watched) {
      int64_t left = deadline - now_ns();
      if (left <= 0) return SK_WAIT_TIMED_OUT;
      slice = left < WATCH_POLL_NS ? left : WATCH_POLL_NS;
    }
    atomic_fetch_add_explicit(&w->sleepers, 1, memory_order_seq_cst);
    cur = atomic_load_explicit(&w->value, memory_order_seq_cst);
    /* cur is a value that does not end the wait: sleep only while the word
     * still holds exactly it. If it changes to another such value without a
     * wake (a non-final decrement), futex_wait returns EAGAIN and we go round
     * again with the newer value. */
    if (!SK__WAIT_DONE(cur)) futex_wait(&w->value, cur, slice);
    atomic_fetch_sub_explicit(&w->sleepers, 1, memory_order_relaxed);
    *out = cur = atomic_load_explicit(&w->value, memory_order_acquire);
    if (SK__WAIT_DONE(cur)) return SK_WAIT_OK;
    if (sk__watchdog_tripped(wd)) return SK_WAIT_ABORTED;
  }
#undef SK__WAIT_DONE
}

uint32_t sk__wait_while_equal(sk__wait_word *w, uint32_t old) {
  uint32_t now;
  (void)wait_word(w, old, 0, NULL, &now);
  return now;
}

void sk__wait_until_equal(sk__wait_word *w, uint32_t target) {
  uint32_t now;
  (void)wait_word(w, target, 1, NULL, &now);
}

sk__wait_result sk__wait_until_equal_watched(sk__wait_word *w, uint32_t target, sk__watchdog *wd) {
  uint32_t now;
  return wait_word(w, target, 1, wd, &now);
}

sk__wait_result sk__wait_while_equal_watched(sk__wait_word *w, uint32_t old, sk__watchdog *wd, uint32_t *now) {
  return wait_word(w, old, 0, wd, now);
}

/* Waiting on a 32-bit word: spin, then yield, then sleep.
 *
 * Every wait in the runtime (workers waiting for the next launch, a launcher
 * waiting for completion, barrier waiters) goes through one of the two wait
 * functions below, in three phases:
 *
 *   1. spin: re-read the word with a pause instruction between reads, for a
 *      bounded count. Wake-up latency is a cache-line transfer (~100 ns), which
 *      is what back-to-back launches and barriers need when every thread has a
 *      CPU of its own.
 *   2. yield: re-read the word, sched_yield() between reads, for a bounded
 *      count. When threads outnumber CPUs, the thread we wait for may be
 *      runnable but not running; yielding lets it run.
 *   3. sleep: futex(FUTEX_WAIT_PRIVATE) on the word itself, so an idle team or
 *      a heavily oversubscribed machine costs no CPU.
 *
 * Sleeping uses a raw futex rather than a pthread condvar: the wait word is
 * already the synchronising atomic, so the futex adds no memory ordering of its
 * own (ThreadSanitizer sees all the happens-before it needs through the C11
 * atomics) and the wake side needs no mutex. Lost wake-ups are excluded by a
 * Dekker-style handshake on a sleeper count, see wait.c.
 *
 * The spin and yield counts shrink when the live teams together have more
 * threads than there are CPUs (see sk__wait_account): spinning is then pure
 * waste, because the thread we wait for is likely descheduled.
 */
#ifndef SK_RUNTIME_WAIT_H
#define SK_RUNTIME_WAIT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/watchdog.h"

/* A word others wait on, and the number of threads asleep on it. Both sit on
 * one cache line: the waker reads `sleepers` right after writing `value`. */
typedef struct sk__wait_word {
  alignas(64) atomic_uint value;
  atomic_uint sleepers;
} sk__wait_word;

/* Waits until w->value != old; returns the new value, read with acquire
 * ordering (everything published before the change is visible). */
uint32_t sk__wait_while_equal(sk__wait_word *w, uint32_t old);

/* Waits until w->value == target (acquire). The word may pass through other
 * values meanwhile; only the change to target needs a sk__wait_wake. */
void sk__wait_until_equal(sk__wait_word *w, uint32_t target);

/* Watched waits (watchdog.h): the same, but a wait that has slept for the
 * watchdog's timeout without the word reaching its value gives up and
 * returns SK_WAIT_TIMED_OUT (the caller trips the watchdog, naming itself),
 * and any watched wait returns SK_WAIT_ABORTED soon after the watchdog has
 * tripped (at once while spinning, within 20 ms while asleep). A NULL wd
 * waits forever, as the plain functions do. The deadline counts from when
 * the wait first sleeps: spinning and yielding before it last ~0.1 ms. */
typedef enum sk__wait_result { SK_WAIT_OK, SK_WAIT_TIMED_OUT, SK_WAIT_ABORTED } sk__wait_result;
sk__wait_result sk__wait_until_equal_watched(sk__wait_word *w, uint32_t target, sk__watchdog *wd);
sk__wait_result sk__wait_while_equal_watched(sk__wait_word *w, uint32_t old, sk__watchdog *wd, uint32_t *now);

/* Publishing: atomically adds delta (seq_cst, which includes release) and
 * returns the previous value. It does not wake anyone: call sk__wait_wake
 * afterwards when the new value is one a waiter may be waiting for. */
static inline uint32_t sk__wait_fetch_add(sk__wait_word *w, uint32_t delta) {
  return atomic_fetch_add_explicit(&w->value, delta, memory_order_seq_cst);
}

/* Wakes every thread asleep on w, if any (a system call only then). Must
 * follow the sk__wait_fetch_add that changed the value, in the same thread. */
void sk__wait_wake(sk__wait_word *w);

/* Load accounting for the spin policy: team create adds its worker count
 * (delta > 0), destroy removes it; cpus is the CPU count available to the
 * process (ignored when delta <= 0). */
void sk__wait_account(int delta_threads, int cpus);
/* In a child after fork(): no worker of any team exists, so none counts
 * (the parent's teams are not destroyed through the accounting there).
 * Async-signal-safe. */
void sk__wait_after_fork(void);

/* One pause (x86 PAUSE, arm64 YIELD): lets the sibling hyper-thread run and
 * saves power while spinning. */
static inline void sk__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif

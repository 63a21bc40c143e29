/* Sense-reversing barrier, after BLIS's bli_thrcomm_barrier_atomic
 * (frame/thread/bli_thrcomm.c), with a generation counter in place of the
 * boolean sense: a counter serves as the futex word ("sleep while it still
 * reads g") and never lets an episode be mistaken for one two steps back.
 *
 * Memory-order reasoning, for an episode k whose generation value is g:
 *
 * (a) Each arriving thread first reads the generation (relaxed), then
 *     increments `arrived` (acq_rel). The read cannot return g + 1: the bump
 *     to g + 1 happens after the last arrival of episode k, which happens
 *     after this thread's own arrival (the RMW chain on `arrived`), which is
 *     sequenced after the read; a load never reads a store that happens after
 *     it. Nor can it return anything older than g: the thread either bumped g
 *     itself at the end of episode k-1, or returned from k-1 having read g
 *     with acquire, and coherence forbids going back. So relaxed suffices.
 *
 * (b) The increments of `arrived` form one release sequence of acq_rel RMWs:
 *     the last arriver (the one that reads count - 1) acquires every earlier
 *     arriver's writes before the barrier.
 *
 * (c) The last arriver resets `arrived` to 0 (relaxed) and then bumps the
 *     generation with a seq_cst RMW (a release): each waiter's acquire read of
 *     g + 1 makes visible everything the last arriver had acquired in (b) plus
 *     the reset, so (b)+(c) give "all writes before the barrier are visible
 *     after it" and the next episode's increments start from 0 (they happen
 *     after the reset, and an RMW reads the latest value).
 *
 * (d) The bump is seq_cst rather than plain release because the sleep path
 *     of runtime/wait.c needs seq_cst on both sides of its handshake.
 */
#include "runtime/barrier.h"

#include "core/error.h"
#include "runtime/team.h"

#define SK_BARRIER_MAX_COUNT (1 << 20)

sk_status sk__barrier_init(sk__barrier_t *b, int count) {
  if (!b) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk__barrier_init: barrier is NULL");
  if (count < 1 || count > SK_BARRIER_MAX_COUNT)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "sk__barrier_init: count = %d is out of range 1..%d", count,
                    SK_BARRIER_MAX_COUNT);
  atomic_init(&b->arrived, 0);
  b->count = (unsigned)count;
  atomic_init(&b->generation.value, 0);
  atomic_init(&b->generation.sleepers, 0);
  b->watch = (sk__wait_watch){0};
  return SK_STATUS_OK;
}

void sk__barrier_watch(sk__barrier_t *b, sk__watchdog *wd, const char *who, const char *what) {
  b->watch = (sk__wait_watch){wd, who, what};
}

void sk__barrier_reset(sk__barrier_t *b) {
  atomic_store(&b->arrived, 0);
  atomic_store(&b->generation.sleepers, 0);
}

bool sk__barrier_wait(sk__barrier_t *b) {
  /* (a) this episode's generation, read before arriving. */
  uint32_t gen = atomic_load_explicit(&b->generation.value, memory_order_relaxed);
  /* (b) arrive. */
  unsigned prior = atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel);
  if (prior + 1 == b->count) {
    /* (c) last to arrive: reset for the next episode, then release everyone. */
    atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
    sk__wait_fetch_add(&b->generation, 1);
    sk__wait_wake(&b->generation);
    return !sk__watchdog_tripped(b->watch.wd);
  }
  /* Not last: wait for the bump; the acquire read inside pairs with (c). */
  uint32_t now;
  sk__wait_result r = sk__wait_while_equal_watched(&b->generation, gen, b->watch.wd, &now);
  if (r == SK_WAIT_TIMED_OUT) sk__watchdog_trip(b->watch.wd, b->watch.who, b->watch.what, sk__team_current_core());
  return r == SK_WAIT_OK;
}

/* The watchdog: a deadline on every wait inside a launch.
 *
 * A core waiting at a barrier or for an early-start flag waits for other
 * cores' progress. If a block never arrives (a custom kernel that skips its
 * sk_kernel_barrier call, a planner bug), the wait would last forever. With a
 * watchdog, a single wait that lasts longer than `timeout_ns` gives up
 * (counted from when it goes to sleep; a wait has nothing to measure
 * progress by before its word changes, so a legitimately longer block
 * needs a larger limit): the first
 * core to give up "trips" the watchdog with a message naming the scope, the
 * sub-kernel and what it waited for; every other watched wait then returns at
 * once, each core abandons the rest of its task list, the launch finishes,
 * and the run returns SK_STATUS_TIMEOUT with that message. The owner then
 * resets what the abandoned launch left half-done (barrier counts, flags)
 * so the next run starts clean.
 *
 * One watchdog belongs to one run context (run/run_context.h), whose runs
 * are one at a time; contexts of one program trip and recover on their own.
 * Waits that are legitimately long are not watched: an idle worker waiting
 * for the next launch, and a launcher waiting for its blocks to return (a
 * block that loops in its own code cannot be abandoned: it may still write
 * the caller's buffers; the launcher only logs a warning then, see team.c).
 */
#ifndef SK_RUNTIME_WATCHDOG_H
#define SK_RUNTIME_WATCHDOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "superkernel.h"

/* Longest wait when neither the compile config nor $SK_WATCHDOG_MS says:
 * generous, so that only a real hang trips it (a whole prefill run takes
 * ~10 ms on two cores). */
#define SK_WATCHDOG_DEFAULT_MS 60000

typedef struct sk__watchdog {
  int64_t timeout_ns;   /* <= 0: watched waits never time out */
  atomic_int tripped;   /* 1 once some wait gave up (or claimed the message) */
  char message[384];    /* written once, by the thread that tripped it */
} sk__watchdog;

/* What a watched wait is, for the message: `who` waits (e.g. "scope 'sk1',
 * sub-kernel 'gmm2'"), `what` for (e.g. "at its team barrier"). */
typedef struct sk__wait_watch {
  sk__watchdog *wd; /* NULL: not watched */
  const char *who;
  const char *what;
} sk__wait_watch;

/* The timeout in ms a program uses: configured_ms when not 0, else
 * $SK_WATCHDOG_MS when set to an integer, else SK_WATCHDOG_DEFAULT_MS;
 * a negative result means "never". */
int64_t sk__watchdog_resolve_ms(int64_t configured_ms);

void sk__watchdog_init(sk__watchdog *wd, int64_t timeout_ms);

static inline bool sk__watchdog_tripped(const sk__watchdog *wd) {
  return wd && atomic_load_explicit(&((sk__watchdog *)wd)->tripped, memory_order_acquire);
}

/* Records that `who` on core `core` waited past the deadline `what`; only
 * the first caller's message is kept. */
void sk__watchdog_trip(sk__watchdog *wd, const char *who, const char *what, int core);

/* The watchdog of the run the calling thread is performing, for code that
 * has no program at hand (a custom kernel's reference, which runs its
 * blocks on a temporary team); NULL outside a run. */
void sk__watchdog_set_current(sk__watchdog *wd);
sk__watchdog *sk__watchdog_current(void);

/* After the launch: when tripped, sets the library error (SK_STATUS_TIMEOUT,
 * the message) and re-arms the watchdog; returns the status. */
sk_status sk__watchdog_take(sk__watchdog *wd);

#endif

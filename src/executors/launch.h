/* Launching a super kernel, and the services its cores call inside the
 * launch: flag waits, barriers, preloads, flushes. The interpreter
 * (interpreter.c) and the JIT (jit/jit.c) both launch through sk__launch and
 * both call these services (the JIT through its env's callbacks), so the
 * two executors synchronize, time out and recover identically.
 *
 * What a launch changes lives in an sk__launch_state: one per super kernel
 * per run context (run/run_context.h), never in the plan, so one compiled
 * program runs in several contexts at once. Within a context, launches are
 * sequential (one run at a time); within a launch, each core touches only
 * its own pending-preload entry, and the flags and barriers are the
 * synchronization itself. */
#ifndef SK_EXECUTORS_LAUNCH_H
#define SK_EXECUTORS_LAUNCH_H

#include <stdatomic.h>

#include "runtime/barrier.h"
#include "runtime/watchdog.h"
#include "program/plan.h"

struct sk__profile;

/* A claimed sub-kernel's counters in one launch: the next block to hand out
 * and the blocks finished, each on a cache line of its own (cores claim
 * while others finish). Zeroed before every launch. The JIT's sk_jit_claim
 * has this layout (jit.c asserts it). */
typedef struct sk__claim {
  _Atomic int64_t next;
  unsigned char pad0_[56];
  _Atomic int64_t finished;
  unsigned char pad1_[56];
} sk__claim;

typedef struct sk__launch_state {
  const sk__plan *plan;
  const sk_program *p;
  /* Per sub-kernel: its node's io in this run context (the context's data
   * pointers; a barrier-using op's barrier is sub_barriers[i]). */
  const sk__node_io **sub_io;
  sk__wait_word *flags;        /* plan->n_flags, 64-byte aligned */
  sk__barrier_t *barriers;     /* plan->n_barriers, 64-byte aligned */
  sk__barrier_t *sub_barriers; /* per sub-kernel when plan->any_sub_barrier */
  sk__claim *claims;           /* per sub-kernel (claimed ones use theirs), 64-byte aligned */
  /* preload-code=per-func: per core, the sub-kernel whose operands a
   * PRELOAD task asked for and no wait has prefetched yet (-1: none). Each
   * core reads and writes only its own entry; reset before every launch. */
  int32_t *pending_preload;
  uint32_t epoch;              /* launches so far; flags count them too */
  sk__watchdog *wd;            /* the run context's: every wait is watched */
  /* Set by the run before each launch (sk__launch_set_env): per-core
   * scratch, where profiling=1 records go (NULL: not profiled), and where
   * the launch's own record goes (cfg.profile; NULL: none). */
  void *const *workspaces;
  struct sk__profile *profile;
  struct sk__profile *launches;
} sk__launch_state;

/* The state of plan in a run context: node_io is the context's io of every
 * node of p (by node index); each barrier-using sub-kernel's io gets its
 * barrier here. Every barrier is watched by wd. */
sk_status sk__launch_state_create(const sk__plan *plan, const sk_program *p, sk__node_io *node_io, sk__watchdog *wd,
                                  sk__launch_state **out);
void sk__launch_state_destroy(sk__launch_state *st);

/* One launch of the super kernel: checks the team size (the plan's),
 * times it into st->launches when set,
 * starts a new epoch (also written to *epoch_copy when not NULL, before any
 * core starts: the JIT's env carries its own), clears pending preloads and
 * claim counters,
 * runs fn(arg, core, core) on every core (on the calling thread without a
 * team), rolls the epoch back when the team refuses the launch (a nested
 * one: no core ran), and settles: after a launch the watchdog abandoned,
 * resets the barriers and flags for the next run and returns
 * SK_STATUS_TIMEOUT with the watchdog's message. */
sk_status sk__launch(sk__launch_state *st, sk_team *team, sk_block_fn fn, void *arg, uint32_t *epoch_copy);

/* ---- services, called by the cores inside a launch ----
 * core is the caller's core (-1 outside a team is read as 0). Waits return
 * false when the launch is abandoned: the core must return at once. */

/* WAIT: flag reaches this launch's epoch. If it has not yet, a pending
 * preload is prefetched first; a timeout trips the watchdog naming `who`
 * and the producer block. */
bool sk__launch_wait_flag(sk__launch_state *st, int32_t flag, int core, const char *who);
/* BARRIER `index` (prefetching a pending preload while others are due). */
bool sk__launch_barrier(sk__launch_state *st, int32_t index, int core);
/* One wait at sub-kernel `sub`'s barrier (COMPLEMENT). */
bool sk__launch_sub_barrier(sk__launch_state *st, int32_t sub);
/* After RUN: signal flag (publishes the block's writes) and wake its
 * sleepers. */
void sk__launch_signal(sk__launch_state *st, int32_t flag);

/* CLAIM: the next block of claimed sub-kernel `sub` no core has taken (at
 * least its n_blocks: none is left). */
static inline int64_t sk__launch_claim(sk__launch_state *st, size_t sub) {
  /* Relaxed: what a block reads was published by flags waited for before. */
  return atomic_fetch_add_explicit(&st->claims[sub].next, 1, memory_order_relaxed);
}
/* After a claimed block whose sub-kernel has a flag (>= 0: a consumer waits
 * for it): counts the block; the core that finishes the last one signals
 * flag, publishing every block's writes (the count is an acq_rel
 * read-modify-write chain). Without a flag nothing needs the count. */
void sk__launch_claimed_done(sk__launch_state *st, size_t sub, int32_t flag);

/* PRELOAD: with preload-code=max, prefetch now; with per-func, record the
 * request for the core's next real wait ("while a core waits", the seed's
 * semantics: a core that never waits never pays, and on a CPU the operands
 * are usually in cache already; prefetching them up front cost decode 1.4
 * us of 43 at 2 threads). The prefetch covers the read-only operands
 * (inputs from outside the super kernel) of the core's blocks of sub,
 * capped at plan->preload_bytes. */
void sk__launch_preload(sk__launch_state *st, size_t sub, int core);
/* FLUSH: clflush block `block` of sub's input (outputs 0) or output spans,
 * then a fence: cold-cache behaviour (the dcci options). */
void sk__launch_flush(const sk__launch_state *st, size_t sub, int64_t block, int outputs);

/* ---- for the super-kernel executors (interpreter.c, jit/jit.c) ---- */

/* Before a launch: this run's workspaces and records (env). */
void sk__launch_set_env(sk__launch_state *st, const sk__step_env *env);
/* The lines of a super kernel's step in sk_program_describe: its plan. */
void sk__launch_describe(const sk_program *p, const sk__step *step, sk__text *out);
/* Frees a super kernel step's plan. */
void sk__launch_destroy_plan(sk__step *step);

#endif

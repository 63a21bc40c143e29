/* Internal steps of the planner shared between plan.c and plan_schedule.c. */
#ifndef SK_SUPERKERNEL_PLAN_BUILD_H
#define SK_SUPERKERNEL_PLAN_BUILD_H

#include "superkernel/plan.h"

/* Steps 2-4 of plan.c: barriers, dependencies, flags, task lists. */
sk_status sk__plan_schedule(sk__plan *plan, const sk_program *p);

/* The footprint of block b of exec node ex: reads (n_in_tensors spans) and
 * writes (n_out spans), whole tensors where the op says nothing. */
void sk__block_footprint(const sk__exec_node *ex, int64_t block, sk__span *reads, sk__span *writes);

/* PRELOAD and FLUSH tasks (interp.c; the JIT calls them too): prefetch
 * the read-only operands of core's blocks of sub, capped at
 * plan->preload_bytes; clflush a block's input (outputs 0) or output spans. */
void sk__plan_preload(const sk__plan *plan, const sk_program *p, size_t sub, int core);

/* preload-code=per-func prefetches "while a core waits" (the seed's
 * semantics): a PRELOAD task only records its sub-kernel (preload_request),
 * and the core's next wait that cannot return at once does the prefetch
 * first (preload_before_wait). A core that never waits never pays for it:
 * on a CPU the operands are usually in cache already, and prefetching
 * them up front cost decode 1.4 us of 43 at 2 threads. preload-code=max
 * still prefetches at once, at entry. */
void sk__plan_preload_request(sk__plan *plan, const sk_program *p, size_t sub, int core);
void sk__plan_preload_before_wait(sk__plan *plan, const sk_program *p, int core);
/* Before a launch: no core has a pending request. */
void sk__plan_preload_reset(sk__plan *plan);

/* The waits of a launch, shared by the interpreter and the JIT's
 * callbacks: prefetch a pending preload if the wait is real, then wait
 * under the watchdog. Both return false when the launch is abandoned (a
 * flag wait that times out trips the watchdog naming `who` and the
 * producer block). core may be -1 outside a team (read as 0). */
bool sk__plan_wait_flag(sk__plan *plan, const sk_program *p, int32_t flag, uint32_t epoch, int core, const char *who);
bool sk__plan_barrier(sk__plan *plan, const sk_program *p, int32_t index, int core);
void sk__plan_flush(const sk__plan *plan, const sk_program *p, size_t sub, int64_t block, int outputs);

/* Core that runs block b of sub-kernel s. */
static inline int sk__sub_core(const sk__subkernel *s, int64_t b) {
  return s->core_first + (int)(b % s->n_cores);
}

#endif

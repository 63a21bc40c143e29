/* Internal steps of the planner shared between planner.c and plan_schedule.c. */
#ifndef SK_COMPILE_PLANNER_H
#define SK_COMPILE_PLANNER_H

#include "program/plan.h"

/* Steps 2-4 of plan.c: barriers, dependencies, flags, task lists. */
sk_status sk__plan_schedule(sk__plan *plan, const sk_program *p);

/* The footprint of block b of exec node ex: reads (n_in_tensors spans) and
 * writes (n_out spans), whole tensors where the op says nothing. */
void sk__block_footprint(const sk__exec_node *ex, const sk__node_io *io, int64_t block, sk__span *reads,
                         sk__span *writes);

/* Core that runs block b of sub-kernel s. */
static inline int sk__sub_core(const sk__subkernel *s, int64_t b) {
  return s->core_first + (int)(b % s->n_cores);
}

#endif

/* A run context (superkernel.h, sk_run_context): everything a run of a
 * program changes, so that one compiled program runs in several contexts at
 * once, one run per context at a time:
 *   - every node's io with this context's data pointers (the program's
 *     nodes hold shapes only) and barrier;
 *   - the arena of intermediate values and the per-core workspaces;
 *   - per step, what its executor keeps for a run (step.h, prepare): a
 *     super kernel's launch state (flags, epoch, barriers, pending
 *     preloads: executors/launch.h) and JIT env, an eager op's barrier;
 *   - the watchdog every wait of its launches is watched by;
 *   - the bindings of sk_run_context_bind / sk_program_bind.
 * The program's default context serves sk_program_run and friends.
 *
 * A context is data of the program's, made and freed with it through the
 * executors' tables (this file's run_context.c); binding and running it
 * are src/run/'s. */
#ifndef SK_PROGRAM_RUN_CONTEXT_H
#define SK_PROGRAM_RUN_CONTEXT_H

#include <stdatomic.h>

#include "core/run_error.h"
#include "program/program.h"
#include "runtime/barrier.h"
#include "runtime/watchdog.h"

struct sk_run_context {
  sk_program *p;
  sk__node_io *io;               /* per node */
  sk__tensor *tensors;           /* io's tensors: per node its inputs (slot after slot), then outputs */
  void *arena;                   /* p->arena_bytes */
  void **workspaces;             /* per core of the largest team seen */
  int n_workspaces;
  void **steps;                  /* per program step: its executor's state (step.h, prepare) */
  sk__watchdog watchdog;
  sk__run_error run_error;       /* what a block of this context's run found wrong in its data */
  /* The bound buffer of each input ([0]) and output ([1]), NULL while
   * unbound; whether io already points into exactly these (a bound run
   * then rebinds nothing). */
  void **bound[2];
  size_t *bound_bytes[2];        /* their sizes (a run-time token count is read from them) */
  bool nodes_hold_bound;
  /* A program with a run-time token count (program/tokens.h): this run's
   * count (bucket contexts: the count their nodes' io hold), the contexts
   * of its buckets (made at their first run), and a count of binding
   * changes that tells a bucket context when to rebind its nodes. */
  int64_t tokens;
  struct sk_run_context **buckets;
  uint64_t bind_generation;
  bool holds_program;            /* sk_run_context_create's: holds a program reference */
  atomic_flag busy;              /* a public run or bind is in progress */
};


/* A context for p (no program reference taken: the default context's). */
sk_status sk__run_context_create(sk_program *p, sk_run_context **out);
/* Frees the context (NULL accepted), not releasing the program. */
void sk__run_context_free(sk_run_context *ctx);
/* Per-core workspaces for a team of n_cores (grown, never shrunk); fn
 * names the entry point in the out-of-memory message. */
sk_status sk__run_context_workspaces(sk_run_context *ctx, int n_cores, const char *fn);

#endif

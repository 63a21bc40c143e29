/* A program's step: one launch of a run, an op's own or a super kernel's,
 * and the executor that runs it. The program and the run loop know a step
 * only through its executor's table; an executor (src/executors/: eager,
 * reference, interpreter, JIT) is one file or folder and one such table, so
 * a new way of running a step (a tracing one, a NUMA-aware one) adds a file
 * and a table without touching the program, the compiler's data or the run
 * loop. */
#ifndef SK_PROGRAM_STEP_H
#define SK_PROGRAM_STEP_H

#include <stddef.h>

#include "core/text.h"
#include "ops/op.h"
#include "superkernel.h"

struct sk__plan;
struct sk__profile;
struct sk__watchdog;
struct sk__step;

/* What one run gives a step: its run context's node io, workspaces and
 * watchdog, and where records go. */
typedef struct sk__step_env {
  const sk_program *p;
  size_t index;                  /* the step's index in p->steps */
  sk__node_io *io;               /* per node of p: this context's */
  void *const *workspaces;       /* per core */
  struct sk__watchdog *watchdog; /* the context's: every wait of the launch is watched */
  struct sk__profile *launches;  /* non-NULL: record the step's launch (cfg.profile) */
  struct sk__profile *profile;   /* the program's profile, for super kernels with profiling=1 */
  const char *fn;                /* the entry point, for messages */
} sk__step_env;

typedef struct sk__step_executor {
  sk_executor kind; /* what sk_program_get_stats counts and fused kernels describe */
  const char *name; /* "own launch", "reference", "interpreted", "JIT-compiled" */
  /* The step's state in a new run context (*state may stay NULL): io is
   * the context's per-node io (an executor may set a node's barrier), wd
   * its watchdog. */
  sk_status (*prepare)(const sk_program *p, const struct sk__step *step, sk__node_io *io, struct sk__watchdog *wd,
                       void **state);
  /* Frees what prepare made (NULL accepted). */
  void (*release)(void *state);
  /* One launch of the step on team (NULL: the calling thread). */
  sk_status (*run)(const struct sk__step *step, void *state, const sk__step_env *env, sk_team *team);
  /* The step's lines in sk_program_describe, each ending in '\n'. */
  void (*describe)(const sk_program *p, const struct sk__step *step, sk__text *out);
  /* Frees what the step owns (its plan, its compiled code). */
  void (*destroy)(struct sk__step *step);
} sk__step_executor;

typedef struct sk__step {
  const sk__step_executor *exec;
  size_t node;            /* an op's own launch: its node */
  struct sk__plan *plan;  /* a super kernel: its plan (NULL for an op's own launch) */
  void *compiled;         /* what the executor compiled for it (the JIT's object), freed by destroy */
} sk__step;

#endif

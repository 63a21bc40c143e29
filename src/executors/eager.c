/* The eager executor: an op's own launch, its blocks dealt over the team
 * (or claimed, when the op's tiling says their costs are known only at run
 * time), and the reference executor: the op's plain reference. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "executors/executors.h"
#include "program/program.h"
#include "runtime/barrier.h"
#include "runtime/profile.h"
#include "runtime/team.h"
#include "runtime/watchdog.h"

typedef struct launch_ctx {
  const sk__op_def *def;
  const sk__node_io *io;
  void *const *workspaces;
  sk__profile *profile; /* non-NULL: record every block */
  int32_t step;
} launch_ctx;

static void run_block(void *arg, int64_t block, int core) {
  const launch_ctx *ctx = arg;
  uint64_t t0 = ctx->profile ? sk__tsc() : 0;
  ctx->def->run_block(ctx->io, block, ctx->workspaces ? ctx->workspaces[core] : NULL);
  if (ctx->profile) sk__profile_add(ctx->profile, core, SK_PROF_BLOCK, ctx->step, 0, block, t0, sk__tsc());
}

/* An op with a team barrier meets at one over its blocks, this context's
 * (the state of its step); its reference too, when it has one block. */
static sk_status eager_prepare(const sk_program *p, const sk__step *step, sk__node_io *io, sk__watchdog *wd,
                               void **state) {
  const sk__exec_node *node = &p->nodes[step->node];
  if (!node->eager_barrier) return SK_STATUS_OK;
  sk__barrier_t *b = sk__aligned_calloc(sizeof *b);
  if (!b) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_run_context_create: out of memory");
  *state = b;
  SK_RETURN_IF_ERROR(sk__barrier_init(b, (int)node->tiling.n_blocks));
  sk__barrier_watch(b, wd, node->watch_label, "at its team barrier");
  io[step->node].barrier = b;
  return SK_STATUS_OK;
}

static void eager_release(void *state) { sk__aligned_free(state); }

/* After an op's own launch with a team barrier: SK_STATUS_TIMEOUT (its
 * barrier reset) when the watchdog abandoned it, else SK_STATUS_OK. */
static sk_status settle_barrier(sk__barrier_t *barrier, sk__watchdog *wd) {
  if (!barrier || !sk__watchdog_tripped(wd)) return SK_STATUS_OK;
  sk__barrier_reset(barrier); /* a block never reached it */
  return sk__watchdog_take(wd);
}

static sk_status eager_run(const sk__step *step, void *state, const sk__step_env *env, sk_team *team) {
  const sk__exec_node *n = &env->p->nodes[step->node];
  int n_cores = team ? sk_team_num_cores(team) : 1;
  if (n->tiling.n_blocks == 0) return SK_STATUS_OK;
  if (n->eager_barrier && n->tiling.n_blocks > n_cores) /* its blocks must all run at once */
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s uses a team barrier over %lld blocks; run on %d cores",
                    env->fn, n->name, (long long)n->tiling.n_blocks, n_cores);
  sk__profile *launches = env->launches;
  uint64_t t0 = launches ? sk__tsc() : 0;
  launch_ctx l = {n->def, &env->io[step->node], env->workspaces, launches, (int32_t)env->index};
  if (team && n->tiling.claim && !n->eager_barrier) { /* costs known only now: cores take blocks as they go */
    SK_RETURN_IF_ERROR(sk__team_launch_claimed(team, run_block, &l, n->tiling.n_blocks));
  } else if (team) {
    SK_RETURN_IF_ERROR(sk_team_launch(team, run_block, &l, n->tiling.n_blocks));
  } else {
    for (int64_t b = 0; b < n->tiling.n_blocks; b++) run_block(&l, b, 0);
  }
  SK_RETURN_IF_ERROR(settle_barrier(state, env->watchdog));
  if (launches)
    sk__profile_add(launches, launches->n_cores, SK_PROF_LAUNCH, (int32_t)env->index, 0, 0, t0, sk__tsc());
  return SK_STATUS_OK;
}

static void op_describe(const sk_program *p, const sk__step *step, sk__text *out) {
  const sk__exec_node *n = &p->nodes[step->node];
  const char *kernel = n->def->kernel_name ? n->def->kernel_name(&n->io) : NULL;
  sk__text_put(out, "op %s (%s): own launch, %lld blocks%s%s\n", n->name, n->def->type, (long long)n->tiling.n_blocks,
               kernel ? ", kernel " : "", kernel ? kernel : "");
}

static void nothing_to_destroy(sk__step *step) { (void)step; }

const sk__step_executor sk__executor_eager = {
    .kind = SK_EXECUTOR_EAGER, .name = "own launch", .prepare = eager_prepare, .release = eager_release,
    .run = eager_run, .describe = op_describe, .destroy = nothing_to_destroy};

/* ---- reference ---- */

static sk_status reference_run(const sk__step *step, void *state, const sk__step_env *env, sk_team *team) {
  (void)state, (void)team;
  const sk__exec_node *n = &env->p->nodes[step->node];
  if (!sk__node_has_output(n)) return SK_STATUS_OK; /* as the other executors: no blocks */
  sk__watchdog_set_current(env->watchdog); /* for references that run blocks on a team */
  n->def->reference(&env->io[step->node]);
  sk__watchdog_set_current(NULL);
  return sk__watchdog_take(env->watchdog);
}

const sk__step_executor sk__executor_reference = {
    .kind = SK_EXECUTOR_REFERENCE, .name = "reference", .prepare = eager_prepare, .release = eager_release,
    .run = reference_run, .describe = op_describe, .destroy = nothing_to_destroy};

const sk__step_executor *sk__executor_for_op(sk_executor program_executor) {
  return program_executor == SK_EXECUTOR_REFERENCE ? &sk__executor_reference : &sk__executor_eager;
}

/* The interpreter: a super kernel's one launch (launch.h), in which each
 * core walks its task list (plan.h). */
#include "core/error.h"
#include "executors/executors.h"
#include "executors/launch.h"
#include "runtime/profile.h"

/* CLAIM: blocks of a claimed sub-kernel until none is left, each after its
 * own waits and timed on its own under profiling=1; false when a wait
 * gave up (the launch is abandoned). */
static bool run_claimed(sk__launch_state *st, const sk__task *task, int core, void *workspace) {
  const sk__plan *plan = st->plan;
  const sk__node_io *io = st->sub_io[task->sub];
  const sk__subkernel *sub = &plan->subs[task->sub];
  void (*run_block)(const sk__node_io *, int64_t, void *) = st->p->nodes[sub->node].def->run_block;
  if (st->pending_preload[core] == (int32_t)task->sub) st->pending_preload[core] = -1; /* too late */
  for (int64_t b; (b = sk__launch_claim(st, task->sub)) < sub->n_blocks;) {
    int64_t d0 = sub->claim_waits[b], d1 = sub->claim_waits[b + 1];
    uint64_t t0 = st->profile ? sk__tsc() : 0;
    for (int64_t d = d0; d < d1; d++)
      if (!sk__launch_wait_flag(st, plan->deps[d], core, plan->sub_labels[task->sub])) return false;
    if (st->profile && d0 < d1) {
      uint64_t t1 = sk__tsc();
      sk__profile_add(st->profile, core, SK_PROF_WAIT, plan->step, task->sub, -1, t0, t1);
      t0 = t1;
    }
    run_block(io, b, workspace);
    if (st->profile) sk__profile_add(st->profile, core, SK_PROF_RUN, plan->step, task->sub, b, t0, sk__tsc());
    if (sub->claim_flags[b] >= 0) sk__launch_signal(st, sub->claim_flags[b]);
    if (task->flag >= 0) sk__launch_claimed_done(st, task->sub, task->flag); /* a consumer waits: count it */
  }
  return true;
}

/* One task; false when the watchdog tripped and the core must abandon the
 * rest of its list. */
static bool run_task(sk__launch_state *st, const sk__task *task, int core, void *workspace) {
  const sk__plan *plan = st->plan;
  switch (task->kind) {
    case SK_TASK_RUN: {
      if (st->pending_preload[core] == (int32_t)task->sub) st->pending_preload[core] = -1; /* too late */
      const sk__node_io *io = st->sub_io[task->sub];
      st->p->nodes[plan->subs[task->sub].node].def->run_block(io, task->block, workspace);
      if (task->flag >= 0) sk__launch_signal(st, task->flag);
      /* A block whose own barrier gave up returned early: stop here too. */
      return !(plan->subs[task->sub].barriers_per_block && sk__watchdog_tripped(st->wd));
    }
    case SK_TASK_WAIT:
      for (int64_t d = 0; d < task->count; d++)
        if (!sk__launch_wait_flag(st, plan->deps[task->block + d], core, plan->sub_labels[task->sub])) return false;
      return true;
    case SK_TASK_BARRIER: return sk__launch_barrier(st, task->flag, core);
    case SK_TASK_PRELOAD: sk__launch_preload(st, task->sub, core); return true;
    case SK_TASK_FLUSH: sk__launch_flush(st, task->sub, task->block, task->arg); return true;
    case SK_TASK_COMPLEMENT:
      for (int64_t k = 0; k < task->count; k++)
        if (!sk__launch_sub_barrier(st, task->sub)) return false;
      return true;
    case SK_TASK_CLAIM: return run_claimed(st, task, core, workspace);
  }
  return true;
}

static void core_main(void *arg, int64_t block, int core) {
  (void)block; /* one block per core: block == core */
  sk__launch_state *st = arg;
  const sk__plan *plan = st->plan;
  sk__profile *profile = st->profile; /* non-NULL when the scope has profiling=1 */
  void *workspace = st->workspaces ? st->workspaces[core] : NULL;
  for (size_t t = plan->core_begin[core]; t < plan->core_begin[core + 1]; t++) {
    const sk__task *task = &plan->tasks[t];
    uint64_t t0 = profile ? sk__tsc() : 0; /* the one branch profiling costs when off */
    bool go_on = run_task(st, task, core, workspace);
    if (profile && (task->kind == SK_TASK_RUN || task->kind == SK_TASK_WAIT || task->kind == SK_TASK_BARRIER ||
                    task->kind == SK_TASK_COMPLEMENT)) {
      sk__prof_kind kind = task->kind == SK_TASK_RUN ? SK_PROF_RUN : task->kind == SK_TASK_WAIT ? SK_PROF_WAIT : SK_PROF_BARRIER;
      sk__profile_add(profile, core, kind, plan->step, task->sub, task->block, t0, sk__tsc());
    }
    if (!go_on) return;
  }
}

static sk_status interp_prepare(const sk_program *p, const sk__step *step, sk__node_io *io, sk__watchdog *wd,
                                void **state) {
  return sk__launch_state_create(step->plan, p, io, wd, (sk__launch_state **)state);
}

static void interp_release(void *state) { sk__launch_state_destroy(state); }

static sk_status interp_run(const sk__step *step, void *state, const sk__step_env *env, sk_team *team) {
  (void)step;
  sk__launch_state *st = state;
  sk__launch_set_env(st, env);
  return sk__launch(st, team, core_main, st, NULL);
}

const sk__step_executor sk__executor_interpreter = {
    .kind = SK_EXECUTOR_INTERP, .name = "interpreted", .prepare = interp_prepare, .release = interp_release,
    .run = interp_run, .describe = sk__launch_describe, .destroy = sk__launch_destroy_plan};

/* The interpreted super-kernel executor: one team launch per super kernel;
 * each core walks its task list (plan.h). */
#include <string.h>

#include "core/error.h"
#include "profile/profile.h"
#include "superkernel/plan_build.h"

typedef struct interp_ctx {
  sk__plan *plan;
  const sk_program *p;
  uint32_t epoch;
  sk__profile *profile; /* non-NULL when the scope has profiling=1 */
} interp_ctx;

/* Prefetches up to `budget` bytes of [data + span) into cache. */
static size_t prefetch_span(const void *data, sk__span span, size_t budget) {
  if (!data || span.begin >= span.end) return 0;
  size_t bytes = (size_t)(span.end - span.begin);
  if (bytes > budget) bytes = budget;
  const char *base = (const char *)data + span.begin;
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(base + off, 0, 3);
  return bytes;
}

/* PRELOAD: the read-only operands (inputs not produced inside this super
 * kernel) of the core's blocks of sub-kernel `sub`. */
void sk__plan_preload(const sk__plan *plan, const sk_program *p, size_t sub, int core) {
  const sk__subkernel *s = &plan->subs[sub];
  const sk__exec_node *ex = &p->nodes[s->node];
  sk__span reads[64], writes[64];
  if (ex->n_in_tensors > 64 || ex->io.n_out > 64) return; /* a hint only: skip huge lists */
  size_t budget = plan->preload_bytes;
  for (int64_t b = core - s->core_first; b < s->n_blocks && budget; b += s->n_cores) {
    sk__block_footprint(ex, b, reads, writes);
    for (size_t i = 0; i < ex->n_in_tensors && budget; i++)
      if (s->external[i]) budget -= prefetch_span(ex->in_tensors[i].data, reads[i], budget);
  }
}

void sk__plan_preload_request(sk__plan *plan, const sk_program *p, size_t sub, int core) {
  if (plan->options.preload_code == SK_PRELOAD_MAX) sk__plan_preload(plan, p, sub, core);
  else plan->pending_preload[core] = (int32_t)sub;
}

void sk__plan_preload_before_wait(sk__plan *plan, const sk_program *p, int core) {
  int32_t sub = plan->pending_preload[core];
  if (sub < 0) return;
  plan->pending_preload[core] = -1;
  sk__plan_preload(plan, p, (size_t)sub, core);
}

void sk__plan_preload_reset(sk__plan *plan) {
  for (int c = 0; c < plan->n_cores; c++) plan->pending_preload[c] = -1;
}

bool sk__plan_wait_flag(sk__plan *plan, const sk_program *p, int32_t flag, uint32_t epoch, int core, const char *who) {
  if (core < 0) core = 0;
  if (atomic_load_explicit(&plan->flags[flag].value, memory_order_acquire) != epoch)
    sk__plan_preload_before_wait(plan, p, core); /* the wait is real: prefetch meanwhile */
  sk__wait_result r = sk__wait_until_equal_watched(&plan->flags[flag], epoch, plan->wd);
  if (r == SK_WAIT_TIMED_OUT) sk__plan_trip_flag(plan, p, who, flag, core);
  return r == SK_WAIT_OK;
}

bool sk__plan_barrier(sk__plan *plan, const sk_program *p, int32_t index, int core) {
  if (sk__barrier_others_pending(&plan->barriers[index])) sk__plan_preload_before_wait(plan, p, core < 0 ? 0 : core);
  return sk__barrier_wait(&plan->barriers[index]);
}

/* FLUSH: clflush every line of a block's input or output spans, then a
 * fence, to reproduce cold-cache behaviour (the dcci options). */
void sk__plan_flush(const sk__plan *plan, const sk_program *p, size_t sub, int64_t block, int outputs) {
  const sk__exec_node *ex = &p->nodes[plan->subs[sub].node];
  sk__span reads[64], writes[64];
  if (ex->n_in_tensors > 64 || ex->io.n_out > 64) return;
  sk__block_footprint(ex, block, reads, writes);
  size_t n = outputs ? ex->io.n_out : ex->n_in_tensors;
  for (size_t i = 0; i < n; i++) {
    const sk__span *sp = outputs ? &writes[i] : &reads[i];
    const char *data = outputs ? ex->io.out[i].data : ex->in_tensors[i].data;
    if (!data) continue;
    for (int64_t off = sp->begin; off < sp->end; off += 64) __asm__ volatile("clflush (%0)" ::"r"(data + off) : "memory");
  }
  __asm__ volatile("mfence" ::: "memory");
}

/* One task; false when the watchdog tripped and the core must abandon the
 * rest of its list. */
static bool run_task(const interp_ctx *ctx, const sk__task *task, int core, void *workspace) {
  sk__plan *plan = ctx->plan;
  switch (task->kind) {
    case SK_TASK_RUN: {
      const sk__exec_node *ex = &ctx->p->nodes[plan->subs[task->sub].node];
      if (plan->pending_preload[core] == (int32_t)task->sub) plan->pending_preload[core] = -1; /* too late */
      ex->def->run_block(&ex->io, task->block, workspace);
      if (task->flag >= 0) { /* publishes the block's writes (seq_cst add) */
        sk__wait_fetch_add(&plan->flags[task->flag], 1);
        sk__wait_wake(&plan->flags[task->flag]);
      }
      /* A block whose own barrier gave up returned early: stop here too. */
      return !(plan->subs[task->sub].barriers_per_block && sk__watchdog_tripped(plan->wd));
    }
    case SK_TASK_WAIT:
      for (int64_t d = 0; d < task->count; d++)
        if (!sk__plan_wait_flag(plan, ctx->p, plan->deps[task->block + d], ctx->epoch, core, plan->sub_labels[task->sub]))
          return false;
      return true;
    case SK_TASK_BARRIER: return sk__plan_barrier(plan, ctx->p, task->flag, core);
    case SK_TASK_PRELOAD: sk__plan_preload_request(plan, ctx->p, task->sub, core); return true;
    case SK_TASK_FLUSH: sk__plan_flush(plan, ctx->p, task->sub, task->block, task->arg); return true;
    case SK_TASK_COMPLEMENT:
      for (int64_t k = 0; k < task->count; k++)
        if (!sk__barrier_wait(&plan->sub_barriers[task->sub])) return false;
      return true;
  }
  return true;
}

static void core_main(void *arg, int64_t block, int core) {
  (void)block; /* one block per core: block == core */
  const interp_ctx *ctx = arg;
  sk__plan *plan = ctx->plan;
  void *workspace = ctx->p->workspaces ? ctx->p->workspaces[core] : NULL;
  for (size_t t = plan->core_begin[core]; t < plan->core_begin[core + 1]; t++) {
    const sk__task *task = &plan->tasks[t];
    uint64_t t0 = ctx->profile ? sk__tsc() : 0; /* the one branch profiling costs when off */
    bool go_on = run_task(ctx, task, core, workspace);
    if (ctx->profile && (task->kind == SK_TASK_RUN || task->kind == SK_TASK_WAIT || task->kind == SK_TASK_BARRIER ||
                         task->kind == SK_TASK_COMPLEMENT)) {
      sk__prof_kind kind = task->kind == SK_TASK_RUN ? SK_PROF_RUN : task->kind == SK_TASK_WAIT ? SK_PROF_WAIT : SK_PROF_BARRIER;
      sk__profile_add(ctx->profile, core, kind, plan->step, task->sub, task->block, t0, sk__tsc());
    }
    if (!go_on) return;
  }
}

sk_status sk__plan_run(sk__plan *plan, const sk_program *p, sk_team *team) {
  int n_cores = team ? sk_team_num_cores(team) : 1;
  if (n_cores != plan->n_cores)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "super kernel '%s' was planned for a team of %d cores, run on %d (compile with that team)",
                    plan->name, plan->n_cores, n_cores);
  sk__plan_preload_reset(plan);
  interp_ctx ctx = {plan, p, ++plan->epoch, plan->options.profiling ? p->profile : NULL};
  if (!team) {
    core_main(&ctx, 0, 0);
  } else {
    sk_status st = sk_team_launch(team, core_main, &ctx, n_cores);
    if (st != SK_STATUS_OK) {
      plan->epoch--; /* refused (a nested launch): no core ran, no flag reached this epoch */
      return st;
    }
  }
  return sk__plan_settle(plan);
}

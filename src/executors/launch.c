/* A super kernel's launch and the services its cores call inside it
 * (launch.h), shared by the interpreter and the JIT. */
#include "executors/launch.h"
#include "ops/op_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "runtime/profile.h"

/* After a launch: put back what an abandoned one left half-done. No core
 * is inside the launch any more. A flag counts completed launches, so "done
 * in every launch so far" is the epoch; barriers restart their episode
 * count. */
static sk_status settle(sk__launch_state *st) {
  if (!sk__watchdog_tripped(st->wd)) return SK_STATUS_OK;
  const sk__plan *plan = st->plan;
  for (int b = 0; b < plan->n_barriers; b++) sk__barrier_reset(&st->barriers[b]);
  for (size_t i = 0; st->sub_barriers && i < plan->n_subs; i++) sk__barrier_reset(&st->sub_barriers[i]);
  for (int32_t f = 0; f < plan->n_flags; f++) {
    atomic_store(&st->flags[f].value, st->epoch);
    atomic_store(&st->flags[f].sleepers, 0);
  }
  return sk__watchdog_take(st->wd);
}

static void reset_preloads_and_claims(sk__launch_state *st) {
  for (int c = 0; c < st->plan->n_cores; c++) st->pending_preload[c] = -1;
  for (size_t i = 0; i < st->plan->n_subs; i++) {
    if (!st->plan->subs[i].claimed) continue;
    atomic_store_explicit(&st->claims[i].next, 0, memory_order_relaxed);
    atomic_store_explicit(&st->claims[i].finished, 0, memory_order_relaxed);
  }
}

void sk__launch_set_env(sk__launch_state *st, const sk__step_env *env) {
  st->workspaces = env->workspaces;
  st->profile = st->plan->options.profiling ? env->profile : NULL;
  st->launches = env->launches;
}

void sk__launch_describe(const sk_program *p, const sk__step *step, sk__text *out) {
  char *text = sk__plan_format(step->plan, p);
  if (text) sk__text_put(out, "%s", text);
  else out->failed = true;
  free(text);
}

void sk__launch_destroy_plan(sk__step *step) {
  sk__plan_destroy(step->plan);
  step->plan = NULL;
}

sk_status sk__launch(sk__launch_state *st, sk_team *team, sk_block_fn fn, void *arg, uint32_t *epoch_copy) {
  const sk__plan *plan = st->plan;
  uint64_t t0 = st->launches ? sk__tsc() : 0;
  int n_cores = team ? sk_team_num_cores(team) : 1;
  if (n_cores != plan->n_cores)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "super kernel '%s' was planned for a team of %d cores, run on %d (compile with that team)",
                    plan->name, plan->n_cores, n_cores);
  /* Written before the launch, which orders them before every core's reads. */
  reset_preloads_and_claims(st);
  uint32_t epoch = ++st->epoch;
  if (epoch_copy) *epoch_copy = epoch;
  if (!team) {
    fn(arg, 0, 0);
  } else {
    sk_status launched = sk_team_launch(team, fn, arg, n_cores);
    if (launched != SK_STATUS_OK) { /* refused (a nested launch): no core ran, no flag reached this epoch */
      st->epoch--;
      if (epoch_copy) *epoch_copy = st->epoch;
      return launched;
    }
  }
  SK_RETURN_IF_ERROR(settle(st));
  if (st->launches)
    sk__profile_add(st->launches, st->launches->n_cores, SK_PROF_LAUNCH, plan->step, 0, 0, t0, sk__tsc());
  return SK_STATUS_OK;
}

/* ---- waits ---- */

/* A wait for `flag` on core `core` timed out: trips the watchdog, naming
 * `who` and the producer block the flag belongs to. */
static void trip_flag(const sk__launch_state *st, const char *who, int32_t flag, int core) {
  const sk__plan *plan = st->plan;
  char what[320] = "for an early-start flag";
  for (size_t t = 0; t < plan->n_tasks; t++) {
    const sk__task *task = &plan->tasks[t];
    const char *name = st->p->nodes[plan->subs[task->sub].node].name;
    if (task->kind == SK_TASK_RUN && task->flag == flag) {
      snprintf(what, sizeof what, "for block %lld of sub-kernel '%s' (early-start flag %d)", (long long)task->block,
               name, (int)flag);
      break;
    }
    if (task->kind == SK_TASK_CLAIM && task->flag == flag) {
      snprintf(what, sizeof what, "for the %lld claimed blocks of sub-kernel '%s' (early-start flag %d)",
               (long long)plan->subs[task->sub].n_blocks, name, (int)flag);
      break;
    }
  }
  for (size_t i = 0; i < plan->n_subs; i++)
    for (int64_t b = 0; plan->subs[i].claimed && b < plan->subs[i].n_blocks; b++)
      if (plan->subs[i].claim_flags[b] == flag)
        snprintf(what, sizeof what, "for claimed block %lld of sub-kernel '%s' (early-start flag %d)", (long long)b,
                 st->p->nodes[plan->subs[i].node].name, (int)flag);
  sk__watchdog_trip(st->wd, who, what, core);
}

/* preload-code=per-func: the core is about to wait for real, so it does
 * the prefetch it was asked for first. */
static void preload_before_wait(sk__launch_state *st, int core);

bool sk__launch_wait_flag(sk__launch_state *st, int32_t flag, int core, const char *who) {
  if (core < 0) core = 0;
  if (atomic_load_explicit(&st->flags[flag].value, memory_order_acquire) != st->epoch)
    preload_before_wait(st, core); /* the wait is real: prefetch meanwhile */
  sk__wait_result r = sk__wait_until_equal_watched(&st->flags[flag], st->epoch, st->wd);
  if (r == SK_WAIT_TIMED_OUT) trip_flag(st, who, flag, core);
  return r == SK_WAIT_OK;
}

bool sk__launch_barrier(sk__launch_state *st, int32_t index, int core) {
  if (sk__barrier_others_pending(&st->barriers[index])) preload_before_wait(st, core < 0 ? 0 : core);
  return sk__barrier_wait(&st->barriers[index]);
}

bool sk__launch_sub_barrier(sk__launch_state *st, int32_t sub) { return sk__barrier_wait(&st->sub_barriers[sub]); }

void sk__launch_signal(sk__launch_state *st, int32_t flag) {
  sk__wait_fetch_add(&st->flags[flag], 1); /* seq_cst: publishes the block's writes */
  sk__wait_wake(&st->flags[flag]);
}

void sk__launch_claimed_done(sk__launch_state *st, size_t sub, int32_t flag) {
  int64_t done = atomic_fetch_add_explicit(&st->claims[sub].finished, 1, memory_order_acq_rel) + 1;
  if (done == st->plan->subs[sub].n_blocks) sk__launch_signal(st, flag);
}

/* ---- preload and flush ---- */

/* Prefetches up to `budget` bytes of [data + span) into cache. */
static size_t prefetch_span(const void *data, sk__span span, size_t budget) {
  if (!data || span.begin >= span.end) return 0;
  size_t bytes = (size_t)(span.end - span.begin);
  if (bytes > budget) bytes = budget;
  const char *base = (const char *)data + span.begin;
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(base + off, 0, 3);
  return bytes;
}

/* Input tensor i of an io, counting slot after slot (the order of the exec
 * node's in_tensors, footprints and sk__subkernel.external). */
/* Input i of a context's io: its tensors lie slot after slot from slot 0's
 * (run_context.c lays them out so, as the program's nodes do). */
static const sk__tensor *input_at(const sk__node_io *io, size_t i) { return &io->in[0].tensors[i]; }

/* Block b's footprint, precomputed by the planner (plan.h, spans): its
 * reads, then its writes. */
static const sk__span *block_spans(const sk__subkernel *s, const sk__exec_node *ex, int64_t b) {
  return &s->spans[(size_t)b * (ex->n_in_tensors + ex->io.n_out)];
}

/* The read-only operands (inputs not produced inside this super kernel) of
 * the core's blocks of sub-kernel `sub`. The spans come from the compiled
 * node (shapes), the data from this context's io. */
static void prefetch_operands(const sk__launch_state *st, size_t sub, int core) {
  const sk__subkernel *s = &st->plan->subs[sub];
  const sk__exec_node *ex = &st->p->nodes[s->node];
  size_t budget = st->plan->preload_bytes;
  for (int64_t b = core - s->core_first; b < s->n_blocks && budget; b += s->n_cores) {
    const sk__span *reads = block_spans(s, ex, b);
    for (size_t i = 0; i < ex->n_in_tensors && budget; i++)
      if (s->external[i]) budget -= prefetch_span(input_at(st->sub_io[sub], i)->data, reads[i], budget);
  }
}

void sk__launch_preload(sk__launch_state *st, size_t sub, int core) {
  if (st->plan->options.preload_code == SK_PRELOAD_MAX) prefetch_operands(st, sub, core);
  else st->pending_preload[core] = (int32_t)sub;
}

static void preload_before_wait(sk__launch_state *st, int core) {
  int32_t sub = st->pending_preload[core];
  if (sub < 0) return;
  st->pending_preload[core] = -1;
  prefetch_operands(st, (size_t)sub, core);
}

void sk__launch_flush(const sk__launch_state *st, size_t sub, int64_t block, int outputs) {
  const sk__subkernel *s = &st->plan->subs[sub];
  const sk__exec_node *ex = &st->p->nodes[s->node];
  const sk__node_io *io = st->sub_io[sub];
  const sk__span *reads = block_spans(s, ex, block), *writes = reads + ex->n_in_tensors;
  size_t n = outputs ? io->n_out : ex->n_in_tensors;
  for (size_t i = 0; i < n; i++) {
    const sk__span *sp = outputs ? &writes[i] : &reads[i];
    const sk__tensor *t = outputs ? &io->out[i] : input_at(io, i);
    const char *data = t->data;
    if (!data) continue;
    /* A run with fewer tokens than planned: its buffers end at the live rows. */
    int64_t end = sp->end, live = sk__live_numel(io, t) * (int64_t)sk_dtype_size(t->dtype);
    if (end > live) end = live;
    for (int64_t off = sp->begin; off < end; off += 64) __asm__ volatile("clflush (%0)" ::"r"(data + off) : "memory");
  }
  __asm__ volatile("mfence" ::: "memory");
}

/* A plan as data: the names of its types, its destruction, and its
 * readable form: a header, the sub-kernels, then one line per task, core
 * by core (what `sk plan` prints). The planner that makes it is
 * compile/planner.c. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "program/plan.h"

const char *sk__sk_type_name(sk__sk_type type) {
  switch (type) {
    case SK_SK_MIX_AIV_1_0: return "MIX_AIV_1_0";
    case SK_SK_MIX_AIC_1_0: return "MIX_AIC_1_0";
    case SK_SK_MIX_AIC_1_1: return "MIX_AIC_1_1";
    default: return "MIX_AIC_1_2";
  }
}

const char *sk__sk_core_type(sk__sk_type type) {
  switch (type) {
    case SK_SK_MIX_AIV_1_0: return "AIV";
    case SK_SK_MIX_AIC_1_0: return "AIC";
    default: return "MIX_AIC";
  }
}

void sk__plan_destroy(sk__plan *plan) {
  if (!plan) return;
  free(plan->name);
  sk__options_free(&plan->options);
  for (size_t i = 0; plan->subs && i < plan->n_subs; i++) {
    free(plan->subs[i].external);
    free(plan->subs[i].claim_waits);
    free(plan->subs[i].claim_flags);
    free(plan->subs[i].spans);
    if (plan->subs[i].retiled) free(plan->subs[i].tiling.plan);
  }
  free(plan->subs);
  free(plan->tasks);
  free(plan->core_begin);
  free(plan->deps);
  free(plan->barrier_sets);
  for (size_t i = 0; i < plan->n_labels; i++) free(plan->labels[i]);
  free(plan->labels);
  free(plan->sub_labels);
  free(plan);
}


static const char *kind_name(sk__kernel_kind kind) {
  return kind == SK_KERNEL_CUBE ? "CUBE" : kind == SK_KERNEL_VECTOR ? "VECTOR" : "MIX";
}

static const char *sub_name(const sk__plan *plan, const sk_program *p, size_t sub) {
  return p->nodes[plan->subs[sub].node].name;
}

/* Runs of claimed blocks listed one by one, at most (then a count). */
#define CLAIMED_LISTED 32

/* Whether claimed block b waits for what block a waits for and signals the
 * flag after a's (both none, or a's + (b - a)). */
static bool same_run(const sk__plan *plan, const sk__subkernel *s, int64_t a, int64_t b) {
  int64_t na = s->claim_waits[a + 1] - s->claim_waits[a], nb = s->claim_waits[b + 1] - s->claim_waits[b];
  if (na != nb) return false;
  for (int64_t d = 0; d < na; d++)
    if (plan->deps[s->claim_waits[a] + d] != plan->deps[s->claim_waits[b] + d]) return false;
  int32_t fa = s->claim_flags[a], fb = s->claim_flags[b];
  return fa < 0 ? fb < 0 : fb == fa + (int32_t)(b - a);
}

/* A claimed sub-kernel's blocks, in runs that wait for the same flags
 * (any core may run any of them): what each waits for and signals. */
static void claimed_blocks(sk__text *t, const sk__plan *plan, const sk__subkernel *s) {
  int64_t runs = 0;
  for (int64_t a = 0, e; a < s->n_blocks; a = e) {
    for (e = a + 1; e < s->n_blocks && same_run(plan, s, a, e);) e++;
    int64_t d0 = s->claim_waits[a], d1 = s->claim_waits[a + 1];
    if ((d0 == d1 && s->claim_flags[a] < 0) || runs++ >= CLAIMED_LISTED) continue;
    if (e - a > 1) sk__text_put(t, "    claimed blocks %lld-%lld:", (long long)a, (long long)(e - 1));
    else sk__text_put(t, "    claimed block %lld:", (long long)a);
    if (d0 < d1) sk__text_put(t, " wait for flag%s", d1 - d0 > 1 ? "s" : "");
    for (int64_t d = d0; d < d1; d++) sk__text_put(t, " %d", plan->deps[d]);
    if (s->claim_flags[a] >= 0) {
      sk__text_put(t, "%s signal flag%s %d", d0 < d1 ? "," : "", e - a > 1 ? "s" : "", s->claim_flags[a]);
      if (e - a > 1) sk__text_put(t, "-%d", s->claim_flags[e - 1]);
    }
    sk__text_put(t, "\n");
  }
  if (runs > CLAIMED_LISTED)
    sk__text_put(t, "    ... and %lld more runs of claimed blocks\n", (long long)(runs - CLAIMED_LISTED));
}

char *sk__plan_format(const sk__plan *plan, const sk_program *p) {
  sk__text t = {0};
  char options[1024];
  sk__options_render(&plan->options, options, sizeof options);
  sk__text_put(&t, "super kernel %s: %s, block dim %lld, %d cores (cube %d, vector %d)%s, %zu sub-kernels, %d flags, %d barriers\n",
      plan->name, sk__sk_type_name(plan->type), (long long)plan->block_dim, plan->n_cores, plan->aic_cores,
      plan->aiv_cores, plan->stream_fused ? ", stream-fused" : "", plan->n_subs, plan->n_flags, plan->n_barriers);
  sk__text_put(&t, "  options %s\n", options);
  for (size_t i = 0; i < plan->n_subs; i++) {
    const sk__subkernel *s = &plan->subs[i];
    const sk__exec_node *ex = &p->nodes[s->node];
    const char *kernel = ex->def->kernel_name ? ex->def->kernel_name(&ex->io) : NULL;
    sk__text_put(&t, "  sub %zu: %s (%s, %s), %lld blocks %son cores %d-%d, workspace %zu bytes%s%s%s\n", i, ex->name,
        ex->def->type, kind_name(s->kind), (long long)s->n_blocks, s->claimed ? "claimed " : "", s->core_first,
        s->core_first + s->n_cores - 1, s->tiling.workspace_bytes,
        plan->stream_fused ? (s->chain ? ", stream 1" : ", stream 0") : "", kernel ? ", kernel " : "",
        kernel ? kernel : "");
    if (s->claimed) claimed_blocks(&t, plan, s);
  }
  for (int c = 0; c < plan->n_cores; c++)
    for (size_t k = plan->core_begin[c]; k < plan->core_begin[c + 1]; k++) {
      const sk__task *task = &plan->tasks[k];
      sk__text_put(&t, "  core %d: ", c);
      switch (task->kind) {
        case SK_TASK_RUN:
          sk__text_put(&t, "run %s block %lld", sub_name(plan, p, task->sub), (long long)task->block);
          if (task->flag >= 0) sk__text_put(&t, ", signal flag %d", task->flag);
          break;
        case SK_TASK_WAIT:
          sk__text_put(&t, "wait for flag%s", task->count > 1 ? "s" : "");
          for (int64_t d = 0; d < task->count; d++) sk__text_put(&t, " %d", plan->deps[task->block + d]);
          sk__text_put(&t, " (before %s)", sub_name(plan, p, task->sub));
          break;
        case SK_TASK_BARRIER: {
          const sk__barrier_set *set = &plan->barrier_sets[task->flag];
          sk__text_put(&t, "barrier %d over cores %d-%d (after %s)", task->flag, set->core_first,
              set->core_first + set->n_cores - 1, sub_name(plan, p, task->sub));
          break;
        }
        case SK_TASK_PRELOAD: sk__text_put(&t, "preload %s", sub_name(plan, p, task->sub)); break;
        case SK_TASK_FLUSH:
          sk__text_put(&t, "flush %s of %s block %lld", task->arg ? "outputs" : "inputs", sub_name(plan, p, task->sub),
              (long long)task->block);
          break;
        case SK_TASK_COMPLEMENT:
          sk__text_put(&t, "complement %s's barrier x%lld (feed-sync-all)", sub_name(plan, p, task->sub), (long long)task->count);
          break;
        case SK_TASK_CLAIM:
          sk__text_put(&t, "claim blocks of %s until none is left", sub_name(plan, p, task->sub));
          if (task->flag >= 0) sk__text_put(&t, ", signal flag %d after the last", task->flag);
          break;
      }
      sk__text_put(&t, "\n");
    }
  if (t.failed) {
    free(t.buf);
    return NULL;
  }
  return t.buf;
}

/* A plan in readable form: a header, the sub-kernels, then one line per
 * task, core by core (what `sk plan` prints). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "superkernel/plan_build.h"


static const char *kind_name(sk__kernel_kind kind) {
  return kind == SK_KERNEL_CUBE ? "CUBE" : kind == SK_KERNEL_VECTOR ? "VECTOR" : "MIX";
}

static const char *sub_name(const sk__plan *plan, const sk_program *p, size_t sub) {
  return p->nodes[plan->subs[sub].node].name;
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
    sk__text_put(&t, "  sub %zu: %s (%s, %s), %lld blocks %son cores %d-%d, workspace %zu bytes%s\n", i, ex->name,
        ex->def->type, kind_name(s->kind), (long long)s->n_blocks, s->claimed ? "claimed " : "", s->core_first,
        s->core_first + s->n_cores - 1, s->tiling.workspace_bytes,
        plan->stream_fused ? (s->chain ? ", stream 1" : ", stream 0") : "");
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

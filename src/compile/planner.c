/* The planner: a run of fusable nodes becomes one super kernel's per-core
 * task lists (plan.h). The steps:
 *   1. sub-kernels, the super kernel's type and its core sets (seed rule,
 *      debug-aic-num / debug-aiv-num, stream fusion);
 *   2. barrier points (early-start=0, debug-sync-all, stream chains);
 *   3. for every block, the producer blocks whose output bytes it reads
 *      (footprints), less those already ordered by running on the same core
 *      or by a barrier between them: those become waits on flags;
 *   4. the task lists. */
#include "program/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "runtime/barrier.h"
#include "compile/planner.h"

const char *sk__plan_label(sk__plan *plan, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char **grown = realloc(plan->labels, (plan->n_labels + 1) * sizeof *grown);
  char *copy = grown ? sk__strdup(buf) : NULL;
  if (grown) plan->labels = grown;
  if (!copy) {
    sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", plan->name);
    return NULL;
  }
  plan->labels[plan->n_labels++] = copy;
  return copy;
}

/* Labels naming the scope and each sub-kernel in watchdog messages. */
static sk_status plan_labels(sk__plan *plan, const sk_program *p) {
  plan->scope_label = sk__plan_label(plan, "scope '%s'", plan->name);
  plan->sub_labels = calloc(plan->n_subs ? plan->n_subs : 1, sizeof *plan->sub_labels);
  if (!plan->scope_label || !plan->sub_labels) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", plan->name);
  for (size_t i = 0; i < plan->n_subs; i++) {
    const sk__exec_node *ex = &p->nodes[plan->subs[i].node];
    plan->sub_labels[i] = sk__plan_label(plan, "scope '%s', sub-kernel '%s' (%s)", plan->name, ex->name, ex->def->type);
    if (!plan->sub_labels[i]) return SK_STATUS_OUT_OF_MEMORY;
  }
  return SK_STATUS_OK;
}

/* A sub-kernel running on fewer cores than the program was tiled for (a
 * stream chain, debug-aic-num / debug-aiv-num) is tiled again for its own
 * core count, so its blocks spread evenly over the cores it has. The new
 * tiling is the plan's; the node keeps its own. */
static sk_status retile(sk__plan *plan, const sk_program *p, sk__subkernel *s) {
  const sk__exec_node *ex = &p->nodes[s->node];
  if (s->n_cores == p->tiled_cores || ex->def->barriers_per_block > 0) return SK_STATUS_OK;
  sk__tiling t = {0};
  SK_RETURN_IF_ERROR(ex->def->tile(&ex->io, s->n_cores, &t));
  if (t.n_blocks == 0) { /* cannot happen for a node that had blocks; keep the old tiling */
    free(t.plan);
    return SK_STATUS_OK;
  }
  s->tiling = t;
  s->retiled = true;
  s->io.plan = t.plan;
  s->io.n_blocks = t.n_blocks;
  s->n_blocks = t.n_blocks;
  if (t.workspace_bytes > plan->workspace_bytes) plan->workspace_bytes = t.workspace_bytes;
  if (s->n_blocks > plan->block_dim) plan->block_dim = s->n_blocks;
  return SK_STATUS_OK;
}

/* Which inputs of every sub-kernel come from outside the super kernel. */
static sk_status mark_external_inputs(sk__plan *plan, const sk_program *p) {
  for (size_t i = 0; i < plan->n_subs; i++) {
    const sk__exec_node *ex = &p->nodes[plan->subs[i].node];
    plan->subs[i].external = malloc((ex->n_in_tensors ? ex->n_in_tensors : 1) * sizeof(bool));
    if (!plan->subs[i].external) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", plan->name);
    for (size_t t = 0; t < ex->n_in_tensors; t++) {
      sk_value root = p->root[ex->in_values[t]];
      bool inside = false;
      for (size_t k = 0; k < plan->n_subs && !inside; k++) {
        const sk__exec_node *px = &p->nodes[plan->subs[k].node];
        for (size_t o = 0; o < px->io.n_out && !inside; o++) inside = p->root[px->out_values[o]] == root;
      }
      plan->subs[i].external[t] = !inside;
    }
  }
  return SK_STATUS_OK;
}

/* Step 1: sub-kernels, type, core sets. */
static sk_status plan_subkernels(sk__plan *plan, const sk_program *p, const size_t *nodes, size_t n) {
  int n_cores = plan->n_cores;
  const sk__options *o = &plan->options;
  if (o->debug_aic_num > n_cores || o->debug_aiv_num > n_cores)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "scope '%s': option %s: illegal value '%d' (accepted: an integer >= 0, at most the team size %d)",
                    plan->name, o->debug_aic_num > n_cores ? "debug-aic-num" : "debug-aiv-num",
                    o->debug_aic_num > n_cores ? o->debug_aic_num : o->debug_aiv_num, n_cores);
  plan->aic_cores = o->debug_aic_num ? o->debug_aic_num : n_cores;
  plan->aiv_cores = o->debug_aiv_num ? o->debug_aiv_num : n_cores;
  plan->subs = calloc(n ? n : 1, sizeof *plan->subs);
  if (!plan->subs) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", plan->name);
  bool streams[2] = {false, false};
  int64_t cube_blocks = 0, vector_blocks = 0;
  for (size_t i = 0; i < n; i++) {
    const sk__exec_node *ex = &p->nodes[nodes[i]];
    if (ex->def->is_view || ex->tiling.n_blocks == 0) continue;
    sk__subkernel *s = &plan->subs[plan->n_subs++];
    s->node = nodes[i];
    s->kind = ex->def->kind;
    s->tiling = ex->tiling; /* the node's: not owned */
    s->io = ex->io;
    s->n_blocks = ex->tiling.n_blocks;
    s->chain = ex->stream;
    s->barriers_per_block = ex->def->barriers_per_block;
    streams[ex->stream] = true;
    if (s->kind != SK_KERNEL_VECTOR && s->n_blocks > cube_blocks) cube_blocks = s->n_blocks;
    if (s->kind != SK_KERNEL_CUBE && s->n_blocks > vector_blocks) vector_blocks = s->n_blocks;
  }
  bool has_cube = cube_blocks > 0, has_vector = vector_blocks > 0;
  plan->type = !has_cube ? SK_SK_MIX_AIV_1_0
             : !has_vector ? SK_SK_MIX_AIC_1_0
             : vector_blocks <= cube_blocks ? SK_SK_MIX_AIC_1_1 : SK_SK_MIX_AIC_1_2;
  plan->block_dim = cube_blocks > vector_blocks ? cube_blocks : vector_blocks;
  if (o->stream_fusion && streams[0] && streams[1]) {
    if (n_cores >= 2) plan->stream_fused = 1;
    else sk__log(SK_LOG_WARN, "scope '%s': stream-fusion=1 needs at least 2 cores; the streams run in graph order", plan->name);
  }
  if (plan->stream_fused) plan->options.early_start = 0; /* as in the seed: stream fusion forces it off */
  int half = (n_cores + 1) / 2;
  for (size_t i = 0; i < plan->n_subs; i++) {
    sk__subkernel *s = &plan->subs[i];
    if (plan->stream_fused) {
      s->core_first = s->chain ? half : 0;
      s->n_cores = s->chain ? n_cores - half : half;
    } else {
      s->chain = 0;
      s->core_first = 0;
      s->n_cores = s->kind == SK_KERNEL_CUBE ? plan->aic_cores : s->kind == SK_KERNEL_VECTOR ? plan->aiv_cores : n_cores;
    }
    SK_RETURN_IF_ERROR(retile(plan, p, s));
  }
  return SK_STATUS_OK;
}

/* Sub-kernels whose blocks meet at a team barrier: every core of the
 * sub-kernel's set must take part. With fewer blocks than cores the idle
 * ones complement it (feed-sync-all=1); without the option that would hang,
 * so it is a compile error. Each run context gives such a sub-kernel a
 * barrier over its cores (executors/launch_state.c), in place of the
 * one its own launch would use. */
static sk_status check_sub_barriers(sk__plan *plan, const sk_program *p) {
  for (size_t i = 0; i < plan->n_subs; i++) {
    const sk__subkernel *s = &plan->subs[i];
    if (s->barriers_per_block == 0) continue;
    plan->any_sub_barrier = true;
    const sk__exec_node *ex = &p->nodes[s->node];
    if (s->n_blocks > s->n_cores)
      return sk__fail(SK_STATUS_UNSUPPORTED, "scope '%s': %s uses a team barrier over %lld blocks but has %d cores",
                      plan->name, ex->name, (long long)s->n_blocks, s->n_cores);
    if (s->n_blocks < s->n_cores && !plan->options.feed_sync_all)
      return sk__fail(SK_STATUS_INVALID_STATE,
                      "scope '%s': %s uses a team barrier but has %lld blocks for %d cores: it would hang; set "
                      "feed-sync-all=1 so the idle cores join its barriers",
                      plan->name, ex->name, (long long)s->n_blocks, s->n_cores);
  }
  return SK_STATUS_OK;
}

/* The footprints that PRELOAD and FLUSH tasks read at run time, per
 * block of each sub-kernel they name: computed once here, so that a launch
 * never asks an op for them. */
static sk_status footprints_for_tasks(sk__plan *plan, const sk_program *p) {
  for (size_t t = 0; t < plan->n_tasks; t++) {
    const sk__task *task = &plan->tasks[t];
    if (task->kind != SK_TASK_PRELOAD && task->kind != SK_TASK_FLUSH) continue;
    sk__subkernel *s = &plan->subs[task->sub];
    if (s->spans) continue;
    const sk__exec_node *ex = &p->nodes[s->node];
    size_t per_block = ex->n_in_tensors + ex->io.n_out;
    s->spans = malloc(((size_t)s->n_blocks * per_block + 1) * sizeof *s->spans);
    if (!s->spans) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", plan->name);
    for (int64_t b = 0; b < s->n_blocks; b++) {
      sk__span *reads = &s->spans[(size_t)b * per_block];
      sk__block_footprint(ex, &s->io, b, reads, reads + ex->n_in_tensors);
    }
  }
  return SK_STATUS_OK;
}

sk_status sk__plan_build(const sk_program *p, const size_t *nodes, size_t n, const char *name,
                         const sk__options *options, int n_cores, sk__plan **plan_out) {
  *plan_out = NULL;
  sk__plan *plan = calloc(1, sizeof *plan);
  if (!plan) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", name);
  plan->n_cores = n_cores;
  plan->preload_bytes = 256 * 1024;
  sk__options_init_defaults(&plan->options);
  plan->name = sk__strdup(name);
  sk_status st = plan->name ? sk__options_copy(&plan->options, options)
                            : sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", name);
  if (st == SK_STATUS_OK) st = plan_subkernels(plan, p, nodes, n);
  if (st == SK_STATUS_OK) st = plan_labels(plan, p);
  if (st == SK_STATUS_OK) st = check_sub_barriers(plan, p);
  if (st == SK_STATUS_OK) st = mark_external_inputs(plan, p);
  if (st == SK_STATUS_OK) st = sk__plan_schedule(plan, p);
  if (st == SK_STATUS_OK) st = footprints_for_tasks(plan, p);
  if (st != SK_STATUS_OK) {
    sk__plan_destroy(plan);
    return st;
  }
  *plan_out = plan;
  return SK_STATUS_OK;
}

/* A super kernel's run state in one run context (launch.h): its flags,
 * barriers and pending preloads, made from the immutable plan. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "executors/launch.h"

void sk__launch_state_destroy(sk__launch_state *st) {
  if (!st) return;
  free(st->sub_io);
  sk__aligned_free(st->flags);
  sk__aligned_free(st->barriers);
  sk__aligned_free(st->sub_barriers);
  sk__aligned_free(st->claims);
  free(st->pending_preload);
  free(st);
}

/* The barriers between sub-kernels, and those of barrier-using ops (over
 * the sub-kernel's cores, in place of the one their own launch would
 * use): the op finds its barrier in its io. */
static sk_status make_barriers(sk__launch_state *st, sk__node_io *node_io) {
  const sk__plan *plan = st->plan;
  for (int b = 0; b < plan->n_barriers; b++) {
    const sk__barrier_set *set = &plan->barrier_sets[b];
    SK_RETURN_IF_ERROR(sk__barrier_init(&st->barriers[b], set->n_cores));
    sk__barrier_watch(&st->barriers[b], st->wd, plan->sub_labels[set->after_sub], "at the barrier after it");
  }
  for (size_t i = 0; st->sub_barriers && i < plan->n_subs; i++) {
    const sk__subkernel *s = &plan->subs[i];
    if (s->barriers_per_block == 0) continue;
    SK_RETURN_IF_ERROR(sk__barrier_init(&st->sub_barriers[i], s->n_cores));
    sk__barrier_watch(&st->sub_barriers[i], st->wd, plan->sub_labels[i], "at its team barrier");
    node_io[s->node].barrier = &st->sub_barriers[i];
  }
  return SK_STATUS_OK;
}

sk_status sk__launch_state_create(const sk__plan *plan, const sk_program *p, sk__node_io *node_io, sk__watchdog *wd,
                                  sk__launch_state **out) {
  *out = NULL;
  sk__launch_state *st = calloc(1, sizeof *st);
  if (!st) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory for its run state", plan->name);
  st->plan = plan;
  st->p = p;
  st->wd = wd;
  st->sub_io = calloc(plan->n_subs ? plan->n_subs : 1, sizeof *st->sub_io);
  st->pending_preload = malloc((size_t)(plan->n_cores > 0 ? plan->n_cores : 1) * sizeof *st->pending_preload);
  if (plan->n_flags) st->flags = sk__aligned_calloc((size_t)plan->n_flags * sizeof *st->flags);
  if (plan->n_barriers) st->barriers = sk__aligned_calloc((size_t)plan->n_barriers * sizeof *st->barriers);
  if (plan->any_sub_barrier) st->sub_barriers = sk__aligned_calloc(plan->n_subs * sizeof *st->sub_barriers);
  st->claims = sk__aligned_calloc((plan->n_subs ? plan->n_subs : 1) * sizeof *st->claims);
  sk_status status = st->sub_io && st->pending_preload && st->claims && (st->flags || !plan->n_flags) &&
                             (st->barriers || !plan->n_barriers) && (st->sub_barriers || !plan->any_sub_barrier)
                         ? SK_STATUS_OK
                         : sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory for its run state", plan->name);
  if (status == SK_STATUS_OK) status = make_barriers(st, node_io);
  if (status != SK_STATUS_OK) {
    sk__launch_state_destroy(st);
    return status;
  }
  for (size_t i = 0; i < plan->n_subs; i++) {
    /* The node's io in this context runs with the plan's tiling of it. */
    sk__node_io *io = &node_io[plan->subs[i].node];
    io->plan = plan->subs[i].io.plan;
    io->n_blocks = plan->subs[i].io.n_blocks;
    st->sub_io[i] = io;
  }
  for (int c = 0; c < plan->n_cores; c++) st->pending_preload[c] = -1;
  *out = st;
  return SK_STATUS_OK;
}

/* The run loop, for every way of running (sk_program_run and its
 * variants, sk_run_context_run, sk_fused_kernel_launch): bind the
 * context's nodes to the run's buffers, then each step in order by its
 * executor (program/step.h: an op's own launch or its reference, a super
 * kernel interpreted or JIT-compiled); then the outputs that were not
 * computed in place. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "run/run.h"
#include "program/tokens.h"
#include "runtime/profile.h"
#include "runtime/team.h"

static bool profiling(const sk_program *p) { return p->profile_launches || p->profile_subkernels; }

/* The profile for a team of n_cores, created (or re-created, losing what a
 * smaller team recorded) when profiling is on. Under profile_lock. */
static sk_status ensure_profile(sk_program *p, int n_cores, const char *fn) {
  if (!profiling(p)) return SK_STATUS_OK;
  if (p->profile && p->profile->n_cores >= n_cores) return SK_STATUS_OK;
  sk__profile_destroy(p->profile);
  p->profile = sk__profile_create(n_cores);
  if (!p->profile) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory for the profile", fn);
  return SK_STATUS_OK;
}

_Alignas(64) unsigned char sk__empty_data[64];

/* Where value v lives in a run: the one place that maps a value to its
 * data (arena: the run context's): its root's storage plus its view offset
 * (a slice). */
static void *value_data(const sk_program *p, void *arena, sk_value v, void *const *in, void *const *out) {
  const sk__storage *s = &p->storage[p->root[v]];
  switch (s->kind) {
    case SK_STORE_INPUT: return (char *)in[s->index] + p->view_offset[v];
    case SK_STORE_OUTPUT: return (char *)out[s->index] + p->view_offset[v];
    case SK_STORE_CONSTANT: { /* read only: the program's, shared by every context */
      const sk__program_constant *c = &p->constants[s->index];
      return c->data ? (char *)(uintptr_t)c->data + p->view_offset[v] : (void *)sk__empty_data;
    }
    default: return (arena ? (char *)arena : (char *)sk__empty_data) + s->index + p->view_offset[v];
  }
}

/* Every node's tensors in ctx point into this run's buffers (a super
 * kernel runs several nodes in one launch, so all are bound first). */
static void bind_nodes(sk_run_context *ctx, void *const *in, void *const *out) {
  const sk_program *p = ctx->p;
  for (size_t i = 0; i < p->n_nodes; i++) {
    const sk__exec_node *n = &p->nodes[i];
    sk__node_io *io = &ctx->io[i];
    /* The context's own tensors (const only for the kernels), slot after
     * slot from here (run_context.c). */
    sk__tensor *inputs = (sk__tensor *)io->in[0].tensors;
    for (size_t j = 0; j < n->n_in_tensors; j++) inputs[j].data = value_data(p, ctx->arena, n->in_values[j], in, out);
    for (size_t j = 0; j < io->n_out; j++) io->out[j].data = value_data(p, ctx->arena, n->out_values[j], in, out);
  }
}

/* The bytes of a binding this run has: a bucket's dynamic output holds
 * only its live tokens' rows (program/tokens.h). */
static size_t live_bytes(const sk_run_context *ctx, const sk__tensor *desc) {
  size_t bytes = sk__tensor_bytes(desc);
  int64_t planned = ctx->p->planned_tokens;
  if (!desc->dynamic || planned <= 0 || ctx->tokens >= planned) return bytes;
  return bytes / (size_t)planned * (size_t)ctx->tokens;
}

static sk_status run_steps(sk_run_context *ctx, sk_team *team, void *const *in, void *const *out, bool bound,
                           const char *fn) {
  sk_program *p = ctx->p;
  int n_cores = team ? sk_team_num_cores(team) : 1;
  /* The nodes keep the pointers of the last run: a bound run after a bound
   * run with no binding between them has nothing to rebind. Until they are
   * rebound (a failure before that leaves them pointing elsewhere), the
   * context does not count them as bound. */
  bool rebind = !(bound && ctx->nodes_hold_bound);
  if (rebind) ctx->nodes_hold_bound = false;
  /* An error a block recorded in a launch that then failed otherwise
   * (watchdog, refused launch) belongs to that run, not this one. */
  sk__run_error_clear(&ctx->run_error);
  if (ctx->n_workspaces < n_cores) SK_RETURN_IF_ERROR(sk__run_context_workspaces(ctx, n_cores, fn));
  SK_RETURN_IF_ERROR(ensure_profile(p, n_cores, fn));
  if (rebind) bind_nodes(ctx, in, out);
  ctx->nodes_hold_bound = bound;
  sk__step_env env = {.p = p, .io = ctx->io, .workspaces = ctx->workspaces, .watchdog = &ctx->watchdog,
                      .launches = p->profile_launches ? p->profile : NULL, .profile = p->profile, .fn = fn};
  for (size_t s = 0; s < p->n_steps; s++) {
    const sk__step *step = &p->steps[s];
    env.index = s;
    SK_RETURN_IF_ERROR(step->exec->run(step, ctx->steps[s], &env, team));
    SK_RETURN_IF_ERROR(sk__run_error_take(&ctx->run_error)); /* what a block found in the data */
  }
  /* Outputs not computed in place (program.h) are copied now. */
  for (size_t j = 0; j < p->n_outputs; j++) {
    void *src = value_data(p, ctx->arena, p->outputs[j].value, in, out);
    if (src != out[j]) memcpy(out[j], src, live_bytes(ctx, &p->outputs[j].desc));
  }
  return SK_STATUS_OK;
}

sk_status sk__run_context_run(sk_run_context *ctx, sk_team *team, void *const *in, void *const *out, bool bound,
                              const char *fn) {
  sk_program *p = ctx->p;
  if (p->tokens) return sk__tokens_run(ctx, team, in, out, bound, ctx->tokens, fn);
  if (!profiling(p)) return run_steps(ctx, team, in, out, bound, fn);
  sk__fork_mutex_lock(&p->profile_lock); /* one profile, whose cores' records are not atomic */
  sk_status st = run_steps(ctx, team, in, out, bound, fn);
  sk__fork_mutex_unlock(&p->profile_lock);
  return st;
}

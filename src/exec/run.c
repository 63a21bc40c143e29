/* sk_program_run: bind the caller's buffers, then run every op as its own
 * launch on the team, in graph order (eager execution). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "exec/program.h"
#include "jit/jit.h"
#include "profile/profile.h"
#include "profile/report.h"
#include "runtime/barrier.h"
#include "superkernel/plan.h"

static sk_status ensure_workspaces(sk_program *p, int n_cores) {
  if (p->workspace_bytes == 0 || p->n_workspaces >= n_cores) return SK_STATUS_OK;
  void **ws = realloc(p->workspaces, (size_t)n_cores * sizeof *ws);
  if (!ws) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_program_run: out of memory for workspaces");
  p->workspaces = ws;
  for (int c = p->n_workspaces; c < n_cores; c++) {
    if (!(ws[c] = sk__aligned_alloc(p->workspace_bytes)))
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_program_run: out of memory for workspaces");
    p->n_workspaces = c + 1;
  }
  return SK_STATUS_OK;
}

typedef struct launch_ctx {
  const sk__exec_node *node;
  void *const *workspaces;
  sk__profile *profile; /* non-NULL: record every block */
  int32_t step;
} launch_ctx;

static void run_block(void *arg, int64_t block, int core) {
  const launch_ctx *ctx = arg;
  uint64_t t0 = ctx->profile ? sk__tsc() : 0;
  ctx->node->def->run_block(&ctx->node->io, block, ctx->workspaces ? ctx->workspaces[core] : NULL);
  if (ctx->profile) sk__profile_add(ctx->profile, core, SK_PROF_BLOCK, ctx->step, 0, block, t0, sk__tsc());
}

/* The profile for a team of n_cores, created (or re-created, losing what a
 * smaller team recorded) when profiling is on. */
static sk_status ensure_profile(sk_program *p, int n_cores) {
  if (!p->profile_launches && !p->profile_subkernels) return SK_STATUS_OK;
  if (p->profile && p->profile->n_cores >= n_cores) return SK_STATUS_OK;
  sk__profile_destroy(p->profile);
  p->profile = sk__profile_create(n_cores);
  if (!p->profile) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_program_run: out of memory for the profile");
  return SK_STATUS_OK;
}

sk_status sk_program_write_profile(sk_program *p, const char *dir) {
  sk__clear_error();
  if (!p || !dir) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_write_profile: %s is NULL", !p ? "program" : "dir");
  if (!p->profile)
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "sk_program_write_profile: nothing recorded (compile with cfg.profile = 1, or a scope with "
                    "profiling=1, and run the program)");
  pthread_mutex_lock(&p->run_lock);
  sk_status st = sk__profile_write(p->profile, p, dir);
  pthread_mutex_unlock(&p->run_lock);
  return st;
}

void sk_program_reset_profile(sk_program *p) {
  if (!p) return;
  pthread_mutex_lock(&p->run_lock);
  if (p->profile) sk__profile_reset(p->profile);
  pthread_mutex_unlock(&p->run_lock);
}

/* Data of the values of a program without an arena (every one 0 bytes):
 * non-NULL, like the marker match_buffers gives 0-byte caller buffers, since
 * kernels do pointer arithmetic on data (NULL + 0 is undefined). */
static _Alignas(64) unsigned char empty_arena[64];

/* A value's data: its root's storage plus its view offset (a slice). */
static void *value_data(const sk_program *p, sk_value v, void *const *in, void *const *out) {
  const sk__storage *s = &p->storage[p->root[v]];
  switch (s->kind) {
    case SK_STORE_INPUT: return (char *)in[s->index] + p->view_offset[v];
    case SK_STORE_OUTPUT: return (char *)out[s->index] + p->view_offset[v];
    case SK_STORE_CONSTANT: {
      const sk__program_constant *c = &p->constants[s->index];
      return c->data ? (char *)(uintptr_t)c->data + p->view_offset[v] : (void *)empty_arena;
    }
    default: return (p->arena ? (char *)p->arena : (char *)empty_arena) + s->index + p->view_offset[v];
  }
}

static sk_status run_locked(sk_program *p, sk_team *team, void *const *in, void *const *out, bool rebind) {
  int n_cores = team ? sk_team_num_cores(team) : 1;
  SK_RETURN_IF_ERROR(ensure_workspaces(p, n_cores));
  SK_RETURN_IF_ERROR(ensure_profile(p, n_cores));
  sk__profile *launches = p->profile_launches ? p->profile : NULL;
  /* Bind every node first: a super kernel runs several nodes in one launch. */
  for (size_t i = 0; rebind && i < p->n_nodes; i++) {
    sk__exec_node *n = &p->nodes[i];
    for (size_t j = 0; j < n->n_in_tensors; j++) n->in_tensors[j].data = value_data(p, n->in_values[j], in, out);
    for (size_t j = 0; j < n->io.n_out; j++) n->io.out[j].data = value_data(p, n->out_values[j], in, out);
  }
  for (size_t s = 0; s < p->n_steps; s++) {
    uint64_t t0 = launches ? sk__tsc() : 0;
    if (p->steps[s].plan) { /* a super kernel: JIT-compiled, else interpreted */
      if (p->steps[s].jit) SK_RETURN_IF_ERROR(sk__jit_run(&p->steps[s], p, team));
      else SK_RETURN_IF_ERROR(sk__plan_run(p->steps[s].plan, p, team));
      SK_RETURN_IF_ERROR(sk__run_error_take(&p->run_error));
      if (launches) sk__profile_add(launches, launches->n_cores, SK_PROF_LAUNCH, (int32_t)s, 0, 0, t0, sk__tsc());
      continue;
    }
    const sk__exec_node *n = &p->nodes[p->steps[s].node];
    if (p->executor == SK_EXECUTOR_REFERENCE) {
      if (!sk__node_has_output(n)) continue; /* as the other executors: no blocks */
      sk__watchdog_set_current(&p->watchdog); /* for references that run blocks on a team */
      n->def->reference(&n->io);
      sk__watchdog_set_current(NULL);
      SK_RETURN_IF_ERROR(sk__watchdog_take(&p->watchdog));
      SK_RETURN_IF_ERROR(sk__run_error_take(&p->run_error));
      continue;
    }
    if (n->tiling.n_blocks == 0) continue;
    if (n->eager_barrier && n->tiling.n_blocks > n_cores) /* its blocks must all run at once */
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_run: %s uses a team barrier over %lld blocks; run on %d cores",
                      n->name, (long long)n->tiling.n_blocks, n_cores);
    launch_ctx ctx = {n, p->workspaces, launches, (int32_t)s};
    if (team) {
      SK_RETURN_IF_ERROR(sk_team_launch(team, run_block, &ctx, n->tiling.n_blocks));
    } else {
      for (int64_t b = 0; b < n->tiling.n_blocks; b++) run_block(&ctx, b, 0);
    }
    SK_RETURN_IF_ERROR(sk__settle_eager_barrier(p, &p->nodes[p->steps[s].node]));
    SK_RETURN_IF_ERROR(sk__run_error_take(&p->run_error));
    if (launches) sk__profile_add(launches, launches->n_cores, SK_PROF_LAUNCH, (int32_t)s, 0, 0, t0, sk__tsc());
  }
  /* Outputs not computed in place (program.h) are copied now. */
  for (size_t j = 0; j < p->n_outputs; j++) {
    void *src = value_data(p, p->outputs[j].value, in, out);
    if (src != out[j]) memcpy(out[j], src, sk__tensor_bytes(&p->outputs[j].desc));
  }
  return SK_STATUS_OK;
}

sk_status sk__program_run_buffers(sk_program *p, sk_team *team, void *const *in, void *const *out, bool bound) {
  pthread_mutex_lock(&p->run_lock);
  /* The nodes keep the pointers of the last run: a bound run after a bound
   * run with no sk_program_bind between them has nothing to rebind. */
  bool rebind = !(bound && p->nodes_hold_bound);
  p->nodes_hold_bound = bound;
  sk_status st = run_locked(p, team, in, out, rebind);
  pthread_mutex_unlock(&p->run_lock);
  return st;
}

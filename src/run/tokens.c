/* Running a program with a run-time token count (program/tokens.h):
 * through the bucket that fits, or, for the reference executor, a program
 * compiled for exactly the run's count. */
#include "run/run.h"

#include <stdlib.h>

#include "compile/compile.h"
#include "core/error.h"
#include "program/run_context.h"
#include "program/tokens.h"

/* The reference executor: the program for exactly `tokens`, made now if
 * no kept one has that count (the oldest kept one makes room). Under the
 * lock, held through the run. */
static sk_status run_exact(sk__token_buckets *b, sk_team *team, void *const *in, void *const *out, int64_t tokens,
                           const char *fn) {
  sk__fork_mutex_lock(&b->lock);
  sk_program *prog = NULL;
  for (size_t i = 0; i < SK_TOKENS_EXACT_KEEP; i++)
    if (b->exact[i] && b->exact_counts[i] == tokens) prog = b->exact[i];
  sk_status st = SK_STATUS_OK;
  if (!prog) {
    /* Tiled for the team it runs on (an op with a team barrier has a block
     * a core); the caller's cfg kept no team, which may be gone by now. */
    sk_compile_config cfg = b->has_cfg ? b->cfg : (sk_compile_config){.struct_size = sizeof cfg};
    cfg.team = team;
    st = sk__compile_at_tokens(b->graph, &cfg, tokens, 0, NULL, &prog);
    if (st == SK_STATUS_OK) {
      /* Slots 1.. in turn: slot 0, the maximum's, stays. */
      size_t slot = 1 + (b->next_exact++ - 1) % (SK_TOKENS_EXACT_KEEP - 1);
      sk_program_destroy(b->exact[slot]);
      b->exact[slot] = prog;
      b->exact_counts[slot] = tokens;
    }
  }
  if (st == SK_STATUS_OK) {
    prog->default_ctx->tokens = tokens; /* the first kept one is the maximum's bucket */
    st = sk__run_context_run(prog->default_ctx, team, in, out, false, fn);
  }
  sk__fork_mutex_unlock(&b->lock);
  return st;
}

/* The smallest bucket with at least `tokens`. */
static size_t bucket_for(const sk__token_buckets *b, int64_t tokens) {
  size_t i = 0;
  while (i + 1 < b->n && b->counts[i] < tokens) i++;
  return i;
}

/* The context's nodes at `tokens` tokens of the bucket's planned count. */
static void set_tokens(sk_run_context *sub, int64_t tokens) {
  if (sub->tokens == tokens) return;
  for (size_t k = 0; k < sub->p->n_nodes; k++) {
    sub->io[k].tokens = tokens;
    sub->io[k].planned_tokens = sub->p->planned_tokens;
  }
  sub->tokens = tokens;
}

sk_status sk__tokens_run(sk_run_context *ctx, sk_team *team, void *const *in, void *const *out, bool bound,
                         int64_t tokens, const char *fn) {
  sk__token_buckets *b = ctx->p->tokens;
  if (tokens == 0) return SK_STATUS_OK; /* nothing to compute: dynamic outputs are empty */
  if (!b->n) return run_exact(b, team, in, out, tokens, fn);
  size_t i = bucket_for(b, tokens);
  sk_run_context *sub = ctx->buckets[i];
  if (!sub) { /* the first run in this bucket */
    SK_RETURN_IF_ERROR(sk__run_context_create(b->programs[i], &sub));
    ctx->buckets[i] = sub;
  }
  set_tokens(sub, tokens);
  /* Bindings changed since this bucket's last bound run: rebind its nodes. */
  if (sub->bind_generation != ctx->bind_generation) sub->nodes_hold_bound = false;
  sub->bind_generation = ctx->bind_generation;
  atomic_store(&b->last, i);
  return sk__run_context_run(sub, team, in, out, bound, fn);
}

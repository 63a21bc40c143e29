/* A program with a run-time token count (tokens.h): compiled as one
 * program per token bucket, run through the bucket that fits. */
#include "program/tokens.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "run/run_context.h"

static sk_status oom(void) { return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory"); }

void sk__token_buckets_free(sk__token_buckets *b) {
  if (!b) return;
  for (size_t i = 0; i < b->n; i++) sk_program_destroy(b->programs[i]);
  for (size_t i = 0; i < SK_TOKENS_EXACT_KEEP; i++) sk_program_destroy(b->exact[i]);
  sk_graph_destroy(b->graph);
  free(b->options);
  pthread_mutex_destroy(&b->lock);
  free(b->programs);
  free(b->counts);
  free(b);
}

/* 1, 2, 4, ... below max, then max: a run computes only the rows it has,
 * in a tiling planned for fewer than twice as many. */
static sk_status bucket_counts(sk__token_buckets *b, int64_t max) {
  size_t n = 1;
  for (int64_t c = 1; c < max; c *= 2) n++;
  b->counts = calloc(n, sizeof *b->counts);
  b->programs = calloc(n, sizeof *b->programs);
  if (!b->counts || !b->programs) return oom();
  n = 0;
  for (int64_t c = 1; c < max; c *= 2) b->counts[n++] = c;
  b->counts[n++] = max;
  b->n = n;
  return SK_STATUS_OK;
}

/* Compiles g at `tokens` tokens (planned: clipped runs; 0: exact runs). */
static sk_status compile_at(const sk_graph *g, const sk_compile_config *cfg, int64_t tokens, int64_t planned,
                            const sk_program *packed_from, sk_program **out) {
  sk_graph *at;
  SK_RETURN_IF_ERROR(sk__graph_at_tokens(g, tokens, &at));
  sk_status st = sk__compile_graph(at, cfg, planned, packed_from, out);
  sk_graph_destroy(at);
  return st;
}

/* The graph every program of p is compiled from (the buckets, the
 * reference executor's exact counts): g at its maximum with its own copies
 * of the constants g owns (g may go). */
static sk_status keep_graph(const sk_graph *g, sk__token_buckets *b) {
  SK_RETURN_IF_ERROR(sk__graph_at_tokens(g, g->max_tokens, &b->graph));
  b->graph->max_tokens = g->max_tokens;
  for (size_t i = 0; i < g->n_constants; i++) {
    if (!g->constants[i].owned) continue;
    size_t bytes = sk__tensor_bytes(&g->values[g->constants[i].value].desc);
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) return oom();
    if (bytes) memcpy(copy, g->constants[i].data, bytes);
    b->graph->constants[i].data = copy;
    b->graph->constants[i].owned = true;
  }
  return SK_STATUS_OK;
}

/* The reference executor's configuration for its later compiles: what
 * the caller's struct holds (an older, shorter one: what it has), without
 * the team, which may be gone by then (the reference tiles for nothing). */
static void keep_config(sk__token_buckets *b, const sk_compile_config *cfg) {
  if (!cfg) return;
  size_t n = cfg->struct_size && cfg->struct_size < sizeof *cfg ? cfg->struct_size : sizeof *cfg;
  memcpy(&b->cfg, cfg, n);
  b->cfg.struct_size = sizeof b->cfg;
  b->has_cfg = true;
  b->cfg.team = NULL;
  b->cfg.on_jit = NULL;
  b->cfg.on_jit_user = NULL;
  b->cfg.default_options = NULL; /* the caller's string: copied */
  if (n >= offsetof(sk_compile_config, default_options) + sizeof cfg->default_options && cfg->default_options) {
    b->options = sk__strdup(cfg->default_options);
    b->cfg.default_options = b->options;
  }
}

static sk_status copy_io(const sk__io_binding *src, size_t n, sk__io_binding **dst) {
  *dst = calloc(n ? n : 1, sizeof **dst);
  if (!*dst) return oom();
  for (size_t i = 0; i < n; i++) {
    (*dst)[i] = src[i];
    if (!((*dst)[i].name = sk__strdup(src[i].name))) return oom();
  }
  return SK_STATUS_OK;
}

/* The program the caller holds: the largest bucket's inputs, outputs and
 * settings, no nodes of its own. */
static sk_status fill_front(sk_program *p, const sk_program *largest) {
  p->executor = largest->executor;
  p->watchdog_ms = largest->watchdog_ms;
  p->tiled_cores = largest->tiled_cores;
  p->profile_launches = largest->profile_launches;
  p->profile_subkernels = largest->profile_subkernels;
  SK_RETURN_IF_ERROR(copy_io(largest->inputs, largest->n_inputs, &p->inputs));
  p->n_inputs = largest->n_inputs;
  SK_RETURN_IF_ERROR(copy_io(largest->outputs, largest->n_outputs, &p->outputs));
  p->n_outputs = largest->n_outputs;
  return SK_STATUS_OK;
}

sk_status sk__compile_tokens(const sk_graph *g, const sk_compile_config *cfg, sk_program **out) {
  sk_program *p = sk__program_new();
  sk__token_buckets *b = p ? calloc(1, sizeof *b) : NULL;
  if (!b) {
    free(p);
    return oom();
  }
  pthread_mutex_init(&b->lock, NULL);
  p->tokens = b;
  p->max_tokens = g->max_tokens;
  sk_status st = bucket_counts(b, g->max_tokens);
  /* Every program is compiled from the kept graph, whose constants are its
   * own copies of those g owns: g may be destroyed after sk_compile, and
   * the programs borrow what they do not pack. */
  if (st == SK_STATUS_OK) st = keep_graph(g, b);
  /* The largest first: it packs the constants the others share. */
  size_t top = b->n - 1;
  if (st == SK_STATUS_OK) st = compile_at(b->graph, cfg, b->counts[top], b->counts[top], NULL, &b->programs[top]);
  if (st == SK_STATUS_OK && b->programs[top]->executor == SK_EXECUTOR_REFERENCE) {
    /* The oracle: programs for exact counts, the first one this (kept for
     * good: describe and stats read it without the lock). */
    b->exact[0] = b->programs[top];
    b->exact_counts[0] = b->counts[top];
    b->next_exact = 1;
    b->programs[top] = NULL;
    b->n = 0;
    keep_config(b, cfg);
    st = sk__program_finish(b->exact[0]); /* run_exact runs its default context */
    if (st == SK_STATUS_OK) st = fill_front(p, b->exact[0]);
  } else if (st == SK_STATUS_OK) {
    for (size_t i = 0; st == SK_STATUS_OK && i < top; i++)
      st = compile_at(b->graph, cfg, b->counts[i], b->counts[i], b->programs[top], &b->programs[i]);
    if (st == SK_STATUS_OK) st = fill_front(p, b->programs[top]);
  }
  if (st == SK_STATUS_OK) st = sk__program_finish(p);
  if (st != SK_STATUS_OK) {
    sk_program_destroy(p);
    return st;
  }
  *out = p;
  return SK_STATUS_OK;
}

size_t sk__tokens_row_bytes(const sk_program *p, const sk__tensor *desc) {
  return desc->dynamic && p->max_tokens > 0 ? sk__tensor_bytes(desc) / (size_t)p->max_tokens : 0;
}

const sk_program *sk__tokens_largest(const sk_program *p) {
  if (!p->tokens) return p;
  const sk__token_buckets *b = p->tokens;
  return b->n ? b->programs[b->n - 1] : b->exact[0];
}

sk_program *sk__tokens_last_run(sk_program *p) {
  if (!p->tokens) return p;
  sk__token_buckets *b = p->tokens;
  return b->n ? b->programs[atomic_load(&b->last)] : b->exact[0];
}

/* ---- runs ---- */

/* The reference executor: the program for exactly `tokens`, made now if
 * no kept one has that count (the oldest kept one makes room). Under the
 * lock, held through the run. */
static sk_status run_exact(sk__token_buckets *b, sk_team *team, void *const *in, void *const *out, int64_t tokens,
                           const char *fn) {
  pthread_mutex_lock(&b->lock);
  sk_program *prog = NULL;
  for (size_t i = 0; i < SK_TOKENS_EXACT_KEEP; i++)
    if (b->exact[i] && b->exact_counts[i] == tokens) prog = b->exact[i];
  sk_status st = SK_STATUS_OK;
  if (!prog) {
    /* Tiled for the team it runs on (an op with a team barrier has a block
     * a core); the caller's cfg kept no team, which may be gone by now. */
    sk_compile_config cfg = b->has_cfg ? b->cfg : (sk_compile_config){.struct_size = sizeof cfg};
    cfg.team = team;
    st = compile_at(b->graph, &cfg, tokens, 0, NULL, &prog);
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
  pthread_mutex_unlock(&b->lock);
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

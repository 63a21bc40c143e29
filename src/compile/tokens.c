/* sk_compile of a graph with a run-time token count (program/tokens.h):
 * one program per token bucket, compiled from the graph built again at
 * the bucket's count. */
#include "compile/compile.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "program/tokens.h"

static sk_status oom(void) { return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory"); }

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

sk_status sk__compile_at_tokens(const sk_graph *g, const sk_compile_config *cfg, int64_t tokens, int64_t planned,
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
  p->isa = largest->isa;
  p->numerics = largest->numerics;
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
  sk__fork_mutex_init(&b->lock);
  p->tokens = b;
  p->max_tokens = g->max_tokens;
  sk_status st = bucket_counts(b, g->max_tokens);
  /* Every program is compiled from the kept graph, whose constants are its
   * own copies of those g owns: g may be destroyed after sk_compile, and
   * the programs borrow what they do not pack. */
  if (st == SK_STATUS_OK) st = keep_graph(g, b);
  /* The largest first: it packs the constants the others share. */
  size_t top = b->n - 1;
  if (st == SK_STATUS_OK) st = sk__compile_at_tokens(b->graph, cfg, b->counts[top], b->counts[top], NULL, &b->programs[top]);
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
      st = sk__compile_at_tokens(b->graph, cfg, b->counts[i], b->counts[i], b->programs[top], &b->programs[i]);
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

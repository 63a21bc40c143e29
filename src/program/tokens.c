/* The data of a program with a run-time token count (tokens.h): freeing
 * its buckets, and which bucket describes or profiles it. */
#include "program/tokens.h"

#include <stdlib.h>

#include "graph/graph.h"

void sk__token_buckets_free(sk__token_buckets *b) {
  if (!b) return;
  for (size_t i = 0; i < b->n; i++) sk_program_destroy(b->programs[i]);
  for (size_t i = 0; i < SK_TOKENS_EXACT_KEEP; i++) sk_program_destroy(b->exact[i]);
  sk_graph_destroy(b->graph);
  free(b->options);
  sk__fork_mutex_destroy(&b->lock);
  free(b->programs);
  free(b->counts);
  free(b);
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

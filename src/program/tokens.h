/* A program with a run-time token count (superkernel.h, SK_DIM_DYNAMIC).
 *
 * What the caller holds is a program without nodes of its own: its inputs
 * and outputs (dynamic ones at the maximum, desc.dynamic set), and one
 * ordinary program per token bucket (1, 2, 4, ... and the maximum), each
 * compiled from the graph built at that count (graph/tokens.c): tiled,
 * planned and JIT-compiled once, at sk_compile, with the constants packed
 * once (the largest bucket's packs, shared). A run with T tokens goes to
 * the smallest bucket >= T; its nodes' io carry tokens = T and
 * planned_tokens = the bucket's count, and every block computes only its
 * live rows (ops/op.h). Storage of each bucket is planned for its count.
 *
 * The reference executor, the oracle of the tests, does not clip: it runs
 * a program built for exactly T tokens (made at the first run with that T,
 * kept for the next ones), so a dynamic program's outputs can be checked
 * against an independent build. */
#ifndef SK_PROGRAM_TOKENS_H
#define SK_PROGRAM_TOKENS_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/fork.h"
#include "program/program.h"

/* Exact-count programs of the reference executor kept at once. */
#define SK_TOKENS_EXACT_KEEP 8

typedef struct sk__token_buckets {
  sk_program **programs;  /* per bucket, by ascending count */
  int64_t *counts;
  size_t n;
  /* The graph every program is compiled from (at its maximum, rebuildable,
   * owning copies of the caller's owned constants: the programs borrow them).
   * The reference executor: the configuration to compile it with, and the
   * exact programs made so far, under lock (a run of one holds it: the
   * oracle runs one at a time); exact[0], the maximum's, stays. */
  sk_graph *graph;
  sk_compile_config cfg;
  bool has_cfg;
  char *options;          /* cfg.default_options' copy */
  sk__fork_mutex lock;
  sk_program *exact[SK_TOKENS_EXACT_KEEP];
  int64_t exact_counts[SK_TOKENS_EXACT_KEEP];
  size_t next_exact;
  atomic_size_t last;     /* the bucket run last: what profiles are read from */
} sk__token_buckets;

void sk__token_buckets_free(sk__token_buckets *b);

/* The bytes of one token's rows of io binding b (0 for a static one). */
size_t sk__tokens_row_bytes(const sk_program *p, const sk__tensor *desc);

/* The program whose steps describe / profile p: p itself when static, else
 * its largest bucket (describe) or the last one run (profiles). */
const sk_program *sk__tokens_largest(const sk_program *p);
sk_program *sk__tokens_last_run(sk_program *p);

#endif

/* The compiler's entry points inside the library (sk_compile is the
 * public one): a graph of static shapes, a graph with a run-time token
 * count (program/tokens.h), and a graph at one count. */
#ifndef SK_COMPILE_COMPILE_H
#define SK_COMPILE_COMPILE_H

#include "program/program.h"

/* sk_compile's work for one graph of static shapes (compile.c):
 * planned_tokens as the program's (0: static), constants' packs taken from
 * packed_from's nodes when given (the same graph at another count). */
sk_status sk__compile_graph(const sk_graph *g, const sk_compile_config *cfg, int64_t planned_tokens,
                            const sk_program *packed_from, sk_program **out);
/* The arena's offsets, once p's steps are built: classes whose steps do
 * not overlap share bytes (arena_plan.c). */
sk_status sk__plan_arena(sk_program *p);
/* sk_compile of a graph with a maximum token count (tokens.c). */
sk_status sk__compile_tokens(const sk_graph *g, const sk_compile_config *cfg, sk_program **out);
/* g compiled at `tokens` tokens (planned: its bucket's count, for clipped
 * runs; 0: exact runs of the reference executor). */
sk_status sk__compile_at_tokens(const sk_graph *g, const sk_compile_config *cfg, int64_t tokens, int64_t planned,
                                const sk_program *packed_from, sk_program **out);

#endif

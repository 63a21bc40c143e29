/* sk_program_describe: the run's steps in readable form (what `sk plan`
 * prints). */
#include <stdlib.h>

#include "core/cpu.h"
#include "core/error.h"
#include "program/program.h"
#include "program/tokens.h"

static const char *executor_summary(sk_executor e) {
  switch (e) {
    case SK_EXECUTOR_EAGER: return "eager";
    case SK_EXECUTOR_REFERENCE: return "reference";
    case SK_EXECUTOR_JIT: return "JIT super kernels";
    case SK_EXECUTOR_AUTO: return "JIT super kernels with fallback";
    default: return "interpreted super kernels";
  }
}

/* A program with a run-time token count: its buckets, then the largest
 * one's steps (the others differ only in their tiling). */
static sk_status describe_tokens(const sk_program *p, char **text_out) {
  const sk__token_buckets *b = p->tokens;
  char *inner = NULL;
  SK_RETURN_IF_ERROR(sk_program_describe(sk__tokens_largest(p), &inner));
  sk__text t = {0};
  sk__text_put(&t, "run-time token count: 1 .. %lld; ", (long long)p->max_tokens);
  if (!b->n) sk__text_put(&t, "reference executor: a program built for each count run\n");
  else sk__text_put(&t, "token buckets:");
  for (size_t i = 0; i < b->n; i++) sk__text_put(&t, " %lld%s", (long long)b->counts[i], i + 1 < b->n ? "," : "\n");
  if (b->n) sk__text_put(&t, "the bucket of %lld tokens:\n", (long long)b->counts[b->n - 1]);
  sk__text_put(&t, "%s", inner);
  free(inner);
  return sk__text_take(&t, "sk_program_describe", text_out);
}

sk_status sk_program_describe(const sk_program *p, char **text_out) {
  sk__clear_error();
  if (!p || !text_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_describe: %s is NULL", !p ? "program" : "text_out");
  if (p->tokens) return describe_tokens(p, text_out);
  sk__text t = {0};
  sk__text_put(&t, "program: %zu steps, executor %s, planned for %d cores, kernels for ISA %s, numerics %s\n",
               p->n_steps, executor_summary(p->executor), p->tiled_cores, sk__isa_name(p->isa),
               sk_numerics_name(p->numerics));
  if (p->n_constants)
    sk__text_put(&t, "constants: %zu (%zu bytes); packed at compile: %zu bytes\n", p->n_constants, p->constant_bytes,
                 p->packed_bytes);
  for (size_t s = 0; s < p->n_steps; s++) p->steps[s].exec->describe(p, &p->steps[s], &t);
  return sk__text_take(&t, "sk_program_describe", text_out);
}

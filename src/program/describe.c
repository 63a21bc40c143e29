/* sk_program_describe: the run's steps in readable form (what `sk plan`
 * prints). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "program/program.h"
#include "program/tokens.h"

void sk_free(void *p) { free(p); }

static bool append(char **buf, size_t *len, const char *piece) {
  size_t n = strlen(piece);
  char *grown = realloc(*buf, *len + n + 1);
  if (!grown) return false;
  memcpy(grown + *len, piece, n + 1);
  *buf = grown;
  *len += n;
  return true;
}

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
  char *inner = NULL, line[512];
  SK_RETURN_IF_ERROR(sk_program_describe(sk__tokens_largest(p), &inner));
  size_t len = 0;
  char *buf = NULL;
  snprintf(line, sizeof line, "run-time token count: 1 .. %lld; ", (long long)p->max_tokens);
  bool ok = append(&buf, &len, line);
  if (!b->n) ok = ok && append(&buf, &len, "reference executor: a program built for each count run\n");
  else ok = ok && append(&buf, &len, "token buckets:");
  for (size_t i = 0; ok && i < b->n; i++) {
    snprintf(line, sizeof line, " %lld%s", (long long)b->counts[i], i + 1 < b->n ? "," : "\n");
    ok = append(&buf, &len, line);
  }
  if (ok && b->n) {
    snprintf(line, sizeof line, "the bucket of %lld tokens:\n", (long long)b->counts[b->n - 1]);
    ok = append(&buf, &len, line);
  }
  ok = ok && append(&buf, &len, inner);
  free(inner);
  if (!ok) {
    free(buf);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_program_describe: out of memory");
  }
  *text_out = buf;
  return SK_STATUS_OK;
}

sk_status sk_program_describe(const sk_program *p, char **text_out) {
  sk__clear_error();
  if (!p || !text_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_describe: %s is NULL", !p ? "program" : "text_out");
  char *buf = NULL, line[512];
  size_t len = 0;
  bool ok = true;
  if (p->tokens) return describe_tokens(p, text_out);
  snprintf(line, sizeof line, "program: %zu steps, executor %s, planned for %d cores, kernels for ISA %s\n",
           p->n_steps, executor_summary(p->executor), p->tiled_cores, sk__isa_name(p->isa));
  ok = append(&buf, &len, line);
  if (ok && p->n_constants) {
    snprintf(line, sizeof line, "constants: %zu (%zu bytes); packed at compile: %zu bytes\n", p->n_constants,
             p->constant_bytes, p->packed_bytes);
    ok = append(&buf, &len, line);
  }
  sk__text steps = {0};
  for (size_t s = 0; s < p->n_steps; s++) p->steps[s].exec->describe(p, &p->steps[s], &steps);
  ok = ok && !steps.failed && (!steps.buf || append(&buf, &len, steps.buf));
  free(steps.buf);
  if (!ok) {
    free(buf);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_program_describe: out of memory");
  }
  *text_out = buf;
  return SK_STATUS_OK;
}

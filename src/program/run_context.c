/* Making and freeing run contexts (run_context.h); sk_run_context_create
 * and sk_run_context_destroy. Binding and running are src/run/'s. */
#include "program/run_context.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "program/tokens.h"

static sk_status oom(void) {
  return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_run_context_create: out of memory");
}

void sk__run_context_free(sk_run_context *ctx) {
  if (!ctx) return;
  for (size_t s = 0; ctx->steps && s < ctx->p->n_steps; s++) ctx->p->steps[s].exec->release(ctx->steps[s]);
  for (size_t i = 0; ctx->buckets && i < ctx->p->tokens->n; i++) sk__run_context_free(ctx->buckets[i]);
  free(ctx->buckets);
  free(ctx->bound_bytes[SK_IO_INPUT]);
  free(ctx->steps);
  for (int c = 0; c < ctx->n_workspaces; c++) sk__aligned_free(ctx->workspaces[c]);
  free(ctx->workspaces);
  sk__aligned_free(ctx->arena);
  free(ctx->tensors);
  free(ctx->io);
  free(ctx->bound[SK_IO_INPUT]); /* one allocation for inputs and outputs */
  free(ctx);
}

sk_status sk__run_context_workspaces(sk_run_context *ctx, int n_cores, const char *fn) {
  size_t bytes = ctx->p->workspace_bytes;
  if (bytes == 0 || ctx->n_workspaces >= n_cores) return SK_STATUS_OK;
  void **ws = realloc(ctx->workspaces, (size_t)n_cores * sizeof *ws);
  if (!ws) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory for workspaces", fn);
  ctx->workspaces = ws;
  for (int c = ctx->n_workspaces; c < n_cores; c++) {
    if (!(ws[c] = sk__aligned_alloc(bytes))) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory for workspaces", fn);
    ctx->n_workspaces = c + 1;
  }
  return SK_STATUS_OK;
}

/* Every node's io: the program's, with tensors of the context's own (data
 * set by each run's binding) and no barrier yet. */
static sk_status copy_nodes(sk_run_context *ctx) {
  const sk_program *p = ctx->p;
  size_t total = 0;
  for (size_t k = 0; k < p->n_nodes; k++) total += p->nodes[k].n_in_tensors + p->nodes[k].io.n_out;
  ctx->io = calloc(p->n_nodes ? p->n_nodes : 1, sizeof *ctx->io);
  ctx->tensors = calloc(total ? total : 1, sizeof *ctx->tensors);
  if (!ctx->io || !ctx->tensors) return oom();
  sk__tensor *next = ctx->tensors;
  for (size_t k = 0; k < p->n_nodes; k++) {
    const sk__exec_node *n = &p->nodes[k];
    sk__node_io *io = &ctx->io[k];
    *io = n->io;
    io->barrier = NULL;
    io->run_error = &ctx->run_error;
    size_t used = 0; /* inputs slot after slot, as the node's in_tensors */
    for (int s = 0; s < SK__MAX_SLOTS; s++) {
      io->in[s].tensors = next + used;
      for (size_t j = 0; j < n->io.in[s].count; j++) next[used + j] = n->io.in[s].tensors[j];
      used += n->io.in[s].count;
    }
    next += used;
    io->out = next;
    for (size_t j = 0; j < n->io.n_out; j++) next[j] = n->io.out[j];
    next += n->io.n_out;
  }
  return SK_STATUS_OK;
}

/* Each step's state in this context, by its executor. */
static sk_status make_steps(sk_run_context *ctx) {
  const sk_program *p = ctx->p;
  ctx->steps = calloc(p->n_steps ? p->n_steps : 1, sizeof *ctx->steps);
  if (!ctx->steps) return oom();
  for (size_t s = 0; s < p->n_steps; s++) {
    const sk__step *step = &p->steps[s];
    SK_RETURN_IF_ERROR(step->exec->prepare(p, step, ctx->io, &ctx->watchdog, &ctx->steps[s]));
  }
  return SK_STATUS_OK;
}

sk_status sk__run_context_create(sk_program *p, sk_run_context **out) {
  *out = NULL;
  sk_run_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return oom();
  ctx->p = p;
  atomic_flag_clear(&ctx->busy);
  sk__watchdog_init(&ctx->watchdog, p->watchdog_ms);
  sk_status st = copy_nodes(ctx);
  if (st == SK_STATUS_OK) st = make_steps(ctx);
  if (st == SK_STATUS_OK && p->arena_bytes && !(ctx->arena = sk__aligned_alloc(p->arena_bytes))) st = oom();
  if (st == SK_STATUS_OK) {
    void **all = calloc(p->n_inputs + p->n_outputs + 1, sizeof *all);
    size_t *sizes = calloc(p->n_inputs + p->n_outputs + 1, sizeof *sizes);
    if (all) ctx->bound[SK_IO_INPUT] = all, ctx->bound[SK_IO_OUTPUT] = all + p->n_inputs;
    if (sizes) ctx->bound_bytes[SK_IO_INPUT] = sizes, ctx->bound_bytes[SK_IO_OUTPUT] = sizes + p->n_inputs;
    if (!all || !sizes) st = oom();
  }
  if (st == SK_STATUS_OK && p->tokens && !(ctx->buckets = calloc(p->tokens->n + 1, sizeof *ctx->buckets))) st = oom();
  /* Workspaces for the team the program was tiled for (more if a larger
   * team runs an eager program): a first run then allocates nothing. */
  if (st == SK_STATUS_OK) st = sk__run_context_workspaces(ctx, p->tiled_cores, "sk_run_context_create");
  if (st != SK_STATUS_OK) {
    sk__run_context_free(ctx);
    return st;
  }
  *out = ctx;
  return SK_STATUS_OK;
}

/* ---- public ---- */

sk_status sk_run_context_create(const sk_program *program, sk_run_context **ctx_out) {
  sk__clear_error();
  if (!program || !ctx_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_run_context_create: %s is NULL", !program ? "program" : "ctx_out");
  *ctx_out = NULL;
  /* The reference count is the one thing a context changes in its program. */
  sk_program *p = (sk_program *)program;
  SK_RETURN_IF_ERROR(sk__run_context_create(p, ctx_out));
  atomic_fetch_add(&p->refs, 1);
  (*ctx_out)->holds_program = true;
  return SK_STATUS_OK;
}

void sk_run_context_destroy(sk_run_context *ctx) {
  if (!ctx) return;
  sk_program *p = ctx->p;
  bool release = ctx->holds_program;
  sk__run_context_free(ctx);
  if (release) sk__program_release(p);
}

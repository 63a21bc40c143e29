/* Handing a run its buffers: by name (sk_program_run), by declaration index
 * (sk_program_run_by_index), or bound once for many runs (sk_program_bind +
 * sk_program_run_bound, or a run context's sk_run_context_bind +
 * sk_run_context_run). All check a buffer the same way, then run through
 * sk__run_context_run: the sk_program_* calls in the program's default
 * context, one at a time under its default_lock; a run context's calls in
 * that context, which one thread at a time may use (a second one gets
 * SK_STATUS_INVALID_STATE). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "run/run.h"
#include "program/tokens.h"

static const char *const KIND_NAME[2] = {"input", "output"};

/* Up to this many inputs + outputs, a by-name or by-index run keeps its
 * pointer arrays on the stack: no allocation for ordinary programs. */
#define STACK_BUFFERS 64

static const sk__io_binding *io_of(const sk_program *p, sk_io_kind kind, size_t *n) {
  *n = kind == SK_IO_INPUT ? p->n_inputs : p->n_outputs;
  return kind == SK_IO_INPUT ? p->inputs : p->outputs;
}

/* The checked data pointer of one buffer for io `index` of `kind`: its
 * exact size, or with a run-time token count any whole number of the
 * binding's token rows up to the maximum. */
static sk_status check_buffer(const char *fn, const sk_program *p, sk_io_kind kind, size_t index, void *data,
                              size_t bytes, void **out) {
  size_t n;
  const sk__io_binding *io = io_of(p, kind, &n);
  size_t want = sk__tensor_bytes(&io[index].desc), row = sk__tokens_row_bytes(p, &io[index].desc);
  if (row && (bytes % row != 0 || bytes > want)) {
    char s[SK_SHAPE_STR_MAX];
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "%s: %s '%s': expected whole tokens of %zu bytes each, at most %lld (%s %s), got %zu bytes", fn,
                    KIND_NAME[kind], io[index].name, row, (long long)p->max_tokens, sk_dtype_name(io[index].desc.dtype),
                    sk__shape_str(io[index].desc.rank, io[index].desc.shape, s, sizeof s), bytes);
  }
  if (!row && bytes != want) {
    char s[SK_SHAPE_STR_MAX];
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s '%s': expected %zu bytes (%s %s), got %zu", fn,
                    KIND_NAME[kind], io[index].name, want, sk_dtype_name(io[index].desc.dtype),
                    sk__shape_str(io[index].desc.rank, io[index].desc.shape, s, sizeof s), bytes);
  }
  if (!data && bytes)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s '%s': data is NULL", fn, KIND_NAME[kind], io[index].name);
  if (data && bytes && !sk__dtype_aligned(io[index].desc.dtype, data)) /* no element of an empty one is read */
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "%s: %s '%s': data %p is not aligned to %zu bytes, the size of its %s elements (see 'Buffers' in "
                    "superkernel.h)",
                    fn, KIND_NAME[kind], io[index].name, data, sk_dtype_size(io[index].desc.dtype),
                    sk_dtype_name(io[index].desc.dtype));
  *out = data ? data : (void *)sk__empty_data; /* a 0-byte tensor */
  return SK_STATUS_OK;
}

static bool overlap(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return na && nb && x < y + nb && y < x + na;
}

/* Output j must not overlap any input or another output (unbound: NULL);
 * sizes as given. */
static sk_status check_output_overlap(const char *fn, const sk_program *p, void *const *in, void *const *out,
                                      const size_t *in_bytes, const size_t *out_bytes, size_t j) {
  size_t bj = out_bytes[j];
  for (size_t i = 0; i < p->n_inputs; i++)
    if (in[i] && overlap(out[j], bj, in[i], in_bytes[i]))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: output '%s' overlaps input '%s'", fn, p->outputs[j].name,
                      p->inputs[i].name);
  for (size_t k = 0; k < p->n_outputs; k++)
    if (k != j && out[k] && overlap(out[j], bj, out[k], out_bytes[k]))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: output '%s' overlaps output '%s'", fn, p->outputs[j].name,
                      p->outputs[k].name);
  return SK_STATUS_OK;
}

/* The run's token count from its buffers' sizes (0 for a program of
 * static shapes): every dynamic input and output must hold the same count
 * of tokens. */
static sk_status run_tokens(const char *fn, const sk_program *p, const size_t *in_bytes, const size_t *out_bytes,
                            int64_t *tokens) {
  *tokens = 0;
  if (!p->tokens) return SK_STATUS_OK;
  const char *first = NULL, *first_kind = NULL;
  for (int kind = 0; kind < 2; kind++) {
    size_t n;
    const sk__io_binding *io = io_of(p, (sk_io_kind)kind, &n);
    const size_t *bytes = kind == SK_IO_INPUT ? in_bytes : out_bytes;
    for (size_t i = 0; i < n; i++) {
      size_t row = sk__tokens_row_bytes(p, &io[i].desc);
      if (!row) continue;
      int64_t t = (int64_t)(bytes[i] / row);
      if (!first) {
        *tokens = t, first = io[i].name, first_kind = KIND_NAME[kind];
        continue;
      }
      if (t != *tokens)
        return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                        "%s: %s '%s' holds %lld tokens but %s '%s' holds %lld: the buffers of the run-time token "
                        "dimension must agree", fn, KIND_NAME[kind], io[i].name, (long long)t, first_kind, first,
                        (long long)*tokens);
    }
  }
  return SK_STATUS_OK;
}

static sk_status find_index(const sk_program *p, sk_io_kind kind, const char *name, size_t *index) {
  size_t n;
  const sk__io_binding *io = io_of(p, kind, &n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(io[i].name, name) == 0) {
      *index = i;
      return SK_STATUS_OK;
    }
  return sk__fail(SK_STATUS_NOT_FOUND, "the program has no %s named '%s'", KIND_NAME[kind], name);
}

sk_status sk_program_find(const sk_program *p, sk_io_kind kind, const char *name, size_t *index_out) {
  sk__clear_error();
  if (!p || !name || !index_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_find: %s is NULL",
                    !p ? "program" : !name ? "name" : "index_out");
  if (kind != SK_IO_INPUT && kind != SK_IO_OUTPUT)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_find: kind %d: expected SK_IO_INPUT or SK_IO_OUTPUT",
                    (int)kind);
  return find_index(p, kind, name, index_out);
}

/* Fills data[] (p's count of kind) from bufs, by name or by position. */
static sk_status gather(const char *fn, const sk_program *p, sk_io_kind kind, const sk_buffer *bufs, size_t n_bufs,
                        bool by_name, void **data, size_t *sizes) {
  size_t n;
  const sk__io_binding *io = io_of(p, kind, &n);
  if (n_bufs && !bufs) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s buffers are NULL", fn, KIND_NAME[kind]);
  if (!by_name && n_bufs != n)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: the program has %zu %ss, %zu buffers were given", fn, n,
                    KIND_NAME[kind], n_bufs);
  for (size_t i = 0; i < n; i++) data[i] = NULL;
  for (size_t j = 0; j < n_bufs; j++) {
    size_t i = j;
    if (by_name) {
      if (!bufs[j].name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s buffer %zu has no name", fn, KIND_NAME[kind], j);
      if (find_index(p, kind, bufs[j].name, &i) != SK_STATUS_OK)
        return sk__fail(SK_STATUS_NOT_FOUND, "%s: the program has no %s named '%s'", fn, KIND_NAME[kind], bufs[j].name);
      if (data[i]) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s '%s' is bound twice", fn, KIND_NAME[kind], bufs[j].name);
    }
    SK_RETURN_IF_ERROR(check_buffer(fn, p, kind, i, bufs[j].data, bufs[j].bytes, &data[i]));
    sizes[i] = bufs[j].bytes;
  }
  for (size_t i = 0; i < n; i++)
    if (!data[i]) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %s '%s' is not bound", fn, KIND_NAME[kind], io[i].name);
  return SK_STATUS_OK;
}

static sk_status run_given(const char *fn, sk_program *p, sk_team *team, const sk_buffer *inputs, size_t n_inputs,
                           const sk_buffer *outputs, size_t n_outputs, bool by_name) {
  sk__clear_error();
  if (!p) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: program is NULL", fn);
  SK_RETURN_IF_ERROR(sk__refuse_in_block(fn));
  SK_RETURN_IF_ERROR(sk__team_check_process(team, fn)); /* before default_lock: see team.h on fork */
  void *stack[STACK_BUFFERS];
  size_t stack_sizes[STACK_BUFFERS];
  size_t total = p->n_inputs + p->n_outputs;
  void **in = total <= STACK_BUFFERS ? stack : calloc(total, sizeof(void *));
  size_t *in_bytes = total <= STACK_BUFFERS ? stack_sizes : calloc(total, sizeof(size_t));
  if (!in || !in_bytes) {
    if (in != stack) free(in), free(in_bytes);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  void **out = in + p->n_inputs;
  size_t *out_bytes = in_bytes + p->n_inputs;
  int64_t tokens = 0;
  sk_status st = gather(fn, p, SK_IO_INPUT, inputs, n_inputs, by_name, in, in_bytes);
  if (st == SK_STATUS_OK) st = gather(fn, p, SK_IO_OUTPUT, outputs, n_outputs, by_name, out, out_bytes);
  for (size_t j = 0; st == SK_STATUS_OK && j < p->n_outputs; j++)
    st = check_output_overlap(fn, p, in, out, in_bytes, out_bytes, j);
  if (st == SK_STATUS_OK) st = run_tokens(fn, p, in_bytes, out_bytes, &tokens);
  if (st == SK_STATUS_OK) {
    sk__fork_mutex_lock(&p->default_lock);
    p->default_ctx->tokens = tokens;
    st = sk__run_context_run(p->default_ctx, team, in, out, false, fn);
    sk__fork_mutex_unlock(&p->default_lock);
  }
  if (in != stack) free(in), free(in_bytes);
  if (st == SK_STATUS_OK) sk__clear_error(); /* nothing a block's nested call left behind */
  return st;
}

sk_status sk_program_run(sk_program *p, sk_team *team, const sk_buffer *inputs, size_t n_inputs,
                         const sk_buffer *outputs, size_t n_outputs) {
  return run_given("sk_program_run", p, team, inputs, n_inputs, outputs, n_outputs, true);
}

sk_status sk_program_run_by_index(sk_program *p, sk_team *team, const sk_buffer *inputs, size_t n_inputs,
                                  const sk_buffer *outputs, size_t n_outputs) {
  return run_given("sk_program_run_by_index", p, team, inputs, n_inputs, outputs, n_outputs, false);
}

/* Binds in ctx (used by this thread alone), checking what the public
 * calls promise: kind, index, size, overlap; the old binding stays on
 * failure. */
static sk_status bind(const char *fn, sk_run_context *ctx, sk_io_kind kind, size_t index, void *data, size_t bytes) {
  const sk_program *p = ctx->p;
  if (kind != SK_IO_INPUT && kind != SK_IO_OUTPUT)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kind %d: expected SK_IO_INPUT or SK_IO_OUTPUT", fn, (int)kind);
  size_t n;
  io_of(p, kind, &n);
  if (index >= n)
    return sk__fail(SK_STATUS_NOT_FOUND, "%s: %s %zu does not exist (the program has %zu)", fn, KIND_NAME[kind], index, n);
  void *checked;
  SK_RETURN_IF_ERROR(check_buffer(fn, p, kind, index, data, bytes, &checked));
  void *old = ctx->bound[kind][index];
  size_t old_bytes = ctx->bound_bytes[kind][index];
  ctx->bound[kind][index] = checked;
  ctx->bound_bytes[kind][index] = bytes;
  /* An output must not overlap anything bound; an input no bound output. */
  sk_status st = SK_STATUS_OK;
  void **in = ctx->bound[SK_IO_INPUT], **out = ctx->bound[SK_IO_OUTPUT];
  size_t *in_bytes = ctx->bound_bytes[SK_IO_INPUT], *out_bytes = ctx->bound_bytes[SK_IO_OUTPUT];
  if (kind == SK_IO_OUTPUT) {
    st = check_output_overlap(fn, p, in, out, in_bytes, out_bytes, index);
  } else {
    for (size_t j = 0; st == SK_STATUS_OK && j < p->n_outputs; j++)
      if (out[j]) st = check_output_overlap(fn, p, in, out, in_bytes, out_bytes, j);
  }
  if (st != SK_STATUS_OK) {
    ctx->bound[kind][index] = old;
    ctx->bound_bytes[kind][index] = old_bytes;
  } else if (old != checked) {
    ctx->nodes_hold_bound = false;
    ctx->bind_generation++;
  }
  return st;
}

/* Runs ctx with what is bound, after checking that everything is. */
static sk_status run_bound(const char *fn, sk_run_context *ctx, sk_team *team) {
  const sk_program *p = ctx->p;
  for (int kind = 0; kind < 2; kind++) {
    size_t n;
    const sk__io_binding *io = io_of(p, (sk_io_kind)kind, &n);
    for (size_t i = 0; i < n; i++)
      if (!ctx->bound[kind][i])
        return sk__fail(SK_STATUS_INVALID_STATE, "%s: %s '%s' (index %zu) is not bound", fn, KIND_NAME[kind],
                        io[i].name, i);
  }
  SK_RETURN_IF_ERROR(run_tokens(fn, p, ctx->bound_bytes[SK_IO_INPUT], ctx->bound_bytes[SK_IO_OUTPUT], &ctx->tokens));
  return sk__run_context_run(ctx, team, ctx->bound[SK_IO_INPUT], ctx->bound[SK_IO_OUTPUT], true, fn);
}

sk_status sk_program_bind(sk_program *p, sk_io_kind kind, size_t index, void *data, size_t bytes) {
  sk__clear_error();
  if (!p) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_bind: program is NULL");
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_program_bind"));
  sk__fork_mutex_lock(&p->default_lock);
  sk_status st = bind("sk_program_bind", p->default_ctx, kind, index, data, bytes);
  sk__fork_mutex_unlock(&p->default_lock);
  return st;
}

void sk_program_unbind_all(sk_program *p) {
  if (!p) return;
  if (sk__refuse_in_block("sk_program_unbind_all") != SK_STATUS_OK) {
    sk__log(SK_LOG_WARN, "%s", sk_last_error()); /* no status to return it in */
    return;
  }
  sk__fork_mutex_lock(&p->default_lock);
  sk_run_context *ctx = p->default_ctx;
  memset(ctx->bound[SK_IO_INPUT], 0, (p->n_inputs + p->n_outputs) * sizeof(void *));
  ctx->nodes_hold_bound = false;
  ctx->bind_generation++;
  sk__fork_mutex_unlock(&p->default_lock);
}

sk_status sk_program_run_bound(sk_program *p, sk_team *team) {
  sk__clear_error();
  if (!p) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_run_bound: program is NULL");
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_program_run_bound"));
  SK_RETURN_IF_ERROR(sk__team_check_process(team, "sk_program_run_bound"));
  sk__fork_mutex_lock(&p->default_lock);
  sk_status st = run_bound("sk_program_run_bound", p->default_ctx, team);
  sk__fork_mutex_unlock(&p->default_lock);
  if (st == SK_STATUS_OK) sk__clear_error();
  return st;
}

/* ---- run contexts ---- */

/* A context is one thread's at a time: a second thread's call is refused
 * rather than racing (one atomic exchange per call). */
static sk_status enter(const char *fn, sk_run_context *ctx) {
  if (!ctx) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: context is NULL", fn);
  if (atomic_flag_test_and_set_explicit(&ctx->busy, memory_order_acquire))
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "%s: the context is in use by another thread (one context per thread: create one for each)", fn);
  return SK_STATUS_OK;
}

static void leave(sk_run_context *ctx) { atomic_flag_clear_explicit(&ctx->busy, memory_order_release); }

sk_status sk_run_context_bind(sk_run_context *ctx, sk_io_kind kind, size_t index, void *data, size_t bytes) {
  sk__clear_error();
  SK_RETURN_IF_ERROR(enter("sk_run_context_bind", ctx));
  sk_status st = bind("sk_run_context_bind", ctx, kind, index, data, bytes);
  leave(ctx);
  return st;
}

sk_status sk_run_context_run(sk_run_context *ctx, sk_team *team) {
  sk__clear_error();
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_run_context_run"));
  SK_RETURN_IF_ERROR(sk__team_check_process(team, "sk_run_context_run"));
  SK_RETURN_IF_ERROR(enter("sk_run_context_run", ctx));
  sk_status st = run_bound("sk_run_context_run", ctx, team);
  leave(ctx);
  if (st == SK_STATUS_OK) sk__clear_error();
  return st;
}

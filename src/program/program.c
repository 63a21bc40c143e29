/* The compiled program as an object: creation and the default run
 * context, reference-counted destruction (a program outlives its run
 * contexts), and the queries on its inputs and outputs. sk_compile, which
 * fills it, is compile.c's. */
#include "program/program.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/struct_size.h"
#include "program/run_context.h"
#include "program/tokens.h"
#include "runtime/profile.h"
#include "runtime/watchdog.h"

sk_program *sk__program_new(void) {
  sk_program *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  sk__fork_mutex_init(&p->default_lock);
  sk__fork_mutex_init(&p->profile_lock);
  atomic_init(&p->refs, 1);
  p->watchdog_ms = sk__watchdog_resolve_ms(0);
  return p;
}

sk_status sk__program_finish(sk_program *p) { return sk__run_context_create(p, &p->default_ctx); }

static void program_free(sk_program *p) {
  for (size_t i = 0; i < p->n_nodes; i++) {
    sk__exec_node *n = &p->nodes[i];
    if (n->params && n->def->free_params) n->def->free_params(n->params);
    free(n->params);
    free(n->tiling.plan);
    free(n->name);
    free(n->in_tensors);
    free(n->in_values);
    free(n->out_values);
    free(n->io.out);
    free(n->waits);
    free(n->watch_label);
    if (!n->packed_shared) sk__aligned_free(n->packed);
  }
  sk__token_buckets_free(p->tokens);
  for (size_t i = 0; p->constants && i < p->n_constants; i++)
    if (p->constants[i].owned) free((void *)p->constants[i].data);
  free(p->constants);
  for (size_t i = 0; i < p->n_steps; i++) p->steps[i].exec->destroy(&p->steps[i]);
  sk__profile_destroy(p->profile);
  free(p->steps);
  for (size_t i = 0; i < p->n_inputs; i++) free(p->inputs[i].name);
  for (size_t i = 0; i < p->n_outputs; i++) free(p->outputs[i].name);
  free(p->nodes);
  free(p->inputs);
  free(p->outputs);
  free(p->root);
  free(p->view_offset);
  free(p->storage);
  sk__fork_mutex_destroy(&p->default_lock);
  sk__fork_mutex_destroy(&p->profile_lock);
  free(p);
}

void sk__program_release(sk_program *p) {
  if (atomic_fetch_sub(&p->refs, 1) == 1) program_free(p);
}

void sk_program_destroy(sk_program *p) {
  if (!p) return;
  sk__run_context_free(p->default_ctx); /* owned: it holds no reference */
  p->default_ctx = NULL;
  int contexts = atomic_load(&p->refs) - 1;
  if (contexts > 0)
    sk__log(SK_LOG_WARN, "sk_program_destroy: %d run context%s of the program still exist%s: destroy them first "
            "(the program is freed with the last)", contexts, contexts == 1 ? "" : "s", contexts == 1 ? "s" : "");
  sk__program_release(p);
}


size_t sk_program_num_inputs(const sk_program *p) { return p ? p->n_inputs : 0; }
size_t sk_program_num_outputs(const sk_program *p) { return p ? p->n_outputs : 0; }

static sk_status binding_info(const sk__io_binding *b, size_t n, size_t i, const char *what, int64_t max_tokens,
                              const char **name_out, sk_dtype *dtype_out, int *rank_out, int64_t *shape_out) {
  if (i >= n) return sk__fail(SK_STATUS_NOT_FOUND, "program %s %zu does not exist (it has %zu)", what, i, n);
  if (name_out) *name_out = b[i].name;
  if (dtype_out) *dtype_out = b[i].desc.dtype;
  if (rank_out) *rank_out = b[i].desc.rank;
  if (shape_out) memcpy(shape_out, b[i].desc.shape, sizeof(int64_t) * (size_t)b[i].desc.rank);
  if (shape_out && b[i].desc.dynamic) shape_out[0] = SK_DIM_TOKENS(b[i].desc.shape[0] / max_tokens);
  return SK_STATUS_OK;
}

int64_t sk_program_max_tokens(const sk_program *p) { return p ? p->max_tokens : 0; }

sk_status sk_program_input_info(const sk_program *p, size_t i, const char **name_out, sk_dtype *dtype_out,
                                int *rank_out, int64_t *shape_out) {
  sk__clear_error();
  if (!p) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_input_info: program is NULL");
  return binding_info(p->inputs, p->n_inputs, i, "input", p->max_tokens, name_out, dtype_out, rank_out, shape_out);
}

sk_status sk_program_output_info(const sk_program *p, size_t i, const char **name_out, sk_dtype *dtype_out,
                                 int *rank_out, int64_t *shape_out) {
  sk__clear_error();
  if (!p) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_output_info: program is NULL");
  return binding_info(p->outputs, p->n_outputs, i, "output", p->max_tokens, name_out, dtype_out, rank_out, shape_out);
}

sk_status sk_program_get_stats(const sk_program *p, sk_program_stats *out) {
  sk__clear_error();
  if (!p || !out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_get_stats: %s is NULL", !p ? "program" : "stats_out");
  size_t size;
  SK_RETURN_IF_ERROR(sk__struct_size("sk_program_get_stats", "stats_out->struct_size", "sk_program_stats",
                                     out->struct_size, sizeof(size_t), sizeof(sk_program_stats), &size));
  const sk_program *front = p;
  p = sk__tokens_largest(p); /* a run-time token count: the largest bucket's */
  sk_program_stats s = {.struct_size = size, .executor = p->executor, .n_inputs = p->n_inputs,
                        .n_outputs = p->n_outputs, .n_constants = p->n_constants,
                        .constant_bytes = p->constant_bytes, .packed_bytes = p->packed_bytes, .n_steps = p->n_steps,
                        .arena_bytes = p->arena_bytes, .workspace_bytes = p->workspace_bytes};
  s.max_tokens = front->max_tokens;
  s.n_token_buckets = front->tokens ? front->tokens->n : 0;
  s.numerics = p->numerics;
  for (size_t i = 0; i < p->n_steps; i++) {
    s.n_super_kernels += p->steps[i].plan != NULL;
    s.n_jit_compiled += p->steps[i].exec->kind == SK_EXECUTOR_JIT;
  }
  memcpy(out, &s, size); /* a caller's older, shorter struct gets what fits */
  return SK_STATUS_OK;
}

bool sk__node_has_output(const sk__exec_node *n) {
  if (n->launch_only) return true; /* its effects are its output */
  for (size_t i = 0; i < n->io.n_out; i++)
    if (sk__tensor_numel(&n->io.out[i]) > 0) return true;
  return false;
}

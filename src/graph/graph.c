/* Graph lifetime, inputs, outputs and value queries. Nodes are added in
 * graph/add_op.c. */
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

sk_status sk_graph_create(sk_graph **graph_out) {
  sk__clear_error();
  if (!graph_out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_create: graph_out is NULL");
  *graph_out = calloc(1, sizeof(sk_graph));
  if (!*graph_out) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_graph_create: out of memory");
  (*graph_out)->open_scope = -1;
  return SK_STATUS_OK;
}

void sk__node_free(sk__node *node) {
  for (int s = 0; s < SK__MAX_SLOTS; s++) free(node->slot_values[s]);
  free(node->outputs);
  if (node->params && node->def->free_params) node->def->free_params(node->params);
  free(node->params);
  free(node->name);
  free(node->waits);
  free(node->desc);
}

void sk_graph_destroy(sk_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n_nodes; i++) sk__node_free(&g->nodes[i]);
  for (size_t i = 0; i < g->n_inputs; i++) free(g->inputs[i].name);
  for (size_t i = 0; i < g->n_outputs; i++) free(g->outputs[i].name);
  for (size_t i = 0; i < g->n_constants; i++) {
    free(g->constants[i].name);
    if (g->constants[i].owned) free((void *)g->constants[i].data);
  }
  free(g->constants);
  for (size_t i = 0; i < g->n_scopes; i++) {
    free(g->scopes[i].name);
    free(g->scopes[i].options);
  }
  free(g->scopes);
  free(g->events);
  free(g->pending_waits[0]);
  free(g->pending_waits[1]);
  free(g->nodes);
  free(g->values);
  free(g->inputs);
  free(g->outputs);
  free(g);
}

static bool name_taken(const sk__named_value *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i].name, name) == 0) return true;
  return false;
}

/* Inputs and constants share one namespace: both name a graph value whose
 * data comes from outside the graph's ops. */
static bool source_name_taken(const sk_graph *g, const char *name) {
  if (name_taken(g->inputs, g->n_inputs, name)) return true;
  for (size_t i = 0; i < g->n_constants; i++)
    if (strcmp(g->constants[i].name, name) == 0) return true;
  return false;
}

sk_status sk_graph_add_input(sk_graph *g, const char *name, sk_dtype dtype, int rank,
                             const int64_t *shape, sk_value *value_out) {
  sk__clear_error();
  if (!g || !name || !value_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_input: %s is NULL",
                    !g ? "graph" : !name ? "name" : "value_out");
  if (!*name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_input: empty input name");
  if (sk_dtype_size(dtype) == 0)
    return sk__fail(SK_STATUS_INVALID_DTYPE, "graph input '%s': invalid dtype %d", name, (int)dtype);
  char why[128];
  int64_t dims[SK_MAX_RANK];
  bool dynamic = rank > 0 && rank <= SK_MAX_RANK && shape && shape[0] == SK_DIM_DYNAMIC;
  if (dynamic) { /* checked as the maximum, kept as dynamic */
    if (g->max_tokens <= 0)
      return sk__fail(SK_STATUS_INVALID_SHAPE,
                      "graph input '%s': dimension 0 is SK_DIM_DYNAMIC but the graph has no maximum token count "
                      "(call sk_graph_set_max_tokens first)", name);
    memcpy(dims, shape, sizeof(int64_t) * (size_t)rank);
    dims[0] = g->max_tokens;
    shape = dims;
  }
  for (int d = 0; shape && rank > 0 && rank <= SK_MAX_RANK && d < rank; d++)
    if (shape[d] == SK_DIM_DYNAMIC)
      return sk__fail(SK_STATUS_INVALID_SHAPE, "graph input '%s': dimension %d is -1 (SK_DIM_DYNAMIC); only the "
                      "leading dimension (0) may be", name, d);
  if (!sk__shape_check(dtype, rank, shape, why, sizeof why))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "graph input '%s': %s", name, why);
  if (source_name_taken(g, name))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "graph input '%s' is declared twice", name);
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof *g->values));
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->inputs, &g->cap_inputs, g->n_inputs + 1, sizeof *g->inputs));
  char *copy = sk__strdup(name);
  if (!copy) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "graph input '%s': out of memory", name);
  sk__value *v = &g->values[g->n_values];
  sk__tensor_init(&v->desc, dtype, rank, shape);
  v->desc.dynamic = dynamic;
  v->producer = -1;
  v->producer_output = 0;
  v->input_index = (int)g->n_inputs;
  v->constant_index = -1;
  g->inputs[g->n_inputs++] = (sk__named_value){copy, (sk_value)g->n_values};
  *value_out = (sk_value)g->n_values++;
  return SK_STATUS_OK;
}

sk_status sk_graph_add_constant(sk_graph *g, const char *name, sk_dtype dtype, int rank, const int64_t *shape,
                                const void *data, sk_constant_flags flags, sk_value *value_out) {
  sk__clear_error();
  if (!g || !name || !value_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_constant: %s is NULL",
                    !g ? "graph" : !name ? "name" : "value_out");
  if (!*name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_constant: empty constant name");
  if (flags != SK_CONSTANT_COPY && flags != SK_CONSTANT_BORROW)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "graph constant '%s': flags %d: expected SK_CONSTANT_COPY (0) or SK_CONSTANT_BORROW (1)", name,
                    (int)flags);
  if (sk_dtype_size(dtype) == 0)
    return sk__fail(SK_STATUS_INVALID_DTYPE, "graph constant '%s': invalid dtype %d", name, (int)dtype);
  char why[128];
  if (!sk__shape_check(dtype, rank, shape, why, sizeof why))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "graph constant '%s': %s", name, why);
  if (source_name_taken(g, name))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "graph constant '%s': the name is already an input or constant", name);
  sk__tensor desc;
  sk__tensor_init(&desc, dtype, rank, shape);
  size_t bytes = sk__tensor_bytes(&desc);
  if (bytes && !data) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "graph constant '%s': data is NULL", name);
  if (flags == SK_CONSTANT_BORROW && bytes && !sk__dtype_aligned(dtype, data)) /* a copy is malloc'd: aligned */
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "graph constant '%s': borrowed data %p is not aligned to %zu bytes, the size of its %s elements "
                    "(copy it, or see 'Buffers' in superkernel.h)",
                    name, data, sk_dtype_size(dtype), sk_dtype_name(dtype));
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof *g->values));
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->constants, &g->cap_constants, g->n_constants + 1, sizeof *g->constants));
  sk__constant c = {sk__strdup(name), (sk_value)g->n_values, data, flags == SK_CONSTANT_COPY};
  if (c.owned) {
    void *copy = malloc(bytes ? bytes : 1);
    if (copy && bytes) memcpy(copy, data, bytes);
    c.data = copy;
  }
  if (!c.name || (c.owned && !c.data)) {
    free(c.name);
    if (c.owned) free((void *)c.data);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "graph constant '%s': out of memory (%zu bytes)", name, bytes);
  }
  sk__value *v = &g->values[g->n_values];
  v->desc = desc;
  v->producer = -1;
  v->producer_output = 0;
  v->input_index = -1;
  v->constant_index = (int)g->n_constants;
  g->constants[g->n_constants++] = c;
  *value_out = (sk_value)g->n_values++;
  return SK_STATUS_OK;
}

int sk__graph_in_place_writer(const sk_graph *g, sk_value v) {
  for (size_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].def->writes_input && g->nodes[i].slot_count[0] && g->nodes[i].slot_values[0][0] == v) return (int)i;
  return -1;
}

sk_status sk_graph_mark_output(sk_graph *g, sk_value value, const char *name) {
  sk__clear_error();
  if (!g || !name)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_mark_output: %s is NULL", !g ? "graph" : "name");
  if (!*name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_mark_output: empty output name");
  if (value >= g->n_values)
    return sk__fail(SK_STATUS_NOT_FOUND, "graph output '%s': value %u does not exist (graph has %zu values)",
                    name, value, g->n_values);
  if (name_taken(g->outputs, g->n_outputs, name))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "graph output '%s' is marked twice", name);
  int writer = sk__graph_in_place_writer(g, value);
  if (writer >= 0) /* its storage holds the state after the write: mark the writer's output */
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "graph output '%s': the value is written in place by node '%s' (%s); mark that node's output "
                    "instead", name, g->nodes[writer].name, g->nodes[writer].def->type);
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->outputs, &g->cap_outputs, g->n_outputs + 1, sizeof *g->outputs));
  char *copy = sk__strdup(name);
  if (!copy) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "graph output '%s': out of memory", name);
  g->outputs[g->n_outputs++] = (sk__named_value){copy, value};
  return SK_STATUS_OK;
}

sk_status sk_graph_value_info(const sk_graph *g, sk_value value, sk_dtype *dtype_out,
                              int *rank_out, int64_t *shape_out) {
  sk__clear_error();
  if (!g) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_value_info: graph is NULL");
  if (value >= g->n_values)
    return sk__fail(SK_STATUS_NOT_FOUND, "sk_graph_value_info: value %u does not exist (graph has %zu values)",
                    value, g->n_values);
  const sk__tensor *t = &g->values[value].desc;
  if (dtype_out) *dtype_out = t->dtype;
  if (rank_out) *rank_out = t->rank;
  if (shape_out) memcpy(shape_out, t->shape, sizeof(int64_t) * (size_t)t->rank);
  if (shape_out && t->dynamic) shape_out[0] = SK_DIM_TOKENS(t->shape[0] / g->max_tokens);
  return SK_STATUS_OK;
}

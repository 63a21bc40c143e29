/* sk_graph_add_op: resolve the descriptor's named slots against the op's
 * slot table, let the op validate and infer its outputs, and only then commit
 * the node, so a rejected node leaves the graph unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/struct_size.h"
#include "ops/build_ctx.h"
#include "graph/graph.h"

/* The tensors of the descriptor's slots, from the graph's values (add_op)
 * or from caller metas (sk_op_infer). */
typedef struct tensor_source {
  const sk_graph *graph;        /* values by id, or */
  bool from_metas;              /* else from the graph */
  const sk_tensor_meta *metas;  /* n_metas metas, slot after slot, or */
  const sk__tensor *tensors;    /* n_metas tensors (from_metas too) */
  size_t n_metas;
} tensor_source;

static sk_status tensor_from_meta(const sk__build_ctx *ctx, const char *slot, size_t j, const sk_tensor_meta *m,
                                  sk__tensor *t) {
  char why[128];
  if (m->dtype <= SK_DTYPE_INVALID || m->dtype >= SK_DTYPE_COUNT_)
    return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input %s[%zu]: invalid dtype %d", ctx->label, slot, j, (int)m->dtype);
  if (!sk__shape_check(m->dtype, m->rank, m->shape, why, sizeof why))
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s[%zu]: %s", ctx->label, slot, j, why);
  sk__tensor_init(t, m->dtype, m->rank, m->shape);
  return SK_STATUS_OK;
}

/* Gathers each slot's tensor descriptions into ctx->slots; *scratch is the
 * ctx-owned storage behind them. */
static sk_status resolve_inputs(sk__build_ctx *ctx, const tensor_source *src, sk__tensor **scratch) {
  const sk_op_desc *d = ctx->desc;
  size_t total = 0;
  for (size_t i = 0; i < d->n_inputs; i++) total += d->inputs[i].count;
  if (src->from_metas && total != src->n_metas)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: the slots hold %zu tensors but %zu metas were given", ctx->label,
                    total, src->n_metas);
  *scratch = calloc(total ? total : 1, sizeof **scratch);
  if (!*scratch) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
  size_t used = 0;
  for (size_t i = 0; i < d->n_inputs; i++) {
    const sk_op_input *in = &d->inputs[i];
    int s = ctx->desc_slot[i];
    ctx->slots[s].tensors = *scratch + used;
    ctx->slots[s].count = in->count;
    for (size_t j = 0; j < in->count; j++, used++) {
      if (src->from_metas && src->tensors) {
        (*scratch)[used] = src->tensors[used];
        continue;
      }
      if (src->from_metas) {
        SK_RETURN_IF_ERROR(tensor_from_meta(ctx, in->name, j, &src->metas[used], &(*scratch)[used]));
        continue;
      }
      if (in->values[j] >= src->graph->n_values)
        return sk__fail(SK_STATUS_NOT_FOUND, "%s: input %s[%zu]: value %u does not exist in this graph", ctx->label,
                        in->name, j, in->values[j]);
      (*scratch)[used] = src->graph->values[in->values[j]].desc;
    }
  }
  return SK_STATUS_OK;
}

/* Checks desc against its op and runs the op's build on the inputs of src.
 * On success ctx holds the params and outputs. */
static sk_status build(const sk_op_desc *desc, const tensor_source *src, sk__build_ctx *ctx, sk__tensor **scratch) {
  if (!desc) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "op description is NULL");
  size_t size;
  SK_RETURN_IF_ERROR(sk__struct_size("op description", "struct_size", "sk_op_desc", desc->struct_size,
                                     offsetof(sk_op_desc, n_attrs) + sizeof(size_t), sizeof(sk_op_desc), &size));
  if (!desc->op) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "op description: op is NULL");
  const sk__op_def *def = sk__op_find(desc->op);
  if (!def) return sk__fail(SK_STATUS_NOT_FOUND, "unknown op type '%s'", desc->op);
  *ctx = (sk__build_ctx){.def = def, .label = desc->name ? desc->name : def->type, .desc = desc};
  SK_RETURN_IF_ERROR(sk__build_check_desc(ctx));
  SK_RETURN_IF_ERROR(resolve_inputs(ctx, src, scratch));
  return sk__build_node(ctx);
}

sk_status sk__build_on_tensors(const sk_op_desc *desc, const sk__tensor *inputs, size_t n, sk__build_ctx *ctx,
                               sk__tensor **scratch) {
  tensor_source src = {.from_metas = true, .tensors = inputs, .n_metas = n};
  return build(desc, &src, ctx, scratch);
}

/* Whether any input of the built node follows the token count. */
static bool any_dynamic_input(const sk__build_ctx *ctx) {
  for (int s = 0; s < SK__MAX_SLOTS; s++)
    for (size_t j = 0; j < ctx->slots[s].count; j++)
      if (ctx->slots[s].tensors[j].dynamic) return true;
  return false;
}

/* A node on token-dependent inputs in a graph with a run-time token
 * count: its op must run at any count, and its shapes must follow it
 * (dynamic[i]: output i does). */
static sk_status check_tokens(const sk_graph *g, const sk_op_desc *desc, const sk__build_ctx *ctx, bool *dynamic) {
  if (!any_dynamic_input(ctx)) return SK_STATUS_OK;
  if (!ctx->def->dynamic_rows)
    return sk__fail(SK_STATUS_UNSUPPORTED,
                    "%s: op '%s' does not take a run-time token count, and an input's leading dimension is "
                    "SK_DIM_DYNAMIC", ctx->label, ctx->def->type);
  return sk__tokens_probe(g, desc, ctx, dynamic);
}

/* The name of value v for messages: its graph input's or constant's name,
 * else the node that computes it. */
static const char *value_name(const sk_graph *g, sk_value v, const char **kind) {
  const sk__value *x = &g->values[v];
  if (x->input_index >= 0) return *kind = "graph input", g->inputs[x->input_index].name;
  if (x->constant_index >= 0) return *kind = "constant", g->constants[x->constant_index].name;
  *kind = "the output of node";
  return x->producer >= 0 ? g->nodes[x->producer].name : "?";
}

/* State written in place (op.h, writes_input): the node must write a graph
 * input that nothing else reads (before the write or after it: either
 * could be scheduled on the other side), and no node may read a value
 * once a node writes it in place. */
static sk_status check_in_place(const sk_graph *g, const sk__build_ctx *ctx) {
  const sk_op_desc *d = ctx->desc;
  for (size_t i = 0; i < d->n_inputs; i++)
    for (size_t j = 0; j < d->inputs[i].count; j++) {
      sk_value v = d->inputs[i].values[j];
      int w = sk__graph_in_place_writer(g, v);
      const char *kind, *name = value_name(g, v, &kind);
      if (w >= 0)
        return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                        "%s: input %s: %s '%s' is written in place by node '%s' (%s); read that node's output "
                        "instead", ctx->label, d->inputs[i].name, kind, name, g->nodes[w].name,
                        g->nodes[w].def->type);
    }
  if (!ctx->def->writes_input) return SK_STATUS_OK;
  const char *slot = ctx->def->inputs[0].name;
  sk_value v = 0; /* slot 0 is required: the build took its one tensor */
  for (size_t i = 0; i < d->n_inputs; i++)
    if (ctx->desc_slot[i] == 0 && d->inputs[i].count) v = d->inputs[i].values[0];
  const char *kind, *name = value_name(g, v, &kind);
  if (g->values[v].input_index < 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "%s: input %s: %s '%s' cannot be written in place: expected a graph input (state the caller "
                    "owns and binds for each run)", ctx->label, slot, kind, name);
  for (size_t n = 0; n < g->n_nodes; n++)
    for (int s = 0; s < SK__MAX_SLOTS; s++)
      for (size_t j = 0; j < g->nodes[n].slot_count[s]; j++)
        if (g->nodes[n].slot_values[s][j] == v)
          return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                          "%s: input %s: graph input '%s' is already read by node '%s' (%s); state written in "
                          "place may have no other reader", ctx->label, slot, name, g->nodes[n].name,
                          g->nodes[n].def->type);
  for (size_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].value == v)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "%s: input %s: graph input '%s' is marked as graph output '%s'; state written in place may "
                      "have no other reader", ctx->label, slot, name, g->outputs[o].name);
  for (size_t i = 0; i < d->n_inputs; i++)
    for (size_t j = 0; j < d->inputs[i].count; j++)
      if (ctx->desc_slot[i] != 0 && d->inputs[i].values[j] == v)
        return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                        "%s: input %s: graph input '%s' is also given as input %s; state written in place may "
                        "have no other reader", ctx->label, d->inputs[i].name, name, slot);
  return SK_STATUS_OK;
}

/* Moves the built node into the graph: its slot value lists, outputs as new
 * values, params. Only memory can fail here. */
static sk_status commit_node(sk_graph *g, sk__build_ctx *ctx, const char *name, const bool *dynamic) {
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes));
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->values, &g->cap_values, g->n_values + ctx->n_outs, sizeof *g->values));
  sk__node node = {.def = ctx->def, .scope = g->open_scope, .stream = g->stream};
  char auto_name[96];
  if (!name) {
    snprintf(auto_name, sizeof auto_name, "%s_%zu", ctx->def->type, g->n_nodes);
    name = auto_name;
  }
  node.name = sk__strdup(name);
  node.outputs = malloc(ctx->n_outs * sizeof(sk_value));
  bool ok = node.name && node.outputs;
  if (ok && g->max_tokens > 0) ok = (node.desc = sk__desc_clone(ctx->desc, node.name)) != NULL;
  for (size_t i = 0; ok && i < ctx->desc->n_inputs; i++) {
    const sk_op_input *in = &ctx->desc->inputs[i];
    int s = ctx->desc_slot[i];
    node.slot_count[s] = in->count;
    node.slot_values[s] = malloc((in->count ? in->count : 1) * sizeof(sk_value));
    if (!node.slot_values[s]) ok = false;
    else if (in->count) memcpy(node.slot_values[s], in->values, in->count * sizeof(sk_value));
  }
  if (!ok) {
    node.params = NULL; /* still owned by the caller on failure */
    sk__node_free(&node);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
  }
  /* Event waits pending on this stream become the node's control edges. */
  size_t n_waits = g->n_pending[g->stream];
  if (n_waits) {
    node.waits = malloc(n_waits * sizeof(int));
    if (!node.waits) {
      sk__node_free(&node);
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
    }
    memcpy(node.waits, g->pending_waits[g->stream], n_waits * sizeof(int));
    node.n_waits = n_waits;
  }
  g->n_pending[g->stream] = 0;
  node.params = ctx->params;
  node.n_outputs = ctx->n_outs;
  for (size_t i = 0; i < ctx->n_outs; i++) {
    sk__value *v = &g->values[g->n_values];
    v->desc = ctx->outs[i];
    v->desc.data = NULL;
    v->desc.dynamic = dynamic && dynamic[i];
    v->producer = (int)g->n_nodes;
    v->producer_output = (int)i;
    v->input_index = -1;
    v->constant_index = -1;
    node.outputs[i] = (sk_value)g->n_values++;
  }
  g->nodes[g->n_nodes++] = node;
  return SK_STATUS_OK;
}

sk_status sk_graph_add_op(sk_graph *g, const sk_op_desc *desc, sk_value *outputs, size_t max_outputs,
                          size_t *n_outputs) {
  sk__clear_error();
  if (!g) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_op: graph is NULL");
  sk__build_ctx ctx = {0};
  sk__tensor *scratch = NULL;
  tensor_source src = {.graph = g};
  sk_status st = build(desc, &src, &ctx, &scratch);
  if (st == SK_STATUS_OK && (!outputs || max_outputs < ctx.n_outs))
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: the node has %zu outputs but room for %zu was given",
                  ctx.label, ctx.n_outs, outputs ? max_outputs : 0);
  bool *dynamic = NULL;
  if (st == SK_STATUS_OK && g->max_tokens > 0 && !(dynamic = calloc(ctx.n_outs, sizeof *dynamic)))
    st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx.label);
  if (st == SK_STATUS_OK) st = check_in_place(g, &ctx);
  if (st == SK_STATUS_OK && dynamic) st = check_tokens(g, desc, &ctx, dynamic);
  if (st == SK_STATUS_OK) st = commit_node(g, &ctx, desc->name, dynamic);
  free(dynamic);
  if (st == SK_STATUS_OK) {
    const sk__node *node = &g->nodes[g->n_nodes - 1];
    memcpy(outputs, node->outputs, node->n_outputs * sizeof(sk_value));
    if (n_outputs) *n_outputs = node->n_outputs;
  } else if (ctx.params) {
    if (ctx.def->free_params) ctx.def->free_params(ctx.params);
    free(ctx.params);
  }
  sk__build_ctx_free(&ctx);
  free(scratch);
  return st;
}

/* Metas with a run-time token dimension (a leading SK_DIM_TOKENS(k)) are
 * built at this many tokens, then checked at others as sk_graph_add_op
 * checks a node of a graph with a maximum. */
#define INFER_NOMINAL_TOKENS 64

/* The metas as tensors at the nominal count when any has a token
 * dimension: *out (NULL when none has, or on error). */
static sk_status dynamic_metas(const char *fn, const sk_tensor_meta *metas, size_t n, sk__tensor **out) {
  *out = NULL;
  bool any = false;
  for (size_t i = 0; i < n; i++) any = any || (metas[i].rank > 0 && metas[i].rank <= SK_MAX_RANK && metas[i].shape[0] < 0);
  if (!any) return SK_STATUS_OK;
  sk__tensor *ts = calloc(n, sizeof *ts);
  if (!ts) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
  for (size_t i = 0; i < n; i++) {
    sk_tensor_meta m = metas[i];
    bool dyn = m.rank > 0 && m.rank <= SK_MAX_RANK && m.shape[0] < 0;
    if (dyn) m.shape[0] = m.shape[0] < -((int64_t)1 << 24) ? -1 : -m.shape[0] * INFER_NOMINAL_TOKENS;
    char why[128];
    if (m.dtype <= SK_DTYPE_INVALID || m.dtype >= SK_DTYPE_COUNT_ || !sk__shape_check(m.dtype, m.rank, m.shape, why, sizeof why)) {
      free(ts);
      return sk__fail(m.dtype <= SK_DTYPE_INVALID || m.dtype >= SK_DTYPE_COUNT_ ? SK_STATUS_INVALID_DTYPE
                                                                                 : SK_STATUS_INVALID_SHAPE,
                      "%s: input meta %zu: %s", fn, i, dyn ? "a token dimension of too many rows" : why);
    }
    sk__tensor_init(&ts[i], m.dtype, m.rank, m.shape);
    ts[i].dynamic = dyn;
  }
  *out = ts;
  return SK_STATUS_OK;
}

/* sk_op_infer and sk_op_supported: the same build on metas, no graph. */
static sk_status infer(const char *fn, const sk_op_desc *desc, const sk_tensor_meta *inputs, size_t n_inputs,
                       sk_tensor_meta *outputs, size_t max_outputs, size_t *n_outputs) {
  sk__clear_error();
  if (n_inputs && !inputs) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: inputs is NULL", fn);
  sk__build_ctx ctx = {0};
  sk__tensor *scratch = NULL, *dyn_inputs = NULL;
  bool *dynamic = NULL;
  SK_RETURN_IF_ERROR(dynamic_metas(fn, inputs, n_inputs, &dyn_inputs));
  tensor_source src = {.from_metas = true, .metas = inputs, .tensors = dyn_inputs, .n_metas = n_inputs};
  sk_status st = build(desc, &src, &ctx, &scratch);
  if (st == SK_STATUS_OK && dyn_inputs) { /* which outputs follow the count */
    if (!(dynamic = calloc(ctx.n_outs, sizeof *dynamic))) st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    else if (!ctx.def->dynamic_rows)
      st = sk__fail(SK_STATUS_UNSUPPORTED, "%s: op '%s' does not take a run-time token count", ctx.label,
                    ctx.def->type);
    else st = sk__tokens_probe_inputs(desc, dyn_inputs, INFER_NOMINAL_TOKENS, &ctx, dynamic);
  }
  if (st == SK_STATUS_OK && outputs && max_outputs < ctx.n_outs)
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: the node has %zu outputs but room for %zu was given", ctx.label,
                  ctx.n_outs, max_outputs);
  for (size_t i = 0; st == SK_STATUS_OK && outputs && i < ctx.n_outs; i++) {
    outputs[i] = (sk_tensor_meta){.dtype = ctx.outs[i].dtype, .rank = ctx.outs[i].rank};
    memcpy(outputs[i].shape, ctx.outs[i].shape, sizeof outputs[i].shape);
    if (dynamic && dynamic[i]) outputs[i].shape[0] = SK_DIM_TOKENS(ctx.outs[i].shape[0] / INFER_NOMINAL_TOKENS);
  }
  free(dynamic);
  free(dyn_inputs);
  if (st == SK_STATUS_OK && n_outputs) *n_outputs = ctx.n_outs;
  if (ctx.params) {
    if (ctx.def->free_params) ctx.def->free_params(ctx.params);
    free(ctx.params);
  }
  sk__build_ctx_free(&ctx);
  free(scratch);
  return st;
}

sk_status sk_op_infer(const sk_op_desc *desc, const sk_tensor_meta *inputs, size_t n_inputs, sk_tensor_meta *outputs,
                      size_t max_outputs, size_t *n_outputs) {
  if (!outputs) {
    sk__clear_error();
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_op_infer: outputs is NULL");
  }
  return infer("sk_op_infer", desc, inputs, n_inputs, outputs, max_outputs, n_outputs);
}

/* Every op the library accepts it can run: each built-in op has a kernel
 * for every dtype and shape its build admits. */
sk_status sk_op_supported(const sk_op_desc *desc, const sk_tensor_meta *inputs, size_t n_inputs) {
  return infer("sk_op_supported", desc, inputs, n_inputs, NULL, 0, NULL);
}

sk_status sk__graph_add_launch(sk_graph *g, const sk__op_def *def, const void *params, const char *name, int after) {
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes));
  sk__node node = {.def = def, .scope = g->open_scope, .stream = g->stream, .launch_only = true};
  node.name = sk__strdup(name);
  node.params = calloc(1, def->params_size ? def->params_size : 1);
  node.waits = after >= 0 ? malloc(sizeof(int)) : NULL;
  if (!node.name || !node.params || (after >= 0 && !node.waits)) {
    sk__node_free(&node);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
  }
  memcpy(node.params, params, def->params_size);
  if (after >= 0) node.waits[0] = after, node.n_waits = 1;
  g->nodes[g->n_nodes++] = node;
  return SK_STATUS_OK;
}

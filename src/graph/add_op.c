/* sk_graph_add_op: resolve the descriptor's named slots against the op's
 * slot table, let the op validate and infer its outputs, and only then commit
 * the node, so a rejected node leaves the graph unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/graph.h"

struct sk__build_ctx {
  const sk__op_def *def;
  const char *label;                    /* node name or op type, for messages */
  const sk_op_desc *desc;
  sk__slot slots[SK__MAX_SLOTS];
  bool attr_used[64];
  void *params;
  sk__tensor *outs;
  size_t n_outs;
};

#define MAX_ATTRS 64

const char *sk__ctx_op(const sk__build_ctx *ctx) { return ctx->label; }

const sk__op_def *sk__ctx_def(const sk__build_ctx *ctx) { return ctx->def; }

const sk__slot *sk__ctx_slot(const sk__build_ctx *ctx, int i) { return &ctx->slots[i]; }

sk_status sk__ctx_single(sk__build_ctx *ctx, int i, const sk__tensor **t) {
  const sk__slot *s = &ctx->slots[i];
  if (s->count != 1)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: expected 1 tensor, got %zu",
                    ctx->label, ctx->def->slot_names[i], s->count);
  *t = &s->tensors[0];
  return SK_STATUS_OK;
}

static const sk_attr *find_attr(const sk__build_ctx *ctx, const char *name, size_t *index) {
  for (size_t i = 0; i < ctx->desc->n_attrs; i++)
    if (strcmp(ctx->desc->attrs[i].name, name) == 0) {
      if (index) *index = i;
      return &ctx->desc->attrs[i];
    }
  return NULL;
}

bool sk__ctx_has_attr(const sk__build_ctx *ctx, const char *name) { return find_attr(ctx, name, NULL); }

static const char *kind_name(sk_attr_kind kind) {
  switch (kind) {
    case SK_ATTR_KIND_INT: return "int";
    case SK_ATTR_KIND_FLOAT: return "float";
    case SK_ATTR_KIND_INTS: return "ints";
    default: return "invalid";
  }
}

static sk_status typed_attr(sk__build_ctx *ctx, const char *name, sk_attr_kind kind, const sk_attr **out) {
  size_t index = 0;
  *out = find_attr(ctx, name, &index);
  if (!*out) return SK_STATUS_OK;
  ctx->attr_used[index] = true;
  if ((*out)->kind != kind)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s: expected kind %s, got %s",
                    ctx->label, name, kind_name(kind), kind_name((*out)->kind));
  return SK_STATUS_OK;
}

sk_status sk__ctx_attr_int(sk__build_ctx *ctx, const char *name, int64_t dflt, int64_t *out) {
  const sk_attr *a;
  SK_RETURN_IF_ERROR(typed_attr(ctx, name, SK_ATTR_KIND_INT, &a));
  *out = a ? a->i : dflt;
  return SK_STATUS_OK;
}

sk_status sk__ctx_attr_float(sk__build_ctx *ctx, const char *name, double dflt, double *out) {
  const sk_attr *a;
  /* An int given for a float attribute is accepted: 2 means 2.0. */
  size_t index = 0;
  const sk_attr *any = find_attr(ctx, name, &index);
  if (any && any->kind == SK_ATTR_KIND_INT) {
    ctx->attr_used[index] = true;
    *out = (double)any->i;
    return SK_STATUS_OK;
  }
  SK_RETURN_IF_ERROR(typed_attr(ctx, name, SK_ATTR_KIND_FLOAT, &a));
  *out = a ? a->f : dflt;
  return SK_STATUS_OK;
}

sk_status sk__ctx_attr_ints(sk__build_ctx *ctx, const char *name, const int64_t **out, size_t *n) {
  const sk_attr *a;
  SK_RETURN_IF_ERROR(typed_attr(ctx, name, SK_ATTR_KIND_INTS, &a));
  *out = a ? a->ints : NULL;
  *n = a ? a->n_ints : 0;
  if (a && a->n_ints && !a->ints)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s: %zu ints but a NULL pointer",
                    ctx->label, name, a->n_ints);
  return SK_STATUS_OK;
}

void *sk__ctx_params(sk__build_ctx *ctx) { return ctx->params; }

sk_status sk__ctx_set_outputs(sk__build_ctx *ctx, size_t n, sk__tensor **outs) {
  if (n == 0 || n > SK__MAX_OUTPUTS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %zu outputs (must be 1..%d)", ctx->label, n,
                    SK__MAX_OUTPUTS);
  free(ctx->outs);
  ctx->outs = calloc(n, sizeof *ctx->outs);
  if (!ctx->outs) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
  ctx->n_outs = n;
  *outs = ctx->outs;
  return SK_STATUS_OK;
}

static int slot_index(const sk__op_def *def, const char *name) {
  for (int i = 0; def->slot_names[i]; i++)
    if (strcmp(def->slot_names[i], name) == 0) return i;
  return -1;
}

/* Checks the descriptor's shape (names, value ids) and gathers each slot's
 * tensor descriptions into ctx->slots. tensors is ctx-owned scratch. */
static sk_status resolve_inputs(const sk_graph *g, sk__build_ctx *ctx, sk__tensor **scratch) {
  const sk_op_desc *d = ctx->desc;
  size_t total = 0;
  for (size_t i = 0; i < d->n_inputs; i++) {
    const sk_op_input *in = &d->inputs[i];
    if (!in->name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input slot %zu has no name", ctx->label, i);
    int s = slot_index(ctx->def, in->name);
    if (s < 0) {
      char accepted[256] = "";
      for (int k = 0; ctx->def->slot_names[k]; k++) {
        strncat(accepted, k ? ", " : "", sizeof accepted - strlen(accepted) - 1);
        strncat(accepted, ctx->def->slot_names[k], sizeof accepted - strlen(accepted) - 1);
      }
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: unknown input '%s' (accepted: %s)", ctx->label,
                      in->name, accepted);
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(d->inputs[j].name, in->name) == 0)
        return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input '%s' given twice", ctx->label, in->name);
    if (in->count && !in->values)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: %zu values but a NULL pointer", ctx->label,
                      in->name, in->count);
    if (in->count > SK__MAX_OUTPUTS)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input %s: %zu tensors (at most %d)", ctx->label,
                      in->name, in->count, SK__MAX_OUTPUTS);
    for (size_t j = 0; j < in->count; j++)
      if (in->values[j] >= g->n_values)
        return sk__fail(SK_STATUS_NOT_FOUND, "%s: input %s[%zu]: value %u does not exist in this graph",
                        ctx->label, in->name, j, in->values[j]);
    total += in->count;
  }
  *scratch = calloc(total ? total : 1, sizeof **scratch);
  if (!*scratch) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx->label);
  size_t used = 0;
  for (size_t i = 0; i < d->n_inputs; i++) {
    const sk_op_input *in = &d->inputs[i];
    int s = slot_index(ctx->def, in->name);
    ctx->slots[s].tensors = *scratch + used;
    ctx->slots[s].count = in->count;
    for (size_t j = 0; j < in->count; j++) (*scratch)[used++] = g->values[in->values[j]].desc;
  }
  return SK_STATUS_OK;
}

static sk_status check_attrs(const sk__build_ctx *ctx) {
  const sk_op_desc *d = ctx->desc;
  if (d->n_attrs > MAX_ATTRS)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: %zu attributes (at most %d)", ctx->label, d->n_attrs,
                    MAX_ATTRS);
  if (d->n_attrs && !d->attrs)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %zu attributes but a NULL pointer", ctx->label, d->n_attrs);
  for (size_t i = 0; i < d->n_attrs; i++) {
    if (!d->attrs[i].name)
      return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %zu has no name", ctx->label, i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(d->attrs[i].name, d->attrs[j].name) == 0)
        return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute %s given twice", ctx->label,
                        d->attrs[i].name);
  }
  return SK_STATUS_OK;
}

/* Moves the built node into the graph: its slot value lists, outputs as new
 * values, params. Only memory can fail here. */
static sk_status commit_node(sk_graph *g, sk__build_ctx *ctx, const char *name) {
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
  for (size_t i = 0; ok && i < ctx->desc->n_inputs; i++) {
    const sk_op_input *in = &ctx->desc->inputs[i];
    int s = slot_index(ctx->def, in->name);
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
    v->producer = (int)g->n_nodes;
    v->producer_output = (int)i;
    v->input_index = -1;
    node.outputs[i] = (sk_value)g->n_values++;
  }
  g->nodes[g->n_nodes++] = node;
  return SK_STATUS_OK;
}

sk_status sk_graph_add_op(sk_graph *g, const sk_op_desc *desc, sk_value *outputs, size_t max_outputs,
                          size_t *n_outputs) {
  sk__clear_error();
  if (!g || !desc)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_op: %s is NULL", !g ? "graph" : "desc");
  if (desc->struct_size != 0 && desc->struct_size < offsetof(sk_op_desc, n_attrs) + sizeof(size_t))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_op: desc->struct_size %zu is too small",
                    desc->struct_size);
  if (!desc->op) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_add_op: desc->op is NULL");
  const sk__op_def *def = sk__op_find(desc->op);
  if (!def) return sk__fail(SK_STATUS_NOT_FOUND, "unknown op type '%s'", desc->op);
  if (desc->n_inputs && !desc->inputs)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: %zu inputs but a NULL pointer", desc->op, desc->n_inputs);

  sk__build_ctx ctx = {.def = def, .label = desc->name ? desc->name : def->type, .desc = desc};
  sk__tensor *scratch = NULL;
  sk_status st = check_attrs(&ctx);
  if (st == SK_STATUS_OK) st = resolve_inputs(g, &ctx, &scratch);
  if (st == SK_STATUS_OK) {
    ctx.params = calloc(1, def->params_size ? def->params_size : 1);
    if (!ctx.params) st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", ctx.label);
  }
  if (st == SK_STATUS_OK) st = def->build(&ctx);
  for (size_t i = 0; st == SK_STATUS_OK && i < desc->n_attrs; i++)
    if (!ctx.attr_used[i])
      st = sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: unknown attribute '%s'", ctx.label, desc->attrs[i].name);
  if (st == SK_STATUS_OK && ctx.n_outs == 0)
    st = sk__fail(SK_STATUS_INTERNAL, "%s: the op declared no outputs", ctx.label);
  /* Inferred outputs obey the limits of graph inputs (at most 2^48 bytes),
   * e.g. grouped_matmul of [2^32, 0] x [0, 2^32], or a cast to a wider dtype. */
  for (size_t i = 0; st == SK_STATUS_OK && i < ctx.n_outs; i++) {
    char why[128];
    if (!sk__shape_check(ctx.outs[i].dtype, ctx.outs[i].rank, ctx.outs[i].shape, why, sizeof why))
      st = sk__fail(SK_STATUS_INVALID_SHAPE, "%s: output %zu: %s", ctx.label, i, why);
  }
  if (st == SK_STATUS_OK && (!outputs || max_outputs < ctx.n_outs))
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: the node has %zu outputs but room for %zu was given",
                  ctx.label, ctx.n_outs, outputs ? max_outputs : 0);
  if (st == SK_STATUS_OK) st = commit_node(g, &ctx, desc->name);
  if (st == SK_STATUS_OK) {
    const sk__node *node = &g->nodes[g->n_nodes - 1];
    memcpy(outputs, node->outputs, node->n_outputs * sizeof(sk_value));
    if (n_outputs) *n_outputs = node->n_outputs;
  } else if (ctx.params) {
    if (def->free_params) def->free_params(ctx.params);
    free(ctx.params);
  }
  free(ctx.outs);
  free(scratch);
  return st;
}

/* The run-time token count of a graph (superkernel.h, SK_DIM_DYNAMIC):
 * its maximum, the check that a node's shapes follow the count, and the
 * graph built again at one count — what sk_compile plans each token bucket
 * from (compile/tokens.c).
 *
 * A dynamic value is kept at the maximum (shape[0] = k * max, desc.dynamic
 * set), so every op's build and checks run unchanged on it. Which outputs
 * follow the count is found by building the node a second time at another
 * count: the dimensions that changed are the dynamic ones, and only a
 * leading dimension proportional to the count can run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/build_ctx.h"
#include "graph/graph.h"

/* Far below the 2^48-byte limit of one tensor for any row, and what a
 * token count of a real model stays under. */
#define MAX_TOKENS_LIMIT ((int64_t)1 << 24)

sk_status sk_graph_set_max_tokens(sk_graph *g, int64_t max_tokens) {
  sk__clear_error();
  if (!g) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_set_max_tokens: graph is NULL");
  if (max_tokens < 1 || max_tokens > MAX_TOKENS_LIMIT)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_set_max_tokens: %lld: expected 1 .. %lld",
                    (long long)max_tokens, (long long)MAX_TOKENS_LIMIT);
  for (size_t v = 0; v < g->n_values; v++)
    if (g->values[v].desc.dynamic && max_tokens != g->max_tokens)
      return sk__fail(SK_STATUS_INVALID_STATE,
                      "sk_graph_set_max_tokens: the graph already has dynamic values planned for %lld tokens",
                      (long long)g->max_tokens);
  if (g->n_nodes > 0 && g->max_tokens == 0)
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "sk_graph_set_max_tokens: set it before adding ops (the graph has %zu)", g->n_nodes);
  g->max_tokens = max_tokens;
  return SK_STATUS_OK;
}

/* t at `tokens` tokens instead of the graph's maximum (static: unchanged). */
static sk__tensor at_tokens(const sk__tensor *t, int64_t max, int64_t tokens) {
  if (!t->dynamic) return *t;
  sk__tensor r;
  int64_t shape[SK_MAX_RANK];
  memcpy(shape, t->shape, sizeof shape);
  shape[0] = t->shape[0] / max * tokens;
  sk__tensor_init(&r, t->dtype, t->rank, shape);
  r.dynamic = true;
  return r;
}

/* Where a node's inputs come from while it is checked: a graph's values,
 * or (sk_op_infer) tensors given at a maximum, slot after slot in desc
 * order; dynamic ones marked. */
typedef struct probe_src {
  const sk_graph *g;
  const sk__tensor *inputs;
  int64_t max;
} probe_src;

/* The inputs of desc at `tokens` tokens, slot after slot in desc order
 * (sk__build_on_tensors'); NULL when out of memory. */
static sk__tensor *inputs_at(const probe_src *src, const sk_op_desc *desc, int64_t tokens, size_t *n) {
  size_t total = 0;
  for (size_t i = 0; i < desc->n_inputs; i++) total += desc->inputs[i].count;
  sk__tensor *ts = calloc(total ? total : 1, sizeof *ts);
  if (!ts) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < desc->n_inputs; i++)
    for (size_t j = 0; j < desc->inputs[i].count; j++, k++) {
      const sk__tensor *t = src->g ? &src->g->values[desc->inputs[i].values[j]].desc : &src->inputs[k];
      ts[k] = at_tokens(t, src->max, tokens);
    }
  *n = total;
  return ts;
}

/* The build of desc at `tokens` tokens into ctx (freed by the caller). */
static sk_status build_at(const probe_src *src, const sk_op_desc *desc, int64_t tokens, sk__build_ctx *ctx,
                          sk__tensor **scratch) {
  size_t n = 0;
  sk__tensor *ins = inputs_at(src, desc, tokens, &n);
  if (!ins) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  sk_status st = sk__build_on_tensors(desc, ins, n, ctx, scratch);
  free(ins);
  return st;
}

static void ctx_release(sk__build_ctx *ctx, sk__tensor *scratch) {
  if (ctx->params) {
    if (ctx->def->free_params) ctx->def->free_params(ctx->params);
    free(ctx->params);
  }
  sk__build_ctx_free(ctx);
  free(scratch);
}

/* Which outputs of `at_max` follow the count, from their shapes at the
 * maximum and at `probe` tokens. */
static sk_status compare_outputs(int64_t max, const char *label, const sk__build_ctx *at_max,
                                 const sk__build_ctx *at_probe, int64_t probe, bool *dynamic) {
  for (size_t i = 0; i < at_max->n_outs; i++) {
    const sk__tensor *a = &at_max->outs[i], *b = &at_probe->outs[i];
    dynamic[i] = false;
    for (int d = 0; d < a->rank; d++) {
      if (a->shape[d] == b->shape[d]) continue;
      /* k * max rows at the maximum and k * probe at the probe. */
      bool leading = d == 0 && a->shape[0] % max == 0 && a->shape[0] / max * probe == b->shape[0];
      if (!leading)
        return sk__fail(SK_STATUS_UNSUPPORTED,
                        "%s: output %zu's dimension %d is %lld at %lld tokens and %lld at %lld: only a leading "
                        "dimension that is a multiple of the run-time token count can follow it",
                        label, i, d, (long long)a->shape[d], (long long)max, (long long)b->shape[d], (long long)probe);
      dynamic[i] = true;
    }
  }
  return SK_STATUS_OK;
}

/* The node built at `probe` tokens: its outputs' shapes must be those
 * the maximum's predict (dynamic[i] from an earlier probe, k * probe rows),
 * or, when dynamic is to be found (find), which outputs follow the count. */
static sk_status probe_at(const probe_src *src, const sk_op_desc *desc, const sk__build_ctx *at_max, int64_t probe,
                          bool find, bool *dynamic) {
  sk__build_ctx ctx = {0};
  sk__tensor *scratch = NULL;
  sk_status st = build_at(src, desc, probe, &ctx, &scratch);
  if (st != SK_STATUS_OK) {
    ctx_release(&ctx, scratch);
    return sk__fail_within(st, "%s: fails at a run-time token count of %lld (checked at 1 .. %lld)", at_max->label,
                           (long long)probe, (long long)src->max);
  }
  bool *seen = find ? dynamic : calloc(at_max->n_outs ? at_max->n_outs : 1, sizeof *seen);
  if (!seen) st = sk__fail(SK_STATUS_OUT_OF_MEMORY, "%s: out of memory", at_max->label);
  else if (ctx.n_outs != at_max->n_outs)
    st = sk__fail(SK_STATUS_UNSUPPORTED, "%s: has %zu outputs at %lld tokens and %zu at %lld", at_max->label,
                  at_max->n_outs, (long long)src->max, ctx.n_outs, (long long)probe);
  else st = compare_outputs(src->max, at_max->label, at_max, &ctx, probe, seen);
  /* A view's start must not follow the count either: slice's start -1 is
   * the last row, which a bucket planned for more tokens would read past
   * the live ones. */
  if (st == SK_STATUS_OK && at_max->def->view_offset) {
    sk__node_io a = {.params = at_max->params}, b = {.params = ctx.params};
    int64_t off_max = at_max->def->view_offset(&a), off_probe = at_max->def->view_offset(&b);
    if (off_max != off_probe)
      st = sk__fail(SK_STATUS_UNSUPPORTED,
                    "%s: the view starts at byte %lld at %lld tokens and at byte %lld at %lld: a view whose start "
                    "follows the run-time token count (a start counted from the end) is not supported",
                    at_max->label, (long long)off_max, (long long)src->max, (long long)off_probe, (long long)probe);
  }
  for (size_t i = 0; st == SK_STATUS_OK && !find && i < at_max->n_outs; i++)
    if (seen[i] != dynamic[i])
      st = sk__fail(SK_STATUS_UNSUPPORTED,
                    "%s: output %zu's leading dimension %s the token count at %lld tokens but %s at %lld: its shapes "
                    "cannot follow a run-time count",
                    at_max->label, i, dynamic[i] ? "follows" : "does not follow", (long long)(src->max > 1 ? 1 : 2),
                    seen[i] ? "does" : "does not", (long long)probe);
  if (!find) free(seen);
  ctx_release(&ctx, scratch);
  return st;
}

static sk_status probe(const probe_src *src, const sk_op_desc *desc, const sk__build_ctx *at_max, bool *dynamic) {
  /* At 1 token, the fewest a run has (checks that need rows fail there);
   * with a maximum of 1, at 2, only to see which dimensions follow. Then
   * at a count between 1 and the maximum: shapes that agree at both ends
   * by chance (x [T, H] + a constant [max, H] broadcasts at 1 and matches
   * at max) disagree there. */
  int64_t max = src->max;
  SK_RETURN_IF_ERROR(probe_at(src, desc, at_max, max > 1 ? 1 : 2, true, dynamic));
  if (max > 2) SK_RETURN_IF_ERROR(probe_at(src, desc, at_max, max / 2 + 1 < max ? max / 2 + 1 : max - 1, false, dynamic));
  return SK_STATUS_OK;
}

sk_status sk__tokens_probe(const sk_graph *g, const sk_op_desc *desc, const sk__build_ctx *at_max, bool *dynamic) {
  probe_src src = {.g = g, .max = g->max_tokens};
  return probe(&src, desc, at_max, dynamic);
}

sk_status sk__tokens_probe_inputs(const sk_op_desc *desc, const sk__tensor *inputs, int64_t max,
                                  const sk__build_ctx *at_max, bool *dynamic) {
  probe_src src = {.inputs = inputs, .max = max};
  return probe(&src, desc, at_max, dynamic);
}

/* ---- a descriptor kept to build the node again ---- */

sk_op_desc *sk__desc_clone(const sk_op_desc *desc, const char *name) {
  size_t bytes = sizeof(sk_op_desc) + strlen(desc->op) + 1 + strlen(name) + 1;
  for (size_t i = 0; i < desc->n_inputs; i++)
    bytes += sizeof(sk_op_input) + strlen(desc->inputs[i].name) + 1 + desc->inputs[i].count * sizeof(sk_value);
  for (size_t i = 0; i < desc->n_attrs; i++)
    bytes += sizeof(sk_attr) + strlen(desc->attrs[i].name) + 1 + desc->attrs[i].n_ints * sizeof(int64_t);
  bytes += 4 * sizeof(int64_t); /* alignment slack */
  char *mem = calloc(1, bytes);
  if (!mem) return NULL;
  /* Laid out as: the desc, the inputs, the attrs, then the int arrays
   * (8-byte aligned), value lists, and strings. */
  sk_op_desc *d = (sk_op_desc *)mem;
  sk_op_input *ins = (sk_op_input *)(d + 1);
  sk_attr *attrs = (sk_attr *)(ins + desc->n_inputs);
  char *next = (char *)(attrs + desc->n_attrs);
  next = (char *)(((uintptr_t)next + 7) & ~(uintptr_t)7);
#define TAKE(n) (next += (n), next - (n))
#define STR(s) strcpy(TAKE(strlen(s) + 1), (s))
  *d = (sk_op_desc){.struct_size = sizeof *d, .inputs = ins, .n_inputs = desc->n_inputs, .attrs = attrs,
                    .n_attrs = desc->n_attrs};
  for (size_t i = 0; i < desc->n_attrs; i++) {
    attrs[i] = desc->attrs[i];
    if (desc->attrs[i].n_ints) {
      int64_t *ints = (int64_t *)TAKE(desc->attrs[i].n_ints * sizeof(int64_t));
      memcpy(ints, desc->attrs[i].ints, desc->attrs[i].n_ints * sizeof(int64_t));
      attrs[i].ints = ints;
    }
  }
  for (size_t i = 0; i < desc->n_inputs; i++) {
    sk_value *vals = (sk_value *)TAKE(desc->inputs[i].count * sizeof(sk_value));
    if (desc->inputs[i].count) memcpy(vals, desc->inputs[i].values, desc->inputs[i].count * sizeof(sk_value));
    ins[i] = (sk_op_input){.values = vals, .count = desc->inputs[i].count};
  }
  for (size_t i = 0; i < desc->n_inputs; i++) ins[i].name = STR(desc->inputs[i].name);
  for (size_t i = 0; i < desc->n_attrs; i++) attrs[i].name = STR(desc->attrs[i].name);
  d->op = STR(desc->op);
  d->name = STR(name);
#undef STR
#undef TAKE
  return d;
}

/* ---- the graph at one token count ---- */

static char *dup_or_fail(const char *s, bool *ok) {
  char *d = sk__strdup(s);
  if (!d) *ok = false;
  return d;
}

static void *copy_array(const void *src, size_t n, size_t elem, bool *ok) {
  void *d = malloc(n ? n * elem : 1);
  if (!d) *ok = false;
  else if (n) memcpy(d, src, n * elem);
  return d;
}

/* Node i of g built again in r (whose values are at r's token count). */
static sk_status rebuild_node(const sk_graph *g, sk_graph *r, size_t i, int64_t tokens) {
  const sk__node *src = &g->nodes[i];
  sk__node *dst = &r->nodes[i];
  sk__build_ctx ctx = {0};
  sk__tensor *scratch = NULL;
  probe_src from = {.g = g, .max = g->max_tokens};
  sk_status st = build_at(&from, src->desc, tokens, &ctx, &scratch);
  for (size_t o = 0; st == SK_STATUS_OK && o < ctx.n_outs; o++)
    if (o >= src->n_outputs || !sk__tensor_same_shape(&ctx.outs[o], &r->values[src->outputs[o]].desc))
      st = sk__fail(SK_STATUS_INTERNAL, "%s: output %zu's shape at %lld tokens is not the one its check predicted",
                    ctx.label, o, (long long)tokens);
  if (st == SK_STATUS_OK) {
    dst->params = ctx.params;
    ctx.params = NULL;
  }
  ctx_release(&ctx, scratch);
  return st;
}

static sk_status copy_nodes(const sk_graph *g, sk_graph *r, int64_t tokens) {
  r->nodes = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->nodes);
  if (!r->nodes) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  r->cap_nodes = g->n_nodes;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const sk__node *s = &g->nodes[i];
    sk__node *d = &r->nodes[i];
    bool ok = true;
    *d = (sk__node){.def = s->def, .scope = s->scope, .stream = s->stream, .n_outputs = s->n_outputs,
                    .n_waits = s->n_waits};
    r->n_nodes = i + 1;
    d->name = dup_or_fail(s->name, &ok);
    d->outputs = copy_array(s->outputs, s->n_outputs, sizeof(sk_value), &ok);
    if (s->n_waits) d->waits = copy_array(s->waits, s->n_waits, sizeof(int), &ok);
    if (s->desc && !(d->desc = sk__desc_clone(s->desc, s->name))) ok = false;
    for (int k = 0; k < SK__MAX_SLOTS; k++) {
      d->slot_count[k] = s->slot_count[k];
      if (s->slot_values[k]) d->slot_values[k] = copy_array(s->slot_values[k], s->slot_count[k], sizeof(sk_value), &ok);
    }
    if (!ok) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
    SK_RETURN_IF_ERROR(rebuild_node(g, r, i, tokens));
  }
  return SK_STATUS_OK;
}

static sk_status copy_named(const sk__named_value *src, size_t n, sk__named_value **dst, size_t *cap) {
  bool ok = true;
  *dst = calloc(n ? n : 1, sizeof **dst);
  if (!*dst) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  *cap = n;
  for (size_t i = 0; i < n; i++) (*dst)[i] = (sk__named_value){dup_or_fail(src[i].name, &ok), src[i].value};
  return ok ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
}

static sk_status copy_parts(const sk_graph *g, sk_graph *r, int64_t tokens) {
  bool ok = true;
  r->values = copy_array(g->values, g->n_values, sizeof *g->values, &ok);
  if (!ok) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  r->n_values = r->cap_values = g->n_values;
  for (size_t v = 0; v < g->n_values; v++) r->values[v].desc = at_tokens(&g->values[v].desc, g->max_tokens, tokens);
  SK_RETURN_IF_ERROR(copy_named(g->inputs, g->n_inputs, &r->inputs, &r->cap_inputs));
  r->n_inputs = g->n_inputs;
  SK_RETURN_IF_ERROR(copy_named(g->outputs, g->n_outputs, &r->outputs, &r->cap_outputs));
  r->n_outputs = g->n_outputs;
  r->constants = calloc(g->n_constants ? g->n_constants : 1, sizeof *r->constants);
  r->scopes = calloc(g->n_scopes ? g->n_scopes : 1, sizeof *r->scopes);
  if (!r->constants || !r->scopes) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  r->cap_constants = r->n_constants = g->n_constants;
  for (size_t i = 0; i < g->n_constants; i++) /* borrowed: g's data outlives r */
    r->constants[i] = (sk__constant){dup_or_fail(g->constants[i].name, &ok), g->constants[i].value,
                                     g->constants[i].data, false};
  r->cap_scopes = r->n_scopes = g->n_scopes;
  for (size_t i = 0; i < g->n_scopes; i++)
    r->scopes[i] = (sk__scope){dup_or_fail(g->scopes[i].name, &ok), dup_or_fail(g->scopes[i].options, &ok),
                               g->scopes[i].opened_at};
  if (g->n_events) {
    r->events = copy_array(g->events, g->n_events, sizeof *g->events, &ok);
    r->n_events = r->cap_events = g->n_events;
  }
  return ok ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
}

sk_status sk__graph_at_tokens(const sk_graph *g, int64_t tokens, sk_graph **out) {
  *out = NULL;
  sk_graph *r = calloc(1, sizeof *r);
  if (!r) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "out of memory");
  r->open_scope = -1;
  sk_status st = copy_parts(g, r, tokens);
  if (st == SK_STATUS_OK) st = copy_nodes(g, r, tokens);
  if (st != SK_STATUS_OK) {
    sk_graph_destroy(r);
    return st;
  }
  *out = r;
  return SK_STATUS_OK;
}

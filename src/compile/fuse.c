/* Steps of a run (fuse.h). Outside scopes, and for the eager and reference
 * executors, every non-view node is its own step. A scope is the set of
 * nodes that carry its index, wherever they sit in graph order; it becomes
 * one super kernel, run after all of its producers and before all of its
 * consumers (launch_order.h). Two things can stop a scope from running as
 * one launch, and strict-scope-check decides what happens then:
 *   - an op that cannot be fused. abort: a compile error naming the op;
 *     bypass: the whole scope runs unfused, with a warning; unset: the op
 *     runs on its own launch and the rest of the scope is fused around it
 *     (split where the op sits between its producers and consumers);
 *   - the scope is not convex: a node outside it depends on the scope and
 *     feeds it, through data or an event, so no single launch can hold the
 *     scope. abort: a compile error naming the scope and that node; bypass:
 *     the scope runs unfused; unset: it is split into parts that each can
 *     run as one launch. Both with a warning.
 * Scopes that each are convex can still need each other (a node of A feeds
 * B, a node of B feeds A): launch_order.c then splits one, asking the same
 * policy. A split scope's parts are "scope.0", "scope.1", ... in run order. */
#include "compile/fuse.h"
#include "executors/executors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "compile/launch_order.h"
#include "compile/node_deps.h"
#include "program/plan.h"

typedef struct fuse_ctx {
  sk_program *p;
  size_t n_scopes;
  const char *const *names;     /* per scope */
  const sk__options *options;   /* per scope: its string layered over the defaults */
  bool *split_explained; /* per scope: a warning or info already said why it splits */
  int *fused_scope;      /* per node: the scope it is fused in, or -1 */
  size_t *member_begin;  /* n_scopes + 1: scope s's non-view nodes are */
  size_t *members;       /* members[member_begin[s] .. member_begin[s + 1]), ascending */
  size_t cap_steps;
} fuse_ctx;

static sk_status push_step(fuse_ctx *c, sk__step step) {
  sk_program *p = c->p;
  if (p->n_steps == c->cap_steps) {
    size_t n = c->cap_steps ? c->cap_steps * 2 : 16;
    sk__step *grown = realloc(p->steps, n * sizeof *grown);
    if (!grown) {
      step.exec->destroy(&step);
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
    }
    p->steps = grown;
    c->cap_steps = n;
  }
  p->steps[p->n_steps++] = step;
  return SK_STATUS_OK;
}

/* One super kernel over nodes[0..n) (ascending, no views). */
static sk_status push_plan(fuse_ctx *c, const size_t *nodes, size_t n, const char *name, const sk__options *options) {
  sk_program *p = c->p;
  sk__plan *plan = NULL;
  SK_RETURN_IF_ERROR(sk__plan_build(p, nodes, n, name, options, p->tiled_cores, &plan));
  if (plan->workspace_bytes > p->workspace_bytes) p->workspace_bytes = plan->workspace_bytes; /* retiled subs */
  plan->step = (int32_t)p->n_steps;
  if (plan->options.profiling) p->profile_subkernels = true;
  return push_step(c, (sk__step){.exec = &sk__executor_interpreter, .plan = plan});
}

/* "name (type)", with the node's scope when it has one. */
static const char *node_label(const fuse_ctx *c, size_t node, char *buf, size_t size) {
  const sk__exec_node *n = &c->p->nodes[node];
  if (n->scope < 0) snprintf(buf, size, "%s (%s)", n->name, n->def->type);
  else snprintf(buf, size, "%s (%s, in scope '%s')", n->name, n->def->type, c->names[n->scope]);
  return buf;
}

static void run_unfused(fuse_ctx *c, size_t s) {
  for (size_t k = c->member_begin[s]; k < c->member_begin[s + 1]; k++) c->fused_scope[c->members[k]] = -1;
}

/* What strict-scope-check says about scope s's unfusable ops. */
static sk_status check_unfusable(fuse_ctx *c, size_t s, bool *bypassed) {
  const char *name = c->names[s];
  sk__strict_scope_check policy = c->options[s].strict_scope_check;
  *bypassed = false;
  for (size_t k = c->member_begin[s]; k < c->member_begin[s + 1]; k++) {
    size_t node = c->members[k];
    const sk__exec_node *bad = &c->p->nodes[node];
    if (!bad->def->unfusable) continue;
    if (policy == SK_STRICT_ABORT)
      return sk__fail(SK_STATUS_UNSUPPORTED, "scope '%s': op %s (%s) cannot be fused (strict-scope-check=abort)",
                      name, bad->name, bad->def->type);
    if (policy == SK_STRICT_BYPASS) {
      sk__log(SK_LOG_WARN, "scope '%s': op %s (%s) cannot be fused; the scope runs unfused (strict-scope-check=bypass)",
              name, bad->name, bad->def->type);
      run_unfused(c, s);
      *bypassed = true;
      return SK_STATUS_OK;
    }
    sk__log(SK_LOG_INFO, "scope '%s': op %s (%s) cannot be fused; it runs on its own launch and the scope is fused around it",
            name, bad->name, bad->def->type);
    c->fused_scope[node] = -1;
    c->split_explained[s] = true;
  }
  return SK_STATUS_OK;
}

/* What strict-scope-check says when scope s is not convex. Its unfusable
 * ops count as members here: the scope as declared is what is checked. */
static sk_status check_convex(fuse_ctx *c, size_t s, const sk__node_deps *d) {
  const char *name = c->names[s];
  bool found = false;
  size_t outside = 0, fed = 0;
  SK_RETURN_IF_ERROR(sk__node_deps_find_detour(d, c->members + c->member_begin[s],
                                               c->member_begin[s + 1] - c->member_begin[s], &found, &outside, &fed));
  if (!found) return SK_STATUS_OK;
  char out_label[320], fed_label[320];
  node_label(c, outside, out_label, sizeof out_label);
  node_label(c, fed, fed_label, sizeof fed_label);
  switch (c->options[s].strict_scope_check) {
    case SK_STRICT_ABORT:
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "scope '%s' is not convex: node %s is outside it, depends on the scope and feeds its node %s, so the "
                      "scope cannot run as one launch (strict-scope-check=abort)",
                      name, out_label, fed_label);
    case SK_STRICT_BYPASS:
      sk__log(SK_LOG_WARN,
              "scope '%s' is not convex: node %s is outside it, depends on the scope and feeds its node %s; the scope "
              "runs unfused (strict-scope-check=bypass)",
              name, out_label, fed_label);
      run_unfused(c, s);
      return SK_STATUS_OK;
    default:
      sk__log(SK_LOG_WARN,
              "scope '%s' is not convex: node %s is outside it, depends on the scope and feeds its node %s; the scope "
              "is split into parts that each run as one launch",
              name, out_label, fed_label);
      c->split_explained[s] = true;
      return SK_STATUS_OK;
  }
}

/* launch_order.c must split scope s: its node `blocked` needs `blocker`,
 * which needs the scope through another scope's launch (a cycle of convex
 * scopes) or, when the split was explained above, through the scope's own
 * unfusable op or a detour. */
static sk_status on_split(void *ctx, int s, size_t blocked, size_t blocker, bool *unfuse) {
  fuse_ctx *c = ctx;
  if (c->split_explained[s]) return SK_STATUS_OK;
  const char *name = c->names[s];
  char blocker_label[320];
  node_label(c, blocker, blocker_label, sizeof blocker_label);
  const char *what = "scope '%s' cannot run as one launch: its node %s needs node %s, which needs the scope itself "
                     "through another scope's launch";
  char message[1024];
  snprintf(message, sizeof message, what, name, c->p->nodes[blocked].name, blocker_label);
  switch (c->options[s].strict_scope_check) {
    case SK_STRICT_ABORT: return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s (strict-scope-check=abort)", message);
    case SK_STRICT_BYPASS:
      sk__log(SK_LOG_WARN, "%s; the scope runs unfused (strict-scope-check=bypass)", message);
      *unfuse = true;
      return SK_STATUS_OK;
    default:
      sk__log(SK_LOG_WARN, "%s; the scope is split", message);
      c->split_explained[s] = true;
      return SK_STATUS_OK;
  }
}

/* Each scope's members, and what strict-scope-check makes of it. */
static sk_status prepare_scopes(fuse_ctx *c, const sk__node_deps *d) {
  const sk_program *p = c->p;
  for (size_t i = 0; i < p->n_nodes; i++) {
    c->fused_scope[i] = p->nodes[i].def->is_view ? -1 : p->nodes[i].scope;
    if (c->fused_scope[i] >= 0) c->member_begin[c->fused_scope[i] + 1]++;
  }
  for (size_t s = 0; s < c->n_scopes; s++) c->member_begin[s + 1] += c->member_begin[s];
  size_t *fill = calloc(c->n_scopes ? c->n_scopes : 1, sizeof *fill);
  if (!fill) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
  for (size_t i = 0; i < p->n_nodes; i++)
    if (c->fused_scope[i] >= 0) {
      size_t s = (size_t)c->fused_scope[i];
      c->members[c->member_begin[s] + fill[s]++] = i;
    }
  free(fill);
  for (size_t s = 0; s < c->n_scopes; s++) {
    bool bypassed;
    SK_RETURN_IF_ERROR(check_unfusable(c, s, &bypassed));
    if (!bypassed) SK_RETURN_IF_ERROR(check_convex(c, s, d));
  }
  return SK_STATUS_OK;
}

/* The launches become steps; a scope with several parts names them. */
static sk_status push_launches(fuse_ctx *c, const sk__launch_order *order) {
  int *parts = calloc(c->n_scopes ? c->n_scopes : 1, sizeof *parts), *next = calloc(c->n_scopes ? c->n_scopes : 1, sizeof *next);
  sk_status st = parts && next ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
  for (size_t l = 0; st == SK_STATUS_OK && l < order->n_launches; l++)
    if (order->launches[l].scope >= 0) parts[order->launches[l].scope]++;
  for (size_t l = 0; st == SK_STATUS_OK && l < order->n_launches; l++) {
    const sk__launch *launch = &order->launches[l];
    if (launch->scope < 0) {
      st = push_step(c, (sk__step){.exec = sk__executor_for_op(c->p->executor), .node = launch->nodes[0]});
      continue;
    }
    const char *scope = c->names[launch->scope];
    char name[300];
    if (parts[launch->scope] > 1) snprintf(name, sizeof name, "%s.%d", scope, next[launch->scope]++);
    else snprintf(name, sizeof name, "%s", scope);
    st = push_plan(c, launch->nodes, launch->n_nodes, name, &c->options[launch->scope]);
  }
  free(parts);
  free(next);
  return st;
}

/* The steps: each node's scope is p->nodes[i].scope (-1: none); scope s is
 * named names[s] and runs under options[s]; d gives every node's
 * dependencies (data, and event waits: runtime-only fusion's kernels are a
 * chain of them). */
static sk_status build_steps(sk_program *p, size_t n_scopes, const char *const *names, const sk__options *options,
                             const sk__node_deps *d) {
  fuse_ctx c = {.p = p, .n_scopes = n_scopes, .names = names, .options = options};
  bool fuse = p->executor == SK_EXECUTOR_INTERP || p->executor == SK_EXECUTOR_JIT || p->executor == SK_EXECUTOR_AUTO;
  if (!fuse) {
    for (size_t i = 0; i < p->n_nodes; i++)
      if (!p->nodes[i].def->is_view) SK_RETURN_IF_ERROR(push_step(&c, (sk__step){.exec = sk__executor_for_op(p->executor), .node = i}));
    return SK_STATUS_OK;
  }
  size_t n_nodes = p->n_nodes ? p->n_nodes : 1, scopes = n_scopes ? n_scopes : 1;
  c.split_explained = calloc(scopes, sizeof *c.split_explained);
  c.fused_scope = malloc(n_nodes * sizeof *c.fused_scope);
  c.member_begin = calloc(scopes + 1, sizeof *c.member_begin);
  c.members = malloc(n_nodes * sizeof *c.members);
  sk_status st = c.split_explained && c.fused_scope && c.member_begin && c.members
                     ? SK_STATUS_OK
                     : sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
  if (st == SK_STATUS_OK) st = prepare_scopes(&c, d);
  sk__launch_order order = {0};
  if (st == SK_STATUS_OK) st = sk__launch_order_build(p, d, c.fused_scope, (int)n_scopes, on_split, &c, &order);
  if (st == SK_STATUS_OK) st = push_launches(&c, &order);
  sk__launch_order_free(&order);
  free(c.split_explained);
  free(c.fused_scope);
  free(c.member_begin);
  free(c.members);
  return st;
}

sk_status sk__program_build_steps(sk_program *p, const sk_graph *g, const char *default_options) {
  size_t n = g->n_scopes ? g->n_scopes : 1;
  sk__options *options = calloc(n, sizeof *options);
  const char **names = calloc(n, sizeof *names);
  sk__node_deps d = {0};
  sk_status st = options && names ? SK_STATUS_OK : sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
  for (size_t s = 0; options && s < g->n_scopes; s++) sk__options_init_defaults(&options[s]);
  bool fuse = p->executor == SK_EXECUTOR_INTERP || p->executor == SK_EXECUTOR_JIT || p->executor == SK_EXECUTOR_AUTO;
  for (size_t s = 0; fuse && st == SK_STATUS_OK && s < g->n_scopes; s++) {
    names[s] = g->scopes[s].name;
    st = sk__options_parse_layered(default_options, g->scopes[s].options, &options[s]);
    if (st != SK_STATUS_OK) st = sk__fail_within(st, "scope '%s'", g->scopes[s].name);
  }
  if (st == SK_STATUS_OK && fuse) st = sk__node_deps_build(p, g, &d);
  if (st == SK_STATUS_OK) st = build_steps(p, g->n_scopes, names, options, &d);
  sk__node_deps_free(&d);
  for (size_t s = 0; options && s < g->n_scopes; s++) sk__options_free(&options[s]);
  free(options);
  free(names);
  return st;
}

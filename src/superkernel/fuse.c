/* Steps of a run (fuse.h). Outside scopes, and for the eager and reference
 * executors, every non-view node is its own step. A scope becomes one super
 * kernel unless it holds an op that cannot be fused; then strict-scope-check
 * decides: abort (compile error naming the op), bypass (the whole scope runs
 * unfused, with a warning), or unset (the scope is split at that op: the
 * fusable runs on either side become super kernels, the op runs alone). */
#include "superkernel/fuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "superkernel/plan.h"

static sk_status push_step(sk_program *p, size_t *cap, sk__step step) {
  if (p->n_steps == *cap) {
    size_t n = *cap ? *cap * 2 : 16;
    sk__step *grown = realloc(p->steps, n * sizeof *grown);
    if (!grown) {
      sk__plan_destroy(step.plan);
      return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
    }
    p->steps = grown;
    *cap = n;
  }
  p->steps[p->n_steps++] = step;
  return SK_STATUS_OK;
}

static sk_status push_eager(sk_program *p, size_t *cap, size_t node) {
  if (p->nodes[node].def->is_view) return SK_STATUS_OK;
  return push_step(p, cap, (sk__step){.node = node});
}

/* One super kernel over nodes [begin, end) of the scope. */
static sk_status push_plan(sk_program *p, size_t *cap, size_t begin, size_t end, const char *name,
                           const sk__options *options) {
  size_t *nodes = malloc((end - begin) * sizeof *nodes);
  if (!nodes) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory");
  size_t n = 0;
  for (size_t i = begin; i < end; i++)
    if (!p->nodes[i].def->is_view) nodes[n++] = i;
  sk_status st = SK_STATUS_OK;
  if (n) {
    sk__plan *plan = NULL;
    st = sk__plan_build(p, nodes, n, name, options, p->tiled_cores, &plan);
    if (st == SK_STATUS_OK) {
      plan->step = (int32_t)p->n_steps;
      if (plan->options.profiling) p->profile_subkernels = true;
      st = push_step(p, cap, (sk__step){.plan = plan});
    }
  }
  free(nodes);
  return st;
}

static sk_status fuse_scope(sk_program *p, size_t *cap, const sk__scope *sc, const sk__options *o) {
  size_t first_unfusable = sc->end_node;
  for (size_t i = sc->first_node; i < sc->end_node && first_unfusable == sc->end_node; i++)
    if (p->nodes[i].def->unfusable) first_unfusable = i;
  if (first_unfusable == sc->end_node) return push_plan(p, cap, sc->first_node, sc->end_node, sc->name, o);
  const sk__exec_node *bad = &p->nodes[first_unfusable];
  if (o->strict_scope_check == SK_STRICT_ABORT)
    return sk__fail(SK_STATUS_UNSUPPORTED, "scope '%s': op %s (%s) cannot be fused (strict-scope-check=abort)", sc->name,
                    bad->name, bad->def->type);
  if (o->strict_scope_check == SK_STRICT_BYPASS) {
    sk__log(SK_LOG_WARN, "scope '%s': op %s (%s) cannot be fused; the scope runs unfused (strict-scope-check=bypass)",
            sc->name, bad->name, bad->def->type);
    for (size_t i = sc->first_node; i < sc->end_node; i++) SK_RETURN_IF_ERROR(push_eager(p, cap, i));
    return SK_STATUS_OK;
  }
  /* Unset: split at every unfusable op. */
  int part = 0;
  size_t run = sc->first_node;
  for (size_t i = sc->first_node; i <= sc->end_node; i++) {
    if (i < sc->end_node && !p->nodes[i].def->unfusable) continue;
    if (i > run) {
      char name[300];
      snprintf(name, sizeof name, "%s.%d", sc->name, part++);
      SK_RETURN_IF_ERROR(push_plan(p, cap, run, i, name, o));
    }
    if (i < sc->end_node) {
      sk__log(SK_LOG_INFO, "scope '%s': op %s (%s) cannot be fused; the scope is split around it", sc->name,
              p->nodes[i].name, p->nodes[i].def->type);
      SK_RETURN_IF_ERROR(push_eager(p, cap, i));
    }
    run = i + 1;
  }
  return SK_STATUS_OK;
}

sk_status sk__program_build_steps(sk_program *p, const sk_graph *g, const char *default_options) {
  size_t cap = 0;
  bool fuse = p->executor == SK_EXECUTOR_INTERP || p->executor == SK_EXECUTOR_JIT || p->executor == SK_EXECUTOR_AUTO;
  size_t i = 0;
  while (i < p->n_nodes) {
    int scope = p->nodes[i].scope;
    if (!fuse || scope < 0) {
      SK_RETURN_IF_ERROR(push_eager(p, &cap, i++));
      continue;
    }
    const sk__scope *sc = &g->scopes[scope];
    sk__options o;
    sk_status st = sk__options_parse_layered(default_options, sc->options, &o);
    if (st != SK_STATUS_OK) {
      char message[1024];
      snprintf(message, sizeof message, "%s", sk_last_error());
      return sk__fail(st, "scope '%s': %s", sc->name, message);
    }
    st = fuse_scope(p, &cap, sc, &o);
    sk__options_free(&o);
    SK_RETURN_IF_ERROR(st);
    i = sc->end_node;
  }
  return SK_STATUS_OK;
}

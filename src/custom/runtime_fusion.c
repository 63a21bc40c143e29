/* Runtime-only fusion: kernels fused without a graph (superkernel.h,
 * "Runtime-only fusion"), as a client of the compiler: the kernels become a
 * graph of launch-only nodes (sk__graph_add_launch: no tensors, each after
 * the one before, since the library cannot see their data flow) in one
 * scope named after the fused kernel, which sk_compile's one path compiles:
 * a super kernel planned by the planner, or, around unfusable kernels, runs
 * of fusable ones plus own launches (strict-scope-check), each JIT-compiled
 * as $SK_EXECUTOR says (auto or jit, the default: compile-options apply, a
 * failure leaves it interpreted with a warning; interp interprets; eager
 * gives every kernel its own launch). A launch stores each kernel's
 * argument list in its node's params (custom.h) and runs the program's
 * default run context through the one run loop.
 *
 * Nodes without tensors have no footprints, so the planner cannot see any
 * data flow between kernels; early-start=0 is therefore forced, which puts a
 * barrier between consecutive kernels (or with debug-sync-all, a full one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/fork.h"
#include "custom/custom.h"
#include "compile/compile.h"
#include "graph/graph.h"
#include "options/options.h"
#include "program/plan.h"
#include "run/run.h"

struct sk_fused_kernel {
  char *name;              /* kernel names joined by '+' */
  sk_program *p;           /* nodes: the kernels in order, their params each launch's args; steps */
  size_t n_kernels;
  sk_team *team;
  sk__fork_mutex lock;    /* one launch at a time: params and the context are per launch */
};

static void *const no_args[1] = {NULL};

static sk_status oom(void) { return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_fused_kernel_create: out of memory"); }

/* Re-prefixes the planner's / parser's message with the entry point; the
 * planner's "scope 'x'" is a fused kernel here. */
static sk_status prefixed(sk_status st) {
  if (strncmp(sk_last_error(), "scope '", 7) != 0) return sk__fail_within(st, "sk_fused_kernel_create");
  char rest[1024];
  snprintf(rest, sizeof rest, "%s", sk_last_error() + 6);
  return sk__fail(st, "sk_fused_kernel_create: fused kernel %s", rest);
}

static char *join_names(sk_kernel *const *kernels, size_t n) {
  char buf[256];
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    const char *nm = kernels[i]->name;
    if (len + strlen(nm) + 5 >= sizeof buf) {
      snprintf(buf + len, sizeof buf - len, "+...");
      break;
    }
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "+" : "", nm);
  }
  return sk__strdup(buf);
}

/* Kernel i's node name: its own ("pows"), or "pows#2" for its second
 * occurrence. */
static void node_name(sk_kernel *const *kernels, size_t i, char *name, size_t size) {
  int occurrence = 1;
  for (size_t j = 0; j < i; j++) occurrence += kernels[j] == kernels[i];
  if (occurrence > 1) snprintf(name, size, "%s#%d", kernels[i]->name, occurrence);
  else snprintf(name, size, "%s", kernels[i]->name);
}

/* Kernel i's params in the program (the launch writes its args there). */
static sk__custom_params *node_params(const sk_fused_kernel *fk, size_t i) { return fk->p->nodes[i].params; }

/* The graph: one scope of launch-only nodes in order, options as given but
 * early-start=0 (rendered), compiled for team. */
static sk_status compile_kernels(sk_fused_kernel *fk, sk_kernel *const *kernels, size_t n, const sk__options *o,
                                 sk_executor executor) {
  size_t len = sk__options_render(o, NULL, 0);
  char *options = malloc(len + 1);
  sk_graph *g = NULL;
  sk_status st = options ? sk_graph_create(&g) : oom();
  if (options) sk__options_render(o, options, len + 1);
  if (st == SK_STATUS_OK) st = sk_graph_begin_scope(g, fk->name, options);
  for (size_t i = 0; st == SK_STATUS_OK && i < n; i++) {
    char name[80];
    node_name(kernels, i, name, sizeof name);
    sk__custom_params params = {.kernel = kernels[i], .args = no_args};
    st = sk__graph_add_launch(g, &kernels[i]->def, &params, name, (int)i - 1);
  }
  if (st == SK_STATUS_OK) st = sk_graph_end_scope(g);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = fk->team, .executor = executor};
  if (st == SK_STATUS_OK) st = sk__compile_graph(g, &cfg, 0, NULL, &fk->p);
  sk_graph_destroy(g);
  free(options);
  return st == SK_STATUS_OK ? st : prefixed(st);
}

/* A kernel whose blocks meet at a team barrier runs them at once, one per
 * core. */
static sk_status check_barriers(sk_kernel *const *kernels, size_t n, int n_cores) {
  for (size_t i = 0; i < n; i++) {
    const sk_kernel *k = kernels[i];
    if (k->desc.barriers_per_block > 0 && k->desc.block_count > n_cores) {
      char name[80];
      node_name(kernels, i, name, sizeof name);
      return sk__fail(SK_STATUS_UNSUPPORTED,
                      "sk_fused_kernel_create: kernel %s uses a team barrier but has %lld blocks for %d cores", name,
                      (long long)k->desc.block_count, n_cores);
    }
  }
  return SK_STATUS_OK;
}

static sk_status parse_options(const char *options, sk__options *o) {
  sk_status st = sk__options_parse(options, o);
  if (st != SK_STATUS_OK) return prefixed(st);
  if (o->early_start != 0 && (o->explicit_mask & (1u << SK_OPT_EARLY_START)))
    sk__log(SK_LOG_INFO, "sk_fused_kernel_create: early-start=%d ignored: runtime-only fusion does not know the "
            "kernels' data flow, so a barrier separates them (early-start=0)", o->early_start);
  o->early_start = 0;
  return SK_STATUS_OK;
}

void sk_fused_kernel_destroy(sk_fused_kernel *fk) {
  if (!fk) return;
  sk_program_destroy(fk->p);
  sk__fork_mutex_destroy(&fk->lock);
  free(fk->name);
  free(fk);
}

sk_status sk_fused_kernel_create(sk_kernel *const *kernels, size_t n, const char *options, sk_team *team,
                                 sk_fused_kernel **out) {
  sk__clear_error();
  if (!out) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_create: out is NULL");
  *out = NULL;
  if (!kernels || n == 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_create: %s", !kernels ? "kernels is NULL" : "n is 0");
  if (n > UINT16_MAX)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_create: n = %zu kernels (at most %d)", n, UINT16_MAX);
  for (size_t i = 0; i < n; i++)
    if (!kernels[i]) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_create: kernels[%zu] is NULL", i);
  sk_executor executor;
  SK_RETURN_IF_ERROR(sk__executor_resolve(SK_EXECUTOR_DEFAULT, "sk_fused_kernel_create", &executor));
  SK_RETURN_IF_ERROR(check_barriers(kernels, n, team ? sk_team_num_cores(team) : 1));
  sk__options o;
  SK_RETURN_IF_ERROR(parse_options(options, &o));
  sk_fused_kernel *fk = calloc(1, sizeof *fk);
  if (!fk) {
    sk__options_free(&o);
    return oom();
  }
  sk__fork_mutex_init(&fk->lock);
  fk->team = team;
  fk->n_kernels = n;
  fk->name = join_names(kernels, n);
  sk_status st = fk->name ? compile_kernels(fk, kernels, n, &o, executor) : oom();
  sk__options_free(&o);
  if (st != SK_STATUS_OK) {
    sk_fused_kernel_destroy(fk);
    return st;
  }
  *out = fk;
  return SK_STATUS_OK;
}

sk_status sk_fused_kernel_launch(sk_fused_kernel *fk, void *const *const *args) {
  sk__clear_error();
  if (!fk) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_launch: fk is NULL");
  for (size_t i = 0; i < fk->n_kernels; i++) {
    const sk_kernel *k = node_params(fk, i)->kernel;
    if (k->desc.n_params > 0 && (!args || !args[i]))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_launch: '%s': %s is NULL but kernel %s takes %d parameters",
                      fk->name, !args ? "args" : "an argument list", fk->p->nodes[i].name, k->desc.n_params);
  }
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_fused_kernel_launch")); /* before fk->lock, which a launch holds */
  SK_RETURN_IF_ERROR(sk__team_check_process(fk->team, "sk_fused_kernel_launch"));
  sk__fork_mutex_lock(&fk->lock);
  for (size_t i = 0; i < fk->n_kernels; i++) node_params(fk, i)->args = args && args[i] ? args[i] : no_args;
  /* No buffers: the kernels' data is in their argument lists. */
  sk_status st = sk__run_context_run(fk->p->default_ctx, fk->team, NULL, NULL, false, "sk_fused_kernel_launch");
  sk__fork_mutex_unlock(&fk->lock);
  if (st == SK_STATUS_OK) sk__clear_error(); /* nothing a block's nested call left behind */
  return st;
}

sk_status sk_fused_kernel_describe(const sk_fused_kernel *fk, char **text_out) {
  sk__clear_error();
  if (!fk || !text_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_describe: %s is NULL", !fk ? "fk" : "text_out");
  *text_out = NULL;
  const sk_program *p = fk->p;
  size_t n_plans = 0, n_jit = 0;
  for (size_t s = 0; s < p->n_steps; s++)
    n_plans += p->steps[s].plan != NULL, n_jit += p->steps[s].exec->kind == SK_EXECUTOR_JIT;
  const char *how = p->executor == SK_EXECUTOR_EAGER ? "eager (every kernel its own launch)"
                  : n_plans == 0                     ? "no super kernel"
                  : n_jit == n_plans                 ? "JIT-compiled"
                  : n_jit == 0                       ? "interpreted"
                                                     : "partly JIT-compiled, partly interpreted";
  sk__text t = {0};
  sk__text_put(&t,
               "fused kernel %s: %zu kernels in %zu step%s, %s, %d cores; runtime-only fusion: a barrier between "
               "consecutive kernels\n",
               fk->name, fk->n_kernels, p->n_steps, p->n_steps == 1 ? "" : "s", how, p->tiled_cores);
  for (size_t s = 0; s < p->n_steps; s++) {
    const sk__step *step = &p->steps[s];
    if (step->plan) {
      step->exec->describe(p, step, &t);
      if (n_jit && n_jit < n_plans) sk__text_put(&t, "  (%s)\n", step->exec->name);
    } else {
      const sk__exec_node *node = &p->nodes[step->node];
      sk__text_put(&t, "kernel %s: own launch, %lld blocks%s\n", node->name, (long long)node->tiling.n_blocks,
                   node->def->unfusable ? " (unfusable)" : "");
    }
  }
  return sk__text_take(&t, "sk_fused_kernel_describe", text_out);
}

/* Runtime-only fusion: kernels fused without a graph (superkernel.h,
 * "Runtime-only fusion").
 *
 * The fused kernel owns a minimal internal sk_program: one exec node per
 * kernel (its generated op definition, its tiling from the descriptor, no
 * tensors, no storage) and the program's steps, built here the way
 * compile/fuse.c builds a scope's: one super kernel planned by
 * sk__plan_build, or, around unfusable kernels, runs of fusable ones plus
 * own launches (strict-scope-check). A launch stores each kernel's argument
 * list in its node's params (custom.h) and runs the steps through the
 * program run loop (run/run.c) in the program's default run context; the
 * interpreter and the planner see ordinary nodes.
 *
 * Nodes without tensors have no footprints, so the planner cannot see any
 * data flow between kernels; early-start=0 is therefore forced, which puts a
 * barrier between consecutive kernels (or with debug-sync-all, a full one).
 *
 * The executor follows $SK_EXECUTOR as sk_compile's default does: auto or
 * jit (the default) compiles each super kernel with the program JIT
 * (src/executors/jit/, compile-options apply; a failure leaves it interpreted with a
 * warning), interp interprets, eager gives every kernel its own launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/executor.h"
#include "custom/custom.h"
#include "run/run.h"
#include "compile/fuse.h"
#include "executors/jit/jit.h"
#include "program/plan.h"

struct sk_fused_kernel {
  char *name;              /* kernel names joined by '+' */
  sk_program *p;           /* nodes: the kernels in order; steps */
  sk__custom_params *params; /* per node: its kernel and the launch's args */
  size_t n_kernels;
  sk_team *team;
  pthread_mutex_t lock;    /* one launch at a time: params and the context are per launch */
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

/* Node i of the internal program: kernel i, named after it ("pows", or
 * "pows#2" for its second occurrence). */
static sk_status prepare_node(sk_fused_kernel *fk, sk_kernel *const *kernels, size_t i, int n_cores) {
  const sk_kernel *k = kernels[i];
  sk__exec_node *node = &fk->p->nodes[i];
  int occurrence = 1;
  for (size_t j = 0; j < i; j++) occurrence += kernels[j] == k;
  char name[80];
  if (occurrence > 1) snprintf(name, sizeof name, "%s#%d", k->name, occurrence);
  else snprintf(name, sizeof name, "%s", k->name);
  node->def = &k->def;
  node->name = sk__strdup(name);
  if (!node->name) return oom();
  fk->params[i] = (sk__custom_params){.kernel = k, .args = no_args};
  node->io.params = &fk->params[i];
  node->tiling = (sk__tiling){.n_blocks = k->desc.block_count, .workspace_bytes = sk__align_up(k->desc.workspace_bytes)};
  node->io.n_blocks = k->desc.block_count;
  if (node->tiling.workspace_bytes > fk->p->workspace_bytes) fk->p->workspace_bytes = node->tiling.workspace_bytes;
  if (k->desc.barriers_per_block > 0) {
    /* As program.c does: blocks that meet at a barrier run at once, one per
     * core. The barrier serves the kernel's own launch; a super kernel
     * replaces it with one over its cores. */
    if (k->desc.block_count > n_cores)
      return sk__fail(SK_STATUS_UNSUPPORTED,
                      "sk_fused_kernel_create: kernel %s uses a team barrier but has %lld blocks for %d cores", name,
                      (long long)k->desc.block_count, n_cores);
    node->eager_barrier = true; /* the run context makes it */
    SK_RETURN_IF_ERROR(sk__label_eager_barrier(node));
  }
  return SK_STATUS_OK;
}

/* The steps, by the step builder sk_compile uses: the kernels are one
 * scope named after the fused kernel, each depending on the one before
 * (the library cannot see their data flow), so strict-scope-check splits,
 * bypasses or refuses around unfusable kernels as it does in graphs. */
static sk_status build_steps(sk_fused_kernel *fk, const sk__options *o) {
  sk_program *p = fk->p;
  for (size_t i = 0; i < p->n_nodes; i++) p->nodes[i].scope = 0;
  sk__node_deps chain;
  SK_RETURN_IF_ERROR(sk__node_deps_chain(p->n_nodes, &chain));
  const char *names[1] = {fk->name};
  sk_status st = sk__build_steps(p, 1, names, o, &chain);
  sk__node_deps_free(&chain);
  return st == SK_STATUS_OK ? st : prefixed(st);
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
  if (fk->p) {
    /* The params are ours (one array), not the nodes'. */
    for (size_t i = 0; i < fk->p->n_nodes; i++) fk->p->nodes[i].params = NULL;
    sk_program_destroy(fk->p);
  }
  pthread_mutex_destroy(&fk->lock);
  free(fk->params);
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
  sk__options o;
  SK_RETURN_IF_ERROR(parse_options(options, &o));
  int n_cores = team ? sk_team_num_cores(team) : 1;
  sk_fused_kernel *fk = calloc(1, sizeof *fk);
  sk_program *p = fk ? sk__program_new() : NULL; /* watchdog: $SK_WATCHDOG_MS or 60 s */
  if (!fk || !p) {
    free(fk);
    sk__options_free(&o);
    return oom();
  }
  pthread_mutex_init(&fk->lock, NULL);
  fk->p = p;
  fk->team = team;
  fk->n_kernels = n;
  p->executor = executor;
  p->tiled_cores = n_cores;
  fk->name = join_names(kernels, n);
  fk->params = calloc(n, sizeof *fk->params);
  p->nodes = calloc(n, sizeof *p->nodes);
  sk_status st = fk->name && fk->params && p->nodes ? SK_STATUS_OK : oom();
  for (size_t i = 0; st == SK_STATUS_OK && i < n; i++) {
    p->n_nodes = i + 1;
    st = prepare_node(fk, kernels, i, n_cores);
  }
  if (st == SK_STATUS_OK) st = build_steps(fk, &o);
  sk__options_free(&o);
  if (st == SK_STATUS_OK && (executor == SK_EXECUTOR_JIT || executor == SK_EXECUTOR_AUTO)) sk__program_jit(p);
  if (st == SK_STATUS_OK) st = sk__program_finish(p);
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
    const sk_kernel *k = fk->params[i].kernel;
    if (k->desc.n_params > 0 && (!args || !args[i]))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_fused_kernel_launch: '%s': %s is NULL but kernel %s takes %d parameters",
                      fk->name, !args ? "args" : "an argument list", fk->p->nodes[i].name, k->desc.n_params);
  }
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_fused_kernel_launch")); /* before fk->lock, which a launch holds */
  pthread_mutex_lock(&fk->lock);
  for (size_t i = 0; i < fk->n_kernels; i++) fk->params[i].args = args && args[i] ? args[i] : no_args;
  /* No buffers: the kernels' data is in their argument lists. */
  sk_status st = sk__run_context_run(fk->p->default_ctx, fk->team, NULL, NULL, false, "sk_fused_kernel_launch");
  pthread_mutex_unlock(&fk->lock);
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

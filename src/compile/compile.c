/* sk_compile: copy the graph's nodes into executable form (each op tiled
 * for the team and its constants packed), copy the constants, plan
 * storage (program.h), build the steps and JIT-compile the super kernels.
 * The program object itself (lifetime, queries) is program.c's. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/numerics.h"
#include "core/struct_size.h"
#include "program/program.h"
#include "compile/compile.h"
#include "program/tokens.h"
#include "executors/jit/jit.h"
#include "runtime/watchdog.h"
#include "compile/fuse.h"
#include "options/options.h"

static sk_status fail_oom(void) { return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_compile: out of memory"); }

static sk_status copy_bindings(const sk__named_value *src, size_t n, const sk_graph *g, sk__io_binding **out) {
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return fail_oom();
  for (size_t i = 0; i < n; i++) {
    (*out)[i].name = sk__strdup(src[i].name);
    if (!(*out)[i].name) return fail_oom();
    (*out)[i].value = src[i].value;
    (*out)[i].desc = g->values[src[i].value].desc;
  }
  return SK_STATUS_OK;
}

/* The graph's constants: owned copies the program keeps (the graph may go
 * first), borrowed ones as they are. */
static sk_status copy_constants(const sk_graph *g, sk_program *p) {
  p->constants = calloc(g->n_constants ? g->n_constants : 1, sizeof *p->constants);
  if (!p->constants) return fail_oom();
  p->n_constants = g->n_constants;
  for (size_t i = 0; i < g->n_constants; i++) {
    const sk__constant *c = &g->constants[i];
    size_t bytes = sk__tensor_bytes(&g->values[c->value].desc);
    p->constants[i] = (sk__program_constant){c->data, false, bytes};
    p->constant_bytes += bytes;
    if (!c->owned) continue;
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) return fail_oom();
    if (bytes) memcpy(copy, c->data, bytes);
    p->constants[i] = (sk__program_constant){copy, true, bytes};
  }
  return SK_STATUS_OK;
}

/* The data of value v when it is a constant, else NULL (what a pack hook
 * sees of inputs that change from run to run). */
static void *constant_data(const sk_graph *g, const sk_program *p, sk_value v) {
  int c = g->values[v].constant_index;
  return c >= 0 ? (void *)p->constants[c].data : NULL;
}

/* Builds the executable node: flattened input tensors and io views; tiles
 * it and lets its op pack its constants. */
static sk_status prepare_node(const sk_graph *g, sk_program *p, const sk__node *src, int n_cores,
                              const sk__exec_node *packed_from, sk__exec_node *dst) {
  dst->def = src->def;
  dst->launch_only = src->launch_only;
  dst->name = sk__strdup(src->name);
  dst->scope = src->scope;
  dst->stream = src->stream;
  if (src->n_waits) {
    dst->waits = malloc(src->n_waits * sizeof(int));
    if (!dst->waits) return fail_oom();
    memcpy(dst->waits, src->waits, src->n_waits * sizeof(int));
    dst->n_waits = src->n_waits;
  }
  size_t total = 0;
  for (int s = 0; s < SK__MAX_SLOTS; s++) total += src->slot_count[s];
  dst->in_tensors = calloc(total ? total : 1, sizeof(sk__tensor));
  dst->in_values = calloc(total ? total : 1, sizeof(sk_value));
  dst->out_values = calloc(src->n_outputs ? src->n_outputs : 1, sizeof(sk_value));
  dst->io.out = calloc(src->n_outputs ? src->n_outputs : 1, sizeof(sk__tensor));
  dst->params = calloc(1, src->def->params_size ? src->def->params_size : 1);
  if (!dst->name || !dst->in_tensors || !dst->in_values || !dst->out_values || !dst->io.out || !dst->params)
    return fail_oom();
  if (src->def->clone_params) SK_RETURN_IF_ERROR(src->def->clone_params(dst->params, src->params));
  else memcpy(dst->params, src->params, src->def->params_size);
  size_t used = 0;
  for (int s = 0; s < SK__MAX_SLOTS; s++) {
    dst->io.in[s].tensors = dst->in_tensors + used;
    dst->io.in[s].count = src->slot_count[s];
    for (size_t j = 0; j < src->slot_count[s]; j++, used++) {
      dst->in_values[used] = src->slot_values[s][j];
      dst->in_tensors[used] = g->values[src->slot_values[s][j]].desc;
      dst->in_tensors[used].data = constant_data(g, p, src->slot_values[s][j]);
    }
  }
  dst->n_in_tensors = total;
  dst->io.n_out = src->n_outputs;
  for (size_t i = 0; i < src->n_outputs; i++) {
    dst->out_values[i] = src->outputs[i];
    dst->io.out[i] = g->values[src->outputs[i]].desc;
  }
  dst->io.params = dst->params;
  dst->io.name = dst->name;
  dst->io.isa = p->isa;
  dst->io.numerics = p->numerics;
  dst->io.run_error = NULL; /* each run context points it at its own */
  if (src->def->is_view) return SK_STATUS_OK;
  /* No output element: nothing to compute, so no blocks and no workspace
   * (an op would otherwise size its scratch by the other dims: fp32
   * [0, 2^37] would ask for terabytes). */
  if (!sk__node_has_output(dst)) return SK_STATUS_OK;
  SK_RETURN_IF_ERROR(src->def->tile(&dst->io, n_cores, &dst->tiling));
  dst->io.plan = dst->tiling.plan;
  dst->io.n_blocks = dst->tiling.n_blocks;
  if (packed_from) { /* another token bucket's pack: packing depends on no tiling or token count */
    dst->packed = packed_from->packed;
    dst->packed_shared = true;
    dst->io.packed = dst->packed;
  } else if (src->def->pack) {
    SK_RETURN_IF_ERROR(src->def->pack(&dst->io, &dst->packed, &dst->packed_bytes));
    dst->io.packed = dst->packed;
  }
  if (src->def->barriers_per_block > 0 && dst->tiling.n_blocks > 0) {
    /* Blocks that meet at a barrier must run at once: one per core. */
    if (dst->tiling.n_blocks > n_cores)
      return sk__fail(SK_STATUS_UNSUPPORTED, "%s (%s): uses a team barrier but tiled into %lld blocks for %d cores",
                      src->name, src->def->type, (long long)dst->tiling.n_blocks, n_cores);
    dst->eager_barrier = true;
  }
  return SK_STATUS_OK;
}

sk_status sk__label_eager_barrier(sk__exec_node *n) {
  if (!n->eager_barrier) return SK_STATUS_OK;
  size_t len = strlen(n->name) + strlen(n->def->type) + 16;
  if (!(n->watch_label = malloc(len))) return fail_oom();
  snprintf(n->watch_label, len, "op '%s' (%s)", n->name, n->def->type);
  return SK_STATUS_OK;
}

/* Alias classes and storage (program.h); the arena's offsets come later (arena_plan.c). */
static sk_status plan_storage(const sk_graph *g, sk_program *p) {
  p->root = malloc((g->n_values ? g->n_values : 1) * sizeof(sk_value));
  p->view_offset = calloc(g->n_values ? g->n_values : 1, sizeof(int64_t));
  p->storage = calloc(g->n_values ? g->n_values : 1, sizeof(sk__storage));
  bool *placed = calloc(g->n_values ? g->n_values : 1, sizeof(bool));
  if (!p->root || !p->view_offset || !p->storage || !placed) {
    free(placed);
    return fail_oom();
  }
  for (size_t v = 0; v < g->n_values; v++) p->root[v] = (sk_value)v;
  for (size_t i = 0; i < g->n_nodes; i++) /* nodes are in topological order */
    if (g->nodes[i].def->writes_input) { /* state written in place: the output is the input's storage */
      sk_value in = g->nodes[i].slot_values[0][0], out = g->nodes[i].outputs[0];
      p->root[out] = p->root[in];
      p->view_offset[out] = p->view_offset[in];
    } else if (g->nodes[i].def->is_view) {
      const sk__op_def *def = g->nodes[i].def;
      sk_value in = g->nodes[i].slot_values[0][0], out = g->nodes[i].outputs[0];
      p->root[out] = p->root[in];
      p->view_offset[out] = p->view_offset[in] + (def->view_offset ? def->view_offset(&p->nodes[i].io) : 0);
    }
  for (size_t i = 0; i < g->n_inputs; i++) {
    sk_value r = g->inputs[i].value;
    p->storage[r] = (sk__storage){SK_STORE_INPUT, i};
    placed[r] = true;
  }
  for (size_t i = 0; i < g->n_constants; i++) { /* an output that is a constant is copied out */
    sk_value r = g->constants[i].value;
    p->storage[r] = (sk__storage){SK_STORE_CONSTANT, i};
    placed[r] = true;
  }
  for (size_t j = 0; j < g->n_outputs; j++) {
    sk_value v = g->outputs[j].value, r = p->root[v];
    if (placed[r]) continue;
    /* A part of its root (a slice) cannot hold the whole: it is copied out. */
    if (p->view_offset[v] != 0 || sk__tensor_bytes(&g->values[v].desc) != sk__tensor_bytes(&g->values[r].desc))
      continue;
    p->storage[r] = (sk__storage){SK_STORE_OUTPUT, j};
    placed[r] = true;
  }
  /* The rest lives in the arena; its index is the class's size until
   * sk__plan_arena, once the steps are known, gives it an offset. */
  for (size_t v = 0; v < g->n_values; v++)
    if (p->root[v] == v && !placed[v]) p->storage[v] = (sk__storage){SK_STORE_ARENA, sk__align_up(sk__tensor_bytes(&g->values[v].desc))};
  free(placed);
  return SK_STATUS_OK;
}

sk_status sk_compile(const sk_graph *g, const sk_compile_config *cfg, sk_program **program_out) {
  sk__clear_error();
  if (!g || !program_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_compile: %s is NULL", !g ? "graph" : "program_out");
  *program_out = NULL;
  /* A maximum without a dynamic input changes nothing: static shapes. */
  bool dynamic = false;
  for (size_t i = 0; i < g->n_inputs; i++) dynamic = dynamic || g->values[g->inputs[i].value].desc.dynamic;
  if (dynamic) return sk__compile_tokens(g, cfg, program_out);
  return sk__compile_graph(g, cfg, 0, NULL, program_out);
}

sk_status sk__compile_graph(const sk_graph *g, const sk_compile_config *cfg, int64_t planned_tokens,
                            const sk_program *packed_from, sk_program **program_out) {
  size_t size = 0; /* no cfg: every field its default */
  if (cfg)
    SK_RETURN_IF_ERROR(sk__struct_size("sk_compile", "cfg->struct_size", "sk_compile_config", cfg->struct_size,
                                       offsetof(sk_compile_config, team) + sizeof(cfg->team),
                                       sizeof(sk_compile_config), &size));
#define HAS(field) (cfg && SK__HAS_FIELD(size, sk_compile_config, field))
  if (g->open_scope >= 0)
    return sk__fail(SK_STATUS_INVALID_STATE, "sk_compile: scope '%s' is still open (end it with sk_graph_end_scope)",
                    g->scopes[g->open_scope].name);
  bool launches = false; /* runtime-only fusion's graph: its kernels' effects are its output */
  for (size_t i = 0; i < g->n_nodes; i++) launches = launches || g->nodes[i].launch_only;
  if (g->n_outputs == 0 && !launches)
    return sk__fail(SK_STATUS_INVALID_STATE, "sk_compile: the graph has no outputs (mark one with sk_graph_mark_output)");
  sk_executor executor = SK_EXECUTOR_DEFAULT;
  if (HAS(executor)) executor = cfg->executor;
  if (executor < SK_EXECUTOR_DEFAULT || executor >= SK_EXECUTOR_COUNT_)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_compile: cfg->executor = %d: expected an sk_executor", (int)executor);
  SK_RETURN_IF_ERROR(sk__executor_resolve(executor, "sk_compile", &executor));
  sk_numerics numerics;
  SK_RETURN_IF_ERROR(sk__numerics_resolve(HAS(numerics) ? cfg->numerics : SK_NUMERICS_UNSET, "sk_compile", &numerics));
  /* Checked here, not only where a scope reads them: a bad string must fail
   * whatever the executor and whether or not any scope uses it. */
  if (HAS(default_options) && cfg->default_options) {
    sk__options o;
    sk_status opt_st = sk__options_parse(cfg->default_options, &o);
    if (opt_st != SK_STATUS_OK) return sk__fail_within(opt_st, "sk_compile: global options");
    sk__options_free(&o);
  }
  sk_program *p = sk__program_new();
  if (!p) return fail_oom();
  p->executor = executor;
  p->planned_tokens = planned_tokens;
  p->isa = sk__cpu_isa(); /* once: every node tiles, packs and runs for it */
  p->numerics = numerics;
  if (HAS(profile)) p->profile_launches = cfg->profile != 0;
  p->watchdog_ms = sk__watchdog_resolve_ms(HAS(watchdog_ms) ? cfg->watchdog_ms : 0);
  p->tiled_cores = cfg && cfg->team ? sk_team_num_cores(cfg->team) : 1;
  p->n_values = g->n_values;
  sk_status st = copy_bindings(g->inputs, g->n_inputs, g, &p->inputs);
  p->n_inputs = g->n_inputs;
  if (st == SK_STATUS_OK) st = copy_bindings(g->outputs, g->n_outputs, g, &p->outputs);
  p->n_outputs = g->n_outputs;
  if (st == SK_STATUS_OK) st = copy_constants(g, p);
  if (st == SK_STATUS_OK && !(p->nodes = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *p->nodes))) st = fail_oom();
  for (size_t i = 0; st == SK_STATUS_OK && i < g->n_nodes; i++) {
    p->n_nodes = i + 1;
    st = prepare_node(g, p, &g->nodes[i], p->tiled_cores, packed_from ? &packed_from->nodes[i] : NULL, &p->nodes[i]);
    p->packed_bytes += p->nodes[i].packed_bytes;
    if (p->nodes[i].tiling.workspace_bytes > p->workspace_bytes) p->workspace_bytes = p->nodes[i].tiling.workspace_bytes;
  }
  for (size_t i = 0; st == SK_STATUS_OK && i < p->n_nodes; i++) st = sk__label_eager_barrier(&p->nodes[i]);
  if (st == SK_STATUS_OK) st = plan_storage(g, p);
  if (st == SK_STATUS_OK) st = sk__program_build_steps(p, g, HAS(default_options) ? cfg->default_options : NULL);
  if (st == SK_STATUS_OK) st = sk__plan_arena(p);
  if (st != SK_STATUS_OK) {
    sk__program_release(p);
    return st;
  }
  /* Compile the super kernels; any that cannot be stay interpreted. */
  if (p->executor == SK_EXECUTOR_JIT || p->executor == SK_EXECUTOR_AUTO) {
    bool has_hook = HAS(on_jit_user);
    sk__program_jit_progress(p, has_hook ? cfg->on_jit : NULL, has_hook ? cfg->on_jit_user : NULL);
  }
  /* A token bucket's program runs only in its front program's contexts:
   * no default context of its own (an arena never used). */
  st = planned_tokens > 0 ? SK_STATUS_OK : sk__program_finish(p);
  if (st != SK_STATUS_OK) {
    sk_program_destroy(p);
    return st;
  }
  *program_out = p;
  return SK_STATUS_OK;
}
#undef HAS

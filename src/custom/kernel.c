/* sk_kernel_register: a user kernel becomes an op (custom.h). Also the
 * op's callbacks, and sk_kernel_barrier / sk_kernel_user for the entries. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fork.h"
#include "core/struct_size.h"
#include "custom/custom.h"

/* One lock over find-and-add, so two threads cannot both register a name. */
static sk__fork_mutex register_lock = SK__FORK_MUTEX_INITIALIZER;

/* ---- the op's callbacks ---------------------------------------------- */

/* A kernel's node takes its tensors as one list and gives one list. */
static const sk_op_slot_info x_slot[] = {SK__IN_LIST_OPT("x", "the kernel's input tensors, in parameter order")};
static const sk_op_output_info y_outputs[] = {SK__OUT_LIST("y", "the tensors its infer declares")};

/* "x[0] fp32 [4, 5], x[1] ..." (the first few inputs) for messages. */
static void describe_inputs(const sk__slot *x, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < x->count && i < 6 && len + 1 < size; i++) {
    char shape[SK_SHAPE_STR_MAX];
    sk__shape_str(x->tensors[i].rank, x->tensors[i].shape, shape, sizeof shape);
    int n = snprintf(buf + len, size - len, "%sx[%zu] %s %s", i ? ", " : "", i, sk_dtype_name(x->tensors[i].dtype),
                     shape);
    if (n < 0) break;
    len += (size_t)n;
  }
  if (x->count > 6 && len + 1 < size) snprintf(buf + len, size - len, ", ...");
  if (x->count == 0) snprintf(buf, size, "no inputs");
}

/* The op's build: the kernel is the one whose op definition is being built
 * (its def is embedded in the sk_kernel). */
static sk_status kernel_build(sk__build_ctx *ctx) {
  const sk__op_def *def = sk__ctx_def(ctx);
  const sk_kernel *k = (const sk_kernel *)(const void *)((const char *)def - offsetof(sk_kernel, def));
  const sk__slot *x = sk__ctx_slot(ctx, 0);
  const char *label = sk__ctx_op(ctx);
  size_t n_in = x->count;
  if (n_in > SK_KERNEL_MAX_PARAMS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel %s takes %d parameters, got %zu inputs", label, k->name,
                    k->desc.n_params, n_in);
  sk_dtype out_dtypes[SK_KERNEL_MAX_OUTPUTS];
  int out_ranks[SK_KERNEL_MAX_OUTPUTS];
  int64_t out_shapes[SK_KERNEL_MAX_OUTPUTS][SK_MAX_RANK];
  size_t n_out = SK_KERNEL_MAX_OUTPUTS;
  if (k->desc.infer) {
    sk_dtype in_dtypes[SK_KERNEL_MAX_PARAMS + 1];
    int in_ranks[SK_KERNEL_MAX_PARAMS + 1];
    const int64_t *in_shapes[SK_KERNEL_MAX_PARAMS + 1];
    for (size_t i = 0; i < n_in; i++) {
      in_dtypes[i] = x->tensors[i].dtype;
      in_ranks[i] = x->tensors[i].rank;
      in_shapes[i] = x->tensors[i].shape;
    }
    memset(out_ranks, 0, sizeof out_ranks);
    memset(out_shapes, 0, sizeof out_shapes);
    for (size_t o = 0; o < SK_KERNEL_MAX_OUTPUTS; o++) out_dtypes[o] = SK_DTYPE_INVALID;
    sk_status st = k->desc.infer(in_dtypes, in_ranks, in_shapes, n_in, out_dtypes, out_ranks, out_shapes, &n_out,
                                 k->desc.user);
    if (st != SK_STATUS_OK) {
      char inputs[512];
      describe_inputs(x, inputs, sizeof inputs);
      return sk__fail(st, "%s: kernel %s: its infer function rejected the inputs (%s): %s", label, k->name,
                      sk_status_string(st), inputs);
    }
    if (n_out < 1 || n_out > SK_KERNEL_MAX_OUTPUTS)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel %s: infer declared %zu outputs (expected 1..%d)", label,
                      k->name, n_out, SK_KERNEL_MAX_OUTPUTS);
    for (size_t o = 0; o < n_out; o++) {
      char why[128];
      if (out_dtypes[o] <= SK_DTYPE_INVALID || out_dtypes[o] >= SK_DTYPE_COUNT_)
        return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: kernel %s: infer gave output %zu the invalid dtype %d", label,
                        k->name, o, (int)out_dtypes[o]);
      if (!sk__shape_check(out_dtypes[o], out_ranks[o], out_shapes[o], why, sizeof why))
        return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: kernel %s: infer gave output %zu an invalid shape: %s", label,
                        k->name, o, why);
    }
  } else {
    if (n_in == 0)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "%s: kernel %s has no infer function, so its output is shaped like input x[0], but x is empty",
                      label, k->name);
    n_out = 1;
    out_dtypes[0] = x->tensors[0].dtype;
    out_ranks[0] = x->tensors[0].rank;
    memcpy(out_shapes[0], x->tensors[0].shape, sizeof out_shapes[0]);
  }
  if ((size_t)k->desc.n_params != n_in + n_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "%s: kernel %s takes %d parameters, but the node has %zu inputs and %zu outputs (%zu arguments)",
                    label, k->name, k->desc.n_params, n_in, n_out, n_in + n_out);
  sk__tensor *outs;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, n_out, &outs));
  for (size_t o = 0; o < n_out; o++) sk__tensor_init(&outs[o], out_dtypes[o], out_ranks[o], out_shapes[o]);
  sk__custom_params *params = sk__ctx_params(ctx);
  params->kernel = k;
  return SK_STATUS_OK;
}

static sk_status kernel_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  (void)n_cores; /* the kernel's block count is fixed by its descriptor */
  const sk__custom_params *params = io->params;
  *out = (sk__tiling){.n_blocks = params->kernel->desc.block_count,
                      .workspace_bytes = sk__align_up(params->kernel->desc.workspace_bytes)};
  return SK_STATUS_OK;
}

/* The argument list of a graph node: inputs, then outputs. */
static void *const *node_args(const sk__node_io *io, void **args) {
  const sk__custom_params *params = io->params;
  if (params->args) return params->args;
  size_t n = 0;
  for (size_t i = 0; i < io->in[0].count; i++) args[n++] = io->in[0].tensors[i].data;
  for (size_t o = 0; o < io->n_out; o++) args[n++] = io->out[o].data;
  return args;
}

static void kernel_run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const sk__custom_params *params = io->params;
  const sk_kernel *k = params->kernel;
  /* On the stack: blocks of one node run on several cores at once. */
  void *storage[SK_KERNEL_MAX_PARAMS];
  void *const *args = node_args(io, storage);
  sk_kernel_ctx ctx = {.barrier = k->desc.barriers_per_block ? io->barrier : NULL, .kernel = k, .io = io};
  k->desc.entry(args, block, k->desc.block_count, k->desc.workspace_bytes ? workspace : NULL, &ctx);
}

/* A kernel whose blocks meet at a barrier cannot run its blocks one after
 * another; its reference runs them at once on a temporary team, one block
 * per core. */
typedef struct ref_launch {
  const sk_kernel *k;
  const sk__node_io *io;
  void *const *args;
  sk__barrier_t *barrier;
  void **workspaces;
} ref_launch;

static void ref_block(void *arg, int64_t block, int core) {
  (void)core;
  const ref_launch *r = arg;
  sk_kernel_ctx ctx = {.barrier = r->barrier, .kernel = r->k, .io = r->io};
  r->k->desc.entry(r->args, block, r->k->desc.block_count, r->workspaces[block], &ctx);
}

static void reference_on_team(const sk_kernel *k, const sk__node_io *io, void *const *args) {
  int n = (int)k->desc.block_count;
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = n, .pin_threads = -1};
  ref_launch r = {.k = k, .io = io, .args = args};
  sk_team *team = NULL;
  r.barrier = sk__aligned_alloc(sizeof *r.barrier);
  r.workspaces = calloc((size_t)n, sizeof *r.workspaces);
  bool ok = r.barrier && r.workspaces && sk__barrier_init(r.barrier, n) == SK_STATUS_OK;
  for (int b = 0; ok && k->desc.workspace_bytes && b < n; b++) ok = (r.workspaces[b] = sk__aligned_alloc(k->desc.workspace_bytes));
  /* A kernel that skips its barrier must not hang the reference either:
   * the barrier is under the running program's watchdog, which fails the
   * run (run/run.c); outside a program run, under one of its own. */
  sk__watchdog own, *wd = sk__watchdog_current();
  if (!wd) sk__watchdog_init(wd = &own, sk__watchdog_resolve_ms(0));
  if (ok) sk__barrier_watch(r.barrier, wd, k->name, "at its team barrier (reference run)");
  if (ok) ok = sk_team_create(&cfg, &team) == SK_STATUS_OK;
  if (ok) ok = sk_team_launch(team, ref_block, &r, n) == SK_STATUS_OK;
  if (ok && wd == &own && sk__watchdog_tripped(&own)) ok = sk__watchdog_take(&own) == SK_STATUS_OK;
  if (!ok)
    sk__log(SK_LOG_ERROR, "kernel %s: reference: cannot run its %d blocks at once (they meet at a barrier): %s",
            k->name, n, sk_last_error());
  sk_team_destroy(team);
  for (int b = 0; r.workspaces && b < n; b++) sk__aligned_free(r.workspaces[b]);
  free(r.workspaces);
  sk__aligned_free(r.barrier);
}

/* The reference: every block in order on the calling thread (for kernels
 * with barriers and one block, the barrier has one participant). */
static void kernel_reference(const sk__node_io *io) {
  const sk__custom_params *params = io->params;
  const sk_kernel *k = params->kernel;
  void *storage[SK_KERNEL_MAX_PARAMS];
  void *const *args = node_args(io, storage);
  if (k->desc.barriers_per_block > 0 && k->desc.block_count > 1) {
    reference_on_team(k, io, args);
    return;
  }
  void *workspace = NULL;
  if (k->desc.workspace_bytes && !(workspace = sk__aligned_alloc(k->desc.workspace_bytes))) {
    sk__log(SK_LOG_ERROR, "kernel %s: reference: out of memory for its %zu-byte workspace", k->name,
            k->desc.workspace_bytes);
    return;
  }
  sk_kernel_ctx ctx = {.barrier = NULL, .kernel = k, .io = io};
  for (int64_t b = 0; b < k->desc.block_count; b++) k->desc.entry(args, b, k->desc.block_count, workspace, &ctx);
  sk__aligned_free(workspace);
}

/* ---- public entry points --------------------------------------------- */

sk_status sk_kernel_barrier(sk_kernel_ctx *ctx) {
  /* Not cleared on success: a barrier is on a block's hot path. */
  if (!ctx) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_kernel_barrier: ctx is NULL (pass the block's ctx)");
  if (!ctx->barrier || sk__barrier_wait(ctx->barrier)) return SK_STATUS_OK;
  return SK_STATUS_TIMEOUT; /* the watchdog abandoned the launch: the block should return */
}

void *sk_kernel_user(const sk_kernel_ctx *ctx) { return ctx ? ctx->kernel->desc.user : NULL; }

sk_status sk_kernel_arg_info(const sk_kernel_ctx *ctx, int i, sk_dtype *dtype_out, int *rank_out, int64_t *shape_out) {
  if (!ctx) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_kernel_arg_info: ctx is NULL");
  const sk__node_io *io = ctx->io;
  size_t n_in = io && !((const sk__custom_params *)io->params)->args ? io->in[0].count : 0;
  size_t n_out = io && !((const sk__custom_params *)io->params)->args ? io->n_out : 0;
  if (i < 0 || (size_t)i >= n_in + n_out)
    return sk__fail(SK_STATUS_NOT_FOUND, "sk_kernel_arg_info: kernel %s: argument %d is not a tensor of a graph node "
                    "(the node has %zu)", ctx->kernel->name, i, n_in + n_out);
  const sk__tensor *t = (size_t)i < n_in ? &io->in[0].tensors[i] : &io->out[(size_t)i - n_in];
  if (dtype_out) *dtype_out = t->dtype;
  if (rank_out) *rank_out = t->rank;
  if (shape_out) memcpy(shape_out, t->shape, sizeof(int64_t) * (size_t)t->rank);
  return SK_STATUS_OK;
}

#define MIN_DESC_SIZE (offsetof(sk_kernel_desc, unfusable) + sizeof(int))
#define FULL_DESC_SIZE (offsetof(sk_kernel_desc, user) + sizeof(void *))
#define MAX_BLOCKS ((int64_t)1 << 20)

static bool name_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

/* Checks every field; copies desc into k (name included). */
static sk_status check_desc(const sk_kernel_desc *desc, sk_kernel *k) {
  const char *fn = "sk_kernel_register";
  size_t size;
  SK_RETURN_IF_ERROR(sk__struct_size(fn, "desc->struct_size", "sk_kernel_desc", desc->struct_size, MIN_DESC_SIZE,
                                     sizeof(sk_kernel_desc), &size));
  if (!desc->name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: desc->name is NULL", fn);
  size_t len = strlen(desc->name);
  if (len == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: desc->name is empty", fn);
  if (len >= sizeof k->name)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: name '%.40s...' is %zu characters long (at most %zu)", fn,
                    desc->name, len, sizeof k->name - 1);
  for (size_t i = 0; i < len; i++)
    if (!name_char_ok(desc->name[i]))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "%s: name '%s': character %zu is not allowed (accepted: letters, digits, '_', '-', '.')", fn,
                      desc->name, i);
  const char *nm = desc->name;
  if (!desc->entry) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel '%s': entry is NULL", fn, nm);
  if (desc->type != SK_KERNEL_TYPE_VECTOR && desc->type != SK_KERNEL_TYPE_CUBE && desc->type != SK_KERNEL_TYPE_MIX)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "%s: kernel '%s': type = %d: expected SK_KERNEL_TYPE_VECTOR (0), SK_KERNEL_TYPE_CUBE (1) or "
                    "SK_KERNEL_TYPE_MIX (2)",
                    fn, nm, (int)desc->type);
  if (desc->block_count < 1 || desc->block_count > MAX_BLOCKS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel '%s': block_count = %lld: expected 1..%lld", fn, nm,
                    (long long)desc->block_count, (long long)MAX_BLOCKS);
  if (desc->n_params < 0 || desc->n_params > SK_KERNEL_MAX_PARAMS)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel '%s': n_params = %d: expected 0..%d", fn, nm,
                    desc->n_params, SK_KERNEL_MAX_PARAMS);
  if (desc->barriers_per_block < 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel '%s': barriers_per_block = %d: expected >= 0", fn, nm,
                    desc->barriers_per_block);
  if (desc->unfusable != 0 && desc->unfusable != 1)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel '%s': unfusable = %d: expected 0 or 1", fn, nm,
                    desc->unfusable);
  if (desc->workspace_bytes > ((size_t)1 << 40))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: kernel '%s': workspace_bytes = %zu is implausibly large", fn, nm,
                    desc->workspace_bytes);
  memset(&k->desc, 0, sizeof k->desc);
  memcpy(&k->desc, desc, size);
  k->desc.struct_size = sizeof k->desc;
  if (size < FULL_DESC_SIZE) k->desc.infer = NULL, k->desc.user = NULL;
  memcpy(k->name, desc->name, len + 1);
  k->desc.name = k->name;
  return SK_STATUS_OK;
}

static sk__kernel_kind kind_of(sk_kernel_type type) {
  switch (type) {
    case SK_KERNEL_TYPE_CUBE: return SK_KERNEL_CUBE;
    case SK_KERNEL_TYPE_MIX: return SK_KERNEL_MIX;
    default: return SK_KERNEL_VECTOR;
  }
}

sk_status sk_kernel_register(const sk_kernel_desc *desc, sk_kernel **kernel_out) {
  sk__clear_error();
  if (!desc || !kernel_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_kernel_register: %s is NULL", !desc ? "desc" : "kernel_out");
  *kernel_out = NULL;
  sk_kernel *k = calloc(1, sizeof *k);
  if (!k) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_kernel_register: out of memory");
  sk_status st = check_desc(desc, k);
  if (st != SK_STATUS_OK) {
    free(k);
    return st;
  }
  k->def = (sk__op_def){
      .type = k->name,
      SK__SCHEMA_INPUTS(x_slot),
      SK__SCHEMA_OUTPUTS(y_outputs),
      .doc = "a registered kernel (sk_kernel_register)",
      .kind = kind_of(k->desc.type),
      .tile = kernel_tile,
      .run_block = kernel_run_block,
      .reference = kernel_reference,
      .params_size = sizeof(sk__custom_params),
      .unfusable = k->desc.unfusable != 0,
      .barriers_per_block = k->desc.barriers_per_block,
  };
  k->def.build = kernel_build;
  sk__fork_mutex_lock(&register_lock);
  if (sk__op_find(k->name))
    st = sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_kernel_register: kernel '%s': an op or kernel of that name already exists",
                  k->name);
  if (st == SK_STATUS_OK) st = sk__op_register(&k->def);
  sk__fork_mutex_unlock(&register_lock);
  if (st != SK_STATUS_OK) {
    free(k);
    return st;
  }
  *kernel_out = k;
  return SK_STATUS_OK;
}

/* The operator interface. Each op lives in one file of src/ops/ and provides:
 *   build      validate inputs and attributes, infer output shapes and
 *              dtypes, keep the parsed attributes (at graph-building time);
 *   tile       split the work into blocks for a team (at compile time);
 *   run_block  the fast kernel for one block (at run time, on a core);
 *   reference  a plain implementation of the whole op: the test oracle.
 */
#ifndef SK_OPS_OP_H
#define SK_OPS_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"
#include "core/tensor.h"
#include "superkernel.h"

#define SK__MAX_SLOTS 8

/* What a sub-kernel exercises (the seed's AIC / AIV / MIX); the planner of
 * the SuperKernel issue uses it, eager execution ignores it. */
typedef enum sk__kernel_kind {
  SK_KERNEL_VECTOR = 0,
  SK_KERNEL_CUBE = 1,
  SK_KERNEL_MIX = 2,
} sk__kernel_kind;

/* One input slot as the op sees it: a list of tensors (count 0 = absent). */
typedef struct sk__slot {
  const sk__tensor *tensors;
  size_t count;
} sk__slot;

/* The op-independent view of a node for build / tile / run / reference. At
 * build time the tensors carry shapes and dtypes and no data; at run time
 * their data pointers are bound. */
typedef struct sk__node_io {
  sk__slot in[SK__MAX_SLOTS]; /* indexed like the op's schema inputs */
  sk__tensor *out;            /* n_out outputs */
  size_t n_out;
  const void *params;         /* the op's parsed attributes */
  const void *plan;           /* the op's block table from tile(), or NULL */
  int64_t n_blocks;           /* the block count tile() chose */
  /* For ops with barriers_per_block > 0: the barrier their blocks call
   * (sk__barrier_wait), over every block of a launch, or in a super kernel
   * over the sub-kernel's cores (idle ones complement it, feed-sync-all). */
  struct sk__barrier *barrier;
  /* What the op's pack hook made of its constant inputs at compile (e.g.
   * weights in micro-kernel panels), or NULL: run_block then works from the
   * tensors as given. */
  const void *packed;
  /* The node's name, and where a block reports an error in data only a run
   * can see (core/run_error.h; NULL: nowhere, outside a program). */
  const char *name;
  struct sk__run_error *run_error;
  /* A program with a run-time token count (SK_DIM_DYNAMIC): the tensors'
   * shapes, the params and the tiling are those of planned_tokens tokens,
   * and this run has tokens <= planned_tokens. A dynamic tensor then has
   * only shape[0] / planned_tokens * tokens live rows; a block computes its
   * planned range clipped to the live rows and touches nothing past them
   * (op_util.h: sk__live_rows, sk__live_numel, sk__clip). Both 0 in a
   * static program: every row is live. */
  int64_t tokens, planned_tokens;
  /* The ISA the node's kernels run, chosen once when the program was
   * compiled (sk__cpu_isa() then): tile, pack, run_block and kernel_name
   * read it here and never ask the CPU, so a node's packed panels, tiling
   * and micro-kernels always agree. An io made outside a program leaves
   * it 0, the scalar path: slower, the same bits. */
  sk__isa isa;
  /* The program's numerics contract (sk_numerics, resolved: DEFAULT or
   * AMX), read like isa: by packing, the kernels and the references. An io
   * made outside a program leaves it 0, which reads as DEFAULT. */
  sk_numerics numerics;
} sk__node_io;

typedef struct sk__build_ctx sk__build_ctx;

/* A byte range [begin, end) within one tensor; empty when begin >= end. */
typedef struct sk__span {
  int64_t begin, end;
} sk__span;

/* Block tiling of one node for a team of n_cores. */
typedef struct sk__tiling {
  int64_t n_blocks;
  size_t workspace_bytes; /* per core, 64-byte aligned scratch */
  void *plan;             /* op-owned block table (malloc'd; freed with free) */
  /* The blocks' costs are known only at run time: they follow data (an
   * expert routing) or the speed of each core's share of memory (a large
   * weight streamed). A super kernel then lets its cores claim them one at
   * a time instead of dealing them out (plan.h, SK_TASK_CLAIM). */
  bool claim;
} sk__tiling;

typedef struct sk__op_def {
  const char *type;
  /* The declarative schema (superkernel.h, sk_op_schema), read by
   * sk_graph_add_op's generic checks, sk_op_info and the tests: input slots
   * in order (slot i of sk__node_io.in is inputs[i]; at most SK__MAX_SLOTS),
   * attributes with kinds, defaults and ranges, outputs. */
  const sk_op_slot_info *inputs;
  size_t n_inputs;
  const sk_op_attr_info *attrs;
  size_t n_attrs;
  const sk_op_output_info *outputs;
  size_t n_outputs;
  const char *doc;
  sk__kernel_kind kind;
  /* A view op (reshape, squeeze, slice) launches nothing: its output
   * aliases its input (slot 0, tensor 0). */
  bool is_view;
  /* A view's first byte within its input: slice along dim 0 starts inside
   * it. NULL = 0 (the view starts where the input does). */
  int64_t (*view_offset)(const sk__node_io *io);
  /* An op that writes state in place (kv_cache_write): its output 0 is the
   * storage of input slot 0 (tensor 0), which it updates, so the output
   * aliases that input as a view's does, but the op launches and writes.
   * The input must be a graph input (state the caller owns and binds each
   * run) that no other node reads and no output marks: sk_graph_add_op
   * refuses anything else, and a later node that reads it (it would see
   * the state before or after the write depending on the schedule) too.
   * Readers take the output instead, so the dataflow orders them after
   * the write. Its reference copies the input to the output when they
   * differ (a test's own buffers) and writes there. */
  bool writes_input;
  sk_status (*build)(sk__build_ctx *ctx);
  /* Fills *out; a view op has none. Tiling may depend on the team size;
   * results never do (every op computes each element in a fixed order). */
  sk_status (*tile)(const sk__node_io *io, int n_cores, sk__tiling *out);
  void (*run_block)(const sk__node_io *io, int64_t block, void *workspace);
  void (*reference)(const sk__node_io *io);
  /* The micro-kernels its blocks run on this CPU (the ISA the program runs
   * with), for sk plan and sk_program_describe; NULL: none worth naming. */
  const char *(*kernel_name)(const sk__node_io *io);
  size_t params_size; /* bytes of the parsed attribute struct */
  /* The bytes block `block` reads from each input tensor (reads[i], inputs
   * numbered slot after slot as sk__io_input_index gives) and writes to each
   * output (writes[o]). The caller fills both with whole-tensor spans first;
   * the op narrows what it knows (an empty span: not touched). NULL = whole
   * tensors. The planner uses it to wait only for the producer blocks whose
   * outputs a block reads. */
  void (*footprint)(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes);
  /* Sub-kernel descriptor flags: unfusable when the op cannot join a super
   * kernel (it then runs on its own launch, per strict-scope-check); the
   * number of team barriers each block calls (0 for every built-in op).
   * An op with barriers must tile into at most as many blocks as cores. */
  bool unfusable;
  int barriers_per_block;
  /* run_block handles a run-time token count (io->tokens below
   * io->planned_tokens: see sk__node_io). An op without it refuses dynamic
   * inputs when the node is added. Its footprint stays the planned one (a
   * superset of what a clipped block touches). */
  bool dynamic_rows;
  /* Packs constant operands once, at compile, into the layout run_block
   * reads, so no run repeats it. Called after tile with the data of
   * constant inputs bound and every other input's data NULL; sets *packed
   * (sk__aligned_alloc'd; the program frees it) and *bytes, or leaves them
   * NULL / 0 when nothing is worth packing. The result must not depend on
   * the tiling (the planner re-tiles nodes for their core sets). run_block
   * finds it in io->packed; the reference never reads it. NULL: no packing. */
  sk_status (*pack)(const sk__node_io *io, void **packed, size_t *bytes);
  /* Deep-copies params into dst (params_size bytes); NULL = memcpy. On
   * failure dst is left for free_params. */
  sk_status (*clone_params)(void *dst, const void *src);
  /* Frees what params point to (not params itself); NULL when nothing. */
  void (*free_params)(void *params);
} sk__op_def;

/* Index of input tensor j of slot s in the flattened input numbering. */
static inline size_t sk__io_input_index(const sk__node_io *io, int s, size_t j) {
  size_t index = j;
  for (int k = 0; k < s; k++) index += io->in[k].count;
  return index;
}

/* The registry: NULL when the type is unknown. */
const sk__op_def *sk__op_find(const char *type);
/* Adds an op (custom kernels, tests); def must outlive every graph and
 * program that uses it. The type must be new. */
sk_status sk__op_register(const sk__op_def *def);

/* ---- build-time helpers, implemented in build_ctx.c ---- */

/* The op definition being built (ops registered at run time find their
 * own data through it). */
const sk__op_def *sk__ctx_def(const sk__build_ctx *ctx);
/* The node being built, for messages: "grouped_matmul" or its node name. */
const char *sk__ctx_op(const sk__build_ctx *ctx);
/* Input slot i (tensors without data). */
const sk__slot *sk__ctx_slot(const sk__build_ctx *ctx, int i);
/* Fails naming the slot when slot i is absent / holds more than one tensor;
 * returns its only tensor otherwise. */
sk_status sk__ctx_single(sk__build_ctx *ctx, int i, const sk__tensor **t);

/* The whole build of an elementwise op of one input whose schema says
 * everything (gelu, sigmoid): one output of slot 0's dtype and shape. */
sk_status sk__build_like_x(sk__build_ctx *ctx);

/* Attribute getters. sk_graph_add_op has already checked every given
 * attribute against the schema (known name, kind, range, required ones
 * present), so a getter only reads: the given value, else the schema's
 * default (0 for an attribute the op defaults itself: test
 * sk__ctx_has_attr first). Asking for a name the schema lacks is a bug in
 * the op, reported as SK_STATUS_INTERNAL. */
sk_status sk__ctx_attr_int(sk__build_ctx *ctx, const char *name, int64_t *out);
sk_status sk__ctx_attr_float(sk__build_ctx *ctx, const char *name, double *out);
/* ints: *out points into the caller's descriptor memory (valid during
 * build only; copy it into params); *n = 0 when absent. */
sk_status sk__ctx_attr_ints(sk__build_ctx *ctx, const char *name, const int64_t **out, size_t *n);
bool sk__ctx_has_attr(const sk__build_ctx *ctx, const char *name);

/* The op's params struct (params_size bytes, zeroed) to fill. */
void *sk__ctx_params(sk__build_ctx *ctx);
/* Declares the node's outputs (at most SK__MAX_OUTPUTS); returns them to fill
 * with dtype and shape. */
sk_status sk__ctx_set_outputs(sk__build_ctx *ctx, size_t n, sk__tensor **outs);

#define SK__MAX_OUTPUTS 1024

/* ---- schema declarations, so an op's table reads like its signature ---- */

#define SK__COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* .inputs/.attrs/.outputs with their counts from arrays. */
#define SK__SCHEMA_INPUTS(a) .inputs = (a), .n_inputs = SK__COUNT(a)
#define SK__SCHEMA_ATTRS(a) .attrs = (a), .n_attrs = SK__COUNT(a)
#define SK__SCHEMA_OUTPUTS(a) .outputs = (a), .n_outputs = SK__COUNT(a)

/* An input slot: its name, its doc line, then its data rules as
 * designated initializers (superkernel.h, sk_op_slot_info), e.g.
 *   SK__IN("x", "[T, E] fp32, fp16 or bf16", .dtypes = SK__FLOATS, SK__RANK(2, 2))
 * so that sk_graph_add_op checks them with one message for every op. */
#define SK__IN(nm, ...) {.name = (nm), .doc = __VA_ARGS__}
#define SK__IN_OPT(nm, ...) {.name = (nm), .is_optional = 1, .doc = __VA_ARGS__}
#define SK__IN_LIST(nm, ...) {.name = (nm), .is_list = 1, .doc = __VA_ARGS__}
#define SK__IN_LIST_OPT(nm, ...) {.name = (nm), .is_list = 1, .is_optional = 1, .doc = __VA_ARGS__}
/* Data rules: the float dtypes; a rank range (hi < 0: no bound); the dtype
 * of another slot (by name: the macro takes the index of that slot's
 * enum constant, SLOT_X etc., or the index directly). */
#define SK__FLOATS (SK_DTYPE_BIT(SK_FP32) | SK_DTYPE_BIT(SK_FP16) | SK_DTYPE_BIT(SK_BF16))
#define SK__DTYPES1(a) SK_DTYPE_BIT(a)
#define SK__RANK(lo, hi) .min_rank = (lo), .max_rank = (hi)
#define SK__SAME_DTYPE_AS(slot) .same_dtype_as = 1 + (slot)
#define SK__OUT(nm, d) {.name = (nm), .doc = (d)}
#define SK__OUT_LIST(nm, d) {.name = (nm), .is_list = 1, .doc = (d)}

/* An int with a default and a legal range [lo, hi]. */
#define SK__ATTR_INT(nm, dflt, lo, hi, d)                                                            \
  {.name = (nm), .kind = SK_ATTR_KIND_INT, .has_default = 1, .default_int = (dflt), .has_range = 1, \
   .min = (lo), .max = (hi), .doc = (d)}
/* An int the caller must give, in [lo, hi]. */
#define SK__ATTR_INT_REQUIRED(nm, lo, hi, d) \
  {.name = (nm), .kind = SK_ATTR_KIND_INT, .is_required = 1, .has_range = 1, .min = (lo), .max = (hi), .doc = (d)}
/* An int whose default the op derives from its inputs (doc says how). */
#define SK__ATTR_INT_DERIVED(nm, lo, hi, d) \
  {.name = (nm), .kind = SK_ATTR_KIND_INT, .has_range = 1, .min = (lo), .max = (hi), .doc = (d)}
#define SK__ATTR_FLOAT(nm, dflt, d) \
  {.name = (nm), .kind = SK_ATTR_KIND_FLOAT, .has_default = 1, .default_float = (dflt), .doc = (d)}
/* A list of ints (absent: empty), checked by the op. */
#define SK__ATTR_INTS(nm, d) {.name = (nm), .kind = SK_ATTR_KIND_INTS, .doc = (d)}
#define SK__ATTR_INTS_REQUIRED(nm, d) {.name = (nm), .kind = SK_ATTR_KIND_INTS, .is_required = 1, .doc = (d)}

/* dtype-valued attributes range over the valid sk_dtype values. */
#define SK__DTYPE_MIN ((int64_t)SK_DTYPE_INVALID + 1)
#define SK__DTYPE_MAX ((int64_t)SK_DTYPE_COUNT_ - 1)

/* The schema entry of an attribute / input slot by name; NULL / -1 when the
 * op has none. */
const sk_op_attr_info *sk__op_attr(const sk__op_def *def, const char *name);
int sk__op_slot(const sk__op_def *def, const char *name);

#endif

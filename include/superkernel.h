/*
 * superkernel.h — the public API of superkernel, the only installed header.
 *
 * superkernel builds a graph of neural-network operators, compiles it into a
 * program, and runs the program on a persistent team of CPU cores. Every call
 * returns an sk_status; on failure sk_last_error() gives a message that names
 * the culprit (op, input, expected vs actual). The library never aborts or
 * exits on a caller's mistake.
 *
 * Typical use:
 *
 *   sk_graph *g;  sk_graph_create(&g);
 *   sk_value x;   sk_graph_add_input(g, "x", SK_FP16, 2, (int64_t[]){64, 128}, &x);
 *   sk_value y;   sk_graph_add_op(g, &(sk_op_desc){.op = "square", ...}, &y, 1, NULL);
 *   sk_graph_mark_output(g, y, "y");
 *   sk_program *p; sk_compile(g, NULL, &p);
 *   sk_program_run(p, team, inputs, 1, outputs, 1);
 */
#ifndef SUPERKERNEL_H
#define SUPERKERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One macro marks every exported symbol (the library builds with
 * -fvisibility=hidden, so anything not marked stays internal). */
#if defined(SK_BUILDING_LIBRARY) && defined(__GNUC__)
#define SK_API __attribute__((visibility("default")))
#else
#define SK_API
#endif

/* Structs that may grow (sk_team_config, sk_op_desc, sk_kernel_desc,
 * sk_compile_config) start with `size_t struct_size`, one rule for all: set
 * it to sizeof the struct as your header has it, or leave it 0 for this
 * header's size. Fields past it take their defaults, so a program built
 * against an older header keeps working; a size larger than this library
 * knows (a newer header) or too small to hold the struct's first release
 * is an error naming the accepted range. */

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/* The version of this header. CMake's project(superkernel VERSION ...) is the
 * one source: configuring fails when these numbers differ from it. */
#define SK_VERSION_MAJOR 0
#define SK_VERSION_MINOR 1
#define SK_VERSION_PATCH 0
/* "0.1.0", spelled from the three numbers above. */
#define SK__VERSION_STR(x) #x
#define SK__VERSION_XSTR(x) SK__VERSION_STR(x)
#define SK_VERSION_STRING \
  SK__VERSION_XSTR(SK_VERSION_MAJOR) "." SK__VERSION_XSTR(SK_VERSION_MINOR) "." SK__VERSION_XSTR(SK_VERSION_PATCH)
/* One number that orders versions: major * 10000 + minor * 100 + patch. */
#define SK_VERSION_NUMBER (SK_VERSION_MAJOR * 10000 + SK_VERSION_MINOR * 100 + SK_VERSION_PATCH)

/* The version of the library actually linked or loaded ("0.1.0", and
 * SK_VERSION_NUMBER's form), which may differ from the header a program was
 * compiled with when a shared library is swapped underneath it. */
SK_API const char *sk_version(void);
SK_API int sk_version_number(void);

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* The one list of status codes: XX(NAME, "description"). It produces both the
 * enum and sk_status_string(). */
#define SK_STATUS_MAP(XX)                                                     \
  XX(OK, "success")                                                           \
  XX(INVALID_ARGUMENT, "invalid argument")                                    \
  XX(INVALID_SHAPE, "invalid shape")                                          \
  XX(INVALID_DTYPE, "invalid data type")                                      \
  XX(INVALID_ATTRIBUTE, "invalid attribute")                                  \
  XX(INVALID_STATE, "invalid state")                                          \
  XX(NOT_FOUND, "not found")                                                  \
  XX(UNSUPPORTED, "unsupported")                                              \
  XX(OUT_OF_MEMORY, "out of memory")                                          \
  XX(SYSTEM_ERROR, "system error")                                            \
  XX(INTERNAL, "internal error")                                              \
  XX(TIMEOUT, "timed out") /* a wait inside a run passed the watchdog's limit */

typedef enum sk_status {
#define SK__STATUS_ENUM(name, text) SK_STATUS_##name,
  SK_STATUS_MAP(SK__STATUS_ENUM)
#undef SK__STATUS_ENUM
  SK_STATUS_COUNT_
} sk_status;

/* A short fixed description of a status ("invalid shape"); never NULL. */
SK_API const char *sk_status_string(sk_status status);

/* The detailed message of the last failed call on this thread, e.g.
 * "grouped_matmul: input x[1]: expected K = 180 (weight[1] rows), got 181".
 * Empty string when the last call succeeded or set no message. */
SK_API const char *sk_last_error(void);

/* ------------------------------------------------------------------------ */
/* Logging                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum sk_log_level {
  SK_LOG_DEBUG = 0,
  SK_LOG_INFO = 1,
  SK_LOG_WARN = 2,
  SK_LOG_ERROR = 3,
  SK_LOG_OFF = 4
} sk_log_level;

/* A log hook receives every message at or above the current level. The
 * default one writes them to stderr, each distinct warning text once per
 * process (as Python's warnings do). */
typedef void (*sk_log_fn)(sk_log_level level, const char *message, void *user);

/* Installs a hook (NULL restores the default, which writes to stderr).
 * The default level is SK_LOG_WARN, or $SK_LOG_LEVEL (debug|info|warn|error|off;
 * any other value logs a warning and means warn). */
SK_API void sk_set_log_handler(sk_log_fn fn, void *user);
/* The default hook itself: "superkernel: LEVEL: message" on stderr, each
 * distinct warning once. For a hook that adds to it rather than replace it. */
SK_API void sk_log_default(sk_log_level level, const char *message);
SK_API void sk_set_log_level(sk_log_level level);
SK_API sk_log_level sk_get_log_level(void);

/* ------------------------------------------------------------------------ */
/* Data types                                                                */
/* ------------------------------------------------------------------------ */

typedef enum sk_dtype {
  SK_DTYPE_INVALID = 0,
  SK_FP32,
  SK_FP16,
  SK_BF16,
  SK_INT8,
  SK_INT32,
  SK_INT64,
  /* One byte each. bool holds 0 or 1 where the library writes it; wherever
   * it is read, any nonzero byte means true. */
  SK_BOOL,
  SK_UINT8,
  SK_DTYPE_COUNT_
} sk_dtype;

/* "fp32", "fp16", ..., "bool", "uint8"; "invalid" for anything else. */
SK_API const char *sk_dtype_name(sk_dtype dtype);
/* Bytes per element; 0 for an invalid dtype. */
SK_API size_t sk_dtype_size(sk_dtype dtype);

/* Exact conversions: widening is exact; narrowing rounds to nearest even,
 * keeps NaN a NaN (quiet), overflows to Inf and produces subnormals. */
SK_API float sk_fp16_to_fp32(uint16_t bits);
SK_API uint16_t sk_fp32_to_fp16(float value);
SK_API float sk_bf16_to_fp32(uint16_t bits);
SK_API uint16_t sk_fp32_to_bf16(float value);

#define SK_MAX_RANK 8

/* ------------------------------------------------------------------------ */
/* Quantization parameters                                                   */
/* ------------------------------------------------------------------------ */

/* Packs n fp32 scales (and optional offsets) into quant_matmul's int64 scale
 * form (torch_npu's npu_trans_quant_param):
 *   packed = (bits(scale) & 0xFFFFE000)            scale truncated to 19 bits
 *          | 1 << 46                               flag
 *          | (clip(rint(offset), -256, 255) & 0x1FF) << 37
 * offset may be NULL (offset 0). A NaN or infinite offset is an error naming
 * its index. */
SK_API sk_status sk_trans_quant_param(const float *scale, const float *offset, size_t n,
                                      int64_t *packed_out);
/* Decodes one packed value: the 19-bit scale and the 9-bit signed offset. */
SK_API void sk_decode_quant_param(int64_t packed, float *scale_out, float *offset_out);

/* ------------------------------------------------------------------------ */
/* Core team                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct sk_team sk_team;

typedef struct sk_team_config {
  size_t struct_size; /* sizeof(sk_team_config) or 0: the struct_size rule above */
  /* Number of cores (threads, the caller included). 0 = the CPUs available
   * to the process (sched_getaffinity), or $SK_NUM_THREADS when set. */
  int num_cores;
  /* Whether each worker thread is pinned to one CPU (the calling thread,
   * core 0, never is):
   *    0  auto (default): $SK_PIN_THREADS decides when set (auto, always or
   *       never; anything else logs a warning and means auto); auto pins
   *       worker c to the c-th available CPU after the caller's when the
   *       team is no larger than the CPU set, and pins nothing otherwise.
   *    1  always: the same, with a warning when the team is larger.
   *   -1  never: the OS scheduler places the workers.
   * Pinning keeps a woken worker off the CPU of the launcher spinning for it
   * (4x faster launches after idle here). Use never (-1, or
   * SK_PIN_THREADS=never) next to another runtime whose threads also hold
   * CPUs, e.g. inside PyTorch, whose intra-op (OpenMP) threads may be bound
   * and spin after each op: fixed workers cannot step aside from them. Then
   * also size the team (num_cores) so both pools fit the CPUs. */
  int pin_threads;
  /* The CPUs the team runs on, in order (NULL: the calling thread's
   * affinity mask, as above). cpus[0] is where the caller is expected to
   * run (it is never moved); with pinning (auto or always) worker c is
   * pinned to cpus[c], with never each worker may run on any of them. For a
   * caller whose own thread is bound to one CPU by another runtime (vLLM
   * binds each OpenMP thread of a rank to one of the rank's CPUs), whose
   * workers would otherwise inherit that one CPU. num_cpus: 1..1 << 20,
   * no fewer than num_cores (num_cores 0: num_cpus cores); every entry a
   * distinct CPU number in 0..(1 << 20) - 1. */
  const int *cpus;
  int num_cpus;
} sk_team_config;

/* Creates a persistent team: num_cores - 1 worker threads plus the calling
 * thread, which serves as core 0 of every launch. cfg may be NULL.
 *
 * fork(): the child has only the thread that called fork(), so a team made
 * before the fork has no workers in the child. Every launch and run on it
 * there (sk_team_launch, sk_program_run*, sk_run_context_run,
 * sk_fused_kernel_launch) fails at once with SK_STATUS_INVALID_STATE naming
 * the process that made it; destroying it in the child is safe. Create a
 * new team in the child: programs compiled before the fork run on it. */
SK_API sk_status sk_team_create(const sk_team_config *cfg, sk_team **team_out);
/* Stops and joins the workers. NULL is accepted. In a child after fork(),
 * a team made before the fork is only freed (its workers are not there). */
SK_API void sk_team_destroy(sk_team *team);
SK_API int sk_team_num_cores(const sk_team *team);

/* A kernel block: block index in [0, n_blocks), core in [0, num_cores). */
typedef void (*sk_block_fn)(void *arg, int64_t block, int core);

/* Runs fn for every block on the team and returns when all are done. Block b
 * runs on core b % num_cores, blocks of one core in increasing order, so the
 * assignment never depends on timing. Launches on one team are serialized;
 * launching from inside a block is refused (SK_STATUS_INVALID_STATE). */
SK_API sk_status sk_team_launch(sk_team *team, sk_block_fn fn, void *arg,
                                int64_t n_blocks);

/* ------------------------------------------------------------------------ */
/* Graphs                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct sk_graph sk_graph;

/* A tensor value in a graph: a graph input or an op output. */
typedef uint32_t sk_value;
#define SK_VALUE_NONE UINT32_MAX

/* One named input slot of an op; a slot may hold a list (grouped_matmul's
 * x, weight, bias). Optional slots are simply left out. */
typedef struct sk_op_input {
  const char *name;       /* "x", "weight", "bias", ... */
  const sk_value *values; /* count values */
  size_t count;
} sk_op_input;

typedef enum sk_attr_kind {
  SK_ATTR_KIND_INT = 1,
  SK_ATTR_KIND_FLOAT,
  SK_ATTR_KIND_INTS
} sk_attr_kind;

/* One named attribute. Use the SK_ATTR_* helpers below to build them. */
typedef struct sk_attr {
  const char *name;
  sk_attr_kind kind;
  int64_t i;           /* SK_ATTR_KIND_INT (dtypes are passed as ints) */
  double f;            /* SK_ATTR_KIND_FLOAT */
  const int64_t *ints; /* SK_ATTR_KIND_INTS */
  size_t n_ints;
} sk_attr;

#define SK_ATTR_INT(nm, v) ((sk_attr){.name = (nm), .kind = SK_ATTR_KIND_INT, .i = (v)})
#define SK_ATTR_FLOAT(nm, v) ((sk_attr){.name = (nm), .kind = SK_ATTR_KIND_FLOAT, .f = (v)})
#define SK_ATTR_INTS(nm, p, n) \
  ((sk_attr){.name = (nm), .kind = SK_ATTR_KIND_INTS, .ints = (p), .n_ints = (n)})

/* An op node to add. Ops of this release and their slots / attributes
 * (docs/ops.md has the exact maths and every rule):
 *
 *   reshape        x;                 shape (ints, one -1 allowed)   a view
 *   slice          x;                 start, end (ints, Python rules:
 *                                     negative from the end, clamped)
 *                                     rows of dim 0: a view at an offset
 *   squeeze        x;                 dims (ints; absent: every size-1
 *                                     dim; a dim not of size 1 is kept) a view
 *   unsqueeze      x;                 dim (int, in [-(rank+1), rank]) a view
 *   square         x
 *   add, mul       x, y (or the float attribute scalar instead of y)
 *                  (one dtype; shapes broadcast as in numpy / torch)
 *   cast           x;                 dtype (int, an sk_dtype)
 *   concat         x (list);          dim (int, may be negative)
 *   grouped_matmul x (list), weight (list), bias, scale, offset,
 *                  per_token_scale (lists, optional), group_list (int64
 *                  [E] read at run time, optional); group_type (-1 or 0,
 *                  default -1), group_list (ints, fixed at build),
 *                  group_list_type (0 cumulative, 1 counts), split_item
 *                  (0..3), output_dtype, transpose_weight (1: weights
 *                  [N, K], torch's layout)
 *   moe_gating_topk x, bias; k, k_group, group_count, group_select_mode,
 *                  renorm, norm_type, out_flag, routed_scaling_factor (float),
 *                  eps (float)                   -> y, expert_idx, out
 *   dequant_swiglu_quant x, weight_scale, activation_scale, bias,
 *                  quant_scale, quant_offset, group_index; activate_left,
 *                  quant_mode                    -> y (int8), scale (fp32)
 *   quant_matmul   x1, x2, scale, offset, pertoken_scale, bias;
 *                  output_dtype (default int8; fp16, bf16, fp32, int32)
 *   rms_norm       x, gamma; epsilon (float)    -> y, rstd (fp32 [..., 1])
 *   add_rms_norm   x1, x2, gamma; epsilon      -> y, rstd, x (x1 + x2)
 *   swiglu         x; dim (int, default -1)     silu(first half) * second
 *   moe_init_routing x, expert_idx, scale; expert_num, active_num,
 *                  expert_tokens_num_type, quant_mode, active_expert_range
 *                  (ints), row_idx_type  -> expanded_x, expanded_row_idx,
 *                  expert_tokens, expanded_scale
 *   moe_finalize_routing expanded_permuted_rows, expanded_src_to_dst_row,
 *                  skip1, skip2, bias, scales, export_for_source_row;
 *                  drop_pad_mode, k     -> y [N, H]
 *   moe_gating_topk_softmax x; k, renorm -> y, expert_idx, row_idx, softmax
 *   linear         x, weight [N, K], bias  -> x @ weight^T + bias
 *   gelu           x                        -> x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))
 *   softmax        x                        -> softmax over the last dimension (fp32, 16-lane sum)
 *   argmax         x; keepdim               -> int64 index of each row's maximum (first NaN)
 *   embedding      table, ids, scale; output_dtype -> table[ids] (int8 table: * scale)
 *   rotary_embedding q, k, positions; max_positions, rotary_dim, layout,
 *                  theta, scaling_type, factor, original_max_positions,
 *                  beta_fast, beta_slow, mscale, mscale_all_dim,
 *                  attention_factor, truncate -> q_out, k_out (RoPE)
 *   kv_cache_write cache (a graph input, written in place), new, positions
 *                  -> cache (the input's storage: cache[positions[t]] = new[t])
 *   attention      q, k_cache, v_cache, positions; scale, softcap (floats),
 *                  window -> o (causal, grouped-query, against the cache)
 *   mla_attention  q_nope, q_pe, latent_cache, positions, kv_b_weight;
 *                  scale -> o (DeepSeek latent attention, absorbed form)
 *   split          x; sizes (ints, each >= 1, summing to x's dim), dim (int,
 *                  default -1) -> y (list: one dense copy per size)
 *   sigmoid        x                        -> 1 / (1 + e^-x) (fp32, the library's exp)
 *   dynamic_quant  x, smooth_scales         -> y (int8), scale (fp32 [...]: a row's max |x| / 127)
 */
typedef struct sk_op_desc {
  size_t struct_size;        /* sizeof(sk_op_desc) or 0: the struct_size rule */
  const char *op;            /* op type, e.g. "grouped_matmul" */
  const char *name;          /* optional node name for messages; NULL = auto */
  const sk_op_input *inputs; /* n_inputs named slots */
  size_t n_inputs;
  const sk_attr *attrs;      /* n_attrs attributes */
  size_t n_attrs;
} sk_op_desc;

SK_API sk_status sk_graph_create(sk_graph **graph_out);
SK_API void sk_graph_destroy(sk_graph *graph);

/* Declares a named graph input. The name must be unique among inputs.
 * shape[0] may be SK_DIM_DYNAMIC once the graph has a maximum token count
 * (sk_graph_set_max_tokens): the input then has T rows, T given by each
 * run. */
SK_API sk_status sk_graph_add_input(sk_graph *graph, const char *name,
                                    sk_dtype dtype, int rank,
                                    const int64_t *shape, sk_value *value_out);

/* ---- A run-time token count ------------------------------------------------
 * One program for every token count T in 1..max (decode steps of 1 token,
 * prefills of any length): set the maximum, declare the token-dependent
 * inputs with SK_DIM_DYNAMIC as their leading dimension, build the graph as
 * usual. Every op's shape rule carries the dimension through: an output
 * whose leading dimension follows T (x's rows, or k * T expanded rows) is
 * dynamic too, and sk_graph_value_info / sk_program_*_info report that
 * dimension as SK_DIM_TOKENS(k) (k * T). A node whose shapes cannot follow
 * T (a reshape whose shape fixes the token count, a slice past row 0, an
 * op or custom kernel that does not take a run-time count) is refused when
 * it is added, with a message naming the op, the input and the count it
 * fails at; each node is checked at T = 1, a count between and T = max.
 *
 * A run's T comes from its buffers: every dynamic input and output is
 * given (or bound) with exactly T * k rows' bytes, all for the same T;
 * buffers that disagree, that are not whole rows, or T > max are refused
 * naming the buffer, before anything is written. T = 0 returns at once:
 * dynamic outputs are empty, static ones are not written.
 *
 * sk_compile plans the program for token buckets (1, 2, 4, ... up to max,
 * and max): each bucket is tiled, planned and JIT-compiled once, at
 * compile; a run with T tokens uses the smallest bucket >= T, whose blocks
 * compute only the T live rows. Constants are packed once for all
 * buckets. Results are bitwise those of a program compiled for exactly T
 * tokens (and, per row, of any other T: docs/ops.md, batch invariance). */
#define SK_DIM_DYNAMIC ((int64_t)-1)
/* A reported dynamic dimension of k * T rows (k >= 1). */
#define SK_DIM_TOKENS(k) (-(int64_t)(k))
/* Sets the graph's maximum token count (1 .. 2^24), before any input uses
 * SK_DIM_DYNAMIC; it cannot change once one does. A graph with a maximum
 * but no SK_DIM_DYNAMIC input compiles to a program of static shapes. */
SK_API sk_status sk_graph_set_max_tokens(sk_graph *graph, int64_t max_tokens);

/* How sk_graph_add_constant holds a constant's data. */
typedef enum sk_constant_flags {
  /* The data is copied now; the caller's buffer may change or go at once. */
  SK_CONSTANT_COPY = 0,
  /* The data is borrowed: the graph and every program compiled from it
   * read the caller's buffer, which must stay valid and unchanged until the
   * last of them is destroyed (as XNNPACK's static weights). Changing it
   * after sk_compile is undefined: ops that pack a constant at compile
   * (grouped_matmul and quant_matmul weights) keep computing with the old
   * values, others see the new ones. No copy: for large weights. */
  SK_CONSTANT_BORROW = 1,
} sk_constant_flags;

/* Declares a named constant: a value with data known when the graph is
 * built (weights, biases, scales). It is not an input of the program: runs
 * do not bind it. Ops may repack a constant once at compile into the
 * layout their kernels read (sk_program_describe reports the bytes), so
 * runs skip that work. dtype, rank and shape as for sk_graph_add_input;
 * data holds numel * dtype size bytes (it may be NULL only when that is 0).
 * The name must be unique among inputs and constants. */
SK_API sk_status sk_graph_add_constant(sk_graph *graph, const char *name, sk_dtype dtype, int rank,
                                       const int64_t *shape, const void *data, sk_constant_flags flags,
                                       sk_value *value_out);

/* Adds an op node. Shapes and dtypes are inferred at once; an invalid node is
 * rejected with a message naming the op, the input and expected vs actual,
 * and the graph is left unchanged. On success the node's outputs are written
 * to outputs[0..*n_outputs) (max_outputs must be large enough: the required
 * count is reported in the error otherwise). n_outputs may be NULL. */
SK_API sk_status sk_graph_add_op(sk_graph *graph, const sk_op_desc *desc,
                                 sk_value *outputs, size_t max_outputs,
                                 size_t *n_outputs);

/* Marks a value as a graph output under a unique name. */
SK_API sk_status sk_graph_mark_output(sk_graph *graph, sk_value value,
                                      const char *name);

/* ---- Super-kernel scopes -------------------------------------------------
 * Ops added between begin and end belong to the named scope and are fused
 * into one super kernel at compile time (the seed's super_kernel("sk1")); ops
 * outside any scope run as their own launches. options is the scope's option
 * string (see sk_options_validate; NULL or "" = the compile config's
 * default string, then the built-in defaults) and is validated here. Scopes
 * do not nest. Ending an empty scope logs a warning; compiling with a scope
 * still open is an error.
 *
 * Membership is per node, so a scope's nodes need not be contiguous:
 * beginning a scope whose name exists reopens it, and the ops added next
 * join it (a front end can add nodes in its own order, e.g. PyTorch FX's,
 * interleaving scopes and free ops). A reopening gives NULL or "" options,
 * or options meaning the same as the declared ones; other options are an
 * error naming both. At compile time a scope's super kernel runs after all
 * of its producers and before all of its consumers. That needs the scope to
 * be convex: no node outside it both depends on it and feeds it (through
 * data or an event wait). For a scope that is not, the option
 * strict-scope-check decides: abort fails the compile, naming the scope and
 * such a node; bypass runs the scope unfused; unset (the default) splits it
 * into parts "name.0", "name.1", ... that each run as one launch. Both of
 * the latter log a warning (docs/options.md). */
SK_API sk_status sk_graph_begin_scope(sk_graph *graph, const char *name, const char *options);
SK_API sk_status sk_graph_end_scope(sk_graph *graph);

/* ---- Streams and events ---------------------------------------------------
 * Ops are placed on stream 0 (the default) or 1: nodes added after
 * sk_graph_set_stream go to that stream. Outside a stream-fused scope the
 * stream orders nothing extra (launches keep graph order where data, event
 * waits and scopes allow: see scopes above); inside a scope with
 * stream-fusion=1 the two streams' chains run at once on disjoint cores.
 * An event recorded on the current stream marks the completion of its last
 * node so far; waiting on it makes the next node added on the current
 * stream wait for that node (a control edge). */
typedef uint32_t sk_event;
SK_API sk_status sk_graph_set_stream(sk_graph *graph, int stream);
SK_API sk_status sk_graph_record_event(sk_graph *graph, sk_event *event_out);
SK_API sk_status sk_graph_wait_event(sk_graph *graph, sk_event event);

/* Shape and dtype of a value; shape_out needs room for SK_MAX_RANK. */
SK_API sk_status sk_graph_value_info(const sk_graph *graph, sk_value value,
                                     sk_dtype *dtype_out, int *rank_out,
                                     int64_t *shape_out);

/* ------------------------------------------------------------------------ */
/* Op schemas: what each op accepts, without a graph                         */
/* ------------------------------------------------------------------------ */

/* One input slot of an op. A list slot takes any number of tensors
 * (grouped_matmul's x); a single slot exactly one. An optional slot may be
 * left out; sk_graph_add_op rejects a required slot left out.
 *
 * The data rules every tensor of the slot obeys, checked by sk_graph_add_op
 * and sk_op_infer for every op alike before the op's own rules (which add
 * what depends on attributes or on other slots' shapes):
 *   dtypes         SK_DTYPE_BIT(d) of each dtype accepted; 0: any
 *   min_rank, max_rank   the ranks accepted, max_rank -1: no upper bound;
 *                  both 0: any rank
 *   same_dtype_as  1 + the index of the slot whose first tensor's dtype
 *                  this slot's tensors must have (the slot itself: every
 *                  tensor of a list as its first); 0: none */
typedef struct sk_op_slot_info {
  const char *name;
  int is_list;
  int is_optional;
  const char *doc; /* one line: shapes and dtypes accepted */
  unsigned dtypes;
  int min_rank, max_rank;
  int same_dtype_as;
} sk_op_slot_info;

#define SK_DTYPE_BIT(d) (1u << (unsigned)(d))

/* One attribute. An INT (and every element of INTS) must lie in [min, max]
 * when has_range; sk_graph_add_op checks the kind, the range and unknown
 * names for every op alike. An attribute without a default is either
 * required (is_required) or defaulted by the op from its inputs (doc says
 * how, e.g. grouped_matmul's output_dtype is x's dtype). */
typedef struct sk_op_attr_info {
  const char *name;
  sk_attr_kind kind;
  int is_required;
  int has_default;
  int64_t default_int;   /* SK_ATTR_KIND_INT */
  double default_float;  /* SK_ATTR_KIND_FLOAT */
  int has_range;
  int64_t min, max;
  const char *doc;
} sk_op_attr_info;

/* One output; a list output holds a number of tensors decided by the
 * inputs and attributes (grouped_matmul: one per group unless split_item
 * is 2 or 3). */
typedef struct sk_op_output_info {
  const char *name;
  int is_list;
  const char *doc;
} sk_op_output_info;

/* An op's schema. The arrays are owned by the library and live until the
 * process exits. */
typedef struct sk_op_schema {
  const char *name;
  int kernel_type;                     /* an sk_kernel_type: VECTOR, CUBE, MIX */
  int is_view;                         /* launches nothing: aliases input x */
  const sk_op_slot_info *inputs;
  size_t n_inputs;
  const sk_op_attr_info *attrs;
  size_t n_attrs;
  const sk_op_output_info *outputs;
  size_t n_outputs;
  const char *doc;                     /* one line: what the op computes */
} sk_op_schema;

/* The number of built-in ops; sk_op_info(i) for i < sk_op_count() lists
 * them in a fixed order. */
SK_API size_t sk_op_count(void);
/* Schema of built-in op i. SK_STATUS_NOT_FOUND past the count. */
SK_API sk_status sk_op_info(size_t i, sk_op_schema *schema_out);
/* Schema of an op by type name, built-in or registered (sk_kernel_register:
 * one list input "x", one list output "y"). SK_STATUS_NOT_FOUND if unknown. */
SK_API sk_status sk_op_info_by_name(const char *op, sk_op_schema *schema_out);

/* A tensor's dtype and shape, without data. */
typedef struct sk_tensor_meta {
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MAX_RANK];
} sk_tensor_meta;

/* The shape and dtype rule of an op without a graph (what a torch fake
 * kernel needs). desc is as for sk_graph_add_op, except that the slots'
 * values are not read: the inputs' metas come from inputs[], slot after
 * slot in the order of desc->inputs (desc->inputs[0].count metas, then
 * desc->inputs[1].count, ...; n_inputs must equal the sum). On success the
 * outputs go to outputs[0..*n_outputs) (max_outputs must be large enough;
 * the count needed is in the error otherwise). Every check of
 * sk_graph_add_op is made, with the same status and message. A meta whose
 * leading dimension is SK_DIM_TOKENS(k) (SK_DIM_DYNAMIC for k = 1) has k
 * rows a token of a run-time count: the node is checked as in a graph
 * with a maximum, and outputs that follow the count are reported so. */
SK_API sk_status sk_op_infer(const sk_op_desc *desc, const sk_tensor_meta *inputs, size_t n_inputs,
                             sk_tensor_meta *outputs, size_t max_outputs, size_t *n_outputs);

/* Whether the library can run desc on inputs of these metas (same
 * arguments as sk_op_infer): SK_STATUS_OK, or the status and message of
 * what it does not support (an unknown op, a dtype, a shape, an attribute
 * value). A front end asks before it hands a node to a graph. */
SK_API sk_status sk_op_supported(const sk_op_desc *desc, const sk_tensor_meta *inputs, size_t n_inputs);

/* ------------------------------------------------------------------------ */
/* Super-kernel options                                                      */
/* ------------------------------------------------------------------------ */

/* A scope's options string: "key=value:key=value" (see docs/options.md for
 * the table). Pairs split on ':', each at its first '='; surrounding double
 * quotes are stripped; '_' is accepted for '-' in keys; an empty string means
 * all defaults. A pair without '=' is skipped with a warning (log). An empty
 * key or value, a key given twice, an unknown key or an illegal value is an
 * error whose message names the key and the accepted values. */
SK_API sk_status sk_options_validate(const char *options);

/* Renders the effective options of a string, defaults included, in table
 * order as "key=value:key=value:..." into buf (size bytes, NUL-terminated;
 * truncated if too small). *needed (may be NULL) gets the full length
 * without the NUL. Fails like sk_options_validate on an invalid string. */
SK_API sk_status sk_options_render(const char *options, char *buf, size_t size, size_t *needed);
/* The same for a scope's string layered over a graph's default string
 * (sk_compile_config.default_options): what the scope's super kernel runs
 * with, each key the scope's when it gives one, else the default's. Front
 * ends read a scope's effective options here instead of layering strings
 * themselves (superkernel.backend decides its strict-scope-check so). A
 * failure names which string was wrong ("global options: ..."). */
SK_API sk_status sk_options_render_layered(const char *default_options, const char *scope_options, char *buf,
                                           size_t size, size_t *needed);

/* ------------------------------------------------------------------------ */
/* Custom kernels                                                            */
/* ------------------------------------------------------------------------ */

/* A user-written kernel described by its metadata (the seed's "kernel binary
 * + json meta"): entry function, kernel type, block count, workspace size,
 * parameter count and flags. A registered kernel can be
 *   - fused at run time with other kernels, without a graph
 *     (sk_fused_kernel_create below), or
 *   - used in a graph as an op whose type is the kernel's name, next to the
 *     built-in ops, inside or outside super-kernel scopes.
 * docs/custom_kernels.md has a walkthrough. */

/* What a kernel's blocks exercise; the super kernel's type and the cores its
 * blocks run on follow from it (docs/options.md, debug-aic-num / -aiv-num). */
typedef enum sk_kernel_type {
  SK_KERNEL_TYPE_VECTOR = 0, /* elementwise, reductions, quantization */
  SK_KERNEL_TYPE_CUBE = 1,   /* matrix work */
  SK_KERNEL_TYPE_MIX = 2     /* both */
} sk_kernel_type;

/* Opaque per-call context handed to a kernel's entry. */
typedef struct sk_kernel_ctx sk_kernel_ctx;

/* One block of a kernel.
 *   args       the kernel's argument list, n_params entries: without a graph,
 *              exactly the pointers the caller passed to the launch (tensor
 *              data pointers, and pointers to scalars); in a graph, the input
 *              data pointers, then the output data pointers.
 *   block      this block's index, in [0, n_blocks).
 *   n_blocks   the kernel's block_count.
 *   workspace  workspace_bytes of 64-byte-aligned scratch owned by the core
 *              running the block; the blocks a core runs use it one after
 *              another, so a block must not expect what an earlier one left
 *              there. NULL when workspace_bytes is 0.
 *   ctx        for sk_kernel_barrier, sk_kernel_user, sk_kernel_arg_info.
 * Blocks run concurrently on different cores; block b runs on core
 * b % (its cores), so a block must only write what no other block touches
 * (unless it separates the two with sk_kernel_barrier). From inside a block,
 * running, binding or profiling a program (sk_program_run*, sk_program_bind,
 * sk_run_context_run, sk_program_write_profile), launching a fused kernel
 * or a team returns SK_STATUS_INVALID_STATE: launches do not nest. */
typedef void (*sk_kernel_fn)(void *const *args, int64_t block, int64_t n_blocks, void *workspace,
                             sk_kernel_ctx *ctx);

/* The team barrier of a kernel declared with barriers_per_block > 0: returns
 * once every block of this launch has called it (as often), and every write
 * made before any block's call is visible after every return. Each block
 * must call it exactly barriers_per_block times. Such a kernel's blocks run
 * at once, one per core, so block_count must not exceed the team size; with
 * fewer blocks than cores inside a super kernel the option feed-sync-all=1
 * makes the idle cores join. In a kernel that declared no barriers the call
 * returns at once. Returns SK_STATUS_OK, or SK_STATUS_TIMEOUT when the
 * watchdog gave up on this launch (some block never arrived; see
 * sk_compile_config.watchdog_ms): the block should then return at once, and
 * the run fails with a message naming the scope and the kernel.
 * SK_STATUS_INVALID_ARGUMENT for a NULL ctx. */
SK_API sk_status sk_kernel_barrier(sk_kernel_ctx *ctx);

/* The descriptor's user pointer (the same for every block and launch). */
SK_API void *sk_kernel_user(const sk_kernel_ctx *ctx);

/* In a graph: dtype, rank and shape (shape_out needs SK_MAX_RANK entries)
 * of argument i, an input or output tensor of the node, so one kernel can
 * serve any shape its infer accepts. Any out-pointer may be NULL. Without a
 * graph the library knows no shapes (the arguments are the caller's), and
 * the call returns SK_STATUS_NOT_FOUND, as for i out of range. */
SK_API sk_status sk_kernel_arg_info(const sk_kernel_ctx *ctx, int i, sk_dtype *dtype_out, int *rank_out,
                                    int64_t *shape_out);

/* Limits of sk_kernel_desc: parameters of one kernel and outputs its infer
 * may declare. */
#define SK_KERNEL_MAX_PARAMS 256
#define SK_KERNEL_MAX_OUTPUTS 16

typedef struct sk_kernel_desc {
  /* sizeof(sk_kernel_desc) or 0: the struct_size rule. A size that ends
   * before `infer` is accepted (no infer, no user). */
  size_t struct_size;
  /* Unique among kernels and ops (letters, digits, '_', '-', '.'; at most
   * 63 characters); the op type in graphs and in option lists such as
   * dcci-after-kernel-end. Copied. */
  const char *name;
  /* The block function; never NULL. */
  sk_kernel_fn entry;
  /* VECTOR, CUBE or MIX. */
  sk_kernel_type type;
  /* Blocks per launch, 1 .. 1048576. */
  int64_t block_count;
  /* Scratch per core, handed to every block as `workspace`; 0 for none. */
  size_t workspace_bytes;
  /* Length of the argument list, 0 .. SK_KERNEL_MAX_PARAMS. In a graph it
   * must equal inputs + outputs of the node. */
  int n_params;
  /* How often each block calls sk_kernel_barrier; 0: never (the usual). */
  int barriers_per_block;
  /* 1: the kernel must not join a super kernel; it then runs as its own
   * launch, and the option strict-scope-check decides what happens to the
   * rest (unset: the kernels around it are fused in runs; abort: an error
   * naming it; bypass: nothing is fused, with a warning). 0: fusable. */
  int unfusable;
  /* For graphs: the node's outputs from its inputs (input i has dtype
   * in_dtypes[i], rank in_ranks[i], shape in_shapes[i][0..rank)). Writes
   * each output's dtype, rank and shape (out_shapes[o][0..rank)) and *n_out;
   * *n_out holds the room (SK_KERNEL_MAX_OUTPUTS) on entry. Returns
   * SK_STATUS_OK, or any other status to reject the inputs (the graph then
   * reports the kernel and the inputs it was given). NULL: one output with
   * input 0's dtype and shape. Not used without a graph. */
  sk_status (*infer)(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                     size_t n_in, sk_dtype *out_dtypes, int *out_ranks, int64_t (*out_shapes)[SK_MAX_RANK],
                     size_t *n_out, void *user);
  /* Handed to infer, and to every block through sk_kernel_user. */
  void *user;
} sk_kernel_desc;

/* A registered kernel. */
typedef struct sk_kernel sk_kernel;

/* Registers a kernel after checking every field of desc (errors name the
 * kernel and the field). *kernel_out stays valid until the process exits;
 * there is no unregister, because graphs and programs refer to the kernel
 * by name. */
SK_API sk_status sk_kernel_register(const sk_kernel_desc *desc, sk_kernel **kernel_out);

/* ---- Runtime-only fusion --------------------------------------------------
 * Kernels fused without a graph: each launch runs kernels[0], then
 * kernels[1], ... as one super kernel on the team. The library does not know
 * which memory a kernel reads or writes, so kernel i+1 starts only after
 * every block of kernel i: a barrier separates consecutive kernels, as with
 * early-start=0 (which is forced; a different early-start is ignored with an
 * info message). Every other option applies as in a graph scope:
 * feed-sync-all (kernels with barriers and fewer blocks than cores),
 * debug-aic-num / debug-aiv-num, debug-sync-all, preload-code, dcci (by
 * kernel name; there are no tensors, so nothing to flush), split-mode,
 * func-align and compile-options (the JIT's), strict-scope-check (unfusable
 * kernels). profiling=1 is accepted but records nothing yet.
 * The executor follows $SK_EXECUTOR as SK_EXECUTOR_DEFAULT does for
 * sk_compile: auto or jit (the default) compiles each super kernel with the
 * JIT when it is created (any failure: interpreted, with a warning), interp
 * interprets it, eager launches every kernel on its own. */
typedef struct sk_fused_kernel sk_fused_kernel;

/* Plans kernels[0..n) (n >= 1; a kernel may appear more than once) for team
 * (NULL: run on the calling thread) under options ("key=value:...", NULL or
 * "" for the defaults). Fails naming the kernel or option at fault: an
 * illegal option, a kernel with barriers and more blocks than cores, or
 * with fewer blocks than cores without feed-sync-all=1, an unfusable kernel
 * under strict-scope-check=abort. The team must outlive the fused kernel. */
SK_API sk_status sk_fused_kernel_create(sk_kernel *const *kernels, size_t n, const char *options, sk_team *team,
                                        sk_fused_kernel **out);

/* Runs the fused kernel once and returns when every block is done. args[i]
 * is kernel i's argument list (kernels[i]'s n_params pointers, passed to
 * every block of it unchanged; may be NULL when n_params is 0; args itself
 * may be NULL when every kernel takes none). The pointers are read during
 * the launch only. Launches of one fused kernel are serialized; a launch on
 * a team from inside a kernel block is refused (SK_STATUS_INVALID_STATE). */
SK_API sk_status sk_fused_kernel_launch(sk_fused_kernel *fk, void *const *const *args);

/* The plan in readable form: a summary line, then the super kernel(s) as
 * sk_program_describe prints them (type, options, sub-kernels with their
 * cores, every core's task list). *text_out is allocated; sk_free it. */
SK_API sk_status sk_fused_kernel_describe(const sk_fused_kernel *fk, char **text_out);

/* Frees the fused kernel (not its kernels). NULL is accepted. */
SK_API void sk_fused_kernel_destroy(sk_fused_kernel *fk);

/* ------------------------------------------------------------------------ */
/* Compiling and running                                                     */
/* ------------------------------------------------------------------------ */

typedef struct sk_program sk_program;

/* How a compiled program runs: the one list XX(NAME, "name"), which makes
 * the enum and sk_executor_name / sk_executor_parse.
 *   DEFAULT    $SK_EXECUTOR (eager, interp, jit or auto) when set, else auto
 *   EAGER      super kernels off: every op its own launch
 *   REFERENCE  every op's plain reference implementation, on the calling
 *              thread: slow, for checking results
 *   INTERP     each scope one launch; cores walk task lists
 *   JIT        each scope's plan compiled to C by the system compiler
 *              ($SK_CC or cc), cached, loaded; any failure falls back to
 *              INTERP with a warning
 *   AUTO       JIT with fallback (the default) */
#define SK_EXECUTOR_MAP(XX) \
  XX(DEFAULT, "default")    \
  XX(EAGER, "eager")        \
  XX(REFERENCE, "reference") \
  XX(INTERP, "interp")      \
  XX(JIT, "jit")            \
  XX(AUTO, "auto")

typedef enum sk_executor {
#define SK__EXECUTOR_ENUM(name, text) SK_EXECUTOR_##name,
  SK_EXECUTOR_MAP(SK__EXECUTOR_ENUM)
#undef SK__EXECUTOR_ENUM
  SK_EXECUTOR_COUNT_
} sk_executor;

/* "eager", "jit", ...; "invalid" for a value outside the enum. */
SK_API const char *sk_executor_name(sk_executor executor);
/* The executor named name (as sk_executor_name gives it);
 * SK_STATUS_INVALID_ARGUMENT naming the accepted names otherwise. */
SK_API sk_status sk_executor_parse(const char *name, sk_executor *executor_out);

/* How a program's bf16 products are summed (docs/ops.md, "Numerics").
 * Every promise (the reference executor computes the same bits, every
 * executor, team size and ISA agree, fused = unfused, batch invariance)
 * holds within each. */
typedef enum sk_numerics {
  SK_NUMERICS_UNSET = 0,   /* $SK_NUMERICS when set ("default" or "amx"), else SK_NUMERICS_DEFAULT */
  SK_NUMERICS_DEFAULT = 1, /* the library's contract: one chain per output, the same bits on every CPU */
  SK_NUMERICS_AMX = 2,     /* bf16 x bf16 GEMMs summed as AMX-BF16's TDPBF16PS sums them, 32 k values an
                              instruction: its rate where the CPU has AMX-BF16, the same bits emulated elsewhere */
} sk_numerics;

/* The contract's name ("default", "amx"); "unknown" for other values. */
SK_API const char *sk_numerics_name(sk_numerics numerics);

typedef struct sk_compile_config {
  size_t struct_size; /* sizeof(sk_compile_config) or 0: the struct_size rule */
  /* The team the program will run on: kernels are tiled and super kernels
   * planned for its size. NULL = one core. An eager program runs on any
   * team; a program with super kernels only on a team of this size. */
  const sk_team *team;
  sk_executor executor;
  /* Options for scopes that give none (NULL = the built-in defaults). */
  const char *default_options;
  /* 1: time every launch of every run (eager ops per op, super kernels as
   * a whole, and an eager op's blocks per core) into the program's profile;
   * per-sub-kernel detail inside a super kernel comes from its scope's
   * option profiling=1. 0 (default): no timing at all. */
  int profile;
  /* Called before each super kernel is JIT-compiled (or found in the
   * cache), with its scope name, its index from 1 and the count: for
   * progress lines. NULL: nothing is called. */
  void (*on_jit)(const char *scope, size_t index, size_t total, void *user);
  void *on_jit_user;
  /* The watchdog: the longest a core waits inside a launch (at a barrier,
   * or for another core's block under early start) before the run gives up
   * and returns SK_STATUS_TIMEOUT, naming the scope and sub-kernel (a block
   * that never reaches its barrier would otherwise hang the run). 0: the
   * default, $SK_WATCHDOG_MS or else 60000 ms; negative: wait forever. */
  int64_t watchdog_ms;
  /* The numerics contract of the program's bf16 products (sk_numerics;
   * sk_program_get_stats and sk_program_describe name the one in use). */
  sk_numerics numerics;
} sk_compile_config;

/* Compiles a graph into a program. The graph may be destroyed afterwards.
 * cfg may be NULL for the defaults. */
SK_API sk_status sk_compile(const sk_graph *graph, const sk_compile_config *cfg,
                            sk_program **program_out);
SK_API void sk_program_destroy(sk_program *program);

/* Buffers: a caller-provided buffer bound to a graph input or output by
 * name. Data is dense, row-major (C order), of exactly numel * dtype size
 * bytes, and aligned to the dtype's size (2 bytes for fp16, 4 for fp32 and
 * int32, ...; what numpy, torch and malloc always give): the kernels read
 * elements through typed pointers, which C requires to be aligned. A
 * misaligned buffer (or borrowed constant) is refused with
 * SK_STATUS_INVALID_ARGUMENT naming it; copy it to an aligned one. */
typedef struct sk_buffer {
  const char *name;
  void *data;
  size_t bytes;
} sk_buffer;

/* Runs the program on the team: every input and every output must be bound
 * exactly once. Outputs must not overlap inputs. Blocks the calling thread
 * until the run is over: that thread works as core 0 of the team (it runs
 * core 0's share of every launch), so a team of N cores is the caller plus
 * N - 1 workers.
 *
 * Threads: sk_program_run, sk_program_run_by_index and the sk_program_bind
 * family use the program's default run context; calls from several threads
 * are safe and take turns (one at a time per program). For runs of one
 * program in parallel, give each thread a run context of its own (below). */
SK_API sk_status sk_program_run(sk_program *program, sk_team *team,
                                const sk_buffer *inputs, size_t n_inputs,
                                const sk_buffer *outputs, size_t n_outputs);

/* ---- Binding by index ------------------------------------------------------
 * Three ways to hand a run its buffers, cheapest last (bench_run_overhead
 * measures them):
 *   sk_program_run          by name: each buffer's name is looked up;
 *   sk_program_run_by_index buffers in declaration order (input i is
 *                           sk_program_input_info(i)); names are ignored;
 *   sk_program_bind + sk_program_run_bound
 *                           bindings that persist across runs: a run checks
 *                           nothing and rebinds nothing that did not change.
 * Every way checks each buffer's byte count (numel * dtype size) and that no
 * output overlaps an input or another output. */
typedef enum sk_io_kind { SK_IO_INPUT = 0, SK_IO_OUTPUT = 1 } sk_io_kind;

/* The declaration index of the input or output named name;
 * SK_STATUS_NOT_FOUND when there is none. */
SK_API sk_status sk_program_find(const sk_program *program, sk_io_kind kind, const char *name, size_t *index_out);

/* Runs with inputs[i] bound to input i and outputs[j] to output j: exactly
 * sk_program_num_inputs / _outputs buffers each (their name fields are not
 * read and may be NULL). */
SK_API sk_status sk_program_run_by_index(sk_program *program, sk_team *team, const sk_buffer *inputs,
                                         size_t n_inputs, const sk_buffer *outputs, size_t n_outputs);

/* Binds input or output `index` to data (bytes must be its exact size;
 * data may be NULL only for a 0-byte tensor) until it is bound again or
 * unbound. The buffer must stay valid while runs use it. Fails, leaving the
 * old binding, on a wrong size or when an output would overlap another
 * bound buffer. The bindings are the default context's: a call made while
 * another thread runs the program waits for that run. */
SK_API sk_status sk_program_bind(sk_program *program, sk_io_kind kind, size_t index, void *data, size_t bytes);
/* Forgets every binding. */
SK_API void sk_program_unbind_all(sk_program *program);
/* Runs with what is bound; SK_STATUS_INVALID_STATE naming the first
 * unbound input or output. No lookup, no allocation, no size or overlap
 * check (done at bind time), and nothing is rebound inside the program
 * when no binding changed since its last bound run. */
SK_API sk_status sk_program_run_bound(sk_program *program, sk_team *team);

/* ---- Run contexts: one program, runs in parallel ---------------------------
 * A compiled program is immutable; a run context holds what a run changes:
 * its bindings, the node tensors' data pointers, the arena of intermediate
 * values, per-core workspaces, the super kernels' flags and barriers, the
 * watchdog. Each thread runs the program in a context of its own, on a team
 * of its own (launches on one team take turns), without waiting for the
 * others:
 *
 *   sk_run_context *ctx;                         // per thread
 *   sk_run_context_create(program, &ctx);
 *   sk_run_context_bind(ctx, SK_IO_INPUT, 0, x, x_bytes);
 *   sk_run_context_bind(ctx, SK_IO_OUTPUT, 0, y, y_bytes);
 *   sk_run_context_run(ctx, my_team);            // as often as needed
 *   sk_run_context_destroy(ctx);                 // before the program
 *
 * What may run concurrently: contexts of one program, on different teams
 * (or on one team, taking turns per launch); any context with the
 * program's own sk_program_run family; sk_run_context_create with runs.
 * One context is one thread's at a time: a bind or run while another thread
 * is inside one on the same context is refused (SK_STATUS_INVALID_STATE).
 * When the program profiles (cfg.profile, or a scope with profiling=1),
 * the runs of all its contexts take turns, since they record into one
 * profile. A context runs on any team the program could run on: a program
 * with super kernels only on a team of the size it was compiled for. */
typedef struct sk_run_context sk_run_context;

/* A context for program, with nothing bound. Its memory: the program's
 * intermediate values and workspaces, once per context. */
SK_API sk_status sk_run_context_create(const sk_program *program, sk_run_context **ctx_out);
/* Frees the context; NULL is accepted. Destroy every context before its
 * program (a program destroyed first logs a warning and stays allocated
 * until its last context is destroyed). */
SK_API void sk_run_context_destroy(sk_run_context *ctx);
/* sk_program_bind for this context: its own bindings, checked the same
 * way (size, overlap), kept until bound again. */
SK_API sk_status sk_run_context_bind(sk_run_context *ctx, sk_io_kind kind, size_t index, void *data, size_t bytes);
/* sk_program_run_bound for this context: runs with what is bound
 * (SK_STATUS_INVALID_STATE naming the first unbound input or output). */
SK_API sk_status sk_run_context_run(sk_run_context *ctx, sk_team *team);

/* The program's run in readable form: each step (an op's own launch, or a
 * super kernel with its type, sub-kernels and one line per task of every
 * core's task list). *text_out is allocated; release it with sk_free. */
SK_API sk_status sk_program_describe(const sk_program *program, char **text_out);
/* Releases memory the library handed out (sk_program_describe's text). */
SK_API void sk_free(void *p);

/* The C source the JIT generates for a scope's super kernel (the first one
 * when strict-scope-check split the scope into parts "scope.0", ...; scope
 * NULL = the program's first super kernel), whatever executor the program
 * uses: a comment naming the scope's nodes, then the text exactly as it is
 * compiled and cached. *source_out is allocated; release it with sk_free.
 * SK_STATUS_NOT_FOUND when there is no such super kernel. */
SK_API sk_status sk_program_jit_source(const sk_program *program, const char *scope, char **source_out);

/* The JIT cache directory ($SK_CACHE_DIR, else $XDG_CACHE_HOME/superkernel,
 * else ~/.cache/superkernel) into buf (size bytes), created 0700 if missing.
 * Fails, naming the directory and why, when it is unsafe to load code from
 * (a symlink, not ours, writable by group or others). Entries are
 * <key>.so (the object) and <key>.c (its source). */
SK_API sk_status sk_jit_cache_path(char *buf, size_t size);
/* Deletes every cache entry (and temporaries left by interrupted compiles);
 * *removed (may be NULL) gets the number of files deleted. Programs that
 * already loaded an object keep it. */
SK_API sk_status sk_jit_cache_clear(size_t *removed);

/* Writes the profile collected over the runs so far: dir/op_statistic.csv
 * (columns OP Type, Core Type, Count, Total/Min/Avg/Max Time(us), Ratio(%),
 * one row per op type, fused scopes as OP Type SuperKernel; needs
 * cfg.profile) and dir/trace.json (Chrome Trace Event format: a track per
 * core, a slice per sub-kernel block, wait and barrier, eager blocks and
 * launches; opens in Perfetto). dir is created if missing. */
SK_API sk_status sk_program_write_profile(sk_program *program, const char *dir);
/* Forgets the records collected so far. */
SK_API void sk_program_reset_profile(sk_program *program);

/* One row of op_statistic.csv: the launches of one op type (or
 * "SuperKernel", a fused scope) on one core type (AIC, AIV, MIX_AIC). */
#define SK_OP_TYPE_MAX 64 /* an op type's length + 1 (kernel names: 63) */
typedef struct sk_op_statistic {
  char op_type[SK_OP_TYPE_MAX];
  char core_type[16];
  int64_t count;
  double total_us, min_us, max_us;
} sk_op_statistic;

/* The rows of op_statistic.csv for the runs so far, in its order (an op
 * type's first launch first): the first min(capacity, rows) of them into
 * rows (NULL when capacity is 0), their number into *n_rows. A run in
 * another thread may add rows between two calls: call again when *n_rows
 * exceeds the capacity. Fails as sk_program_write_profile does when
 * nothing was recorded. */
SK_API sk_status sk_program_op_statistics(sk_program *program, sk_op_statistic *rows, size_t capacity,
                                          size_t *n_rows);
/* Writes rows (of one program or several) as an op_statistic.csv at path:
 * rows of one op type and core type added up (count and total summed, min
 * and max of theirs), in the order each first appears, ratios over the
 * total of all. Written as a temporary renamed over path, never through a
 * symbolic link. */
SK_API sk_status sk_write_op_statistics(const char *path, const sk_op_statistic *rows, size_t n_rows);

/* The program's maximum token count (sk_graph_set_max_tokens); 0 when its
 * shapes are static. */
SK_API int64_t sk_program_max_tokens(const sk_program *program);

/* Program introspection: graph inputs and outputs in declaration order.
 * A dynamic leading dimension is reported as SK_DIM_TOKENS(k). */
SK_API size_t sk_program_num_inputs(const sk_program *program);
SK_API size_t sk_program_num_outputs(const sk_program *program);
/* Name, dtype and shape of input / output i; shape_out needs SK_MAX_RANK. */
SK_API sk_status sk_program_input_info(const sk_program *program, size_t i,
                                       const char **name_out, sk_dtype *dtype_out,
                                       int *rank_out, int64_t *shape_out);
SK_API sk_status sk_program_output_info(const sk_program *program, size_t i,
                                        const char **name_out, sk_dtype *dtype_out,
                                        int *rank_out, int64_t *shape_out);

/* What a compiled program holds and needs, as numbers (sk_program_describe
 * gives the same as text). */
typedef struct sk_program_stats {
  size_t struct_size;       /* sizeof(sk_program_stats) or 0: the struct_size rule */
  sk_executor executor;     /* what runs (never SK_EXECUTOR_DEFAULT) */
  size_t n_inputs, n_outputs;
  size_t n_constants;
  size_t constant_bytes;    /* the constants' data (borrowed ones included) */
  size_t packed_bytes;      /* what ops packed from constants at compile */
  size_t n_steps;           /* launches per run: ops on their own plus super kernels */
  size_t n_super_kernels;
  size_t n_jit_compiled;    /* of those, running JIT-compiled code */
  size_t arena_bytes;       /* intermediate values, per run context */
  size_t workspace_bytes;   /* scratch per core, per run context */
  int64_t max_tokens;       /* the run-time token count's maximum; 0: static shapes */
  size_t n_token_buckets;   /* token counts planned for (the rest above is the largest's) */
  sk_numerics numerics;     /* the contract its bf16 products follow (never SK_NUMERICS_UNSET) */
} sk_program_stats;

SK_API sk_status sk_program_get_stats(const sk_program *program, sk_program_stats *stats_out);

#ifdef __cplusplus
}
#endif

#endif /* SUPERKERNEL_H */

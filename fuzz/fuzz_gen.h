/* Graph generator shared by fuzz_graph and fuzz_exec: turns input bytes into
 * a sequence of public API calls that build a graph op by op, following the
 * shape and dtype rules of docs/ops.md, with super-kernel scopes, streams and
 * events in between.
 *
 * With hostile == 0 (fuzz_exec) every call is valid, and a refused one is a
 * finding (FUZZ_FAIL). With hostile > 0 (fuzz_graph) each numeric choice is
 * replaced by a hostile value (0, -1, off by one, INT64_MIN/MAX, 2^40, ...)
 * with probability hostile/256, so the same generator reaches deep into the
 * ops' validation and then steps just outside it.
 *
 * Custom kernels registered by gen_register_kernels (once per process) join
 * the op mix: a block-parallel copy, an unfusable copy, and copies that meet
 * at a team barrier (two blocks; one block, which needs feed-sync-all=1 in
 * a scope).
 *
 * A run-time token count (fuzz_exec only; superkernel.h, SK_DIM_DYNAMIC):
 * with G->max_tokens > 0 the graph has that maximum, gen_rows draws a
 * generator's leading "rows" dimension as the maximum 3 times in 4, and
 * gen_input_role declares an input whose leading dimension is the maximum
 * as SK_DIM_DYNAMIC (7 times in 8). Generators keep working on concrete
 * shapes: a dynamic value's leading dimension k * T is kept as k * max
 * (gen_val.dyn = k), so every shape they derive from it (a y like x, a
 * per-token scale [m]) is the maximum again and becomes dynamic in turn.
 * The library may refuse a node on dynamic inputs (its shapes cannot follow
 * T, or its op does not take a run-time count): the node is skipped, never
 * a finding, but the refusal must say so (its message names the token
 * count). Static graphs (max_tokens 0) read the same bytes as before. */
#ifndef SK_FUZZ_GEN_H
#define SK_FUZZ_GEN_H

#include <math.h>

#include "fuzz_common.h"

#define GEN_MAX_VALUES 256
#define GEN_MAX_INPUTS 192
#define GEN_MAX_NUMEL (64 * 1024) /* per generated input */
/* Elements of every value of a graph that fuzz_exec runs: each element is
 * filled, run and compared about 30 times per input (executors, repeats,
 * token counts), at about 0.5 us each under ASan and coverage, so this
 * bound keeps an input's run well under a second on a 2-core machine.
 * Generators stop past it, and a table-drawn op whose tensors would pass it
 * is skipped: a broadcast of two small inputs can make millions (int32
 * [40000, 1] + [1, 53] ran for 25 s). */
#define GEN_MAX_GRAPH_NUMEL (48 * 1024)
#define GEN_MAX_DIM 64

/* What an input holds, for filling it with data that means something. */
typedef enum {
  ROLE_DATA = 0, /* anything of its dtype */
  ROLE_SCALE,    /* float scales: small positive values */
  ROLE_PACKED,   /* int64 packed quant params (sk_trans_quant_param) */
  ROLE_COUNTS,   /* int64 group row counts (dequant_swiglu_quant) */
  ROLE_RANGE     /* values in [lo, hi): a table case's indices (fuzz_schema_gen.h) */
} gen_role;

typedef struct gen_val {
  sk_value v;
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  int64_t numel;
  int64_t dyn; /* > 0: the leading dimension is dyn * T (shape[0] holds dyn * max_tokens) */
  bool state;  /* a graph input an op writes in place: nothing else may read or mark it */
} gen_val;

typedef struct gen_input {
  char name[24];
  gen_role role;
  int64_t arg; /* ROLE_COUNTS: rows T */
  double lo, hi; /* ROLE_RANGE */
} gen_input;

typedef struct gen {
  sk_graph *g;
  fuzz_reader *r;
  unsigned hostile;     /* 0: valid calls only */
  int team_cores;       /* cores of the team the graph is for */
  gen_val vals[GEN_MAX_VALUES];
  int n_vals;
  gen_input inputs[GEN_MAX_INPUTS];
  int n_inputs;
  int n_ops, n_scopes, n_outputs, n_events;
  int64_t bytes;        /* of every tracked value: generators stop past a budget */
  int64_t numel;        /* elements of every tracked value (GEN_MAX_GRAPH_NUMEL) */
  bool scope_open;
  bool scope_feed_sync; /* the open scope has feed-sync-all=1 */
  bool scope_stream_fusion;
  bool scope_abort;     /* the open scope has strict-scope-check=abort */
  bool options_abort;   /* set by gen_options: the string has strict-scope-check=abort */
  bool options_no_abort; /* gen_options never picks abort (global strings in valid mode) */
  bool options_narrow;   /* set by gen_options: stream-fusion=1 or debug-aic/aiv-num=1 (fewer cores per op) */
  bool options_no_narrow; /* gen_options never narrows (global strings in valid mode) */
  bool scope_narrow;     /* the open scope narrows */
  bool static_only;      /* new inputs keep a leading dimension of the maximum static */
  bool scoped_barrier;   /* a barrier kernel sits in a scope (valid mode: no narrowing global string) */
  bool scoped_unfusable; /* an unfusable kernel sits in a scope (valid mode: no abort global string) */
  int stream;
  int64_t max_tokens;   /* > 0: the graph has a run-time token count (set by the caller) */
  int n_dynamic_inputs; /* inputs declared SK_DIM_DYNAMIC */
  int n_refused;        /* nodes on dynamic inputs the library refused (skipped) */
  char last_options[512]; /* options of the last scope opened (for messages) */
} gen;

/* ---- Statistics ($SK_FUZZ_STATS: printed at exit) ---------------------------- */

static const char *const GEN_STAT_NAMES[] = {"reshape", "square", "add", "mul", "cast", "concat", "grouped_matmul",
                                             "moe_gating_topk", "dequant_swiglu_quant", "quant_matmul", "fuzz_copy",
                                             "fuzz_copy_unfusable", "fuzz_barrier2", "fuzz_barrier1", "scopes",
                                             "jit runs", "graphs", "dynamic graphs", "dynamic inputs",
                                             "dynamic nodes", "dynamic refusals", "graphs with token io", "token runs",
                                             "token runs at T=0", "bad sizes refused", "schema ops",
                                             /* ops only the schema-driven generator adds */
                                             "slice", "squeeze", "unsqueeze", "rms_norm", "add_rms_norm", "swiglu",
                                             "moe_init_routing", "moe_finalize_routing", "moe_gating_topk_softmax",
                                             "linear", "split", "sigmoid"};
enum { GEN_STAT_SCOPES = 14, GEN_STAT_JIT = 15, GEN_STAT_GRAPHS = 16,
       GEN_N_STATS = sizeof GEN_STAT_NAMES / sizeof GEN_STAT_NAMES[0] };
static unsigned long GEN_STATS[GEN_N_STATS];

static void gen_stats_print(void) {
  fprintf(stderr, "generator statistics (ops added, valid or not refused):\n");
  for (int i = 0; i < GEN_N_STATS; i++) fprintf(stderr, "  %-22s %lu\n", GEN_STAT_NAMES[i], GEN_STATS[i]);
}

static void gen_stat(const char *what) {
  for (int i = 0; i < GEN_N_STATS; i++)
    if (strcmp(GEN_STAT_NAMES[i], what) == 0) GEN_STATS[i]++;
}

/* ---- Custom kernels -------------------------------------------------------- */

static sk_kernel *GEN_K_COPY, *GEN_K_UNFUSABLE, *GEN_K_BARRIER2, *GEN_K_BARRIER1;

static size_t gen_arg_bytes(sk_kernel_ctx *ctx, int i) {
  sk_dtype dt = SK_DTYPE_INVALID;
  int rank = 0;
  int64_t shape[SK_MAX_RANK];
  if (sk_kernel_arg_info(ctx, i, &dt, &rank, shape) != SK_STATUS_OK) return 0;
  size_t n = sk_dtype_size(dt);
  for (int d = 0; d < rank; d++) n *= (size_t)shape[d];
  return n;
}

/* Block b of n copies its share of the bytes of input 0 to output 0. */
static void gen_copy_share(void *const *args, int64_t block, int64_t n_blocks, size_t bytes) {
  size_t per = (bytes + (size_t)n_blocks - 1) / (size_t)n_blocks;
  size_t begin = per * (size_t)block, end = begin + per < bytes ? begin + per : bytes;
  if (begin < end) memcpy((char *)args[1] + begin, (const char *)args[0] + begin, end - begin);
}

static void gen_copy_kernel(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  gen_copy_share(args, block, n_blocks, gen_arg_bytes(ctx, 0));
}

/* Copies its share, meets the other blocks at the barrier, then block 0
 * replaces byte 0 of the output with the xor of all the others (which the
 * other blocks wrote before the barrier). */
static void gen_barrier_kernel(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  size_t bytes = gen_arg_bytes(ctx, 0);
  gen_copy_share(args, block, n_blocks, bytes);
  sk_kernel_barrier(ctx);
  if (block == 0 && bytes > 1) {
    unsigned char x = 0, *out = args[1];
    for (size_t i = 1; i < bytes; i++) x ^= out[i];
    out[0] = x;
  }
}

/* Registers the kernels once (the registry lives for the process). */
static void gen_register_kernels(int team_cores) {
  if (GEN_K_COPY) return;
  if (getenv("SK_FUZZ_STATS")) atexit(gen_stats_print);
  sk_kernel_desc d = {.struct_size = sizeof d, .name = "fuzz_copy", .entry = gen_copy_kernel,
                      .type = SK_KERNEL_TYPE_VECTOR, .block_count = 3, .n_params = 2};
  if (sk_kernel_register(&d, &GEN_K_COPY) != SK_STATUS_OK) FUZZ_FAIL("register fuzz_copy: %s", sk_last_error());
  d.name = "fuzz_copy_unfusable";
  d.unfusable = 1;
  d.type = SK_KERNEL_TYPE_CUBE;
  if (sk_kernel_register(&d, &GEN_K_UNFUSABLE) != SK_STATUS_OK)
    FUZZ_FAIL("register fuzz_copy_unfusable: %s", sk_last_error());
  d.unfusable = 0;
  d.type = SK_KERNEL_TYPE_MIX;
  d.name = "fuzz_barrier2";
  d.entry = gen_barrier_kernel;
  d.barriers_per_block = 1;
  d.block_count = team_cores;
  if (sk_kernel_register(&d, &GEN_K_BARRIER2) != SK_STATUS_OK) FUZZ_FAIL("register fuzz_barrier2: %s", sk_last_error());
  d.name = "fuzz_barrier1";
  d.block_count = 1;
  if (sk_kernel_register(&d, &GEN_K_BARRIER1) != SK_STATUS_OK) FUZZ_FAIL("register fuzz_barrier1: %s", sk_last_error());
}

/* ---- Choices ---------------------------------------------------------------- */

static inline unsigned gen_u8(gen *G) { return fr_u8(G->r); }
static inline int gen_range(gen *G, int lo, int hi) { return fr_range(G->r, lo, hi); }
static inline bool gen_chance(gen *G, unsigned num) { return fr_chance(G->r, num); }

/* v, or with probability hostile/256 a hostile replacement. */
static int64_t gen_i(gen *G, int64_t v) {
  if (!G->hostile || !gen_chance(G, G->hostile)) return v;
  switch (gen_u8(G) % 12) {
    /* two's-complement wrapping: the harness itself must stay free of UB */
    case 0: return (int64_t)((uint64_t)v + 1);
    case 1: return (int64_t)((uint64_t)v - 1);
    case 2: return 0;
    case 3: return -1;
    case 4: return (int64_t)(0 - (uint64_t)v);
    case 5: return INT64_MAX;
    case 6: return INT64_MIN;
    case 7: return (int64_t)1 << 40;
    case 8: return (int64_t)1 << 31;
    case 9: return (int64_t)((uint64_t)v * 1024);
    case 10: return (int64_t)((uint64_t)v * 2 + 1);
    default: return (int64_t)fr_u64(G->r);
  }
}

static double gen_f(gen *G, double v) {
  if (!G->hostile || !gen_chance(G, G->hostile)) return v;
  static const double bad[] = {NAN, INFINITY, -INFINITY, -1.0, -0.0, 1e300, -1e-300, 3.4028236e38, 0x1p-149};
  return bad[gen_u8(G) % (sizeof bad / sizeof bad[0])];
}

static sk_dtype gen_dt(gen *G, sk_dtype v) { return (sk_dtype)gen_i(G, v); }

static const sk_dtype GEN_FLOATS[] = {SK_FP32, SK_FP16, SK_BF16};
static sk_dtype gen_float_dt(gen *G) { return GEN_FLOATS[gen_u8(G) % 3]; }
static sk_dtype gen_any_dt(gen *G) { return (sk_dtype)(1 + gen_u8(G) % (SK_DTYPE_COUNT_ - 1)); }
static bool gen_is_float(sk_dtype d) { return d == SK_FP32 || d == SK_FP16 || d == SK_BF16; }

/* A dimension: mostly 1..8, sometimes up to 64, rarely 0. */
static int64_t gen_dim_of(unsigned c) { return c < 8 ? 0 : c < 200 ? 1 + c % 8 : 1 + c % GEN_MAX_DIM; }
static int64_t gen_dim(gen *G) { return gen_dim_of(gen_u8(G)); }

/* A leading "rows" (token) dimension: gen_dim, or with a run-time token
 * count the maximum 3 times in 4 (gen_input_role makes it dynamic). The
 * same one byte either way, so static inputs replay as before. */
static int64_t gen_rows(gen *G) {
  unsigned c = gen_u8(G);
  return G->max_tokens > 0 && (c & 3) ? G->max_tokens : gen_dim_of(c);
}

/* ---- Values --------------------------------------------------------------- */

/* Records a new value after checking the library's view of it: a valid
 * dtype, rank 0..8, non-negative dims, and at most 2^48 bytes. */
static int gen_track(gen *G, sk_value v) {
  gen_val gv = {.v = v};
  if (FUZZ_CALL(sk_graph_value_info(G->g, v, &gv.dt, &gv.rank, gv.shape)) != SK_STATUS_OK)
    FUZZ_FAIL("value_info of a value the graph returned failed: %s", sk_last_error());
  FUZZ_ASSERT(sk_dtype_size(gv.dt) > 0, "value %u has dtype %d", v, (int)gv.dt);
  FUZZ_ASSERT(gv.rank >= 0 && gv.rank <= SK_MAX_RANK, "value %u has rank %d", v, gv.rank);
  /* A dynamic leading dimension is reported as SK_DIM_TOKENS(k) = -k; the
   * generators work on it at the maximum, k * max rows. */
  if (G->max_tokens > 0 && gv.rank >= 1 && gv.shape[0] < 0) {
    FUZZ_ASSERT(gv.shape[0] >= -(1 << 20), "value %u: dynamic dimension SK_DIM_TOKENS(%lld)", v,
                (long long)-gv.shape[0]);
    gv.dyn = -gv.shape[0];
    gv.shape[0] = gv.dyn * G->max_tokens;
  }
  unsigned __int128 bytes = sk_dtype_size(gv.dt);
  for (int d = 0; d < gv.rank; d++) {
    FUZZ_ASSERT(gv.shape[d] >= 0, "value %u: dimension %d is %lld", v, d, (long long)gv.shape[d]);
    bytes *= (unsigned __int128)gv.shape[d];
    if (bytes > ((unsigned __int128)1 << 48)) {
      for (int e = 0; e < gv.rank; e++) fprintf(stderr, "%sdim %d = %lld", e ? ", " : "\n", e, (long long)gv.shape[e]);
      FUZZ_FAIL("value %u (%s, rank %d) is larger than 2^48 bytes (dim %d)", v, sk_dtype_name(gv.dt), gv.rank, d);
    }
  }
  gv.numel = (int64_t)(bytes / sk_dtype_size(gv.dt));
  G->bytes += (int64_t)bytes;
  G->numel += gv.numel;
  if (G->n_vals == GEN_MAX_VALUES) return -1;
  G->vals[G->n_vals] = gv;
  return G->n_vals++;
}

static int64_t gen_numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

/* A new graph input; returns its index in vals or -1 when refused. In valid
 * mode the shape is kept within GEN_MAX_NUMEL elements. */
static int gen_input_role(gen *G, sk_dtype dt, int rank, const int64_t *shape_in, gen_role role, int64_t arg) {
  if (G->n_inputs == GEN_MAX_INPUTS || G->n_vals == GEN_MAX_VALUES) return -1;
  int rank_asked = rank;
  int64_t shape[SK_MAX_RANK + 2] = {0};
  for (int d = 0; d < rank && d < SK_MAX_RANK; d++) shape[d] = shape_in[d];
  /* Too large for a valid-mode input: the op is skipped. */
  if (!G->hostile && rank <= SK_MAX_RANK && gen_numel(rank, shape) > GEN_MAX_NUMEL) return -1;
  if (G->hostile) {
    dt = gen_dt(G, dt);
    for (int d = 0; d < rank; d++) shape[d] = gen_i(G, shape[d]);
    rank = (int)gen_i(G, rank);
    if (rank > SK_MAX_RANK + 2 || rank < -100) rank = SK_MAX_RANK + 1; /* stays within our array */
  }
  gen_input *in = &G->inputs[G->n_inputs];
  snprintf(in->name, sizeof in->name, "in%d", G->n_inputs);
  in->role = role;
  in->arg = arg;
  /* With a run-time token count, a leading dimension of the maximum is
   * mostly the token count: declared SK_DIM_DYNAMIC. A static one of the
   * same size stays now and then (x [T, H] + y [max, H] must be refused). */
  bool dynamic = G->max_tokens > 0 && !G->hostile && !G->static_only && rank >= 1 && shape[0] == G->max_tokens &&
                 gen_chance(G, 224);
  if (dynamic) shape[0] = SK_DIM_DYNAMIC;
  sk_value v = SK_VALUE_NONE;
  sk_status st = FUZZ_CALL(sk_graph_add_input(G->g, in->name, dt, rank, shape, &v));
  if (st != SK_STATUS_OK) {
    if (!G->hostile) FUZZ_FAIL("valid input %s refused: %s", in->name, sk_last_error());
    return -1;
  }
  G->n_inputs++;
  if (dynamic) {
    G->n_dynamic_inputs++;
    gen_stat("dynamic inputs");
  }
  int vi = gen_track(G, v);
  /* The generators index shapes by the rank they asked for; a hostile rank
   * stays in vals (for later picks) but is not handed back. */
  return vi >= 0 && G->vals[vi].rank == rank_asked ? vi : -1;
}

static int gen_new(gen *G, sk_dtype dt, int rank, const int64_t *shape) {
  return gen_input_role(G, dt, rank, shape, ROLE_DATA, 0);
}

/* A random existing value that satisfies pred, or -1. */
typedef bool (*gen_pred)(const gen_val *v, const void *arg);
static int gen_pick(gen *G, gen_pred pred, const void *arg) {
  int cand[GEN_MAX_VALUES], n = 0;
  for (int i = 0; i < G->n_vals; i++)
    if (G->vals[i].numel <= GEN_MAX_NUMEL && !G->vals[i].state && (!pred || pred(&G->vals[i], arg))) cand[n++] = i;
  if (!n) return -1;
  return cand[gen_u8(G) % n];
}

static bool pred_same(const gen_val *v, const void *arg) {
  const gen_val *o = arg;
  return v->dt == o->dt && v->rank == o->rank && memcmp(v->shape, o->shape, sizeof(int64_t) * (size_t)v->rank) == 0;
}
static bool pred_same_static(const gen_val *v, const void *arg) { return v->dyn == 0 && pred_same(v, arg); }
static bool pred_rank_ge1(const gen_val *v, const void *arg) { (void)arg; return v->rank >= 1; }
/* Float, rank 2, last dim <= 64 (a matmul / moe / swiglu x). */
static bool pred_float2(const gen_val *v, const void *arg) {
  (void)arg;
  return gen_is_float(v->dt) && v->rank == 2 && v->shape[1] <= GEN_MAX_DIM;
}
static bool pred_floatn(const gen_val *v, const void *arg) {
  (void)arg;
  return gen_is_float(v->dt) && v->rank >= 2 && v->shape[v->rank - 1] <= GEN_MAX_DIM;
}
static bool pred_int8_2(const gen_val *v, const void *arg) {
  (void)arg;
  return v->dt == SK_INT8 && v->rank >= 2 && v->rank <= 3 && v->shape[v->rank - 1] <= GEN_MAX_DIM;
}
static bool pred_dsq_x(const gen_val *v, const void *arg) {
  (void)arg;
  return (v->dt == SK_INT32 || gen_is_float(v->dt)) && v->rank == 2 && v->shape[1] > 0 && v->shape[1] % 2 == 0 &&
         v->shape[1] <= 2 * GEN_MAX_DIM;
}

/* An existing value satisfying pred (probability ~3/4 when one exists), else
 * a new input of dtype dt and shape. */
static int gen_reuse_or_new(gen *G, gen_pred pred, const void *arg, sk_dtype dt, int rank, const int64_t *shape) {
  if (gen_u8(G) < 192) {
    int i = gen_pick(G, pred, arg);
    if (i >= 0) return i;
  }
  return gen_new(G, dt, rank, shape);
}

/* ---- Adding ops ------------------------------------------------------------- */

/* Whether a node's inputs include a dynamic value (SK_DIM_TOKENS rows). */
static bool gen_any_dynamic(gen *G, const sk_op_input *ins, size_t n_ins) {
  if (G->max_tokens <= 0) return false;
  for (size_t i = 0; i < n_ins; i++)
    for (size_t j = 0; j < ins[i].count; j++) {
      int64_t sh[SK_MAX_RANK];
      int rank = 0;
      if (sk_graph_value_info(G->g, ins[i].values[j], NULL, &rank, sh) == SK_STATUS_OK && rank >= 1 && sh[0] < 0)
        return true;
    }
  return false;
}

/* Whether a valid-mode refusal of a node (message msg) is the run-time
 * token count's: a node on a dynamic input, refused with a message about
 * the token count (superkernel.h: shapes that cannot follow T, an op that
 * takes no run-time count). Then the node is skipped. Any other refusal
 * stays a finding: at the maximum the node is a valid static one. */
static bool gen_refusal_is_tokens(gen *G, const sk_op_input *ins, size_t n_ins, const char *msg) {
  if (!gen_any_dynamic(G, ins, n_ins) || !strstr(msg, "token")) return false;
  if (getenv("SK_FUZZ_VERBOSE")) fprintf(stderr, "fuzz: refused (dynamic): %s\n", msg);
  G->n_refused++;
  gen_stat("dynamic refusals");
  return true;
}

/* Adds the op; tracks its outputs. Returns the index of output 0 in vals, or
 * -1 when refused (a finding in valid mode). */
static int gen_add(gen *G, const char *op, const sk_op_input *ins, size_t n_ins, const sk_attr *attrs, size_t n_attrs) {
  sk_value outs[SK_KERNEL_MAX_OUTPUTS * 4];
  size_t n_out = 0;
  char name[32];
  snprintf(name, sizeof name, "n%d_%s", G->n_ops, op);
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = gen_u8(G) < 128 ? name : NULL, .inputs = ins,
                  .n_inputs = n_ins, .attrs = attrs, .n_attrs = n_attrs};
  size_t room = sizeof outs / sizeof outs[0];
  sk_status st = FUZZ_CALL(sk_graph_add_op(G->g, &d, outs, room, &n_out));
  if (st != SK_STATUS_OK) {
    if (!G->hostile) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", sk_last_error()); /* value_info below clears it */
      if (gen_refusal_is_tokens(G, ins, n_ins, msg)) return -1;
      fprintf(stderr, "op %s with %zu slots:", op, n_ins);
      for (size_t i = 0; i < n_ins; i++) {
        fprintf(stderr, " %s[", ins[i].name);
        for (size_t j = 0; j < ins[i].count; j++) {
          sk_dtype dt;
          int rank;
          int64_t sh[SK_MAX_RANK];
          sk_graph_value_info(G->g, ins[i].values[j], &dt, &rank, sh);
          fprintf(stderr, "%s%s(", j ? " " : "", sk_dtype_name(dt));
          for (int k = 0; k < rank; k++) fprintf(stderr, "%s%lld", k ? "," : "", (long long)sh[k]);
          fprintf(stderr, ")");
        }
        fprintf(stderr, "]");
      }
      fprintf(stderr, "\n");
      FUZZ_FAIL("a valid %s was refused: %s", op, msg);
    }
    return -1;
  }
  FUZZ_ASSERT(n_out >= 1 && n_out <= room, "%s: %zu outputs", op, n_out);
  G->n_ops++;
  gen_stat(op);
  if (gen_any_dynamic(G, ins, n_ins)) gen_stat("dynamic nodes");
  int first = -1;
  for (size_t i = 0; i < n_out; i++) {
    int k = gen_track(G, outs[i]);
    if (i == 0) first = k;
  }
  return first;
}

#define GEN_IN(nm, arr, n) ((sk_op_input){(nm), (arr), (n)})

static int gen_elementwise(gen *G) {
  int xi = gen_reuse_or_new(G, NULL, NULL, gen_any_dt(G), 2, (int64_t[]){gen_rows(G), gen_dim(G)});
  if (xi < 0) return -1;
  gen_val x = G->vals[xi];
  unsigned kind = gen_u8(G) % 3;
  if (kind == 0) {
    sk_op_input in[] = {GEN_IN("x", &x.v, 1)};
    return gen_add(G, "square", in, 1, NULL, 0);
  }
  int yi = gen_reuse_or_new(G, pred_same, &x, x.dt, x.rank, x.shape);
  if (yi < 0) return -1;
  sk_op_input in[] = {GEN_IN("x", &x.v, 1), GEN_IN("y", &G->vals[yi].v, 1)};
  return gen_add(G, kind == 1 ? "add" : "mul", in, 2, NULL, 0);
}

static int gen_cast(gen *G) {
  int xi = gen_reuse_or_new(G, NULL, NULL, gen_any_dt(G), 1, (int64_t[]){gen_rows(G)});
  if (xi < 0) return -1;
  sk_op_input in[] = {GEN_IN("x", &G->vals[xi].v, 1)};
  sk_attr a[] = {SK_ATTR_INT("dtype", gen_i(G, gen_any_dt(G)))};
  return gen_add(G, "cast", in, 1, a, 1);
}

static int gen_reshape(gen *G) {
  int xi = gen_reuse_or_new(G, NULL, NULL, gen_any_dt(G), 2, (int64_t[]){gen_rows(G), gen_dim(G)});
  if (xi < 0) return -1;
  gen_val x = G->vals[xi];
  int64_t shape[SK_MAX_RANK + 1];
  int rank = gen_range(G, 1, 4);
  int64_t rem = x.numel;
  for (int d = 0; d + 1 < rank; d++) {
    /* a divisor of what is left (any positive size when nothing is left) */
    int64_t div = 1;
    if (rem == 0) {
      div = gen_range(G, 0, 3);
    } else {
      int64_t divs[16];
      int nd = 0;
      for (int64_t c = 1; c <= rem && c <= 4096 && nd < 16; c++) /* hostile sizes can be huge */
        if (rem % c == 0) divs[nd++] = c;
      div = divs[gen_u8(G) % nd];
    }
    shape[d] = div;
    if (div) rem /= div;
  }
  shape[rank - 1] = rem;
  if (rem == 0 && x.numel == 0) {
    /* make sure the product is 0: one zero somewhere */
    shape[rank - 1] = 0;
  }
  if (x.numel > 0 && gen_chance(G, 96)) shape[gen_u8(G) % rank] = -1;
  for (int d = 0; d < rank; d++) shape[d] = gen_i(G, shape[d]);
  if (G->hostile && gen_chance(G, 8)) rank = SK_MAX_RANK + 1, shape[SK_MAX_RANK] = 1;
  sk_op_input in[] = {GEN_IN("x", &x.v, 1)};
  sk_attr a[] = {SK_ATTR_INTS("shape", shape, (size_t)rank)};
  return gen_add(G, "reshape", in, 1, a, 1);
}

static int gen_concat(gen *G) {
  int xi = gen_reuse_or_new(G, pred_rank_ge1, NULL, gen_any_dt(G), 2, (int64_t[]){gen_rows(G), gen_dim(G)});
  if (xi < 0) return -1;
  gen_val x = G->vals[xi];
  if (x.rank < 1) return -1;
  int dim = gen_range(G, -x.rank, x.rank - 1);
  int ax = dim < 0 ? dim + x.rank : dim;
  int n = gen_range(G, 1, 4);
  sk_value parts[4];
  parts[0] = x.v;
  for (int i = 1; i < n; i++) {
    if (gen_chance(G, 64)) {
      parts[i] = x.v; /* the same tensor twice */
      continue;
    }
    int64_t shape[SK_MAX_RANK];
    memcpy(shape, x.shape, sizeof shape);
    shape[ax] = gen_range(G, 0, 8);
    int pi = gen_new(G, x.dt, x.rank, shape);
    if (pi < 0) return -1;
    parts[i] = G->vals[pi].v;
  }
  sk_op_input in[] = {GEN_IN("x", parts, (size_t)n)};
  sk_attr a[] = {SK_ATTR_INT("dim", gen_i(G, dim))};
  return gen_add(G, "concat", in, 1, a, gen_chance(G, 200) || dim != 0 ? 1 : 0);
}

/* grouped_matmul, float or int8 path, group_type -1 or 0. */
static int gen_gmm(gen *G) {
  bool quant = gen_chance(G, 72);
  sk_dtype dt = quant ? SK_INT8 : gen_float_dt(G);
  bool moe = gen_chance(G, 100);
  sk_attr attrs[8];
  size_t na = 0;
  sk_value xs[4], ws[4], bs[4], ss[4], os[4], ps[4];
  size_t nx = 0, nw = 0, nb = 0, ns = 0, no = 0, np = 0;
  int64_t group_list[4];
  /* output dtype */
  sk_dtype out = quant ? SK_INT32 : dt;
  if (gen_chance(G, 96)) {
    out = quant ? (gen_chance(G, 64) ? SK_INT32 : gen_float_dt(G)) : gen_float_dt(G);
    attrs[na++] = SK_ATTR_INT("output_dtype", gen_i(G, out));
  }
  bool float_out = out != SK_INT32;
  int64_t m_rows[4] = {0}, n_cols = 0;
  int groups;
  if (!moe) {
    groups = gen_range(G, 1, 3);
    /* per-group operands: a list of one per group, or none */
    bool has_bias = gen_chance(G, 80), has_scale = gen_chance(G, 160), has_offset = gen_chance(G, 64),
         has_pts = gen_chance(G, 64);
    for (int gi = 0; gi < groups; gi++) {
      int xi = -1;
      if (gi == 0 && !quant) xi = gen_reuse_or_new(G, pred_floatn, NULL, dt, 2, (int64_t[]){gen_rows(G), gen_dim(G)});
      else if (gi == 0) xi = gen_reuse_or_new(G, pred_int8_2, NULL, dt, 2, (int64_t[]){gen_rows(G), gen_dim(G)});
      if (xi >= 0 && !quant && gen_is_float(G->vals[xi].dt)) dt = G->vals[xi].dt;
      if (xi >= 0 && G->vals[xi].dt != dt) xi = -1;
      if (xi < 0) {
        int rank = gen_chance(G, 200) ? 2 : 3;
        int64_t shape[3] = {gen_rows(G), gen_dim(G), gen_dim(G)};
        xi = gen_new(G, dt, rank, shape);
      }
      if (xi < 0) return -1;
      gen_val x = G->vals[xi];
      xs[nx++] = x.v;
      int64_t k = x.rank ? x.shape[x.rank - 1] : 1, n = gen_dim(G);
      m_rows[gi] = x.rank ? x.numel / (k ? k : 1) : 1;
      if (k == 0) {
        m_rows[gi] = 1;
        for (int d = 0; d + 1 < x.rank; d++) m_rows[gi] *= x.shape[d];
      }
      int wi = gen_new(G, dt, 2, (int64_t[]){gen_i(G, k), n});
      if (wi < 0) return -1;
      ws[nw++] = G->vals[wi].v;
      if (has_bias) {
        sk_dtype bdt = quant ? (float_out && gen_chance(G, 128) ? gen_float_dt(G) : SK_INT32)
                             : (gen_chance(G, 128) ? SK_FP32 : dt);
        int bi = gen_new(G, bdt, 1, (int64_t[]){n});
        if (bi < 0) return -1;
        bs[nb++] = G->vals[bi].v;
      }
      if (quant && float_out) {
        if (has_scale) {
          sk_dtype sdt = (sk_dtype[]){SK_FP32, SK_BF16, SK_INT64}[gen_u8(G) % 3];
          int si = gen_input_role(G, sdt, 1, (int64_t[]){gen_chance(G, 64) ? 1 : n},
                                  sdt == SK_INT64 ? ROLE_PACKED : ROLE_SCALE, 0);
          if (si < 0) return -1;
          ss[ns++] = G->vals[si].v;
        }
        if (has_offset) {
          int oi = gen_new(G, SK_FP32, 1, (int64_t[]){gen_chance(G, 64) ? 1 : n});
          if (oi < 0) return -1;
          os[no++] = G->vals[oi].v;
        }
        if (has_pts) {
          int pi = gen_input_role(G, SK_FP32, 1, (int64_t[]){m_rows[gi]}, ROLE_SCALE, 0);
          if (pi < 0) return -1;
          ps[np++] = G->vals[pi].v;
        }
      }
    }
    /* per-group lists must be all or nothing */
    if (ns && (int)ns != groups) ns = 0;
    if (no && (int)no != groups) no = 0;
    if (np && (int)np != groups) np = 0;
    if (gen_chance(G, 40)) attrs[na++] = SK_ATTR_INT("split_item", gen_i(G, gen_range(G, 0, 1)));
    if (G->hostile && gen_chance(G, 16)) attrs[na++] = SK_ATTR_INT("group_type", gen_i(G, -1));
  } else {
    groups = gen_range(G, 1, 4);
    int xi = quant ? gen_reuse_or_new(G, pred_int8_2, NULL, dt, 2, (int64_t[]){gen_rows(G), gen_dim(G)})
                   : gen_reuse_or_new(G, pred_float2, NULL, dt, 2, (int64_t[]){gen_rows(G), gen_dim(G)});
    if (xi >= 0 && !quant && gen_is_float(G->vals[xi].dt)) dt = G->vals[xi].dt;
    if (xi >= 0 && (G->vals[xi].dt != dt || G->vals[xi].rank != 2)) xi = gen_new(G, dt, 2, (int64_t[]){gen_rows(G), gen_dim(G)});
    if (xi < 0) return -1;
    gen_val x = G->vals[xi];
    xs[nx++] = x.v;
    int64_t m = x.shape[0], k = x.shape[1];
    n_cols = gen_dim(G);
    if (gen_chance(G, 128)) {
      int wi = gen_new(G, dt, 3, (int64_t[]){groups, gen_i(G, k), n_cols});
      if (wi < 0) return -1;
      ws[nw++] = G->vals[wi].v;
    } else {
      for (int e = 0; e < groups; e++) {
        int wi = gen_new(G, dt, 2, (int64_t[]){gen_i(G, k), n_cols});
        if (wi < 0) return -1;
        ws[nw++] = G->vals[wi].v;
      }
    }
    bool one_tensor = gen_chance(G, 128);
    if (gen_chance(G, 80)) {
      sk_dtype bdt = quant ? (float_out && gen_chance(G, 128) ? gen_float_dt(G) : SK_INT32)
                           : (gen_chance(G, 128) ? SK_FP32 : dt);
      if (one_tensor) {
        int bi = gen_new(G, bdt, 2, (int64_t[]){groups, n_cols});
        if (bi < 0) return -1;
        bs[nb++] = G->vals[bi].v;
      } else {
        for (int e = 0; e < groups; e++) {
          int bi = gen_new(G, bdt, 1, (int64_t[]){n_cols});
          if (bi < 0) return -1;
          bs[nb++] = G->vals[bi].v;
        }
      }
    }
    /* group_list: cumulative ends or counts within M */
    bool counts = gen_chance(G, 128);
    int64_t end = 0;
    for (int e = 0; e < groups; e++) {
      int64_t step = m - end > 0 ? gen_range(G, 0, m - end > 64 ? 64 : (int)(m - end)) : 0;
      end += step;
      group_list[e] = gen_i(G, counts ? step : end);
    }
    attrs[na++] = SK_ATTR_INT("group_type", gen_i(G, 0));
    int64_t n_list = gen_i(G, groups); /* hostile lengths stay within group_list[] */
    attrs[na++] = SK_ATTR_INTS("group_list", group_list, n_list >= 0 && n_list <= 4 ? (size_t)n_list : 4);
    if (counts || gen_chance(G, 64)) attrs[na++] = SK_ATTR_INT("group_list_type", gen_i(G, counts ? 1 : 0));
    if (gen_chance(G, 160)) attrs[na++] = SK_ATTR_INT("split_item", gen_i(G, gen_range(G, 0, 3)));
    if (quant && float_out) {
      if (gen_chance(G, 160)) {
        sk_dtype sdt = (sk_dtype[]){SK_FP32, SK_BF16, SK_INT64}[gen_u8(G) % 3];
        gen_role role = sdt == SK_INT64 ? ROLE_PACKED : ROLE_SCALE;
        if (one_tensor) {
          int si = gen_input_role(G, sdt, 2, (int64_t[]){groups, gen_chance(G, 64) ? 1 : n_cols}, role, 0);
          if (si < 0) return -1;
          ss[ns++] = G->vals[si].v;
        } else {
          for (int e = 0; e < groups; e++) {
            int si = gen_input_role(G, sdt, 1, (int64_t[]){gen_chance(G, 64) ? 1 : n_cols}, role, 0);
            if (si < 0) return -1;
            ss[ns++] = G->vals[si].v;
          }
        }
      }
      if (gen_chance(G, 64)) {
        for (int e = 0; e < groups; e++) {
          int oi = gen_new(G, SK_FP32, 1, (int64_t[]){n_cols});
          if (oi < 0) return -1;
          os[no++] = G->vals[oi].v;
        }
      }
      if (gen_chance(G, 64)) {
        int pi = gen_input_role(G, SK_FP32, 1, (int64_t[]){m}, ROLE_SCALE, 0);
        if (pi < 0) return -1;
        ps[np++] = G->vals[pi].v;
      }
    }
  }
  sk_op_input in[6];
  size_t ni = 0;
  in[ni++] = GEN_IN("x", xs, nx);
  in[ni++] = GEN_IN("weight", ws, nw);
  if (nb) in[ni++] = GEN_IN("bias", bs, nb);
  if (ns) in[ni++] = GEN_IN("scale", ss, ns);
  if (no) in[ni++] = GEN_IN("offset", os, no);
  if (np) in[ni++] = GEN_IN("per_token_scale", ps, np);
  return gen_add(G, "grouped_matmul", in, ni, attrs, na);
}

static int gen_moe(gen *G) {
  static const int64_t experts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256};
  int xi = -1;
  if (gen_chance(G, 128)) xi = gen_pick(G, pred_float2, NULL);
  if (xi < 0) {
    int64_t e = experts[gen_u8(G) % (sizeof experts / sizeof experts[0])];
    xi = gen_new(G, gen_float_dt(G), 2, (int64_t[]){gen_rows(G), e});
  }
  if (xi < 0) return -1;
  gen_val x = G->vals[xi];
  int64_t e = x.shape[1];
  if (e < 1) return -1;
  /* group_count: a divisor of E */
  int64_t divs[32];
  int nd = 0;
  for (int64_t c = 1; c <= e && c <= 4096 && nd < 32; c++) /* hostile sizes can be huge */
    if (e % c == 0) divs[nd++] = c;
  int64_t gc = divs[gen_u8(G) % nd];
  int64_t per = e / gc;
  int mode = per > 2 && gen_chance(G, 128) ? 1 : 0;
  int64_t kg = gen_range(G, 1, (int)gc);
  int64_t kmax = kg * per;
  int64_t k = gen_range(G, 1, kmax > 255 ? 255 : (int)kmax);
  sk_attr a[10];
  size_t na = 0;
  a[na++] = SK_ATTR_INT("k", gen_i(G, k));
  if (gc > 1 || gen_chance(G, 64)) a[na++] = SK_ATTR_INT("group_count", gen_i(G, gc));
  if (kg > 1 || gen_chance(G, 64)) a[na++] = SK_ATTR_INT("k_group", gen_i(G, kg));
  if (mode || gen_chance(G, 64)) a[na++] = SK_ATTR_INT("group_select_mode", gen_i(G, mode));
  if (gen_chance(G, 128)) a[na++] = SK_ATTR_INT("renorm", gen_i(G, gen_u8(G) & 1));
  if (gen_chance(G, 128)) a[na++] = SK_ATTR_INT("norm_type", gen_i(G, gen_u8(G) & 1));
  if (gen_chance(G, 64)) a[na++] = SK_ATTR_INT("out_flag", gen_i(G, gen_u8(G) & 1));
  if (gen_chance(G, 96)) {
    static const double f[] = {1.0, 2.5, -1.0, 0.0, 1e-3, 1e30};
    a[na++] = SK_ATTR_FLOAT("routed_scaling_factor", gen_f(G, f[gen_u8(G) % 6]));
  }
  if (gen_chance(G, 96)) {
    static const double f[] = {1e-20, 0.0, 1e-6, 1.0, INFINITY};
    a[na++] = SK_ATTR_FLOAT("eps", gen_f(G, f[gen_u8(G) % 5]));
  }
  sk_value bias;
  sk_op_input in[2] = {GEN_IN("x", &x.v, 1)};
  size_t ni = 1;
  if (gen_chance(G, 128)) {
    int bi = gen_new(G, x.dt, 1, (int64_t[]){e});
    if (bi < 0) return -1;
    bias = G->vals[bi].v;
    in[ni++] = GEN_IN("bias", &bias, 1);
  }
  return gen_add(G, "moe_gating_topk", in, ni, a, na);
}

static int gen_dsq(gen *G) {
  int xi = -1;
  if (gen_chance(G, 128)) xi = gen_pick(G, pred_dsq_x, NULL);
  if (xi < 0) {
    sk_dtype dt = gen_chance(G, 128) ? SK_INT32 : gen_float_dt(G);
    xi = gen_new(G, dt, 2, (int64_t[]){gen_rows(G), 2 * (1 + gen_u8(G) % 32)});
  }
  if (xi < 0) return -1;
  gen_val x = G->vals[xi];
  int64_t t = x.shape[0], h = x.shape[1] / 2;
  int mode = gen_u8(G) & 1;
  sk_attr a[2];
  size_t na = 0;
  if (mode || gen_chance(G, 64)) a[na++] = SK_ATTR_INT("quant_mode", gen_i(G, mode));
  if (gen_chance(G, 128)) a[na++] = SK_ATTR_INT("activate_left", gen_i(G, gen_u8(G) & 1));
  sk_value v[7];
  const char *names[7];
  size_t ni = 0;
  v[ni] = x.v, names[ni++] = "x";
  int64_t groups = 0;
  if (mode == 1 && gen_chance(G, 96)) groups = gen_range(G, 1, 4);
  if (x.dt == SK_INT32) {
    if (gen_chance(G, 128)) {
      int form = gen_u8(G) % 3;
      int si = form == 0 ? gen_input_role(G, SK_FP32, 1, (int64_t[]){2 * h}, ROLE_SCALE, 0)
               : form == 1 || !groups ? gen_input_role(G, SK_FP32, 2, (int64_t[]){1, 2 * h}, ROLE_SCALE, 0)
                                      : gen_input_role(G, SK_FP32, 2, (int64_t[]){groups, 2 * h}, ROLE_SCALE, 0);
      if (si < 0) return -1;
      v[ni] = G->vals[si].v, names[ni++] = "weight_scale";
    }
    if (gen_chance(G, 128)) {
      int si = gen_chance(G, 128) ? gen_input_role(G, SK_FP32, 1, (int64_t[]){t}, ROLE_SCALE, 0)
                                  : gen_input_role(G, SK_FP32, 2, (int64_t[]){t, 1}, ROLE_SCALE, 0);
      if (si < 0) return -1;
      v[ni] = G->vals[si].v, names[ni++] = "activation_scale";
    }
    if (gen_chance(G, 128)) {
      sk_dtype bdt = gen_chance(G, 128) ? SK_INT32 : gen_float_dt(G);
      int bi = gen_new(G, bdt, 1, (int64_t[]){2 * h});
      if (bi < 0) return -1;
      v[ni] = G->vals[bi].v, names[ni++] = "bias";
    }
  }
  if (mode == 0 || gen_chance(G, 160)) {
    sk_dtype qdt = gen_float_dt(G);
    int qi;
    if (mode == 0) {
      qi = gen_input_role(G, qdt, 1, (int64_t[]){1}, ROLE_SCALE, 0);
    } else {
      int form = gen_u8(G) % 3;
      qi = form == 0 ? gen_input_role(G, qdt, 1, (int64_t[]){h}, ROLE_SCALE, 0)
           : form == 1 || !groups ? gen_input_role(G, qdt, 2, (int64_t[]){1, h}, ROLE_SCALE, 0)
                                  : gen_input_role(G, qdt, 2, (int64_t[]){groups, h}, ROLE_SCALE, 0);
    }
    if (qi < 0) return -1;
    v[ni] = G->vals[qi].v, names[ni++] = "quant_scale";
  }
  if (mode == 0 && gen_chance(G, 128)) {
    int oi = gen_new(G, gen_float_dt(G), 1, (int64_t[]){1});
    if (oi < 0) return -1;
    v[ni] = G->vals[oi].v, names[ni++] = "quant_offset";
  }
  if (groups) {
    int gi = gen_input_role(G, SK_INT64, 1, (int64_t[]){groups}, ROLE_COUNTS, t);
    if (gi < 0) return -1;
    v[ni] = G->vals[gi].v, names[ni++] = "group_index";
  }
  sk_op_input in[7];
  for (size_t i = 0; i < ni; i++) in[i] = GEN_IN(names[i], &v[i], 1);
  return gen_add(G, "dequant_swiglu_quant", in, ni, a, na);
}

static int gen_qmm(gen *G) {
  int xi = gen_chance(G, 128) ? gen_pick(G, pred_int8_2, NULL) : -1;
  if (xi < 0) {
    int rank = gen_chance(G, 200) ? 2 : 3;
    xi = gen_new(G, SK_INT8, rank, (int64_t[]){gen_rows(G), gen_dim(G), gen_dim(G)});
  }
  if (xi < 0) return -1;
  gen_val x1 = G->vals[xi];
  int64_t m = x1.shape[x1.rank - 2], k = x1.shape[x1.rank - 1], n = gen_dim(G);
  int64_t batch = x1.rank == 3 ? x1.shape[0] : 1;
  /* x2: [k, n], or [b, k, n] broadcasting against x1's batch */
  int x2i;
  int64_t out_batch = batch;
  if (gen_chance(G, 160)) {
    x2i = gen_new(G, SK_INT8, 2, (int64_t[]){gen_i(G, k), n});
  } else {
    int64_t b2 = x1.rank == 3 ? (gen_chance(G, 128) ? batch : 1) : gen_range(G, 1, 3);
    if (x1.rank == 3 && batch == 1) b2 = gen_range(G, 1, 3);
    x2i = gen_new(G, SK_INT8, 3, (int64_t[]){b2, gen_i(G, k), n});
    out_batch = batch == 1 ? b2 : batch; /* numpy broadcasting: 1 takes the other's size (also 0) */
  }
  if (x2i < 0) return -1;
  int out_rank = x1.rank == 3 || G->vals[x2i].rank == 3 ? 3 : 2;
  static const sk_dtype outs[] = {SK_INT8, SK_FP16, SK_BF16, SK_INT32};
  sk_dtype out = outs[gen_u8(G) % 4];
  sk_attr a[1];
  size_t na = 0;
  if (out != SK_INT8 || gen_chance(G, 64)) a[na++] = SK_ATTR_INT("output_dtype", gen_i(G, out));
  sk_value v[6];
  const char *names[6];
  size_t ni = 0;
  v[ni] = x1.v, names[ni++] = "x1";
  v[ni] = G->vals[x2i].v, names[ni++] = "x2";
  if (out != SK_INT32 || gen_chance(G, 64)) {
    sk_dtype sdt = (sk_dtype[]){SK_FP32, SK_BF16, SK_INT64}[gen_u8(G) % 3];
    int si = gen_input_role(G, sdt, 1, (int64_t[]){gen_chance(G, 64) ? 1 : n}, sdt == SK_INT64 ? ROLE_PACKED : ROLE_SCALE,
                            0);
    if (si < 0) return -1;
    v[ni] = G->vals[si].v, names[ni++] = "scale";
  }
  if (out == SK_INT8 && gen_chance(G, 96)) {
    int oi = gen_new(G, SK_FP32, 1, (int64_t[]){gen_chance(G, 64) ? 1 : n});
    if (oi < 0) return -1;
    v[ni] = G->vals[oi].v, names[ni++] = "offset";
  }
  if ((out == SK_FP16 || out == SK_BF16) && gen_chance(G, 96)) {
    int pi = gen_input_role(G, SK_FP32, 1, (int64_t[]){m}, ROLE_SCALE, 0);
    if (pi < 0) return -1;
    v[ni] = G->vals[pi].v, names[ni++] = "pertoken_scale";
  }
  if (gen_chance(G, 96)) {
    bool float_bias = (out == SK_FP16 || out == SK_BF16) && gen_chance(G, 128);
    sk_dtype bdt = float_bias ? (sk_dtype[]){SK_FP32, SK_FP16, SK_BF16}[gen_u8(G) % 3] : SK_INT32;
    int bi = out_rank == 3 && gen_chance(G, 96) ? gen_new(G, bdt, 3, (int64_t[]){out_batch, 1, n})
                                               : gen_new(G, bdt, 1, (int64_t[]){n});
    if (bi < 0) return -1;
    v[ni] = G->vals[bi].v, names[ni++] = "bias";
  }
  sk_op_input in[6];
  for (size_t i = 0; i < ni; i++) in[i] = GEN_IN(names[i], &v[i], 1);
  return gen_add(G, "quant_matmul", in, ni, a, na);
}

static int gen_custom(gen *G) {
  int xi = gen_reuse_or_new(G, NULL, NULL, gen_any_dt(G), 2, (int64_t[]){gen_rows(G), gen_dim(G)});
  if (xi < 0) return -1;
  unsigned c = gen_u8(G) % 4;
  /* A one-block barrier kernel in a scope needs feed-sync-all=1. */
  if (c == 3 && G->scope_open && !G->scope_feed_sync && !G->hostile) c = 0;
  /* An unfusable kernel in a scope with strict-scope-check=abort fails the
   * compile; so does a barrier over both cores in a scope that gives ops
   * fewer cores (stream-fusion, debug-aic/aiv-num). */
  if (c == 1 && G->scope_open && G->scope_abort && !G->hostile) c = 0;
  if (c == 2 && G->scope_open && G->scope_narrow && !G->hostile) c = 0;
  if (G->scope_open && c == 1) G->scoped_unfusable = true;
  if (G->scope_open && (c == 2 || c == 3)) G->scoped_barrier = true;
  const char *type = c == 0 ? "fuzz_copy" : c == 1 ? "fuzz_copy_unfusable" : c == 2 ? "fuzz_barrier2" : "fuzz_barrier1";
  sk_op_input in[] = {GEN_IN("x", &G->vals[xi].v, 1)};
  return gen_add(G, type, in, 1, NULL, 0);
}

/* ---- Options ------------------------------------------------------------------ */

/* A legal option string (docs/options.md), a few keys in random order and
 * spelling. Sets *feed_sync / *stream_fusion when given as 1. */
static void gen_options(gen *G, char *buf, size_t size, bool *feed_sync, bool *stream_fusion) {
  static const char *const align[] = {"0", "2", "64", "512", "4096"};
  static const char *const preload[] = {"max", "none", "per-func"};
  static const char *const flags[] = {"-O0", "-O1", "-O2", "-O3", "-g", "-DSK_FUZZ=1", "-fno-inline", "-Os"};
  static const char *const pats[] = {"grouped_.*", "add|mul", "square", "cast", "quant_matmul", ".*", "fuzz_.*",
                                     "moe_gating_topk", "dequant_swiglu_quant", "concat", "nothing"};
  size_t len = 0;
  buf[0] = '\0';
  *feed_sync = *stream_fusion = false;
  G->options_abort = G->options_narrow = false;
  unsigned given = 0;
  int n = gen_range(G, 0, 6);
#define OPT_APPEND(...) \
  do { if (len < size) len += (size_t)snprintf(buf + len, size - len, __VA_ARGS__); } while (0)
  for (int i = 0; i < n; i++) {
    unsigned key = gen_u8(G) % 16;
    if (given & (1u << key)) continue; /* a key given twice is illegal */
    given |= 1u << key;
    if (len) OPT_APPEND(":");
    char v[64];
    switch (key) {
      case 0: OPT_APPEND("func-align=%s", align[gen_u8(G) % 5]); break;
      case 1: OPT_APPEND("preload_code=%s", preload[gen_u8(G) % 3]); break;
      case 2: OPT_APPEND("early-start=%d", gen_range(G, 0, 2)); break;
      case 3:
        *stream_fusion = (gen_u8(G) & 1) && !G->options_no_narrow;
        G->options_narrow |= *stream_fusion;
        OPT_APPEND("stream-fusion=%d", *stream_fusion);
        break;
      case 4:
        *feed_sync = gen_u8(G) & 1;
        OPT_APPEND("feed-sync-all=%d", *feed_sync);
        break;
      case 5: OPT_APPEND("profiling=%d", gen_u8(G) & 1); break;
      case 6: OPT_APPEND("split-mode=%d", gen_range(G, 1, 64)); break;
      case 7: OPT_APPEND("debug-dcci-all=%d", gen_u8(G) & 1); break;
      case 8: OPT_APPEND("debug_sync_all=%d", gen_u8(G) & 1); break;
      case 9:
      case 10: {
        int cores = gen_range(G, 0, G->team_cores);
        if (cores > 0 && cores < G->team_cores) {
          if (G->options_no_narrow) cores = 0;
          else G->options_narrow = true;
        }
        OPT_APPEND("debug-%s-num=%d", key == 9 ? "aic" : "aiv", cores);
        break;
      }
      case 11:
        snprintf(v, sizeof v, "%s", flags[gen_u8(G) % 8]);
        OPT_APPEND("compile-options=%s", v);
        if (gen_chance(G, 64)) OPT_APPEND(",%s", flags[gen_u8(G) % 8]);
        break;
      case 12: {
        bool abort = (gen_u8(G) & 1) && !G->options_no_abort;
        G->options_abort = abort;
        OPT_APPEND("strict-scope-check=%s", abort ? "abort" : "bypass");
        break;
      }
      case 13: OPT_APPEND("dcci-before-kernel-start=%s", pats[gen_u8(G) % 11]); break;
      case 14: OPT_APPEND("dcci-after-kernel-end=%s,%s", pats[gen_u8(G) % 11], pats[gen_u8(G) % 11]); break;
      default: OPT_APPEND("dcci_disable_on_kernel=%s", pats[gen_u8(G) % 11]); break;
    }
  }
#undef OPT_APPEND
  if (len >= size) buf[0] = '\0', *feed_sync = *stream_fusion = G->options_abort = false; /* did not fit */
}

/* ---- Structure: scopes, streams, events, outputs ---------------------------------- */

static void gen_begin_scope(gen *G) {
  char name[32];
  snprintf(name, sizeof name, "sk%d", G->n_scopes);
  bool fs = false, sf = false;
  gen_options(G, G->last_options, sizeof G->last_options, &fs, &sf);
  const char *opts = G->last_options[0] || gen_chance(G, 128) ? G->last_options : NULL;
  sk_status st = FUZZ_CALL(sk_graph_begin_scope(G->g, name, opts));
  if (st != SK_STATUS_OK) {
    if (!G->hostile) FUZZ_FAIL("begin_scope(%s, \"%s\") refused: %s", name, opts ? opts : "(null)", sk_last_error());
    return;
  }
  G->n_scopes++;
  gen_stat("scopes");
  G->scope_open = true;
  G->scope_feed_sync = fs;
  G->scope_stream_fusion = sf;
  G->scope_abort = G->options_abort && opts;
  G->scope_narrow = G->options_narrow && opts;
}

static void gen_end_scope(gen *G) {
  sk_status st = FUZZ_CALL(sk_graph_end_scope(G->g));
  if (st != SK_STATUS_OK && !G->hostile) FUZZ_FAIL("end_scope refused: %s", sk_last_error());
  if (st == SK_STATUS_OK) G->scope_open = false;
}

static void gen_stream_step(gen *G) {
  unsigned c = gen_u8(G) % 3;
  if (c == 0) {
    int s = (int)gen_i(G, gen_u8(G) & 1);
    if (FUZZ_CALL(sk_graph_set_stream(G->g, s)) == SK_STATUS_OK) G->stream = s;
    else if (!G->hostile) FUZZ_FAIL("set_stream(%d) refused: %s", s, sk_last_error());
  } else if (c == 1) {
    sk_event e;
    /* Valid only when the current stream has a node: the library says so. */
    if (FUZZ_CALL(sk_graph_record_event(G->g, &e)) == SK_STATUS_OK) G->n_events++;
  } else if (G->n_events > 0 || G->hostile) {
    sk_event e = (sk_event)gen_i(G, G->n_events ? gen_u8(G) % G->n_events : 0);
    sk_status st = FUZZ_CALL(sk_graph_wait_event(G->g, e));
    if (st != SK_STATUS_OK && !G->hostile) FUZZ_FAIL("wait_event(%u) refused: %s", e, sk_last_error());
  }
}

static void gen_mark_output(gen *G, int vi) {
  if (vi < 0 || G->vals[vi].state) return; /* the writer's output is the state's value */
  char name[24];
  snprintf(name, sizeof name, "out%d", G->n_outputs);
  sk_status st = FUZZ_CALL(sk_graph_mark_output(G->g, G->vals[vi].v, name));
  if (st != SK_STATUS_OK && !G->hostile) FUZZ_FAIL("mark_output refused: %s", sk_last_error());
  if (st == SK_STATUS_OK) G->n_outputs++;
}

#include "fuzz_schema_gen.h"

/* One op of the mix; returns its first output's index or -1. The
 * schema-driven op (fuzz_schema_gen.h) reaches every built-in op; the
 * hand-written generators above vary five of them further (group lists,
 * quantization forms). */
static int gen_op(gen *G) {
  switch (gen_u8(G) % 20) {
    case 0: case 1: case 2: return gen_elementwise(G);
    case 3: return gen_cast(G);
    case 4: return gen_reshape(G);
    case 5: return gen_concat(G);
    case 6: case 7: return gen_gmm(G);
    case 8: case 9: return gen_moe(G);
    case 10: case 11: return gen_dsq(G);
    case 12: case 13: return gen_qmm(G);
    case 14: return gen_custom(G);
    case 15: return gen_elementwise(G);
    default: return gen_schema_op(G);
  }
}

#endif

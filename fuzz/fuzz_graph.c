/* fuzz_graph: the graph builder as a program of public API calls
 * (fuzz/README.md).
 *
 * The input is read as a sequence of actions: graph inputs of random dtypes
 * and shapes, ops of the registry (built-in and custom kernels) built mostly
 * by the shape-aware generator of fuzz_gen.h with hostile perturbations,
 * fully random op descriptors (unknown slots and attributes, wrong kinds,
 * NULL pointers, wrong list lengths), scopes begun and ended at random
 * (nested, ended twice, duplicate names, random option strings), streams and
 * events, outputs, value queries, and compiles. A compiled program is
 * described, its JIT source generated, and it is run on small buffers (also
 * with wrongly bound buffers).
 *
 * Property: every call either succeeds or fails with a status and a
 * non-empty sk_last_error(); nothing crashes, leaks, hangs or trips the
 * sanitizers; every value the graph reports has a sane shape. */
#include "fuzz_gen.h"

static sk_team *TEAM; /* 2 cores */


/* Op types, slot names and attribute names come from the op schemas
 * (sk_op_info: the one list of built-in ops), plus the fuzz kernels and
 * names no op has. Filled once by LLVMFuzzerInitialize. */
#define MAX_NAMES 127 /* + the NULL name */
static const char *OP_TYPES[MAX_NAMES + 1], *SLOT_NAMES[MAX_NAMES + 1], *ATTR_NAMES[MAX_NAMES + 1];
static size_t N_OP_TYPES, N_SLOT_NAMES, N_ATTR_NAMES;

static void add_name(const char **names, size_t *n, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(names[i], name) == 0) return;
  if (*n < MAX_NAMES) names[(*n)++] = name;
}

static void names_from_schemas(void) {
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    if (sk_op_info(i, &s) != SK_STATUS_OK) FUZZ_FAIL("sk_op_info(%zu): %s", i, sk_last_error());
    add_name(OP_TYPES, &N_OP_TYPES, s.name);
    for (size_t k = 0; k < s.n_inputs; k++) add_name(SLOT_NAMES, &N_SLOT_NAMES, s.inputs[k].name);
    for (size_t k = 0; k < s.n_attrs; k++) add_name(ATTR_NAMES, &N_ATTR_NAMES, s.attrs[k].name);
  }
  static const char *const extra_ops[] = {"fuzz_copy", "fuzz_copy_unfusable", "fuzz_barrier2", "fuzz_barrier1",
                                          "no_such_op", ""};
  for (size_t i = 0; i < sizeof extra_ops / sizeof *extra_ops; i++) add_name(OP_TYPES, &N_OP_TYPES, extra_ops[i]);
  add_name(SLOT_NAMES, &N_SLOT_NAMES, "bogus");
  add_name(SLOT_NAMES, &N_SLOT_NAMES, "");
  add_name(ATTR_NAMES, &N_ATTR_NAMES, "bogus");
  add_name(ATTR_NAMES, &N_ATTR_NAMES, "");
  /* and NULL names, last (add_name compares strings) */
  OP_TYPES[N_OP_TYPES++] = NULL;
  SLOT_NAMES[N_SLOT_NAMES++] = NULL;
  ATTR_NAMES[N_ATTR_NAMES++] = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  /* SK_EXECUTOR_DEFAULT must not start the system compiler here. */
  setenv("SK_EXECUTOR", "interp", 1);
  fuzz_quiet_logs(SK_LOG_DEBUG);
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  if (sk_team_create(&tc, &TEAM) != SK_STATUS_OK) FUZZ_FAIL("team: %s", sk_last_error());
  gen_register_kernels(2);
  names_from_schemas();
  return 0;
}

static int64_t interesting_int(fuzz_reader *r) {
  static const int64_t v[] = {0, 1, 2, 3, 4, 7, 8, 16, 63, 64, 65, 255, 1024, 1025, 2048, 2049, 65535, 65536,
                              -1, -2, -3, -8, INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1, INT64_MAX, INT64_MIN,
                              (int64_t)1 << 40, (int64_t)1 << 46, (int64_t)1 << 48, (int64_t)1 << 62, SK_FP32,
                              SK_FP16, SK_BF16, SK_INT8, SK_INT32, SK_INT64, SK_BOOL, SK_UINT8,
                              SK_DTYPE_COUNT_};
  unsigned c = fr_u8(r);
  if (c < 200) return v[c % (sizeof v / sizeof v[0])];
  return (int64_t)fr_u64(r);
}

static double interesting_double(fuzz_reader *r) {
  static const double v[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-20, 1e20, NAN, INFINITY, -INFINITY, 3.4028235e38,
                             3.5e38, 0x1p-149, 0x1p-126, 1e-300, 1e300, 2.0, 8.0};
  unsigned c = fr_u8(r);
  if (c < 220) return v[c % (sizeof v / sizeof v[0])];
  uint64_t bits = fr_u64(r);
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* A value id: mostly a real one, sometimes one that does not exist. */
static sk_value any_value(gen *G) {
  unsigned c = fr_u8(G->r);
  if (c < 230 && G->n_vals) return G->vals[c % G->n_vals].v;
  if (c < 240) return (sk_value)(G->n_vals + c % 4);
  return c & 1 ? SK_VALUE_NONE : (sk_value)fr_u32(G->r);
}

/* ---- Raw calls ------------------------------------------------------------- */

static void raw_add_input(gen *G) {
  fuzz_reader *r = G->r;
  char name[300];
  const char *nm = name;
  unsigned c = fr_u8(r) % 16;
  if (c == 0) nm = NULL;
  else if (c == 1) nm = "";
  else if (c == 2) nm = "in0"; /* likely a duplicate */
  else if (c == 3) {
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
  } else if (c == 4) {
    snprintf(name, sizeof name, "%%s%%n\"'\n\t:=");
  } else {
    snprintf(name, sizeof name, "raw%u", (unsigned)fr_u8(r));
  }
  sk_dtype dt = (sk_dtype)(fr_chance(r, 220) ? fr_u8(r) % 7 : (int)fr_u32(r));
  int rank = fr_chance(r, 220) ? fr_range(r, 0, 4) : fr_range(r, -3, SK_MAX_RANK + 4);
  int64_t shape[SK_MAX_RANK + 8];
  for (int d = 0; d < SK_MAX_RANK + 8; d++) shape[d] = fr_chance(r, 200) ? fr_range(r, 0, 9) : interesting_int(r);
  sk_value v;
  bool null_shape = fr_chance(r, 8), null_out = fr_chance(r, 8);
  sk_status st = FUZZ_CALL(sk_graph_add_input(G->g, nm, dt, rank, null_shape ? NULL : shape, null_out ? NULL : &v));
  if (st == SK_STATUS_OK) {
    FUZZ_ASSERT(!null_out && nm && *nm && rank >= 0 && rank <= SK_MAX_RANK, "add_input accepted a bad call");
    gen_track(G, v);
  }
}

/* An op descriptor with everything random. */
static void raw_add_op(gen *G) {
  fuzz_reader *r = G->r;
  const char *type = OP_TYPES[fr_u8(r) % N_OP_TYPES];
  sk_value vals[6][8];
  sk_op_input ins[8];
  size_t n_ins = fr_u8(r) % 7;
  for (size_t i = 0; i < n_ins; i++) {
    size_t count = fr_chance(r, 200) ? 1 : fr_u8(r) % 9;
    for (size_t j = 0; j < 8; j++) vals[i % 6][j] = any_value(G);
    ins[i].name = SLOT_NAMES[fr_u8(r) % N_SLOT_NAMES];
    ins[i].values = fr_chance(r, 8) ? NULL : vals[i % 6];
    ins[i].count = count;
  }
  int64_t ints[4][12];
  sk_attr attrs[8];
  size_t n_attrs = fr_u8(r) % 6;
  sk_op_schema schema;
  bool has_schema = sk_op_info_by_name(type, &schema) == SK_STATUS_OK && schema.n_attrs > 0;
  for (size_t i = 0; i < n_attrs; i++) {
    sk_attr *a = &attrs[i];
    memset(a, 0, sizeof *a);
    a->name = ATTR_NAMES[fr_u8(r) % N_ATTR_NAMES];
    unsigned k = fr_u8(r) % 16;
    a->kind = k < 5 ? SK_ATTR_KIND_INT : k < 9 ? SK_ATTR_KIND_FLOAT : k < 15 ? SK_ATTR_KIND_INTS : (sk_attr_kind)(k * 7);
    a->i = interesting_int(r);
    if (has_schema && fr_chance(r, 160)) { /* one of the op's own, at and around its range */
      const sk_op_attr_info *info = &schema.attrs[fr_u8(r) % schema.n_attrs];
      a->name = info->name;
      a->kind = info->kind;
      if (info->has_range) {
        /* Ranges may span all of int64 (slice's start and end): the
         * outside edges saturate and the midpoint is taken in uint64. */
        int64_t lo = info->min, hi = info->max;
        int64_t edges[] = {lo, hi, lo > INT64_MIN ? lo - 1 : lo, hi < INT64_MAX ? hi + 1 : hi,
                           lo + (int64_t)(((uint64_t)hi - (uint64_t)lo) / 2)};
        a->i = edges[fr_u8(r) % 5];
      }
    }
    a->f = interesting_double(r);
    for (int j = 0; j < 12; j++) ints[i % 4][j] = fr_chance(r, 160) ? fr_range(r, -1, 8) : interesting_int(r);
    a->n_ints = fr_u8(r) % 13;
    a->ints = fr_chance(r, 8) ? NULL : ints[i % 4];
  }
  sk_op_desc d = {.struct_size = fr_chance(r, 240) ? sizeof d : (size_t)fr_u8(r) % 64,
                  .op = type,
                  .name = fr_chance(r, 128) ? NULL : fr_chance(r, 8) ? "" : "raw_node",
                  .inputs = fr_chance(r, 8) ? NULL : ins,
                  .n_inputs = n_ins,
                  .attrs = fr_chance(r, 8) ? NULL : attrs,
                  .n_attrs = n_attrs};
  sk_value outs[8];
  size_t max_out = fr_chance(r, 220) ? 8 : fr_u8(r) % 9, n_out = 0;
  bool null_outs = fr_chance(r, 8);
  sk_status st = FUZZ_CALL(sk_graph_add_op(fr_chance(r, 4) ? NULL : G->g, fr_chance(r, 4) ? NULL : &d,
                                           null_outs ? NULL : outs, max_out, fr_chance(r, 32) ? NULL : &n_out));
  if (st == SK_STATUS_OK) {
    size_t n = n_out ? n_out : 1;
    for (size_t i = 0; i < n && i < max_out; i++) gen_track(G, outs[i]);
  }
}

static void raw_scope(gen *G) {
  fuzz_reader *r = G->r;
  char name[32], opts[96];
  snprintf(name, sizeof name, "sk%d", G->n_scopes);
  const char *nm = name;
  unsigned c = fr_u8(r) % 10;
  if (c == 0) nm = NULL;
  else if (c == 1) nm = "";
  else if (c == 2) nm = "sk0";
  const char *o = NULL;
  unsigned oc = fr_u8(r) % 4;
  bool fs = false, sf = false;
  if (oc == 1) {
    gen_options(G, opts, sizeof opts, &fs, &sf);
    o = opts;
  } else if (oc == 2) { /* a short raw string from the input */
    size_t n = fr_u8(r) % 24, i = 0;
    for (; i < n && !fr_empty(r); i++) opts[i] = (char)(fr_u8(r) | 1); /* no NUL */
    opts[i] = '\0';
    o = opts;
  } else if (oc == 3) {
    o = "";
  }
  if (FUZZ_CALL(sk_graph_begin_scope(G->g, nm, o)) == SK_STATUS_OK) {
    G->n_scopes++;
    G->scope_open = true;
    G->scope_feed_sync = fs;
  }
}

static void raw_mark_output(gen *G) {
  fuzz_reader *r = G->r;
  char name[24];
  snprintf(name, sizeof name, "out%d", G->n_outputs);
  unsigned c = fr_u8(r) % 8;
  const char *nm = c == 0 ? NULL : c == 1 ? "" : c == 2 ? "out0" : c == 3 ? "in0" : name;
  if (FUZZ_CALL(sk_graph_mark_output(fr_chance(r, 4) ? NULL : G->g, any_value(G), nm)) == SK_STATUS_OK)
    G->n_outputs++;
}

static void raw_value_info(gen *G) {
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  sk_value v = any_value(G);
  bool nulls = fr_chance(G->r, 64);
  FUZZ_CALL(sk_graph_value_info(G->g, v, nulls ? NULL : &dt, nulls ? NULL : &rank, nulls ? NULL : shape));
}

/* ---- Compile and run ---------------------------------------------------------- */

/* Bytes of every value of the graph (ids 0.. until one does not exist),
 * counting a zero dimension as 1: an empty [0, 2^40] tensor still makes the
 * ops tile and size workspaces by its other dims (fuzz/README.md, known
 * issues), which would only test malloc. */
static unsigned __int128 graph_bytes(const sk_graph *g) {
  unsigned __int128 total = 0;
  for (sk_value v = 0;; v++) {
    sk_dtype dt;
    int rank;
    int64_t shape[SK_MAX_RANK];
    if (sk_graph_value_info(g, v, &dt, &rank, shape) != SK_STATUS_OK) break;
    unsigned __int128 b = sk_dtype_size(dt);
    for (int d = 0; d < rank; d++) b *= (unsigned __int128)(shape[d] ? shape[d] : 1);
    total += b;
  }
  return total;
}

static size_t info_bytes(sk_dtype dt, int rank, const int64_t *shape) {
  size_t n = sk_dtype_size(dt);
  for (int d = 0; d < rank; d++) n *= (size_t)shape[d];
  return n;
}

/* Binds buffers for every input and output and runs p; with `wrong` one
 * binding is broken (size off by one, a name missing or unknown, bound
 * twice) and the run must fail. */
static void run_program(gen *G, sk_program *p, sk_team *team, bool wrong) {
  size_t ni = sk_program_num_inputs(p), no = sk_program_num_outputs(p);
  sk_buffer *in = calloc(ni + 1, sizeof *in), *out = calloc(no + 1, sizeof *out);
  FUZZ_ASSERT(in && out, "out of memory");
  uint64_t seed = fr_u64(G->r);
  for (size_t i = 0; i < ni + no; i++) {
    const char *name = NULL;
    sk_dtype dt;
    int rank;
    int64_t shape[SK_MAX_RANK];
    bool is_in = i < ni;
    sk_status st = is_in ? sk_program_input_info(p, i, &name, &dt, &rank, shape)
                         : sk_program_output_info(p, i - ni, &name, &dt, &rank, shape);
    FUZZ_ASSERT(st == SK_STATUS_OK && name, "binding info %zu: %s", i, sk_last_error());
    size_t bytes = info_bytes(dt, rank, shape);
    unsigned char *data = malloc(bytes + 1);
    FUZZ_ASSERT(data != NULL, "out of memory");
    for (size_t b = 0; b < bytes; b++) data[b] = (unsigned char)(fuzz_mix(&seed) >> 56);
    sk_buffer buf = {name, data, bytes};
    if (is_in) in[i] = buf;
    else out[i - ni] = buf;
  }
  size_t n_in = ni, n_out = no;
  if (wrong) {
    unsigned c = fr_u8(G->r) % 4;
    sk_buffer *list = (c & 1) && no ? out : in;
    size_t n = list == out ? no : ni;
    if (n) {
      if (c < 2) list[0].bytes += 1;
      else list[0].name = "no_such_binding";
    } else {
      wrong = false;
    }
  }
  sk_status st = FUZZ_CALL(sk_program_run(p, team, in, n_in, out, n_out));
  if (wrong) FUZZ_ASSERT(st != SK_STATUS_OK, "a run with a wrong binding succeeded");
  for (size_t i = 0; i < ni; i++) free(in[i].data);
  for (size_t i = 0; i < no; i++) free(out[i].data);
  free(in);
  free(out);
}

static void compile_and_run(gen *G) {
  fuzz_reader *r = G->r;
  /* Huge (hostile) shapes are legal up to 2^48 bytes; compiling them would
   * only test malloc (the library fails cleanly with OUT_OF_MEMORY, but ASan
   * and libFuzzer abort on such allocations). */
  if (graph_bytes(G->g) > ((unsigned __int128)32 << 20)) return;
  static const sk_executor ex[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_REFERENCE, SK_EXECUTOR_DEFAULT,
                                   SK_EXECUTOR_INTERP};
  char opts[256];
  bool fs, sf;
  gen_options(G, opts, sizeof opts, &fs, &sf);
  sk_team *team = fr_chance(r, 200) ? TEAM : NULL;
  sk_compile_config cfg = {.struct_size = sizeof cfg,
                           .team = team,
                           .executor = fr_chance(r, 250) ? ex[fr_u8(r) % 5] : (sk_executor)(int)fr_u8(r),
                           .default_options = fr_chance(r, 128) ? opts : NULL,
                           .profile = fr_chance(r, 16)};
  if (fr_chance(r, 4)) cfg.struct_size = fr_u8(r) % 64;
  sk_program *p = NULL;
  sk_status st = FUZZ_CALL(sk_compile(fr_chance(r, 2) ? NULL : G->g, fr_chance(r, 8) ? NULL : &cfg, &p));
  if (st != SK_STATUS_OK) {
    FUZZ_ASSERT(p == NULL, "a failed compile returned a program");
    return;
  }
  char *text = NULL;
  if (FUZZ_CALL(sk_program_describe(p, &text)) == SK_STATUS_OK) FUZZ_ASSERT(text != NULL, "describe: NULL text");
  sk_free(text);
  char *src = NULL;
  const char *scope = fr_chance(r, 128) ? NULL : fr_chance(r, 128) ? "sk0" : "sk1.0";
  if (FUZZ_CALL(sk_program_jit_source(p, scope, &src)) == SK_STATUS_OK) FUZZ_ASSERT(src && *src, "empty JIT source");
  sk_free(src);
  size_t ni = sk_program_num_inputs(p), no = sk_program_num_outputs(p);
  const char *name;
  FUZZ_CALL(sk_program_input_info(p, ni, &name, NULL, NULL, NULL));  /* out of range */
  FUZZ_CALL(sk_program_output_info(p, no, &name, NULL, NULL, NULL)); /* out of range */
  if (graph_bytes(G->g) <= ((unsigned __int128)4 << 20)) {
    sk_team *run_team = cfg.struct_size == sizeof cfg ? team : NULL;
    if (fr_chance(r, 16)) run_team = run_team ? NULL : TEAM; /* maybe the wrong team */
    run_program(G, p, run_team, false);
    if (fr_chance(r, 48)) run_program(G, p, run_team, true);
    if (fr_chance(r, 16)) sk_program_reset_profile(p);
  }
  sk_program_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  fuzz_reader r = {data, size};
  gen G;
  memset(&G, 0, sizeof G);
  G.r = &r;
  G.hostile = 1 + fr_u8(&r) % 24; /* 0.4% .. 9.4% of the choices go hostile */
  G.team_cores = 2;
  if (FUZZ_CALL(sk_graph_create(&G.g)) != SK_STATUS_OK) return 0;
  for (int step = 0; step < 64 && !fr_empty(&r) && G.bytes < (16 << 20); step++) {
    switch (fr_u8(&r) % 16) {
      case 0: case 1: case 2: case 3: case 4: case 5: {
        int vi = gen_op(&G);
        if (vi >= 0 && fr_chance(&r, 96)) gen_mark_output(&G, vi);
        break;
      }
      case 6: raw_add_input(&G); break;
      case 7: raw_add_op(&G); break;
      case 8: if (G.scope_open && fr_chance(&r, 200)) gen_end_scope(&G); else gen_begin_scope(&G); break;
      case 9: raw_scope(&G); break;
      case 10: /* end, maybe with none open or twice */
        if (FUZZ_CALL(sk_graph_end_scope(G.g)) == SK_STATUS_OK) G.scope_open = false;
        break;
      case 11: gen_stream_step(&G); break;
      case 12: raw_mark_output(&G); break;
      case 13: raw_value_info(&G); break;
      case 14: compile_and_run(&G); break;
      default: /* NULL graphs */
        FUZZ_CALL(sk_graph_end_scope(NULL));
        FUZZ_CALL(sk_graph_begin_scope(NULL, "s", NULL));
        FUZZ_CALL(sk_graph_set_stream(NULL, 0));
        FUZZ_CALL(sk_graph_wait_event(NULL, 0));
        FUZZ_CALL(sk_graph_value_info(NULL, 0, NULL, NULL, NULL));
        break;
    }
  }
  if (G.scope_open && fr_chance(&r, 220)) gen_end_scope(&G);
  if (G.n_vals && G.n_outputs == 0) gen_mark_output(&G, G.n_vals - 1);
  compile_and_run(&G);
  sk_graph_destroy(G.g);
  return 0;
}

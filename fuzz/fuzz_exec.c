/* fuzz_exec: execution agreement (fuzz/README.md).
 *
 * The input builds a random VALID graph with the generator of fuzz_gen.h
 * (chains of square / add / mul / cast / reshape / concat, grouped_matmul
 * on the float and int8 paths, moe_gating_topk, dequant_swiglu_quant,
 * quant_matmul and custom kernels, feeding each other), with super-kernel
 * scopes carrying random legal option strings, streams and events. The
 * inputs are filled from the input bytes (ranges per dtype and role; one
 * fill mode in four also produces Inf, huge, tiny and subnormal values).
 *
 * The graph is compiled for a 2-core team with the EAGER, INTERP, JIT and
 * REFERENCE executors and run; every output must be bitwise equal (memcmp)
 * across all four, and a second run of each fused program must repeat the
 * first, as must two runs of it in a run context of its own, bound by
 * index. Output buffers start with a different pattern per executor, so an
 * element that one executor leaves unwritten shows as a mismatch. A valid
 * graph that fails to build, compile or run is a finding too.
 *
 * JIT compiles take tens of milliseconds, so JIT runs on one input in
 * $SK_FUZZ_JIT_EVERY (default 4, chosen by a hash of the input, so a saved
 * input replays the same way; 1 = every input). The JIT cache is
 * $SK_CACHE_DIR, by default ${TMPDIR:-/tmp}/sk-fuzz-jit-cache. */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz_gen.h"

static sk_team *TEAM;
static unsigned JIT_EVERY = 4;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet_logs(SK_LOG_WARN);
  if (!getenv("SK_CACHE_DIR")) {
    static char dir[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sk-fuzz-jit-cache", tmp && *tmp ? tmp : "/tmp");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) FUZZ_FAIL("mkdir %s: %s", dir, strerror(errno));
    setenv("SK_CACHE_DIR", dir, 1);
  }
  const char *every = getenv("SK_FUZZ_JIT_EVERY");
  if (every && atoi(every) >= 0) JIT_EVERY = (unsigned)atoi(every);
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  if (sk_team_create(&tc, &TEAM) != SK_STATUS_OK) FUZZ_FAIL("team: %s", sk_last_error());
  gen_register_kernels(2);
  return 0;
}

/* ---- Filling inputs ------------------------------------------------------------ */

static float fill_float(uint64_t *s, int mode) {
  uint64_t z = fuzz_mix(s);
  double u = (double)(z >> 11) * 0x1p-53; /* [0, 1) */
  switch (mode) {
    case 0: return (float)(2 * u - 1);
    case 1: return (float)((2 * u - 1) * 100);
    case 2: return (float)((2 * u - 1) * 4);
    case 4: { /* any bits: NaNs with payloads too */
      uint32_t bits = (uint32_t)(z >> 16);
      float f;
      memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: {
      static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, 65504.0f, 65520.0f, 3.0e38f,
                                      -3.0e38f, 0x1p-149f, 0x1p-126f, 0x1p-24f, 1e-8f, 0.5f, 88.72f, -103.9f};
      if ((z & 3) == 0) return special[(z >> 2) % (sizeof special / sizeof special[0])];
      /* any finite float: random exponent and mantissa */
      uint32_t bits = (uint32_t)(z >> 8);
      if (((bits >> 23) & 0xFF) == 0xFF) bits &= ~(1u << 23);
      float f;
      memcpy(&f, &bits, sizeof f);
      return f;
    }
  }
}

static void store_float(void *p, sk_dtype dt, size_t i, float v) {
  if (dt == SK_FP32) ((float *)p)[i] = v;
  else if (dt == SK_FP16) ((uint16_t *)p)[i] = sk_fp32_to_fp16(v);
  else ((uint16_t *)p)[i] = sk_fp32_to_bf16(v);
}

static void fill_input(const gen_input *in, sk_dtype dt, void *data, size_t n, uint64_t *s, int mode) {
  for (size_t i = 0; i < n; i++) {
    uint64_t z = fuzz_mix(s);
    switch (in->role == ROLE_PACKED ? -1 : in->role == ROLE_COUNTS ? -2 : (int)dt) {
      case -1: { /* packed quant params: scale in [2^-12, 2^-4), offset in [-20, 20] */
        float scale = (float)(0x1p-12 * (1 + (double)(z >> 40) * 0x1p-24 * 255));
        float offset = (float)((int)((z >> 8) & 63) - 20);
        if (mode >= 3 && (z & 7) == 0) scale = -scale;
        if (sk_trans_quant_param(&scale, &offset, 1, (int64_t *)data + i) != SK_STATUS_OK)
          FUZZ_FAIL("trans_quant_param(%g, %g): %s", scale, offset, sk_last_error());
        break;
      }
      case -2: /* group row counts, sometimes negative or past T */
        ((int64_t *)data)[i] = (int64_t)(z % (uint64_t)(in->arg + 5)) - 2;
        break;
      case SK_INT8: ((int8_t *)data)[i] = (int8_t)z; break;
      case SK_INT32:
        ((int32_t *)data)[i] = mode >= 3 ? (int32_t)z : (int32_t)(z % 2001) - 1000;
        break;
      case SK_INT64: ((int64_t *)data)[i] = mode >= 3 ? (int64_t)z : (int64_t)(z % 2001) - 1000; break;
      case SK_UINT8: ((uint8_t *)data)[i] = (uint8_t)z; break;
      case SK_BOOL: ((uint8_t *)data)[i] = mode >= 3 ? (uint8_t)z : (uint8_t)(z & 1); break; /* any byte reads */
      default: {
        float v = fill_float(s, mode);
        if (in->role == ROLE_SCALE && mode < 3) v = fabsf(v) * 0.0625f + 0x1p-10f;
        store_float(data, dt, i, v);
        break;
      }
    }
  }
}

/* ---- Running one executor -------------------------------------------------------- */

typedef struct exec_result {
  const char *name;
  sk_executor ex;
  sk_program *p;
  void **outs;     /* one buffer per program output */
  size_t *bytes;
} exec_result;

static const char *ex_name(sk_executor ex) {
  switch (ex) {
    case SK_EXECUTOR_EAGER: return "EAGER";
    case SK_EXECUTOR_INTERP: return "INTERP";
    case SK_EXECUTOR_JIT: return "JIT";
    case SK_EXECUTOR_REFERENCE: return "REFERENCE";
    default: return "?";
  }
}

static size_t binding_bytes(const sk_program *p, size_t i, bool input, const char **name) {
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  sk_status st = input ? sk_program_input_info(p, i, name, &dt, &rank, shape)
                       : sk_program_output_info(p, i, name, &dt, &rank, shape);
  FUZZ_ASSERT(st == SK_STATUS_OK, "binding info: %s", sk_last_error());
  size_t n = sk_dtype_size(dt);
  for (int d = 0; d < rank; d++) n *= (size_t)shape[d];
  return n;
}

static void describe_failure(const gen *G, sk_program *p, const char *global) {
  fprintf(stderr, "graph: %d inputs, %d ops, %d scopes (last scope options \"%s\"), default options \"%s\"\n",
          G->n_inputs, G->n_ops, G->n_scopes, G->last_options, global ? global : "");
  char *text = NULL;
  if (p && sk_program_describe(p, &text) == SK_STATUS_OK) fprintf(stderr, "%s\n", text);
  sk_free(text);
}

/* Runs p with inputs bound; outputs prefilled with `pattern`. */
static void run_into(const gen *G, sk_program *p, const sk_buffer *in, size_t ni, void **outs, size_t *bytes,
                     unsigned char pattern, const char *what, const char *global) {
  size_t no = sk_program_num_outputs(p);
  sk_buffer *ob = calloc(no + 1, sizeof *ob);
  FUZZ_ASSERT(ob != NULL, "out of memory");
  for (size_t j = 0; j < no; j++) {
    const char *name;
    bytes[j] = binding_bytes(p, j, false, &name);
    memset(outs[j], pattern, bytes[j] + 1);
    ob[j] = (sk_buffer){name, outs[j], bytes[j]};
  }
  sk_status st = FUZZ_CALL(sk_program_run(p, TEAM, in, ni, ob, no));
  if (st != SK_STATUS_OK) {
    describe_failure(G, p, global);
    FUZZ_FAIL("%s: running a valid graph failed: %s", what, sk_last_error());
  }
  for (size_t j = 0; j < no; j++)
    FUZZ_ASSERT(((unsigned char *)outs[j])[bytes[j]] == pattern, "%s wrote past output %zu", what, j);
  free(ob);
}

/* The same run in a run context of its own, bound by index, twice (its
 * flags and epochs carry over its launches); the outputs of the second. */
static void run_in_context(const gen *G, sk_program *p, const sk_buffer *in, size_t ni, void **outs, size_t *bytes,
                           const char *what, const char *global) {
  size_t no = sk_program_num_outputs(p);
  sk_run_context *ctx = NULL;
  sk_status st = FUZZ_CALL(sk_run_context_create(p, &ctx));
  for (size_t i = 0; st == SK_STATUS_OK && i < ni; i++)
    st = FUZZ_CALL(sk_run_context_bind(ctx, SK_IO_INPUT, i, in[i].data, in[i].bytes));
  for (size_t j = 0; st == SK_STATUS_OK && j < no; j++) {
    const char *name;
    bytes[j] = binding_bytes(p, j, false, &name);
    memset(outs[j], 0x6B, bytes[j] + 1);
    st = FUZZ_CALL(sk_run_context_bind(ctx, SK_IO_OUTPUT, j, outs[j], bytes[j]));
  }
  for (int rep = 0; st == SK_STATUS_OK && rep < 2; rep++) st = FUZZ_CALL(sk_run_context_run(ctx, TEAM));
  if (st != SK_STATUS_OK) {
    describe_failure(G, p, global);
    FUZZ_FAIL("%s: running a valid graph in a run context failed: %s", what, sk_last_error());
  }
  for (size_t j = 0; j < no; j++)
    FUZZ_ASSERT(((unsigned char *)outs[j])[bytes[j]] == 0x6B, "%s wrote past output %zu (run context)", what, j);
  sk_run_context_destroy(ctx);
}

/* Prints the first differing element of output j. */
static void report_mismatch(const sk_program *p, size_t j, const void *a, const void *b, size_t bytes) {
  const char *name;
  sk_dtype dt;
  int rank;
  int64_t shape[SK_MAX_RANK];
  sk_program_output_info(p, j, &name, &dt, &rank, shape);
  size_t es = sk_dtype_size(dt);
  for (size_t i = 0; i < bytes / es; i++) {
    if (memcmp((const char *)a + i * es, (const char *)b + i * es, es) == 0) continue;
    uint64_t x = 0, y = 0;
    memcpy(&x, (const char *)a + i * es, es);
    memcpy(&y, (const char *)b + i * es, es);
    fprintf(stderr, "output %s (%s, %zu elements) differs first at element %zu: 0x%llx vs 0x%llx\n", name,
            sk_dtype_name(dt), bytes / es, i, (unsigned long long)x, (unsigned long long)y);
    return;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2048) return 0;
  fuzz_reader r = {data, size};
  gen G;
  memset(&G, 0, sizeof G);
  G.r = &r;
  G.team_cores = 2;
  if (FUZZ_CALL(sk_graph_create(&G.g)) != SK_STATUS_OK) return 0;

  /* ---- build ---- */
  int fill_mode = fr_u8(&r) % 5;
  int n_ops = 1 + fr_u8(&r) % 10, last = -1;
  for (int i = 0; i < n_ops && G.bytes < (2 << 20); i++) {
    unsigned c = fr_u8(&r);
    if (c < 48) {
      if (G.scope_open) gen_end_scope(&G);
      else gen_begin_scope(&G);
    } else if (c < 64) {
      gen_stream_step(&G);
    }
    int vi = gen_op(&G);
    if (vi >= 0) {
      last = vi;
      if (fr_chance(&r, 72)) gen_mark_output(&G, vi);
    }
  }
  if (G.scope_open) gen_end_scope(&G);
  if (last >= 0) gen_mark_output(&G, last);
  if (fr_chance(&r, 12) && G.n_vals) gen_mark_output(&G, fr_u8(&r) % G.n_vals); /* maybe an input */
  if (G.n_outputs == 0) {
    sk_graph_destroy(G.g);
    return 0;
  }
  char global[256];
  bool fs, sf;
  /* Scopes that do not set an option inherit the global one. */
  G.options_no_abort = G.scoped_unfusable;
  G.options_no_narrow = G.scoped_barrier;
  gen_options(&G, global, sizeof global, &fs, &sf);
  const char *global_opts = fr_chance(&r, 96) ? global : NULL;
  uint64_t seed = fr_u64(&r) ^ fuzz_hash(data, size);
  bool with_jit = JIT_EVERY && fuzz_hash(data, size) % JIT_EVERY == 0;

  /* ---- compile ---- */
  exec_result res[4] = {{.ex = SK_EXECUTOR_REFERENCE}, {.ex = SK_EXECUTOR_EAGER}, {.ex = SK_EXECUTOR_INTERP},
                        {.ex = SK_EXECUTOR_JIT}};
  int n_res = with_jit ? 4 : 3;
  gen_stat("graphs");
  if (with_jit) gen_stat("jit runs");
  for (int k = 0; k < n_res; k++) {
    res[k].name = ex_name(res[k].ex);
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = TEAM, .executor = res[k].ex,
                             .default_options = global_opts};
    if (FUZZ_CALL(sk_compile(G.g, &cfg, &res[k].p)) != SK_STATUS_OK) {
      describe_failure(&G, NULL, global_opts);
      FUZZ_FAIL("%s: compiling a valid graph failed: %s", res[k].name, sk_last_error());
    }
  }
  sk_graph_destroy(G.g);

  /* ---- inputs ---- */
  sk_program *p0 = res[0].p;
  size_t ni = sk_program_num_inputs(p0), no = sk_program_num_outputs(p0);
  FUZZ_ASSERT(ni == (size_t)G.n_inputs, "program has %zu inputs, graph %d", ni, G.n_inputs);
  sk_buffer *in = calloc(ni + 1, sizeof *in);
  FUZZ_ASSERT(in != NULL, "out of memory");
  for (size_t i = 0; i < ni; i++) {
    const char *name;
    size_t bytes = binding_bytes(p0, i, true, &name);
    sk_dtype dt;
    FUZZ_ASSERT(sk_program_input_info(p0, i, NULL, &dt, NULL, NULL) == SK_STATUS_OK, "input info");
    void *buf = malloc(bytes + 1);
    FUZZ_ASSERT(buf != NULL, "out of memory");
    FUZZ_ASSERT(strcmp(name, G.inputs[i].name) == 0, "input %zu is '%s', expected '%s'", i, name, G.inputs[i].name);
    fill_input(&G.inputs[i], dt, buf, bytes / sk_dtype_size(dt), &seed, fill_mode);
    in[i] = (sk_buffer){name, buf, bytes};
  }

  /* ---- run and compare ---- */
  for (int k = 0; k < n_res; k++) {
    res[k].outs = calloc(no + 1, sizeof(void *));
    res[k].bytes = calloc(no + 1, sizeof(size_t));
    FUZZ_ASSERT(res[k].outs && res[k].bytes, "out of memory");
    for (size_t j = 0; j < no; j++) {
      const char *name;
      res[k].outs[j] = malloc(binding_bytes(p0, j, false, &name) + 1);
      FUZZ_ASSERT(res[k].outs[j] != NULL, "out of memory");
    }
    run_into(&G, res[k].p, in, ni, res[k].outs, res[k].bytes, (unsigned char)(0xA5 + 17 * k), res[k].name,
             global_opts);
  }
  for (int k = 1; k < n_res; k++) {
    for (size_t j = 0; j < no; j++) {
      if (memcmp(res[0].outs[j], res[k].outs[j], res[0].bytes[j]) == 0) continue;
      report_mismatch(p0, j, res[k].outs[j], res[0].outs[j], res[0].bytes[j]);
      describe_failure(&G, res[k].p, global_opts);
      FUZZ_FAIL("%s differs from REFERENCE on output %zu (fill mode %d)", res[k].name, j, fill_mode);
    }
  }
  /* A second run of each fused program repeats the first (flags and
   * epochs carry over launches). */
  for (int k = 2; k < n_res; k++) {
    void **again = calloc(no + 1, sizeof(void *));
    size_t *bytes = calloc(no + 1, sizeof(size_t));
    FUZZ_ASSERT(again && bytes, "out of memory");
    for (size_t j = 0; j < no; j++) {
      again[j] = malloc(res[k].bytes[j] + 1);
      FUZZ_ASSERT(again[j] != NULL, "out of memory");
    }
    run_into(&G, res[k].p, in, ni, again, bytes, 0x3C, res[k].name, global_opts);
    for (size_t j = 0; j < no; j++) {
      if (memcmp(again[j], res[k].outs[j], bytes[j]) != 0) {
        report_mismatch(p0, j, again[j], res[k].outs[j], bytes[j]);
        describe_failure(&G, res[k].p, global_opts);
        FUZZ_FAIL("%s: the second run differs from the first on output %zu", res[k].name, j);
      }
    }
    run_in_context(&G, res[k].p, in, ni, again, bytes, res[k].name, global_opts);
    for (size_t j = 0; j < no; j++) {
      if (memcmp(again[j], res[k].outs[j], bytes[j]) != 0) {
        report_mismatch(p0, j, again[j], res[k].outs[j], bytes[j]);
        describe_failure(&G, res[k].p, global_opts);
        FUZZ_FAIL("%s: a run in a run context differs from sk_program_run on output %zu", res[k].name, j);
      }
      free(again[j]);
    }
    free(again);
    free(bytes);
  }

  for (int k = 0; k < n_res; k++) {
    for (size_t j = 0; j < no; j++) free(res[k].outs[j]);
    free(res[k].outs);
    free(res[k].bytes);
    sk_program_destroy(res[k].p);
  }
  for (size_t i = 0; i < ni; i++) free(in[i].data);
  free(in);
  return 0;
}

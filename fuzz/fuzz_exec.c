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
 * With a run-time token count (fuzz_tokens.h: byte 0 >= TOKENS_MODE_MIN,
 * about one input in three) the graph has dynamic token inputs, and the
 * programs run at 1..3 token counts T in 0..max, each as above (a run at
 * T = 0 must write nothing); then wrongly sized buffers must be refused.
 *
 * JIT compiles take tens of milliseconds, so JIT runs on one input in
 * $SK_FUZZ_JIT_EVERY (default 4, chosen by a hash of the input, so a saved
 * input replays the same way; 1 = every input). The JIT cache is
 * $SK_CACHE_DIR, by default ${TMPDIR:-/tmp}/sk-fuzz-jit-cache. */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz_tokens.h"

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
    if (in->role == ROLE_RANGE) { /* a table case's indices: [lo, hi), ints rounded down */
      double v = in->lo + (in->hi - in->lo) * (double)(z >> 11) * 0x1p-53;
      if (dt == SK_INT32) ((int32_t *)data)[i] = (int32_t)floor(v);
      else if (dt == SK_INT64) ((int64_t *)data)[i] = (int64_t)floor(v);
      else if (dt == SK_INT8) ((int8_t *)data)[i] = (int8_t)floor(v);
      else store_float(data, dt, i, (float)v);
      continue;
    }
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

/* What the runs of one token count share. */
typedef struct run_env {
  const gen *G;
  const char *global; /* the default options */
  int64_t tokens;     /* T (0 for static programs: they have no dynamic binding) */
  bool live;          /* the run computes; false: T = 0, nothing may be written */
} run_env;

/* Prints the graph and program behind a finding, and then the library's
 * last error (describing clears it). */
static void describe_failure(const run_env *env, sk_program *p) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", sk_last_error());
  const gen *G = env->G;
  fprintf(stderr, "graph: %d inputs (%d dynamic), %d ops, %d scopes (last scope options \"%s\"), default options \"%s\"\n",
          G->n_inputs, G->n_dynamic_inputs, G->n_ops, G->n_scopes, G->last_options, env->global ? env->global : "");
  if (G->max_tokens) fprintf(stderr, "run-time token count: T = %lld of max %lld\n", (long long)env->tokens,
                             (long long)G->max_tokens);
  char *text = NULL;
  if (p && sk_program_describe(p, &text) == SK_STATUS_OK) fprintf(stderr, "%s\n", text);
  sk_free(text);
  for (int kind = 0; p && kind < 2; kind++)
    for (size_t i = 0; i < tokens_n_io(p, (sk_io_kind)kind); i++) {
      const char *name;
      sk_dtype dt;
      int rank;
      int64_t sh[SK_MAX_RANK];
      if ((kind == SK_IO_INPUT ? sk_program_input_info(p, i, &name, &dt, &rank, sh)
                               : sk_program_output_info(p, i, &name, &dt, &rank, sh)) != SK_STATUS_OK)
        continue;
      fprintf(stderr, "%s %s: %s [", kind == SK_IO_INPUT ? "input" : "output", name, sk_dtype_name(dt));
      for (int d = 0; d < rank; d++)
        fprintf(stderr, d ? ", %s%lld" : "%s%lld", sh[d] < 0 ? "T*" : "", (long long)(sh[d] < 0 ? -sh[d] : sh[d]));
      fprintf(stderr, "]\n");
    }
  if (msg[0]) fprintf(stderr, "last error: %s\n", msg);
}

/* Runs p with inputs bound; outputs sized for the run's T and prefilled
 * with `pattern`. */
static void run_into(const run_env *env, sk_program *p, const sk_buffer *in, size_t ni, void **outs, size_t *bytes,
                     unsigned char pattern, const char *what) {
  size_t no = sk_program_num_outputs(p);
  sk_buffer *ob = calloc(no + 1, sizeof *ob);
  FUZZ_ASSERT(ob != NULL, "out of memory");
  for (size_t j = 0; j < no; j++) {
    const char *name;
    bytes[j] = tokens_io_bytes(p, SK_IO_OUTPUT, j, env->tokens, &name, NULL);
    memset(outs[j], pattern, bytes[j] + 1);
    ob[j] = (sk_buffer){name, outs[j], bytes[j]};
  }
  sk_status st = FUZZ_CALL(sk_program_run(p, TEAM, in, ni, ob, no));
  if (st != SK_STATUS_OK) {
    describe_failure(env, p);
    FUZZ_FAIL("%s: running a valid graph failed with %s (last error above)", what, sk_status_string(st));
  }
  for (size_t j = 0; j < no; j++)
    FUZZ_ASSERT(((unsigned char *)outs[j])[bytes[j]] == pattern, "%s wrote past output %zu", what, j);
  free(ob);
}

/* The same run in a run context of its own, bound by index, twice (its
 * flags and epochs carry over its launches); the outputs of the second,
 * prefilled with 0x6B. */
static void run_in_context(const run_env *env, sk_program *p, const sk_buffer *in, size_t ni, void **outs,
                           size_t *bytes, const char *what) {
  size_t no = sk_program_num_outputs(p);
  sk_run_context *ctx = NULL;
  sk_status st = FUZZ_CALL(sk_run_context_create(p, &ctx));
  for (size_t i = 0; st == SK_STATUS_OK && i < ni; i++)
    st = FUZZ_CALL(sk_run_context_bind(ctx, SK_IO_INPUT, i, in[i].data, in[i].bytes));
  for (size_t j = 0; st == SK_STATUS_OK && j < no; j++) {
    const char *name;
    bytes[j] = tokens_io_bytes(p, SK_IO_OUTPUT, j, env->tokens, &name, NULL);
    memset(outs[j], 0x6B, bytes[j] + 1);
    st = FUZZ_CALL(sk_run_context_bind(ctx, SK_IO_OUTPUT, j, outs[j], bytes[j]));
  }
  for (int rep = 0; st == SK_STATUS_OK && rep < 2; rep++) st = FUZZ_CALL(sk_run_context_run(ctx, TEAM));
  if (st != SK_STATUS_OK) {
    describe_failure(env, p);
    FUZZ_FAIL("%s: running a valid graph in a run context failed with %s (last error above)", what, sk_status_string(st));
  }
  for (size_t j = 0; j < no; j++)
    FUZZ_ASSERT(((unsigned char *)outs[j])[bytes[j]] == 0x6B, "%s wrote past output %zu (run context)", what, j);
  sk_run_context_destroy(ctx);
}

/* Output j of a run prefilled with `pattern` against want: bitwise equal
 * when the run computes; when it does not (T = 0), still all `pattern`.
 * On a difference, prints the first differing element and returns false. */
static bool same_output(const run_env *env, const sk_program *p, size_t j, const void *got, unsigned char pattern,
                        const void *want, size_t bytes) {
  const char *name;
  sk_dtype dt;
  sk_program_output_info(p, j, &name, &dt, NULL, NULL);
  size_t es = sk_dtype_size(dt);
  for (size_t i = 0; i < bytes / es; i++) {
    const unsigned char *a = (const unsigned char *)got + i * es, *b = (const unsigned char *)want + i * es;
    bool same = true;
    for (size_t k = 0; k < es; k++) same &= env->live ? a[k] == b[k] : a[k] == pattern;
    if (same) continue;
    uint64_t x = 0, y = 0;
    memcpy(&x, a, es);
    if (env->live) memcpy(&y, b, es);
    else memset(&y, pattern, es);
    fprintf(stderr, "output %s (%s, %zu elements) differs first at element %zu: 0x%llx vs 0x%llx%s\n", name,
            sk_dtype_name(dt), bytes / es, i, (unsigned long long)x, (unsigned long long)y,
            env->live ? "" : " (a run at T = 0 wrote it)");
    return false;
  }
  return true;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  FUZZ_ASSERT(p != NULL, "out of memory");
  return p;
}

/* ---- One run of every program, at one token count ------------------------------ */

/* Fills inputs for env's T, runs every program, compares with REFERENCE
 * (res[0]), then runs each fused program again and in a run context. */
static void run_and_compare(const run_env *env, exec_result *res, int n_res, uint64_t *seed, int fill_mode) {
  sk_program *p0 = res[0].p;
  if (getenv("SK_FUZZ_VERBOSE")) describe_failure(env, res[n_res - 1].p); /* what runs, before a crash */
  size_t ni = sk_program_num_inputs(p0), no = sk_program_num_outputs(p0);
  sk_buffer *in = calloc(ni + 1, sizeof *in);
  FUZZ_ASSERT(in != NULL, "out of memory");
  for (size_t i = 0; i < ni; i++) {
    const char *name;
    size_t bytes = tokens_io_bytes(p0, SK_IO_INPUT, i, env->tokens, &name, NULL);
    sk_dtype dt;
    FUZZ_ASSERT(sk_program_input_info(p0, i, NULL, &dt, NULL, NULL) == SK_STATUS_OK, "input info");
    void *buf = xmalloc(bytes + 1);
    FUZZ_ASSERT(strcmp(name, env->G->inputs[i].name) == 0, "input %zu is '%s', expected '%s'", i, name,
                env->G->inputs[i].name);
    fill_input(&env->G->inputs[i], dt, buf, bytes / sk_dtype_size(dt), seed, fill_mode);
    in[i] = (sk_buffer){name, buf, bytes};
  }
  /* Output buffers start with a pattern of their own per executor. */
  for (int k = 0; k < n_res; k++) {
    res[k].outs = calloc(no + 1, sizeof(void *));
    res[k].bytes = calloc(no + 1, sizeof(size_t));
    FUZZ_ASSERT(res[k].outs && res[k].bytes, "out of memory");
    for (size_t j = 0; j < no; j++) {
      const char *name;
      res[k].outs[j] = xmalloc(tokens_io_bytes(p0, SK_IO_OUTPUT, j, env->tokens, &name, NULL) + 1);
    }
    run_into(env, res[k].p, in, ni, res[k].outs, res[k].bytes, (unsigned char)(0xA5 + 17 * k), res[k].name);
  }
  for (int k = 0; k < n_res; k++)
    for (size_t j = 0; j < no; j++) {
      if (same_output(env, p0, j, res[k].outs[j], (unsigned char)(0xA5 + 17 * k), res[0].outs[j], res[0].bytes[j]))
        continue;
      describe_failure(env, res[k].p);
      FUZZ_FAIL("%s differs from %s on output %zu (fill mode %d)", res[k].name, env->live ? "REFERENCE" : "its prefill",
                j, fill_mode);
    }
  /* A second run of each fused program repeats the first (flags and
   * epochs carry over launches), as do two in a run context of its own. */
  for (int k = 2; k < n_res; k++) {
    void **again = calloc(no + 1, sizeof(void *));
    size_t *bytes = calloc(no + 1, sizeof(size_t));
    FUZZ_ASSERT(again && bytes, "out of memory");
    for (size_t j = 0; j < no; j++) again[j] = xmalloc(res[k].bytes[j] + 1);
    run_into(env, res[k].p, in, ni, again, bytes, 0x3C, res[k].name);
    for (size_t j = 0; j < no; j++) {
      if (same_output(env, p0, j, again[j], 0x3C, res[k].outs[j], bytes[j])) continue;
      describe_failure(env, res[k].p);
      FUZZ_FAIL("%s: the second run differs from the first on output %zu", res[k].name, j);
    }
    run_in_context(env, res[k].p, in, ni, again, bytes, res[k].name);
    for (size_t j = 0; j < no; j++) {
      if (!same_output(env, p0, j, again[j], 0x6B, res[k].outs[j], bytes[j])) {
        describe_failure(env, res[k].p);
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
  }
  for (size_t i = 0; i < ni; i++) free(in[i].data);
  free(in);
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
  unsigned mode = fr_u8(&r);
  int fill_mode = (int)(mode % 5);
  if (mode >= TOKENS_MODE_MIN) tokens_begin(&G, &r); /* a run-time token count */
  int n_ops = 1 + fr_u8(&r) % 10, last = -1;
  for (int i = 0; i < n_ops && G.bytes < (2 << 20) && G.numel < GEN_MAX_GRAPH_NUMEL; i++) {
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
  run_env env = {.G = &G, .global = global_opts, .live = true};
  /* A maximum without a dynamic input compiles to a static program
   * (superkernel.h, sk_graph_set_max_tokens): run it as one. */
  if (G.max_tokens && G.n_dynamic_inputs == 0) G.max_tokens = 0;
  for (int k = 0; k < n_res; k++) {
    res[k].name = ex_name(res[k].ex);
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = TEAM, .executor = res[k].ex,
                             .default_options = global_opts};
    if (FUZZ_CALL(sk_compile(G.g, &cfg, &res[k].p)) != SK_STATUS_OK) {
      describe_failure(&env, NULL);
      FUZZ_FAIL("%s: compiling a valid graph failed: %s", res[k].name, sk_last_error());
    }
    FUZZ_ASSERT(sk_program_max_tokens(res[k].p) == G.max_tokens, "%s: max tokens %lld, graph %lld", res[k].name,
                (long long)sk_program_max_tokens(res[k].p), (long long)G.max_tokens);
  }
  sk_graph_destroy(G.g);
  FUZZ_ASSERT(sk_program_num_inputs(res[0].p) == (size_t)G.n_inputs, "program has %zu inputs, graph %d",
              sk_program_num_inputs(res[0].p), G.n_inputs);

  /* ---- run and compare: once, or at each drawn token count ---- */
  int64_t counts[TOKENS_MAX_COUNTS] = {0};
  size_t n_counts = G.max_tokens ? tokens_draw_counts(&r, G.max_tokens, counts) : 1;
  if (G.max_tokens && tokens_row_buffers(res[0].p) > 0) gen_stat("graphs with token io");
  for (size_t c = 0; c < n_counts; c++) {
    env.tokens = counts[c];
    env.live = tokens_live(res[0].p, env.tokens);
    if (G.max_tokens) gen_stat(env.live ? "token runs" : "token runs at T=0");
    run_and_compare(&env, res, n_res, &seed, fill_mode);
  }
  /* ---- wrongly sized token buffers are refused ---- */
  if (G.max_tokens) {
    sk_program *ps[4];
    const char *names[4];
    for (int k = 0; k < n_res; k++) ps[k] = res[k].p, names[k] = res[k].name;
    tokens_check_bad_sizes(ps, names, (size_t)n_res, TEAM, &r);
  }

  for (int k = 0; k < n_res; k++) sk_program_destroy(res[k].p);
  return 0;
}

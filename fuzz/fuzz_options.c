/* fuzz_options: the option-string parser through every public entry that
 * takes an option string (fuzz/README.md).
 *
 * Input: the scope string, optionally followed by a NUL and a global
 * default string (the compile config's default_options).
 *
 * Properties:
 *   - sk_options_validate, sk_options_render, sk_graph_begin_scope,
 *     sk_fused_kernel_create and sk_compile (default_options) never crash
 *     or leak, and agree on whether a string is legal; every failure has a
 *     non-empty sk_last_error().
 *   - render: `needed` is the full length; truncated renders are
 *     NUL-terminated prefixes that write nothing past `size`; a failed render
 *     leaves buf empty and needed 0.
 *   - round trip: a legal string renders to a string that is legal and
 *     renders to itself (also when quoted as a whole).
 *   - a compiled program with the options runs and computes y = x * x. */
#include "fuzz_common.h"

static sk_kernel *NOOP;

static void noop_kernel(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)args, (void)block, (void)n_blocks, (void)ws, (void)ctx;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  /* Runtime-only fusion follows $SK_EXECUTOR: interpret, never start the
   * system compiler from here (fuzz_exec covers the JIT). */
  setenv("SK_EXECUTOR", "interp", 1);
  fuzz_quiet_logs(SK_LOG_DEBUG);
  sk_kernel_desc d = {.struct_size = sizeof d, .name = "fuzz_noop", .entry = noop_kernel,
                      .type = SK_KERNEL_TYPE_VECTOR, .block_count = 2};
  if (sk_kernel_register(&d, &NOOP) != SK_STATUS_OK) FUZZ_FAIL("registering the no-op kernel: %s", sk_last_error());
  return 0;
}

/* Renders s (known legal) into a fresh string; checks the size contract. */
static char *render_checked(const char *s) {
  size_t needed = 12345;
  if (FUZZ_CALL(sk_options_render(s, NULL, 0, &needed)) != SK_STATUS_OK)
    FUZZ_FAIL("render(NULL, 0) of a legal string failed: %s", sk_last_error());
  char *full = malloc(needed + 1);
  FUZZ_ASSERT(full != NULL, "out of memory");
  size_t again = 0;
  if (FUZZ_CALL(sk_options_render(s, full, needed + 1, &again)) != SK_STATUS_OK)
    FUZZ_FAIL("render of a legal string failed: %s", sk_last_error());
  FUZZ_ASSERT(again == needed, "needed %zu with a NULL buffer, %zu with a full one", needed, again);
  FUZZ_ASSERT(strlen(full) == needed, "rendered %zu chars, needed says %zu", strlen(full), needed);
  /* Truncated renders: a NUL-terminated prefix, nothing written past size. */
  size_t sizes[] = {1, 2, needed / 2 + 1, needed};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t size = sizes[k];
    if (size == 0 || size > needed) continue;
    char *small = malloc(size + 16);
    FUZZ_ASSERT(small != NULL, "out of memory");
    memset(small, 0x5A, size + 16);
    size_t got = 0;
    if (FUZZ_CALL(sk_options_render(s, small, size, &got)) != SK_STATUS_OK)
      FUZZ_FAIL("truncated render failed: %s", sk_last_error());
    FUZZ_ASSERT(got == needed, "needed %zu with size %zu, %zu in full", got, size, needed);
    FUZZ_ASSERT(small[size - 1] == '\0' && strncmp(small, full, size - 1) == 0 && strlen(small) == size - 1,
                "render into %zu bytes is not the NUL-terminated prefix of \"%s\"", size, full);
    for (size_t i = size; i < size + 16; i++)
      FUZZ_ASSERT((unsigned char)small[i] == 0x5A, "render into %zu bytes wrote byte %zu", size, i);
    free(small);
  }
  return full;
}

/* The round trip: rendered options parse back and render to themselves. */
static void check_round_trip(const char *s) {
  char *r1 = render_checked(s);
  if (FUZZ_CALL(sk_options_validate(r1)) != SK_STATUS_OK)
    FUZZ_FAIL("the rendering \"%s\" of a legal string is refused: %s", r1, sk_last_error());
  char *r2 = render_checked(r1);
  FUZZ_ASSERT(strcmp(r1, r2) == 0, "render is not a fixed point:\n  first  \"%s\"\n  second \"%s\"", r1, r2);
  /* Quotes around the whole string are stripped (docs/options.md, rule 1). */
  size_t n = strlen(r1);
  char *quoted = malloc(n + 3);
  FUZZ_ASSERT(quoted != NULL, "out of memory");
  quoted[0] = '"';
  memcpy(quoted + 1, r1, n);
  quoted[n + 1] = '"';
  quoted[n + 2] = '\0';
  char *r3 = render_checked(quoted);
  FUZZ_ASSERT(strcmp(r1, r3) == 0, "quoting changed the rendering:\n  plain  \"%s\"\n  quoted \"%s\"", r1, r3);
  free(quoted);
  free(r1);
  free(r2);
  free(r3);
}

/* A failing render leaves buf empty and needed 0, with validate's status and
 * message. */
static void check_failed_render(const char *s, sk_status want, const char *want_msg) {
  char buf[64];
  memset(buf, 'x', sizeof buf);
  size_t needed = 777;
  sk_status st = FUZZ_CALL(sk_options_render(s, buf, sizeof buf, &needed));
  FUZZ_ASSERT(st == want, "validate says %s, render says %s", sk_status_string(want), sk_status_string(st));
  FUZZ_ASSERT(buf[0] == '\0' && needed == 0, "failed render left \"%.8s...\" / needed %zu", buf, needed);
  FUZZ_ASSERT(strcmp(sk_last_error(), want_msg) == 0, "render and validate disagree on the message:\n  %s\n  %s",
              sk_last_error(), want_msg);
}

/* Scope "s" with the fuzzed options, scope "t" with none (so the global
 * string applies in full), compiled INTERP with the global string; the
 * program must compute y = x * x and z = y * y bit for bit. */
static void check_compile(const char *scope_opts, sk_status scope_st, const char *global, sk_status global_st) {
  sk_graph *g = NULL;
  if (FUZZ_CALL(sk_graph_create(&g)) != SK_STATUS_OK) return;
  sk_value x, y, z;
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_add_input(g, "x", SK_FP32, 1, (const int64_t[]){4}, &x)) == SK_STATUS_OK, "add_input");
  sk_status st = FUZZ_CALL(sk_graph_begin_scope(g, "s", scope_opts));
  FUZZ_ASSERT(st == scope_st, "validate says %s, begin_scope says %s (%s)", sk_status_string(scope_st),
              sk_status_string(st), sk_last_error());
  if (st != SK_STATUS_OK) {
    FUZZ_ASSERT(strncmp(sk_last_error(), "scope 's': ", 11) == 0, "message lacks the scope: %s", sk_last_error());
    sk_graph_destroy(g);
    return;
  }
  sk_op_input in_x[] = {{"x", &x, 1}};
  sk_op_desc sq = {.struct_size = sizeof sq, .op = "square", .inputs = in_x, .n_inputs = 1};
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_add_op(g, &sq, &y, 1, NULL)) == SK_STATUS_OK, "square");
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_end_scope(g)) == SK_STATUS_OK, "end_scope");
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_begin_scope(g, "t", NULL)) == SK_STATUS_OK, "begin_scope t");
  sk_op_input in_y[] = {{"x", &y, 1}};
  sq.inputs = in_y;
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_add_op(g, &sq, &z, 1, NULL)) == SK_STATUS_OK, "square 2");
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_end_scope(g)) == SK_STATUS_OK, "end_scope t");
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_mark_output(g, y, "y")) == SK_STATUS_OK, "mark y");
  FUZZ_ASSERT(FUZZ_CALL(sk_graph_mark_output(g, z, "z")) == SK_STATUS_OK, "mark z");

  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_INTERP, .default_options = global};
  sk_program *p = NULL;
  st = FUZZ_CALL(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  if (global_st != SK_STATUS_OK) {
    FUZZ_ASSERT(st != SK_STATUS_OK, "compile accepted an illegal global string");
    FUZZ_ASSERT(strstr(sk_last_error(), "global options: ") != NULL, "message lacks 'global options': %s",
                sk_last_error());
    return;
  }
  /* Legal strings may still be refused by the planner (e.g. debug-aic-num
   * above the team size), with a message: FUZZ_CALL checked it. */
  if (st != SK_STATUS_OK) return;
  FUZZ_ASSERT(p != NULL, "compile succeeded without a program");
  char *text = NULL;
  if (FUZZ_CALL(sk_program_describe(p, &text)) == SK_STATUS_OK) FUZZ_ASSERT(text && *text, "empty description");
  sk_free(text);
  char *src = NULL;
  if (FUZZ_CALL(sk_program_jit_source(p, "t", &src)) == SK_STATUS_OK) FUZZ_ASSERT(src && *src, "empty JIT source");
  sk_free(src);
  float xv[4] = {1.5f, -2.0f, 0.0f, 3.0e19f}, yv[4], zv[4];
  sk_buffer bi[] = {{"x", xv, sizeof xv}}, bo[] = {{"y", yv, sizeof yv}, {"z", zv, sizeof zv}};
  if (FUZZ_CALL(sk_program_run(p, NULL, bi, 1, bo, 2)) == SK_STATUS_OK) {
    for (int i = 0; i < 4; i++) {
      float want_y = xv[i] * xv[i], want_z = want_y * want_y;
      FUZZ_ASSERT(memcmp(&yv[i], &want_y, 4) == 0 && memcmp(&zv[i], &want_z, 4) == 0,
                  "element %d: y %g z %g, expected %g %g", i, yv[i], zv[i], want_y, want_z);
    }
  } else {
    FUZZ_FAIL("running a compiled program failed: %s", sk_last_error());
  }
  sk_program_destroy(p);
}

/* Runtime-only fusion takes an option string too. */
static void check_fused_kernel(const char *s, sk_status want) {
  sk_fused_kernel *fk = NULL;
  sk_status st = FUZZ_CALL(sk_fused_kernel_create(&NOOP, 1, s, NULL, &fk));
  if (want != SK_STATUS_OK) {
    FUZZ_ASSERT(st == want, "validate says %s, sk_fused_kernel_create says %s", sk_status_string(want),
                sk_status_string(st));
    FUZZ_ASSERT(fk == NULL, "a failed sk_fused_kernel_create returned a kernel");
    return;
  }
  if (st != SK_STATUS_OK) return; /* planner refusals, with a message */
  FUZZ_CALL(sk_fused_kernel_launch(fk, NULL));
  char *text = NULL;
  if (FUZZ_CALL(sk_fused_kernel_describe(fk, &text)) == SK_STATUS_OK) FUZZ_ASSERT(text && *text, "empty description");
  sk_free(text);
  sk_fused_kernel_destroy(fk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* long strings find nothing short ones do not */
  char *buf = malloc(size + 2);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = buf[size + 1] = '\0';
  const char *scope = buf;
  size_t n1 = strlen(buf);
  const char *global = n1 < size ? buf + n1 + 1 : NULL; /* after the first NUL */

  sk_status st = FUZZ_CALL(sk_options_validate(scope));
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", sk_last_error());
  if (st == SK_STATUS_OK) {
    FUZZ_ASSERT(msg[0] == '\0', "validate succeeded but left the message \"%s\"", msg);
    check_round_trip(scope);
  } else {
    FUZZ_ASSERT(st == SK_STATUS_INVALID_ARGUMENT || st == SK_STATUS_OUT_OF_MEMORY,
                "option errors are INVALID_ARGUMENT, got %s (%s)", sk_status_string(st), msg);
    check_failed_render(scope, st, msg);
  }
  sk_status gst = SK_STATUS_OK;
  if (global) {
    gst = FUZZ_CALL(sk_options_validate(global));
    if (gst == SK_STATUS_OK) check_round_trip(global);
  }
  check_compile(scope, st, global, gst);
  check_fused_kernel(scope, st);
  free(buf);
  return 0;
}

/* Scopes per node: a scope is the set of nodes added while it was open, and
 * it may be reopened, so its nodes can interleave with other scopes' and
 * with free nodes (as a front end adding nodes in FX order makes them).
 * Checked: the steps (which super kernels, in which order, named how), the
 * convexity rule under each strict-scope-check value, event edges counted
 * like data, and fused == eager bitwise with the interpreter and the JIT. */
#include <stdbool.h>

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "reference_runner.h"
#include "program/plan.h"

static sk_team *teams[3];

/* ---- log capture: the warnings a compile gives ---- */

static char log_text[1 << 14];
static size_t log_len;

static void capture(sk_log_level level, const char *message, void *user) {
  (void)level;
  (void)user;
  int n = snprintf(log_text + log_len, sizeof log_text - log_len, "%s\n", message);
  if (n > 0 && log_len + (size_t)n < sizeof log_text) log_len += (size_t)n;
}

static void log_reset(void) {
  log_len = 0;
  log_text[0] = '\0';
}

/* ---- helpers ---- */

#define N 3000 /* elements per tensor: several blocks on every team */

static sk_value vec(sk_graph *g, const char *name) { return input(g, name, SK_FP32, 1, (int64_t[]){N}); }

static void begin(sk_graph *g, const char *scope) { CHECK_OK(sk_graph_begin_scope(g, scope, NULL)); }
static void end(sk_graph *g) { CHECK_OK(sk_graph_end_scope(g)); }

static sk_program *compile(const sk_graph *g, const char *options) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP,
                           .default_options = options};
  sk_program *p = NULL;
  CHECK_MSG(sk_compile(g, &cfg, &p) == SK_STATUS_OK, "options \"%s\": %s", options ? options : "", sk_last_error());
  return p;
}

/* The steps in one line: "A[a1,a2] x B[b1]" (a super kernel with its
 * sub-kernels, or an op on its own launch). */
static void steps_text(const sk_program *p, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t s = 0; p && s < p->n_steps && len < size; s++) {
    const sk__plan *plan = p->steps[s].plan;
    if (!plan) {
      len += (size_t)snprintf(buf + len, size - len, "%s%s", s ? " " : "", p->nodes[p->steps[s].node].name);
      continue;
    }
    len += (size_t)snprintf(buf + len, size - len, "%s%s[", s ? " " : "", plan->name);
    for (size_t i = 0; i < plan->n_subs && len < size; i++)
      len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "", p->nodes[plan->subs[i].node].name);
    if (len < size) len += (size_t)snprintf(buf + len, size - len, "]");
  }
}

/* Compiles g (interpreted, 2 cores) and checks its steps read `want`. */
static void check_steps(const sk_graph *g, const char *options, const char *want) {
  sk_program *p = compile(g, options);
  char got[512];
  steps_text(p, got, sizeof got);
  CHECK_MSG(strcmp(got, want) == 0, "options \"%s\": steps \"%s\", want \"%s\"", options ? options : "", got, want);
  sk_program_destroy(p);
}

/* Fused == eager bitwise, interpreted on 1-3 cores and JIT-compiled on 2. */
static void check_equal_to_eager(const sk_graph *g, const char *options) {
  for (int t = 0; t < 3; t++)
    CHECK_MSG(rr_fused_vs_eager(g, teams[t], SK_EXECUTOR_INTERP, options, 11 + (uint64_t)t) == 0, "interp, %d cores, \"%s\"",
              t + 1, options ? options : "");
  CHECK_MSG(rr_fused_vs_eager(g, teams[1], SK_EXECUTOR_JIT, options, 17) == 0, "jit, \"%s\"", options ? options : "");
  /* ... and the JIT really ran every super kernel (no fallback). */
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_JIT,
                           .default_options = options};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  for (size_t s = 0; p && s < p->n_steps; s++)
    CHECK_MSG(!p->steps[s].plan || p->steps[s].exec->kind == SK_EXECUTOR_JIT, "super kernel %s was not JIT-compiled", p->steps[s].plan->name);
  sk_program_destroy(p);
}

/* ---- cases ---- */

/* A, B, A, B: independent nodes of two scopes interleaved (the second
 * opening of each reopens it) make two super kernels, each whole. */
static void test_interleaved_scopes(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x"), y = vec(g, "y");
  begin(g, "A");
  sk_value a1 = unary(g, "square", "a1", x);
  end(g);
  begin(g, "B");
  sk_value b1 = unary(g, "square", "b1", y);
  end(g);
  begin(g, "A");
  sk_value a2 = binary(g, "add", "a2", a1, x);
  end(g);
  begin(g, "B");
  sk_value b2 = binary(g, "mul", "b2", b1, y);
  end(g);
  CHECK_OK(sk_graph_mark_output(g, a2, "a"));
  CHECK_OK(sk_graph_mark_output(g, b2, "b"));
  log_reset();
  check_steps(g, NULL, "A[a1,a2] B[b1,b2]");
  CHECK_MSG(!strstr(log_text, "convex") && !strstr(log_text, "split"), "unexpected log: %s", log_text);
  check_equal_to_eager(g, NULL);
  check_equal_to_eager(g, "early-start=0");
  sk_graph_destroy(g);
}

/* A scope's super kernel goes where all its producers have run and before
 * its consumers, whatever the graph order of the nodes between its own. */
static void test_scope_placement(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x"), y = vec(g, "y");
  begin(g, "A");
  sk_value a1 = unary(g, "square", "a1", x);
  end(g);
  sk_value p = unary(g, "square", "producer", y); /* feeds a2 only: runs before A */
  sk_value c = unary(g, "square", "consumer", a1); /* needs a1 only: runs after A */
  begin(g, "A");
  sk_value a2 = binary(g, "add", "a2", a1, p);
  end(g);
  sk_value free_tail = binary(g, "mul", "tail", c, a2);
  CHECK_OK(sk_graph_mark_output(g, free_tail, "z"));
  check_steps(g, NULL, "producer A[a1,a2] consumer tail");
  check_equal_to_eager(g, NULL);
  sk_graph_destroy(g);
}

/* Reopening: the same options in another spelling or none keep the
 * declared ones; other options are an error naming both. */
static void test_reopen_options(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x");
  CHECK_OK(sk_graph_begin_scope(g, "A", "early-start=0"));
  sk_value a = unary(g, "square", "a1", x);
  end(g);
  sk_value f = unary(g, "square", "free", x);
  CHECK_OK(sk_graph_begin_scope(g, "A", "early_start=0")); /* same meaning */
  a = binary(g, "add", "a2", a, f);
  end(g);
  CHECK_FAILS(sk_graph_begin_scope(g, "A", "early-start=1"), SK_STATUS_INVALID_ARGUMENT, "scope 'A' is reopened",
              "\"early-start=1\"", "declared with \"early-start=0\"");
  CHECK_FAILS(sk_graph_begin_scope(g, "A", "early-start=7"), SK_STATUS_INVALID_ARGUMENT, "scope 'A'", "early-start");
  CHECK_OK(sk_graph_begin_scope(g, "A", ""));
  CHECK_FAILS(sk_graph_begin_scope(g, "A", NULL), SK_STATUS_INVALID_STATE, "'A' is still open");
  a = unary(g, "square", "a3", a);
  end(g);
  CHECK_OK(sk_graph_mark_output(g, a, "y"));
  sk_program *p = compile(g, "early-start=1");
  char got[256];
  steps_text(p, got, sizeof got);
  CHECK_MSG(strcmp(got, "free A[a1,a2,a3]") == 0, "steps %s", got);
  if (p && p->n_steps == 2 && p->steps[1].plan) CHECK(p->steps[1].plan->options.early_start == 0);
  sk_program_destroy(p);
  /* Reopening a scope and adding nothing is no "empty scope". */
  log_reset();
  CHECK_OK(sk_graph_begin_scope(g, "A", NULL));
  end(g);
  CHECK_MSG(!strstr(log_text, "empty"), "log: %s", log_text);
  CHECK_OK(sk_graph_begin_scope(g, "E", NULL));
  end(g);
  CHECK_MSG(strstr(log_text, "scope 'E' is empty"), "log: %s", log_text);
  check_equal_to_eager(g, NULL);
  sk_graph_destroy(g);
}

/* A = {a1, a2, a3} with a1 -> outside -> a2: not convex. abort: an error
 * naming the scope and the outside node; unset: split into A.0 = {a1, a3}
 * (all that can run first) and A.1 = {a2}, with a warning; bypass: every
 * node on its own launch. All equal to eager. */
static void test_not_convex(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x"), y = vec(g, "y");
  begin(g, "A");
  sk_value a1 = unary(g, "square", "a1", x);
  end(g);
  sk_value o = unary(g, "square", "outside", a1);
  begin(g, "A");
  sk_value a2 = binary(g, "add", "a2", a1, o);
  sk_value a3 = unary(g, "square", "a3", y);
  end(g);
  CHECK_OK(sk_graph_mark_output(g, a2, "a2"));
  CHECK_OK(sk_graph_mark_output(g, a3, "a3"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP,
                           .default_options = "strict-scope-check=abort"};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_ARGUMENT, "scope 'A' is not convex", "node outside (square)",
              "its node a2", "strict-scope-check=abort");
  CHECK(p == NULL);
  cfg.executor = SK_EXECUTOR_JIT;
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_ARGUMENT, "scope 'A' is not convex");
  log_reset();
  check_steps(g, NULL, "A.0[a1,a3] outside A.1[a2]");
  CHECK_MSG(strstr(log_text, "scope 'A' is not convex: node outside (square)") && strstr(log_text, "split"), "log: %s",
            log_text);
  log_reset();
  check_steps(g, "strict-scope-check=bypass", "a1 outside a2 a3");
  CHECK_MSG(strstr(log_text, "scope 'A' is not convex") && strstr(log_text, "runs unfused"), "log: %s", log_text);
  /* The eager executors never fuse, so they never check. */
  cfg.executor = SK_EXECUTOR_EAGER;
  CHECK_OK(sk_compile(g, &cfg, &p));
  sk_program_destroy(p);
  check_equal_to_eager(g, NULL);
  check_equal_to_eager(g, "strict-scope-check=bypass");
  sk_graph_destroy(g);
}

/* Event waits are edges like data: a2 reads nothing of `outside` but
 * waits for it by event, and `outside` waits for a1, so A is not convex.
 * Without the waits the same graph is one super kernel. */
static sk_graph *event_graph(bool with_events) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x"), y = vec(g, "y");
  begin(g, "A");
  sk_value a1 = unary(g, "square", "a1", x);
  end(g);
  sk_event after_a1, after_outside;
  if (with_events) CHECK_OK(sk_graph_record_event(g, &after_a1));
  CHECK_OK(sk_graph_set_stream(g, 1));
  if (with_events) CHECK_OK(sk_graph_wait_event(g, after_a1));
  sk_value o = unary(g, "square", "outside", y);
  if (with_events) CHECK_OK(sk_graph_record_event(g, &after_outside));
  CHECK_OK(sk_graph_set_stream(g, 0));
  if (with_events) CHECK_OK(sk_graph_wait_event(g, after_outside));
  begin(g, "A");
  sk_value a2 = unary(g, "square", "a2", a1);
  end(g);
  CHECK_OK(sk_graph_mark_output(g, a2, "a2"));
  CHECK_OK(sk_graph_mark_output(g, o, "o"));
  return g;
}

static void test_event_edges(void) {
  sk_graph *g = event_graph(false);
  check_steps(g, NULL, "A[a1,a2] outside");
  sk_graph_destroy(g);
  g = event_graph(true);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP,
                           .default_options = "strict-scope-check=abort"};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_ARGUMENT, "scope 'A' is not convex", "node outside (square)",
              "its node a2");
  check_steps(g, NULL, "A.0[a1] outside A.1[a2]");
  check_steps(g, "strict-scope-check=bypass", "a1 outside a2");
  check_equal_to_eager(g, NULL);
  check_equal_to_eager(g, "stream-fusion=1");
  sk_graph_destroy(g);
}

/* Two scopes each convex but feeding each other (a1 -> b1, b2 -> a2): one
 * of them must be split. Only the scope on the cycle is split; scope T,
 * which merely consumes from it, stays whole. */
static void test_scopes_feeding_each_other(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x"), y = vec(g, "y");
  begin(g, "T");
  sk_value t1 = unary(g, "square", "t1", y);
  end(g);
  begin(g, "A");
  sk_value a1 = unary(g, "square", "a1", x);
  end(g);
  begin(g, "B");
  sk_value b1 = unary(g, "square", "b1", a1);
  sk_value b2 = unary(g, "square", "b2", y);
  end(g);
  begin(g, "A");
  sk_value a2 = binary(g, "add", "a2", a1, b2);
  end(g);
  begin(g, "T");
  sk_value t2 = binary(g, "add", "t2", t1, a2);
  end(g);
  CHECK_OK(sk_graph_mark_output(g, t2, "t2"));
  CHECK_OK(sk_graph_mark_output(g, b1, "b1"));
  log_reset();
  check_steps(g, NULL, "A.0[a1] B[b1,b2] A.1[a2] T[t1,t2]");
  CHECK_MSG(strstr(log_text, "scope 'A' cannot run as one launch") && strstr(log_text, "b2 (square, in scope 'B')"),
            "log: %s", log_text);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_INTERP,
                           .default_options = "strict-scope-check=abort"};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_ARGUMENT, "scope 'A' cannot run as one launch",
              "node b2 (square, in scope 'B')", "strict-scope-check=abort");
  check_steps(g, "strict-scope-check=bypass", "a1 B[b1,b2] a2 T[t1,t2]");
  check_equal_to_eager(g, NULL);
  check_equal_to_eager(g, "strict-scope-check=bypass");
  sk_graph_destroy(g);
}

/* A non-convex scope next to an innocent one that consumes from it: only
 * the guilty scope splits, even though T's first node comes first. */
static void test_only_the_detour_splits(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = vec(g, "x"), y = vec(g, "y");
  begin(g, "T");
  sk_value t1 = unary(g, "square", "t1", y);
  end(g);
  begin(g, "A");
  sk_value a1 = unary(g, "square", "a1", x);
  end(g);
  sk_value o = unary(g, "square", "outside", a1);
  begin(g, "A");
  sk_value a2 = binary(g, "add", "a2", a1, o);
  end(g);
  begin(g, "T");
  sk_value t2 = binary(g, "add", "t2", t1, a2);
  end(g);
  CHECK_OK(sk_graph_mark_output(g, t2, "t2"));
  check_steps(g, NULL, "A.0[a1] outside A.1[a2] T[t1,t2]");
  check_equal_to_eager(g, NULL);
  sk_graph_destroy(g);
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  sk_set_log_handler(capture, NULL);
  sk_set_log_level(SK_LOG_INFO);
  static const harness_case cases[] = {
      TEST_CASE(test_interleaved_scopes),        TEST_CASE(test_scope_placement),
      TEST_CASE(test_reopen_options),            TEST_CASE(test_not_convex),
      TEST_CASE(test_event_edges),               TEST_CASE(test_scopes_feeding_each_other),
      TEST_CASE(test_only_the_detour_splits),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

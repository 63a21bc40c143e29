/* Shared by the process-level fault tests (test_cache_faults.c,
 * test_compiler_faults.c): compile a model, compare it with eager, expect
 * the JIT or a fallback with a named cause, run a case in a forked child. */
#ifndef SK_TEST_FAULT_TEST_UTIL_H
#define SK_TEST_FAULT_TEST_UTIL_H

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "jit_test_util.h"
#include "reference_runner.h"

/* ---- the model and the checks ---- */

static inline sk_program *compile(sk_graph *g, sk_team *team, sk_executor executor) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executor};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

/* Runs p and eager three times each on the same inputs; the number of
 * runs whose outputs differ bitwise. */
static inline int run_vs_eager(sk_program *p, sk_graph *g, sk_team *team, uint64_t seed) {
  sk_program *eager = compile(g, team, SK_EXECUTOR_EAGER);
  rr_buffers a, b;
  if (!p || !eager || !rr_alloc(p, &a, -1, 1, seed)) {
    sk_program_destroy(eager);
    return 1;
  }
  if (!rr_alloc(eager, &b, -1, 1, seed)) {
    rr_free(&a);
    sk_program_destroy(eager);
    return 1;
  }
  int bad = 0;
  for (int rep = 0; rep < 3; rep++) {
    for (size_t o = 0; o < a.n_outputs; o++) memset(a.outputs[o].data, 0xA5, a.outputs[o].bytes);
    CHECK_OK(sk_program_run(p, team, a.inputs, a.n_inputs, a.outputs, a.n_outputs));
    CHECK_OK(sk_program_run(eager, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs));
    for (size_t o = 0; o < a.n_outputs; o++)
      if (memcmp(a.outputs[o].data, b.outputs[o].data, a.outputs[o].bytes) != 0) {
        bad++;
        fprintf(stderr, "output %s differs from eager (run %d)\n", a.outputs[o].name, rep);
      }
  }
  rr_free(&a);
  rr_free(&b);
  sk_program_destroy(eager);
  return bad;
}

/* Compiles g with SK_EXECUTOR_JIT for team under the current
 * $SK_CACHE_DIR; expects every super kernel interpreted, one "falling back"
 * warning each holding every fragment, sk_compile's success, and results
 * bitwise equal to eager. */
static inline void expect_fallback(sk_graph *g, sk_team *team, const char *const *fragments, size_t n) {
  log_reset();
  sk_program *p = compile(g, team, SK_EXECUTOR_JIT);
  size_t jitted, plans = count_plans(p, &jitted);
  CHECK_MSG(plans > 0 && jitted == 0, "expected the interpreter: %zu super kernels, %zu JIT-compiled", plans, jitted);
  CHECK_MSG(log_count("falling back to the interpreter") == plans, "%s", log_text);
  for (size_t i = 0; i < n; i++)
    CHECK_MSG(log_count(fragments[i]) > 0, "the warning lacks \"%s\": %s", fragments[i], log_text);
  CHECK(sk_last_error()[0] == '\0'); /* sk_compile succeeded */
  CHECK(run_vs_eager(p, g, team, 11) == 0);
  sk_program_destroy(p);
}

/* Compiles g with the JIT and expects it really used (the control case). */
static inline void expect_jit(sk_graph *g, sk_team *team) {
  log_reset();
  sk_program *p = compile(g, team, SK_EXECUTOR_JIT);
  size_t jitted, plans = count_plans(p, &jitted);
  CHECK_MSG(plans > 0 && jitted == plans, "expected the JIT: %zu super kernels, %zu JIT-compiled: %s", plans, jitted,
            log_text);
  CHECK(run_vs_eager(p, g, team, 12) == 0);
  sk_program_destroy(p);
}

/* The length of the source the JIT writes for g's scope `scope`. */
static inline size_t jit_source_length(sk_graph *g, sk_team *team, const char *scope) {
  sk_program *p = compile(g, team, SK_EXECUTOR_INTERP);
  char *src = NULL;
  CHECK_OK(sk_program_jit_source(p, scope, &src));
  size_t len = src ? strlen(src) : 0;
  sk_free(src);
  sk_program_destroy(p);
  return len;
}

/* ---- forked children ---- */

typedef void (*child_fn)(const void *arg);

/* Runs fn(arg) in a child process with a fresh failure count; the child's
 * CHECK messages go to the shared stderr, its verdict comes back as the
 * exit status. Returns the wait status. */
static inline int in_child(child_fn fn, const void *arg) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    harness_failures = 0;
    fn(arg);
    fflush(stderr);
    _exit(harness_failures ? 1 : 0);
  }
  int status = -1;
  CHECK_MSG(pid > 0, "fork: %s", strerror(errno));
  if (pid > 0) CHECK(waitpid(pid, &status, 0) == pid);
  return status;
}

/* A 2-core team made inside the child (its parent had no other thread). */
static inline sk_team *child_team(void) {
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 2};
  sk_team *t = NULL;
  CHECK_OK(sk_team_create(&cfg, &t));
  return t;
}

#endif

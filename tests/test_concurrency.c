/* Concurrency: what docs/architecture.md ("Concurrency") says is supported.
 *
 *   - several processes sharing one cache: 4 forked processes compile two
 *     graphs each into an empty cache at once (racing on both keys), three
 *     rounds; all get the JIT, equal results, and the cache ends with one
 *     complete entry per key and no temporaries, and this process then
 *     loads both as cache hits (every checksum matches its object);
 *   - many teams and programs in one process: 4 host threads, each with
 *     its own 2-core team (oversubscribed on a small machine, on purpose)
 *     and its own eager, interpreted and JIT programs compiled at once from
 *     one shared graph, 30 runs each, bitwise equal to the reference
 *     executor;
 *   - one program run from several threads through sk_program_run: 4
 *     threads run the same program on the same team at once with their own
 *     inputs and outputs (sk_program_run takes turns in the program's
 *     default run context, launches take turns on the team), and 2 threads
 *     run it on two different teams of the same size; every output equals
 *     what that thread's inputs give. Runs in parallel, each thread in a
 *     run context of its own, are test_run_context.c's.
 *
 * The harness's CHECK counters are plain ints: worker threads never CHECK,
 * they count their failures and the main thread checks the counts.
 *
 * The forked case runs first, before this process has any other thread.
 * Under ThreadSanitizer it runs too (the parent is single-threaded when it
 * forks, which TSan supports). $SK_CACHE_DIR is set by
 * tests/reliability.cmake under the build tree. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "executors/jit/jit.h"
#include "jit_test_util.h"
#include "reference_runner.h"

#define N_THREADS 4
#define N_PROCS 4

/* ThreadSanitizer makes every run ~10x slower: fewer runs keep the test
 * within its time (each run is still checked). */
#if defined(__SANITIZE_THREAD__)
#define SK_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SK_TEST_TSAN 1
#endif
#endif
#ifdef SK_TEST_TSAN
#define TEAM_RUNS 6    /* per program per thread: many teams */
#define SHARED_RUNS 10 /* per thread: one program */
#else
#define TEAM_RUNS 30
#define SHARED_RUNS 50
#endif

static char base_dir[PATH_MAX];

/* ---- graphs ---- */

/* A one-scope vector chain: (x*x + y) * y. */
static sk_graph *vector_model(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){5000}), y = input(g, "y", SK_FP32, 1, (int64_t[]){5000});
  CHECK_OK(sk_graph_begin_scope(g, "vec", NULL));
  sk_value z = binary(g, "mul", "mul", binary(g, "add", "add", unary(g, "square", "sq", x), y), y);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  return g;
}

/* ---- helpers usable from any thread (no CHECK) ---- */

static sk_program *compile_quiet(const sk_graph *g, const sk_team *team, sk_executor executor, char *why, size_t n) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executor};
  sk_program *p = NULL;
  if (sk_compile(g, &cfg, &p) != SK_STATUS_OK) {
    snprintf(why, n, "sk_compile (executor %d): %s", (int)executor, sk_last_error());
    return NULL;
  }
  return p;
}

static void poison_outputs(rr_buffers *b) {
  for (size_t o = 0; o < b->n_outputs; o++) memset(b->outputs[o].data, 0xA5, b->outputs[o].bytes);
}

/* Index of the first output of a differing from b, or -1. */
static int first_difference(const rr_buffers *a, const rr_buffers *b) {
  for (size_t o = 0; o < a->n_outputs; o++)
    if (a->outputs[o].bytes != b->outputs[o].bytes || memcmp(a->outputs[o].data, b->outputs[o].data, a->outputs[o].bytes))
      return (int)o;
  return -1;
}

static void check_verdicts(const harness_verdict *v, int n, const char *what) {
  for (int i = 0; i < n; i++)
    CHECK_MSG(v[i].failures == 0, "%s, thread %d: %d failures, the first: %s", what, i, v[i].failures, v[i].first);
}

/* ---- several processes sharing one cache ---- */

static bool write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = false;
  return ok;
}

/* Reads up to cap bytes; the count, or 0 when missing. */
static size_t read_file(const char *path, void *data, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(data, 1, cap, f);
  fclose(f);
  return n;
}

/* Several processes compiling one key must publish consistent entries.
 * This once failed: each process compiled its own tmp-XXXXXX.c, whose name
 * the compiler records in the object, so the objects differed in bytes, and
 * with the renames interleaved (A's checksum, B's checksum, B's object, A's
 * object) the entry paired A's object with B's checksum: the next reader
 * rebuilt it, and a process whose fresh object was deleted under it fell
 * back to the interpreter. src/executors/jit/cache.c now builds under the final names
 * in a private directory (identical bytes) and loads its own object before
 * publishing it. */

/* The child: compiles both graphs (in the order its index picks) with the
 * JIT on one core, checks each against the reference executor and writes
 * its outputs. Exit status 0 = all well. */
static void share_child(int i, sk_graph *const graphs[2], const char *dir, int gate) {
  char c;
  if (read(gate, &c, 1) != 0) _exit(3); /* all start when the parent closes the pipe */
  char why[1024] = "";
  for (int k = 0; k < 2; k++) {
    int gi = (i + k) % 2; /* even children: graph 0 first; odd ones: graph 1 first */
    log_reset();
    sk_program *p = compile_quiet(graphs[gi], NULL, SK_EXECUTOR_JIT, why, sizeof why);
    sk_program *ref = compile_quiet(graphs[gi], NULL, SK_EXECUTOR_REFERENCE, why, sizeof why);
    if (!p || !ref) {
      fprintf(stderr, "process %d: %s\n", i, why);
      _exit(4);
    }
    if (!all_jitted(p) || log_has("falling back") || log_has("unusable")) {
      fprintf(stderr, "process %d, graph %d: not JIT-compiled, or a bad entry: %s\n", i, gi, log_text);
      _exit(5);
    }
    rr_buffers a, b;
    if (!rr_alloc(p, &a, -1, 1, 7) || !rr_alloc(ref, &b, -1, 1, 7)) _exit(6);
    poison_outputs(&a);
    if (sk_program_run(p, NULL, a.inputs, a.n_inputs, a.outputs, a.n_outputs) != SK_STATUS_OK ||
        sk_program_run(ref, NULL, b.inputs, b.n_inputs, b.outputs, b.n_outputs) != SK_STATUS_OK) {
      fprintf(stderr, "process %d: run: %s\n", i, sk_last_error());
      _exit(7);
    }
    if (first_difference(&a, &b) >= 0) {
      fprintf(stderr, "process %d, graph %d: JIT differs from the reference\n", i, gi);
      _exit(8);
    }
    char out[PATH_MAX + 32];
    snprintf(out, sizeof out, "%s/out-%d-%d.bin", dir, gi, i);
    if (!write_file(out, a.outputs[0].data, a.outputs[0].bytes)) _exit(9);
    rr_free(&a);
    rr_free(&b);
    sk_program_destroy(p);
    sk_program_destroy(ref);
  }
  _exit(0);
}

#define SHARE_ROUNDS 3 /* each from an empty cache */

static void test_processes_share_cache(void) {
  sk_graph *graphs[2] = {chain_model(), vector_model()};
  for (int round = 0; round < SHARE_ROUNDS; round++) {
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/shared", base_dir) >= (int)sizeof dir) abort();
    fresh_dir(dir);
    setenv("SK_CACHE_DIR", dir, 1);
    int gate[2];
    CHECK(pipe(gate) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pids[N_PROCS];
    for (int i = 0; i < N_PROCS; i++) {
      pids[i] = fork();
      if (pids[i] == 0) {
        close(gate[1]);
        share_child(i, graphs, dir, gate[0]);
      }
    }
    close(gate[0]);
    close(gate[1]);
    for (int i = 0; i < N_PROCS; i++) {
      int status = -1;
      CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
      CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "round %d, process %d: status %#x", round, i, status);
    }
    /* Every process computed the same bits. */
    static char first[1 << 16], other[1 << 16];
    for (int gi = 0; gi < 2; gi++) {
      char path[PATH_MAX + 32];
      snprintf(path, sizeof path, "%s/out-%d-0.bin", dir, gi);
      size_t n0 = read_file(path, first, sizeof first);
      CHECK_MSG(n0 > 0, "graph %d: process 0 wrote nothing", gi);
      for (int i = 1; i < N_PROCS; i++) {
        snprintf(path, sizeof path, "%s/out-%d-%d.bin", dir, gi, i);
        size_t n = read_file(path, other, sizeof other);
        CHECK_MSG(n == n0 && memcmp(first, other, n) == 0, "graph %d: process %d's outputs differ from process 0's", gi,
                  i);
      }
    }
    /* One complete entry per key, nothing else. */
    CHECK_MSG(count_entries(dir, "", ".so") == 2, "%d objects", count_entries(dir, "", ".so"));
    CHECK_MSG(count_entries(dir, "", ".sha256") == 2, "%d checksums", count_entries(dir, "", ".sha256"));
    CHECK_MSG(count_entries(dir, "", ".c") == 2, "%d sources", count_entries(dir, "", ".c"));
    CHECK_MSG(count_entries(dir, "tmp-", "") == 0, "%d temporaries left", count_entries(dir, "tmp-", ""));
    CHECK_MSG(count_entries(dir, "", "") == 6 + 2 * N_PROCS, "%d files", count_entries(dir, "", ""));
    /* And both entries are valid: this process loads them as cache hits. */
    log_reset();
    sk__jit_counters before, after;
    sk__jit_stats(&before);
    for (int gi = 0; gi < 2; gi++) {
      char why[1024] = "";
      sk_program *p = compile_quiet(graphs[gi], NULL, SK_EXECUTOR_JIT, why, sizeof why);
      CHECK_MSG(p && all_jitted(p), "graph %d: %s", gi, why);
      sk_program_destroy(p);
    }
    sk__jit_stats(&after);
    unsigned long long hits = after.hits - before.hits, compiles = after.compiles - before.compiles;
    CHECK_MSG(hits == 2 && compiles == 0,
              "round %d: cache hits %llu, compiles %llu: the entries the processes left are not both valid: %s", round,
              hits, compiles, log_text);
    CHECK_MSG(!log_has("falling back"), "%s", log_text);
  }
  sk_graph_destroy(graphs[0]);
  sk_graph_destroy(graphs[1]);
  setenv("SK_CACHE_DIR", base_dir, 1);
}

/* ---- many teams and programs in one process ---- */

static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
#define N_EXEC (int)(sizeof executors / sizeof executors[0])

typedef struct team_worker {
  int id;
  const sk_graph *g;
  pthread_barrier_t *start;
  harness_verdict v;
} team_worker;

static void *team_worker_main(void *arg) {
  team_worker *w = arg;
  harness_verdict *v = &w->v;
  char why[1024] = "";
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2};
  sk_team *team = NULL;
  sk_program *ref = NULL, *p[N_EXEC] = {0};
  rr_buffers rb, b[N_EXEC];
  int allocated = 0;
  bool rb_ok = false;
  if (sk_team_create(&tc, &team) != SK_STATUS_OK) {
    harness_verdict_fail(v, "sk_team_create: %s", sk_last_error());
    pthread_barrier_wait(w->start);
    return NULL;
  }
  /* Every thread compiles at once: the JIT's compiles and shared objects
   * are contended. */
  pthread_barrier_wait(w->start);
  ref = compile_quiet(w->g, NULL, SK_EXECUTOR_REFERENCE, why, sizeof why);
  for (int e = 0; e < N_EXEC; e++) p[e] = compile_quiet(w->g, team, executors[e], why, sizeof why);
  if (!ref || !p[0] || !p[1] || !p[2]) {
    harness_verdict_fail(v, "%s", why);
    goto out;
  }
  if (!all_jitted(p[2])) harness_verdict_fail(v, "the JIT program is not JIT-compiled (see the warnings)");
  if (!(rb_ok = rr_alloc(ref, &rb, -1, 1, 1))) goto out;
  for (; allocated < N_EXEC; allocated++)
    if (!rr_alloc(p[allocated], &b[allocated], -1, 1, 1)) goto out;
  for (int run = 0; run < TEAM_RUNS; run++) {
    uint64_t seed = (uint64_t)(1000 * w->id + run);
    rr_fill_by_dtype(&rb, ref, seed);
    if (sk_program_run(ref, NULL, rb.inputs, rb.n_inputs, rb.outputs, rb.n_outputs) != SK_STATUS_OK) {
      harness_verdict_fail(v, "reference run: %s", sk_last_error());
      break;
    }
    for (int e = 0; e < N_EXEC; e++) {
      rr_fill_by_dtype(&b[e], p[e], seed); /* the same inputs */
      poison_outputs(&b[e]);
      if (sk_program_run(p[e], team, b[e].inputs, b[e].n_inputs, b[e].outputs, b[e].n_outputs) != SK_STATUS_OK)
        harness_verdict_fail(v, "run: %s (run %d)", sk_last_error(), run);
      else if (first_difference(&b[e], &rb) >= 0)
        harness_verdict_fail(v, "%s differs from the reference executor (run %d)", e == 0 ? "eager" : e == 1 ? "interp" : "jit", run);
    }
  }
out:
  if (rb_ok) rr_free(&rb);
  for (int e = 0; e < allocated; e++) rr_free(&b[e]);
  for (int e = 0; e < N_EXEC; e++) sk_program_destroy(p[e]);
  sk_program_destroy(ref);
  sk_team_destroy(team);
  return NULL;
}

static void test_many_teams(void) {
  sk_graph *g = mixed_model(); /* two scopes, cube and vector sub-kernels, ops outside */
  log_reset();
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, N_THREADS);
  team_worker w[N_THREADS];
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    w[i] = (team_worker){.id = i, .g = g, .start = &start};
    CHECK(pthread_create(&th[i], NULL, team_worker_main, &w[i]) == 0);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  harness_verdict v[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) v[i] = w[i].v;
  check_verdicts(v, N_THREADS, "many teams");
  CHECK_MSG(!log_has("falling back"), "%s", log_text);
  sk_graph_destroy(g);
}

/* ---- one program from several threads, through sk_program_run ---- */

typedef struct shared_worker {
  sk_program *p;
  sk_team *team;
  rr_buffers b;        /* this thread's inputs and outputs */
  rr_buffers expected; /* the reference executor's outputs for them */
  pthread_barrier_t *start;
  harness_verdict v;
} shared_worker;

static void *shared_worker_main(void *arg) {
  shared_worker *w = arg;
  pthread_barrier_wait(w->start);
  for (long run = 0; run < SHARED_RUNS; run++) {
    poison_outputs(&w->b);
    if (sk_program_run(w->p, w->team, w->b.inputs, w->b.n_inputs, w->b.outputs, w->b.n_outputs) != SK_STATUS_OK)
      harness_verdict_fail(&w->v, "run: %s (run %ld)", sk_last_error(), run);
    else if (first_difference(&w->b, &w->expected) >= 0)
      harness_verdict_fail(&w->v, "outputs differ from what this thread's inputs give (run %ld)", run);
  }
  return NULL;
}

/* n threads run p at once, thread i on teams[i % n_teams]. */
static void run_shared(const sk_graph *g, sk_program *p, sk_team *const *teams, int n_teams, int n, const char *what) {
  char why[1024] = "";
  sk_program *ref = compile_quiet(g, NULL, SK_EXECUTOR_REFERENCE, why, sizeof why);
  CHECK_MSG(ref != NULL, "%s", why);
  if (!ref) return;
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)n);
  shared_worker w[N_THREADS];
  for (int i = 0; i < n; i++) {
    w[i] = (shared_worker){.p = p, .team = teams[i % n_teams], .start = &start};
    /* Different inputs per thread; the reference gives each one's answer. */
    CHECK(rr_alloc(p, &w[i].b, -1, 1, (uint64_t)(77 + i)) && rr_alloc(ref, &w[i].expected, -1, 1, (uint64_t)(77 + i)));
    CHECK_OK(sk_program_run(ref, NULL, w[i].expected.inputs, w[i].expected.n_inputs, w[i].expected.outputs,
                            w[i].expected.n_outputs));
  }
  /* The answers differ between threads, so a run that used another
   * thread's inputs (or left another's outputs) would be caught. */
  CHECK(first_difference(&w[0].expected, &w[1].expected) >= 0);
  pthread_t th[N_THREADS];
  for (int i = 0; i < n; i++) CHECK(pthread_create(&th[i], NULL, shared_worker_main, &w[i]) == 0);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  harness_verdict v[N_THREADS];
  for (int i = 0; i < n; i++) {
    v[i] = w[i].v;
    rr_free(&w[i].b);
    rr_free(&w[i].expected);
  }
  check_verdicts(v, n, what);
  sk_program_destroy(ref);
}

static void test_shared_program(void) {
  sk_team *teams[2] = {NULL, NULL};
  for (int t = 0; t < 2; t++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2};
    CHECK_OK(sk_team_create(&tc, &teams[t]));
  }
  if (!teams[0] || !teams[1]) return;
  sk_graph *g = mixed_model();
  log_reset();
  for (int e = 0; e < N_EXEC; e++) {
    char why[1024] = "", what[64];
    sk_program *p = compile_quiet(g, teams[0], executors[e], why, sizeof why);
    CHECK_MSG(p != NULL, "%s", why);
    if (!p) continue;
    if (executors[e] == SK_EXECUTOR_JIT) CHECK(all_jitted(p));
    const char *name = e == 0 ? "eager" : e == 1 ? "interp" : "jit";
    snprintf(what, sizeof what, "%s, %d threads, one team", name, N_THREADS);
    run_shared(g, p, teams, 1, N_THREADS, what);
    snprintf(what, sizeof what, "%s, 2 threads, two teams", name);
    run_shared(g, p, teams, 2, 2, what);
    sk_program_destroy(p);
  }
  CHECK_MSG(!log_has("falling back"), "%s", log_text);
  sk_graph_destroy(g);
  sk_team_destroy(teams[0]);
  sk_team_destroy(teams[1]);
}

int main(void) {
  jit_test_start(base_dir, "concurrency_cache");
  /* The forked case first, while this process has one thread. */
  static const harness_case cases[] = {TEST_CASE(test_processes_share_cache), TEST_CASE(test_many_teams),
                                       TEST_CASE(test_shared_program)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

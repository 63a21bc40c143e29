/* The watchdog (src/runtime/watchdog.h): a wait inside a launch that sees no
 * progress for the configured time turns into SK_STATUS_TIMEOUT naming the
 * scope and sub-kernel, instead of a hang; the program then runs normally.
 *
 * Provoked with custom kernels: "skipper", whose block `g_skip` returns
 * without calling its barrier (the others wait there forever), and "sleeper",
 * whose block 1 takes longer than the limit (the cores waiting for its output
 * give up; under early start on its flag, otherwise at the barrier after it). */
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "runtime/wait.h"

#define WATCHDOG_MS 150
#define N 64

static sk_team *team2;
static atomic_int g_skip = -1;     /* skipper: the block that skips its barrier, -1 none */
static atomic_int g_sleep_ms = 0;  /* sleeper: block 0's extra time */
static sk_kernel *skipper, *sleeper;

/* y = x * 2 + (sum of every block's first element): the barrier orders the
 * partial writes before the reads. */
static void skipper_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws;
  const float *x = args[0];
  float *y = args[1], *partial = args[2];
  int64_t per = N / n_blocks;
  partial[block] = x[block * per];
  if (block == atomic_load(&g_skip)) return; /* the bug under test: never reaches the barrier */
  if (sk_kernel_barrier(ctx) != SK_STATUS_OK) return;
  float total = 0;
  for (int64_t k = 0; k < n_blocks; k++) total += partial[k];
  for (int64_t i = block * per; i < (block + 1) * per; i++) y[i] = x[i] * 2 + total;
}

static void sleeper_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws, (void)ctx;
  if (block == 1 && atomic_load(&g_sleep_ms)) usleep((useconds_t)atomic_load(&g_sleep_ms) * 1000);
  int64_t per = N / n_blocks;
  for (int64_t i = block * per; i < (block + 1) * per; i++) ((float *)args[1])[i] = ((const float *)args[0])[i] + 1;
}

static sk_status skipper_infer(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                               size_t n_in, sk_dtype *out_dtypes, int *out_ranks,
                               int64_t (*out_shapes)[SK_MAX_RANK], size_t *n_out, void *user) {
  (void)in_dtypes, (void)in_ranks, (void)in_shapes, (void)n_in, (void)user;
  out_dtypes[0] = out_dtypes[1] = SK_FP32;
  out_ranks[0] = out_ranks[1] = 1;
  out_shapes[0][0] = N;
  out_shapes[1][0] = 2;
  *n_out = 2;
  return SK_STATUS_OK;
}

static sk_kernel *must_register(sk_kernel_desc d) {
  d.struct_size = sizeof d;
  sk_kernel *k = NULL;
  CHECK_OK(sk_kernel_register(&d, &k));
  return k;
}

static sk_value add(sk_graph *g, const char *op, const char *name, sk_value x, sk_value *second) {
  sk_op_input slot = {"x", &x, 1};
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = name, .inputs = &slot, .n_inputs = 1};
  sk_value out[2] = {SK_VALUE_NONE, SK_VALUE_NONE};
  CHECK_OK(sk_graph_add_op(g, &d, out, 2, NULL));
  if (second) *second = out[1];
  return out[0];
}

/* x -> square -> KERNEL (node "culprit") -> square, in scope "hang_scope"
 * with `options`; outputs y (and the skipper's partial sums). */
static sk_graph *graph_with(const char *kernel, const char *options) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, partial = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 1, (int64_t[]){N}, &x));
  CHECK_OK(sk_graph_begin_scope(g, "hang_scope", options));
  sk_value a = add(g, "square", "pre", x, NULL);
  sk_value b = add(g, kernel, "culprit", a, &partial);
  sk_value y = add(g, "square", "post", b, NULL);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  if (partial != SK_VALUE_NONE) CHECK_OK(sk_graph_mark_output(g, partial, "partial"));
  return g;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct run_io {
  float x[N], y[N], partial[2];
} run_io;

static sk_status run(sk_program *p, run_io *io) {
  sk_buffer in = {"x", io->x, sizeof io->x};
  sk_buffer out[2] = {{"y", io->y, sizeof io->y}, {"partial", io->partial, sizeof io->partial}};
  return sk_program_run(p, team2, &in, 1, out, sk_program_num_outputs(p));
}

static sk_program *compile(sk_graph *g, sk_executor executor, int64_t watchdog_ms) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team2, .executor = executor, .watchdog_ms = watchdog_ms};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                        SK_EXECUTOR_REFERENCE};
static const char *const executor_names[] = {"eager", "interp", "jit", "reference"};

/* A block that never reaches its barrier: TIMEOUT naming the culprit (and
 * its scope when fused), quickly; then the same program runs correctly,
 * twice over (the abandoned launch's barrier state was reset). */
static void test_skipped_barrier(void) {
  sk_graph *g = graph_with("skipper", NULL);
  for (int e = 0; e < 4; e++) {
    sk_program *p = compile(g, executors[e], WATCHDOG_MS);
    run_io good = {0}, io = {0};
    for (int i = 0; i < N; i++) good.x[i] = io.x[i] = (float)i * 0.25f - 3;
    atomic_store(&g_skip, -1);
    CHECK_OK(run(p, &good));
    for (int round = 0; round < 2; round++) {
      atomic_store(&g_skip, round); /* block 0, then block 1 skips */
      double t0 = now_s();
      sk_status st = run(p, &io);
      double took = now_s() - t0;
      CHECK_MSG(st == SK_STATUS_TIMEOUT, "%s: got %s (%s)", executor_names[e], sk_status_string(st), sk_last_error());
      /* Fused, the skipping core may go on to wait for the stuck block's
       * output, and either wait may give up first: both name the culprit.
       * The reference runs the kernel's blocks on a team of its own. */
      if (executors[e] == SK_EXECUTOR_REFERENCE)
        CHECK_MSG(strstr(sk_last_error(), "skipper") && strstr(sk_last_error(), "(reference run)"), "%s: %s",
                  executor_names[e], sk_last_error());
      else
        CHECK_MSG(strstr(sk_last_error(), "culprit") && (strstr(sk_last_error(), "at its team barrier") ||
                                                         strstr(sk_last_error(), "of sub-kernel 'culprit'")),
                  "%s: %s", executor_names[e], sk_last_error());
      if (executors[e] == SK_EXECUTOR_INTERP || executors[e] == SK_EXECUTOR_JIT)
        CHECK_MSG(strstr(sk_last_error(), "scope 'hang_scope'"), "%s: %s", executor_names[e], sk_last_error());
      CHECK_MSG(took < 5.0, "%s: the watchdog took %.2f s for a %d ms limit", executor_names[e], took, WATCHDOG_MS);
      atomic_store(&g_skip, -1);
      memset(io.y, 0, sizeof io.y);
      CHECK_MSG(run(p, &io) == SK_STATUS_OK, "%s: after a timeout: %s", executor_names[e], sk_last_error());
      CHECK_MSG(memcmp(io.y, good.y, sizeof io.y) == 0, "%s: wrong output after a timeout", executor_names[e]);
    }
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

/* A block slower than the limit: the core waiting for its output gives up,
 * on the early-start flag (naming the producer block) or at the barrier. */
static void test_slow_producer(void) {
  const char *options[] = {"early-start=1", "early-start=0"};
  const char *expect[] = {"for block 1 of sub-kernel 'culprit'", "at the barrier after it"};
  for (int o = 0; o < 2; o++) {
    sk_graph *g = graph_with("sleeper", options[o]);
    for (int e = 1; e < 3; e++) {
      sk_program *p = compile(g, executors[e], 60);
      run_io good = {0}, io = {0};
      for (int i = 0; i < N; i++) good.x[i] = io.x[i] = (float)i;
      atomic_store(&g_sleep_ms, 0);
      CHECK_OK(run(p, &good));
      atomic_store(&g_sleep_ms, 600);
      sk_status st = run(p, &io);
      CHECK_MSG(st == SK_STATUS_TIMEOUT && strstr(sk_last_error(), expect[o]), "%s, %s: got %s (%s)", options[o],
                executor_names[e], sk_status_string(st), sk_last_error());
      atomic_store(&g_sleep_ms, 0);
      memset(io.y, 0, sizeof io.y);
      CHECK_MSG(run(p, &io) == SK_STATUS_OK, "%s, %s: after a timeout: %s", options[o], executor_names[e], sk_last_error());
      CHECK(memcmp(io.y, good.y, sizeof io.y) == 0);
      sk_program_destroy(p);
    }
    sk_graph_destroy(g);
  }
}

/* Runtime-only fusion (sk_fused_kernel_*): the same, with the limit from
 * $SK_WATCHDOG_MS, fused (interp) and each kernel on its own (eager). */
static void test_fused_kernel(void) {
  setenv("SK_WATCHDOG_MS", "150", 1);
  const char *modes[] = {"interp", "eager"};
  for (int m = 0; m < 2; m++) {
    setenv("SK_EXECUTOR", modes[m], 1);
    sk_kernel *kernels[2] = {sleeper, skipper};
    sk_fused_kernel *fk = NULL;
    CHECK_OK(sk_fused_kernel_create(kernels, 2, m == 0 ? "feed-sync-all=1" : NULL, team2, &fk));
    run_io io = {0};
    float mid[N];
    void *sleeper_args[] = {io.x, mid}, *skipper_args[] = {mid, io.y, io.partial};
    void *const *args[] = {sleeper_args, skipper_args};
    atomic_store(&g_skip, 1);
    sk_status st = sk_fused_kernel_launch(fk, args);
    CHECK_MSG(st == SK_STATUS_TIMEOUT && strstr(sk_last_error(), "skipper"), "%s: got %s (%s)", modes[m],
              sk_status_string(st), sk_last_error());
    atomic_store(&g_skip, -1);
    CHECK_MSG(sk_fused_kernel_launch(fk, args) == SK_STATUS_OK, "%s: after a timeout: %s", modes[m], sk_last_error());
    sk_fused_kernel_destroy(fk);
  }
  unsetenv("SK_EXECUTOR");
  unsetenv("SK_WATCHDOG_MS");
}

/* A run refused before any core started (a nested launch from inside a
 * block) must leave the super kernel's flags as they were: the next run
 * is normal, not a timeout on flags one launch behind. */
typedef struct nested_arg {
  sk_program *p;
  run_io *io;
  sk_status st;
} nested_arg;

static void nested_block(void *arg, int64_t block, int core) {
  (void)block, (void)core;
  nested_arg *a = arg;
  a->st = run(a->p, a->io);
}

static void test_refused_run(void) {
  sk_graph *g = graph_with("sleeper", "early-start=1");
  sk_team *outer;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 1};
  CHECK_OK(sk_team_create(&tc, &outer));
  for (int e = 1; e < 3; e++) {
    sk_program *p = compile(g, executors[e], 2000);
    run_io io = {0};
    CHECK_OK(run(p, &io));
    nested_arg a = {p, &io, SK_STATUS_OK};
    CHECK_OK(sk_team_launch(outer, nested_block, &a, 1));
    CHECK_MSG(a.st == SK_STATUS_INVALID_STATE, "%s: nested run gave %s", executor_names[e], sk_status_string(a.st));
    double t0 = now_s();
    CHECK_MSG(run(p, &io) == SK_STATUS_OK && now_s() - t0 < 1.0, "%s: the run after a refused one: %s (%.2f s)",
              executor_names[e], sk_last_error(), now_s() - t0);
    sk_program_destroy(p);
  }
  sk_team_destroy(outer);
  sk_graph_destroy(g);
}

/* A limit that is not passed changes nothing; a negative one is never. */
static void test_no_false_alarm(void) {
  sk_graph *g = graph_with("sleeper", "early-start=1");
  sk_program *p = compile(g, SK_EXECUTOR_INTERP, -1);
  run_io io = {0};
  atomic_store(&g_sleep_ms, 100);
  CHECK_OK(run(p, &io));
  atomic_store(&g_sleep_ms, 0);
  sk_program_destroy(p);
  p = compile(g, SK_EXECUTOR_INTERP, 5000);
  for (int i = 0; i < 50; i++) CHECK_OK(run(p, &io));
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* The watched wait itself: times out on an unchanged word, returns at once
 * on a tripped watchdog, and never for a NULL one when the word is there. */
static void test_wait_primitive(void) {
  sk__watchdog wd;
  sk__watchdog_init(&wd, 50);
  sk__wait_word w;
  atomic_init(&w.value, 0);
  atomic_init(&w.sleepers, 0);
  double t0 = now_s();
  CHECK(sk__wait_until_equal_watched(&w, 1, &wd) == SK_WAIT_TIMED_OUT);
  double took = now_s() - t0;
  CHECK_MSG(took >= 0.045 && took < 2.0, "waited %.3f s for a 50 ms limit", took);
  sk__watchdog_trip(&wd, "who", "what", 3);
  sk__watchdog_trip(&wd, "second", "ignored", 4); /* the first message is kept */
  t0 = now_s();
  CHECK(sk__wait_until_equal_watched(&w, 1, &wd) == SK_WAIT_ABORTED);
  CHECK(now_s() - t0 < 0.5);
  CHECK_FAILS(sk__watchdog_take(&wd), SK_STATUS_TIMEOUT, "who: core 3 waited 50 ms what");
  CHECK(!sk__watchdog_tripped(&wd));
  atomic_store(&w.value, 1);
  CHECK(sk__wait_until_equal_watched(&w, 1, NULL) == SK_WAIT_OK);
}

static void test_timeout_setting(void) {
  unsetenv("SK_WATCHDOG_MS");
  CHECK(sk__watchdog_resolve_ms(0) == 60000);
  CHECK(sk__watchdog_resolve_ms(25) == 25);
  CHECK(sk__watchdog_resolve_ms(-1) == -1);
  setenv("SK_WATCHDOG_MS", "1234", 1);
  CHECK(sk__watchdog_resolve_ms(0) == 1234);
  CHECK(sk__watchdog_resolve_ms(7) == 7); /* the config wins */
  setenv("SK_WATCHDOG_MS", "12ms", 1);    /* not a number: the default, with a warning */
  CHECK(sk__watchdog_resolve_ms(0) == 60000);
  unsetenv("SK_WATCHDOG_MS");
}

static void setup(void) {
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 2};
  CHECK_OK(sk_team_create(&cfg, &team2));
  skipper = must_register((sk_kernel_desc){.name = "skipper", .entry = skipper_entry, .block_count = 2, .n_params = 3,
                                           .barriers_per_block = 1, .infer = skipper_infer});
  sleeper = must_register((sk_kernel_desc){.name = "sleeper", .entry = sleeper_entry, .block_count = 2, .n_params = 2});
}

static void teardown(void) {
  sk_team_destroy(team2);
}

static void run_all(void) {
  setup();
  test_wait_primitive();
  test_timeout_setting();
  test_skipped_barrier();
  test_slow_producer();
  test_no_false_alarm();
  test_fused_kernel();
  test_refused_run();
  teardown();
}

TEST_MAIN(TEST_CASE(run_all))

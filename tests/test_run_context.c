/* Run contexts (superkernel.h, "Run contexts"): one compiled program run
 * from several threads at once, each in a context of its own.
 *
 *   - parallel runs: the mixed model (two super kernels with cube and
 *     vector sub-kernels, an eager op between them, views) compiled once
 *     per executor (interpreted, JIT, eager, reference); 4 threads, each
 *     with its own 2-core team (unpinned: the machine may have 2 CPUs), a
 *     context per program and its own inputs, refilled every iteration;
 *     the outputs alternate between two bound sets. Every fused output must
 *     equal that thread's eager and reference outputs, bit for bit;
 *   - no serialization: a run held inside a kernel block of one context
 *     waits for runs of another context and of the default context
 *     (sk_program_run) of the same program to finish; with a program-wide
 *     run lock they could not, and the held block gives up after 20 s and
 *     the test fails;
 *   - contexts are independent of the program's own bindings, and a
 *     program destroyed before its context stays usable by it (with a
 *     warning) and is freed with it;
 *   - errors: NULLs, wrong sizes, bad kinds and indexes, overlaps, unbound
 *     runs, a team of the wrong size, a context in use by another run.
 *
 * Worker threads never CHECK (the harness's counters are plain ints): they
 * count failures and the main thread checks the counts. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>

#include "program/run_context.h"
#include "graph_builders.h"
#include "harness.h"
#include "jit_test_util.h"
#include "reference_runner.h"

#define N_THREADS 4

#if defined(__SANITIZE_THREAD__)
#define SK_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SK_TEST_TSAN 1
#endif
#endif
#ifdef SK_TEST_TSAN
#define ITERATIONS 8 /* TSan makes every run ~10x slower; each run is still checked */
#else
#define ITERATIONS 40
#endif

static char base_dir[PATH_MAX];

static sk_team *make_team(int cores) {
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = cores, .pin_threads = -1};
  sk_team *team = NULL;
  CHECK_OK(sk_team_create(&tc, &team));
  return team;
}

static sk_program *compile_for(const sk_graph *g, const sk_team *team, sk_executor executor) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executor};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

/* ---- parallel runs of one program ---- */

enum { FUSED_INTERP, FUSED_JIT, EAGER, REFERENCE, N_PROGRAMS };
static const char *const program_names[N_PROGRAMS] = {"interp", "jit", "eager", "reference"};

typedef struct worker {
  int id;
  sk_program *const *programs;
  pthread_barrier_t *start;
  harness_verdict v;
} worker;

static bool same_outputs(const rr_buffers *a, const rr_buffers *b) {
  for (size_t o = 0; o < a->n_outputs; o++)
    if (memcmp(a->outputs[o].data, b->outputs[o].data, a->outputs[o].bytes) != 0) return false;
  return true;
}

static bool bind_all(sk_run_context *ctx, const rr_buffers *in, const rr_buffers *out) {
  for (size_t i = 0; i < in->n_inputs; i++)
    if (sk_run_context_bind(ctx, SK_IO_INPUT, i, in->inputs[i].data, in->inputs[i].bytes) != SK_STATUS_OK) return false;
  for (size_t o = 0; o < out->n_outputs; o++)
    if (sk_run_context_bind(ctx, SK_IO_OUTPUT, o, out->outputs[o].data, out->outputs[o].bytes) != SK_STATUS_OK)
      return false;
  return true;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  sk_team *team = NULL;
  sk_run_context *ctx[N_PROGRAMS] = {0};
  /* inputs: shared by the four contexts (read only); out[k][0..1]: the
   * program's two alternating output sets; each from rr_alloc, zeroed. */
  rr_buffers inputs, out[N_PROGRAMS][2];
  int allocated = 0;
  bool have_inputs = rr_alloc(w->programs[REFERENCE], &inputs, -1, 1, 1);
  for (; have_inputs && allocated < N_PROGRAMS * 2; allocated++)
    if (!rr_alloc(w->programs[allocated / 2], &out[allocated / 2][allocated % 2], -1, 1, 1)) break;
  bool ok = have_inputs && allocated == N_PROGRAMS * 2 && sk_team_create(&tc, &team) == SK_STATUS_OK;
  for (int k = 0; ok && k < N_PROGRAMS; k++) ok = sk_run_context_create(w->programs[k], &ctx[k]) == SK_STATUS_OK;
  if (!ok) harness_verdict_fail(&w->v, "setup: %s", sk_last_error());
  pthread_barrier_wait(w->start); /* all threads run at once */
  for (int it = 0; ok && it < ITERATIONS; it++) {
    rr_fill_by_dtype(&inputs, w->programs[REFERENCE], (uint64_t)(1000 * w->id + it));
    int set = it % 2;
    for (int k = 0; ok && k < N_PROGRAMS; k++) {
      rr_buffers *o = &out[k][set];
      for (size_t j = 0; j < o->n_outputs; j++) memset(o->outputs[j].data, 0xA5, o->outputs[j].bytes);
      /* The reference runs on the calling thread, the others on the team. */
      if (!bind_all(ctx[k], &inputs, o) || sk_run_context_run(ctx[k], k == REFERENCE ? NULL : team) != SK_STATUS_OK) {
        harness_verdict_fail(&w->v, "%s, iteration %d: %s", program_names[k], it, sk_last_error());
        ok = false;
      }
    }
    for (int k = 0; ok && k < REFERENCE; k++)
      if (!same_outputs(&out[k][set], &out[REFERENCE][set]))
        harness_verdict_fail(&w->v, "%s differs from the reference, iteration %d", program_names[k], it);
    if (ok && !same_outputs(&out[FUSED_JIT][set], &out[EAGER][set]))
      harness_verdict_fail(&w->v, "jit differs from eager, iteration %d", it);
  }
  for (int k = 0; k < N_PROGRAMS; k++) sk_run_context_destroy(ctx[k]);
  for (int a = 0; a < allocated; a++) rr_free(&out[a / 2][a % 2]);
  if (have_inputs) rr_free(&inputs);
  sk_team_destroy(team);
  return NULL;
}

static void test_parallel_runs(void) {
  sk_team *compile_team = make_team(2);
  sk_graph *g = mixed_model();
  log_reset();
  sk_program *programs[N_PROGRAMS] = {
      compile_for(g, compile_team, SK_EXECUTOR_INTERP), compile_for(g, compile_team, SK_EXECUTOR_JIT),
      compile_for(g, compile_team, SK_EXECUTOR_EAGER), compile_for(g, NULL, SK_EXECUTOR_REFERENCE)};
  sk_graph_destroy(g);
  for (int k = 0; k < N_PROGRAMS; k++)
    if (!programs[k]) return;
  /* What the test is about: super kernels of both executors, an eager op
   * between them. */
  CHECK(all_jitted(programs[FUSED_JIT]));
  size_t jitted, plans = count_plans(programs[FUSED_INTERP], &jitted);
  CHECK(plans == 2 && jitted == 0 && programs[FUSED_INTERP]->n_steps == 3);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, N_THREADS);
  worker w[N_THREADS];
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    w[i] = (worker){.id = i, .programs = programs, .start = &start};
    CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < N_THREADS; i++)
    CHECK_MSG(w[i].v.failures == 0, "thread %d: %d failures, the first: %s", i, w[i].v.failures, w[i].v.first);
  CHECK_MSG(!log_has("falling back"), "%s", log_text);
  for (int k = 0; k < N_PROGRAMS; k++) sk_program_destroy(programs[k]);
  sk_team_destroy(compile_team);
}

/* ---- runs of different contexts do not wait for each other ---- */

/* "rc_gate" copies its input; a block whose input starts with HOLD says so
 * and waits (at most 20 s) until the other runs are done. */
#define HOLD 7.0f
#define GATE_N 64
static atomic_int gate_held, others_done, gate_gave_up;

static void gate_entry(void *const *args, int64_t block, int64_t n_blocks, void *workspace, sk_kernel_ctx *ctx) {
  (void)block, (void)n_blocks, (void)workspace, (void)ctx;
  const float *x = args[0];
  float *y = args[1];
  if (x[0] == HOLD) {
    atomic_store(&gate_held, 1);
    struct timespec nap = {0, 1000000};
    for (int ms = 0; !atomic_load(&others_done); ms++) {
      if (ms == 20000) {
        atomic_store(&gate_gave_up, 1);
        break;
      }
      nanosleep(&nap, NULL);
    }
  }
  for (int i = 0; i < GATE_N; i++) y[i] = x[i];
}

typedef struct held_run {
  sk_run_context *ctx;
  sk_team *team;
  sk_status status;
} held_run;

static void *held_main(void *arg) {
  held_run *h = arg;
  h->status = sk_run_context_run(h->ctx, h->team);
  return NULL;
}

static void expect_squares(const float *y, const float *x, const char *what) {
  int bad = 0;
  for (int i = 0; i < GATE_N; i++) bad += y[i] != x[i] * x[i];
  CHECK_MSG(bad == 0, "%s: %d wrong elements", what, bad);
}

/* While context a's run is held inside its super kernel, a run in context
 * b and a run through sk_program_run (the default context) complete. */
static void held_while_others_run(sk_program *p, sk_team *const teams[2]) {
  static float held_x[GATE_N], held_y[GATE_N], x[GATE_N], y_b[GATE_N], y_default[GATE_N];
  for (int i = 0; i < GATE_N; i++) held_x[i] = 0.5f * (float)i, x[i] = 0.25f * (float)i;
  held_x[0] = HOLD;
  atomic_store(&gate_held, 0), atomic_store(&others_done, 0), atomic_store(&gate_gave_up, 0);
  sk_run_context *a = NULL, *b = NULL;
  CHECK_OK(sk_run_context_create(p, &a));
  CHECK_OK(sk_run_context_create(p, &b));
  if (!a || !b) return;
  CHECK_OK(sk_run_context_bind(a, SK_IO_INPUT, 0, held_x, sizeof held_x));
  CHECK_OK(sk_run_context_bind(a, SK_IO_OUTPUT, 0, held_y, sizeof held_y));
  CHECK_OK(sk_run_context_bind(b, SK_IO_INPUT, 0, x, sizeof x));
  CHECK_OK(sk_run_context_bind(b, SK_IO_OUTPUT, 0, y_b, sizeof y_b));
  held_run h = {a, teams[0], SK_STATUS_INTERNAL};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, held_main, &h) == 0);
  struct timespec nap = {0, 1000000};
  for (int ms = 0; ms < 20000 && !atomic_load(&gate_held); ms++) nanosleep(&nap, NULL);
  CHECK_MSG(atomic_load(&gate_held), "the held run never reached its gate");
  CHECK_OK(sk_run_context_run(b, teams[1]));
  sk_buffer in = {"x", x, sizeof x}, out = {"y", y_default, sizeof y_default};
  CHECK_OK(sk_program_run(p, teams[1], &in, 1, &out, 1));
  atomic_store(&others_done, 1);
  pthread_join(th, NULL);
  CHECK_MSG(!atomic_load(&gate_gave_up), "the other runs waited for the held one: runs of one program serialize");
  CHECK_MSG(h.status == SK_STATUS_OK, "held run: %s", sk_status_string(h.status));
  expect_squares(held_y, held_x, "held run");
  expect_squares(y_b, x, "context b");
  expect_squares(y_default, x, "sk_program_run");
  sk_run_context_destroy(a);
  sk_run_context_destroy(b);
}

static void test_no_serialization(void) {
  sk_kernel_desc d = {.struct_size = sizeof d, .name = "rc_gate", .entry = gate_entry, .type = SK_KERNEL_TYPE_VECTOR,
                      .block_count = 1, .n_params = 2};
  sk_kernel *k = NULL;
  CHECK_OK(sk_kernel_register(&d, &k));
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){GATE_N});
  CHECK_OK(sk_graph_begin_scope(g, "gated", NULL)); /* one super kernel: the gate, then a square */
  sk_value y = unary(g, "square", "sq", unary(g, "rc_gate", "gate", x));
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_team *teams[2] = {make_team(2), make_team(2)};
  static const sk_executor executors[] = {SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (int e = 0; e < 2 && teams[0] && teams[1]; e++) {
    sk_program *p = compile_for(g, teams[0], executors[e]);
    if (!p) continue;
    CHECK(p->n_steps == 1 && p->steps[0].plan && (e == 0 || all_jitted(p)));
    held_while_others_run(p, teams);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
  sk_team_destroy(teams[0]);
  sk_team_destroy(teams[1]);
}

/* ---- errors, bindings of their own, a program destroyed first ---- */

#define N 300

static float xs[N], ws[N], ys[N], zs[N];

static void expect_small(float base) {
  int bad = 0;
  for (int i = 0; i < N; i++) {
    float x = base + (float)i / 64.0f;
    bad += xs[i] != x || ys[i] != x * x + x || zs[i] != x * ws[i];
  }
  CHECK_MSG(bad == 0, "%d wrong elements", bad);
}

static void fill_small(float base) {
  for (int i = 0; i < N; i++) xs[i] = base + (float)i / 64.0f, ws[i] = 0.5f - (float)i / 128.0f;
  memset(ys, 0, sizeof ys), memset(zs, 0, sizeof zs);
}

static void test_errors_and_ownership(void) {
  sk_team *two = make_team(2), *three = make_team(3);
  sk_graph *g = bind_model(N);
  sk_program *p = compile_for(g, two, SK_EXECUTOR_INTERP);
  sk_graph_destroy(g);
  if (!p || !two || !three) return;
  sk_run_context *c = NULL;
  CHECK_FAILS(sk_run_context_create(NULL, &c), SK_STATUS_INVALID_ARGUMENT, "sk_run_context_create", "program is NULL");
  CHECK_FAILS(sk_run_context_create(p, NULL), SK_STATUS_INVALID_ARGUMENT, "ctx_out is NULL");
  CHECK_FAILS(sk_run_context_bind(NULL, SK_IO_INPUT, 0, xs, sizeof xs), SK_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK_FAILS(sk_run_context_run(NULL, two), SK_STATUS_INVALID_ARGUMENT, "sk_run_context_run", "context is NULL");
  sk_run_context_destroy(NULL);
  CHECK_OK(sk_run_context_create(p, &c));
  if (!c) return;
  CHECK_FAILS(sk_run_context_bind(c, SK_IO_INPUT, 0, xs, sizeof xs - 4), SK_STATUS_INVALID_ARGUMENT,
              "sk_run_context_bind", "input 'x'", "expected 1200 bytes", "got 1196");
  CHECK_FAILS(sk_run_context_bind(c, (sk_io_kind)5, 0, xs, sizeof xs), SK_STATUS_INVALID_ARGUMENT, "kind 5");
  CHECK_FAILS(sk_run_context_bind(c, SK_IO_OUTPUT, 2, ys, sizeof ys), SK_STATUS_NOT_FOUND, "output 2 does not exist");
  CHECK_FAILS(sk_run_context_bind(c, SK_IO_INPUT, 0, NULL, sizeof xs), SK_STATUS_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(sk_run_context_run(c, two), SK_STATUS_INVALID_STATE, "input 'x' (index 0) is not bound");
  CHECK_OK(sk_run_context_bind(c, SK_IO_INPUT, 0, xs, sizeof xs));
  CHECK_OK(sk_run_context_bind(c, SK_IO_INPUT, 1, ws, sizeof ws));
  CHECK_FAILS(sk_run_context_run(c, two), SK_STATUS_INVALID_STATE, "output 'y' (index 0) is not bound");
  CHECK_FAILS(sk_run_context_bind(c, SK_IO_OUTPUT, 0, xs, sizeof xs), SK_STATUS_INVALID_ARGUMENT,
              "output 'y' overlaps input 'x'");
  CHECK_OK(sk_run_context_bind(c, SK_IO_OUTPUT, 0, ys, sizeof ys));
  CHECK_OK(sk_run_context_bind(c, SK_IO_OUTPUT, 1, zs, sizeof zs));
  /* A team of another size than the program was planned for. */
  CHECK_FAILS(sk_run_context_run(c, three), SK_STATUS_INVALID_ARGUMENT, "planned for a team of 2 cores, run on 3");
  CHECK_FAILS(sk_run_context_run(c, NULL), SK_STATUS_INVALID_ARGUMENT, "planned for a team of 2 cores, run on 1");
  /* One context is one thread's: a call while another is inside is refused. */
  atomic_flag_test_and_set(&c->busy);
  CHECK_FAILS(sk_run_context_run(c, two), SK_STATUS_INVALID_STATE, "sk_run_context_run", "in use by another thread");
  CHECK_FAILS(sk_run_context_bind(c, SK_IO_INPUT, 0, xs, sizeof xs), SK_STATUS_INVALID_STATE, "in use");
  atomic_flag_clear(&c->busy);
  for (int run = 0; run < 3; run++) { /* after the refusals, runs are normal */
    fill_small((float)run - 1.5f);
    CHECK_OK(sk_run_context_run(c, two));
    expect_small((float)run - 1.5f);
  }
  /* The program's own (default context's) bindings are not the context's. */
  CHECK_FAILS(sk_program_run_bound(p, two), SK_STATUS_INVALID_STATE, "sk_program_run_bound", "input 'x'", "not bound");
  /* A program destroyed before its context: a warning; the context keeps
   * working, and frees the program with itself (ASan checks the leak). */
  log_reset();
  sk_program_destroy(p);
  CHECK_MSG(log_has("1 run context of the program still exists"), "%s", log_text);
  fill_small(4.0f);
  CHECK_OK(sk_run_context_run(c, two));
  expect_small(4.0f);
  sk_run_context_destroy(c);
  sk_team_destroy(two);
  sk_team_destroy(three);
}

int main(void) {
  jit_test_start(base_dir, "run_context_cache");
  static const harness_case cases[] = {TEST_CASE(test_parallel_runs), TEST_CASE(test_no_serialization),
                                       TEST_CASE(test_errors_and_ownership)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

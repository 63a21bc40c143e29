/* The cost of one SyncAll: a barrier between two trivial sub-kernels.
 *
 *   build/bin/bench_barrier [reps] [rounds] [ops]      (defaults 301 2000 64)
 *
 * Two measurements, each at 1 thread, 2 threads and every available core
 * (sk_team_config.num_cores = 0, i.e. sched_getaffinity or $SK_NUM_THREADS):
 *
 * (a) runtime: one sk_team_launch with one block per core whose function
 *     calls sk__barrier_wait `rounds` times on an sk__barrier_t initialised
 *     for the team size (64-byte aligned, sk__aligned_alloc), nothing else
 *     between barriers. Per barrier = (t_launch(rounds) - t_launch(empty)) /
 *     rounds; the raw launch time / rounds is printed as well (the brief's
 *     "launch time / R minus nothing"), and the empty launch for reference.
 *
 * (b) public API: a graph with one scope of `ops` chained `square` ops on a
 *     16-element fp32 tensor (one block each, so every sub-kernel runs on
 *     core 0), compiled as an interpreted super kernel with
 *       "early-start=0"  a vector-core SyncAll (over every core) after every
 *                        sub-kernel but the last: ops - 1 barriers,
 *       "early-start=1"  no barrier and no flag: producer and consumer run
 *                        on the same core, so nothing needs waiting,
 *     and eagerly (SK_EXECUTOR_EAGER: `ops` launches). Per SyncAll =
 *     (t(early-start=0) - t(early-start=1)) / (ops - 1); eager per op =
 *     t(eager) / ops is the launch that the super kernel replaces. The plans'
 *     barrier counts are checked through sk_program_describe, and the three
 *     programs' outputs are checked to be bitwise equal.
 *
 * Each time is a median of `reps` runs (after warm-up); the variants of one
 * thread count are timed round-robin (one run of each per round) so machine
 * noise hits them alike.
 *
 * Target: under 0.3 us per SyncAll at 2 threads.
 *
 * Measured (Release, the 2-vCPU development VM, `bench_barrier` defaults,
 * two runs; numbers move by ~10% between runs):
 *
 *   threads  (a) runtime barrier   (b) API SyncAll              (b) with preload-code=none
 *      1         0.004 us           0.001-0.004 us               0.002 us
 *      2         0.075 us           0.062 us (8.5 vs 4.6 us)     0.078-0.082 us (6.3 vs 1.3 us)
 *
 * So a SyncAll costs ~0.06-0.08 us at 2 threads, well under the 0.3 us
 * target, and the API adds nothing measurable over the bare barrier. At 1
 * thread a barrier is two uncontended atomic RMWs. Two things the numbers
 * also show:
 *   - with the default preload-code=per-func, a chain of 1-block ops spends
 *     ~50 ns per sub-kernel in PRELOAD tasks (4.6 us vs 1.2-1.3 us for 64
 *     ops): interp.c's preload() scans every sub-kernel's outputs for every
 *     input of every block it preloads, so its cost grows with the number
 *     of sub-kernels in the scope;
 *   - eager (1.4 us for 64 ops, 0.022 us per op) beats every fused variant
 *     here: single-block ops are run inline on the calling thread without a
 *     team launch (runtime/team.c), so there is no launch for the super
 *     kernel to save; the fused early-start=1 program with preload-code=none
 *     (1.2-1.3 us) is the only one at par.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "runtime/barrier.h"
#include "bench_util.h"
#include "superkernel.h"

enum { ELEMS = 16 };

/* ---- (a) the runtime barrier inside one launch ---- */

typedef struct barrier_arg {
  sk__barrier_t *barrier;
  int rounds;
} barrier_arg;

static void barrier_rounds(void *arg, int64_t block, int core) {
  (void)block;
  (void)core;
  const barrier_arg *a = arg;
  for (int r = 0; r < a->rounds; r++) sk__barrier_wait(a->barrier);
}

static void empty_block(void *arg, int64_t block, int core) {
  (void)arg;
  (void)block;
  (void)core;
}

static void bench_runtime(sk_team *team, int reps, int rounds) {
  int n = sk_team_num_cores(team);
  sk__barrier_t *b = sk__aligned_alloc(sizeof *b);
  if (!b) exit(1);
  CHECK(sk__barrier_init(b, n));
  barrier_arg arg = {b, rounds};
  double *t_bar = malloc((size_t)reps * sizeof *t_bar), *t_empty = malloc((size_t)reps * sizeof *t_empty);
  if (!t_bar || !t_empty) exit(1);
  for (int w = 0; w < 10; w++) { /* warm-up: wake the workers, fault in everything */
    CHECK(sk_team_launch(team, barrier_rounds, &arg, n));
    CHECK(sk_team_launch(team, empty_block, NULL, n));
  }
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    CHECK(sk_team_launch(team, barrier_rounds, &arg, n));
    double t1 = now_us();
    CHECK(sk_team_launch(team, empty_block, NULL, n));
    double t2 = now_us();
    t_bar[r] = t1 - t0;
    t_empty[r] = t2 - t1;
  }
  double mb = median(t_bar, reps), me = median(t_empty, reps);
  printf("  (a) runtime  %2d thread%s: launch of %d barriers %9.1f us, empty launch %6.2f us -> "
         "%.4f us per barrier (%.4f us raw launch/R)\n",
         n, n == 1 ? " " : "s", rounds, mb, me, (mb - me) / rounds, mb / rounds);
  free(t_bar);
  free(t_empty);
  sk__aligned_free(b);
}

/* ---- (b) through the public API ---- */

static sk_graph *build_chain(int ops, const char *options) {
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value v;
  CHECK(sk_graph_add_input(g, "x", SK_FP32, 1, (const int64_t[]){ELEMS}, &v));
  CHECK(sk_graph_begin_scope(g, "chain", options));
  for (int i = 0; i < ops; i++) {
    sk_op_input in[] = {{"x", &v, 1}};
    sk_op_desc d = {.struct_size = sizeof d, .op = "square", .inputs = in, .n_inputs = 1};
    CHECK(sk_graph_add_op(g, &d, &v, 1, NULL));
  }
  CHECK(sk_graph_end_scope(g));
  CHECK(sk_graph_mark_output(g, v, "y"));
  return g;
}

/* The barrier count from the plan's header ("..., N flags, M barriers"). */
static int plan_barriers(const sk_program *p) {
  char *text;
  CHECK(sk_program_describe(p, &text));
  int flags = -1, barriers = -1;
  const char *at = strstr(text, " sub-kernels, ");
  if (!at || sscanf(at, " sub-kernels, %d flags, %d barriers", &flags, &barriers) != 2) barriers = -1;
  sk_free(text);
  return barriers;
}

enum { V_ES0, V_ES1, V_ES0_NP, V_ES1_NP, V_EAGER, N_VARIANTS };
static const char *const variant_options[N_VARIANTS] = {
    [V_ES0] = "early-start=0", [V_ES1] = "early-start=1",
    [V_ES0_NP] = "early-start=0:preload-code=none", [V_ES1_NP] = "early-start=1:preload-code=none",
    [V_EAGER] = ""};

static void bench_api(sk_team *team, int reps, int ops) {
  int n = sk_team_num_cores(team);
  sk_program *prog[N_VARIANTS];
  int barriers[N_VARIANTS];
  for (int v = 0; v < N_VARIANTS; v++) {
    sk_graph *g = build_chain(ops, variant_options[v]);
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team,
                             .executor = v == V_EAGER ? SK_EXECUTOR_EAGER : SK_EXECUTOR_INTERP};
    CHECK(sk_compile(g, &cfg, &prog[v]));
    sk_graph_destroy(g);
    barriers[v] = v == V_EAGER ? 0 : plan_barriers(prog[v]);
  }
  if (barriers[V_ES0] != ops - 1 || barriers[V_ES1] != 0 || barriers[V_ES0_NP] != ops - 1 || barriers[V_ES1_NP] != 0)
    printf("  note: plans have %d / %d / %d / %d barriers (expected %d / 0 / %d / 0)\n", barriers[V_ES0],
           barriers[V_ES1], barriers[V_ES0_NP], barriers[V_ES1_NP], ops - 1, ops - 1);

  float x[ELEMS], y[N_VARIANTS][ELEMS];
  for (int i = 0; i < ELEMS; i++) x[i] = (i & 1) ? -1.0f : 1.0f; /* squares stay 1: no overflow */
  sk_buffer in = {"x", x, sizeof x};
  double *t[N_VARIANTS], m[N_VARIANTS];
  for (int v = 0; v < N_VARIANTS; v++) {
    t[v] = malloc((size_t)reps * sizeof *t[v]);
    if (!t[v]) exit(1);
    sk_buffer out = {"y", y[v], sizeof y[v]};
    for (int w = 0; w < 20; w++) CHECK(sk_program_run(prog[v], team, &in, 1, &out, 1));
  }
  for (int r = 0; r < reps; r++)
    for (int v = 0; v < N_VARIANTS; v++) {
      sk_buffer out = {"y", y[v], sizeof y[v]};
      double t0 = now_us();
      CHECK(sk_program_run(prog[v], team, &in, 1, &out, 1));
      t[v][r] = now_us() - t0;
    }
  bool equal = true;
  for (int v = 0; v < N_VARIANTS; v++) {
    equal = equal && memcmp(y[v], y[V_EAGER], sizeof y[0]) == 0;
    m[v] = median(t[v], reps);
  }
  printf("  (b) API      %2d thread%s: %d squares, early-start=0 %7.2f us, early-start=1 %7.2f us -> %.4f us per SyncAll"
         "  [preload-code=none: %7.2f / %7.2f us -> %.4f us]; eager %7.2f us (%.3f us per op)%s\n",
         n, n == 1 ? " " : "s", ops, m[V_ES0], m[V_ES1], (m[V_ES0] - m[V_ES1]) / (ops - 1), m[V_ES0_NP], m[V_ES1_NP],
         (m[V_ES0_NP] - m[V_ES1_NP]) / (ops - 1), m[V_EAGER], m[V_EAGER] / ops, equal ? "" : "  OUTPUTS DIFFER");
  for (int v = 0; v < N_VARIANTS; v++) {
    free(t[v]);
    sk_program_destroy(prog[v]);
  }
  if (!equal) exit(1);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 301;
  int rounds = argc > 2 ? atoi(argv[2]) : 2000;
  int ops = argc > 3 ? atoi(argv[3]) : 64;
  if (reps < 1 || rounds < 1 || ops < 2) {
    fprintf(stderr, "usage: %s [reps >= 1] [rounds >= 1] [ops >= 2]\n", argv[0]);
    return 2;
  }
  /* One team at a time: live teams' threads beyond the CPU count shrink the
   * runtime's spin phase (runtime/wait.h), which would skew the numbers. */
  sk_team *probe;
  CHECK(sk_team_create(NULL, &probe));
  int n_all = sk_team_num_cores(probe);
  sk_team_destroy(probe);
  int counts[3] = {1, 2, n_all}, n_counts = n_all > 2 ? 3 : n_all == 2 ? 2 : 1;
  printf("SyncAll cost: medians of %d reps; (a) %d barrier rounds per launch, (b) %d chained square ops "
         "on fp32[%d]\n",
         reps, rounds, ops, ELEMS);
  for (int k = 0; k < n_counts; k++) {
    sk_team *team;
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = counts[k]};
    CHECK(sk_team_create(&cfg, &team));
    bench_runtime(team, reps, rounds);
    bench_api(team, reps, ops);
    sk_team_destroy(team);
  }
  return 0;
}

/* bench_superkernel — super kernels on vs off on the benchmark scenarios.
 *
 * For each scenario of shared/spec/models.md (seed T=256, decode T=16,
 * prefill T=4096), compiles the model six times: super kernels off (eager:
 * every op its own launch) and on (each scope one launch, interpreted and
 * JIT-compiled), each for a team of 1 core and a team of every core. All six
 * are timed in one run, interleaved in rounds of BATCH consecutive reps each
 * (the first round warms up), so machine noise hits them alike while each
 * mode runs as it would in a steady loop; the outputs are checked bitwise
 * equal once after the warm-up. Prints the medians and the fused/eager
 * ratios.
 *
 *   bench_superkernel [--reps N] [scenario ...]      (default: seed decode prefill)
 *
 * prefill runs max(N/10, 5) reps (each is tens of milliseconds).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models.h"
#include "bench_util.h"
#include "superkernel.h"

/* Three executors (eager, interpreted, JIT) on a team of 1 core and of
 * every core. */
enum { N_EXECUTORS = 3, N_MODES = 2 * N_EXECUTORS };
static const sk_executor executors[N_EXECUTORS] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
static const char *const executor_names[N_EXECUTORS] = {"eager", "interp", "jit"};

/* Runs one scenario; returns false when the modes' outputs differ. */
static bool bench_scenario(const char *name, int reps, sk_team *one, sk_team *all) {
  char msg[1024];
  skm_model_info info;
  sk_graph *g;
  if (skm_build(name, NULL, &g, &info, msg, sizeof msg) != SK_STATUS_OK) {
    fprintf(stderr, "%s\n", msg);
    exit(1);
  }
  sk_program *p[N_MODES];
  skm_io io[N_MODES];
  for (int m = 0; m < N_MODES; m++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg,
                             .team = m < N_EXECUTORS ? one : all,
                             .executor = executors[m % N_EXECUTORS]};
    CHECK(sk_compile(g, &cfg, &p[m]));
    if (skm_io_alloc(p[m], &io[m], msg, sizeof msg) != SK_STATUS_OK) {
      fprintf(stderr, "%s\n", msg);
      exit(1);
    }
    skm_fill_inputs(&io[m], SKM_DEFAULT_SEED);
  }
  sk_graph_destroy(g);

  double *t[N_MODES];
  for (int m = 0; m < N_MODES; m++) t[m] = malloc(sizeof(double) * (size_t)reps);
  enum { BATCH = 10 };
  bool same = true;
  for (int r0 = -BATCH; r0 < reps; r0 += BATCH) { /* the first round warms up */
    for (int m = 0; m < N_MODES; m++) {
      sk_team *team = m < N_EXECUTORS ? one : all;
      for (int r = r0; r < r0 + BATCH && r < reps; r++) {
        double a = now_us();
        CHECK(sk_program_run(p[m], team, io[m].in_buffers, io[m].n_inputs, io[m].out_buffers, io[m].n_outputs));
        double dt = now_us() - a;
        if (r >= 0) t[m][r] = dt;
      }
    }
    if (r0 == -BATCH) /* every mode has run: compare the outputs once */
      for (int m = 1; m < N_MODES; m++)
        for (size_t o = 0; o < io[0].n_outputs; o++)
          if (memcmp(io[m].outputs[o].data, io[0].outputs[o].data, io[0].outputs[o].bytes) != 0) {
            fprintf(stderr, "%s: output %s of %s on team %d DIFFERS from eager on 1 core\n", name,
                    io[0].outputs[o].name, executor_names[m % N_EXECUTORS], m / N_EXECUTORS);
            same = false;
          }
  }
  double med[N_MODES];
  for (int m = 0; m < N_MODES; m++) med[m] = median(t[m], reps);
  char shape[64];
  skm_format_shape(io[0].outputs[0].rank, io[0].outputs[0].shape, shape, sizeof shape);
  for (int k = 0; k < 2; k++) {
    const double *m3 = &med[k * N_EXECUTORS];
    printf("%-8s %5lld %-13s %5d %6d %10.1f %10.1f %10.1f %8.3f %8.3f  %s\n", name, (long long)info.t, shape,
           sk_team_num_cores(k ? all : one), reps, m3[0], m3[1], m3[2], m3[1] / m3[0], m3[2] / m3[0],
           same ? "bitwise equal" : "OUTPUTS DIFFER");
  }
  for (int m = 0; m < N_MODES; m++) {
    free(t[m]);
    skm_io_free(&io[m]);
    sk_program_destroy(p[m]);
  }
  return same;
}

static int usage(const char *argv0) {
  fprintf(stderr, "usage: %s [--reps N] [scenario ...]   (scenarios: seed decode prefill; models: %s)\n", argv0,
          skm_model_list());
  return 2;
}

int main(int argc, char **argv) {
  int reps = 200;
  const char *names[16];
  int n_names = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 1 || v > 1000000) return usage(argv[0]);
      reps = (int)v;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(argv[0]);
      return 0;
    } else if (skm_model_lookup(argv[i], NULL) && n_names < 16) {
      names[n_names++] = argv[i];
    } else {
      fprintf(stderr, "%s: unknown scenario '%s'\n", argv[0], argv[i]);
      return usage(argv[0]);
    }
  }
  if (n_names == 0) {
    names[0] = "seed", names[1] = "decode", names[2] = "prefill";
    n_names = 3;
  }
  sk_team *one, *all;
  sk_team_config c1 = {.struct_size = sizeof c1, .num_cores = 1};
  CHECK(sk_team_create(&c1, &one));
  CHECK(sk_team_create(NULL, &all));
  printf("super kernels off (eager: every op its own launch) vs on (each scope one launch, interpreted or JIT)\n");
  printf("medians of interleaved batches; ratios = fused/eager (< 1: fusion is faster)\n");
  printf("%-8s %5s %-13s %5s %6s %10s %10s %10s %8s %8s\n", "scenario", "T", "output", "cores", "reps", "eager us",
         "interp us", "jit us", "interp/e", "jit/e");
  bool ok = true;
  for (int i = 0; i < n_names; i++) {
    int r = strcmp(names[i], "prefill") == 0 ? (reps / 10 > 5 ? reps / 10 : 5) : reps;
    ok = bench_scenario(names[i], r, one, all) && ok;
    fflush(stdout);
  }
  sk_team_destroy(one);
  sk_team_destroy(all);
  return ok ? 0 : 1;
}

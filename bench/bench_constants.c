/* bench_constants — the benchmark scenarios with their weights as graph
 * constants (packed once at compile) vs as program inputs (bound, and
 * packed by every tile, at every run).
 *
 * For each scenario and team size, compiles the model both ways with the
 * JIT executor from the same values (skm_values), checks the outputs
 * bitwise equal, then times the two interleaved in rounds of BATCH
 * consecutive runs (the first round warms up), so machine noise hits both
 * alike. Prints the medians and constants/inputs.
 *
 *   bench_constants [--reps N] [--threads LIST] [scenario ...]
 *                   (default: 300 reps, threads 1,2, seed decode)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "models.h"
#include "superkernel.h"

enum { BATCH = 10, WAYS = 2 }; /* way 0: weights as inputs, 1: as constants */

static sk_program *compile_way(const char *name, const skm_io *values, int way, sk_team *team, skm_io *io) {
  char msg[1024];
  skm_config mc = {.weights = way ? values : NULL};
  sk_graph *g;
  if (skm_build(name, &mc, &g, NULL, msg, sizeof msg) != SK_STATUS_OK) {
    fprintf(stderr, "%s\n", msg);
    exit(1);
  }
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = SK_EXECUTOR_JIT};
  sk_program *p;
  CHECK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  if (skm_io_alloc(p, io, msg, sizeof msg) != SK_STATUS_OK || skm_fill_from(io, values, msg, sizeof msg) != SK_STATUS_OK) {
    fprintf(stderr, "%s\n", msg);
    exit(1);
  }
  return p;
}

static bool bench(const char *name, int threads, int reps) {
  char msg[1024];
  skm_io values;
  if (skm_values(name, NULL, SKM_DEFAULT_SEED, &values, msg, sizeof msg) != SK_STATUS_OK) {
    fprintf(stderr, "%s\n", msg);
    exit(1);
  }
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = threads};
  sk_team *team;
  CHECK(sk_team_create(&tc, &team));
  sk_program *p[WAYS];
  skm_io io[WAYS];
  for (int w = 0; w < WAYS; w++) p[w] = compile_way(name, &values, w, team, &io[w]);
  double *t[WAYS];
  for (int w = 0; w < WAYS; w++) t[w] = malloc(sizeof(double) * (size_t)reps);
  bool equal = true;
  for (int done = -BATCH; done < reps; done += BATCH) /* the first round warms up */
    for (int w = 0; w < WAYS; w++)
      for (int k = 0; k < BATCH; k++) {
        double t0 = now_us();
        CHECK(sk_program_run(p[w], team, io[w].in_buffers, io[w].n_inputs, io[w].out_buffers, io[w].n_outputs));
        if (done >= 0 && done + k < reps) t[w][done + k] = now_us() - t0;
      }
  for (size_t o = 0; o < io[0].n_outputs; o++)
    equal &= memcmp(io[0].outputs[o].data, io[1].outputs[o].data, io[0].outputs[o].bytes) == 0;
  sk_program_stats st = {.struct_size = sizeof st};
  CHECK(sk_program_get_stats(p[1], &st));
  double inputs = median(t[0], reps), constants = median(t[1], reps);
  printf("%-8s %7d %6d %12.1f %12.1f %16.3f %12zu  %s\n", name, sk_team_num_cores(team), reps, inputs, constants,
         constants / inputs, st.packed_bytes, equal ? "bitwise equal" : "DIFFER");
  for (int w = 0; w < WAYS; w++) {
    free(t[w]);
    skm_io_free(&io[w]);
    sk_program_destroy(p[w]);
  }
  sk_team_destroy(team);
  skm_io_free(&values);
  return equal;
}

int main(int argc, char **argv) {
  int reps = 300, threads[8] = {1, 2}, n_threads = 2, n_names = 0;
  const char *names[16];
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      n_threads = 0;
      for (char *tok = strtok(argv[++i], ","); tok && n_threads < 8; tok = strtok(NULL, ",")) threads[n_threads++] = atoi(tok);
    } else if (n_names < 16) {
      names[n_names++] = argv[i];
    }
  }
  if (reps < 1 || n_threads < 1) {
    fprintf(stderr, "usage: bench_constants [--reps N>=1] [--threads LIST] [scenario ...]\n");
    return 2;
  }
  if (n_names == 0) names[n_names++] = "seed", names[n_names++] = "decode";
  printf("weights as program inputs vs as graph constants (packed at compile); JIT; median us of interleaved batches\n");
  printf("%-8s %7s %6s %12s %12s %16s %12s  %s\n", "scenario", "threads", "reps", "inputs", "constants",
         "constants/inputs", "packed bytes", "outputs");
  bool ok = true;
  for (int s = 0; s < n_names; s++)
    for (int k = 0; k < n_threads; k++) ok &= bench(names[s], threads[k], reps);
  return ok ? 0 : 1;
}

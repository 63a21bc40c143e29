/* The per-run overhead of a one-op program (square of fp32 [16], eager, on
 * the calling thread): buffers by name (sk_program_run), by declaration
 * index (sk_program_run_by_index), bound once (sk_program_bind +
 * sk_program_run_bound), and bound in a run context of its own
 * (sk_run_context_bind + sk_run_context_run: no program lock). Each median
 * is over --reps batches of 1000 runs, measured in one process,
 * interleaved so drift hits all four alike.
 *
 *   build/bin/bench_run_overhead [--reps N] [--inputs K]
 *
 * --inputs K declares K inputs x0..x{K-1} (only x0 is squared), so a run
 * binds K buffers as a real program with weights and activations does. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "bench_util.h"

#define BATCH 1000
#define MAX_INPUTS 64

int main(int argc, char **argv) {
  int reps = 30, n_in = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--inputs") == 0) n_in = atoi(argv[i + 1]);
  }
  if (reps < 1 || n_in < 1 || n_in > MAX_INPUTS) {
    fprintf(stderr, "usage: bench_run_overhead [--reps N>=1] [--inputs 1..%d]\n", MAX_INPUTS);
    return 2;
  }
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  static float data[MAX_INPUTS][16], y[16];
  sk_value x[MAX_INPUTS], out;
  char names[MAX_INPUTS][16];
  sk_buffer in[MAX_INPUTS];
  for (int i = 0; i < n_in; i++) {
    snprintf(names[i], sizeof names[i], "x%d", i);
    CHECK(sk_graph_add_input(g, names[i], SK_FP32, 1, (int64_t[]){16}, &x[i]));
    in[i] = (sk_buffer){names[i], data[i], sizeof data[i]};
  }
  sk_op_input slot = {"x", &x[0], 1};
  sk_op_desc d = {.op = "square", .inputs = &slot, .n_inputs = 1};
  CHECK(sk_graph_add_op(g, &d, &out, 1, NULL));
  CHECK(sk_graph_mark_output(g, out, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_EAGER};
  sk_program *p;
  CHECK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  sk_buffer ob = {"y", y, sizeof y};
  for (int i = 0; i < n_in; i++) CHECK(sk_program_bind(p, SK_IO_INPUT, (size_t)i, data[i], sizeof data[i]));
  CHECK(sk_program_bind(p, SK_IO_OUTPUT, 0, y, sizeof y));
  sk_run_context *ctx;
  CHECK(sk_run_context_create(p, &ctx));
  for (int i = 0; i < n_in; i++) CHECK(sk_run_context_bind(ctx, SK_IO_INPUT, (size_t)i, data[i], sizeof data[i]));
  CHECK(sk_run_context_bind(ctx, SK_IO_OUTPUT, 0, y, sizeof y));

  double t_name[reps], t_index[reps], t_bound[reps], t_ctx[reps];
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int k = 0; k < BATCH; k++) CHECK(sk_program_run(p, NULL, in, (size_t)n_in, &ob, 1));
    double t1 = now_us();
    for (int k = 0; k < BATCH; k++) CHECK(sk_program_run_by_index(p, NULL, in, (size_t)n_in, &ob, 1));
    double t2 = now_us();
    for (int k = 0; k < BATCH; k++) CHECK(sk_program_run_bound(p, NULL));
    double t3 = now_us();
    for (int k = 0; k < BATCH; k++) CHECK(sk_run_context_run(ctx, NULL));
    double t4 = now_us();
    t_name[r] = (t1 - t0) * 1e3 / BATCH, t_index[r] = (t2 - t1) * 1e3 / BATCH, t_bound[r] = (t3 - t2) * 1e3 / BATCH;
    t_ctx[r] = (t4 - t3) * 1e3 / BATCH;
  }
  double by_name = median(t_name, reps), by_index = median(t_index, reps), bound = median(t_bound, reps);
  double in_ctx = median(t_ctx, reps);
  printf("one-op program (square fp32[16], %d inputs), eager, calling thread; median of %d x %d runs\n", n_in, reps,
         BATCH);
  printf("  %-28s %8.1f ns/run\n", "by name (sk_program_run)", by_name);
  printf("  %-28s %8.1f ns/run  %.2fx faster\n", "by index", by_index, by_name / by_index);
  printf("  %-28s %8.1f ns/run  %.2fx faster\n", "bound (run_bound)", bound, by_name / bound);
  printf("  %-28s %8.1f ns/run  %.2fx faster\n", "run context (context_run)", in_ctx, by_name / in_ctx);
  sk_run_context_destroy(ctx);
  sk_program_destroy(p);
  return 0;
}

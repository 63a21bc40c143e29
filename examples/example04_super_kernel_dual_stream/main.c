/* example04_super_kernel_dual_stream — two chains on two streams, fused with
 * stream-fusion=1 (the seed's dual-stream AOT example, on our runtime).
 *
 * One scope "dual" (options "stream-fusion=1") holds two independent chains:
 *
 *   stream 0 (chain A)                        stream 1 (chain B)
 *   a1 = grouped_matmul(xa, wa)  [256,256]    b1 = grouped_matmul(xb, wb)  [256,256]
 *   record evA (after a1)                     record evB (after b1)
 *   a2 = square(a1)                           wait evA
 *   wait evB                                  b2 = mul(b1, a1)      <- reads A's output
 *   a3 = add(a2, b1)   <- reads B's output    b3 = cast(b2, fp32)   -> out_b
 *   a4 = cast(a3, fp32)  -> out_a
 *
 * So there is one event edge from A into B (evA: b2 waits for a1) and one
 * from B into A (evB: a3 waits for b1), each guarding a real read of the
 * other chain's output. With stream fusion the planner gives each chain half
 * of the team (disjoint core sets), runs the chains at once and synchronizes
 * them only at the two event edges (flags), with chain-local barriers
 * between a chain's own sub-kernels (early start is forced off, as in the
 * seed).
 *
 * The program is compiled twice on a team of every core: fused (interpreted
 * super kernel) and eager (every op its own launch). Both outputs must be
 * bitwise equal; the example prints both median times, the head of the
 * fused plan (sk_program_describe: the "stream-fused" header and each
 * sub-kernel's cores and stream) and the success line. With --plan it
 * prints every core's task list as well.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "superkernel.h"

/* Timed runs for a median; a sanitizer build sets 5 (examples/CMakeLists.txt). */
#ifndef SK_EXAMPLE_TIMING_REPS
#define SK_EXAMPLE_TIMING_REPS 101
#endif

#define CHECK(call)                                                                          \
  do {                                                                                       \
    sk_status st_ = (call);                                                                  \
    if (st_ != SK_STATUS_OK) {                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, sk_status_string(st_), sk_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { M = 256, K = 256, N = 256 };

enum { XA, WA, XB, WB, N_INPUTS };
static const struct {
  const char *name;
  int64_t shape[2];
  double lo, hi;
} inputs_spec[N_INPUTS] = {
    [XA] = {"xa", {M, K}, -1, 1},
    [WA] = {"wa", {K, N}, -0.0625, 0.0625},
    [XB] = {"xb", {M, K}, -1, 1},
    [WB] = {"wb", {K, N}, -0.0625, 0.0625},
};

static uint64_t rng = 20240404;
static double uniform(double lo, double hi) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

/* One node; returns its first output. */
static sk_value node(sk_graph *g, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                     const sk_attr *attrs, size_t n_attrs) {
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                  .attrs = attrs, .n_attrs = n_attrs};
  sk_value out[1];
  CHECK(sk_graph_add_op(g, &d, out, 1, NULL));
  return out[0];
}

static sk_graph *build_model(void) {
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value in[N_INPUTS];
  for (int i = 0; i < N_INPUTS; i++) CHECK(sk_graph_add_input(g, inputs_spec[i].name, SK_FP16, 2, inputs_spec[i].shape, &in[i]));
  sk_attr gmm_attrs[] = {SK_ATTR_INT("group_type", -1)};
  sk_attr to_fp32[] = {SK_ATTR_INT("dtype", SK_FP32)};

  CHECK(sk_graph_begin_scope(g, "dual", "stream-fusion=1"));
  sk_event ev_a, ev_b;

  /* chain A's head, stream 0 */
  CHECK(sk_graph_set_stream(g, 0));
  sk_op_input a1_in[] = {{"x", &in[XA], 1}, {"weight", &in[WA], 1}};
  sk_value a1 = node(g, "gmm_a", "grouped_matmul", a1_in, 2, gmm_attrs, 1);
  CHECK(sk_graph_record_event(g, &ev_a));

  /* chain B's head, stream 1 */
  CHECK(sk_graph_set_stream(g, 1));
  sk_op_input b1_in[] = {{"x", &in[XB], 1}, {"weight", &in[WB], 1}};
  sk_value b1 = node(g, "gmm_b", "grouped_matmul", b1_in, 2, gmm_attrs, 1);
  CHECK(sk_graph_record_event(g, &ev_b));

  /* A: square, then (after evB) add B's matmul output, cast */
  CHECK(sk_graph_set_stream(g, 0));
  sk_op_input a2_in[] = {{"x", &a1, 1}};
  sk_value a2 = node(g, "square_a", "square", a2_in, 1, NULL, 0);
  CHECK(sk_graph_wait_event(g, ev_b));
  sk_op_input a3_in[] = {{"x", &a2, 1}, {"y", &b1, 1}};
  sk_value a3 = node(g, "add_ab", "add", a3_in, 2, NULL, 0);
  sk_op_input a4_in[] = {{"x", &a3, 1}};
  sk_value out_a = node(g, "cast_a", "cast", a4_in, 1, to_fp32, 1);

  /* B: (after evA) multiply by A's matmul output, cast */
  CHECK(sk_graph_set_stream(g, 1));
  CHECK(sk_graph_wait_event(g, ev_a));
  sk_op_input b2_in[] = {{"x", &b1, 1}, {"y", &a1, 1}};
  sk_value b2 = node(g, "mul_ba", "mul", b2_in, 2, NULL, 0);
  sk_op_input b3_in[] = {{"x", &b2, 1}};
  sk_value out_b = node(g, "cast_b", "cast", b3_in, 1, to_fp32, 1);

  CHECK(sk_graph_set_stream(g, 0));
  CHECK(sk_graph_end_scope(g));
  CHECK(sk_graph_mark_output(g, out_a, "out_a"));
  CHECK(sk_graph_mark_output(g, out_b, "out_b"));
  return g;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { REPS = SK_EXAMPLE_TIMING_REPS };

/* Median of REPS runs after one warm-up run. */
static double median_run_us(sk_program *p, sk_team *team, const sk_buffer *inputs, const sk_buffer *outputs) {
  double times[REPS];
  CHECK(sk_program_run(p, team, inputs, N_INPUTS, outputs, 2));
  for (int r = 0; r < REPS; r++) {
    double t0 = now_us();
    CHECK(sk_program_run(p, team, inputs, N_INPUTS, outputs, 2));
    times[r] = now_us() - t0;
  }
  qsort(times, REPS, sizeof times[0], cmp_double);
  return times[REPS / 2];
}

/* Prints the plan's header and sub-kernel lines; with full, also every
 * core's task list. */
static void print_plan(const sk_program *p, bool full) {
  char *text;
  CHECK(sk_program_describe(p, &text));
  for (char *line = text; *line;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (full || strncmp(line, "program:", 8) == 0 || strncmp(line, "super kernel", 12) == 0 ||
        strncmp(line, "  sub ", 6) == 0 || strncmp(line, "op ", 3) == 0)
      printf("  | %.*s\n", (int)len, line);
    line += len + (end ? 1 : 0);
  }
  sk_free(text);
}

int main(int argc, char **argv) {
  bool full_plan = argc > 1 && strcmp(argv[1], "--plan") == 0; /* print every task too */
  sk_graph *g = build_model();
  sk_team *team;
  CHECK(sk_team_create(NULL, &team));
  int cores = sk_team_num_cores(team);
  sk_compile_config fused_cfg = {.struct_size = sizeof fused_cfg, .team = team, .executor = SK_EXECUTOR_INTERP};
  sk_compile_config eager_cfg = {.struct_size = sizeof eager_cfg, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_program *fused, *eager;
  CHECK(sk_compile(g, &fused_cfg, &fused));
  CHECK(sk_compile(g, &eager_cfg, &eager));
  sk_graph_destroy(g);

  sk_buffer inputs[N_INPUTS];
  for (int i = 0; i < N_INPUTS; i++) {
    size_t n = (size_t)(inputs_spec[i].shape[0] * inputs_spec[i].shape[1]);
    uint16_t *data = malloc(n * sizeof *data);
    if (!data) return 1;
    for (size_t j = 0; j < n; j++) data[j] = sk_fp32_to_fp16((float)uniform(inputs_spec[i].lo, inputs_spec[i].hi));
    inputs[i] = (sk_buffer){inputs_spec[i].name, data, n * sizeof *data};
  }
  size_t out_bytes = (size_t)M * N * sizeof(float);
  float *eager_a = calloc(M * N, sizeof(float)), *eager_b = calloc(M * N, sizeof(float));
  float *fused_a = calloc(M * N, sizeof(float)), *fused_b = calloc(M * N, sizeof(float));
  if (!eager_a || !eager_b || !fused_a || !fused_b) return 1;
  sk_buffer out_eager[] = {{"out_a", eager_a, out_bytes}, {"out_b", eager_b, out_bytes}};
  sk_buffer out_fused[] = {{"out_a", fused_a, out_bytes}, {"out_b", fused_b, out_bytes}};

  double t_eager = median_run_us(eager, team, inputs, out_eager);
  double t_fused = median_run_us(fused, team, inputs, out_fused);
  bool equal = memcmp(eager_a, fused_a, out_bytes) == 0 && memcmp(eager_b, fused_b, out_bytes) == 0;

  double sum_a = 0, sum_b = 0;
  for (size_t i = 0; i < (size_t)M * N; i++) {
    sum_a += fused_a[i];
    sum_b += fused_b[i];
  }
  printf("dual-stream scope: chain A gmm->square->add(B)->cast, chain B gmm->mul(A)->cast, [%d,%d]x[%d,%d] fp16\n", M, K,
         K, N);
  printf("outputs: out_a fp32 [%d,%d] sum %.4f, out_b fp32 [%d,%d] sum %.6f\n", M, N, sum_a, M, N, sum_b);
  printf("fused plan:\n");
  print_plan(fused, full_plan);
  printf("team of %d cores, medians of %d runs:\n", cores, REPS);
  printf("  super kernels off (eager):           %8.1f us\n", t_eager);
  printf("  stream-fused super kernel (interp):  %8.1f us  (%.2fx)  %s\n", t_fused, t_eager / t_fused,
         equal ? "bitwise equal to eager" : "DIFFERS from eager");

  for (int i = 0; i < N_INPUTS; i++) free(inputs[i].data);
  free(eager_a);
  free(eager_b);
  free(fused_a);
  free(fused_b);
  sk_program_destroy(fused);
  sk_program_destroy(eager);
  sk_team_destroy(team);
  if (!equal) return 1;
  printf("execute sample success\n");
  return 0;
}

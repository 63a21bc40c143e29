/* bench_quant_matmul — the int8 quant_matmul vs the fp32 GEMM, through the
 * public API.
 *
 * Big shape (default 256 x 4096 x 1024), one core: quant_matmul int8 x int8
 * with int32 output and with fp16 output (int64 packed scale [1]), and
 * grouped_matmul in fp32 (the fp32 GEMM) on the same shape. The modes are
 * timed in one run, interleaved in rounds of BATCH consecutive reps each, so
 * machine noise hits them alike; medians, GOP/s (2 m k n per run) and the
 * int8 / fp32 rate ratios are printed. The bar: int8 >= 2x fp32.
 * Then the seed's shape, x1 [48, 64] x x2 [6, 64, 64] with fp16 output, on
 * one core and on every core.
 *
 *   bench_quant_matmul [--reps N] [MxKxN]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "superkernel.h"

/* quant_matmul x1 [batch_x1..., m, k] x x2 [b, k, n] (b = 0: [k, n]) with an
 * int64 scale [1] unless out is int32. */
static sk_program *build_qmm(int64_t m, int64_t k, int64_t n, int64_t b, sk_dtype out, const sk_team *team) {
  sk_graph *g;
  sk_value v[3], y;
  CHECK(sk_graph_create(&g));
  CHECK(sk_graph_add_input(g, "x1", SK_INT8, 2, (int64_t[]){m, k}, &v[0]));
  if (b) CHECK(sk_graph_add_input(g, "x2", SK_INT8, 3, (int64_t[]){b, k, n}, &v[1]));
  else CHECK(sk_graph_add_input(g, "x2", SK_INT8, 2, (int64_t[]){k, n}, &v[1]));
  sk_op_input in[3] = {{"x1", &v[0], 1}, {"x2", &v[1], 1}, {"scale", &v[2], 1}};
  size_t n_in = 2;
  if (out != SK_INT32) {
    CHECK(sk_graph_add_input(g, "scale", SK_INT64, 1, (int64_t[]){1}, &v[2]));
    n_in = 3;
  }
  sk_attr at[] = {SK_ATTR_INT("output_dtype", out)};
  sk_op_desc d = {.struct_size = sizeof d, .op = "quant_matmul", .inputs = in, .n_inputs = n_in, .attrs = at, .n_attrs = 1};
  CHECK(sk_graph_add_op(g, &d, &y, 1, NULL));
  CHECK(sk_graph_mark_output(g, y, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team};
  sk_program *p;
  CHECK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  return p;
}

static sk_program *build_gmm_f32(int64_t m, int64_t k, int64_t n, const sk_team *team) {
  sk_graph *g;
  sk_value x, w, y;
  CHECK(sk_graph_create(&g));
  CHECK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){m, k}, &x));
  CHECK(sk_graph_add_input(g, "w", SK_FP32, 2, (int64_t[]){k, n}, &w));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_op_desc d = {.struct_size = sizeof d, .op = "grouped_matmul", .inputs = in, .n_inputs = 2};
  CHECK(sk_graph_add_op(g, &d, &y, 1, NULL));
  CHECK(sk_graph_mark_output(g, y, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team};
  sk_program *p;
  CHECK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  return p;
}

typedef struct mode {
  sk_program *p;
  sk_team *team;
  const sk_buffer *in, *out;
  size_t n_in;
  double *t;
} mode;

/* Runs the modes interleaved, BATCH reps each per round; the first round
 * warms up. */
static void run_modes(mode *modes, int n_modes, int reps) {
  enum { BATCH = 5 };
  for (int r0 = -BATCH; r0 < reps; r0 += BATCH)
    for (int mo = 0; mo < n_modes; mo++)
      for (int r = r0; r < r0 + BATCH && r < reps; r++) {
        double a = now_us();
        CHECK(sk_program_run(modes[mo].p, modes[mo].team, modes[mo].in, modes[mo].n_in, modes[mo].out, 1));
        double t = now_us() - a;
        if (r >= 0) modes[mo].t[r] = t;
      }
}

static void *random_bytes(size_t n, uint64_t seed) {
  unsigned char *b = malloc(n);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    b[i] = (unsigned char)(seed >> 56);
  }
  return b;
}

int main(int argc, char **argv) {
  int reps = 30;
  long long M = 256, K = 4096, N = 1024;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (sscanf(argv[i], "%lldx%lldx%lld", &M, &K, &N) != 3 || M <= 0 || K <= 0 || N <= 0) {
      fprintf(stderr, "usage: %s [--reps N] [MxKxN]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  sk_team *one, *all;
  sk_team_config c1 = {.struct_size = sizeof c1, .num_cores = 1};
  CHECK(sk_team_create(&c1, &one));
  CHECK(sk_team_create(NULL, &all));

  /* ---- the big shape, one core ---- */
  size_t xs = (size_t)(M * K), ws = (size_t)(K * N), ys = (size_t)(M * N);
  int8_t *x1 = random_bytes(xs, 1), *x2 = random_bytes(ws, 2);
  float *xf = malloc(xs * 4), *wf = malloc(ws * 4), *yf = malloc(ys * 4);
  for (size_t i = 0; i < xs; i++) xf[i] = x1[i] / 128.0f;
  for (size_t i = 0; i < ws; i++) wf[i] = x2[i] / 128.0f;
  int32_t *yi = malloc(ys * 4);
  uint16_t *yh = malloc(ys * 2);
  float s = 1e-4f;
  int64_t packed;
  CHECK(sk_trans_quant_param(&s, NULL, 1, &packed));
  sk_buffer q_in[] = {{"x1", x1, xs}, {"x2", x2, ws}, {"scale", &packed, 8}};
  sk_buffer qi_out[] = {{"y", yi, ys * 4}}, qh_out[] = {{"y", yh, ys * 2}};
  sk_buffer f_in[] = {{"x", xf, xs * 4}, {"w", wf, ws * 4}}, f_out[] = {{"y", yf, ys * 4}};
  double *t = malloc(sizeof(double) * 3 * (size_t)reps);
  mode modes[3] = {
      {build_qmm(M, K, N, 0, SK_INT32, one), one, q_in, qi_out, 2, t},
      {build_qmm(M, K, N, 0, SK_FP16, one), one, q_in, qh_out, 3, t + reps},
      {build_gmm_f32(M, K, N, one), one, f_in, f_out, 2, t + 2 * reps},
  };
  run_modes(modes, 3, reps);
  double ops = 2.0 * (double)M * (double)K * (double)N, med[3];
  for (int i = 0; i < 3; i++) med[i] = median(modes[i].t, reps);
  printf("%lldx%lldx%lld, 1 core, medians of %d reps\n", M, K, N, reps);
  printf("  quant_matmul int8 -> int32  %9.1f us %7.1f GOP/s   %.2fx fp32\n", med[0], ops / med[0] / 1e3, med[2] / med[0]);
  printf("  quant_matmul int8 -> fp16   %9.1f us %7.1f GOP/s   %.2fx fp32\n", med[1], ops / med[1] / 1e3, med[2] / med[1]);
  printf("  grouped_matmul fp32 -> fp32 %9.1f us %7.1f GFLOP/s\n", med[2], ops / med[2] / 1e3);
  for (int i = 0; i < 3; i++) sk_program_destroy(modes[i].p);

  /* ---- the seed shape: x1 [48, 64] x x2 [6, 64, 64], fp16 out ---- */
  int8_t *s1 = random_bytes(48 * 64, 3), *s2 = random_bytes(6 * 64 * 64, 4);
  uint16_t *sy = malloc(6 * 48 * 64 * 2);
  sk_buffer s_in[] = {{"x1", s1, 48 * 64}, {"x2", s2, 6 * 64 * 64}, {"scale", &packed, 8}};
  sk_buffer s_out[] = {{"y", sy, 6 * 48 * 64 * 2}};
  int seed_reps = reps * 20;
  double *ts = malloc(sizeof(double) * 2 * (size_t)seed_reps);
  mode seed[2] = {{build_qmm(48, 64, 64, 6, SK_FP16, one), one, s_in, s_out, 3, ts},
                  {build_qmm(48, 64, 64, 6, SK_FP16, all), all, s_in, s_out, 3, ts + seed_reps}};
  run_modes(seed, 2, seed_reps);
  double sops = 2.0 * 6 * 48 * 64 * 64, m1 = median(seed[0].t, seed_reps), mn = median(seed[1].t, seed_reps);
  printf("seed 48x64 @ 6x64x64 -> fp16 [6, 48, 64], medians of %d reps\n", seed_reps);
  printf("  1 core   %8.2f us %7.1f GOP/s\n", m1, sops / m1 / 1e3);
  printf("  %d cores  %8.2f us %7.1f GOP/s\n", sk_team_num_cores(all), mn, sops / mn / 1e3);
  for (int i = 0; i < 2; i++) sk_program_destroy(seed[i].p);

  sk_team_destroy(one);
  sk_team_destroy(all);
  free(x1), free(x2), free(xf), free(wf), free(yf), free(yi), free(yh), free(t);
  free(s1), free(s2), free(sy), free(ts);
  return 0;
}

/* bench_grouped_matmul — grouped_matmul through the public API vs OpenBLAS.
 *
 * For each shape M,K,N (default: the seed's two big groups), times a
 * one-group grouped_matmul with fp16 inputs and output on a team of 1 core
 * and on a team of every core, and cblas_sgemm on the same shape in fp32 with
 * one OpenBLAS thread. All three are timed in one run, interleaved in rounds
 * of BATCH consecutive reps each, so machine noise hits them alike while each
 * mode runs as it would in a steady loop (an idle team's workers go to sleep,
 * and the first launch after that pays the wake-up); medians are printed with
 * the ratios.
 *
 * OpenBLAS's kernels must be the CPU's (blas_core.h): it reruns itself with
 * the right OPENBLAS_CORETYPE when OpenBLAS chose older ones, prints the
 * core, and prints no sk/openblas ratio against a core that does not match
 * (none at all against kernels the CPU cannot run).
 *
 *   bench_grouped_matmul [--reps N] [MxKxN ...]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "superkernel.h"

#ifdef SK_HAVE_OPENBLAS
#include <cblas.h>

#include "blas_core.h"
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);
static blas_core_report peer; /* OpenBLAS's core against the CPU */
#endif

static sk_program *build(int64_t m, int64_t k, int64_t n, const sk_team *team) {
  sk_graph *g;
  sk_value x, w, y;
  CHECK(sk_graph_create(&g));
  CHECK(sk_graph_add_input(g, "x", SK_FP16, 2, (int64_t[]){m, k}, &x));
  CHECK(sk_graph_add_input(g, "w", SK_FP16, 2, (int64_t[]){k, n}, &w));
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

static void bench_shape(int64_t m, int64_t k, int64_t n, int reps, sk_team *one, sk_team *all) {
  size_t xs = (size_t)(m * k), ws = (size_t)(k * n), ys = (size_t)(m * n);
  uint16_t *xh = malloc(xs * 2), *wh = malloc(ws * 2), *yh = malloc(ys * 2);
  float *xf = malloc(xs * 4), *wf = malloc(ws * 4), *yf = malloc(ys * 4);
  uint64_t s = 1;
  for (size_t i = 0; i < xs + ws; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    float v = (float)(s >> 40) * 0x1p-24f - 0.5f;
    if (i < xs) xh[i] = sk_fp32_to_fp16(v), xf[i] = sk_fp16_to_fp32(xh[i]);
    else wh[i - xs] = sk_fp32_to_fp16(v), wf[i - xs] = sk_fp16_to_fp32(wh[i - xs]);
  }
  sk_program *p1 = build(m, k, n, one), *pn = build(m, k, n, all);
  sk_buffer in[] = {{"x", xh, xs * 2}, {"w", wh, ws * 2}}, out[] = {{"y", yh, ys * 2}};
  double *t1 = malloc(sizeof(double) * (size_t)reps), *tn = malloc(sizeof(double) * (size_t)reps),
         *tb = malloc(sizeof(double) * (size_t)reps);
  enum { BATCH = 10 };
  for (int r0 = -BATCH; r0 < reps; r0 += BATCH) { /* the first round warms up */
    for (int mode = 0; mode < 3; mode++)
      for (int r = r0; r < r0 + BATCH && r < reps; r++) {
        double a = now_us();
        if (mode == 0) CHECK(sk_program_run(p1, one, in, 2, out, 1));
        if (mode == 1) CHECK(sk_program_run(pn, all, in, 2, out, 1));
#ifdef SK_HAVE_OPENBLAS
        if (mode == 2 && blas_core_runnable(&peer))
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, xf, (int)k, wf, (int)n,
                      0.0f, yf, (int)n);
#endif
        double t = now_us() - a;
        if (r >= 0) (mode == 0 ? t1 : mode == 1 ? tn : tb)[r] = t;
      }
  }
  double flop = 2.0 * (double)m * (double)k * (double)n;
  double m1 = median(t1, reps), mn = median(tn, reps), mb = median(tb, reps);
  printf("%4lldx%4lldx%4lld  sk 1 core %8.1f us %6.1f GFLOP/s | sk %d cores %8.1f us %6.1f GFLOP/s | ",
         (long long)m, (long long)k, (long long)n, m1, flop / m1 / 1e3, sk_team_num_cores(all), mn, flop / mn / 1e3);
#ifdef SK_HAVE_OPENBLAS
  if (blas_core_ratio_ok(&peer))
    printf("openblas sgemm 1 thread %8.1f us %6.1f GFLOP/s | sk/openblas %.2f  speedup %.2fx\n", mb, flop / mb / 1e3,
           mb / m1, m1 / mn);
  else if (blas_core_runnable(&peer))
    printf("openblas sgemm 1 thread %8.1f us (mismatched core %s, no ratio)  speedup %.2fx\n", mb, peer.core, m1 / mn);
  else
    printf("(OpenBLAS not run: core %s)  speedup %.2fx\n", peer.core, m1 / mn);
#else
  (void)mb;
  printf("(no OpenBLAS peer)  speedup %.2fx\n", m1 / mn);
#endif
  sk_program_destroy(p1);
  sk_program_destroy(pn);
  free(xh), free(wh), free(yh), free(xf), free(wf), free(yf), free(t1), free(tn), free(tb);
}

int main(int argc, char **argv) {
  int reps = 300;
  int64_t shapes[16][3];
  int n_shapes = 0;
  for (int i = 1; i < argc; i++) {
    long long a, b, c;
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (sscanf(argv[i], "%lldx%lldx%lld", &a, &b, &c) == 3 && n_shapes < 16 && a > 0 && b > 0 && c > 0) {
      shapes[n_shapes][0] = a, shapes[n_shapes][1] = b, shapes[n_shapes][2] = c, n_shapes++;
    } else {
      fprintf(stderr, "usage: %s [--reps N] [MxKxN ...]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (n_shapes == 0) {
    int64_t seed[2][3] = {{256, 180, 320}, {256, 320, 256}};
    memcpy(shapes, seed, sizeof seed);
    n_shapes = 2;
  }
#ifdef SK_HAVE_OPENBLAS
  blas_core_check(&peer, openblas_get_corename(), openblas_get_config(), "bench_grouped_matmul");
  openblas_set_num_threads(1);
#endif
  sk_team *one, *all;
  sk_team_config c1 = {.struct_size = sizeof c1, .num_cores = 1};
  CHECK(sk_team_create(&c1, &one));
  CHECK(sk_team_create(NULL, &all));
  printf("grouped_matmul fp16 in / fp16 out (fp32 accumulate) vs cblas_sgemm fp32; medians of %d reps\n", reps);
  for (int i = 0; i < n_shapes; i++) bench_shape(shapes[i][0], shapes[i][1], shapes[i][2], reps, one, all);
  sk_team_destroy(one);
  sk_team_destroy(all);
  return 0;
}

/* bench_gemm_large — grouped_matmul at the sizes of real MoE layers against
 * OpenBLAS, and at decode sizes against the machine's read bandwidth.
 *
 *   bench_gemm_large [--dtype fp16|bf16|fp32] [--reps N] [MxKxN ...]
 *
 * One group, weights a graph constant (packed at compile, as a model's
 * are), x, weights and y in the chosen dtype (fp32 accumulation). Per shape
 * and thread count (1 and every core): our median time and GFLOP/s,
 * cblas_sgemm's on fp32 copies of the same values with the same number of
 * threads, and their ratio (>= 0.90 is the bar). The read bandwidth
 * is measured in the same run (a 512 MiB sum, 1 thread and every core); for
 * M <= 16, where the weights' bytes bound the time, it prints the weight
 * bytes per second and their share of that bandwidth (>= 80% is the bar).
 * The peak of the fastest multiply-add (for bf16 VDPBF16PS or the fp32
 * FMA, whichever is faster on this CPU, as the library chooses) on
 * registers only is measured too, and each shape's share of it printed
 * ("of peak").
 * Variants run interleaved, so machine noise hits them alike.
 *
 * OpenBLAS's kernels must be the CPU's (blas_core.h): it reruns itself with
 * the right OPENBLAS_CORETYPE when OpenBLAS chose older ones, and prints no
 * ratio against a core that does not match.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "compute_peak.h"
#include "read_bandwidth.h"
#include "superkernel.h"

#ifdef SK_HAVE_OPENBLAS
#include <cblas.h>

#include "blas_core.h"
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);
static blas_core_report peer;
#endif

/* ---- the shapes ---- */

static void fill(void *dst, float *f32, size_t n, sk_dtype dt, uint64_t *s) {
  for (size_t i = 0; i < n; i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    float v = (float)(*s >> 40) * 0x1p-24f - 0.5f;
    if (dt == SK_FP16) ((uint16_t *)dst)[i] = sk_fp32_to_fp16(v), v = sk_fp16_to_fp32(((uint16_t *)dst)[i]);
    else if (dt == SK_BF16) ((uint16_t *)dst)[i] = sk_fp32_to_bf16(v), v = sk_bf16_to_fp32(((uint16_t *)dst)[i]);
    else ((float *)dst)[i] = v;
    f32[i] = v;
  }
}

static sk_program *build(int64_t m, int64_t k, int64_t n, sk_dtype dt, const void *w, const sk_team *team) {
  sk_graph *g;
  sk_value x, wv, y;
  CHECK(sk_graph_create(&g));
  CHECK(sk_graph_add_input(g, "x", dt, 2, (int64_t[]){m, k}, &x));
  CHECK(sk_graph_add_constant(g, "w", dt, 2, (int64_t[]){k, n}, w, SK_CONSTANT_BORROW, &wv));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &wv, 1}};
  sk_op_desc d = {.struct_size = sizeof d, .op = "grouped_matmul", .inputs = in, .n_inputs = 2};
  CHECK(sk_graph_add_op(g, &d, &y, 1, NULL));
  CHECK(sk_graph_mark_output(g, y, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team};
  sk_program *p;
  CHECK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  return p;
}

typedef struct run_args {
  sk_dtype dt;
  int reps;
  sk_team *teams[2];  /* 1 core, every core */
  int threads[2];
  double bw[2];       /* GB/s at those thread counts */
  double peak[2];     /* GFLOP/s of the widest multiply-add, registers only, at those thread counts */
} run_args;

static void bench_shape(int64_t m, int64_t k, int64_t n, const run_args *a) {
  size_t es = sk_dtype_size(a->dt), xs = (size_t)(m * k), ws = (size_t)(k * n), ys = (size_t)(m * n);
  void *x = malloc(xs * es), *w = malloc(ws * es), *y = malloc(ys * es);
  float *xf = malloc(xs * 4), *wf = malloc(ws * 4), *yf = malloc(ys * 4);
  uint64_t s = 1;
  fill(x, xf, xs, a->dt, &s);
  fill(w, wf, ws, a->dt, &s);
  sk_program *p[2] = {build(m, k, n, a->dt, w, a->teams[0]), build(m, k, n, a->dt, w, a->teams[1])};
  sk_buffer in[] = {{"x", x, xs * es}}, out[] = {{"y", y, ys * es}};
  double *t[4];
  for (int v = 0; v < 4; v++) t[v] = malloc(sizeof(double) * (size_t)a->reps);
  for (int r = -1; r < a->reps; r++) /* round -1 warms up */
    for (int v = 0; v < 4; v++) {
      int ti = v % 2;
      double t0 = now_us();
      if (v < 2) {
        CHECK(sk_program_run(p[ti], a->teams[ti], in, 1, out, 1));
      } else {
#ifdef SK_HAVE_OPENBLAS
        if (!blas_core_runnable(&peer)) continue;
        openblas_set_num_threads(a->threads[ti]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, xf, (int)k, wf, (int)n,
                    0.0f, yf, (int)n);
#else
        continue;
#endif
      }
      if (r >= 0) t[v][r] = now_us() - t0;
    }
  double flop = 2.0 * (double)m * (double)k * (double)n;
  for (int ti = 0; ti < 2; ti++) {
    double us = median(t[ti], a->reps);
    printf("%5lldx%5lldx%5lld %s %d thr  sk %9.1f us %6.1f GFLOP/s", (long long)m, (long long)k, (long long)n,
           sk_dtype_name(a->dt), a->threads[ti], us, flop / us * 1e-3);
#ifdef SK_HAVE_OPENBLAS
    if (blas_core_ratio_ok(&peer)) {
      double bus = median(t[2 + ti], a->reps);
      printf(" | openblas %9.1f us %6.1f GFLOP/s | sk/openblas %.2f", bus, flop / bus * 1e-3, bus / us);
    }
#endif
    if (a->peak[ti] > 0) printf(" | %.0f%% of peak", 100.0 * flop / us * 1e-3 / a->peak[ti]);
    if (m <= 16) {
      double gbs = (double)(ws * es) / us * 1e-3;
      printf(" | weights %.1f GB/s = %.0f%% of read bandwidth", gbs, 100.0 * gbs / a->bw[ti]);
    }
    printf("\n");
  }
  for (int v = 0; v < 4; v++) free(t[v]);
  sk_program_destroy(p[0]);
  sk_program_destroy(p[1]);
  free(x), free(w), free(y), free(xf), free(wf), free(yf);
}

int main(int argc, char **argv) {
  run_args a = {.dt = SK_FP16, .reps = 5};
  int64_t shapes[32][3];
  int n_shapes = 0;
  for (int i = 1; i < argc; i++) {
    long long m, k, n;
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      a.reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
      i++;
      a.dt = strcmp(argv[i], "fp32") == 0 ? SK_FP32 : strcmp(argv[i], "bf16") == 0 ? SK_BF16 : SK_FP16;
      if (strcmp(argv[i], sk_dtype_name(a.dt)) != 0) {
        fprintf(stderr, "bench_gemm_large: --dtype %s: expected fp16, bf16 or fp32\n", argv[i]);
        return 2;
      }
    } else if (sscanf(argv[i], "%lldx%lldx%lld", &m, &k, &n) == 3 && n_shapes < 32 && m > 0 && k > 0 && n > 0) {
      shapes[n_shapes][0] = m, shapes[n_shapes][1] = k, shapes[n_shapes][2] = n, n_shapes++;
    } else {
      fprintf(stderr, "usage: %s [--dtype fp16|bf16|fp32] [--reps N] [MxKxN ...]\n", argv[0]);
      return 2;
    }
  }
  if (a.reps < 1) a.reps = 1;
  if (n_shapes == 0) { /* decode and prefill rows at the K, N 2048 */
    static const int64_t ms[] = {16, 256, 1024}, ks[] = {2048, 4096, 7168};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) shapes[n_shapes][0] = ms[i], shapes[n_shapes][1] = ks[j], shapes[n_shapes++][2] = 2048;
  }
#ifdef SK_HAVE_OPENBLAS
  blas_core_check(&peer, openblas_get_corename(), openblas_get_config(), "bench_gemm_large");
#endif
  sk_team_config one = {.struct_size = sizeof one, .num_cores = 1};
  CHECK(sk_team_create(&one, &a.teams[0]));
  CHECK(sk_team_create(NULL, &a.teams[1]));
  a.threads[0] = 1;
  a.threads[1] = sk_team_num_cores(a.teams[1]);
  if (a.threads[1] > 64) a.threads[1] = 64;
  const char *peak_insn = "";
  for (int ti = 0; ti < 2; ti++) {
    a.bw[ti] = sk_read_bandwidth_gbs(a.threads[ti]);
    a.peak[ti] = sk_compute_peak_gflops(a.dt == SK_BF16, a.threads[ti], &peak_insn);
  }
  printf("grouped_matmul %s in/out, weights constant, vs cblas_sgemm fp32 at the same threads; medians of %d\n",
         sk_dtype_name(a.dt), a.reps);
  printf("read bandwidth: %.1f GB/s (1 thread), %.1f GB/s (%d threads)\n", a.bw[0], a.bw[1], a.threads[1]);
  printf("peak (%s on registers only): %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%d threads)\n", peak_insn, a.peak[0],
         a.peak[1], a.threads[1]);
  for (int i = 0; i < n_shapes; i++) bench_shape(shapes[i][0], shapes[i][1], shapes[i][2], &a);
  sk_team_destroy(a.teams[0]);
  sk_team_destroy(a.teams[1]);
  return 0;
}

/* The int8 GEMM kernels against each other: every configuration this CPU
 * runs (scalar, AVX2, AVX-512, AVX-512 VNNI, AMX-INT8), one sk__qgemm_tile
 * over the whole matrix on one thread, B packed once as constant weights
 * are (so what is timed is the A packing and the micro-kernels).
 *
 *   build/bin/bench_qgemm_kernel [--reps N] [MxKxN ...]
 *
 * Default shapes: the issue's [256, 4096] x [4096, 1024] (AMX's bar: 3x
 * VNNI), one of the seed's quant_matmul batches [48, 64] x [64, 64], and a
 * decode row, 1 x 4096 x 1024. The configurations are timed round-robin
 * (per round, each one's untimed call, then a batch of calls lasting some
 * 10 us or one call) so machine noise hits them alike; medians,
 * GOP/s (2 m k n per call) and each one's speed over VNNI's (or, without
 * VNNI, over the best one below it) are printed. Every configuration's
 * integers are compared with the first one's; a difference fails the run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "core/alloc.h"
#include "core/cpu.h"
#include "kernels/qgemm/qgemm_internal.h"

#define MAX_CONFIGS 5

/* The configurations $SK_ISA and the CPU allow, lowest first. */
static int runnable(const sk__qgemm_config **out) {
  sk__isa isa = sk__cpu_isa();
  int n = 0;
  out[n++] = &sk__qs8_gemm_config_scalar;
  if (isa >= SK_ISA_AVX2) out[n++] = &sk__qs8_gemm_config_avx2;
  if (isa >= SK_ISA_AVX512) out[n++] = &sk__qs8_gemm_config_avx512;
  if (isa >= SK_ISA_AVX512VNNI) out[n++] = &sk__qs8_gemm_config_avx512vnni;
  if (isa >= SK_ISA_AMX) out[n++] = &sk__qs8_gemm_config_amx;
  return n;
}

static int bench_shape(int64_t m, int64_t k, int64_t n, int reps) {
  const sk__qgemm_config *cfgs[MAX_CONFIGS];
  int nc = runnable(cfgs), base = nc - 1;
  for (int c = 0; c < nc; c++)
    if (cfgs[c] == &sk__qs8_gemm_config_avx512vnni) base = c;
  int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
  uint32_t seed = 12345;
  for (int64_t i = 0; i < m * k; i++) a[i] = (int8_t)((seed = seed * 1664525u + 1013904223u) >> 24);
  for (int64_t i = 0; i < k * n; i++) b[i] = (int8_t)((seed = seed * 1664525u + 1013904223u) >> 24);
  void *packed[MAX_CONFIGS], *ws = sk__aligned_alloc(sk__qgemm_workspace_size(m, n, k));
  int32_t *c[MAX_CONFIGS];
  double *times[MAX_CONFIGS];
  for (int i = 0; i < nc; i++) {
    packed[i] = sk__aligned_alloc(sk__qgemm_packed_b_size_config(cfgs[i], k, n));
    sk__qgemm_pack_b_config(cfgs[i], b, n, k, n, packed[i]);
    c[i] = malloc((size_t)(m * n) * sizeof(int32_t));
    times[i] = malloc((size_t)reps * sizeof(double));
  }
  /* A batch of calls per round, so a round of the small shapes lasts some
   * 10 us and not one clock tick. */
  const double ops_per_call = 2.0 * (double)m * (double)k * (double)n;
  const int batch = ops_per_call >= 2e7 ? 1 : ops_per_call * 1000 < 2e7 ? 1000 : (int)(2e7 / ops_per_call);
  for (int r = -2; r < reps; r++) /* 2 warm-up rounds */
    for (int i = 0; i < nc; i++) {
      sk__qgemm_problem p = {m, n, k, a, k, b, n, packed[i]};
      /* An untimed call first: the AMX unit, idle during the others'
       * turns, takes ~5 us to wake (Xeon model 167), which is no cost of
       * the kernel's. */
      sk__qgemm_tile_config(cfgs[i], &p, 0, m, 0, n, c[i], n, ws);
      double t0 = now_us();
      for (int call = 0; call < batch; call++) sk__qgemm_tile_config(cfgs[i], &p, 0, m, 0, n, c[i], n, ws);
      if (r >= 0) times[i][r] = (now_us() - t0) / batch;
    }
  int equal = 1;
  double ops = 2.0 * (double)m * (double)k * (double)n, base_us = 0, us[MAX_CONFIGS];
  for (int i = 0; i < nc; i++) us[i] = median(times[i], reps);
  base_us = us[base];
  for (int i = 0; i < nc; i++) {
    int same = memcmp(c[i], c[0], (size_t)(m * n) * sizeof(int32_t)) == 0;
    equal &= same;
    printf("%5lldx%5lldx%5lld  %-11s %10.1f us %8.1f GOP/s  %5.2fx %s%s\n", (long long)m, (long long)k, (long long)n,
           cfgs[i]->name, us[i], ops / us[i] * 1e-3, base_us / us[i], cfgs[base]->name,
           same ? "" : "  INTEGERS DIFFER");
  }
  for (int i = 0; i < nc; i++) {
    sk__aligned_free(packed[i]);
    free(c[i]);
    free(times[i]);
  }
  free(a);
  free(b);
  sk__aligned_free(ws);
  return equal;
}

int main(int argc, char **argv) {
  int reps = 15, n_shapes = 0;
  long long shapes[16][3];
  for (int i = 1; i < argc; i++) {
    long long m, k, n;
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (sscanf(argv[i], "%lldx%lldx%lld", &m, &k, &n) == 3 && m > 0 && k > 0 && n > 0 && k <= SK_QGEMM_MAX_K &&
               n_shapes < 16) {
      shapes[n_shapes][0] = m, shapes[n_shapes][1] = k, shapes[n_shapes++][2] = n;
    } else {
      fprintf(stderr, "usage: %s [--reps N] [MxKxN ...] (K at most %d)\n", argv[0], SK_QGEMM_MAX_K);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (n_shapes == 0) {
    static const long long defaults[3][3] = {{256, 4096, 1024}, {48, 64, 64}, {1, 4096, 1024}};
    memcpy(shapes, defaults, sizeof defaults);
    n_shapes = 3;
  }
  printf("int8 GEMM kernels, one thread, B packed once; isa %s (SK_ISA lowers it); medians of %d\n",
         sk__isa_name(sk__cpu_isa()), reps);
  if (sk__cpu_isa() < SK_ISA_AMX) printf("note: no AMX-INT8 here (CPU, OS or SK_ISA): its row is not timed\n");
  int equal = 1;
  for (int i = 0; i < n_shapes; i++) equal &= bench_shape(shapes[i][0], shapes[i][1], shapes[i][2], reps);
  return equal ? 0 : 1;
}

/* Tuning benchmark of the GEMM micro-kernels: one sk__gemm_tile covering the
 * whole matrix (packing included), one thread, against OpenBLAS cblas_sgemm
 * on fp32 copies of the same inputs (openblas_set_num_threads(1)).
 *
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bin/bench_gemm_kernel [reps] [M K N]...
 *
 * Default shapes are the grouped_matmul seed shapes (M,K,N) = (256,180,320)
 * and (256,320,256), 50 reps. Variants are timed round-robin (one run of
 * each per round) so machine noise hits all of them alike; medians are
 * printed with GFLOP/s and the ratio to OpenBLAS (>1 = faster than it).
 * OpenBLAS's kernels must be the CPU's (blas_core.h): it reruns itself with
 * the right OPENBLAS_CORETYPE when OpenBLAS chose older ones, and prints no
 * ratio against a core that does not match.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "core/alloc.h"
#include "core/cpu.h"
#include "kernels/gemm/gemm.h"

#ifdef SK_HAVE_OPENBLAS
#include <cblas.h>

#include "blas_core.h"
char *openblas_get_corename(void);
char *openblas_get_config(void);
static blas_core_report peer; /* OpenBLAS's core against the CPU */
#endif

/* One timed variant: an sk__gemm_tile path (isa, dtype) or the peer. */
typedef struct variant {
  char name[48];
  int is_peer;
  sk__isa isa;
  sk_dtype dt;     /* a, b and c dtype */
  double *times;
} variant;

/* A ratio against the peer is true: it runs kernels made for this CPU. */
static int peer_ratio_ok(void) {
#ifdef SK_HAVE_OPENBLAS
  return blas_core_ratio_ok(&peer);
#else
  return 0;
#endif
}

static void *make_input(size_t count, sk_dtype dt, float *f32_copy, uint32_t *seed) {
  void *buf = sk__aligned_alloc(count * sk_dtype_size(dt));
  for (size_t i = 0; i < count; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    float v = (float)(*seed >> 8) * 0x1p-23f - 1.0f;
    if (dt == SK_FP16) {
      ((uint16_t *)buf)[i] = sk_fp32_to_fp16(v);
      v = sk_fp16_to_fp32(((uint16_t *)buf)[i]);
    } else {
      ((float *)buf)[i] = v;
    }
    f32_copy[i] = v;
  }
  return buf;
}

static void bench_shape(int64_t M, int64_t K, int64_t N, int reps) {
  const sk_dtype dts[] = {SK_FP16, SK_FP32};
  const sk__isa isas[] = {SK_ISA_AVX512, SK_ISA_AVX2};
  variant vs[8];
  int nv = 0;
#ifdef SK_HAVE_OPENBLAS
  if (blas_core_runnable(&peer)) vs[nv++] = (variant){.name = "openblas sgemm fp32", .is_peer = 1};
#endif
  for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
    if (isas[i] > sk__cpu_isa()) continue; /* $SK_ISA lowers the set */
    for (size_t d = 0; d < 2; d++) {
      variant v = {.isa = isas[i], .dt = dts[d]};
      int64_t mr, nr;
      sk__gemm_micro_tile(isas[i], &mr, &nr);
      snprintf(v.name, sizeof v.name, "sk %s %lldx%lld %s", sk__isa_name(isas[i]),
               (long long)mr, (long long)nr, sk_dtype_name(dts[d]));
      vs[nv++] = v;
    }
  }

  /* Inputs in both dtypes plus fp32 copies for the peer (same values). */
  uint32_t seed = 12345;
  float *a32 = malloc((size_t)(M * K) * sizeof(float));
  float *b32 = malloc((size_t)(K * N) * sizeof(float));
  float *c32 = sk__aligned_alloc((size_t)(M * N) * sizeof(float));
  void *a16 = make_input((size_t)(M * K), SK_FP16, a32, &seed);
  void *b16 = make_input((size_t)(K * N), SK_FP16, b32, &seed);
  void *c16 = sk__aligned_alloc((size_t)(M * N) * 2);
  void *ws = sk__aligned_alloc(sk__gemm_workspace_size(M, N, K));
  for (int v = 0; v < nv; v++) vs[v].times = malloc((size_t)reps * sizeof(double));

  for (int r = -3; r < reps; r++) { /* 3 warm-up rounds */
    for (int v = 0; v < nv; v++) {
      double t0 = now_us();
      if (vs[v].is_peer) {
#ifdef SK_HAVE_OPENBLAS
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f,
                    a32, (int)K, b32, (int)N, 0.0f, c32, (int)N);
#endif
      } else {
        int f16 = vs[v].dt == SK_FP16;
        sk__gemm_problem p = {M, N, K, f16 ? a16 : a32, vs[v].dt, K, f16 ? b16 : b32, vs[v].dt, N,
                              NULL, SK_DTYPE_INVALID, f16 ? c16 : (void *)c32, vs[v].dt, N, NULL, SK_NUMERICS_DEFAULT};
        sk__gemm_tile(&p, 0, M, 0, N, ws, vs[v].isa);
      }
      double t = now_us() - t0;
      if (r >= 0) vs[v].times[r] = t;
    }
  }

  double flops = 2.0 * (double)M * (double)N * (double)K;
  double peer_us = 0;
  for (int v = 0; v < nv; v++) {
    double us = median(vs[v].times, reps);
    if (vs[v].is_peer) peer_us = us;
    printf("M=%lld K=%lld N=%lld  %-26s %9.1f us %8.1f GFLOP/s", (long long)M, (long long)K,
           (long long)N, vs[v].name, us, flops / us * 1e-3);
    if (peer_us > 0 && peer_ratio_ok()) printf("  ratio vs OpenBLAS %.2f", peer_us / us);
    printf("\n");
    free(vs[v].times);
  }
  free(a32);
  free(b32);
  sk__aligned_free(c32);
  sk__aligned_free(a16);
  sk__aligned_free(b16);
  sk__aligned_free(c16);
  sk__aligned_free(ws);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 50;
  if (reps < 1) reps = 1;
#ifdef SK_HAVE_OPENBLAS
  blas_core_check(&peer, openblas_get_corename(), openblas_get_config(), "bench_gemm_kernel");
  openblas_set_num_threads(1);
  printf("peer threads: 1\n");
  if (getenv("OPENBLAS_L2_SIZE")) printf("note: OPENBLAS_L2_SIZE is set; it slows OpenBLAS here\n");
#else
  printf("peer: none (built without OpenBLAS)\n");
#endif
  printf("isa: %s, %d reps, medians\n", sk__isa_name(sk__cpu_isa()), reps);
  if (argc > 4) {
    for (int i = 2; i + 2 < argc; i += 3)
      bench_shape(atoll(argv[i]), atoll(argv[i + 1]), atoll(argv[i + 2]), reps);
  } else {
    bench_shape(256, 180, 320, reps);
    bench_shape(256, 320, 256, reps);
  }
  return 0;
}

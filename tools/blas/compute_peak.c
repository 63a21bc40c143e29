/* The register-only peak of compute_peak.h: per thread 12 accumulators
 * (enough to cover the multiply-add's latency on every core we know), a
 * loop of 12 independent instructions, the time of a fixed count. */
#define _POSIX_C_SOURCE 200809L
#include "compute_peak.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define CHAINS 12
#define ITERS 4000000

typedef enum { KIND_DPBF16, KIND_FMA512, KIND_FMA256 } kind;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((target("avx512f,avx512bf16"))) static float run_dpbf16(void) {
  __m512 acc[CHAINS];
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x00000000);
  for (long i = 0; i < ITERS; i++) {
    __asm__ volatile("" : "+v"(a), "+v"(b)); /* keeps the loop from being folded */
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  float out[16], s = 0;
  for (int c = 0; c < CHAINS; c++) _mm512_storeu_ps(out, acc[c]), s += out[0];
  return s;
}

__attribute__((target("avx512f"))) static float run_fma512(void) {
  __m512 acc[CHAINS], a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(0.0f);
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  for (long i = 0; i < ITERS; i++) {
    __asm__ volatile("" : "+v"(a), "+v"(b));
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(a, b, acc[c]);
  }
  float out[16], s = 0;
  for (int c = 0; c < CHAINS; c++) _mm512_storeu_ps(out, acc[c]), s += out[0];
  return s;
}

__attribute__((target("avx2,fma"))) static float run_fma256(void) {
  __m256 acc[CHAINS], a = _mm256_set1_ps(1.0f), b = _mm256_set1_ps(0.0f);
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps((float)c);
  for (long i = 0; i < ITERS; i++) {
    __asm__ volatile("" : "+x"(a), "+x"(b));
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(a, b, acc[c]);
  }
  float out[8], s = 0;
  for (int c = 0; c < CHAINS; c++) _mm256_storeu_ps(out, acc[c]), s += out[0];
  return s;
}

typedef struct worker {
  kind k;
  double seconds;
  volatile float sink;
} worker;

static void *run(void *arg) {
  worker *w = arg;
  double t0 = now_s();
  w->sink = w->k == KIND_DPBF16 ? run_dpbf16() : w->k == KIND_FMA512 ? run_fma512() : run_fma256();
  w->seconds = now_s() - t0;
  return NULL;
}

/* The best of 5 passes of `threads` threads running k. */
static double peak_of(kind k, double flops_per_insn, int threads) {
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  double best = 0;
  for (int pass = 0; pass < 5; pass++) {
    worker w[64];
    pthread_t tid[64];
    int started[64];
    for (int i = 0; i < threads; i++) {
      memset(&w[i], 0, sizeof w[i]);
      w[i].k = k;
      started[i] = i > 0 && pthread_create(&tid[i], NULL, run, &w[i]) == 0;
    }
    run(&w[0]);
    double slowest = w[0].seconds;
    int ran = 1;
    for (int i = 1; i < threads; i++)
      if (started[i]) {
        pthread_join(tid[i], NULL);
        ran++;
        if (w[i].seconds > slowest) slowest = w[i].seconds;
      }
    double gflops = (double)ran * CHAINS * (double)ITERS * flops_per_insn / slowest * 1e-9;
    if (gflops > best) best = gflops;
  }
  return best;
}

double sk_compute_peak_gflops(int bf16, int threads, const char **what) {
  __builtin_cpu_init();
  double fma = 0;
  if (__builtin_cpu_supports("avx512f")) {
    fma = peak_of(KIND_FMA512, 32, threads), *what = "fp32 FMA (zmm)";
  } else if (__builtin_cpu_supports("fma")) {
    fma = peak_of(KIND_FMA256, 16, threads), *what = "fp32 FMA (ymm)";
  } else {
    *what = "none";
  }
  if (bf16 && __builtin_cpu_supports("avx512bf16")) {
    const double dot = peak_of(KIND_DPBF16, 64, threads);
    if (dot > fma) {
      *what = "VDPBF16PS";
      return dot;
    }
  }
  return fma;
}

/*
 * The GEMM floor of `sk bench`: OpenBLAS's cblas_sgemm on a scenario's
 * matrix products (models.h, skm_gemm_shapes) in fp32 at the same thread
 * count. It is what a good BLAS needs for the model's arithmetic alone, with
 * nothing else of the model: our time over it says how much the rest (the
 * other ops, fp16 conversions, synchronization) and our GEMM cost.
 *
 * OpenBLAS is loaded at run time with dlopen, so neither the library nor the
 * sk tool depends on it; without it `sk bench` prints no floor. Debian's
 * libopenblas0-pthread provides libopenblas.so.0.
 *
 * Its kernels must be the CPU's (blas_core.h): sk_blas_floor_core checks
 * the core it loaded and runs sk again with the right $OPENBLAS_CORETYPE
 * when OpenBLAS chose an older one.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_floor.h"
#include "sk.h"

/* CBLAS constants (cblas.h): row-major, no transpose. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*set_threads_fn)(int n);
typedef int (*get_threads_fn)(void);
typedef char *(*text_fn)(void);

struct sk_blas_floor {
  sgemm_fn sgemm;
  set_threads_fn set_threads;
  get_threads_fn get_threads;
  bool ratio_ok;
  int n_gemms;
  skm_gemm gemms[SK_FLOOR_MAX_GEMMS];
  float *a[SK_FLOOR_MAX_GEMMS], *b[SK_FLOOR_MAX_GEMMS], *c[SK_FLOOR_MAX_GEMMS];
};

static float *random_matrix(int64_t n, unsigned *state) {
  float *m = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; m && i < n; i++) {
    *state = *state * 1664525u + 1013904223u;
    m[i] = (float)(*state >> 8) / (float)(1u << 24) - 0.5f;
  }
  return m;
}

/* OpenBLAS, loaded once and never unloaded: its thread pool does not
 * survive dlclose reliably. */
static void *openblas(const char **why) {
  static void *lib;
  static char error[256];
  static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
  for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *e = dlerror();
      snprintf(error, sizeof error, "OpenBLAS not loaded: %s", e ? e : "dlopen failed");
    }
  }
  if (!lib) *why = error;
  return lib;
}

const blas_core_report *sk_blas_floor_core(const char **why) {
  static blas_core_report report;
  static bool checked;
  static char verdict[160];
  *why = NULL;
  void *lib = openblas(why);
  if (!lib) return NULL;
  if (!checked) {
    text_fn corename = (text_fn)dlsym(lib, "openblas_get_corename"), config = (text_fn)dlsym(lib, "openblas_get_config");
    blas_core_report_fill(&report, corename ? corename() : NULL, config ? config() : NULL);
    blas_core_fix(&report, "sk bench"); /* returns when it does not run sk again */
    blas_core_verdict(&report, verdict, sizeof verdict);
    checked = true;
  }
  if (!blas_core_runnable(&report)) *why = verdict;
  return &report;
}

sk_blas_floor *sk_blas_floor_open(const char *scenario, const char **why) {
  const blas_core_report *core = sk_blas_floor_core(why);
  if (!core || *why) return NULL;
  void *lib = openblas(why);
  sk_blas_floor *f = calloc(1, sizeof *f);
  if (!f) {
    *why = "out of memory";
    return NULL;
  }
  f->ratio_ok = blas_core_ratio_ok(core);
  f->sgemm = (sgemm_fn)dlsym(lib, "cblas_sgemm");
  f->set_threads = (set_threads_fn)dlsym(lib, "openblas_set_num_threads");
  f->get_threads = (get_threads_fn)dlsym(lib, "openblas_get_num_threads");
  f->n_gemms = skm_gemm_shapes(scenario, f->gemms, SK_FLOOR_MAX_GEMMS);
  if (!f->sgemm || !f->set_threads || !f->get_threads || f->n_gemms <= 0 || f->n_gemms > SK_FLOOR_MAX_GEMMS) {
    *why = !f->sgemm || !f->set_threads || !f->get_threads ? "OpenBLAS lacks cblas_sgemm / openblas_set_num_threads"
                                        : "the scenario has no GEMM shapes";
    sk_blas_floor_close(f);
    return NULL;
  }
  unsigned state = 20261129u;
  for (int i = 0; i < f->n_gemms; i++) {
    const skm_gemm *g = &f->gemms[i];
    f->a[i] = random_matrix(g->batch * g->m * g->k, &state);
    f->b[i] = random_matrix(g->batch * g->k * g->n, &state);
    f->c[i] = random_matrix(g->batch * g->m * g->n, &state);
    if (!f->a[i] || !f->b[i] || !f->c[i]) {
      *why = "out of memory";
      sk_blas_floor_close(f);
      return NULL;
    }
  }
  return f;
}

int sk_blas_floor_threads(sk_blas_floor *f, int threads) {
  f->set_threads(threads);
  return f->get_threads();
}

double sk_blas_floor_run_us(sk_blas_floor *f) {
  double t0 = cli_now_us();
  for (int i = 0; i < f->n_gemms; i++) {
    const skm_gemm *g = &f->gemms[i];
    for (int64_t b = 0; b < g->batch; b++)
      f->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)g->m, (int)g->n, (int)g->k, 1.0f,
               f->a[i] + b * g->m * g->k, (int)g->k, f->b[i] + b * g->k * g->n, (int)g->n, 0.0f,
               f->c[i] + b * g->m * g->n, (int)g->n);
  }
  return cli_now_us() - t0;
}

bool sk_blas_floor_ratio_ok(const sk_blas_floor *f) { return f->ratio_ok; }

double sk_blas_floor_gflop(const sk_blas_floor *f) {
  double flop = 0;
  for (int i = 0; i < f->n_gemms; i++)
    flop += 2.0 * (double)f->gemms[i].batch * (double)f->gemms[i].m * (double)f->gemms[i].k * (double)f->gemms[i].n;
  return flop / 1e9;
}

void sk_blas_floor_close(sk_blas_floor *f) {
  if (!f) return;
  for (int i = 0; i < SK_FLOOR_MAX_GEMMS; i++) {
    free(f->a[i]);
    free(f->b[i]);
    free(f->c[i]);
  }
  free(f);
}

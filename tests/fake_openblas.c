/* A stand-in libopenblas.so.0 for the floor's core checks (tools.cmake),
 * found through LD_LIBRARY_PATH by `sk bench`'s dlopen. Like a DYNAMIC_ARCH
 * OpenBLAS it reports the core $OPENBLAS_CORETYPE asks for (verbatim), and
 * otherwise the one it "detected": $FAKE_OPENBLAS_CORE, default Prescott,
 * what OpenBLAS 0.3.21 runs on CPUs it does not know. With
 * $FAKE_OPENBLAS_STATIC set it is a build for that one core, which ignores
 * $OPENBLAS_CORETYPE and says no DYNAMIC_ARCH. Its sgemm is a plain loop. */
#include <stdio.h>
#include <stdlib.h>

/* Exported for dlsym; no header declares them. */
char *openblas_get_corename(void);
char *openblas_get_config(void);
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);

static int threads = 1;

char *openblas_get_corename(void) {
  char *type = getenv("OPENBLAS_CORETYPE"), *core = getenv("FAKE_OPENBLAS_CORE");
  if (type && *type && !getenv("FAKE_OPENBLAS_STATIC")) return type;
  return core ? core : "Prescott";
}

char *openblas_get_config(void) {
  static char config[160];
  snprintf(config, sizeof config, "OpenBLAS 0.3.21-fake %s%s MAX_THREADS=64",
           getenv("FAKE_OPENBLAS_STATIC") ? "" : "DYNAMIC_ARCH NO_AFFINITY ", openblas_get_corename());
  return config;
}

void openblas_set_num_threads(int n) { threads = n > 0 ? n : 1; }
int openblas_get_num_threads(void) { return threads; }

/* Row-major, no transposes (all sk bench asks for). */
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc) {
  (void)order, (void)trans_a, (void)trans_b;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int p = 0; p < k; p++) s += a[i * lda + p] * b[p * ldb + j];
      c[i * ldc + j] = alpha * s + (beta != 0 ? beta * c[i * ldc + j] : 0);
    }
}

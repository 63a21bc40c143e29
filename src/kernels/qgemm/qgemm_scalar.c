/* Scalar int8 GEMM path: plain C for CPUs without AVX2. Packed elements stay
 * int8 (kgroup 1); the compiler may vectorise the loops as it likes, the
 * sums are exact whatever it does. */
#include "kernels/qgemm/qgemm_internal.h"

#define MR 4
#define NR 8

static void pack_a_scalar(size_t mr, size_t kc, const int8_t *a, size_t lda, void *dst, size_t a_stride) {
  for (size_t i = 0; i < mr; i++) {
    int8_t *row = (int8_t *)dst + i * a_stride;
    for (size_t p = 0; p < kc; p++) row[p] = a[i * lda + p];
  }
}

static void pack_b_scalar(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum) {
  (void)colsum;
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    int8_t *panel = (int8_t *)dst + j0 * kc;
    for (size_t p = 0; p < kc; p++)
      for (size_t j = 0; j < NR; j++) panel[p * NR + j] = j0 + j < nc ? b[p * ldb + j0 + j] : 0;
  }
}

void sk__qs8_gemm_ukernel_4x8__scalar(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                      const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                      int accumulate);

void sk__qs8_gemm_ukernel_4x8__scalar(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                      const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                      int accumulate) {
  (void)colsum;
  const int8_t *rows[MR];
  for (size_t i = 0; i < MR; i++) rows[i] = (const int8_t *)a + (i < mr ? i : mr - 1) * a_stride;
  const int8_t *wp = w;
  int32_t acc[MR][NR] = {{0}};
  for (size_t p = 0; p < kcp; p++, wp += NR)
    for (size_t i = 0; i < MR; i++)
      for (size_t j = 0; j < NR; j++) acc[i][j] += (int32_t)rows[i][p] * (int32_t)wp[j];
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nr; j++) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

const sk__qgemm_config sk__qs8_gemm_config_scalar = {
    "scalar", MR, NR, 1, 1, 256, pack_a_scalar, pack_b_scalar, sk__qs8_gemm_ukernel_4x8__scalar, 1, NULL, NULL,
};

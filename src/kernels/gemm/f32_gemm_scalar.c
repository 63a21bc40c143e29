/* Scalar GEMM path: plain C for CPUs without AVX2/FMA/F16C. Compiled with
 * -ffp-contract=off, and every multiply-add is an explicit fmaf, so the bits
 * are those of the reference whatever the compiler does. */
#include <math.h>

#include "kernels/gemm/gemm_internal.h"

#define MR 4
#define NR 4

static void pack_a_scalar(size_t mr, size_t k, const void *a, size_t lda, sk_dtype a_dtype, int swap_pairs,
                          float *dst) {
  const size_t stride = sk__gemm_a_stride(k), steps = swap_pairs ? k + (k & 1) : k;
  for (size_t i = 0; i < mr; i++)
    for (size_t p = 0; p < steps; p++)
      dst[i * stride + (swap_pairs ? p ^ 1 : p)] = p < k ? sk__gemm_load_scalar(a, a_dtype, i * lda + p) : 0.0f;
}

static void pack_b_scalar(size_t k, size_t nc, const void *b, size_t ldb, sk_dtype b_dtype,
                          float *dst) {
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    float *panel = dst + j0 * k;
    for (size_t p = 0; p < k; p++)
      for (size_t j = 0; j < NR; j++)
        panel[p * NR + j] = j0 + j < nc ? sk__gemm_load_scalar(b, b_dtype, p * ldb + j0 + j)
                                        : 0.0f;
  }
}

void sk__f32_gemm_ukernel_4x4__scalar(size_t mr, size_t nr, size_t k, const float *a,
                                      size_t a_stride, const float *w, const float *acc_in,
                                      float *acc_out, const float *bias, void *c, size_t ldc,
                                      sk_dtype c_dtype);

void sk__f32_gemm_ukernel_4x4__scalar(size_t mr, size_t nr, size_t k, const float *a,
                                      size_t a_stride, const float *w, const float *acc_in,
                                      float *acc_out, const float *bias, void *c, size_t ldc,
                                      sk_dtype c_dtype) {
  const float *rows[MR];
  for (size_t i = 0; i < MR; i++) rows[i] = a + (i < mr ? i : mr - 1) * a_stride;
  float acc[MR][NR];
  for (size_t i = 0; i < MR; i++)
    for (size_t j = 0; j < NR; j++) acc[i][j] = acc_in ? acc_in[i * NR + j] : 0.0f;
  for (size_t p = 0; p < k; p++, w += NR)
    for (size_t i = 0; i < MR; i++)
      for (size_t j = 0; j < NR; j++) acc[i][j] = fmaf(rows[i][p], w[j], acc[i][j]);
  if (acc_out) { /* another k block follows: keep the raw sums */
    for (size_t i = 0; i < MR; i++)
      for (size_t j = 0; j < NR; j++) acc_out[i * NR + j] = acc[i][j];
    return;
  }
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nr; j++) {
      float y = acc[i][j];
      if (bias) y = y + bias[j];
      sk__gemm_store_scalar(c, c_dtype, i * ldc + j, y);
    }
}

const sk__gemm_config sk__f32_gemm_config_scalar = {
    "fmaf 4x4 (scalar)", "fmaf 4x4, bf16 pairs swapped, FTZ/DAZ (scalar)", MR, NR, pack_a_scalar, pack_b_scalar,
    sk__f32_gemm_ukernel_4x4__scalar, NULL};

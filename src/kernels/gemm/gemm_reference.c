/* The plain reference (the test oracle): the contracts of gemm.h and
 * bf16_contract.h as loops. Built for the baseline x86-64 with
 * -ffp-contract=off: it must call fmaf exactly as the contract says. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/gemm/bf16_contract.h"
#include "kernels/gemm/gemm_internal.h"

/* One output: the dot product of a (k values) and b (k values, stride
 * b_step) from +0, then the bias, by the contract for the weights' dtype
 * (amx: bf16 A and B under SK_NUMERICS_AMX). */
static float dot_by_contract(const float *a, const float *b, size_t b_step, size_t k, sk_dtype b_dtype, int amx,
                             const float *bias) {
  float acc = 0.0f;
  if (amx) {
    for (size_t q0 = 0; q0 < k; q0 += SK__AMX_BF16_K) acc = sk__bf16_amx_block(a, b, b_step, k, q0, acc);
    return bias ? sk__bf16_step(1.0f, *bias, acc) : acc;
  }
  if (b_dtype != SK_BF16) {
    for (size_t q = 0; q < k; q++) acc = fmaf(a[q], b[q * b_step], acc);
    return bias ? acc + *bias : acc;
  }
  for (size_t q = 0; q < k; q += 2) { /* pairs, the odd step first; a missing one is 0 * 0 */
    acc = q + 1 < k ? sk__bf16_step(a[q + 1], b[(q + 1) * b_step], acc) : sk__bf16_step(0.0f, 0.0f, acc);
    acc = sk__bf16_step(a[q], b[q * b_step], acc);
  }
  return bias ? sk__bf16_step(1.0f, *bias, acc) : acc;
}

/* The contract read literally: every operand converted where it is used
 * (when the scratch of the faster form cannot be allocated). */
static float a_at(const sk__gemm_problem *p, int64_t i, int64_t q) {
  return q < p->k ? sk__gemm_load_scalar(p->a, p->a_dtype, (size_t)(i * p->lda + q)) : 0.0f;
}
static float b_at(const sk__gemm_problem *p, int64_t q, int64_t j) {
  return q < p->k ? sk__gemm_load_scalar(p->b, p->b_dtype, (size_t)(q * p->ldb + j)) : 0.0f;
}

/* Whether p follows the AMX contract. */
static int amx_contract(const sk__gemm_problem *p) {
  return p->numerics == SK_NUMERICS_AMX && p->a_dtype == SK_BF16 && p->b_dtype == SK_BF16;
}

static void reference_direct(const sk__gemm_problem *p) {
  for (int64_t i = 0; i < p->m; i++)
    for (int64_t j = 0; j < p->n; j++) {
      float acc = 0.0f, bias = p->bias ? sk__gemm_load_scalar(p->bias, p->bias_dtype, (size_t)j) : 0.0f;
      if (amx_contract(p)) {
        for (int64_t q0 = 0; q0 < p->k; q0 += SK__AMX_BF16_K) {
          float even = 0.0f, odd = 0.0f;
          for (int64_t q = q0; q < q0 + SK__AMX_BF16_K; q += 2) {
            even = sk__bf16_step(a_at(p, i, q), b_at(p, q, j), even);
            odd = sk__bf16_step(a_at(p, i, q + 1), b_at(p, q + 1, j), odd);
          }
          acc = sk__bf16_step(1.0f, acc, sk__bf16_step(1.0f, even, odd));
        }
        if (p->bias) acc = sk__bf16_step(1.0f, bias, acc);
      } else if (p->b_dtype == SK_BF16) {
        for (int64_t q = 0; q < p->k; q += 2) { /* past k: the padding step, 0 * 0 */
          acc = sk__bf16_step(a_at(p, i, q + 1), b_at(p, q + 1, j), acc);
          acc = sk__bf16_step(a_at(p, i, q), b_at(p, q, j), acc);
        }
        if (p->bias) acc = sk__bf16_step(1.0f, bias, acc);
      } else {
        for (int64_t q = 0; q < p->k; q++) acc = fmaf(a_at(p, i, q), b_at(p, q, j), acc);
        if (p->bias) acc = acc + bias;
      }
      sk__gemm_store_scalar(p->c, p->c_dtype, (size_t)(i * p->ldc + j), acc);
    }
}

/* The same chains in the same order, with A's row and B (transposed)
 * converted to fp32 once instead of once per multiply: the conversions are
 * exact, so the bits are those of reference_direct, at a fraction of the
 * cost (the oracle runs after every fused run of the test suite, and in
 * unoptimized sanitizer builds the per-element conversion calls dominated
 * it). */
void sk__gemm_reference(const sk__gemm_problem *p) {
  const int64_t m = p->m, n = p->n, k = p->k, lda = p->lda, ldb = p->ldb, ldc = p->ldc;
  if (m <= 0 || n <= 0) return;
  const size_t kk = k > 0 ? (size_t)k : 0;
  float *bt = NULL;
  if (kk == 0 || (size_t)n <= (SIZE_MAX / sizeof(float) - 1) / kk - 1) /* n * k + k + 1 floats */
    bt = malloc(((size_t)n * kk + kk + 1) * sizeof(float));
  if (!bt) {
    reference_direct(p);
    return;
  }
  float *arow = bt + (size_t)n * kk;
  for (size_t q = 0; q < kk; q++)
    for (int64_t j = 0; j < n; j++) bt[(size_t)j * kk + q] = sk__gemm_load_scalar(p->b, p->b_dtype, q * (size_t)ldb + (size_t)j);
  for (int64_t i = 0; i < m; i++) {
    for (size_t q = 0; q < kk; q++) arow[q] = sk__gemm_load_scalar(p->a, p->a_dtype, (size_t)i * (size_t)lda + q);
    for (int64_t j = 0; j < n; j++) {
      float bias = p->bias ? sk__gemm_load_scalar(p->bias, p->bias_dtype, (size_t)j) : 0.0f;
      float y = dot_by_contract(arow, bt + (size_t)j * kk, 1, kk, p->b_dtype, amx_contract(p), p->bias ? &bias : NULL);
      sk__gemm_store_scalar(p->c, p->c_dtype, (size_t)i * (size_t)ldc + (size_t)j, y);
    }
  }
  free(bt);
}

/* quant_matmul: the per-block kernel and its footprint: the int32 tile
 * of quant_matmul_tiling.c's plan, then the epilogue of quant_matmul.c's
 * header comment. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/convert/convert.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/op_util.h"
#include "ops/packed_weights.h"
#include "ops/quant_matmul.h"

static inline float round_small(float v) { return (v + 12582912.0f) - 12582912.0f; }

/* The int8 epilogue of one row; same results as the reference's
 * clip(rint(.)) / fmaxf / fminf (clipping before rint changes nothing as
 * rint is monotonic and -256, 255 are integers; offsets were made non-NaN). */
static void epilogue_int8(const int32_t *acc, const int32_t *bias, const float *scale, const float *offset, int8_t *y,
                          int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    float v = (float)(int32_t)((uint32_t)acc[j] + (uint32_t)bias[j]) * scale[j];
    v = v != v ? 0.0f : v;
    v = v < -256.0f ? -256.0f : v > 255.0f ? 255.0f : v;
    float t = round_small(v) + offset[j];
    t = t < -128.0f ? -128.0f : t > 127.0f ? 127.0f : t;
    y[j] = (int8_t)(int32_t)t;
  }
}

/* The fp16 / bf16 epilogue of one row into fp32 (stored by sk__convert):
 * one branch-free loop, specialised per (per-token, float bias) case by
 * inlining, so the compiler vectorises it (an `if NaN` pass of its own
 * would become a scalar conditional store). */
static inline __attribute__((always_inline)) void epilogue_float_impl(const int32_t *acc, const int32_t *bias,
                                                                      const float *scale, const float *pt,
                                                                      const float *bias_f, float *row, int64_t n,
                                                                      bool has_pt, bool has_bias_f) {
  float nan;
  uint32_t u = SK__QMM_NAN_BITS;
  memcpy(&nan, &u, sizeof nan);
  const float t = has_pt ? *pt : 1.0f;
  for (int64_t j = 0; j < n; j++) {
    float v = (float)(int32_t)((uint32_t)acc[j] + (uint32_t)bias[j]) * scale[j];
    if (has_pt) v = v * t;
    if (has_bias_f) v = v + bias_f[j];
    row[j] = v != v ? nan : v;
  }
}

static void epilogue_float(const int32_t *acc, const int32_t *bias, const float *scale, const float *pt,
                           const float *bias_f, float *row, int64_t n) {
  if (pt && bias_f) epilogue_float_impl(acc, bias, scale, pt, bias_f, row, n, true, true);
  else if (pt) epilogue_float_impl(acc, bias, scale, pt, NULL, row, n, true, false);
  else if (bias_f) epilogue_float_impl(acc, bias, scale, NULL, bias_f, row, n, false, true);
  else epilogue_float_impl(acc, bias, scale, NULL, NULL, row, n, false, false);
}

/* The pack hook: every batch matrix of a constant x2, once. */
static void live_extent(const sk__node_io *io, int64_t *batches, int64_t *rows) {
  const qmm_params *p = io->params;
  const sk__tensor *y = &io->out[0];
  int64_t live = sk__live_rows(io, y);
  *batches = p->batch_rank == 0 ? 1 : y->shape[0] > 0 ? p->batch / y->shape[0] * live : 0;
  *rows = p->batch_rank == 0 ? live : p->m;
}

void sk__qmm_run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const qmm_params *p = io->params;
  const qmm_plan *plan = io->plan;
  const int64_t per_matrix = plan->row_parts * plan->col_parts;
  const int64_t b = block / per_matrix, ti = block % per_matrix / plan->col_parts, tj = block % plan->col_parts;
  int64_t live_batches, live_m;
  live_extent(io, &live_batches, &live_m);
  int64_t m0 = ti * plan->tm, m1 = m0 + plan->tm < p->m ? m0 + plan->tm : p->m;
  sk__clip(&m0, &m1, live_m); /* the planned tile, clipped to what this run has */
  if (b >= live_batches || m0 >= m1) return;
  const int64_t n0 = tj * plan->tn, n1 = n0 + plan->tn < p->n ? n0 + plan->tn : p->n;
  const int64_t tn = n1 - n0;
  int64_t i1, i2;
  sk__qmm_batch_index(p, b, &i1, &i2);
  sk__qgemm_problem q = {live_m, p->n, p->k, (const int8_t *)io->in[QMM_X1].tensors[0].data + i1 * p->m * p->k, p->k,
                         (const int8_t *)io->in[QMM_X2].tensors[0].data + i2 * p->k * p->n, p->n,
                         sk__packed_weight(io->packed, SK_PACK_INT8, io->isa, io->numerics, i2)};
  const sk__tensor *bias = io->in[QMM_BIAS].count ? &io->in[QMM_BIAS].tensors[0] : NULL;
  const int64_t bias_at = (p->bias_batched ? b * p->n : 0) + n0;
  const bool int_bias = bias && p->bias_dtype == SK_INT32;
  const sk__isa isa = io->isa;
  void *y = io->out[0].data;
  const size_t out_es = sk_dtype_size(p->out_dtype);
  char *yb = (char *)y + (size_t)((b * p->m) * p->n) * out_es; /* this matrix of the output */

  if (p->out_dtype == SK_INT32) { /* no epilogue beyond the bias: straight into the output */
    int32_t *c = (int32_t *)(void *)yb + m0 * p->n + n0;
    sk__qgemm_tile(&q, m0, m1, n0, n1, c, p->n, workspace, isa);
    if (int_bias) {
      const int32_t *bi = (const int32_t *)bias->data + bias_at;
      for (int64_t i = 0; i < m1 - m0; i++)
        for (int64_t j = 0; j < tn; j++) c[i * p->n + j] = (int32_t)((uint32_t)c[i * p->n + j] + (uint32_t)bi[j]);
    }
    return;
  }

  char *ws = workspace;
  int32_t *acc = (int32_t *)(void *)(ws + plan->qgemm_ws);
  char *cols = (char *)acc + sk__align_up((size_t)(plan->tm * plan->tn) * 4);
  const size_t col_bytes = sk__align_up((size_t)plan->tn * 4);
  float *scale = (float *)(void *)cols, *offset = (float *)(void *)(cols + col_bytes);
  int32_t *bias_i = (int32_t *)(void *)(cols + 2 * col_bytes);
  float *bias_f = (float *)(void *)(cols + 3 * col_bytes), *row = (float *)(void *)(cols + 4 * col_bytes);
  sk__qgemm_tile(&q, m0, m1, n0, n1, acc, tn, workspace, isa);

  for (int64_t j = 0; j < tn; j++) {
    sk__qmm_column_params(io, n0 + j, &scale[j], &offset[j]);
    if (offset[j] != offset[j]) offset[j] = -INFINITY; /* fmaxf(NaN, -128) = -128 in the reference */
    bias_i[j] = int_bias ? ((const int32_t *)bias->data)[bias_at + j] : 0;
    if (bias && !int_bias) bias_f[j] = sk__load_f32(bias->data, p->bias_dtype, (size_t)(bias_at + j));
  }
  const float *pt = p->has_pertoken ? io->in[QMM_PERTOKEN].tensors[0].data : NULL;
  for (int64_t i = m0; i < m1; i++) {
    const int32_t *a = acc + (i - m0) * tn;
    char *dst = yb + (size_t)(i * p->n + n0) * out_es;
    if (p->out_dtype == SK_INT8) {
      epilogue_int8(a, bias_i, scale, offset, (int8_t *)dst, tn);
    } else {
      epilogue_float(a, bias_i, scale, pt ? &pt[i] : NULL, bias && !int_bias ? bias_f : NULL, row, tn);
      sk__convert(row, SK_FP32, dst, p->out_dtype, (size_t)tn, isa);
    }
  }
}

/* A tile reads its rows of its x1 matrix and its whole x2 matrix, and
 * writes its rows of its output matrix (the planner's footprint). */
void sk__qmm_footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  const qmm_params *p = io->params;
  const qmm_plan *plan = io->plan;
  const int64_t per_matrix = plan->row_parts * plan->col_parts;
  const int64_t b = block / per_matrix, ti = block % per_matrix / plan->col_parts;
  const int64_t m0 = ti * plan->tm, m1 = m0 + plan->tm < p->m ? m0 + plan->tm : p->m;
  int64_t x1i, x2i;
  sk__qmm_batch_index(p, b, &x1i, &x2i);
  reads[sk__io_input_index(io, QMM_X1, 0)] = (sk__span){(x1i * p->m + m0) * p->k, (x1i * p->m + m1) * p->k};
  reads[sk__io_input_index(io, QMM_X2, 0)] = (sk__span){x2i * p->k * p->n, (x2i + 1) * p->k * p->n};
  int64_t es = (int64_t)sk_dtype_size(p->out_dtype);
  writes[0] = (sk__span){(b * p->m + m0) * p->n * es, (b * p->m + m1) * p->n * es};
}

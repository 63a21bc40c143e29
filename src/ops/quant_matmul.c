/* quant_matmul: validation, shape rule and reference (see docs/ops.md).
 *
 *   acc = x1 @ x2 in int32 (exact), x1 [..., m, k], x2 [..., k, n] int8,
 *   batch dims broadcast numpy-style; output [batch..., m, n].
 *
 * The epilogue, in this exact fp32 order (kernel and reference alike):
 *   fp16 / bf16 / fp32: v = (float)(acc + bias_i32)   int32 add, wrapping
 *                v = v * scale[j]
 *                v = v * pertoken_scale[i]        when given
 *                v = v + bias_f[j]                float bias, when given
 *                NaN -> canonical quiet NaN; round to nearest even on store
 *   int8:        v = (float)(acc + bias_i32) * scale[j]
 *                t = clip(rint(v), -256, 255)     (NaN v counts as 0)
 *                out = clip(t + rint(offset[j]), -128, 127)
 *                (clip as fmaxf / fminf: a NaN offset gives -128)
 *   int32:       out = acc + bias_i32 (wrapping); scale ignored
 */
#include "ops/quant_matmul.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "kernels/convert/convert.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/op_util.h"

static const sk_op_slot_info inputs[] = {
    SK__IN("x1", "int8 [..., m, k]", .dtypes = SK__DTYPES1(SK_INT8), SK__RANK(2, -1)),
    SK__IN("x2", "int8 [..., k, n]; batch dims broadcast with x1's", .dtypes = SK__DTYPES1(SK_INT8), SK__RANK(2, -1)),
    SK__IN_OPT("scale", "[n] or [1]: int64 packed (sk_trans_quant_param), fp32 or bf16; required unless int32 out",
               .dtypes = SK_DTYPE_BIT(SK_FP32) | SK_DTYPE_BIT(SK_BF16) | SK_DTYPE_BIT(SK_INT64)),
    SK__IN_OPT("offset", "fp32 [n] or [1]; int8 output only", .dtypes = SK__DTYPES1(SK_FP32)),
    SK__IN_OPT("pertoken_scale", "fp32 [m]; fp16 / bf16 / fp32 output only", .dtypes = SK__DTYPES1(SK_FP32)),
    SK__IN_OPT("bias", "int32 [n], or bf16 / fp32 [n] with a float output"),
};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("output_dtype", SK_INT8, SK__DTYPE_MIN, SK__DTYPE_MAX, "fp16, bf16, fp32, int8 or int32"),
};
static const sk_op_output_info outputs[] = {SK__OUT("y", "[broadcast batch..., m, n] in output_dtype")};

/* k <= 65535 keeps every int32 sum exact (65535 * 128 * 128 < 2^31), so
 * the qgemm limit never binds. n has no limit of its own: an LM head over
 * a vocabulary of 151936 is one op. */
#define MAX_K 65535
_Static_assert(MAX_K <= SK_QGEMM_MAX_K, "quant_matmul's k limit must fit the int8 GEMM");

/* Broadcasts the batch dims of x1 and x2 (right-aligned) into p. */
static sk_status broadcast_batches(const char *op, const sk__tensor *x1, const sk__tensor *x2, qmm_params *p) {
  int r1 = x1->rank - 2, r2 = x2->rank - 2, r = r1 > r2 ? r1 : r2;
  int64_t s1 = 1, s2 = 1; /* matrices per step of the current dim, innermost first */
  p->batch_rank = r;
  p->batch = 1;
  for (int d = r - 1; d >= 0; d--) {
    int d1 = d - (r - r1), d2 = d - (r - r2);
    int64_t a = d1 >= 0 ? x1->shape[d1] : 1, b = d2 >= 0 ? x2->shape[d2] : 1;
    if (a != b && a != 1 && b != 1) {
      char sa[SK_SHAPE_STR_MAX], sb[SK_SHAPE_STR_MAX];
      return sk__fail(SK_STATUS_INVALID_SHAPE,
                      "%s: inputs x1 %s and x2 %s: batch dimensions do not broadcast (%lld vs %lld)", op,
                      sk__shape_str(x1->rank, x1->shape, sa, sizeof sa), sk__shape_str(x2->rank, x2->shape, sb, sizeof sb),
                      (long long)a, (long long)b);
    }
    p->batch_shape[d] = a == 1 ? b : a;
    p->x1_stride[d] = a == 1 ? 0 : s1;
    p->x2_stride[d] = b == 1 ? 0 : s2;
    s1 *= a;
    s2 *= b;
    p->batch *= p->batch_shape[d];
  }
  return SK_STATUS_OK;
}

/* A [1] or [n] vector: returns whether it is [n] (with n > 1). */
static sk_status check_vector(const char *op, const char *name, const sk__tensor *t, int64_t n, bool allow_one,
                              bool *per_col) {
  char s[SK_SHAPE_STR_MAX];
  if (t->rank == 1 && (t->shape[0] == n || (allow_one && t->shape[0] == 1))) {
    *per_col = t->shape[0] != 1;
    return SK_STATUS_OK;
  }
  if (allow_one && n != 1)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected shape [1] or [%lld], got %s", op, name,
                    (long long)n, sk__shape_str(t->rank, t->shape, s, sizeof s));
  return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected shape [%lld], got %s", op, name, (long long)n,
                  sk__shape_str(t->rank, t->shape, s, sizeof s));
}

static sk_status build_quant_inputs(sk__build_ctx *ctx, qmm_params *p) {
  const char *op = sk__ctx_op(ctx);
  const sk_dtype out = p->out_dtype;
  const sk__tensor *scale = sk__ctx_optional(ctx, QMM_SCALE), *offset = sk__ctx_optional(ctx, QMM_OFFSET);
  const sk__tensor *pt = sk__ctx_optional(ctx, QMM_PERTOKEN), *bias = sk__ctx_optional(ctx, QMM_BIAS);
  bool per_col;
  if (!scale && out != SK_INT32)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input scale: required for %s output (optional only for int32)", op,
                    sk_dtype_name(out));
  if (scale) {
    SK_RETURN_IF_ERROR(check_vector(op, "scale", scale, p->n, true, &per_col));
    p->scale_dtype = scale->dtype;
    p->scale_per_col = per_col;
  }
  if (offset) {
    if (out != SK_INT8)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "%s: input offset: only int8 output takes it, output_dtype is %s", op,
                      sk_dtype_name(out));
    SK_RETURN_IF_ERROR(check_vector(op, "offset", offset, p->n, true, &per_col));
    p->has_offset = true;
    p->offset_per_col = per_col;
  }
  if (pt) {
    if (out != SK_FP16 && out != SK_BF16 && out != SK_FP32)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "%s: input pertoken_scale: only fp16 / bf16 / fp32 output takes it, output_dtype is %s", op,
                      sk_dtype_name(out));
    SK_RETURN_IF_ERROR(check_vector(op, "pertoken_scale", pt, p->m, false, &per_col));
    p->has_pertoken = true;
  }
  if (bias) {
    bool float_out = out == SK_FP16 || out == SK_BF16 || out == SK_FP32;
    if (bias->dtype != SK_INT32 && !(float_out && sk__is_float(bias->dtype)))
      return sk__fail(SK_STATUS_INVALID_DTYPE, "%s: input bias: expected dtype %s with %s output, got %s", op,
                      float_out ? "int32, fp32, fp16 or bf16" : "int32", sk_dtype_name(out), sk_dtype_name(bias->dtype));
    bool batched = p->batch_rank == 1 && bias->rank == 3 && bias->shape[0] == p->batch_shape[0] &&
                   bias->shape[1] == 1 && bias->shape[2] == p->n;
    if (!batched && !(bias->rank == 1 && bias->shape[0] == p->n)) {
      char s[SK_SHAPE_STR_MAX];
      if (p->batch_rank == 1)
        return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected shape [%lld] or [%lld, 1, %lld], got %s", op,
                        (long long)p->n, (long long)p->batch_shape[0], (long long)p->n,
                        sk__shape_str(bias->rank, bias->shape, s, sizeof s));
      return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input bias: expected shape [%lld], got %s", op, (long long)p->n,
                      sk__shape_str(bias->rank, bias->shape, s, sizeof s));
    }
    p->bias_dtype = bias->dtype;
    p->bias_batched = batched;
  }
  p->truncate_scale = p->scale_dtype == SK_FP32 && (out == SK_FP16 || out == SK_INT8) && !p->has_pertoken;
  p->packed_offset = out == SK_INT8 && p->scale_dtype == SK_INT64 && !p->has_offset;
  return SK_STATUS_OK;
}

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  qmm_params *p = sk__ctx_params(ctx);
  const sk__tensor *x1, *x2;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, QMM_X1, &x1));
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, QMM_X2, &x2));
  if (x1->shape[x1->rank - 1] > MAX_K)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x1: last dimension (k) %lld exceeds %d", op,
                    (long long)x1->shape[x1->rank - 1], MAX_K);
  p->m = x1->shape[x1->rank - 2];
  p->k = x1->shape[x1->rank - 1];
  p->n = x2->shape[x2->rank - 1];
  if (x2->shape[x2->rank - 2] != p->k)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x2: expected %lld rows (k, the last dimension of x1), got %lld",
                    op, (long long)p->k, (long long)x2->shape[x2->rank - 2]);
  SK_RETURN_IF_ERROR(broadcast_batches(op, x1, x2, p));
  int64_t out_dtype;
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "output_dtype", &out_dtype));
  if (out_dtype != SK_FP16 && out_dtype != SK_BF16 && out_dtype != SK_FP32 && out_dtype != SK_INT8 &&
      out_dtype != SK_INT32)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE,
                    "%s: attribute output_dtype: expected fp16, bf16, fp32, int8 or int32, got %s",
                    op, sk_dtype_name((sk_dtype)out_dtype)); /* the schema's range made it an sk_dtype */
  p->out_dtype = (sk_dtype)out_dtype;
  SK_RETURN_IF_ERROR(build_quant_inputs(ctx, p));
  int64_t shape[SK_MAX_RANK];
  memcpy(shape, p->batch_shape, sizeof shape);
  shape[p->batch_rank] = p->m;
  shape[p->batch_rank + 1] = p->n;
  sk__tensor *outs;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &outs));
  sk__tensor_init(&outs[0], p->out_dtype, p->batch_rank + 2, shape);
  return SK_STATUS_OK;
}

void sk__qmm_batch_index(const qmm_params *p, int64_t b, int64_t *x1_index, int64_t *x2_index) {
  int64_t i1 = 0, i2 = 0;
  for (int d = p->batch_rank - 1; d >= 0; d--) {
    int64_t c = b % p->batch_shape[d];
    b /= p->batch_shape[d];
    i1 += c * p->x1_stride[d];
    i2 += c * p->x2_stride[d];
  }
  *x1_index = i1;
  *x2_index = i2;
}

void sk__qmm_column_params(const sk__node_io *io, int64_t j, float *scale, float *offset) {
  const qmm_params *p = io->params;
  float s = 1.0f, o = 0.0f;
  if (p->scale_dtype != SK_DTYPE_INVALID) {
    const void *data = io->in[QMM_SCALE].tensors[0].data;
    size_t at = p->scale_per_col ? (size_t)j : 0;
    if (p->scale_dtype == SK_INT64) {
      sk_decode_quant_param(((const int64_t *)data)[at], &s, &o);
    } else {
      s = sk__load_f32(data, p->scale_dtype, at);
      if (p->truncate_scale) { /* "behaves as if packed" */
        uint32_t bits;
        memcpy(&bits, &s, sizeof bits);
        bits &= 0xFFFFE000u;
        memcpy(&s, &bits, sizeof s);
      }
    }
  }
  if (p->has_offset) o = nearbyintf(((const float *)io->in[QMM_OFFSET].tensors[0].data)[p->offset_per_col ? j : 0]);
  *scale = s;
  *offset = p->out_dtype == SK_INT8 ? o : 0.0f;
}

/* Reference: the maths of the header comment as plain loops. */
static void reference(const sk__node_io *io) {
  const qmm_params *p = io->params;
  const sk__tensor *x1 = &io->in[QMM_X1].tensors[0], *x2 = &io->in[QMM_X2].tensors[0], *y = &io->out[0];
  const sk__tensor *bias = io->in[QMM_BIAS].count ? &io->in[QMM_BIAS].tensors[0] : NULL;
  const float *pt = p->has_pertoken ? io->in[QMM_PERTOKEN].tensors[0].data : NULL;
  for (int64_t b = 0; b < p->batch; b++) {
    int64_t i1, i2;
    sk__qmm_batch_index(p, b, &i1, &i2);
    const int8_t *a = (const int8_t *)x1->data + i1 * p->m * p->k, *w = (const int8_t *)x2->data + i2 * p->k * p->n;
    for (int64_t i = 0; i < p->m; i++)
      for (int64_t j = 0; j < p->n; j++) {
        int32_t acc = 0;
        for (int64_t q = 0; q < p->k; q++) acc += (int32_t)a[i * p->k + q] * (int32_t)w[q * p->n + j];
        size_t bj = (size_t)((p->bias_batched ? b * p->n : 0) + j);
        if (bias && p->bias_dtype == SK_INT32) acc = (int32_t)((uint32_t)acc + (uint32_t)((const int32_t *)bias->data)[bj]);
        size_t at = (size_t)((b * p->m + i) * p->n + j);
        if (p->out_dtype == SK_INT32) {
          ((int32_t *)y->data)[at] = acc;
          continue;
        }
        float scale, offset;
        sk__qmm_column_params(io, j, &scale, &offset);
        float v = (float)acc * scale;
        if (p->out_dtype == SK_INT8) {
          float t = rintf(v);
          if (isnan(t)) t = 0.0f;
          t = fminf(fmaxf(t, -256.0f), 255.0f) + offset;
          ((int8_t *)y->data)[at] = (int8_t)fminf(fmaxf(t, -128.0f), 127.0f);
          continue;
        }
        if (pt) v = v * pt[i];
        if (bias && p->bias_dtype != SK_INT32) v = v + sk__load_f32(bias->data, p->bias_dtype, bj);
        if (isnan(v)) {
          uint32_t u = SK__QMM_NAN_BITS;
          memcpy(&v, &u, sizeof v);
        }
        sk__store_f32(y->data, p->out_dtype, at, v);
      }
  }
}

/* The micro-kernels (op.h: kernel_name). */
static const char *kernel_name(const sk__node_io *io) {
  (void)io;
  return sk__qgemm_kernel_name(io->isa);
}

const sk__op_def sk__op_quant_matmul = {
    .type = "quant_matmul",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = quantize(x1 @ x2 (int32) with bias, scale, per-token scale and offset) (torch_npu npu_quant_matmul)",
    .kind = SK_KERNEL_CUBE,
    .build = build,
    .tile = sk__qmm_tile,
    .run_block = sk__qmm_run_block,
    .footprint = sk__qmm_footprint,
    .pack = sk__qmm_pack,
    .reference = reference,
    .kernel_name = kernel_name,
    .dynamic_rows = true, /* run_block clips to y's live rows or batches (quant_matmul_tiling.c) */
    .params_size = sizeof(qmm_params),
};

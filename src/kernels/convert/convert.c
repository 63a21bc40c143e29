/* sk__convert: dispatch to the ISA files, the one-element-at-a-time
 * reference (also the scalar path), and fp32 element access. */
#include "kernels/convert/convert.h"

#include <stdint.h>
#include <string.h>

#include "kernels/convert/convert_isa.h"
#include "kernels/convert/convert_scalar.h"

/* X(dtype enum, C element type, name used in the sk__ld_ / sk__*_to_ helpers;
 * "boolean", since stdbool.h makes "bool" a macro that would expand inside
 * these macros) */
#define SK__CONVERT_DTYPES(X)   \
  X(SK_FP32, float, fp32)       \
  X(SK_FP16, uint16_t, fp16)    \
  X(SK_BF16, uint16_t, bf16)    \
  X(SK_INT8, int8_t, int8)      \
  X(SK_INT32, int32_t, int32)   \
  X(SK_INT64, int64_t, int64)     \
  X(SK_BOOL, uint8_t, boolean)    \
  X(SK_UINT8, uint8_t, uint8)

/* One loop per (src, dst) pair, so the per-element switch is hoisted. */
#define SK__REF_LOOP(stype, sname, dtype, dname)                 \
  do {                                                           \
    const stype *s_ = (const stype *)src;                        \
    dtype *d_ = (dtype *)dst;                                    \
    for (size_t i_ = 0; i_ < n; i_++)                            \
      d_[i_] = SK__TO(dname, sk__ld_##sname(s_[i_]));            \
  } while (0)

/* For a fixed source, switch on the destination. */
#define SK__REF_FROM(stype, sname)                      \
  static void ref_from_##sname(const void *src, void *dst, \
                               sk_dtype dst_dtype, size_t n) { \
    switch (dst_dtype) {                                \
      SK__CONVERT_DTYPES(SK__REF_DST_CASE_##sname)      \
      default: return;                                  \
    }                                                   \
  }

/* The destination case needs the source's type and name; C macros cannot
 * pass them through SK__CONVERT_DTYPES, so each source spells its own. */
#define SK__REF_DST_CASE_fp32(denum, dtype, dname) \
  case denum: SK__REF_LOOP(float, fp32, dtype, dname); return;
#define SK__REF_DST_CASE_fp16(denum, dtype, dname) \
  case denum: SK__REF_LOOP(uint16_t, fp16, dtype, dname); return;
#define SK__REF_DST_CASE_bf16(denum, dtype, dname) \
  case denum: SK__REF_LOOP(uint16_t, bf16, dtype, dname); return;
#define SK__REF_DST_CASE_int8(denum, dtype, dname) \
  case denum: SK__REF_LOOP(int8_t, int8, dtype, dname); return;
#define SK__REF_DST_CASE_int32(denum, dtype, dname) \
  case denum: SK__REF_LOOP(int32_t, int32, dtype, dname); return;
#define SK__REF_DST_CASE_int64(denum, dtype, dname) \
  case denum: SK__REF_LOOP(int64_t, int64, dtype, dname); return;
#define SK__REF_DST_CASE_boolean(denum, dtype, dname) \
  case denum: SK__REF_LOOP(uint8_t, boolean, dtype, dname); return;
#define SK__REF_DST_CASE_uint8(denum, dtype, dname) \
  case denum: SK__REF_LOOP(uint8_t, uint8, dtype, dname); return;

SK__REF_FROM(float, fp32)
SK__REF_FROM(uint16_t, fp16)
SK__REF_FROM(uint16_t, bf16)
SK__REF_FROM(int8_t, int8)
SK__REF_FROM(int32_t, int32)
SK__REF_FROM(int64_t, int64)
SK__REF_FROM(uint8_t, boolean)
SK__REF_FROM(uint8_t, uint8)

static int valid_dtype(sk_dtype d) { return d > SK_DTYPE_INVALID && d < SK_DTYPE_COUNT_; }

void sk__convert_reference_isa(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype, size_t n,
                               sk__isa isa) {
  (void)isa;
  sk__convert_reference(src, src_dtype, dst, dst_dtype, n);
}

/* Invalid dtypes are a caller bug (ops validate dtypes first): nothing is
 * written. */
void sk__convert_reference(const void *src, sk_dtype src_dtype, void *dst,
                           sk_dtype dst_dtype, size_t n) {
  if (n == 0 || !valid_dtype(src_dtype) || !valid_dtype(dst_dtype)) return;
  if (src_dtype == dst_dtype) { /* a copy: bits kept, even signaling NaNs */
    if (src != dst) memcpy(dst, src, n * sk_dtype_size(src_dtype));
    return;
  }
  switch (src_dtype) {
    case SK_FP32: ref_from_fp32(src, dst, dst_dtype, n); return;
    case SK_FP16: ref_from_fp16(src, dst, dst_dtype, n); return;
    case SK_BF16: ref_from_bf16(src, dst, dst_dtype, n); return;
    case SK_INT8: ref_from_int8(src, dst, dst_dtype, n); return;
    case SK_INT32: ref_from_int32(src, dst, dst_dtype, n); return;
    case SK_INT64: ref_from_int64(src, dst, dst_dtype, n); return;
    case SK_BOOL: ref_from_boolean(src, dst, dst_dtype, n); return;
    case SK_UINT8: ref_from_uint8(src, dst, dst_dtype, n); return;
    default: return;
  }
}

void sk__convert_fix_lane(const void *src, sk_dtype src_dtype, void *dst,
                          sk_dtype dst_dtype, size_t i) {
  sk__convert_reference((const char *)src + i * sk_dtype_size(src_dtype), src_dtype,
                        (char *)dst + i * sk_dtype_size(dst_dtype), dst_dtype, 1);
}

void sk__convert(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype,
                 size_t n, sk__isa isa) {
  if (n == 0 || !valid_dtype(src_dtype) || !valid_dtype(dst_dtype)) return;
  if (src_dtype == dst_dtype) {
    if (src != dst) memcpy(dst, src, n * sk_dtype_size(src_dtype));
    return;
  }
  for (const sk__convert_kernels *k = sk__convert_config_for(isa); k; k = k->lower)
    if (k->convert(src, src_dtype, dst, dst_dtype, n)) return;
}

static int convert_reference_all(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype, size_t n) {
  sk__convert_reference(src, src_dtype, dst, dst_dtype, n);
  return 1;
}

static const sk__convert_kernels kernels_scalar = {"scalar", convert_reference_all, NULL};
static const sk__convert_kernels kernels_avx2 = {"avx2", sk__convert_avx2, &kernels_scalar};
static const sk__convert_kernels kernels_avx512 = {"avx512", sk__convert_avx512, &kernels_avx2};

const sk__convert_kernels *sk__convert_config_for(sk__isa isa) {
  /* Never a path the CPU lacks, whatever the caller passed. */
  const sk__isa have = sk__cpu_isa_supported();
  if (isa > have) isa = have;
  return isa >= SK_ISA_AVX512 ? &kernels_avx512 : isa >= SK_ISA_AVX2 ? &kernels_avx2 : &kernels_scalar;
}

float sk__load_f32(const void *p, sk_dtype dtype, size_t i) {
  switch (dtype) {
    case SK_FP32: return ((const float *)p)[i];
    case SK_FP16: return sk_fp16_to_fp32(((const uint16_t *)p)[i]);
    case SK_BF16: return sk_bf16_to_fp32(((const uint16_t *)p)[i]);
    case SK_INT8: return (float)((const int8_t *)p)[i];
    case SK_INT32: return (float)((const int32_t *)p)[i];
    case SK_INT64: return (float)((const int64_t *)p)[i];
    case SK_BOOL: return ((const uint8_t *)p)[i] != 0 ? 1.0f : 0.0f;
    case SK_UINT8: return (float)((const uint8_t *)p)[i];
    default: return 0.0f;
  }
}

void sk__store_f32(void *p, sk_dtype dtype, size_t i, float v) {
  switch (dtype) {
    case SK_FP32: ((float *)p)[i] = v; return;
    case SK_FP16: ((uint16_t *)p)[i] = sk__f32_to_fp16(v); return;
    case SK_BF16: ((uint16_t *)p)[i] = sk__f32_to_bf16(v); return;
    case SK_INT8: ((int8_t *)p)[i] = sk__f32_to_int8(v); return;
    case SK_INT32: ((int32_t *)p)[i] = sk__f32_to_int32(v); return;
    case SK_INT64: ((int64_t *)p)[i] = sk__f32_to_int64(v); return;
    case SK_BOOL: ((uint8_t *)p)[i] = sk__f32_to_boolean(v); return;
    case SK_UINT8: ((uint8_t *)p)[i] = sk__f32_to_uint8(v); return;
    default: return;
  }
}

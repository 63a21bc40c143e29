/* Per-element conversions: the rules of convert.h for one value. The
 * reference (convert.c) is built from these, and the SIMD files use them
 * for lanes they hand back to the scalar definition.
 *
 * Everything here is static inline on purpose: each translation unit,
 * whatever its ISA flags, gets its own private copy (a shared out-of-line
 * copy could be the one compiled with AVX-512 flags).
 *
 * Two families:
 *   sk__ld_<dtype>(x)    widens a stored element exactly: float sources to
 *                        float, integer and bool sources to int64_t (bool:
 *                        any nonzero byte is 1)
 *   sk__f32_to_<dtype>   stores a float per the rules (RNE / trunc+saturate /
 *                        != 0 for bool)
 *   sk__i64_to_<dtype>   stores an integer per the rules (RNE / wrap / != 0)
 * and SK__TO(dtype, x) picks the f32_ or i64_ variant from x's type.
 */
#ifndef SK_KERNELS_CONVERT_SCALAR_H
#define SK_KERNELS_CONVERT_SCALAR_H

#include <stdint.h>

#include "superkernel.h"

/* ---- loads: exact widening -------------------------------------------- */

static inline float sk__ld_fp32(float x) { return x; }
static inline float sk__ld_fp16(uint16_t x) { return sk_fp16_to_fp32(x); }
static inline float sk__ld_bf16(uint16_t x) { return sk_bf16_to_fp32(x); }
static inline int64_t sk__ld_int8(int8_t x) { return x; }
static inline int64_t sk__ld_int32(int32_t x) { return x; }
static inline int64_t sk__ld_int64(int64_t x) { return x; }
/* Any nonzero byte reads as true (1). */
static inline int64_t sk__ld_boolean(uint8_t x) { return x != 0; }
static inline int64_t sk__ld_uint8(uint8_t x) { return x; }

/* ---- float -> dtype ------------------------------------------------------ */

static inline float sk__f32_to_fp32(float v) { return v; }
static inline uint16_t sk__f32_to_fp16(float v) { return sk_fp32_to_fp16(v); }
static inline uint16_t sk__f32_to_bf16(float v) { return sk_fp32_to_bf16(v); }

/* Truncate toward zero, saturate, NaN -> 0. The comparisons are false for
 * NaN, so NaN reaches the v != v test; the remaining casts are in range. */
static inline int8_t sk__f32_to_int8(float v) {
  if (v != v) return 0;
  if (v >= 128.0f) return INT8_MAX;
  if (v <= -129.0f) return INT8_MIN;
  return (int8_t)(int)v;
}

static inline int32_t sk__f32_to_int32(float v) {
  if (v != v) return 0;
  if (v >= 2147483648.0f) return INT32_MAX;
  if (v < -2147483648.0f) return INT32_MIN;
  return (int32_t)v;
}

static inline int64_t sk__f32_to_int64(float v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0f) return INT64_MAX;
  if (v < -9223372036854775808.0f) return INT64_MIN;
  return (int64_t)v;
}

/* Unsigned: the same rule with range [0, 255]; (-1, 0) truncates to 0. */
static inline uint8_t sk__f32_to_uint8(float v) {
  if (v != v) return 0;
  if (v >= 256.0f) return UINT8_MAX;
  if (v <= -1.0f) return 0;
  return (uint8_t)(int)v;
}

/* v != 0: NaN is true (as in torch), -0.0 false. */
static inline uint8_t sk__f32_to_boolean(float v) { return v != 0.0f; }

/* ---- integer -> dtype ---------------------------------------------------- */

/* RNE, as C's conversion does (in the default rounding mode). */
static inline float sk__i64_to_fp32(int64_t v) { return (float)v; }

/* v rounded to 24 significant bits with round-to-odd (truncate, then set the
 * last bit when anything was dropped). Rounding that to fp16 / bf16 (11 / 8
 * bits, at least 2 fewer) with RNE gives the correctly rounded result,
 * which a plain RNE to fp32 first would not (double rounding: e.g. 2^30 +
 * 2^22 + 1 -> fp32 2^30 + 2^22, a bf16 tie, -> 2^30 instead of 2^30 + 2^23). */
static inline float sk__i64_to_f32_odd(int64_t v) {
  uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  if (a >= (UINT64_C(1) << 24)) {
    int shift = 40 - __builtin_clzll(a); /* bit length - 24, >= 1 */
    uint64_t m = a >> shift;
    if (a & ((UINT64_C(1) << shift) - 1)) m |= 1;
    a = m << shift; /* 24 significant bits: exact in fp32 */
  }
  float f = (float)a;
  return v < 0 ? -f : f;
}

static inline uint16_t sk__i64_to_fp16(int64_t v) {
  return sk_fp32_to_fp16(sk__i64_to_f32_odd(v));
}
static inline uint16_t sk__i64_to_bf16(int64_t v) {
  return sk_fp32_to_bf16(sk__i64_to_f32_odd(v));
}

/* Two's-complement wrap: keep the low bits (GCC and Clang define the
 * out-of-range unsigned -> signed conversion as modulo). */
static inline int8_t sk__i64_to_int8(int64_t v) { return (int8_t)(uint8_t)(uint64_t)v; }
static inline int32_t sk__i64_to_int32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
static inline int64_t sk__i64_to_int64(int64_t v) { return v; }
static inline uint8_t sk__i64_to_uint8(int64_t v) { return (uint8_t)(uint64_t)v; }
static inline uint8_t sk__i64_to_boolean(int64_t v) { return v != 0; }

/* SK__TO(fp16, x): sk__f32_to_fp16(x) for a float x, sk__i64_to_fp16(x) for
 * an int64_t x. */
#define SK__TO(dname, x) \
  _Generic((x), float: sk__f32_to_##dname, default: sk__i64_to_##dname)(x)

#endif

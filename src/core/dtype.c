/* Data type names, sizes and the exact scalar fp16 / bf16 conversions.
 * These scalar routines are the definition every SIMD conversion must match
 * bit for bit (tests/test_dtype.c checks all 65,536 patterns). */
#include <string.h>

#include "superkernel.h"

const char *sk_dtype_name(sk_dtype dtype) {
  switch (dtype) {
    case SK_FP32: return "fp32";
    case SK_FP16: return "fp16";
    case SK_BF16: return "bf16";
    case SK_INT8: return "int8";
    case SK_INT32: return "int32";
    case SK_INT64: return "int64";
    case SK_BOOL: return "bool";
    case SK_UINT8: return "uint8";
    default: return "invalid";
  }
}

size_t sk_dtype_size(sk_dtype dtype) {
  switch (dtype) {
    case SK_FP32: return 4;
    case SK_FP16: return 2;
    case SK_BF16: return 2;
    case SK_INT8: return 1;
    case SK_INT32: return 4;
    case SK_INT64: return 8;
    case SK_BOOL: return 1;
    case SK_UINT8: return 1;
    default: return 0;
  }
}

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float sk_fp16_to_fp32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) /* Inf, or NaN: quieted with its payload kept, as F16C does */
    return bits_float(sign | 0x7F800000u | (mant << 13) | (mant ? 0x00400000u : 0u));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    /* Subnormal: mant * 2^-24 is exact in fp32. */
    float magnitude = (float)mant * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t sk_fp32_to_fp16(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) /* NaN: quiet it, keep the top payload bits */
    return (uint16_t)(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) /* rounds to >= 65520: overflow to Inf */
    return (uint16_t)(sign | 0x7C00u);
  if (abs < 0x38800000u) { /* below 2^-14: subnormal or zero in fp16 */
    if (abs < 0x33000000u) return sign; /* below half the smallest subnormal */
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - exp; /* 14..24: value = mant * 2^(exp-150) */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
  }
  /* Normal: rebias and round the 13 dropped bits to nearest even; a carry
   * into the exponent is the correct result (up to Inf, excluded above). */
  uint32_t r = abs - (112u << 23);
  r += 0xFFFu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

float sk_bf16_to_fp32(uint16_t b) { return bits_float((uint32_t)b << 16); }

uint16_t sk_fp32_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: quiet, keep sign and payload top */
    return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

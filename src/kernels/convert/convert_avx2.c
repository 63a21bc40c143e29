/* AVX2 + F16C conversions, 8 elements per step; the tail (n % 8 elements)
 * goes to the reference. Built with its own ISA flags (sources.cmake).
 *
 * Same scheme as convert_avx512.c: float-ish pairs through 8 fp32 lanes
 * (not int32 -> bf16, which would round twice), integer pairs through 8 int32
 * lanes, NaN lanes of float -> float pairs redone with the scalar definition.
 * int64 <-> float has no AVX2 instruction and is left to the reference, as
 * is int64 -> bool (the int32 lanes hold only the low half).
 *
 * The one-byte dtypes are also served here for AVX-512 (its file has no
 * pairs of them: sk__convert falls back to this one). "boolean" names bool
 * in the macros below, where stdbool.h's bool macro would expand. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/convert/convert.h"
#include "kernels/convert/convert_isa.h"

/* ---- loaders: 8 elements from src + i as fp32 ------------------------------ */

static inline __m256 ld_fp32(const void *src, size_t i) {
  return _mm256_loadu_ps((const float *)src + i);
}
static inline __m256 ld_fp16(const void *src, size_t i) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
}
static inline __m256 ld_bf16(const void *src, size_t i) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
static inline __m256i ldi_int8(const void *src, size_t i) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)src + i)));
}
static inline __m256i ldi_int32(const void *src, size_t i) {
  return _mm256_loadu_si256((const __m256i *)((const int32_t *)src + i));
}
/* uint8 zero-extends; bool reads any nonzero byte as 1 (unsigned min). */
static inline __m256i ldi_uint8(const void *src, size_t i) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)((const uint8_t *)src + i)));
}
static inline __m256i ldi_boolean(const void *src, size_t i) {
  return _mm256_min_epu32(ldi_uint8(src, i), _mm256_set1_epi32(1));
}
static inline __m256 ld_uint8(const void *src, size_t i) { return _mm256_cvtepi32_ps(ldi_uint8(src, i)); }
static inline __m256 ld_boolean(const void *src, size_t i) { return _mm256_cvtepi32_ps(ldi_boolean(src, i)); }
static inline __m256 ld_int8(const void *src, size_t i) {
  return _mm256_cvtepi32_ps(ldi_int8(src, i));
}
static inline __m256 ld_int32(const void *src, size_t i) {
  return _mm256_cvtepi32_ps(ldi_int32(src, i));
}
/* The low 32 bits of 8 int64s. */
static inline __m256i ldi_int64(const void *src, size_t i) {
  const __m256i *p = (const __m256i *)((const int64_t *)src + i);
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(p), even);
  __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(p + 1), even);
  return _mm256_permute2x128_si256(a, b, 0x20);
}

/* ---- storers: 8 fp32 lanes to dst + i --------------------------------------- */

static inline void st_fp32(void *dst, size_t i, __m256 v) {
  _mm256_storeu_ps((float *)dst + i, v);
}
static inline void st_fp16(void *dst, size_t i, __m256 v) {
  _mm_storeu_si128((__m128i *)((uint16_t *)dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
/* Integer RNE on the bits; NaN lanes are fixed up by the caller. */
static inline void st_bf16(void *dst, size_t i, __m256 v) {
  __m256i u = _mm256_castps_si256(v);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  u = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  u = _mm256_srli_epi32(u, 16); /* 0..0xFFFF: packus keeps it */
  __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
  _mm_storeu_si128((__m128i *)((uint16_t *)dst + i), h);
}
/* Truncate, saturate, NaN -> 0. vcvttps2dq gives 0x80000000 for NaN and both
 * overflows; XOR with the v >= 2^31 mask turns that into 0x7FFFFFFF, and the
 * ordered mask zeroes NaN lanes. */
static inline __m256i f32_to_i32(__m256 v) {
  __m256i r = _mm256_cvttps_epi32(v);
  __m256 big = _mm256_cmp_ps(v, _mm256_set1_ps(2147483648.0f), _CMP_GE_OQ);
  r = _mm256_xor_si256(r, _mm256_castps_si256(big));
  return _mm256_and_si256(r, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)));
}
static inline void st_int32(void *dst, size_t i, __m256 v) {
  _mm256_storeu_si256((__m256i *)((int32_t *)dst + i), f32_to_i32(v));
}
/* Saturating packs: int32 -> int16 -> int8 saturates to int8. */
static inline void st_int8(void *dst, size_t i, __m256 v) {
  __m256i r = f32_to_i32(v);
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storel_epi64((__m128i *)((int8_t *)dst + i), _mm_packs_epi16(w, w));
}

/* ---- integer storers: 8 int32 lanes, two's-complement wrap ----------------- */

static inline void sti_int8(void *dst, size_t i, __m256i v) {
  const __m256i low_bytes = _mm256_setr_epi8(
      0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
      0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i b = _mm256_shuffle_epi8(v, low_bytes);
  b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  _mm_storel_epi64((__m128i *)((int8_t *)dst + i), _mm256_castsi256_si128(b));
}
static inline void sti_uint8(void *dst, size_t i, __m256i v) { sti_int8(dst, i, v); } /* the low byte too */
static inline void sti_boolean(void *dst, size_t i, __m256i v) {
  __m256i zero = _mm256_cmpeq_epi32(v, _mm256_setzero_si256());
  sti_int8(dst, i, _mm256_andnot_si256(zero, _mm256_set1_epi32(1)));
}
static inline void sti_int32(void *dst, size_t i, __m256i v) {
  _mm256_storeu_si256((__m256i *)((int32_t *)dst + i), v);
}
static inline void sti_int64(void *dst, size_t i, __m256i v) {
  __m256i *p = (__m256i *)((int64_t *)dst + i);
  _mm256_storeu_si256(p, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)));
  _mm256_storeu_si256(p + 1, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
}

/* ---- one-byte storers from 8 fp32 lanes ------------------------------------ */

/* Truncate, then saturating packs: int32 -> int16 (signed), int16 -> uint8
 * (unsigned): negatives become 0, anything above 255 becomes 255, NaN 0. */
static inline void st_uint8(void *dst, size_t i, __m256 v) {
  __m256i r = f32_to_i32(v);
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storel_epi64((__m128i *)((uint8_t *)dst + i), _mm_packus_epi16(w, w));
}
/* v != 0: the unordered compare makes NaN true; -0.0 equals 0. */
static inline void st_boolean(void *dst, size_t i, __m256 v) {
  __m256 ne = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NEQ_UQ);
  sti_int8(dst, i, _mm256_and_si256(_mm256_castps_si256(ne), _mm256_set1_epi32(1)));
}

/* ---- loops ----------------------------------------------------------------- */

#define DT_fp32 SK_FP32
#define DT_fp16 SK_FP16
#define DT_bf16 SK_BF16
#define DT_int8 SK_INT8
#define DT_int32 SK_INT32
#define DT_int64 SK_INT64
#define DT_boolean SK_BOOL
#define DT_uint8 SK_UINT8
#define ISFLOAT_fp32 1
#define ISFLOAT_fp16 1
#define ISFLOAT_bf16 1
#define ISFLOAT_int8 0
#define ISFLOAT_int32 0
#define ISFLOAT_boolean 0
#define ISFLOAT_uint8 0

static void fix_nan_lanes(const void *src, sk_dtype s, void *dst, sk_dtype d, size_t i,
                          unsigned bits) {
  while (bits) {
    sk__convert_fix_lane(src, s, dst, d, i + (size_t)__builtin_ctz(bits));
    bits &= bits - 1;
  }
}

static void tail(const void *src, sk_dtype s, void *dst, sk_dtype d, size_t i, size_t n) {
  if (i < n)
    sk__convert_reference((const char *)src + i * sk_dtype_size(s), s,
                          (char *)dst + i * sk_dtype_size(d), d, n - i);
}

#define FLOAT_PAIR(S, D)                                                       \
  static void cvt_##S##_##D(const void *src, void *dst, size_t n) {            \
    size_t i = 0;                                                              \
    for (; i + 8 <= n; i += 8) {                                               \
      __m256 v_ = ld_##S(src, i);                                              \
      st_##D(dst, i, v_);                                                      \
      if (ISFLOAT_##S && ISFLOAT_##D) {                                        \
        unsigned nan_ = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v_, v_, _CMP_UNORD_Q)); \
        if (__builtin_expect(nan_ != 0, 0))                                    \
          fix_nan_lanes(src, DT_##S, dst, DT_##D, i, nan_);                    \
      }                                                                        \
    }                                                                          \
    tail(src, DT_##S, dst, DT_##D, i, n);                                      \
  }

#define INT_PAIR(S, D)                                                         \
  static void cvt_##S##_##D(const void *src, void *dst, size_t n) {            \
    size_t i = 0;                                                              \
    for (; i + 8 <= n; i += 8) sti_##D(dst, i, ldi_##S(src, i));               \
    tail(src, DT_##S, dst, DT_##D, i, n);                                      \
  }

FLOAT_PAIR(fp32, fp16)
FLOAT_PAIR(fp32, bf16)
FLOAT_PAIR(fp32, int8)
FLOAT_PAIR(fp32, int32)
FLOAT_PAIR(fp16, fp32)
FLOAT_PAIR(fp16, bf16)
FLOAT_PAIR(fp16, int8)
FLOAT_PAIR(fp16, int32)
FLOAT_PAIR(bf16, fp32)
FLOAT_PAIR(bf16, fp16)
FLOAT_PAIR(bf16, int8)
FLOAT_PAIR(bf16, int32)
FLOAT_PAIR(int8, fp32)
FLOAT_PAIR(int8, fp16)
FLOAT_PAIR(int8, bf16)
FLOAT_PAIR(int32, fp32)
FLOAT_PAIR(int32, fp16) /* |x| >= 2^24 is Inf in fp16 either way: no double rounding */
INT_PAIR(int8, int32)
INT_PAIR(int8, int64)
INT_PAIR(int32, int8)
INT_PAIR(int32, int64)
INT_PAIR(int64, int8)
INT_PAIR(int64, int32)
/* The one-byte dtypes: every value of theirs is exact in fp32, fp16 and bf16. */
FLOAT_PAIR(uint8, fp32)
FLOAT_PAIR(uint8, fp16)
FLOAT_PAIR(uint8, bf16)
FLOAT_PAIR(boolean, fp32)
FLOAT_PAIR(boolean, fp16)
FLOAT_PAIR(boolean, bf16)
FLOAT_PAIR(fp32, uint8)
FLOAT_PAIR(fp16, uint8)
FLOAT_PAIR(bf16, uint8)
FLOAT_PAIR(fp32, boolean)
FLOAT_PAIR(fp16, boolean)
FLOAT_PAIR(bf16, boolean)
INT_PAIR(uint8, int8)
INT_PAIR(uint8, int32)
INT_PAIR(uint8, int64)
INT_PAIR(uint8, boolean)
INT_PAIR(boolean, int8)
INT_PAIR(boolean, int32)
INT_PAIR(boolean, int64)
INT_PAIR(boolean, uint8)
INT_PAIR(int8, uint8)
INT_PAIR(int32, uint8)
INT_PAIR(int64, uint8)
INT_PAIR(int8, boolean)
INT_PAIR(int32, boolean)

typedef void (*cvt_fn)(const void *src, void *dst, size_t n);

#define E(S, D) [DT_##S][DT_##D] = cvt_##S##_##D
static const cvt_fn table[SK_DTYPE_COUNT_][SK_DTYPE_COUNT_] = {
    E(fp32, fp16), E(fp32, bf16), E(fp32, int8), E(fp32, int32),
    E(fp16, fp32), E(fp16, bf16), E(fp16, int8), E(fp16, int32),
    E(bf16, fp32), E(bf16, fp16), E(bf16, int8), E(bf16, int32),
    E(int8, fp32), E(int8, fp16), E(int8, bf16), E(int8, int32), E(int8, int64),
    E(int32, fp32), E(int32, fp16), E(int32, int8), E(int32, int64),
    E(int64, int8), E(int64, int32),
    E(uint8, fp32), E(uint8, fp16), E(uint8, bf16), E(uint8, int8), E(uint8, int32), E(uint8, int64), E(uint8, boolean),
    E(boolean, fp32), E(boolean, fp16), E(boolean, bf16), E(boolean, int8), E(boolean, int32), E(boolean, int64),
    E(boolean, uint8),
    E(fp32, uint8), E(fp16, uint8), E(bf16, uint8), E(int8, uint8), E(int32, uint8), E(int64, uint8),
    E(fp32, boolean), E(fp16, boolean), E(bf16, boolean), E(int8, boolean), E(int32, boolean),
};
#undef E

int sk__convert_avx2(const void *src, sk_dtype src_dtype, void *dst,
                     sk_dtype dst_dtype, size_t n) {
  if ((unsigned)src_dtype >= SK_DTYPE_COUNT_ || (unsigned)dst_dtype >= SK_DTYPE_COUNT_)
    return 0;
  cvt_fn fn = table[src_dtype][dst_dtype];
  if (!fn) return 0;
  fn(src, dst, n);
  return 1;
}

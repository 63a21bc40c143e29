/* AVX-512 (F/BW/DQ/VL + F16C) conversions, 16 elements per step, tails with
 * masked loads and stores. Built with its own ISA flags (sources.cmake).
 *
 * Float-ish pairs go through 16 fp32 lanes: a loader widens the source to
 * fp32 (exact for fp16 / bf16 / int8, RNE for int32 / int64, as C does), a
 * storer narrows per the rules. That equals the reference for every pair
 * except int32 / int64 -> bf16 (RNE to fp32 then to bf16 would round twice),
 * which is left to the reference. Integer pairs go through 16 int32 lanes
 * (wrap composes). NaN lanes of float -> float pairs are redone with the
 * scalar definition, so NaN bits match it whatever it does with payloads. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/convert/convert_isa.h"

#define FULL ((__mmask16)0xFFFF)

/* ---- loaders: 16 elements from src + i as fp32 (lanes outside m are 0) ---- */

static inline __m512 ld_fp32(const void *src, size_t i, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, (const float *)src + i);
}
static inline __m512 ld_fp16(const void *src, size_t i, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)src + i));
}
static inline __m512 ld_bf16(const void *src, size_t i, __mmask16 m) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)src + i));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
static inline __m512 ld_int8(const void *src, size_t i, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, (const int8_t *)src + i)));
}
static inline __m512 ld_int32(const void *src, size_t i, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, (const int32_t *)src + i));
}
static inline __m512 ld_int64(const void *src, size_t i, __mmask16 m) {
  const int64_t *p = (const int64_t *)src + i;
  __m512i lo = _mm512_maskz_loadu_epi64((__mmask8)m, p);
  __m512i hi = _mm512_maskz_loadu_epi64((__mmask8)(m >> 8), p + 8);
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtepi64_ps(lo)),
                            _mm512_cvtepi64_ps(hi), 1);
}

/* ---- storers: 16 fp32 lanes to dst + i, lanes in m only ------------------ */

static inline void st_fp32(void *dst, size_t i, __m512 v, __mmask16 m) {
  _mm512_mask_storeu_ps((float *)dst + i, m, v);
}
static inline void st_fp16(void *dst, size_t i, __m512 v, __mmask16 m) {
  __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm256_mask_storeu_epi16((uint16_t *)dst + i, m, h);
}
/* Integer RNE on the bits (keeps subnormals, unlike vcvtneps2bf16); NaN
 * lanes are fixed up by the caller. */
static inline void st_bf16(void *dst, size_t i, __m512 v, __mmask16 m) {
  __m512i u = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)dst + i, m, _mm512_srli_epi32(u, 16));
}
/* Truncate, saturate, NaN -> 0: vcvttps2dq gives 0x80000000 for NaN and for
 * both overflows, which is already right for v < -2^31. */
static inline __m512i f32_to_i32(__m512 v) {
  __m512i r = _mm512_cvttps_epi32(v);
  __mmask16 big = _mm512_cmp_ps_mask(v, _mm512_set1_ps(2147483648.0f), _CMP_GE_OQ);
  r = _mm512_mask_mov_epi32(r, big, _mm512_set1_epi32(INT32_MAX));
  return _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), r);
}
static inline void st_int32(void *dst, size_t i, __m512 v, __mmask16 m) {
  _mm512_mask_storeu_epi32((int32_t *)dst + i, m, f32_to_i32(v));
}
/* Saturating to int32 then to int8 (vpmovsdb) is saturating to int8. */
static inline void st_int8(void *dst, size_t i, __m512 v, __mmask16 m) {
  _mm512_mask_cvtsepi32_storeu_epi8((int8_t *)dst + i, m, f32_to_i32(v));
}
static inline __m512i f32x8_to_i64(__m256 v) {
  __m512i r = _mm512_cvttps_epi64(v);
  __mmask8 big = _mm256_cmp_ps_mask(v, _mm256_set1_ps(9223372036854775808.0f), _CMP_GE_OQ);
  r = _mm512_mask_mov_epi64(r, big, _mm512_set1_epi64(INT64_MAX));
  return _mm512_maskz_mov_epi64(_mm256_cmp_ps_mask(v, v, _CMP_ORD_Q), r);
}
static inline void st_int64(void *dst, size_t i, __m512 v, __mmask16 m) {
  int64_t *p = (int64_t *)dst + i;
  _mm512_mask_storeu_epi64(p, (__mmask8)m, f32x8_to_i64(_mm512_castps512_ps256(v)));
  _mm512_mask_storeu_epi64(p + 8, (__mmask8)(m >> 8), f32x8_to_i64(_mm512_extractf32x8_ps(v, 1)));
}

/* ---- integer pairs: 16 int32 lanes, two's-complement wrap ---------------- */

static inline __m512i ldi_int8(const void *src, size_t i, __mmask16 m) {
  return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, (const int8_t *)src + i));
}
static inline __m512i ldi_int32(const void *src, size_t i, __mmask16 m) {
  return _mm512_maskz_loadu_epi32(m, (const int32_t *)src + i);
}
static inline __m512i ldi_int64(const void *src, size_t i, __mmask16 m) {
  const int64_t *p = (const int64_t *)src + i;
  __m256i lo = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)m, p));
  __m256i hi = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)(m >> 8), p + 8));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
static inline void sti_int8(void *dst, size_t i, __m512i v, __mmask16 m) {
  _mm512_mask_cvtepi32_storeu_epi8((int8_t *)dst + i, m, v);
}
static inline void sti_int32(void *dst, size_t i, __m512i v, __mmask16 m) {
  _mm512_mask_storeu_epi32((int32_t *)dst + i, m, v);
}
static inline void sti_int64(void *dst, size_t i, __m512i v, __mmask16 m) {
  int64_t *p = (int64_t *)dst + i;
  _mm512_mask_storeu_epi64(p, (__mmask8)m, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)));
  _mm512_mask_storeu_epi64(p + 8, (__mmask8)(m >> 8),
                           _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)));
}

/* ---- loops ----------------------------------------------------------------- */

#define DT_fp32 SK_FP32
#define DT_fp16 SK_FP16
#define DT_bf16 SK_BF16
#define DT_int8 SK_INT8
#define DT_int32 SK_INT32
#define DT_int64 SK_INT64
#define ISFLOAT_fp32 1
#define ISFLOAT_fp16 1
#define ISFLOAT_bf16 1
#define ISFLOAT_int8 0
#define ISFLOAT_int32 0
#define ISFLOAT_int64 0

static void fix_nan_lanes(const void *src, sk_dtype s, void *dst, sk_dtype d, size_t i,
                          __mmask16 nan) {
  unsigned bits = nan;
  while (bits) {
    sk__convert_fix_lane(src, s, dst, d, i + (size_t)__builtin_ctz(bits));
    bits &= bits - 1;
  }
}

#define FLOAT_STEP(S, D, mask)                                                \
  do {                                                                        \
    __m512 v_ = ld_##S(src, i, mask);                                         \
    st_##D(dst, i, v_, mask);                                                 \
    if (ISFLOAT_##S && ISFLOAT_##D) {                                         \
      __mmask16 nan_ = _mm512_mask_cmp_ps_mask(mask, v_, v_, _CMP_UNORD_Q);   \
      if (__builtin_expect(nan_ != 0, 0))                                     \
        fix_nan_lanes(src, DT_##S, dst, DT_##D, i, nan_);                     \
    }                                                                         \
  } while (0)

#define FLOAT_PAIR(S, D)                                                      \
  static void cvt_##S##_##D(const void *src, void *dst, size_t n) {           \
    size_t i = 0;                                                             \
    for (; i + 16 <= n; i += 16) FLOAT_STEP(S, D, FULL);                      \
    if (i < n) {                                                              \
      __mmask16 m_ = (__mmask16)((1u << (n - i)) - 1);                        \
      FLOAT_STEP(S, D, m_);                                                   \
    }                                                                         \
  }

#define INT_PAIR(S, D)                                                        \
  static void cvt_##S##_##D(const void *src, void *dst, size_t n) {           \
    size_t i = 0;                                                             \
    for (; i + 16 <= n; i += 16) sti_##D(dst, i, ldi_##S(src, i, FULL), FULL); \
    if (i < n) {                                                              \
      __mmask16 m_ = (__mmask16)((1u << (n - i)) - 1);                        \
      sti_##D(dst, i, ldi_##S(src, i, m_), m_);                               \
    }                                                                         \
  }

FLOAT_PAIR(fp32, fp16)
FLOAT_PAIR(fp32, bf16)
FLOAT_PAIR(fp32, int8)
FLOAT_PAIR(fp32, int32)
FLOAT_PAIR(fp32, int64)
FLOAT_PAIR(fp16, fp32)
FLOAT_PAIR(fp16, bf16)
FLOAT_PAIR(fp16, int8)
FLOAT_PAIR(fp16, int32)
FLOAT_PAIR(fp16, int64)
FLOAT_PAIR(bf16, fp32)
FLOAT_PAIR(bf16, fp16)
FLOAT_PAIR(bf16, int8)
FLOAT_PAIR(bf16, int32)
FLOAT_PAIR(bf16, int64)
FLOAT_PAIR(int8, fp32)
FLOAT_PAIR(int8, fp16)
FLOAT_PAIR(int8, bf16)
FLOAT_PAIR(int32, fp32)
FLOAT_PAIR(int32, fp16) /* |x| >= 2^24 is Inf in fp16 either way: no double rounding */
FLOAT_PAIR(int64, fp32)
FLOAT_PAIR(int64, fp16)
INT_PAIR(int8, int32)
INT_PAIR(int8, int64)
INT_PAIR(int32, int8)
INT_PAIR(int32, int64)
INT_PAIR(int64, int8)
INT_PAIR(int64, int32)

typedef void (*cvt_fn)(const void *src, void *dst, size_t n);

#define E(S, D) [DT_##S][DT_##D] = cvt_##S##_##D
static const cvt_fn table[SK_DTYPE_COUNT_][SK_DTYPE_COUNT_] = {
    E(fp32, fp16), E(fp32, bf16), E(fp32, int8), E(fp32, int32), E(fp32, int64),
    E(fp16, fp32), E(fp16, bf16), E(fp16, int8), E(fp16, int32), E(fp16, int64),
    E(bf16, fp32), E(bf16, fp16), E(bf16, int8), E(bf16, int32), E(bf16, int64),
    E(int8, fp32), E(int8, fp16), E(int8, bf16), E(int8, int32), E(int8, int64),
    E(int32, fp32), E(int32, fp16), E(int32, int8), E(int32, int64),
    E(int64, fp32), E(int64, fp16), E(int64, int8), E(int64, int32),
    /* int32 / int64 -> bf16: the reference (see the top of the file) */
};
#undef E

int sk__convert_avx512(const void *src, sk_dtype src_dtype, void *dst,
                       sk_dtype dst_dtype, size_t n) {
  if ((unsigned)src_dtype >= SK_DTYPE_COUNT_ || (unsigned)dst_dtype >= SK_DTYPE_COUNT_)
    return 0;
  cvt_fn fn = table[src_dtype][dst_dtype];
  if (!fn) return 0;
  fn(src, dst, n);
  return 1;
}

/* The AVX-512 tile shared by the fp32-FMA kernels (f32_gemm_avx512.c) and
 * the bf16 dot-product kernels (bf16_gemm_avx512bf16.c): its shape, masked
 * loads and stores, and the epilogue (bias, rounding, the NaN rule). Included
 * only by files compiled with AVX-512 flags. */
#ifndef SK_KERNELS_GEMM_AVX512_TILE_H
#define SK_KERNELS_GEMM_AVX512_TILE_H

#include <immintrin.h>

#include "kernels/gemm/gemm_internal.h"

#ifndef SK_GEMM_AVX512_MR
#define SK_GEMM_AVX512_MR 8
#endif
#ifndef SK_GEMM_AVX512_NR
#define SK_GEMM_AVX512_NR 32
#endif
#define MR SK_GEMM_AVX512_MR
#define NR SK_GEMM_AVX512_NR
#define NV (NR / 16) /* zmm vectors per row of the tile */

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Mask of the valid lanes of vector v when `valid` elements remain. */
SK_ALWAYS_INLINE __mmask16 lane_mask(size_t valid, size_t v) {
  if (valid <= 16 * v) return 0;
  size_t left = valid - 16 * v;
  return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* Loads the masked lanes of src[i..i+16) as fp32 (exact widening: F16C for
 * fp16, a 16-bit shift for bf16); masked-off lanes read nothing and are 0. */
SK_ALWAYS_INLINE __m512 load_f32(const void *src, sk_dtype dtype, size_t i, __mmask16 m) {
  if (dtype == SK_FP32) return _mm512_maskz_loadu_ps(m, (const float *)src + i);
  __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)src + i);
  if (dtype == SK_FP16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Rounds y to dtype and stores the masked lanes at dst[i..]. NaN becomes the
 * canonical NaN (gemm_internal.h). fp16 uses vcvtps2ph with RNE, which is
 * exact for overflow and subnormals; bf16 uses integer RNE because
 * vcvtneps2bf16 flushes subnormals. */
SK_ALWAYS_INLINE void store_f32(void *dst, sk_dtype dtype, size_t i, __m512 y, __mmask16 m) {
  __mmask16 nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  y = _mm512_mask_blend_ps(nan, y, _mm512_castsi512_ps(_mm512_set1_epi32((int)SK__GEMM_NAN_F32)));
  if (dtype == SK_FP32) {
    _mm512_mask_storeu_ps((float *)dst + i, m, y);
  } else if (dtype == SK_FP16) {
    __m256i h = _mm512_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16((uint16_t *)dst + i, m, h);
  } else {
    __m512i u = _mm512_castps_si512(y);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)dst + i, m, _mm512_srli_epi32(u, 16));
  }
}

SK_ALWAYS_INLINE void store_tile(size_t mr, size_t nr, __m512 acc[MR][NV], const float *bias,
                                 void *c, size_t ldc, sk_dtype dtype) {
  __mmask16 m[NV];
  __m512 bv[NV];
#pragma GCC unroll 4
  for (size_t v = 0; v < NV; v++) {
    m[v] = lane_mask(nr, v);
    bv[v] = bias ? _mm512_load_ps(bias + 16 * v) : _mm512_setzero_ps();
  }
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) {
      /* No bias means no add at all: acc + 0.0f would turn -0 into +0. */
      __m512 y = bias ? _mm512_add_ps(acc[i][v], bv[v]) : acc[i][v];
      store_f32(c, dtype, i * ldc + 16 * v, y, m[v]);
    }
  }
}

/* The accumulators' start: zero, or the sums of the previous k block. */
SK_ALWAYS_INLINE void acc_start(const float *acc_in, __m512 acc[MR][NV]) {
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++)
      acc[i][v] = acc_in ? _mm512_load_ps(acc_in + i * NR + 16 * v) : _mm512_setzero_ps();
}

/* The raw sums to acc_out when another k block follows, else C (stores
 * specialised per dtype so the per-row code has no switch). */
SK_ALWAYS_INLINE void tile_finish(size_t mr, size_t nr, __m512 acc[MR][NV], float *acc_out, const float *bias,
                                  void *c, size_t ldc, sk_dtype c_dtype) {
  if (acc_out) {
#pragma GCC unroll 16
    for (size_t i = 0; i < MR; i++)
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++) _mm512_store_ps(acc_out + i * NR + 16 * v, acc[i][v]);
    return;
  }
  switch (c_dtype) {
    case SK_FP16: store_tile(mr, nr, acc, bias, c, ldc, SK_FP16); break;
    case SK_BF16: store_tile(mr, nr, acc, bias, c, ldc, SK_BF16); break;
    default: store_tile(mr, nr, acc, bias, c, ldc, SK_FP32); break;
  }
}

/* How far ahead a 16-bit panel is prefetched. Tiles of 16-bit panels have
 * at most SK_GEMM_DIRECT16_MAX_M rows, so their weights stream from memory,
 * and the hardware prefetcher alone left bandwidth unused on AMD Zen 5.
 *   - Up to 4 rows the tile is bound by that stream and reads each byte
 *     once: non-temporal (NTA, no L2 allocation), 4 KiB ahead, measured
 *     best of NTA 1-8 KiB, T0 4-8 KiB, T1 8-16 KiB on the DeepSeek-V2-Lite
 *     layer at T = 1 (about 15% over T0, which gained 5-10% over none).
 *   - More rows compute 16 FMAs per 64-byte line, and the tile's next row
 *     block reads the panel again: T0, into every cache level. Without it
 *     (bench_gemm_large --dtype bf16, 1 thread, AMD Zen 5) 8 rows of
 *     2048 x 2816 took 700 us (16 GB/s of weights), with it 410-450; 12
 *     rows 960 -> 680-720, 32 rows 1880 -> 1470-1570 (T0 4-8% ahead of NTA
 *     there). */
#ifndef SK_GEMM_PANEL16_PREFETCH_BYTES
#define SK_GEMM_PANEL16_PREFETCH_BYTES 4096
#endif
#define PANEL16_PREFETCH_BYTES SK_GEMM_PANEL16_PREFETCH_BYTES

/* The hint must be a constant where _mm_prefetch is a macro (unoptimized
 * builds), hence two calls rather than a chosen hint. */
SK_ALWAYS_INLINE void prefetch_panel16(const char *at, size_t rows) {
  if (rows <= 4 && sk__stream_nta) _mm_prefetch(at, _MM_HINT_NTA);
  else _mm_prefetch(at, _MM_HINT_T0);
}

#endif

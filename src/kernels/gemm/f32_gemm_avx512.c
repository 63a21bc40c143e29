/* AVX-512 GEMM path (F/BW/DQ/VL + F16C): packing with hardware conversion
 * and a register-blocked MR x NR micro-kernel, in two forms: on fp32 panels,
 * and on 16-bit (fp16 / bf16) constant panels widened in registers as they
 * are loaded (gemm.c uses it for tiles of few rows).
 *
 * Tile 8 x 32: 16 zmm accumulators, 2 B vectors, 1 broadcast. On Zen 4 a zmm
 * FMA issues once per cycle (two double-pumped 256-bit pipes, latency 4), so
 * any tile with >= 8 accumulators is FMA-bound and the choice comes down to
 * edge waste and memory streams. Measured (one tile, fp16, packing included;
 * peak measured at 117 GFLOP/s): 8x32 and 4x64 ~113 GFLOP/s, 6x64 ~112,
 * 10x32 ~111, 12x32 ~110, 16x16 ~107, 14x32 ~105 (256 rows are not a
 * multiple of 14; and at k = 2048 it fell to 45-80 GFLOP/s), 8x48 ~101.
 * 8x32 divides the seed shapes exactly and keeps few A streams.
 * SK_GEMM_AVX512_MR/NR override the tile at build time for tuning.
 */
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

SK_ALWAYS_INLINE void pack_a_impl(size_t mr, size_t k, const void *a, size_t lda,
                                  sk_dtype dtype, float *dst) {
  const size_t stride = sk__gemm_a_stride(k);
  for (size_t i = 0; i < mr; i++)
    for (size_t p = 0; p < k; p += 16) /* stride >= k rounded up: full stores fit */
      _mm512_store_ps(dst + i * stride + p, load_f32(a, dtype, i * lda + p, lane_mask(k - p, 0)));
}

static void pack_a_avx512(size_t mr, size_t k, const void *a, size_t lda, sk_dtype dtype,
                          float *dst) {
  /* One specialised loop per dtype (dtype is a constant after inlining). */
  switch (dtype) {
    case SK_FP16: pack_a_impl(mr, k, a, lda, SK_FP16, dst); break;
    case SK_BF16: pack_a_impl(mr, k, a, lda, SK_BF16, dst); break;
    default: pack_a_impl(mr, k, a, lda, SK_FP32, dst); break;
  }
}

SK_ALWAYS_INLINE void pack_b_impl(size_t k, size_t nc, const void *b, size_t ldb,
                                  sk_dtype dtype, float *dst) {
  for (size_t j0 = 0; j0 < nc; j0 += NR) {
    float *panel = dst + j0 * k;
    __mmask16 m[NV];
    for (size_t v = 0; v < NV; v++) m[v] = lane_mask(nc - j0, v);
    for (size_t p = 0; p < k; p++)
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++)
        _mm512_store_ps(panel + p * NR + 16 * v, load_f32(b, dtype, p * ldb + j0 + 16 * v, m[v]));
  }
}

static void pack_b_avx512(size_t k, size_t nc, const void *b, size_t ldb, sk_dtype dtype,
                          float *dst) {
  switch (dtype) {
    case SK_FP16: pack_b_impl(k, nc, b, ldb, SK_FP16, dst); break;
    case SK_BF16: pack_b_impl(k, nc, b, ldb, SK_BF16, dst); break;
    default: pack_b_impl(k, nc, b, ldb, SK_FP32, dst); break;
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

/* Element i of a panel as a vector of 16: fp32 panels as they are, 16-bit
 * ones (fp16, bf16) widened in registers (exactly). */
SK_ALWAYS_INLINE __m512 panel_vector(const void *w, size_t i, sk_dtype dtype) {
  if (dtype == SK_FP32) return _mm512_load_ps((const float *)w + i);
  __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)w + i));
  if (dtype == SK_FP16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
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
#define PANEL16_PREFETCH_BYTES 4096

/* The hint must be a constant where _mm_prefetch is a macro (unoptimized
 * builds), hence two calls rather than a chosen hint. */
SK_ALWAYS_INLINE void prefetch_panel16(const char *at, size_t rows) {
  if (rows <= 4) _mm_prefetch(at, _MM_HINT_NTA);
  else _mm_prefetch(at, _MM_HINT_T0);
}

/* The k loop over the first `rows` rows: for each p,
 * acc[i] = fma(A[i,p], W[p,:], acc[i]) in order, W a panel of w_dtype. */
SK_ALWAYS_INLINE void k_loop(size_t rows, size_t k, const float *const a[MR], const void *w, sk_dtype w_dtype,
                             __m512 acc[MR][NV]) {
  for (size_t p = 0; p < k; p++) {
    __m512 b[NV];
    if (w_dtype != SK_FP32)
      prefetch_panel16((const char *)w + p * NR * sizeof(uint16_t) + PANEL16_PREFETCH_BYTES, rows);
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) b[v] = panel_vector(w, p * NR + 16 * v, w_dtype);
#pragma GCC unroll 16
    for (size_t i = 0; i < rows; i++) {
      __m512 av = _mm512_set1_ps(a[i][p]);
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_fmadd_ps(av, b[v], acc[i][v]);
    }
  }
}

/* k_loop for the rows there are: a decode step's few rows would otherwise
 * pay for all MR. */
SK_ALWAYS_INLINE void k_loop_rows(size_t mr, size_t k, const float *const rows[MR], const void *w, sk_dtype w_dtype,
                                  __m512 acc[MR][NV]) {
  switch (mr < MR ? mr : MR) {
    case 1: k_loop(1, k, rows, w, w_dtype, acc); break;
    case 2: k_loop(2, k, rows, w, w_dtype, acc); break;
    case 3: k_loop(3, k, rows, w, w_dtype, acc); break;
    case 4: k_loop(4, k, rows, w, w_dtype, acc); break;
    default: k_loop(MR, k, rows, w, w_dtype, acc); break;
  }
}

/* Row pointers (rows past mr repeat the last row: harmless loads, results
 * not stored) and the accumulators' start. */
SK_ALWAYS_INLINE void tile_start(size_t mr, const float *a, size_t a_stride, const float *acc_in,
                                 const float *rows[MR], __m512 acc[MR][NV]) {
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) rows[i] = a + (i < mr ? i : mr - 1) * a_stride;
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

#define SK__CAT5(a, b, c, d, e) a##b##c##d##e
#define SK__UKERNEL_NAME(prefix, mr, nr) SK__CAT5(prefix, mr, x, nr, __avx512)
#define UKERNEL SK__UKERNEL_NAME(sk__f32_gemm_ukernel_, SK_GEMM_AVX512_MR, SK_GEMM_AVX512_NR)
#define UKERNEL16 SK__UKERNEL_NAME(sk__f32_gemm_ukernel16_, SK_GEMM_AVX512_MR, SK_GEMM_AVX512_NR)

void UKERNEL(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const float *w,
             const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
             sk_dtype c_dtype);

void UKERNEL(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const float *w,
             const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
             sk_dtype c_dtype) {
  const float *rows[MR];
  __m512 acc[MR][NV];
  tile_start(mr, a, a_stride, acc_in, rows, acc);
  k_loop_rows(mr, k, rows, w, SK_FP32, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

void UKERNEL16(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const uint16_t *w,
               sk_dtype w_dtype, const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
               sk_dtype c_dtype);

void UKERNEL16(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride, const uint16_t *w,
               sk_dtype w_dtype, const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc,
               sk_dtype c_dtype) {
  const float *rows[MR];
  __m512 acc[MR][NV];
  tile_start(mr, a, a_stride, acc_in, rows, acc);
  if (w_dtype == SK_FP16) k_loop_rows(mr, k, rows, w, SK_FP16, acc);
  else k_loop_rows(mr, k, rows, w, SK_BF16, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

const sk__gemm_config sk__f32_gemm_config_avx512 = {MR, NR, pack_a_avx512, pack_b_avx512, UKERNEL, UKERNEL16};

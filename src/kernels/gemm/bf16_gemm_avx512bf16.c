/* AVX512-BF16 GEMM path: bf16 rows of A times bf16 weights with VDPBF16PS,
 * two k steps an instruction, in the bits of the bf16 contract
 * (bf16_contract.h): the instruction takes the odd step of each pair first
 * and flushes denormals, which is the contract; the epilogue's bias add runs
 * under MXCSR.FTZ/DAZ, which the driver sets for every bf16-weight tile.
 *
 * Panels (sk__gemm_pack_b for this ISA, or the driver per tile): per pair
 * of k rows, NR 32-bit lanes, lane j holding B[2i][j] in its low half and
 * B[2i+1][j] in its high half: one vector of 16 lanes is 16 columns times
 * two k steps. A rows are bf16 as they lie (a pair is one 32-bit broadcast).
 *
 * The tile is the FMA path's 8 x 32 (avx512_tile.h): 16 accumulators, and
 * per pair of k steps 2 panel loads and 8 broadcasts for 16 instructions. */
#include "kernels/gemm/avx512_tile.h"

/* acc[i] += A[i, 2q..2q+1] . W[2q..2q+1, :] over the kp pairs, for the first
 * `rows` rows. */
SK_ALWAYS_INLINE void dot_loop(size_t rows, size_t kp, const uint32_t *const a[MR], const uint32_t *w,
                               __m512 acc[MR][NV]) {
  for (size_t q = 0; q < kp; q++) {
    /* A pair step reads NR * 4 bytes: every 64-byte line is prefetched. */
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) prefetch_panel16((const char *)(w + q * NR + 16 * v) + PANEL16_PREFETCH_BYTES, rows);
    __m512bh b[NV];
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; v++) b[v] = (__m512bh)_mm512_load_si512((const void *)(w + q * NR + 16 * v));
#pragma GCC unroll 16
    for (size_t i = 0; i < rows; i++) {
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[i][q]);
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, b[v]);
    }
  }
}

SK_ALWAYS_INLINE void dot_loop_rows(size_t mr, size_t kp, const uint32_t *const rows[MR], const uint32_t *w,
                                    __m512 acc[MR][NV]) {
  switch (mr < MR ? mr : MR) { /* a decode step's few rows would otherwise pay for all MR */
    case 1: dot_loop(1, kp, rows, w, acc); break;
    case 2: dot_loop(2, kp, rows, w, acc); break;
    case 3: dot_loop(3, kp, rows, w, acc); break;
    case 4: dot_loop(4, kp, rows, w, acc); break;
    default: dot_loop(MR, kp, rows, w, acc); break;
  }
}

#define SK__CAT5(a, b, c, d, e) a##b##c##d##e
#define SK__UKERNEL_NAME(prefix, mr, nr) SK__CAT5(prefix, mr, x, nr, __avx512bf16)
#define UKERNEL SK__UKERNEL_NAME(sk__bf16_gemm_ukernel_, SK_GEMM_AVX512_MR, SK_GEMM_AVX512_NR)

void UKERNEL(size_t mr, size_t nr, size_t kp, const uint32_t *a, size_t a_stride, const uint32_t *w, size_t w_lanes,
             const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc, sk_dtype c_dtype);

/* w_lanes is NR here: the AVX-512 panels' width. */
void UKERNEL(size_t mr, size_t nr, size_t kp, const uint32_t *a, size_t a_stride, const uint32_t *w, size_t w_lanes,
             const float *acc_in, float *acc_out, const float *bias, void *c, size_t ldc, sk_dtype c_dtype) {
  (void)w_lanes;
  const uint32_t *rows[MR];
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (size_t i = 0; i < MR; i++) rows[i] = a + (i < mr ? i : mr - 1) * a_stride;
  acc_start(acc_in, acc);
  dot_loop_rows(mr, kp, rows, w, acc);
  tile_finish(mr, nr, acc, acc_out, bias, c, ldc, c_dtype);
}

const sk__gemm_dot_config sk__bf16_gemm_config_avx512bf16 = {MR, NR, UKERNEL, NULL, NULL};

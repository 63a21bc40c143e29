/* Internals shared by the GEMM driver (gemm.c) and the per-ISA files.
 *
 * Data flow of sk__gemm_tile (see gemm.c for the loops):
 *   - B is packed, NC columns at a time, into NR-column micro-panels: panel j
 *     holds k rows of NR contiguous fp32 values (columns past n are zero).
 *   - The MR rows of A a micro-kernel needs are copied (converted to fp32)
 *     into rows of stride sk__gemm_a_stride(k); the copy is cheap next to
 *     the k * NR FMAs per element that follow, and it makes the stride the
 *     kernel sees independent of the caller's lda.
 *   - The micro-kernel reads MR row pointers of A (rows past mr repeat the
 *     last valid row, whose results are simply not stored), keeps an MR x NR
 *     block of fp32 accumulators in registers over a block of k, then adds
 *     the bias, rounds to c's dtype and stores the valid part.
 *   - Large k is cut into blocks of KC steps so the A rows (MR x KC) stay in
 *     L1 and the packed B block (KC x NC) in L2. Between blocks the fp32
 *     accumulators wait in a scratch buffer and are reloaded, so every sum is
 *     still the one sequential fmaf chain of the contract.
 */
#ifndef SK_KERNELS_GEMM_INTERNAL_H
#define SK_KERNELS_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/gemm/gemm.h"
#include "kernels/packed_groups.h"

/* Converts rows [0, mr) of A (row stride lda elements, k columns) to fp32
 * rows of stride sk__gemm_a_stride(k) at dst. With swap_pairs (bf16
 * weights, bf16_contract.h) each row runs to k rounded up to even, a zero
 * step padding an odd k, and each pair of steps is stored swapped, the odd
 * one first: done in the conversion's registers, where a pass of its own
 * cost 4-14% of a bf16 GEMM on AVX2 (one swap per element read against 64
 * FMAs per element on a tile of few rows). */
typedef void (*sk__gemm_pack_a_fn)(size_t mr, size_t k, const void *a, size_t lda,
                                   sk_dtype a_dtype, int swap_pairs, float *dst);

/* Packs columns [0, nc) of the k rows of B (row stride ldb elements) into
 * ceil(nc / NR) micro-panels of k * NR fp32 values each, zero-padded. */
typedef void (*sk__gemm_pack_b_fn)(size_t k, size_t nc, const void *b, size_t ldb,
                                   sk_dtype b_dtype, float *dst);

/* One micro-tile over k steps of A and W: a holds mr (1..MR) rows of stride
 * a_stride, w one packed panel (k rows of NR floats).
 *   - The accumulators start at zero, or, when acc_in is not NULL, at the
 *     MR x NR fp32 values there (row-major, 64-byte aligned): the sums of
 *     the previous k block, so K blocking continues each fmaf chain exactly.
 *   - When acc_out is not NULL the MR x NR accumulators are stored there as
 *     they are (all of them, padding included) and nothing else happens.
 *   - Otherwise C[0:mr, 0:nr] = round(acc + bias): bias NR fp32 values or
 *     NULL, c points at C[0,0] of the block, ldc in elements of c_dtype.
 * acc_in and acc_out may be the same buffer. */
typedef void (*sk__gemm_ukernel_fn)(size_t mr, size_t nr, size_t k, const float *a,
                                    size_t a_stride, const float *w, const float *acc_in,
                                    float *acc_out, const float *bias, void *c, size_t ldc,
                                    sk_dtype c_dtype);

/* The micro-kernel on a 16-bit panel (fp16 or bf16 as sk__gemm_pack_b
 * stores them, w_dtype saying which): each vector of W is widened in
 * registers as it is used (exactly), so the sums are those of ukernel on
 * the widened panel. For few rows (a decode step) it saves the widening
 * pass, which writes and reads back twice the bytes the weights have. */
typedef void (*sk__gemm_ukernel16_fn)(size_t mr, size_t nr, size_t k, const float *a, size_t a_stride,
                                      const uint16_t *w, sk_dtype w_dtype, const float *acc_in, float *acc_out,
                                      const float *bias, void *c, size_t ldc, sk_dtype c_dtype);

typedef struct sk__gemm_config {
  const char *name, *name_bf16; /* sk__gemm_kernel_name's, for other and bf16 weights */
  int mr, nr;
  sk__gemm_pack_a_fn pack_a;
  sk__gemm_pack_b_fn pack_b;
  sk__gemm_ukernel_fn ukernel;
  sk__gemm_ukernel16_fn ukernel16; /* NULL: the panels are widened first */
} sk__gemm_config;

/* One configuration per ISA file. */
extern const sk__gemm_config sk__f32_gemm_config_scalar;
extern const sk__gemm_config sk__f32_gemm_config_avx2;
extern const sk__gemm_config sk__f32_gemm_config_avx512;

/* The bf16 dot-product micro-kernel (bf16 A, bf16 weights): a holds mr rows
 * of kp bf16 pairs (32 bits each, stride a_stride pairs), w one panel's
 * K block in the pair layout (kp rows of w_lanes 32-bit lanes, lane j
 * holding B[2q][j] low and B[2q+1][j] high; w_lanes is the ISA's panel
 * width, the kernel's nr except for the AMX contract emulated below
 * AVX-512). acc_in, acc_out (MR x the kernel's NR), bias and the store as
 * for sk__gemm_ukernel_fn; the driver holds MXCSR.FTZ/DAZ. */
typedef void (*sk__gemm_dot_ukernel_fn)(size_t mr, size_t nr, size_t kp, const uint32_t *a, size_t a_stride,
                                        const uint32_t *w, size_t w_lanes, const float *acc_in, float *acc_out,
                                        const float *bias, void *c, size_t ldc, sk_dtype c_dtype);

typedef struct sk__gemm_dot_config {
  int mr, nr; /* nr equals the AVX-512 FMA config's: the two share packed layouts' panel widths */
  sk__gemm_dot_ukernel_fn ukernel;
  /* NULL, or the kernel's own loop over a tile of C[m0:m1, n0:n1] for
   * weights packed whole (p->b_packed, panels of nr lanes, n0 on a
   * panel): each block's sums over all of k at once, no carries between
   * K blocks. Called under the driver's MXCSR with the tile's workspace,
   * of which it uses whole_k_workspace(tile rows, k) bytes. */
  void (*whole_k)(const sk__gemm_problem *p, size_t m0, size_t m1, size_t n0, size_t n1, void *workspace);
  size_t (*whole_k_workspace)(size_t tile_m, size_t k);
} sk__gemm_dot_config;

extern const sk__gemm_dot_config sk__bf16_gemm_config_avx512bf16;
/* The AMX contract's kernel (bf16_gemm_amx.c): TDPBF16PS where the CPU has
 * AMX-BF16, the same tiles emulated (amx_tiles.h) elsewhere. 32 x 32. */
extern const sk__gemm_dot_config sk__bf16_gemm_config_amx;
extern const sk__gemm_dot_config sk__bf16_gemm_config_amx_emulated;

/* Whether packed bf16 weights for isa and numerics are in the pair layout
 * (the dot kernels'): always for the AMX contract, else where VDPBF16PS is
 * used. */
int sk__gemm_pair_layout(sk__isa isa, sk_numerics numerics);

/* The FMA configuration for isa (AMX and AVX512_BF16 add no fp32 kernel:
 * theirs is AVX-512's). */
const sk__gemm_config *sk__gemm_config_for(sk__isa isa);

/* K blocking. Up to KC_MAX steps run as one block (what the seed's shapes
 * and most small layers need, with no scratch traffic at all); longer k is
 * cut into blocks of KC steps: the MR rows of A then take MR * KC floats
 * (6-8 KiB) and stay in L1 across the micro-panels. Both even, so blocks of
 * bf16 weights hold whole pairs. */
#ifndef SK_GEMM_KC
#define SK_GEMM_KC 256
#endif
#define SK__GEMM_KC_MAX (2 * SK_GEMM_KC)

static inline size_t sk__gemm_kc_for(size_t k) { return k <= SK__GEMM_KC_MAX ? k : SK_GEMM_KC; }

/* The k steps panels and tiles run: bf16 weights pad an odd k with one zero
 * step, so that the steps go in whole pairs (bf16_contract.h). */
static inline size_t sk__gemm_k_steps(sk_dtype b_dtype, size_t k) { return b_dtype == SK_BF16 ? k + (k & 1) : k; }

/* Whether B's panels hold its own 16 bits (fp16, bf16) rather than fp32. */
static inline int sk__gemm_is_16bit(sk_dtype dtype) { return dtype == SK_FP16 || dtype == SK_BF16; }

/* The packed layout (sk__gemm_pack_b): panels (NR columns each, past n
 * zero) in groups of SK_PACKED_GROUP_COLUMNS / NR, the last group holding
 * what is left; group after group; in a group, K block after K block
 * (sk__gemm_kc_for(ks) steps each, the last shorter); in a K block, the
 * group's panels, kc x NR values each.
 *   - A group is one contiguous run over all of k, and the tile loop reads
 *     it in that order (a K block's panels, then the next K block's), so a
 *     tile of whole groups streams one run of weights from start to end:
 *     what a decode step is (packed_groups.h).
 *   - A K block of a group is one run too: the tile reads it in place, or
 *     widens it in one call, and the rows of A packed for it stay in L1
 *     across the group's panels.
 * ks is sk__gemm_k_steps. Returns panel j's K block starting at step pc, in
 * elements from the start. */
static inline size_t sk__gemm_packed_offset(size_t nr, size_t ks, size_t n_panels, size_t j, size_t pc) {
  const size_t group = SK_PACKED_GROUP_COLUMNS / nr, g = j / group, r = j % group, kb = sk__gemm_kc_for(ks);
  const size_t in_group = n_panels - g * group < group ? n_panels - g * group : group;
  const size_t kc = ks - pc < kb ? ks - pc : kb;
  return (g * group * ks + pc * in_group + r * kc) * nr;
}

/* bf16 weights for the tiles: rows [pc, pc + kc) (kc even; zero at and past
 * k) of columns [j0, j0 + cols) of B (bf16, row stride ldb), zero up to nr
 * columns, as one panel K block at out (kc * nr values):
 *   - dot: the pair layout of sk__gemm_dot_ukernel_fn;
 *   - else rows, each pair's odd row first (the contract's order, read by
 *     the FMA kernels as a plain sequence). */
void sk__gemm_pack_bf16_block(int dot, const uint16_t *b, size_t ldb, size_t k, size_t pc, size_t kc, size_t j0,
                              size_t cols, size_t nr, uint16_t *out);

/* The same block for the FMA kernels as fp32 (widened, pairs swapped). */
void sk__gemm_pack_bf16_block_f32(const uint16_t *b, size_t ldb, size_t k, size_t pc, size_t kc, size_t j0,
                                  size_t cols, size_t nr, float *out);

/* A panel K block of the pair layout (kc steps, nr lanes) widened to the
 * FMA kernels' fp32 rows, each pair's odd row first: fp32 or fp16 rows of A
 * on a dot-product ISA, whose packed bf16 weights are in the pair layout. */
void sk__gemm_widen_pairs(size_t kc, size_t nr, const uint16_t *pairs, float *out);

/* Row stride of packed A rows: k rounded up to whole 64-byte lines (so every
 * row starts aligned), then to an odd number of lines. The micro-kernel walks
 * MR rows in lockstep; with a stride of an even number of lines (worst: a
 * multiple of 4 KiB, e.g. k = 1024) the rows would map to the same few L1
 * sets and evict each other, while an odd line count spreads any 64
 * consecutive rows over distinct sets. */
static inline size_t sk__gemm_a_stride(size_t k) {
  size_t lines = (k + 15) / 16;
  return 16 * (lines | 1);
}

/* NaN results: x86 FMA units pick which input NaN's payload to propagate by
 * operand *encoding* position (which differs between the 132/213/231 forms a
 * compiler chooses, and from libm's software fmaf), so payloads cannot be
 * made to agree across paths. Every path therefore stores a NaN result as
 * the canonical quiet NaN of c's dtype; all other values are exact. */
#define SK__GEMM_NAN_F32 0x7FC00000u
#define SK__GEMM_NAN_F16 0x7E00u
#define SK__GEMM_NAN_BF16 0x7FC0u

static inline float sk__gemm_load_scalar(const void *p, sk_dtype dtype, size_t i) {
  switch (dtype) {
    case SK_FP16: return sk_fp16_to_fp32(((const uint16_t *)p)[i]);
    case SK_BF16: return sk_bf16_to_fp32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
  }
}

/* Stores y (the fp32 result) into element i of c, with the NaN rule above. */
static inline void sk__gemm_store_scalar(void *c, sk_dtype dtype, size_t i, float y) {
  int nan = y != y;
  switch (dtype) {
    case SK_FP16:
      ((uint16_t *)c)[i] = nan ? (uint16_t)SK__GEMM_NAN_F16 : sk_fp32_to_fp16(y);
      break;
    case SK_BF16:
      ((uint16_t *)c)[i] = nan ? (uint16_t)SK__GEMM_NAN_BF16 : sk_fp32_to_bf16(y);
      break;
    default:
      if (nan) {
        uint32_t u = SK__GEMM_NAN_F32;
        memcpy(&y, &u, sizeof y);
      }
      ((float *)c)[i] = y;
      break;
  }
}

#endif

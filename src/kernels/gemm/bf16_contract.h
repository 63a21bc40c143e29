/* The arithmetic of a product with bf16 weights, written out as plain C: the
 * oracle (sk__gemm_reference) and the characterization test use it; every
 * kernel computes the same bits with the CPU's own instructions.
 *
 * Weights (B) in bf16: the k steps go in pairs, k padded to even with a zero
 * step, and within each pair the odd step first:
 *
 *   acc = +0.0f
 *   for i = 0 .. ceil(k/2)-1:  acc = step(A[2i+1], B[2i+1], acc)   (zero when 2i+1 = k)
 *                              acc = step(A[2i],   B[2i],   acc)
 *   y = bias ? step(1, bias, acc) : acc
 *
 * where step(a, b, c) is a fused multiply-add (one rounding to nearest even)
 * whose denormal operands are read as zero of their sign (DAZ) and whose
 * result is stored as zero of its sign when, rounded to fp32's 24 bits with
 * an unbounded exponent, it is below 2^-126 in magnitude (FTZ; x86 detects
 * tininess after rounding). This is what VDPBF16PS computes, measured on AMD
 * Zen 4 and Zen 5 (tests/test_bf16_dot.c checks it on every CPU that has the
 * instruction, and the library checks it again before using it), and what
 * an FMA chain computes on the pair-swapped order with MXCSR.FTZ and DAZ set:
 * so AVX-512 BF16 dot products, AVX-512 and AVX2 FMAs and this scalar code
 * give the same bits. fp32 and fp16 weights keep the plain sequential chain
 * (gemm.h). */
#ifndef SK_KERNELS_GEMM_BF16_CONTRACT_H
#define SK_KERNELS_GEMM_BF16_CONTRACT_H

#include <math.h>

/* MXCSR bits the kernels set around a bf16-weight tile: FTZ (bit 15) and
 * DAZ (bit 6). */
#define SK__MXCSR_FTZ_DAZ 0x8040u

/* DAZ: a denormal read as zero of its sign. */
static inline float sk__bf16_daz(float x) { return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x; }

/* step(a, b, c) of the contract above, from the IEEE fmaf (one rounding,
 * gradual underflow). Only a result near or below 2^-126 needs more: there
 * the operands are scaled by 2^64 (exact; the smaller factor, so nothing
 * overflows: a tiny nonzero result needs |a*b| and |c| below 2^60) and the
 * scaled fmaf rounds to 24 bits with the unbounded exponent that tininess
 * is judged on. Independent of the caller's MXCSR. */
static inline float sk__bf16_step(float a, float b, float c) {
  a = sk__bf16_daz(a);
  b = sk__bf16_daz(b);
  c = sk__bf16_daz(c);
  float r = fmaf(a, b, c);
  if (!(fabsf(r) < 0x1p-125f)) return r; /* normal results, Inf and NaN */
  if (r == 0.0f) return r;                 /* exact cancellation, or below 2^-150: a signed zero either way */
  if (fabsf(a) > fabsf(b)) {
    float t = a;
    a = b;
    b = t;
  }
  float scaled = fmaf(a * 0x1p64f, b, c * 0x1p64f);
  if (fabsf(scaled) < 0x1p-62f) return copysignf(0.0f, scaled);
  return scaled * 0x1p-64f; /* exact: a normal fp32 value */
}

/* The AMX contract (SK_NUMERICS_AMX, bf16 A times bf16 B; docs/ops.md,
 * "Numerics"): what TDPBF16PS computes (the Intel SDM's definition,
 * amx_tiles.h's emulation; tests/test_bf16_amx.c holds the instruction to
 * it), with k cut into blocks of 32 values from 0, one instruction's, and
 * zero-padded to a whole block:
 *
 *   acc = +0.0f
 *   for each block of 32 k values, in order:
 *     even = +0.0f, odd = +0.0f
 *     for i = 0 .. 15:  even = step(A[2i],   B[2i],   even)      (the block's 2i-th value)
 *                       odd  = step(A[2i+1], B[2i+1], odd)
 *     acc = step(1, acc, step(1, even, odd))
 *   y = bias ? step(1, bias, acc) : acc
 *
 * with step as above (DAZ, FTZ; past k, A and B are +0). */
#define SK__AMX_BF16_K 32

/* One block of the AMX contract: a (k values) and b (stride b_step) over
 * [q0, q0 + 32), added to acc. */
static inline float sk__bf16_amx_block(const float *a, const float *b, size_t b_step, size_t k, size_t q0,
                                       float acc) {
  float even = 0.0f, odd = 0.0f;
  for (size_t q = q0; q < q0 + SK__AMX_BF16_K; q += 2) {
    even = q < k ? sk__bf16_step(a[q], b[q * b_step], even) : sk__bf16_step(0.0f, 0.0f, even);
    odd = q + 1 < k ? sk__bf16_step(a[q + 1], b[(q + 1) * b_step], odd) : sk__bf16_step(0.0f, 0.0f, odd);
  }
  return sk__bf16_step(1.0f, acc, sk__bf16_step(1.0f, even, odd));
}

#endif

/* Array conversions between any two dtypes, the engine of the cast op and of
 * every kernel that stores fp16 / bf16.
 *
 * Rules (the scalar definitions in core/dtype.c and convert_scalar.h are
 * the reference; every ISA path gives the same bits):
 *   float -> float   exact widening; narrowing rounds to nearest even, NaN
 *                    stays NaN, overflow gives Inf, subnormals are produced
 *   int   -> float   rounded to nearest even (int32/int64 -> fp32 as C does;
 *                    to fp16 / bf16 rounded once from the exact integer)
 *   float -> int     truncated toward zero (C, numpy astype), saturated to the
 *                    target range, NaN -> 0
 *   int   -> int     two's-complement wrap (keep the low bits), as numpy
 *   x     -> bool    x != 0 (NaN is true, -0.0 false), stored as 0 / 1
 *   bool  -> x       0 or 1 (any nonzero byte reads as 1)
 *   same  -> same    a copy (bool bytes other than 0 / 1 are kept)
 * uint8 is an int here: float -> uint8 saturates to [0, 255].
 */
#ifndef SK_KERNELS_CONVERT_H
#define SK_KERNELS_CONVERT_H

#include <stddef.h>

#include "core/cpu.h"
#include "superkernel.h"

/* One path's conversion: 1 when it converted the whole array, 0 when it
 * has no code for the pair, and the next path down (`lower`) is tried; the
 * scalar path converts every pair. Adding an ISA: its file (convert_isa.h)
 * and its line in convert.c's table. */
typedef struct sk__convert_kernels {
  const char *name; /* "avx512", "avx2", "scalar" */
  int (*convert)(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype, size_t n);
  const struct sk__convert_kernels *lower;
} sk__convert_kernels;

/* The path for isa (a node's io->isa), never one the CPU lacks. */
const sk__convert_kernels *sk__convert_config_for(sk__isa isa);

/* Converts n elements from src (src_dtype) to dst (dst_dtype) on
 * sk__convert_config_for(isa)'s path. src and dst must not overlap unless
 * they are the same pointer with equal dtypes. */
void sk__convert(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype,
                 size_t n, sk__isa isa);

/* Plain one-element-at-a-time reference of sk__convert (the test oracle). */
void sk__convert_reference(const void *src, sk_dtype src_dtype, void *dst,
                           sk_dtype dst_dtype, size_t n);

/* sk__convert's signature, for an op's code that its reference and its
 * kernel share: the kernel passes sk__convert, the reference
 * sk__convert_reference_isa (sk__convert_reference; isa ignored). */
typedef void (*sk__convert_fn)(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype, size_t n,
                               sk__isa isa);
void sk__convert_reference_isa(const void *src, sk_dtype src_dtype, void *dst, sk_dtype dst_dtype, size_t n,
                               sk__isa isa);

/* Loads element i of a buffer of any dtype as fp32 / stores fp32 into it
 * (rounded per the rules above); for references and odd tails. */
float sk__load_f32(const void *p, sk_dtype dtype, size_t i);
void sk__store_f32(void *p, sk_dtype dtype, size_t i, float v);

#endif

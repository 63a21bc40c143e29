/* The ISA-specific halves of sk__convert, each in its own file built with its
 * own ISA flags. Each returns 1 when it converted the whole array and 0 when
 * it has no fast path for the pair (the caller then runs the reference).
 * Only called when the CPU supports the ISA; n > 0 and dtypes differ. */
#ifndef SK_KERNELS_CONVERT_ISA_H
#define SK_KERNELS_CONVERT_ISA_H

#include <stddef.h>

#include "superkernel.h"

int sk__convert_avx2(const void *src, sk_dtype src_dtype, void *dst,
                     sk_dtype dst_dtype, size_t n);
int sk__convert_avx512(const void *src, sk_dtype src_dtype, void *dst,
                       sk_dtype dst_dtype, size_t n);

/* Redoes element i with the reference: for lanes whose intermediate is NaN,
 * so NaN results are exactly the scalar definition's. */
void sk__convert_fix_lane(const void *src, sk_dtype src_dtype, void *dst,
                          sk_dtype dst_dtype, size_t i);

#endif

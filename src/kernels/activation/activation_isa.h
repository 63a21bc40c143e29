/* The ISA-specific halves of the sk__*_array functions, each in its own file
 * built with its own ISA flags (and -ffp-contract=off, so every multiply-add
 * is the explicit fused one the scalar definition uses). Only called when
 * the CPU supports the ISA. */
#ifndef SK_KERNELS_ACTIVATION_ISA_H
#define SK_KERNELS_ACTIVATION_ISA_H

#include <stddef.h>

void sk__expf_avx2(const float *x, float *y, size_t n);
void sk__sigmoidf_avx2(const float *x, float *y, size_t n);
void sk__siluf_avx2(const float *x, float *y, size_t n);

void sk__expf_avx512(const float *x, float *y, size_t n);
void sk__sigmoidf_avx512(const float *x, float *y, size_t n);
void sk__siluf_avx512(const float *x, float *y, size_t n);

#endif

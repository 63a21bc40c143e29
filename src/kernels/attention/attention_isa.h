/* The ISA-specific halves of sk__attention_kernels, each in its own file
 * built with its own flags and -ffp-contract=off. Only called when the CPU
 * supports the ISA. */
#ifndef SK_KERNELS_ATTENTION_ISA_H
#define SK_KERNELS_ATTENTION_ISA_H

#include <stddef.h>

void sk__attn_dots_avx2(const float *q, size_t n, const float *k, size_t d, float *out, size_t stride);
void sk__attn_accumulate_avx2(float *o, const float *p, size_t n, const float *v, size_t d);
void sk__attn_dots_avx512(const float *q, size_t n, const float *k, size_t d, float *out, size_t stride);
void sk__attn_accumulate_avx512(float *o, const float *p, size_t n, const float *v, size_t d);

#endif

/* The ISA-specific halves of sk__attention_kernels, each in its own file
 * built with its own flags and -ffp-contract=off. Only called when the CPU
 * supports the ISA. */
#ifndef SK_KERNELS_ATTENTION_ISA_H
#define SK_KERNELS_ATTENTION_ISA_H

#include <stddef.h>
#include <stdint.h>

#define SK_ATTN_ISA_DECL(isa)                                                                                     \
  void sk__attn_dots_##isa(const float *q, size_t nh, const float *k, size_t ks, size_t nk, size_t d, float *out, \
                           size_t stride);                                                                        \
  void sk__attn_accumulate_##isa(float *o, size_t nh, const float *p, size_t ps, const float *v, size_t vs,       \
                                 size_t nk, size_t d);                                                            \
  void sk__attn_widen_bf16_##isa(const uint16_t *src, size_t stride, size_t n, size_t d, float *dst);            \
  float sk__attn_scale_max_##isa(float *s, size_t n, float scale);                                                \
  void sk__attn_shift_##isa(float *s, size_t n, float m);                                                         \
  void sk__attn_lanes_add_##isa(float *lanes, const float *s, size_t n);

SK_ATTN_ISA_DECL(avx2)
SK_ATTN_ISA_DECL(avx512)

#endif

/* The inner loops of the attention op (src/ops/attention.c), on fp32 rows,
 * one path per ISA, every path bitwise the scalar one:
 *
 *   dots        out[h * stride] = q_h . k for the n rows q_h of d values
 *               (d a multiple of 16): 16 lanes, lane l the fmaf chain over
 *               i = l (mod 16) in increasing i from 0, then the lanes folded
 *               pairwise (l + 8, then + 4, + 2, + 1) — what one AVX-512
 *               register, or two AVX2 ones, hold;
 *   accumulate  o_h[i] = fmaf(p[h], v[i], o_h[i]) for the n rows o_h of d.
 *
 * Both are elementwise or fixed-lane, so a vector path needs no order other
 * than the scalar one. Adding an ISA: its file (attention_isa.h) and its
 * line in attention.c's table. */
#ifndef SK_KERNELS_ATTENTION_H
#define SK_KERNELS_ATTENTION_H

#include <stddef.h>

#include "core/cpu.h"

#define SK_ATTN_LANES 16

typedef struct sk__attention_kernels {
  const char *name; /* "avx512", "avx2", "scalar" */
  void (*dots)(const float *q, size_t n, const float *k, size_t d, float *out, size_t stride);
  void (*accumulate)(float *o, const float *p, size_t n, const float *v, size_t d);
} sk__attention_kernels;

/* The path for isa (a node's io->isa), never one the CPU lacks. */
const sk__attention_kernels *sk__attention_config_for(sk__isa isa);

/* The 16 lane sums folded pairwise (l + 8, + 4, + 2, + 1): the scalar
 * definition every path follows. part is overwritten. */
static inline float sk__attn_fold16(float *part) {
  for (int half = SK_ATTN_LANES / 2; half >= 1; half /= 2)
    for (int l = 0; l < half; l++) part[l] = part[l] + part[l + half];
  return part[0];
}

#endif

/* The inner loops of the attention ops (src/ops/attention.c, mla_attention.c),
 * one path per ISA, every path bitwise the scalar one. They work on a block
 * of at most SK_ATTN_KEYS keys at a time, so a block's rows are read (and
 * widened from bf16) once for every q head of the kv group:
 *
 *   dots        out[h * stride + j] = q_h . k_j for the nh rows q_h of d
 *               values (d a multiple of 16) and the nk key rows k_j (row
 *               stride ks floats): 16 lanes, lane l the fmaf chain over
 *               i = l (mod 16) in increasing i from 0, then the lanes folded
 *               pairwise (l + 8, then + 4, + 2, + 1) — what one AVX-512
 *               register, or two AVX2 ones, hold. The AVX-512 path keeps 16
 *               keys' accumulators in 16 registers and folds them together
 *               (each lane's additions the same), not one key at a time;
 *   accumulate  o_h[i] = fmaf(p[h * ps + j], v_j[i], o_h[i]) for j = 0 ..
 *               nk - 1 in increasing j, for the nh rows o_h of d;
 *   widen_bf16  n bf16 rows (row stride `stride` elements) to fp32 rows of
 *               d: exact, a 16-bit shift;
 *   scale_max   s[j] = s[j] * scale for j < n in place, and returns the
 *               largest, compared in increasing j from -inf as
 *               `m = s[j] > m ? s[j] : m` (a NaN never wins). A vector path
 *               keeps 16 (or 8) running maxima and reduces them at the end:
 *               the same m up to the sign of a zero maximum, which the
 *               softmax only subtracts (s - (+0) == s - (-0) up to the sign
 *               of a zero, and expf(±0) == 1), so p_j is the same;
 *   shift       s[j] = s[j] - m for j < n, in place;
 *   lanes_add   lanes[c] = lanes[c] + s[j] for j = c (mod 16), in
 *               increasing j: the normalizer's 16 lanes continued over n
 *               more scores (n a multiple of 16 except in the last call).
 *
 * All are elementwise or fixed-lane, so a vector path needs no order other
 * than the scalar one. Adding an ISA: its file (attention_isa.h) and its
 * line in attention.c's table. */
#ifndef SK_KERNELS_ATTENTION_H
#define SK_KERNELS_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"

#define SK_ATTN_LANES 16
#define SK_ATTN_KEYS 16 /* keys a dots / accumulate call takes at most */

typedef struct sk__attention_kernels {
  const char *name; /* "avx512", "avx2", "scalar" */
  void (*dots)(const float *q, size_t nh, const float *k, size_t ks, size_t nk, size_t d, float *out, size_t stride);
  void (*accumulate)(float *o, size_t nh, const float *p, size_t ps, const float *v, size_t vs, size_t nk, size_t d);
  void (*widen_bf16)(const uint16_t *src, size_t stride, size_t n, size_t d, float *dst);
  float (*scale_max)(float *s, size_t n, float scale);
  void (*shift)(float *s, size_t n, float m);
  void (*lanes_add)(float *lanes, const float *s, size_t n);
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

/* fp32 rows to int8, exactly as the ops' references write it (docs/ops.md,
 * dequant_swiglu_quant and moe_init_routing): SIMD where baseline x86-64
 * has it, the reference's bits on every float, NaN included. */
#ifndef SK_OPS_INT8_QUANTIZE_H
#define SK_OPS_INT8_QUANTIZE_H

#include <stdint.h>

/* y[c] = clip(rint(o[c] / d + add), -128, 127), NaN -> 0 (rint: half to
 * even), c < h. */
void sk__int8_quantize_row(const float *o, int64_t h, float d, float add, int8_t *y);

/* The dynamic rule: m = max |o| (NaN ignored); m == 0: y all 0, *scale 0;
 * else s = m / 127, y = sk__int8_quantize_row(o, h, s, 0), *scale = s. */
void sk__int8_quantize_dynamic(const float *o, int64_t h, int8_t *y, float *scale);

#endif

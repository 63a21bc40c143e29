/* rotary_embedding's frequencies and cos / sin table (rope_freq.c): what
 * transformers' rotary embedding classes compute (modeling_rope_utils.py:
 * default, _compute_linear_scaling_rope_parameters,
 * _compute_yarn_parameters), in their fp32 operations, with the
 * transcendental functions in double rounded once to fp32. */
#ifndef SK_OPS_ROPE_FREQ_H
#define SK_OPS_ROPE_FREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superkernel.h"

/* Head dims (and so rotary_dim) the params' inv_freq array holds. */
#define ROPE_MAX_DIM 1024

enum { ROPE_NONE = 0, ROPE_LINEAR = 1, ROPE_YARN = 2 };

typedef struct rope_config {
  int64_t rotary_dim, max_positions, original_max_positions;
  bool interleaved, truncate;
  int scaling;
  double theta, factor, beta_fast, beta_slow, mscale, mscale_all_dim, attention_factor;
} rope_config;

typedef struct rope_params {
  rope_config c;
  int64_t t, hq, hk, d;
  sk_dtype dtype;
  float attention_factor;             /* multiplies cos and sin (1 but for yarn) */
  float inv_freq[ROPE_MAX_DIM / 2];   /* rotary_dim / 2 of them */
} rope_params;

/* Whether c's values make sense (theta > 1, factor >= 1, yarn's original
 * positions > 0, ...); else a reason naming the attribute into why. */
bool sk__rope_config_check(const rope_config *c, char *why, size_t why_size);

/* inv_freq[0 .. rotary_dim / 2) and the attention factor, as transformers. */
void sk__rope_inv_freq(const rope_config *c, float *inv_freq, float *attention_factor);

/* The table row of a position: cos of each angle, then sin (rotary_dim
 * floats), angle i = inv_freq[i] * (float)position in fp32. */
void sk__rope_table_row(const rope_config *c, const float *inv_freq, float attention_factor, int64_t position,
                        float *row);

#endif

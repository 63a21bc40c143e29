/* rotary_embedding's frequencies and table (rope_freq.h). Each fp32 step
 * below is one of transformers' torch fp32 operations, in its order (a
 * Python scalar meeting an fp32 tensor is rounded to fp32 first); its
 * Python-float steps (YaRN's correction range and mscale) are done in
 * double, as Python does. pow, cos and sin are libm's double functions
 * rounded once to fp32: nearly always the correctly rounded fp32 value,
 * where torch's fp32 functions are within an ulp of it, and the same on
 * every ISA (the table is made once per program, at compile). */
#include "ops/rope_freq.h"

#include <math.h>
#include <stdio.h>

static double yarn_get_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* find_correction_dim: the dim whose wavelength makes num_rotations turns
 * over the original context. */
static double correction_dim(double num_rotations, double dim, double base, double max_positions) {
  return (dim * log(max_positions / (num_rotations * 2 * M_PI))) / (2 * log(base));
}

static bool finite_at_least(double v, double lo) { return isfinite(v) && v >= lo; }

bool sk__rope_config_check(const rope_config *c, char *why, size_t why_size) {
  const char *bad = NULL;
  if (!(isfinite(c->theta) && c->theta > 1)) bad = "attribute theta: expected a finite value > 1";
  else if (c->scaling != ROPE_NONE && !finite_at_least(c->factor, 1)) bad = "attribute factor: expected a finite value >= 1";
  else if (c->scaling == ROPE_YARN && c->original_max_positions < 1)
    bad = "attribute original_max_positions: yarn needs it (> 0)";
  else if (c->scaling == ROPE_YARN && !(isfinite(c->beta_fast) && c->beta_fast > 0 && isfinite(c->beta_slow) &&
                                        c->beta_slow > 0))
    bad = "attributes beta_fast, beta_slow: expected finite values > 0";
  else if (c->scaling == ROPE_YARN && !(finite_at_least(c->mscale, 0) && finite_at_least(c->mscale_all_dim, 0) &&
                                        finite_at_least(c->attention_factor, 0)))
    bad = "attributes mscale, mscale_all_dim, attention_factor: expected finite values >= 0";
  if (bad) snprintf(why, why_size, "%s", bad);
  return bad == NULL;
}

void sk__rope_inv_freq(const rope_config *c, float *inv_freq, float *attention_factor) {
  const int64_t dim = c->rotary_dim, half = dim / 2;
  const float base = (float)c->theta, factor = (float)c->factor;
  double low = 0, high = 0;
  if (c->scaling == ROPE_YARN) {
    low = correction_dim(c->beta_fast, (double)dim, c->theta, (double)c->original_max_positions);
    high = correction_dim(c->beta_slow, (double)dim, c->theta, (double)c->original_max_positions);
    if (c->truncate) low = floor(low), high = ceil(high);
    low = low > 0 ? low : 0;
    high = high < (double)(dim - 1) ? high : (double)(dim - 1);
    if (low == high) high += 0.001; /* linear_ramp_factor's guard against a zero width */
  }
  for (int64_t i = 0; i < half; i++) {
    float e = (float)(2 * i) / (float)dim;
    float pos_freq = (float)pow((double)base, (double)e);
    float inv = 1.0f / pos_freq;
    if (c->scaling == ROPE_LINEAR) {
      inv = inv / factor;
    } else if (c->scaling == ROPE_YARN) {
      float scaled = factor * pos_freq, interp = 1.0f / scaled;
      float ramp = ((float)i - (float)low) / (float)(high - low);
      ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
      float extra_factor = 1.0f - ramp, keep = 1.0f - extra_factor;
      float a = interp * keep, b = inv * extra_factor;
      inv = a + b;
    }
    inv_freq[i] = inv;
  }
  double af = 1.0;
  if (c->scaling == ROPE_YARN) {
    if (c->attention_factor > 0) af = c->attention_factor;
    else if (c->mscale != 0 && c->mscale_all_dim != 0)
      af = yarn_get_mscale(c->factor, c->mscale) / yarn_get_mscale(c->factor, c->mscale_all_dim);
    else af = yarn_get_mscale(c->factor, 1.0);
  }
  *attention_factor = (float)af;
}

void sk__rope_table_row(const rope_config *c, const float *inv_freq, float attention_factor, int64_t position,
                        float *row) {
  const int64_t half = c->rotary_dim / 2;
  for (int64_t i = 0; i < half; i++) {
    float angle = inv_freq[i] * (float)position;
    float cs = (float)cos((double)angle), sn = (float)sin((double)angle);
    row[i] = cs * attention_factor;
    row[half + i] = sn * attention_factor;
  }
}

/* The scalar definitions of the attention loops (attention.h) and the
 * dispatch. Compiled with -ffp-contract=off: every fused multiply-add is
 * the explicit fmaf, as the SIMD paths' vfmadd lanes. */
#include "kernels/attention/attention.h"

#include <math.h>
#include <string.h>

#include "kernels/attention/attention_isa.h"

static void dots_scalar(const float *q, size_t nh, const float *k, size_t ks, size_t nk, size_t d, float *out,
                        size_t stride) {
  for (size_t h = 0; h < nh; h++)
    for (size_t j = 0; j < nk; j++) {
      const float *qh = q + h * d, *kj = k + j * ks;
      float part[SK_ATTN_LANES] = {0};
      for (size_t i = 0; i < d; i += SK_ATTN_LANES)
        for (int l = 0; l < SK_ATTN_LANES; l++) part[l] = fmaf(qh[i + l], kj[i + l], part[l]);
      out[h * stride + j] = sk__attn_fold16(part);
    }
}

static void accumulate_scalar(float *o, size_t nh, const float *p, size_t ps, const float *v, size_t vs, size_t nk,
                              size_t d) {
  for (size_t h = 0; h < nh; h++)
    for (size_t j = 0; j < nk; j++)
      for (size_t i = 0; i < d; i++) o[h * d + i] = fmaf(p[h * ps + j], v[j * vs + i], o[h * d + i]);
}

static void widen_bf16_scalar(const uint16_t *src, size_t stride, size_t n, size_t d, float *dst) {
  for (size_t r = 0; r < n; r++)
    for (size_t i = 0; i < d; i++) {
      uint32_t bits = (uint32_t)src[r * stride + i] << 16;
      memcpy(&dst[r * d + i], &bits, sizeof bits);
    }
}

static float scale_max_scalar(float *s, size_t n, float scale) {
  float m = -INFINITY;
  for (size_t j = 0; j < n; j++) {
    s[j] = s[j] * scale;
    m = s[j] > m ? s[j] : m;
  }
  return m;
}

static void shift_scalar(float *s, size_t n, float m) {
  for (size_t j = 0; j < n; j++) s[j] = s[j] - m;
}

static void lanes_add_scalar(float *lanes, const float *s, size_t n) {
  for (size_t j = 0; j < n; j++) lanes[j % SK_ATTN_LANES] = lanes[j % SK_ATTN_LANES] + s[j];
}

#define SK_ATTN_TABLE(isa)                                                                                           \
  {#isa, sk__attn_dots_##isa, sk__attn_accumulate_##isa, sk__attn_widen_bf16_##isa, sk__attn_scale_max_##isa,     \
   sk__attn_shift_##isa, sk__attn_lanes_add_##isa}

static const sk__attention_kernels kernels_scalar = {"scalar",          dots_scalar,  accumulate_scalar,
                                                     widen_bf16_scalar, scale_max_scalar, shift_scalar,
                                                     lanes_add_scalar};
static const sk__attention_kernels kernels_avx2 = SK_ATTN_TABLE(avx2);
static const sk__attention_kernels kernels_avx512 = SK_ATTN_TABLE(avx512);

const sk__attention_kernels *sk__attention_config_for(sk__isa isa) {
  const sk__isa have = sk__cpu_isa_supported(); /* never a path the CPU lacks */
  if (isa > have) isa = have;
  return isa >= SK_ISA_AVX512 ? &kernels_avx512 : isa >= SK_ISA_AVX2 ? &kernels_avx2 : &kernels_scalar;
}

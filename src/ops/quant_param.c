/* The packed int64 quantization parameter (see sk_trans_quant_param). */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "superkernel.h"

sk_status sk_trans_quant_param(const float *scale, const float *offset, size_t n, int64_t *packed_out) {
  sk__clear_error();
  if ((!scale || !packed_out) && n)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_trans_quant_param: %s is NULL", !scale ? "scale" : "packed_out");
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &scale[i], sizeof bits);
    uint64_t u = (uint64_t)(bits & 0xFFFFE000u) | (1ull << 46);
    if (offset) {
      if (!isfinite(offset[i]))
        return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_trans_quant_param: offset[%zu] is %g (must be finite)", i,
                        (double)offset[i]);
      float o = rintf(offset[i]);
      o = o < -256.0f ? -256.0f : o > 255.0f ? 255.0f : o;
      u |= ((uint64_t)(int64_t)o & 0x1FFu) << 37;
    }
    packed_out[i] = (int64_t)u;
  }
  return SK_STATUS_OK;
}

void sk_decode_quant_param(int64_t packed, float *scale_out, float *offset_out) {
  uint64_t u = (uint64_t)packed;
  uint32_t bits = (uint32_t)u & 0xFFFFE000u;
  if (scale_out) memcpy(scale_out, &bits, sizeof *scale_out);
  int32_t o = (int32_t)((u >> 37) & 0x1FFu);
  if (o & 0x100) o -= 0x200; /* sign-extend the 9-bit two's complement */
  if (offset_out) *offset_out = (float)o;
}

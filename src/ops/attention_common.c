/* The attention ops' shared steps (attention_common.h). */
#include "ops/attention_common.h"

#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

/* Scores the softmax shifts, exponentiates and sums at a time: 4 KiB, in
 * L1; a multiple of the 16 lanes, so lane j mod 16 carries over. */
#define SOFTMAX_CHUNK 1024

sk__attn_heads sk__attn_heads_of(int64_t hkv, int64_t group) {
  sk__attn_heads hd = {.hkv = hkv, .group = group};
  hd.n_sub = sk__ceil_div(group, SK_ATTN_MAX_GROUP);
  hd.sub = sk__ceil_div(group, hd.n_sub);
  return hd;
}

void sk__attn_item_heads(const sk__attn_heads *hd, int64_t item, int64_t *t, int64_t *h0, int64_t *h1) {
  const int64_t per_token = sk__attn_items_per_token(hd);
  *t = item / per_token;
  const int64_t g = item % per_token / hd->n_sub, u = item % hd->n_sub;
  *h0 = g * hd->group + u * hd->sub;
  *h1 = *h0 + hd->sub < (g + 1) * hd->group ? *h0 + hd->sub : (g + 1) * hd->group;
}

void sk__attn_block_items(const sk__attn_heads *hd, int64_t planned, int64_t live, int64_t n_blocks, int64_t block,
                          int64_t *i0, int64_t *i1) {
  const int64_t per_token = sk__attn_items_per_token(hd);
  sk__flat_block_range(planned * per_token, n_blocks, block, i0, i1);
  sk__clip(i0, i1, live * per_token);
}

void sk__attn_block_rows(const sk__attn_heads *hd, int64_t planned, int64_t n_blocks, int64_t block, int64_t *first,
                         int64_t *end) {
  int64_t i0, i1, t0, a, b, t1, c, e;
  sk__attn_block_items(hd, planned, planned, n_blocks, block, &i0, &i1);
  if (i0 >= i1) {
    *first = *end = 0;
    return;
  }
  sk__attn_item_heads(hd, i0, &t0, &a, &b);
  sk__attn_item_heads(hd, i1 - 1, &t1, &c, &e);
  const int64_t heads = hd->hkv * hd->group;
  *first = t0 * heads + a;
  *end = t1 * heads + e;
}

const float *sk__attn_rows_f32(const sk__attention_kernels *kern, const void *src, sk_dtype dtype, size_t row_stride,
                               size_t nk, size_t width, float *buf, size_t *stride, sk__isa isa) {
  if (dtype == SK_FP32) {
    *stride = row_stride;
    return src;
  }
  *stride = width;
  if (dtype == SK_BF16) {
    kern->widen_bf16(src, row_stride, nk, width, buf);
  } else {
    const size_t row_bytes = row_stride * sk_dtype_size(dtype);
    for (size_t r = 0; r < nk; r++)
      sk__convert((const char *)src + r * row_bytes, dtype, buf + r * width, SK_FP32, width, isa);
  }
  return buf;
}

float sk__attn_exp_normalizer(const sk__attention_kernels *kern, float *s, size_t n, float m, sk__isa isa) {
  float lanes[SK_ATTN_LANES] = {0};
  for (size_t j = 0; j < n; j += SOFTMAX_CHUNK) {
    const size_t c = n - j < SOFTMAX_CHUNK ? n - j : SOFTMAX_CHUNK;
    kern->shift(s + j, c, m);
    sk__expf_array(s + j, s + j, c, isa);
    kern->lanes_add(lanes, s + j, c);
  }
  return sk__attn_fold16(lanes);
}

/* What the attention ops share (src/ops/attention.c, mla_attention.c): how
 * a token's query heads split into work items and which rows a block of
 * items covers, cache rows as fp32 rows, and a head's softmax from its
 * largest score on. Each is one of the ops' steps, the same operations in
 * the same order in both, so both keep their bits. */
#ifndef SK_OPS_ATTENTION_COMMON_H
#define SK_OPS_ATTENTION_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/attention/attention.h"
#include "ops/op.h"

/* q heads one work item takes at most: they share one pass over the keys. */
#define SK_ATTN_MAX_GROUP 8

/* A token's query heads: hkv groups of `group` heads, group g reading kv
 * head g (mla_attention: one group of all heads, over its one latent row
 * per key), each group split into n_sub work items of at most sub heads.
 * Items go token by token, then group by group: item i of a run is token
 * i / (hkv * n_sub), and consecutive items cover consecutive heads, so a
 * block's query rows and output rows are one contiguous range each. */
typedef struct sk__attn_heads {
  int64_t hkv, group; /* query heads hkv * group */
  int64_t sub, n_sub;
} sk__attn_heads;

/* hkv groups of `group` heads in items of at most SK_ATTN_MAX_GROUP heads,
 * a group's items as even as they can be. */
sk__attn_heads sk__attn_heads_of(int64_t hkv, int64_t group);

static inline int64_t sk__attn_items_per_token(const sk__attn_heads *hd) { return hd->hkv * hd->n_sub; }

/* Item `item`: token *t, heads [*h0, *h1). */
void sk__attn_item_heads(const sk__attn_heads *hd, int64_t item, int64_t *t, int64_t *h0, int64_t *h1);

/* The items [*i0, *i1) block `block` of n_blocks runs, of a tiling over
 * `planned` tokens, clipped to the first `live` tokens (op.h: a run-time
 * token count). */
void sk__attn_block_items(const sk__attn_heads *hd, int64_t planned, int64_t live, int64_t n_blocks, int64_t block,
                          int64_t *i0, int64_t *i1);

/* For a footprint: the (token, head) rows the items of block `block` cover,
 * [*first, *end) counted in one head's rows (token t's head h is row
 * t * hkv * group + h); (0, 0) for a block without items. */
void sk__attn_block_rows(const sk__attn_heads *hd, int64_t planned, int64_t n_blocks, int64_t block, int64_t *first,
                         int64_t *end);

/* nk cache rows from src, row_stride values apart, their first `width`
 * values as fp32 rows: in place for fp32 (*stride = row_stride), else
 * widened into buf (*stride = width). */
const float *sk__attn_rows_f32(const sk__attention_kernels *kern, const void *src, sk_dtype dtype, size_t row_stride,
                               size_t nk, size_t width, float *buf, size_t *stride, sk__isa isa);

/* A head's n scores s from their largest, m, on: s_j = sk__expf(s_j - m)
 * in place, and the normalizer, 16 lanes over j (lane j mod 16, added in
 * increasing j) folded pairwise. */
float sk__attn_exp_normalizer(const sk__attention_kernels *kern, float *s, size_t n, float m, sk__isa isa);

#endif

/* The selection steps of moe_gating_topk (ops/moe_gating_topk*.c) that
 * dominate its time once the norm is vectorized: the top-k scan over a row
 * of scores and the group scores. Everything here only compares values
 * (and adds a group's top two), so every ISA path gives the same result;
 * the scores hold no NaN (the op maps NaN to -inf first).
 *
 * Order: value descending, equal values by lower index first. The isa
 * argument must be one the CPU supports (callers pass the node's io->isa,
 * which is): these run many times per row, so they do not re-check it. */
#ifndef SK_KERNELS_MOE_SELECT_H
#define SK_KERNELS_MOE_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"

/* The best n (<= k) so far, sorted in the order above. */
typedef struct sk__moe_list {
  float *v;
  int32_t *i;
  int64_t n, k;
} sk__moe_list;

/* Inserts (x, e); candidates arrive in increasing index, so an equal value
 * never displaces a listed one: x goes before the first strictly smaller.
 * The caller has checked that x belongs (list not full, or x > v[k-1]). */
static inline void sk__moe_list_insert(float *lv, int32_t *li, int64_t *n, int64_t k, float x, int64_t e) {
  int64_t at = *n < k ? (*n)++ : k - 1;
  for (; at > 0 && x > lv[at - 1]; at--) {
    lv[at] = lv[at - 1];
    li[at] = li[at - 1];
  }
  lv[at] = x;
  li[at] = (int32_t)e;
}

/* Offers v[b..end) (index e for v[e]) to l in increasing index, each value
 * below floor left out: the caller knows that at least k values of the
 * whole selection are >= floor, so none below it can be among the k best
 * (-inf: every value is offered). The SIMD paths compare a whole vector
 * with floor while the list fills, then with the current k-th best, and
 * walk only the lanes that pass. */
void sk__moe_scan(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor, sk__isa isa);

/* sk__moe_scan over the ranges [g * size, (g + 1) * size) of the groups
 * with keep[g], in increasing g (one call, not one per group). */
void sk__moe_scan_groups(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups, const unsigned char *keep,
                         float floor, sk__isa isa);

/* Scores of the n_groups consecutive groups of size values of v: the max
 * (mode 0) or the sum of the two largest values (mode 1, size >= 2); a NaN
 * sum (+inf + -inf) counts as -inf. In mode 1, second (when not NULL) gets
 * each group's second largest value (its top2, which may equal its top1). */
void sk__moe_group_scores(const float *v, int64_t size, int64_t n_groups, int mode, float *score, float *second,
                          sk__isa isa);

/* Most groups sk__moe_keep_groups takes. */
#define SK_MOE_KEEP_RANKED 16

/* kept[g] = 1 for the k_group best of the n_groups (<= SK_MOE_KEEP_RANKED)
 * scores, 0 for the others, in the order above: a group is kept when fewer
 * than k_group others rank above it (its rank is unique). */
void sk__moe_keep_groups(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept, sk__isa isa);

/* The scores of one row from its norm: v[e] = norm[e] + bias[e] (bias NULL:
 * norm[e]), a NaN v stored as -inf. */
void sk__moe_scores(const float *bias, const float *norm, float *v, int64_t n, sk__isa isa);

/* sk__moe_scores over n_groups * size values, then sk__moe_group_scores of
 * v, in one pass where the ISA allows (each group's scores are reduced
 * while still in registers): AVX-512 with size a multiple of 16 and
 * n_groups of 8, AVX2 with size a multiple of 8. */
void sk__moe_scores_grouped(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups, int mode,
                            float *score, float *second, sk__isa isa);

/* Most experts sk__moe_pick selects. */
#define SK_MOE_PICK_MAX 16

/* The k (<= SK_MOE_PICK_MAX) best of v over the groups with keep[g] (ranges
 * [g * size, (g + 1) * size)) into idx, in the order above, when at least
 * k values of them are >= floor (the caller's floor, see sk__moe_scan) and
 * at most SK_MOE_PICK_MAX are: those candidates are gathered and ranked
 * all at once. Returns false, idx untouched, when it does not apply (the
 * ISA lacks AVX-512, size is no multiple of 16, too many or too few
 * candidates); the caller then runs the scan. */
bool sk__moe_pick(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, float floor, int64_t k,
                  int32_t *idx, sk__isa isa);

/* One path's steps (sk__moe_select_config_for), the signatures of the
 * functions above less isa. The fused scores_grouped takes group sizes a
 * multiple of grouped_size_multiple and group counts of
 * grouped_groups_multiple, else the next path down (`lower`) is tried, and
 * without one the two steps run; pick (NULL: none) is tried before the
 * scan. Adding an ISA: its file and its line in moe_select.c's table. */
typedef struct sk__moe_select_kernels {
  const char *name; /* "avx512", "avx2", "scalar" */
  void (*scan)(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor);
  void (*scan_groups)(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups, const unsigned char *keep,
                      float floor);
  void (*group_scores)(const float *v, int64_t size, int64_t n_groups, int mode, float *score, float *second);
  void (*scores)(const float *bias, const float *norm, float *v, int64_t n);
  void (*keep_groups)(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept);
  void (*scores_grouped)(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups, int mode,
                         float *score, float *second);
  int64_t grouped_size_multiple, grouped_groups_multiple;
  const struct sk__moe_select_kernels *lower;
  bool (*pick)(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, float floor, int64_t k,
               int32_t *idx);
} sk__moe_select_kernels;

/* The path for isa (one the CPU supports). */
const sk__moe_select_kernels *sk__moe_select_config_for(sk__isa isa);

/* The AVX2 half (moe_select_avx2.c; AVX-512 machines run it where the
 * AVX-512 half below does not apply). */
void sk__moe_scan_avx2(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor);
void sk__moe_scan_groups_avx2(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups,
                              const unsigned char *keep, float floor);
void sk__moe_group_scores_avx2(const float *v, int64_t size, int64_t n_groups, int mode, float *score, float *second);
void sk__moe_scores_avx2(const float *bias, const float *norm, float *v, int64_t n);
void sk__moe_scores_grouped_avx2(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups,
                                 int mode, float *score, float *second);
void sk__moe_keep_groups_avx2(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept);

/* The AVX-512 half (moe_select_avx512.c): the grouped scores for n_groups a
 * multiple of 8 and size of 16, and the pick. */
void sk__moe_scores_grouped_avx512(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups,
                                   int mode, float *score, float *second);
bool sk__moe_pick_avx512(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, float floor,
                         int64_t k, int32_t *idx);

#endif

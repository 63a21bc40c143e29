/* Scalar selection steps of moe_gating_topk and the dispatch to the ISA
 * files (see moe_select.h). */
#include "kernels/moe/moe_select.h"

#include <math.h>

/* AVX-512 machines run the AVX2 scan when sk__moe_pick does not apply. */
void sk__moe_scan(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor, sk__isa isa) {
  if (isa >= SK_ISA_AVX2) {
    sk__moe_scan_avx2(l, v, b, end, floor);
    return;
  }
  float *lv = l->v;
  int32_t *li = l->i;
  int64_t n = l->n, k = l->k;
  for (int64_t e = b; e < end; e++)
    if (n < k ? v[e] >= floor : v[e] > lv[k - 1]) sk__moe_list_insert(lv, li, &n, k, v[e], e);
  l->n = n;
}

void sk__moe_scan_groups(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups, const unsigned char *keep,
                         float floor, sk__isa isa) {
  if (isa >= SK_ISA_AVX2) {
    sk__moe_scan_groups_avx2(l, v, size, n_groups, keep, floor);
    return;
  }
  for (int64_t g = 0; g < n_groups; g++)
    if (keep[g]) sk__moe_scan(l, v, g * size, (g + 1) * size, floor, isa);
}

static float group_score(const float *v, int64_t n, int mode, float *second) {
  float t1 = -INFINITY, t2 = -INFINITY;
  for (int64_t e = 0; e < n; e++) {
    if (v[e] > t1) {
      t2 = t1;
      t1 = v[e];
    } else if (v[e] > t2) {
      t2 = v[e];
    }
  }
  *second = t2;
  return mode == 0 ? t1 : t1 + t2;
}

void sk__moe_group_scores(const float *v, int64_t size, int64_t n_groups, int mode, float *score, float *second,
                          sk__isa isa) {
  if (isa >= SK_ISA_AVX2) {
    sk__moe_group_scores_avx2(v, size, n_groups, mode, score, second);
    return;
  }
  for (int64_t g = 0; g < n_groups; g++) {
    float top2;
    float sc = group_score(v + g * size, size, mode, &top2);
    if (mode == 1 && second) second[g] = top2;
    score[g] = sc == sc ? sc : -INFINITY;
  }
}

void sk__moe_scores(const float *bias, const float *norm, float *v, int64_t n, sk__isa isa) {
  if (isa >= SK_ISA_AVX2) {
    sk__moe_scores_avx2(bias, norm, v, n);
    return;
  }
  for (int64_t e = 0; e < n; e++) {
    float x = bias ? norm[e] + bias[e] : norm[e];
    v[e] = x == x ? x : -INFINITY;
  }
}

void sk__moe_scores_grouped(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups, int mode,
                            float *score, float *second, sk__isa isa) {
  if (isa >= SK_ISA_AVX512 && size % 16 == 0 && n_groups % 8 == 0) {
    sk__moe_scores_grouped_avx512(bias, norm, v, size, n_groups, mode, score, second);
    return;
  }
  if (isa >= SK_ISA_AVX2 && size % 8 == 0) {
    sk__moe_scores_grouped_avx2(bias, norm, v, size, n_groups, mode, score, second);
    return;
  }
  sk__moe_scores(bias, norm, v, size * n_groups, isa);
  sk__moe_group_scores(v, size, n_groups, mode, score, second, isa);
}

void sk__moe_keep_groups(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept, sk__isa isa) {
  if (isa >= SK_ISA_AVX2) {
    sk__moe_keep_groups_avx2(score, n_groups, k_group, kept);
    return;
  }
  for (int64_t g = 0; g < n_groups; g++) {
    int64_t rank = 0;
    for (int64_t h = 0; h < n_groups; h++) rank += score[h] > score[g] || (score[h] == score[g] && h < g);
    kept[g] = rank < k_group;
  }
}

bool sk__moe_pick(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, float floor, int64_t k,
                  int32_t *idx, sk__isa isa) {
  if (isa < SK_ISA_AVX512 || size % 16 != 0 || k > SK_MOE_PICK_MAX || floor == -INFINITY) return false;
  return sk__moe_pick_avx512(v, size, n_groups, keep, floor, k, idx);
}

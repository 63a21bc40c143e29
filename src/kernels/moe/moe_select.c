/* Scalar selection steps of moe_gating_topk and the table of paths the ISA
 * files provide (see moe_select.h). */
#include "kernels/moe/moe_select.h"

#include <math.h>
#include <stddef.h>

static void scan_scalar(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor) {
  float *lv = l->v;
  int32_t *li = l->i;
  int64_t n = l->n, k = l->k;
  for (int64_t e = b; e < end; e++)
    if (n < k ? v[e] >= floor : v[e] > lv[k - 1]) sk__moe_list_insert(lv, li, &n, k, v[e], e);
  l->n = n;
}

static void scan_groups_scalar(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups,
                               const unsigned char *keep, float floor) {
  for (int64_t g = 0; g < n_groups; g++)
    if (keep[g]) scan_scalar(l, v, g * size, (g + 1) * size, floor);
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

static void group_scores_scalar(const float *v, int64_t size, int64_t n_groups, int mode, float *score,
                                float *second) {
  for (int64_t g = 0; g < n_groups; g++) {
    float top2;
    float sc = group_score(v + g * size, size, mode, &top2);
    if (mode == 1 && second) second[g] = top2;
    score[g] = sc == sc ? sc : -INFINITY;
  }
}

static void scores_scalar(const float *bias, const float *norm, float *v, int64_t n) {
  for (int64_t e = 0; e < n; e++) {
    float x = bias ? norm[e] + bias[e] : norm[e];
    v[e] = x == x ? x : -INFINITY;
  }
}

static void keep_groups_scalar(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept) {
  for (int64_t g = 0; g < n_groups; g++) {
    int64_t rank = 0;
    for (int64_t h = 0; h < n_groups; h++) rank += score[h] > score[g] || (score[h] == score[g] && h < g);
    kept[g] = rank < k_group;
  }
}

/* AVX-512 machines run the AVX2 steps where no AVX-512 one exists. */
static const sk__moe_select_kernels kernels_scalar = {
    "scalar", scan_scalar, scan_groups_scalar, group_scores_scalar, scores_scalar, keep_groups_scalar,
    NULL, 0, 0, NULL, NULL,
};
static const sk__moe_select_kernels kernels_avx2 = {
    "avx2", sk__moe_scan_avx2, sk__moe_scan_groups_avx2, sk__moe_group_scores_avx2, sk__moe_scores_avx2,
    sk__moe_keep_groups_avx2, sk__moe_scores_grouped_avx2, 8, 1, &kernels_scalar, NULL,
};
static const sk__moe_select_kernels kernels_avx512 = {
    "avx512", sk__moe_scan_avx2, sk__moe_scan_groups_avx2, sk__moe_group_scores_avx2, sk__moe_scores_avx2,
    sk__moe_keep_groups_avx2, sk__moe_scores_grouped_avx512, 16, 8, &kernels_avx2, sk__moe_pick_avx512,
};

const sk__moe_select_kernels *sk__moe_select_config_for(sk__isa isa) {
  return isa >= SK_ISA_AVX512 ? &kernels_avx512 : isa >= SK_ISA_AVX2 ? &kernels_avx2 : &kernels_scalar;
}

void sk__moe_scan(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor, sk__isa isa) {
  sk__moe_select_config_for(isa)->scan(l, v, b, end, floor);
}

void sk__moe_scan_groups(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups, const unsigned char *keep,
                         float floor, sk__isa isa) {
  sk__moe_select_config_for(isa)->scan_groups(l, v, size, n_groups, keep, floor);
}

void sk__moe_group_scores(const float *v, int64_t size, int64_t n_groups, int mode, float *score, float *second,
                          sk__isa isa) {
  sk__moe_select_config_for(isa)->group_scores(v, size, n_groups, mode, score, second);
}

void sk__moe_scores(const float *bias, const float *norm, float *v, int64_t n, sk__isa isa) {
  sk__moe_select_config_for(isa)->scores(bias, norm, v, n);
}

/* The first path down from isa's whose fused step takes these shapes, else
 * the two steps. */
void sk__moe_scores_grouped(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups, int mode,
                            float *score, float *second, sk__isa isa) {
  const sk__moe_select_kernels *top = sk__moe_select_config_for(isa);
  for (const sk__moe_select_kernels *k = top; k && k->scores_grouped; k = k->lower)
    if (size % k->grouped_size_multiple == 0 && n_groups % k->grouped_groups_multiple == 0) {
      k->scores_grouped(bias, norm, v, size, n_groups, mode, score, second);
      return;
    }
  top->scores(bias, norm, v, size * n_groups);
  top->group_scores(v, size, n_groups, mode, score, second);
}

void sk__moe_keep_groups(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept, sk__isa isa) {
  sk__moe_select_config_for(isa)->keep_groups(score, n_groups, k_group, kept);
}

bool sk__moe_pick(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, float floor, int64_t k,
                  int32_t *idx, sk__isa isa) {
  const sk__moe_select_kernels *c = sk__moe_select_config_for(isa);
  if (!c->pick || size % 16 != 0 || k > SK_MOE_PICK_MAX || floor == -INFINITY) return false;
  return c->pick(v, size, n_groups, keep, floor, k, idx);
}

/* AVX2 selection steps of moe_gating_topk (see moe_select.h): 8 scores per
 * compare, then only the lanes that pass go through the scalar list
 * insertion, walked from the compare mask. Tails are scalar. */
#include <immintrin.h>

#include "kernels/moe/moe_select.h"

/* v[b..end) offered to the list (lv, li, *n of k). */
static inline void scan_range(float *lv, int32_t *li, int64_t *np, int64_t k, const float *v, int64_t b, int64_t end,
                              float floor) {
  int64_t n = *np;
  for (int64_t e = b; e < end; e += 8) {
    /* While the list fills, the lanes at or above floor enter; then only
     * lanes above the k-th best, re-tested one by one as it rises. In the
     * tail every lane is tested one by one. */
    unsigned m = e + 8 > end ? (1u << (end - e)) - 1
               : n < k ? (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + e), _mm256_set1_ps(floor),
                                                                    _CMP_GE_OQ))
                       : (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + e),
                                                                    _mm256_set1_ps(lv[k - 1]), _CMP_GT_OQ));
    while (m) {
      int64_t j = e + __builtin_ctz(m);
      m &= m - 1;
      if (n < k ? v[j] >= floor : v[j] > lv[k - 1]) sk__moe_list_insert(lv, li, &n, k, v[j], j);
    }
  }
  *np = n;
}

void sk__moe_scan_avx2(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor) {
  scan_range(l->v, l->i, &l->n, l->k, v, b, end, floor);
}

void sk__moe_scan_groups_avx2(sk__moe_list *l, const float *v, int64_t size, int64_t n_groups,
                              const unsigned char *keep, float floor) {
  int64_t n = l->n;
  for (int64_t g = 0; g < n_groups; g++)
    if (keep[g]) scan_range(l->v, l->i, &n, l->k, v, g * size, (g + 1) * size, floor);
  l->n = n;
}

static inline float hmax8(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

/* One step of the lane merge: each lane's pair (t1 >= t2) joined with the
 * pair of the lane that perm names: the two largest of the four values
 * (with multiplicity) are max(t1, u1) and max(min(t1, u1), max(t2, u2)). */
#define MERGE(perm)                                                   \
  do {                                                                \
    __m256 u1 = perm(t1), u2 = perm(t2);                              \
    t2 = _mm256_max_ps(_mm256_min_ps(t1, u1), _mm256_max_ps(t2, u2)); \
    t1 = _mm256_max_ps(t1, u1);                                       \
  } while (0)
#define SWAP_HALVES(x) _mm256_permute2f128_ps(x, x, 1)
#define SWAP_PAIRS(x) _mm256_permute_ps(x, 0x4E)
#define SWAP_ADJACENT(x) _mm256_permute_ps(x, 0xB1)

/* Per lane the two largest so far (t1 >= t2); then the two largest of the
 * 16 by three lane merges (halves, pairs, neighbours), after which every
 * lane holds them. The tail is pushed into lanes 0.. */
static inline float group_score(const float *v, int64_t n, int mode, float *second) {
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  __m256 t1 = ninf, t2 = ninf;
  int64_t e = 0;
  for (; e < n; e += 8) {
    __m256 x;
    if (e + 8 <= n) {
      x = _mm256_loadu_ps(v + e);
    } else {
      float buf[8];
      for (int j = 0; j < 8; j++) buf[j] = e + j < n ? v[e + j] : -__builtin_inff();
      x = _mm256_loadu_ps(buf);
    }
    t2 = _mm256_max_ps(t2, _mm256_min_ps(t1, x));
    t1 = _mm256_max_ps(t1, x);
  }
  if (mode == 0) return hmax8(t1);
  MERGE(SWAP_HALVES);
  MERGE(SWAP_PAIRS);
  MERGE(SWAP_ADJACENT);
  float top1 = _mm256_cvtss_f32(t1), top2 = _mm256_cvtss_f32(t2);
  *second = top2;
  return top1 + top2;
}

void sk__moe_group_scores_avx2(const float *v, int64_t size, int64_t n_groups, int mode, float *score,
                               float *second) {
  for (int64_t g = 0; g < n_groups; g++) {
    float top2;
    float sc = group_score(v + g * size, size, mode, &top2);
    if (mode == 1 && second) second[g] = top2;
    score[g] = sc == sc ? sc : -__builtin_inff();
  }
}

/* 8 scores of sk__moe_scores at e: v = norm + bias with NaN as -inf,
 * stored and returned. */
static inline __m256 scores8(const float *bias, const float *norm, float *v, int64_t e) {
  __m256 x = _mm256_loadu_ps(norm + e);
  if (bias) x = _mm256_add_ps(x, _mm256_loadu_ps(bias + e));
  x = _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
  _mm256_storeu_ps(v + e, x);
  return x;
}

/* Each group's scores go straight into its per-lane two largest, reduced
 * as group_score does. */
/* Merges lane pairs (x1 >= x2) and (y1 >= y2) into x: the two largest. */
static inline void merge2(__m256 *x1, __m256 *x2, __m256 y1, __m256 y2) {
  *x2 = _mm256_max_ps(_mm256_min_ps(*x1, y1), _mm256_max_ps(*x2, y2));
  *x1 = _mm256_max_ps(*x1, y1);
}

/* The lane top-two (t1, t2) of one group of scores. */
static inline void group_lanes(const float *bias, const float *norm, float *v, int64_t b, int64_t end, __m256 *t1,
                               __m256 *t2) {
  *t1 = *t2 = _mm256_set1_ps(-__builtin_inff());
  for (int64_t e = b; e < end; e += 8) {
    __m256 x = scores8(bias, norm, v, e);
    *t2 = _mm256_max_ps(*t2, _mm256_min_ps(*t1, x));
    *t1 = _mm256_max_ps(*t1, x);
  }
}

/* Two groups' lane pairs folded into one vector: lanes 0-3 group a's
 * halves merged, lanes 4-7 group b's. */
static inline void fold_pair(const float *bias, const float *norm, float *v, int64_t size, int64_t a, __m256 *p1,
                             __m256 *p2) {
  __m256 a1, a2, b1, b2;
  group_lanes(bias, norm, v, a * size, (a + 1) * size, &a1, &a2);
  group_lanes(bias, norm, v, (a + 1) * size, (a + 2) * size, &b1, &b2);
  *p1 = _mm256_permute2f128_ps(a1, b1, 0x20);
  *p2 = _mm256_permute2f128_ps(a2, b2, 0x20);
  merge2(p1, p2, _mm256_permute2f128_ps(a1, b1, 0x31), _mm256_permute2f128_ps(a2, b2, 0x31));
}

/* Mode 1 over 8 groups at once: the lane pairs are folded pairwise across
 * groups (halves, then pairs, then neighbours of lanes, each step the same
 * merge as MERGE), ending with group g's top1 / top2 in lane
 * (g even ? g / 2 : 4 + g / 2); the sums and the NaN rule per lane. */
static void scores_8_groups(const float *bias, const float *norm, float *v, int64_t size, int64_t g0, float *score,
                            float *second) {
  __m256 p1[4], p2[4];
  for (int j = 0; j < 4; j++) fold_pair(bias, norm, v, size, g0 + 2 * j, &p1[j], &p2[j]);
  __m256 q1[2], q2[2];
  for (int j = 0; j < 2; j++) {
    /* [a0 a1 c0 c1 | b0 b1 d0 d1] with [a2 a3 c2 c3 | b2 b3 d2 d3] */
    q1[j] = _mm256_shuffle_ps(p1[2 * j], p1[2 * j + 1], 0x44);
    q2[j] = _mm256_shuffle_ps(p2[2 * j], p2[2 * j + 1], 0x44);
    merge2(&q1[j], &q2[j], _mm256_shuffle_ps(p1[2 * j], p1[2 * j + 1], 0xEE),
           _mm256_shuffle_ps(p2[2 * j], p2[2 * j + 1], 0xEE));
  }
  __m256 r1 = _mm256_shuffle_ps(q1[0], q1[1], 0x88), r2 = _mm256_shuffle_ps(q2[0], q2[1], 0x88);
  merge2(&r1, &r2, _mm256_shuffle_ps(q1[0], q1[1], 0xDD), _mm256_shuffle_ps(q2[0], q2[1], 0xDD));
  /* lanes hold groups 0 2 4 6 1 3 5 7 (of g0 + ...): back to order. */
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  r1 = _mm256_permutevar8x32_ps(r1, order);
  r2 = _mm256_permutevar8x32_ps(r2, order);
  __m256 sc = _mm256_add_ps(r1, r2);
  sc = _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), sc, _mm256_cmp_ps(sc, sc, _CMP_ORD_Q));
  _mm256_storeu_ps(score + g0, sc);
  if (second) _mm256_storeu_ps(second + g0, r2);
}

void sk__moe_scores_grouped_avx2(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups,
                                 int mode, float *score, float *second) {
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  int64_t g = 0;
  if (mode == 1)
    for (; g + 8 <= n_groups; g += 8) scores_8_groups(bias, norm, v, size, g, score, second);
  for (; g < n_groups; g++) {
    __m256 t1 = ninf, t2 = ninf;
    for (int64_t e = g * size; e < (g + 1) * size; e += 8) {
      __m256 x = scores8(bias, norm, v, e);
      t2 = _mm256_max_ps(t2, _mm256_min_ps(t1, x));
      t1 = _mm256_max_ps(t1, x);
    }
    float sc;
    if (mode == 0) {
      sc = hmax8(t1);
    } else {
      MERGE(SWAP_HALVES);
      MERGE(SWAP_PAIRS);
      MERGE(SWAP_ADJACENT);
      float top1 = _mm256_cvtss_f32(t1), top2 = _mm256_cvtss_f32(t2);
      if (second) second[g] = top2;
      sc = top1 + top2;
    }
    score[g] = sc == sc ? sc : -__builtin_inff();
  }
}

/* v = norm + bias with NaN as -inf: 8 lanes per step, the same fp32 add as
 * the scalar path; tails are scalar. */
void sk__moe_scores_avx2(const float *bias, const float *norm, float *v, int64_t n) {
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) scores8(bias, norm, v, e);
  for (; e < n; e++) {
    float x = bias ? norm[e] + bias[e] : norm[e];
    v[e] = x == x ? x : -__builtin_inff();
  }
}

/* sk__moe_keep_groups: the scores in two vectors (padded with -inf at
 * lanes after every group, which never rank above one), each group's rank
 * from two compares per vector. */
void sk__moe_keep_groups_avx2(const float *score, int64_t n_groups, int64_t k_group, unsigned char *kept) {
  const __m256i lane0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lane1 = _mm256_add_epi32(lane0, _mm256_set1_epi32(8));
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  const __m256i count = _mm256_set1_epi32((int32_t)n_groups);
  __m256i live0 = _mm256_cmpgt_epi32(count, lane0), live1 = _mm256_cmpgt_epi32(count, lane1);
  __m256 s0 = _mm256_blendv_ps(ninf, _mm256_maskload_ps(score, live0), _mm256_castsi256_ps(live0));
  __m256 s1 = n_groups > 8 ? _mm256_blendv_ps(ninf, _mm256_maskload_ps(score + 8, live1), _mm256_castsi256_ps(live1))
                           : ninf;
  for (int64_t g = 0; g < n_groups; g++) {
    __m256 x = _mm256_set1_ps(score[g]);
    __m256i at = _mm256_set1_epi32((int32_t)g);
    __m256 a0 = _mm256_or_ps(_mm256_cmp_ps(s0, x, _CMP_GT_OQ),
                             _mm256_and_ps(_mm256_cmp_ps(s0, x, _CMP_EQ_OQ),
                                           _mm256_castsi256_ps(_mm256_cmpgt_epi32(at, lane0))));
    __m256 a1 = _mm256_or_ps(_mm256_cmp_ps(s1, x, _CMP_GT_OQ),
                             _mm256_and_ps(_mm256_cmp_ps(s1, x, _CMP_EQ_OQ),
                                           _mm256_castsi256_ps(_mm256_cmpgt_epi32(at, lane1))));
    unsigned above = (unsigned)_mm256_movemask_ps(a0) | (unsigned)_mm256_movemask_ps(a1) << 8;
    kept[g] = __builtin_popcount(above) < k_group;
  }
}

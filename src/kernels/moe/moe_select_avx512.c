/* AVX-512 selection steps of moe_gating_topk (see moe_select.h): the
 * grouped scores of 8 groups at a time and the pick of the few candidates
 * at or above the scan floor. Both only compare values (and add a group's
 * top two, the same fp32 add as every path), so they give the scalar
 * path's results exactly. */
#include <immintrin.h>

#include "kernels/moe/moe_select.h"

#define NINF _mm512_set1_ps(-__builtin_inff())

/* The pick holds its candidates in one vector of 16 lanes. */
_Static_assert(SK_MOE_PICK_MAX == 16, "sk__moe_pick_avx512 ranks one zmm of candidates");

/* 16 scores at e: v = norm + bias with NaN as -inf, stored and returned. */
static inline __m512 scores16(const float *bias, const float *norm, float *v, int64_t e) {
  __m512 x = _mm512_loadu_ps(norm + e);
  if (bias) x = _mm512_add_ps(x, _mm512_loadu_ps(bias + e));
  x = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), NINF);
  _mm512_storeu_ps(v + e, x);
  return x;
}

/* Merges lane pairs (x1 >= x2) and (y1 >= y2) into x: the two largest of
 * the four, with multiplicity. */
static inline void merge2(__m512 *x1, __m512 *x2, __m512 y1, __m512 y2) {
  *x2 = _mm512_max_ps(_mm512_min_ps(*x1, y1), _mm512_max_ps(*x2, y2));
  *x1 = _mm512_max_ps(*x1, y1);
}

/* Per lane the two largest scores of the group [b, end). */
static inline void group_lanes(const float *bias, const float *norm, float *v, int64_t b, int64_t end, __m512 *t1,
                               __m512 *t2) {
  *t1 = *t2 = NINF;
  for (int64_t e = b; e < end; e += 16) {
    __m512 x = scores16(bias, norm, v, e);
    *t2 = _mm512_max_ps(*t2, _mm512_min_ps(*t1, x));
    *t1 = _mm512_max_ps(*t1, x);
  }
}

/* Groups g0 .. g0 + 7: their lane pairs are folded across groups, halving
 * the lanes per group each step (two groups of 8 lanes a vector, four of 4,
 * then pairs of lanes, then single lanes), each step a merge2 of the two
 * halves a shuffle lines up. Group q ends in lane 4 q (q < 4) or 4 (q - 4)
 * + 2, gathered back into lanes 0..7. */
static void scores_8_groups(const float *bias, const float *norm, float *v, int64_t size, int64_t g0, int mode,
                            float *score, float *second) {
  __m512 a1[8], a2[8];
  for (int j = 0; j < 8; j++) group_lanes(bias, norm, v, (g0 + j) * size, (g0 + j + 1) * size, &a1[j], &a2[j]);
  __m512 p1[4], p2[4];
  for (int j = 0; j < 4; j++) { /* [g 2j: 8 lanes | g 2j+1: 8 lanes] */
    p1[j] = _mm512_shuffle_f32x4(a1[2 * j], a1[2 * j + 1], 0x44);
    p2[j] = _mm512_shuffle_f32x4(a2[2 * j], a2[2 * j + 1], 0x44);
    merge2(&p1[j], &p2[j], _mm512_shuffle_f32x4(a1[2 * j], a1[2 * j + 1], 0xEE),
           _mm512_shuffle_f32x4(a2[2 * j], a2[2 * j + 1], 0xEE));
  }
  __m512 q1[2], q2[2];
  for (int j = 0; j < 2; j++) { /* one group per 128-bit quarter, 4 lanes each */
    q1[j] = _mm512_shuffle_f32x4(p1[2 * j], p1[2 * j + 1], 0x88);
    q2[j] = _mm512_shuffle_f32x4(p2[2 * j], p2[2 * j + 1], 0x88);
    merge2(&q1[j], &q2[j], _mm512_shuffle_f32x4(p1[2 * j], p1[2 * j + 1], 0xDD),
           _mm512_shuffle_f32x4(p2[2 * j], p2[2 * j + 1], 0xDD));
  }
  /* Quarter q: lanes 0-1 group q, lanes 2-3 group q + 4 (of g0 + ...). */
  __m512 r1 = _mm512_shuffle_ps(q1[0], q1[1], 0x44), r2 = _mm512_shuffle_ps(q2[0], q2[1], 0x44);
  merge2(&r1, &r2, _mm512_shuffle_ps(q1[0], q1[1], 0xEE), _mm512_shuffle_ps(q2[0], q2[1], 0xEE));
  merge2(&r1, &r2, _mm512_permute_ps(r1, 0xB1), _mm512_permute_ps(r2, 0xB1));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  __m256 t1 = _mm512_castps512_ps256(_mm512_permutexvar_ps(order, r1));
  __m256 t2 = _mm512_castps512_ps256(_mm512_permutexvar_ps(order, r2));
  __m256 sc = mode == 0 ? t1 : _mm256_add_ps(t1, t2);
  sc = _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), sc, _mm256_cmp_ps(sc, sc, _CMP_ORD_Q));
  _mm256_storeu_ps(score + g0, sc);
  if (mode == 1 && second) _mm256_storeu_ps(second + g0, t2);
}

void sk__moe_scores_grouped_avx512(const float *bias, const float *norm, float *v, int64_t size, int64_t n_groups,
                                   int mode, float *score, float *second) {
  for (int64_t g = 0; g < n_groups; g += 8) scores_8_groups(bias, norm, v, size, g, mode, score, second);
}

/* The candidates (v >= floor in the kept groups), walked from each
 * vector's compare mask into two small arrays (measured faster here than
 * compressing them into registers or stores, which chain or stall the
 * loads after them); each one's rank is the number of candidates before it
 * in the order (greater v, or equal v and lower index), counted against
 * every candidate broadcast in turn. Ranks below k are the picks. */
bool sk__moe_pick_avx512(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, float floor,
                         int64_t k, int32_t *idx) {
  const __m512 f = _mm512_set1_ps(floor);
  float cv[SK_MOE_PICK_MAX] = {0}; /* zeros: the masked loads below read no lane past n, but the compiler cannot know */
  int32_t ci[SK_MOE_PICK_MAX] = {0};
  int n = 0;
  for (int64_t g = 0; g < n_groups; g++) {
    if (!keep[g]) continue;
    for (int64_t e = g * size; e < (g + 1) * size; e += 16)
      for (unsigned m = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + e), f, _CMP_GE_OQ); m; m &= m - 1) {
        if (n == SK_MOE_PICK_MAX) return false;
        int64_t j = e + __builtin_ctz(m);
        cv[n] = v[j];
        ci[n++] = (int32_t)j;
      }
  }
  if (n < k) return false;
  __mmask16 live = (__mmask16)((1u << n) - 1);
  __m512 all_v = _mm512_maskz_loadu_ps(live, cv);
  __m512i all_i = _mm512_maskz_loadu_epi32(live, ci);
  __m512i rank = _mm512_setzero_si512();
  for (int j = 0; j < n; j++) {
    __m512 x = _mm512_set1_ps(cv[j]);
    __mmask16 before = _mm512_cmp_ps_mask(x, all_v, _CMP_GT_OQ) |
                       (_mm512_cmp_ps_mask(x, all_v, _CMP_EQ_OQ) &
                        _mm512_cmpgt_epi32_mask(all_i, _mm512_set1_epi32(ci[j])));
    rank = _mm512_mask_add_epi32(rank, before, rank, _mm512_set1_epi32(1));
  }
  int32_t r[SK_MOE_PICK_MAX];
  _mm512_storeu_si512(r, rank);
  for (int i = 0; i < n; i++)
    if (r[i] < k) idx[r[i]] = ci[i];
  return true;
}

/* AVX-512 selection steps of moe_gating_topk (see moe_select.h): 16 scores
 * per compare, then only the lanes that pass go through the scalar list
 * insertion, walked from the compare mask. */
#include <immintrin.h>

#include "kernels/moe/moe_select.h"

static inline __mmask16 live_lanes(int64_t left) {
  return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

void sk__moe_scan_avx512(sk__moe_list *l, const float *v, int64_t b, int64_t end, float floor) {
  float *lv = l->v;
  int32_t *li = l->i;
  int64_t n = l->n, k = l->k;
  for (int64_t e = b; e < end; e += 16) {
    __mmask16 live = live_lanes(end - e);
    /* While the list fills, the lanes at or above floor enter; then only
     * lanes above the k-th best, re-tested one by one as it rises. */
    __m512 x = _mm512_maskz_loadu_ps(live, v + e);
    __mmask16 m = n < k ? _mm512_mask_cmp_ps_mask(live, x, _mm512_set1_ps(floor), _CMP_GE_OQ)
                        : _mm512_mask_cmp_ps_mask(live, x, _mm512_set1_ps(lv[k - 1]), _CMP_GT_OQ);
    while (m) {
      int64_t j = e + __builtin_ctz(m);
      m &= (__mmask16)(m - 1);
      if (n < k ? v[j] >= floor : v[j] > lv[k - 1]) sk__moe_list_insert(lv, li, &n, k, v[j], j);
    }
  }
  l->n = n;
}

/* Per lane the two largest so far (t1 >= t2); then the two largest of the
 * 32: top1 = max t1; top2 = top1 if two lanes hold it, else the max of the
 * other lanes' t1 and of every t2. */
static inline float group_score(const float *v, int64_t n, int mode, float *second) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 t1 = ninf, t2 = ninf;
  for (int64_t e = 0; e < n; e += 16) {
    __m512 x = _mm512_mask_loadu_ps(ninf, live_lanes(n - e), v + e);
    t2 = _mm512_max_ps(t2, _mm512_min_ps(t1, x));
    t1 = _mm512_max_ps(t1, x);
  }
  float top1 = _mm512_reduce_max_ps(t1);
  if (mode == 0) return top1;
  __mmask16 at_top = _mm512_cmp_ps_mask(t1, _mm512_set1_ps(top1), _CMP_EQ_OQ);
  float top2 = top1;
  if ((at_top & (at_top - 1)) == 0) {
    float rest = _mm512_reduce_max_ps(_mm512_mask_mov_ps(t1, at_top, ninf)), lane2 = _mm512_reduce_max_ps(t2);
    top2 = rest > lane2 ? rest : lane2;
  }
  *second = top2;
  return top1 + top2;
}

void sk__moe_group_scores_avx512(const float *v, int64_t size, int64_t n_groups, int mode, float *score,
                                 float *second) {
  for (int64_t g = 0; g < n_groups; g++) {
    float top2;
    float sc = group_score(v + g * size, size, mode, &top2);
    if (mode == 1 && second) second[g] = top2;
    score[g] = sc == sc ? sc : -__builtin_inff();
  }
}

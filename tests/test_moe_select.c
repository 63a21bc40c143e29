/* moe_gating_topk's selection steps (kernels/moe) on this run's ISA path
 * ($SK_ISA) against plain definitions written here: the grouped scores
 * (v, each group's score and top2) bit for bit, and sk__moe_pick's experts
 * against a full sort, on random rows, rows full of ties and rows of -inf,
 * group counts of 8 to 64 and sizes of 16 to 64. The pick must run on the
 * rows it is made for (AVX-512: at most 16 candidates) and decline the
 * others (too many candidates, an ISA without it). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu.h"
#include "harness.h"
#include "kernels/moe/moe_select.h"

#define MAX_E 4096

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* style 0: random; 1: few distinct values (ties); 2: some -inf and NaN. */
static void fill_row(float *norm, float *bias, int64_t e, int style) {
  for (int64_t i = 0; i < e; i++) {
    norm[i] = style == 1 ? (float)(int)uniform(0, 4) * 0.25f : (float)uniform(0, 1);
    bias[i] = style == 1 ? 0.0f : (float)uniform(-0.5, 0.5);
    if (style == 2 && uniform(0, 1) < 0.3) norm[i] = uniform(0, 1) < 0.5 ? -INFINITY : NAN;
  }
}

/* The definitions: v = norm + bias (NaN: -inf); a group's top1, top2. */
static void plain_scores(const float *norm, const float *bias, float *v, int64_t size, int64_t n_groups, int mode,
                         float *score, float *second) {
  for (int64_t g = 0; g < n_groups; g++) {
    float t1 = -INFINITY, t2 = -INFINITY;
    for (int64_t i = g * size; i < (g + 1) * size; i++) {
      float x = norm[i] + bias[i];
      v[i] = x == x ? x : -INFINITY;
      if (v[i] > t1) t2 = t1, t1 = v[i];
      else if (v[i] > t2) t2 = v[i];
    }
    float sc = mode == 0 ? t1 : t1 + t2;
    score[g] = sc == sc ? sc : -INFINITY;
    second[g] = t2;
  }
}

/* The k best of the kept groups by repeated scans: v descending, equal v
 * lower index first. */
static void plain_pick(const float *v, int64_t size, int64_t n_groups, const unsigned char *keep, int64_t k,
                       int32_t *idx) {
  for (int64_t j = 0; j < k; j++) {
    int64_t best = -1;
    for (int64_t i = 0; i < size * n_groups; i++) {
      if (!keep[i / size]) continue;
      bool taken = false;
      for (int64_t q = 0; q < j; q++) taken |= idx[q] == i;
      if (!taken && (best < 0 || v[i] > v[best])) best = i;
    }
    idx[j] = (int32_t)best;
  }
}

static void test_scores_and_pick(void) {
  static float norm[MAX_E], bias[MAX_E], v[MAX_E], v_plain[MAX_E];
  float score[64], second[64], score_plain[64], second_plain[64];
  static const int64_t shapes[][2] = {{8, 16}, {8, 32}, {16, 32}, {64, 16}, {8, 64}, {24, 16}};
  sk__isa isa = sk__cpu_isa();
  int picked = 0, declined = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int mode = 0; mode < 2; mode++)
      for (int style = 0; style < 3; style++)
        for (int row = 0; row < 40; row++) {
          int64_t n_groups = shapes[s][0], size = shapes[s][1], e = n_groups * size;
          fill_row(norm, bias, e, style);
          sk__moe_scores_grouped(bias, norm, v, size, n_groups, mode, score, second, isa);
          plain_scores(norm, bias, v_plain, size, n_groups, mode, score_plain, second_plain);
          bool same = true;
          for (int64_t i = 0; i < e; i++) same &= bits(v[i]) == bits(v_plain[i]);
          for (int64_t g = 0; g < n_groups; g++)
            same &= bits(score[g]) == bits(score_plain[g]) && (mode == 0 || bits(second[g]) == bits(second_plain[g]));
          CHECK_MSG(same, "scores: %lld groups of %lld, mode %d, style %d, row %d", (long long)n_groups,
                    (long long)size, mode, style, row);
          /* Keep k_group groups, the floor as the kernel's (mode 1, k <= 2
           * k_group: the least top2 of the kept groups). */
          int64_t k_group = 1 + row % 4, k = 1 + row % (2 * k_group);
          unsigned char keep[64];
          for (int64_t g = 0; g < n_groups; g++) {
            int64_t rank = 0;
            for (int64_t h = 0; h < n_groups; h++)
              rank += score_plain[h] > score_plain[g] || (score_plain[h] == score_plain[g] && h < g);
            keep[g] = rank < k_group;
          }
          float floor = INFINITY;
          for (int64_t g = 0; g < n_groups; g++)
            if (keep[g]) floor = second_plain[g] < floor ? second_plain[g] : floor;
          int32_t idx[16], want[16];
          if (!sk__moe_pick(v_plain, size, n_groups, keep, floor, k, idx, isa)) {
            declined++;
            continue;
          }
          picked++;
          plain_pick(v_plain, size, n_groups, keep, k, want);
          CHECK_MSG(memcmp(idx, want, (size_t)k * sizeof *idx) == 0,
                    "pick: %lld groups of %lld, k_group %lld, k %lld, style %d, row %d: first %d, want %d",
                    (long long)n_groups, (long long)size, (long long)k_group, (long long)k, style, row, idx[0],
                    want[0]);
        }
  printf("pick ran on %d rows, declined %d (ISA %s)\n", picked, declined, sk__isa_name(isa));
  if (isa >= SK_ISA_AVX512) {
    CHECK_MSG(picked > 500, "the pick ran on only %d rows", picked);
    CHECK_MSG(declined > 0, "the pick declined no row (ties and -inf rows have too many candidates)");
  } else {
    CHECK_MSG(picked == 0, "the pick ran on %d rows without AVX-512", picked);
  }
}

/* A row where 17 values tie at the floor: too many candidates, declined;
 * with 16 it runs, and equal values come out lower index first. */
static void test_pick_limit_and_ties(void) {
  static float v[256];
  unsigned char keep[8] = {1, 0, 1, 0, 1, 0, 1, 0};
  sk__isa isa = sk__cpu_isa();
  if (isa < SK_ISA_AVX512) {
    harness_skip_part("the pick is AVX-512 only; this run's ISA is %s", sk__isa_name(isa));
    return;
  }
  for (int tie = 16; tie <= 17; tie++) {
    for (int i = 0; i < 256; i++) v[i] = -1.0f;
    for (int j = 0; j < tie; j++) v[(j % 4) * 64 + 3 + j] = 0.5f; /* in kept groups 0, 2, 4, 6 */
    int32_t idx[8];
    bool ran = sk__moe_pick(v, 32, 8, keep, 0.5f, 8, idx, isa);
    if (tie == 17) {
      CHECK_MSG(!ran, "17 candidates: the pick should decline");
      continue;
    }
    CHECK_MSG(ran, "16 candidates: the pick should run");
    if (!ran) continue;
    int32_t want[8], n = 0;
    for (int i = 0; i < 256 && n < 8; i++)
      if (v[i] == 0.5f) want[n++] = i;
    CHECK_MSG(memcmp(idx, want, sizeof want) == 0, "ties: got %d %d .., want %d %d ..", idx[0], idx[1], want[0],
              want[1]);
  }
}

TEST_MAIN(TEST_CASE(test_scores_and_pick), TEST_CASE(test_pick_limit_and_ties))

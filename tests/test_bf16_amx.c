/* AMX-BF16 (TDPBF16PS) and the bf16 contract (docs/ops.md):
 *   - the SDM's definition of the instruction (emulated in
 *     kernels/amx_tiles.h) against the contract: by hand and over random
 *     tiles, where they agree and where not — why no bf16 GEMM uses AMX;
 *   - on a CPU with AMX-BF16, the instruction against that emulation bit for
 *     bit over the contract's regimes (skipped elsewhere): a failure means
 *     the SDM's definition is not what this CPU computes, and the decision
 *     in docs/ops.md must be looked at again with its numbers. */
#include <string.h>

#include "bf16_amx_tile.h"
#include "core/cpu.h"
#include "harness.h"
#include "kernels/gemm/bf16_contract.h"

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static uint16_t bf16_of(float x) { return (uint16_t)(bits(x) >> 16); } /* x exact in bf16 */

static uint32_t pair(float even, float odd) { return (uint32_t)bf16_of(even) | (uint32_t)bf16_of(odd) << 16; }

/* The contract's chain for the same tile: through c, each pair's odd
 * element first. */
static void contract_tile(int pairs, const uint32_t *a, const uint32_t *b, float *c) {
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      float acc = c[m * 16 + n];
      for (int q = 0; q < pairs; q++) {
        const uint32_t x = a[m * 16 + q], w = b[q * 16 + n];
        acc = sk__bf16_step(bf16_value((uint16_t)(x >> 16)), bf16_value((uint16_t)(w >> 16)), acc);
        acc = sk__bf16_step(bf16_value((uint16_t)x), bf16_value((uint16_t)w), acc);
      }
      c[m * 16 + n] = acc;
    }
}

/* Lanes of two tiles that differ (two NaNs agree). */
static int differing(const float *x, const float *y) {
  int d = 0;
  for (int i = 0; i < 256; i++) d += bits(x[i]) != bits(y[i]) && !(x[i] != x[i] && y[i] != y[i]);
  return d;
}

/* One output, c[0][0], of a tile whose other lanes are zero. */
static float one_lane(void (*product)(int, const uint32_t *, const uint32_t *, float *), int pairs,
                      const uint32_t *a_row, const uint32_t *b_col, float c) {
  uint32_t a[256] = {0}, b[256] = {0};
  float t[256] = {0};
  for (int q = 0; q < pairs; q++) a[q] = a_row[q], b[q * 16] = b_col[q];
  t[0] = c;
  product(pairs, a, b, t);
  return t[0];
}

__attribute__((unused)) static void test_sdm_definition_by_hand(void) {
  /* Two products of 2^-24 onto 1: the contract adds each to 1 and rounds
   * (the ties go to even: 1), the SDM adds them first (2^-23, exact) and
   * then to 1. */
  const uint32_t a1[1] = {pair(0x1p-12f, 0x1p-12f)}, b1[1] = {pair(0x1p-12f, 0x1p-12f)};
  const float sdm = one_lane(bf16_amx_tile_product_emulated, 1, a1, b1, 1.0f);
  CHECK_MSG(sdm == 1.0f + 0x1p-23f, "SDM %a", (double)sdm);
  CHECK_MSG(one_lane(contract_tile, 1, a1, b1, 1.0f) == 1.0f, "the contract");
  /* One step per instruction (the odd half zero) on a tiny accumulator: the
   * SDM flushes the product 2^-127 before adding it, the contract flushes
   * only results. */
  const uint32_t a2[1] = {pair(0x1p-64f, 0.0f)}, b2[1] = {pair(0x1p-63f, 0.0f)};
  {
    const float s = one_lane(bf16_amx_tile_product_emulated, 1, a2, b2, 0x1p-126f);
    const float k = one_lane(contract_tile, 1, a2, b2, 0x1p-126f);
    CHECK_MSG(s == 0x1p-126f && k == 0x1.8p-126f, "SDM %a, the contract %a", (double)s, (double)k);
  }
  /* Three pairs: the SDM sums the even and the odd products in chains of
   * their own from zero and adds them at the end: even 2^24 + 1 - 2^24 = 0
   * (the 1 is lost to rounding), odd 1, so 1. The contract's one chain
   * meets the odd 1 first and loses it to the 2^24 as well: 0. */
  uint32_t a3[3] = {pair(0x1p12f, 1.0f), pair(1.0f, 0.0f), pair(-0x1p12f, 0.0f)};
  uint32_t b3[3] = {pair(0x1p12f, 1.0f), pair(1.0f, 0.0f), pair(0x1p12f, 0.0f)};
  const float s3 = one_lane(bf16_amx_tile_product_emulated, 3, a3, b3, 0.0f);
  const float k3 = one_lane(contract_tile, 3, a3, b3, 0.0f);
  CHECK_MSG(s3 == 1.0f && k3 == 0.0f, "SDM %a, the contract %a", (double)s3, (double)k3);
  CHECK(bf16_amx_emulator_faults() == 0);
}

static uint64_t rng = 0xA3B16ull;
/* A bf16 of a random sign and mantissa, its exponent field in [lo, hi]. */
static float random_bf16(unsigned lo, unsigned hi) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  const unsigned e = lo + (unsigned)((rng >> 24) % (hi - lo + 1));
  return bf16_value((uint16_t)((rng >> 63) << 15 | e << 7 | (rng >> 40 & 0x7F)));
}

/* A random tile: regime 0 normal magnitudes (products and sums normal),
 * 1 products near and below 2^-126 on tiny accumulators, 2 denormal
 * operands. odd_zero leaves each pair's odd half zero (one step a pair). */
static void random_tile(int regime, int odd_zero, uint32_t *a, uint32_t *b, float *c) {
  const unsigned lo = regime == 0 ? 110 : regime == 1 ? 50 : 0, hi = regime == 0 ? 140 : regime == 1 ? 80 : 3;
  for (int i = 0; i < 256; i++) {
    a[i] = pair(random_bf16(lo, hi), odd_zero ? 0.0f : random_bf16(lo, hi));
    b[i] = pair(random_bf16(regime == 2 ? 100 : lo, regime == 2 ? 140 : hi), odd_zero ? 0.0f : random_bf16(lo, hi));
    c[i] = regime == 0 ? random_bf16(100, 150) : random_bf16(0, 4);
  }
}

/* Lanes of `tiles` random normal-range tiles (odd_zero: each pair's odd
 * half zero) where the emulated TDPBF16PS over `pairs` pairs and the
 * contract's chain differ. */
__attribute__((unused)) static int sdm_against_contract(int tiles, int pairs, int odd_zero) {
  uint32_t a[256], b[256];
  float c[256], sdm[256], want[256];
  int diff = 0;
  for (int t = 0; t < tiles; t++) {
    random_tile(0, odd_zero, a, b, c);
    memcpy(sdm, c, sizeof c), memcpy(want, c, sizeof c);
    bf16_amx_tile_product_emulated(pairs, a, b, sdm);
    contract_tile(pairs, a, b, want);
    diff += differing(sdm, want);
  }
  return diff;
}

__attribute__((unused)) static void test_sdm_definition_against_contract(void) {
  /* Whole instructions (16 pairs) over normal values: the two chains and
   * the late add round differently from the one chain in most lanes. */
  const int diff16 = sdm_against_contract(200, 16, 0);
  /* One step per instruction (pairs = 1, odd halves zero) over normal
   * values: the contract, lane for lane (at half the products per
   * instruction, and not at tiny accumulators: test_sdm_definition_by_hand). */
  const int diff1 = sdm_against_contract(200, 1, 1);
  printf("     the SDM's TDPBF16PS against the contract: %d of 51200 lanes differ with 16 pairs, %d with one step\n",
         diff16, diff1);
  CHECK_MSG(diff16 > 51200 / 4, "only %d lanes differ: is the emulation still the SDM's?", diff16);
  CHECK_MSG(diff1 == 0, "%d lanes differ", diff1);
  CHECK(bf16_amx_emulator_faults() == 0);
}

__attribute__((unused)) static void test_instruction_matches_sdm(void) {
  if (!sk__cpu_has_amx_bf16()) harness_skip_test("this CPU (or SK_ISA, or the OS) gives no AMX-BF16");
  uint32_t a[256], b[256];
  float c[256], got[256], sdm[256], want[256];
  const int pair_counts[] = {1, 2, 7, 16};
  int vs_sdm = 0, vs_contract = 0, lanes = 0;
  for (int t = 0; t < 3000; t++) {
    const int pairs = pair_counts[t % 4], regime = t / 4 % 3, odd_zero = t / 12 % 2;
    random_tile(regime, odd_zero, a, b, c);
    memcpy(got, c, sizeof c), memcpy(sdm, c, sizeof c), memcpy(want, c, sizeof c);
    bf16_amx_tile_product(pairs, a, b, got);
    bf16_amx_tile_product_emulated(pairs, a, b, sdm);
    contract_tile(pairs, a, b, want);
    const int d = differing(got, sdm);
    if (d && !vs_sdm) CHECK_MSG(0, "pairs %d, regime %d: TDPBF16PS %a, the SDM %a (first lane of %d)", pairs, regime,
                               (double)got[0], (double)sdm[0], d);
    vs_sdm += d;
    vs_contract += differing(got, want);
    lanes += 256;
  }
  printf("     TDPBF16PS on this CPU: %d of %d lanes differ from the SDM, %d from the contract\n", vs_sdm, lanes,
         vs_contract);
  CHECK_MSG(vs_sdm == 0, "%d lanes differ from the SDM's definition: docs/ops.md's AMX-BF16 paragraph", vs_sdm);
}

/* Two tests from this file (tests/kernels.cmake), so that the definition's
 * checks pass or fail on every CPU while the instruction's are reported
 * skipped where it cannot run. */
#ifdef SK_TEST_AMX_INSTRUCTION
TEST_MAIN(TEST_CASE(test_instruction_matches_sdm))
#else
TEST_MAIN(TEST_CASE(test_sdm_definition_by_hand), TEST_CASE(test_sdm_definition_against_contract))
#endif

/* dtype names and sizes, and the scalar fp16 / bf16 conversions that every
 * SIMD path must match: all 65,536 patterns of each, every rounding midpoint,
 * and a sample of fp32 patterns against F16C hardware and an independent
 * formula. */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- hardware F16C, when the CPU has it -------------------------------- */

static int have_f16c(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("f16c");
}

__attribute__((target("f16c"))) static float hw_fp16_to_fp32(uint16_t h) {
  return _cvtsh_ss(h);
}

__attribute__((target("f16c"))) static uint16_t hw_fp32_to_fp16(float f) {
  return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

/* ---- independent formulas ---------------------------------------------- */

/* fp16 decoded by the textbook formula (NaN not handled: the caller does). */
static double fp16_value(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double mag;
  if (exp == 0) mag = ldexp((double)mant, -24);
  else if (exp == 31) mag = INFINITY;
  else mag = ldexp((double)(1024 + mant), exp - 25);
  return sign ? -mag : mag;
}

/* The nearest finite-or-infinite fp16 to a finite double x, ties to even,
 * by comparing distances to the two fp16 neighbours (the overflow threshold
 * is the midpoint between 65504 and 2^16). */
static uint16_t fp16_nearest(double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  if (a >= 65520.0) return sign | 0x7C00;
  /* Binary search the largest magnitude pattern <= a. */
  uint16_t lo = 0, hi = 0x7BFF;
  while (lo < hi) {
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if (fp16_value(mid) <= a) lo = mid;
    else hi = (uint16_t)(mid - 1);
  }
  if (fp16_value(lo) == a) return sign | lo;
  double up = lo == 0x7BFF ? 65536.0 : fp16_value((uint16_t)(lo + 1));
  double dlo = a - fp16_value(lo), dup = up - a;
  uint16_t r = (dlo < dup || (dlo == dup && !(lo & 1))) ? lo : (uint16_t)(lo + 1);
  return sign | r; /* lo + 1 == 0x7C00 is Inf */
}

/* The nearest bf16 to a finite float, ties to even, by distances in double. */
static uint16_t bf16_nearest(float x) {
  uint32_t u = fbits(x);
  uint32_t down = u & 0xFFFF0000u; /* toward zero */
  uint32_t up = down + 0x10000u;   /* away from zero (may be Inf) */
  double dx = fabs((double)x), dd = fabs((double)bitsf(down));
  double du = (up & 0x7FFFFFFFu) == 0x7F800000u
                  ? ldexp(1.0, 128) /* Inf stands for 2^128 when rounding */
                  : fabs((double)bitsf(up));
  double a = dx - dd, b = du - dx;
  uint32_t r = (a < b || (a == b && !((down >> 16) & 1))) ? down : up;
  return (uint16_t)(r >> 16);
}

/* ---- names and sizes ----------------------------------------------------- */

static void test_names_and_sizes(void) {
  static const struct {
    sk_dtype d;
    const char *name;
    size_t size;
  } want[] = {{SK_FP32, "fp32", 4}, {SK_FP16, "fp16", 2}, {SK_BF16, "bf16", 2},
              {SK_INT8, "int8", 1}, {SK_INT32, "int32", 4}, {SK_INT64, "int64", 8},
              {SK_BOOL, "bool", 1}, {SK_UINT8, "uint8", 1}};
  CHECK(sizeof want / sizeof want[0] == SK_DTYPE_COUNT_ - 1);
  /* The values are ABI (front ends pass them as ints): new dtypes append. */
  CHECK(SK_FP32 == 1 && SK_FP16 == 2 && SK_BF16 == 3 && SK_INT8 == 4 && SK_INT32 == 5 && SK_INT64 == 6);
  CHECK(SK_BOOL == 7 && SK_UINT8 == 8);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CHECK_MSG(strcmp(sk_dtype_name(want[i].d), want[i].name) == 0, "%s", want[i].name);
    CHECK_MSG(sk_dtype_size(want[i].d) == want[i].size, "%s", want[i].name);
  }
  const sk_dtype bad[] = {SK_DTYPE_INVALID, SK_DTYPE_COUNT_, (sk_dtype)99, (sk_dtype)-1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(strcmp(sk_dtype_name(bad[i]), "invalid") == 0);
    CHECK(sk_dtype_size(bad[i]) == 0);
  }
}

/* ---- fp16 ------------------------------------------------------------------ */

/* Widening, all 65,536 patterns: equal to the formula, to F16C, and for NaN
 * the documented rule (NaN, sign kept, quiet bit set, payload kept). */
static void test_fp16_to_fp32_all(void) {
  int f16c = have_f16c();
  if (!f16c) harness_skip_part("no F16C on this CPU: comparison with the hardware left out");
  long formula_bad = 0, nan_bad = 0, hw_bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t got = fbits(sk_fp16_to_fp32((uint16_t)h));
    int is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (!is_nan) {
      uint32_t want = fbits((float)fp16_value((uint16_t)h));
      if (got != want && formula_bad++ < 5)
        fprintf(stderr, "fp16 %04x -> %08x, formula %08x\n", h, got, want);
    } else {
      uint32_t want = ((h & 0x8000u) << 16) | 0x7FC00000u | ((h & 0x3FFu) << 13);
      if (got != want && nan_bad++ < 5)
        fprintf(stderr, "fp16 NaN %04x -> %08x, want quiet NaN %08x\n", h, got, want);
    }
    if (f16c) {
      uint32_t hw = fbits(hw_fp16_to_fp32((uint16_t)h));
      if (got != hw && hw_bad++ < 5)
        fprintf(stderr, "fp16 %04x -> %08x, F16C %08x\n", h, got, hw);
    }
  }
  CHECK_MSG(formula_bad == 0, "%ld non-NaN patterns differ from the formula", formula_bad);
  CHECK_MSG(nan_bad == 0, "%ld NaN patterns are not the quiet NaN with the payload kept",
            nan_bad);
  CHECK_MSG(hw_bad == 0, "%ld patterns differ from F16C vcvtph2ps", hw_bad);
}

/* fp16 -> fp32 -> fp16 gives the same bits for every non-NaN; a NaN comes
 * back a quiet NaN with its sign and payload. */
static void test_fp16_round_trip_all(void) {
  long bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t back = sk_fp32_to_fp16(sk_fp16_to_fp32((uint16_t)h));
    int is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    uint16_t want = is_nan ? (uint16_t)(h | 0x200) : (uint16_t)h;
    if (back != want && bad++ < 5)
      fprintf(stderr, "fp16 %04x round-trips to %04x, want %04x\n", h, back, want);
  }
  CHECK_MSG(bad == 0, "%ld fp16 patterns do not round-trip", bad);
}

/* For every pair of neighbouring fp16 magnitudes (both signs): the values
 * themselves, the exact midpoint (ties to even) and one fp32 ulp either side. */
static void test_fp32_to_fp16_midpoints(void) {
  long bad = 0;
#define EXPECT16(x, want)                                                         \
  do {                                                                            \
    uint16_t got_ = sk_fp32_to_fp16(x);                                           \
    if (got_ != (want) && bad++ < 10)                                             \
      fprintf(stderr, "fp32 %a (%08x) -> fp16 %04x, want %04x\n", (double)(x),  \
              fbits(x), got_, (unsigned)(want));                                  \
  } while (0)
  for (uint32_t k = 0; k < 0x7BFF; k++) {
    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
      float a = sk_fp16_to_fp32((uint16_t)(sign | k));
      float b = sk_fp16_to_fp32((uint16_t)(sign | (k + 1)));
      float mid = (float)(((double)a + (double)b) / 2); /* exact: 12 bits */
      CHECK((double)mid == ((double)a + (double)b) / 2);
      uint16_t even = (uint16_t)(sign | ((k & 1) ? k + 1 : k));
      EXPECT16(a, sign | k);
      EXPECT16(mid, even);
      float toward_a = nextafterf(mid, a), toward_b = nextafterf(mid, b);
      EXPECT16(toward_a, sign | k);
      EXPECT16(toward_b, sign | (k + 1));
    }
  }
  /* Overflow: 65520 is the midpoint between 65504 (odd) and 2^16: Inf. */
  EXPECT16(65504.0f, 0x7BFF);
  EXPECT16(65519.996f, 0x7BFF);
  EXPECT16(nextafterf(65520.0f, 0.0f), 0x7BFF);
  EXPECT16(65520.0f, 0x7C00);
  EXPECT16(-65520.0f, 0xFC00);
  EXPECT16(-65519.996f, 0xFBFF);
  EXPECT16(1e10f, 0x7C00);
  EXPECT16(FLT_MAX, 0x7C00);
  EXPECT16(-FLT_MAX, 0xFC00);
  EXPECT16(INFINITY, 0x7C00);
  EXPECT16(-INFINITY, 0xFC00);
  /* Subnormal results and underflow. */
  EXPECT16(0x1p-24f, 0x0001);
  EXPECT16(0x1p-25f, 0x0000);                      /* tie with 0: even */
  EXPECT16(nextafterf(0x1p-25f, 1.0f), 0x0001);
  EXPECT16(-0x1p-25f, 0x8000);
  EXPECT16(0x3p-25f, 0x0002);                      /* tie 1 / 2: even */
  EXPECT16(0x5p-25f, 0x0002);                      /* tie 2 / 3: even */
  EXPECT16(0x1p-26f, 0x0000);
  EXPECT16(0x1p-14f, 0x0400);                      /* smallest normal */
  EXPECT16(nextafterf(0x1p-14f, 0.0f), 0x0400);    /* rounds up into it */
  EXPECT16(0x3FFp-24f, 0x03FF);                    /* largest subnormal */
  EXPECT16(bitsf(0x00000001u), 0x0000);            /* fp32 subnormals */
  EXPECT16(bitsf(0x80000001u), 0x8000);
  EXPECT16(bitsf(0x007FFFFFu), 0x0000);
  EXPECT16(0.0f, 0x0000);
  EXPECT16(-0.0f, 0x8000);
  EXPECT16(1.0f, 0x3C00);
  EXPECT16(-2.0f, 0xC000);
  EXPECT16(1.0f + 0x1p-11f, 0x3C00);               /* tie: even */
  EXPECT16(1.0f + 0x3p-11f, 0x3C02);               /* tie: even (up) */
#undef EXPECT16
  CHECK_MSG(bad == 0, "%ld fp32 -> fp16 rounding cases wrong", bad);
}

/* The documented NaN rule: quiet NaN, sign kept, top 10 payload bits kept. */
static uint16_t fp16_nan_rule(uint32_t u) {
  return (uint16_t)(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
}

/* A sample of the 2^32 fp32 patterns (every 127th, so every low-bit pattern
 * and exponent is hit) against F16C and the independent formula. */
static void test_fp32_to_fp16_sample(void) {
  int f16c = have_f16c();
  if (!f16c) harness_skip_part("no F16C on this CPU: comparison with the hardware left out");
  long hw_bad = 0, formula_bad = 0, nan_bad = 0, n = 0;
  for (uint64_t u64 = 0; u64 < (UINT64_C(1) << 32); u64 += 127) {
    uint32_t u = (uint32_t)u64;
    float f = bitsf(u);
    uint16_t got = sk_fp32_to_fp16(f);
    n++;
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
      uint16_t want = fp16_nan_rule(u);
      if (got != want && nan_bad++ < 5)
        fprintf(stderr, "fp32 NaN %08x -> %04x, want %04x\n", u, got, want);
    } else if ((u & 0x7F800000u) != 0x7F800000u && (n & 7) == 0) {
      /* The formula is slow (binary search): an eighth of the sample. */
      uint16_t want = fp16_nearest((double)f);
      if (got != want && formula_bad++ < 5)
        fprintf(stderr, "fp32 %08x -> %04x, formula %04x\n", u, got, want);
    }
    if (f16c) {
      uint16_t hw = hw_fp32_to_fp16(f);
      if (got != hw && hw_bad++ < 5)
        fprintf(stderr, "fp32 %08x -> %04x, F16C %04x\n", u, got, hw);
    }
  }
  CHECK_MSG(nan_bad == 0, "%ld NaN patterns break the rule", nan_bad);
  CHECK_MSG(formula_bad == 0, "%ld patterns differ from the formula", formula_bad);
  CHECK_MSG(hw_bad == 0, "%ld patterns differ from F16C vcvtps2ph", hw_bad);
}

/* ---- bf16 ------------------------------------------------------------------ */

static void test_bf16_all(void) {
  long widen_bad = 0, trip_bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = sk_bf16_to_fp32((uint16_t)h);
    int is_nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
    /* Widening is exact: the bits move up, NaN stays NaN with sign and
     * payload, subnormals stay subnormal. */
    if (fbits(f) != h << 16 && widen_bad++ < 5)
      fprintf(stderr, "bf16 %04x -> %08x\n", h, fbits(f));
    if (is_nan) CHECK(isnan(f));
    uint16_t back = sk_fp32_to_bf16(f);
    uint16_t want = is_nan ? (uint16_t)(h | 0x40) : (uint16_t)h;
    if (back != want && trip_bad++ < 5)
      fprintf(stderr, "bf16 %04x round-trips to %04x, want %04x\n", h, back, want);
  }
  CHECK_MSG(widen_bad == 0, "%ld bf16 patterns widen wrongly", widen_bad);
  CHECK_MSG(trip_bad == 0, "%ld bf16 patterns do not round-trip", trip_bad);
}

static void test_fp32_to_bf16_midpoints(void) {
  long bad = 0;
#define EXPECTBF(x, want)                                                         \
  do {                                                                            \
    uint16_t got_ = sk_fp32_to_bf16(x);                                           \
    if (got_ != (want) && bad++ < 10)                                             \
      fprintf(stderr, "fp32 %08x -> bf16 %04x, want %04x\n", fbits(x), got_,      \
              (unsigned)(want));                                                  \
  } while (0)
  /* Neighbours k, k+1 (subnormals included, up to the largest finite): the
   * midpoint in fp32 is k's bits + 0x8000, also across binades. */
  for (uint32_t k = 0; k < 0x7F7F; k++) {
    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
      uint32_t mid = ((sign | k) << 16) | 0x8000u;
      uint16_t even = (uint16_t)(sign | ((k & 1) ? k + 1 : k));
      EXPECTBF(bitsf((sign | k) << 16), sign | k);
      EXPECTBF(bitsf(mid), even);
      EXPECTBF(bitsf(mid - 1), sign | k);
      EXPECTBF(bitsf(mid + 1), sign | (k + 1));
    }
  }
  /* Overflow: the midpoint above the largest finite (odd) goes to Inf. */
  EXPECTBF(bitsf(0x7F7F7FFFu), 0x7F7F);
  EXPECTBF(bitsf(0x7F7F8000u), 0x7F80);
  EXPECTBF(FLT_MAX, 0x7F80);
  EXPECTBF(-FLT_MAX, 0xFF80);
  EXPECTBF(INFINITY, 0x7F80);
  EXPECTBF(-INFINITY, 0xFF80);
  /* Subnormals are kept, not flushed. */
  EXPECTBF(bitsf(0x00010000u), 0x0001);
  EXPECTBF(bitsf(0x00008000u), 0x0000); /* tie with 0: even */
  EXPECTBF(bitsf(0x00008001u), 0x0001);
  EXPECTBF(bitsf(0x00018000u), 0x0002); /* tie 1 / 2: even */
  EXPECTBF(bitsf(0x807FFFFFu), 0x8080); /* rounds up to the smallest normal */
  EXPECTBF(-0.0f, 0x8000);
  EXPECTBF(1.0f, 0x3F80);
  /* NaN: quiet, sign kept, top payload bits kept. */
  EXPECTBF(bitsf(0x7F800001u), 0x7FC0);
  EXPECTBF(bitsf(0xFF810000u), 0xFFC1);
  EXPECTBF(bitsf(0x7FC00000u), 0x7FC0);
  EXPECTBF(bitsf(0xFFFFFFFFu), 0xFFFF);
#undef EXPECTBF
  CHECK_MSG(bad == 0, "%ld fp32 -> bf16 rounding cases wrong", bad);
}

static void test_fp32_to_bf16_sample(void) {
  long bad = 0, nan_bad = 0;
  for (uint64_t u64 = 0; u64 < (UINT64_C(1) << 32); u64 += 127) {
    uint32_t u = (uint32_t)u64;
    float f = bitsf(u);
    uint16_t got = sk_fp32_to_bf16(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
      uint16_t r = (uint16_t)((u >> 16) | 0x40);
      if (got != r && nan_bad++ < 5)
        fprintf(stderr, "fp32 NaN %08x -> bf16 %04x, want %04x\n", u, got, r);
      continue;
    }
    uint16_t want = (u & 0x7FFFFFFFu) == 0x7F800000u ? (uint16_t)(u >> 16) : bf16_nearest(f);
    if (got != want && bad++ < 5)
      fprintf(stderr, "fp32 %08x -> bf16 %04x, formula %04x\n", u, got, want);
  }
  CHECK_MSG(nan_bad == 0, "%ld NaN patterns break the rule", nan_bad);
  CHECK_MSG(bad == 0, "%ld patterns differ from the formula", bad);
}

TEST_MAIN(TEST_CASE(test_names_and_sizes), TEST_CASE(test_fp16_to_fp32_all),
          TEST_CASE(test_fp16_round_trip_all), TEST_CASE(test_fp32_to_fp16_midpoints),
          TEST_CASE(test_fp32_to_fp16_sample), TEST_CASE(test_bf16_all),
          TEST_CASE(test_fp32_to_bf16_midpoints), TEST_CASE(test_fp32_to_bf16_sample))

/* The bf16 contract (kernels/gemm/bf16_contract.h):
 *   - the contract's step on hand-worked cases (DAZ, FTZ after rounding,
 *     signed zeros, the pair order), independent of any CPU;
 *   - the characterization: VDPBF16PS against the contract over the corner
 *     cases and millions of random lanes (skipped where the CPU lacks it);
 *   - the FMA kernels' way (an FMA chain under MXCSR.FTZ/DAZ) against the
 *     contract, on every CPU with FMA;
 *   - GEMM tiles: the dot-product kernel, the FMA kernels and the reference
 *     bit for bit, and the caller's MXCSR left as it was. */
#include <immintrin.h>
#include <string.h>

#include "core/alloc.h"
#include "harness.h"
#include "kernels/gemm/bf16_contract.h"
#include "kernels/gemm/bf16_dot.h"
#include "kernels/gemm/gemm.h"

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

#define CHECK_BITS(got, want)                                                                          \
  CHECK_MSG(bits(got) == bits(want), "%s = %a (0x%08x), want %a (0x%08x)", #got, (double)(got), bits(got), \
            (double)(want), bits(want))

static void test_contract_step_by_hand(void) {
  /* FTZ judged after rounding to 24 bits with an unbounded exponent: */
  CHECK_BITS(sk__bf16_step(-0x1.8p-75f, 0x1p-76f, 0x1p-126f), 0.0f);       /* 2^-126 - 1.5*2^-151: tiny */
  CHECK_BITS(sk__bf16_step(-0x1p-75f, 0x1p-76f, 0x1p-126f), 0x1p-126f);     /* the tie rounds up: kept */
  CHECK_BITS(sk__bf16_step(0x1.8p-75f, 0x1p-76f, -0x1p-126f), -0.0f);       /* a flushed result keeps its sign */
  CHECK_BITS(sk__bf16_step(0x1p-70f, 0x1p-70f, 0.0f), 0.0f);                /* 2^-140 */
  CHECK_BITS(sk__bf16_step(1.0f, 0x1.8p-126f, -0x1p-126f), 0.0f);           /* 2^-127 exactly: tiny */
  /* DAZ: denormal operands are zero. */
  CHECK_BITS(sk__bf16_step(1.0f, 0x1p-126f, 0x1p-127f), 0x1p-126f);
  CHECK_BITS(sk__bf16_step(0x1p-128f, 1.0f, 1.0f), 1.0f);
  CHECK_BITS(sk__bf16_step(-0x1p-130f, 1.0f, -0.0f), -0.0f);                /* -0 + -0 */
  /* Ordinary values: one rounding, as fmaf. */
  CHECK_BITS(sk__bf16_step(0x1.02p0f, 0x1.02p0f, -1.0f), fmaf(0x1.02p0f, 0x1.02p0f, -1.0f));
  CHECK_BITS(sk__bf16_step(0x1p127f, 4.0f, 0.0f), (float)INFINITY);
  CHECK(sk__bf16_step((float)INFINITY, 0.0f, 1.0f) != sk__bf16_step((float)INFINITY, 0.0f, 1.0f));
}

static void test_instruction_matches_contract(void) {
  if (!sk__cpu_has_avx512_bf16()) harness_skip_test("this CPU (or SK_ISA) has no AVX512_BF16");
  char why[256];
  /* Three million lanes over the three regimes (normal, near 2^-126,
   * denormal), after the corner cases. */
  size_t bad = sk__bf16_dot_characterize(0xC0FFEEull, 3u << 20, why, sizeof why);
  CHECK_MSG(bad == 0, "%zu lanes differ; first: %s", bad, why);
  CHECK(sk__gemm_bf16_dot_checked());
  CHECK(sk__gemm_bf16_dot_usable(SK_ISA_AVX512BF16)); /* SK_ISA=avx512bf16 (tests/kernels.cmake) forces it */
  CHECK(!sk__gemm_bf16_dot_usable(SK_ISA_AVX512));
}

/* The rates the kernel choice compares (bf16_dot.h): both measured, and
 * printed, so a log of this test names the CPU's ratio. */
static void test_instruction_rates(void) {
  if (!sk__cpu_has_avx512_bf16()) harness_skip_test("this CPU (or SK_ISA) has no AVX512_BF16");
  double dot = 0, fma = 0;
  sk__bf16_dot_rates(&dot, &fma);
  printf("     one core: VDPBF16PS %.1f GFLOP/s, zmm FMA %.1f GFLOP/s (%.2fx)\n", dot, fma, fma > 0 ? dot / fma : 0.0);
  CHECK(dot > 1.0 && fma > 1.0);
}

/* The FMA kernels' arithmetic: a vector FMA with FTZ and DAZ set. */
__attribute__((target("fma"))) static float fma_ftz_daz(float a, float b, float c) {
  const unsigned int saved = _mm_getcsr();
  _mm_setcsr(saved | SK__MXCSR_FTZ_DAZ);
  __m128 r = _mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c));
  _mm_setcsr(saved);
  return _mm_cvtss_f32(r);
}

static uint64_t rng = 0x5EED0B16ull;
static float random_f32(unsigned exp_lo, unsigned exp_hi) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  unsigned e = exp_lo + (unsigned)((rng >> 24) % (exp_hi - exp_lo + 1));
  uint32_t u = (uint32_t)(rng & 0x80000000u) | e << 23 | (uint32_t)(rng >> 40 & 0x7FFFFF);
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static void test_fma_with_flushing_matches_contract(void) {
  if (sk__cpu_isa_supported() < SK_ISA_AVX2) harness_skip_test("this CPU has no FMA");
  size_t bad = 0;
  for (int i = 0; i < 3000000; i++) {
    int regime = i % 3;
    float a = regime == 0 ? random_f32(100, 150) : regime == 1 ? random_f32(0, 70) : random_f32(40, 80);
    float b = regime == 0 ? random_f32(100, 150) : regime == 1 ? random_f32(60, 64) : random_f32(0, 40);
    float c = regime == 0 ? random_f32(100, 160) : random_f32(0, 3);
    float want = sk__bf16_step(a, b, c), got = fma_ftz_daz(a, b, c);
    if (bits(got) != bits(want) && !(got != got && want != want) && bad++ < 3)
      CHECK_MSG(0, "fma(%a, %a, %a) under FTZ/DAZ = %a, the contract %a", (double)a, (double)b, (double)c,
                (double)got, (double)want);
  }
  CHECK_MSG(bad == 0, "%zu of 3000000 differ", bad);
}

/* One bf16 GEMM through sk__gemm_tile for isa, B packed for that isa or
 * not; out gets C (fp32). */
static void run_gemm(sk__isa isa, int packed, const uint16_t *a, const void *b, sk_dtype a_dtype, int64_t m,
                     int64_t n, int64_t k, const uint16_t *bias, float *out) {
  void *pb = NULL;
  if (packed) {
    pb = sk__aligned_alloc(sk__gemm_packed_b_size(isa, SK_BF16, k, n));
    sk__gemm_pack_b(isa, SK_NUMERICS_DEFAULT, b, SK_BF16, n, k, n, pb);
  }
  sk__gemm_problem p = {m, n, k, a, a_dtype, k, b, SK_BF16, n, bias, SK_BF16, out, SK_FP32, n, pb, SK_NUMERICS_DEFAULT};
  void *ws = sk__aligned_alloc(sk__gemm_workspace_size(m, n, k));
  sk__gemm_tile(&p, 0, m, 0, n, ws, isa);
  sk__aligned_free(ws);
  sk__aligned_free(pb);
}

static void test_dot_kernel_equals_fma_kernels(void) {
  if (!sk__gemm_bf16_dot_usable(SK_ISA_AVX512BF16)) harness_skip_test("no checked VDPBF16PS on this CPU");
  /* Odd and blocked k (K blocks of 256 above 512), edges in m and n; values
   * spanning normal and tiny magnitudes so that flushing matters. */
  static const int64_t shapes[][3] = {{1, 37, 7}, {9, 70, 513}, {17, 64, 1031}, {3, 33, 2}, {8, 32, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    uint16_t *a = malloc((size_t)(m * k) * 2), *b = malloc((size_t)(k * n) * 2), *bias = malloc((size_t)n * 2);
    float *a32 = malloc((size_t)(m * k) * 4);
    for (int64_t i = 0; i < m * k; i++) {
      a32[i] = random_f32(i % 4 ? 110 : 20, i % 4 ? 130 : 60);
      a[i] = (uint16_t)(bits(a32[i]) >> 16);
    }
    for (int64_t i = 0; i < k * n; i++) b[i] = (uint16_t)(bits(random_f32(i % 5 ? 110 : 0, i % 5 ? 130 : 70)) >> 16);
    for (int64_t i = 0; i < n; i++) bias[i] = (uint16_t)(bits(random_f32(0, 130)) >> 16);
    float *want = malloc((size_t)(m * n) * 4), *want32 = malloc((size_t)(m * n) * 4), *got = malloc((size_t)(m * n) * 4);
    sk__gemm_problem p = {m, n, k, a, SK_BF16, k, b, SK_BF16, n, bias, SK_BF16, want, SK_FP32, n, NULL, SK_NUMERICS_DEFAULT};
    sk__gemm_reference(&p);
    sk__gemm_problem p32 = {m, n, k, a32, SK_FP32, k, b, SK_BF16, n, bias, SK_BF16, want32, SK_FP32, n, NULL, SK_NUMERICS_DEFAULT};
    sk__gemm_reference(&p32);
    for (int packed = 0; packed < 2; packed++) {
      const sk__isa isas[] = {SK_ISA_AVX512BF16, SK_ISA_AVX512, SK_ISA_AVX2, SK_ISA_SCALAR};
      for (size_t i = 0; i < 4; i++) {
        if (isas[i] > sk__cpu_isa()) continue;
        run_gemm(isas[i], packed, a, b, SK_BF16, m, n, k, bias, got);
        CHECK_MSG(memcmp(want, got, (size_t)(m * n) * 4) == 0, "%s, B %s, m %lld n %lld k %lld",
                  sk__isa_name(isas[i]), packed ? "packed" : "as it lies", (long long)m, (long long)n, (long long)k);
      }
      /* fp32 rows of A on bf16 weights packed in the pair layout. */
      run_gemm(SK_ISA_AVX512BF16, packed, (const uint16_t *)(const void *)a32, b, SK_FP32, m, n, k, bias, got);
      CHECK_MSG(memcmp(want32, got, (size_t)(m * n) * 4) == 0, "fp32 A, B %s, m %lld n %lld k %lld",
                packed ? "packed" : "as it lies", (long long)m, (long long)n, (long long)k);
    }
    free(a), free(b), free(bias), free(a32), free(want), free(want32), free(got);
  }
}

static void test_caller_mxcsr_untouched(void) {
  const unsigned int saved = _mm_getcsr();
  const unsigned int settings[] = {saved & ~SK__MXCSR_FTZ_DAZ, saved | 0x8000u /* FTZ alone */};
  uint16_t a[6] = {0x3F80, 0x4000, 0x3F80, 0x4000, 0x3F80, 0x4000}, b[6] = {0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80};
  float out[2];
  for (size_t i = 0; i < 2; i++) {
    _mm_setcsr(settings[i]);
    run_gemm(sk__cpu_isa(), 0, a, b, SK_BF16, 2, 1, 3, NULL, out);
    unsigned int after = _mm_getcsr() & ~0x3Fu; /* exception flags aside */
    _mm_setcsr(saved);
    CHECK_MSG(after == (settings[i] & ~0x3Fu), "MXCSR 0x%x after a tile, 0x%x before", after, settings[i]);
    CHECK(out[0] == 4.0f && out[1] == 5.0f);
  }
}

TEST_MAIN(TEST_CASE(test_contract_step_by_hand), TEST_CASE(test_fma_with_flushing_matches_contract),
          TEST_CASE(test_dot_kernel_equals_fma_kernels), TEST_CASE(test_caller_mxcsr_untouched),
          TEST_CASE(test_instruction_matches_contract), TEST_CASE(test_instruction_rates))

/* The characterization of VDPBF16PS against the bf16 contract, and its rate
 * against the FMA's (bf16_dot.h). Compiled with AVX512_BF16 flags; called
 * only where the CPU has it. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kernels/gemm/bf16_contract.h"
#include "kernels/gemm/bf16_dot.h"

static float f32_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static uint32_t bits_f32(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static float bf16_value(uint16_t h) { return f32_bits((uint32_t)h << 16); }

/* Corner cases, {acc, a_odd, b_odd, a_even, b_even} as bit patterns (acc
 * fp32, the others bf16), each pinning one rule: */
static const uint32_t corners[][5] = {
    {0x00800000, 0x9A40, 0x1980, 0, 0},      /* 2^-126 - 1.5*2^-151: tiny after rounding, flushed to +0 */
    {0x00800000, 0x9A00, 0x1980, 0, 0},      /* 2^-126 - 2^-151: the tie rounds up to 2^-126, kept */
    {0x80800000, 0x1A40, 0x1980, 0, 0},      /* the negative of the first: -0, then + 0*0 gives +0 */
    {0x80800000, 0, 0, 0x1A40, 0x1980},      /* the same as the even step: -0 kept */
    {0x00400000, 0x3F80, 0x0080, 0, 0},      /* denormal accumulator read as 0: 2^-126 */
    {0x3F800000, 0x0040, 0x3F80, 0, 0},      /* denormal factor read as 0: 1 */
    {0x00000000, 0x1D80, 0x1D80, 0, 0},      /* a product 2^-136 below the normals: 0 */
    {0x80000000, 0x8000, 0x3F80, 0, 0},      /* -0 + -0 = -0, then + 0*0: +0 */
    {0x80000000, 0, 0, 0x8000, 0x3F80},      /* -0 + -0 = -0 as the even step: -0 */
    {0x7F000000, 0x7F00, 0x4000, 0, 0},      /* overflow: +Inf */
    {0x7F800000, 0x0000, 0x3F80, 0, 0},      /* Inf + 0: Inf */
    {0x00000000, 0x7F80, 0x0000, 0, 0},      /* Inf * 0: NaN */
    {0x3F800000, 0x7FC0, 0x3F80, 0, 0},      /* NaN propagates */
    {0x3F800000, 0x4580, 0x4580, 0xC580, 0x4580}, /* the odd step first: 1 + 2^24 rounds to 2^24, then - 2^24: 0 (even first: 1) */
};

/* A bf16 of random sign and mantissa, exponent field in [lo, hi]. */
static uint16_t random_bf16(uint64_t *s, unsigned lo, unsigned hi) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  unsigned e = lo + (unsigned)((*s >> 20) % (hi - lo + 1));
  return (uint16_t)(((*s & 1) << 15) | (e << 7) | ((*s >> 8) & 0x7F));
}

size_t sk__bf16_dot_characterize(uint64_t seed, size_t random_lanes, char *why, size_t why_size) {
  const size_t n_corners = sizeof corners / sizeof corners[0];
  size_t bad = 0;
  uint64_t s = seed | 1;
  if (why_size) why[0] = '\0';
  for (size_t base = 0; base < n_corners + random_lanes; base += 16) {
    float acc[16];
    uint16_t a[32], b[32];
    for (size_t l = 0; l < 16; l++) {
      size_t lane = base + l;
      if (lane < n_corners) {
        acc[l] = f32_bits(corners[lane][0]);
        a[2 * l + 1] = (uint16_t)corners[lane][1];
        b[2 * l + 1] = (uint16_t)corners[lane][2];
        a[2 * l] = (uint16_t)corners[lane][3];
        b[2 * l] = (uint16_t)corners[lane][4];
        continue;
      }
      /* Three regimes in turn: normal magnitudes; products near 2^-126 on a
       * tiny accumulator; denormal factors and accumulators. */
      unsigned regime = (unsigned)(lane % 3);
      unsigned acc_lo = regime == 0 ? 100 : 0, acc_hi = regime == 0 ? 160 : 3;
      uint16_t hi = random_bf16(&s, acc_lo, acc_hi), lo = random_bf16(&s, 0, 255);
      acc[l] = f32_bits((uint32_t)hi << 16 | lo);
      for (int h = 0; h < 2; h++) {
        a[2 * l + h] = regime == 0 ? random_bf16(&s, 100, 150) : regime == 1 ? random_bf16(&s, 0, 70) : random_bf16(&s, 40, 80);
        b[2 * l + h] = regime == 0 ? random_bf16(&s, 100, 150) : regime == 1 ? random_bf16(&s, 60, 64) : random_bf16(&s, 0, 40);
      }
    }
    float out[16];
    __m512bh va, vb;
    memcpy(&va, a, sizeof va);
    memcpy(&vb, b, sizeof vb);
    _mm512_storeu_ps(out, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), va, vb));
    for (size_t l = 0; l < 16 && base + l < n_corners + random_lanes; l++) {
      float odd = sk__bf16_step(bf16_value(a[2 * l + 1]), bf16_value(b[2 * l + 1]), acc[l]);
      float want = sk__bf16_step(bf16_value(a[2 * l]), bf16_value(b[2 * l]), odd);
      int both_nan = want != want && out[l] != out[l]; /* NaN payloads are not part of the contract */
      if (bits_f32(out[l]) == bits_f32(want) || both_nan) continue;
      if (bad++ == 0 && why_size)
        snprintf(why, why_size,
                 "lane %zu: acc %a + %a * %a + %a * %a gave %a (0x%08x), the contract %a (0x%08x)", base + l,
                 (double)acc[l], (double)bf16_value(a[2 * l + 1]), (double)bf16_value(b[2 * l + 1]),
                 (double)bf16_value(a[2 * l]), (double)bf16_value(b[2 * l]), (double)out[l], bits_f32(out[l]),
                 (double)want, bits_f32(want));
    }
  }
  return bad;
}

/* sk__bf16_dot_rates: 12 independent accumulators (more than any core's
 * latency times its issue rate needs) over a fixed count of instructions;
 * the operands pass through an empty asm each round so nothing is folded. */
#define RATE_CHAINS 12
#define RATE_ROUNDS 8000

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double dot_seconds(void) {
  __m512 acc[RATE_CHAINS];
  for (int c = 0; c < RATE_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_setzero_si512();
  const double t0 = seconds_now();
  for (int i = 0; i < RATE_ROUNDS; i++) {
    __asm__ volatile("" : "+v"(a), "+v"(b));
    for (int c = 0; c < RATE_CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  for (int c = 0; c < RATE_CHAINS; c++) __asm__ volatile("" ::"v"(acc[c]));
  return seconds_now() - t0;
}

static double fma_seconds(void) {
  __m512 acc[RATE_CHAINS], a = _mm512_set1_ps(1.0f), b = _mm512_setzero_ps();
  for (int c = 0; c < RATE_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  const double t0 = seconds_now();
  for (int i = 0; i < RATE_ROUNDS; i++) {
    __asm__ volatile("" : "+v"(a), "+v"(b));
    for (int c = 0; c < RATE_CHAINS; c++) acc[c] = _mm512_fmadd_ps(a, b, acc[c]);
  }
  for (int c = 0; c < RATE_CHAINS; c++) __asm__ volatile("" ::"v"(acc[c]));
  return seconds_now() - t0;
}

void sk__bf16_dot_rates(double *dot_gflops, double *fma_gflops) {
  double dot = 1e30, fma = 1e30;
  for (int pass = 0; pass < 4; pass++) { /* alternated: a clock that ramps up favours neither */
    const double d = dot_seconds(), f = fma_seconds();
    if (d < dot) dot = d;
    if (f < fma) fma = f;
  }
  const double insns = (double)RATE_CHAINS * RATE_ROUNDS;
  *dot_gflops = dot > 0 ? insns * 64 / dot * 1e-9 : 0; /* 32 multiply-adds an instruction */
  *fma_gflops = fma > 0 ? insns * 32 / fma * 1e-9 : 0; /* 16 */
}

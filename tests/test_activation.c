/* exp / sigmoid / silu: the array forms on this run's ISA path ($SK_ISA)
 * equal the scalar definitions bit for bit (every length, so every tail, and
 * the special values in every lane); and the scalar definitions meet the
 * accuracy stated in activation.h against the exact functions in double. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu.h"
#include "harness.h"
#include "kernels/activation/activation.h"

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

typedef float (*scalar_fn)(float);
typedef void (*array_fn)(const float *, float *, size_t, sk__isa);
static const struct {
  const char *name;
  scalar_fn f;
  array_fn a;
} fns[] = {{"exp", sk__expf, sk__expf_array}, {"sigmoid", sk__sigmoidf, sk__sigmoidf_array},
           {"silu", sk__siluf, sk__siluf_array}};

/* NaNs (quiet, signaling, both signs), infinities, zeros, the thresholds of
 * exp and their neighbours, subnormal results, huge and tiny inputs, and
 * points where the reduction's n changes. */
static const uint32_t special_bits[] = {
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u, 0x7FFFFFFFu, 0x7FA00000u,
    0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u,
    0x007FFFFFu, 0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu,
    0x42B17218u, 0x42B17217u, 0x42B17219u, /* 88.72283935546875 (exp: +Inf above) */
    0xC2CFF1B5u, 0xC2CFF1B4u, 0xC2CFF1B6u, /* -103.972076416015625 (exp: 0 below) */
    0xC2AEAC50u, 0xC2AEAC4Fu, 0xC2AEAC51u, /* about ln(2^-126): exp turns subnormal */
    0xC2B17218u, 0xC2B17217u, 0xC2B17219u, /* -88.72...: silu / sigmoid lose e^-x */
};
static const float special_values[] = {
    -87.5f, -90.0f, -95.5f, -100.0f, -103.0f, -103.9f, -103.97f, -104.0f, -110.0f, -1e10f, -1e30f,
    88.0f, 88.7f, 89.0f, 100.0f, 1e10f, 1e-30f, -1e-30f, 1e-7f, 0.34657359f, -0.34657359f,
    0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -2.0f, 10.0f, -10.0f, 20.0f, -20.0f, 0.69314718f,
    1.03972077f, -1.03972077f, 44.0f, -44.0f, 16.635532f, -16.635532f};

#define N_SPECIAL (sizeof special_bits / sizeof special_bits[0] + sizeof special_values / sizeof special_values[0])
static float special(size_t i) {
  size_t nb = sizeof special_bits / sizeof special_bits[0];
  return i < nb ? bitsf(special_bits[i]) : special_values[i - nb];
}

/* A value from one of several ranges: the interesting region, the range of
 * the arguments ops pass, and any bit pattern. */
static float random_value(void) {
  uint64_t r = next_u64();
  double u = (double)(r >> 11) * 0x1p-53;
  switch (r & 3) {
    case 0: return (float)(-110.0 + 205.0 * u);
    case 1: return (float)(-12.0 + 24.0 * u);
    case 2: return bitsf((uint32_t)(r >> 20));
    default: return special((size_t)(r >> 8) % N_SPECIAL);
  }
}

static int compare(size_t f, const float *x, const float *y, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    float want = fns[f].f(x[i]);
    if (fbits(y[i]) != fbits(want)) {
      CHECK_MSG(0, "%s %s: n=%zu lane %zu: x=%a (0x%08x): array 0x%08x, scalar 0x%08x", fns[f].name, what, n, i,
                (double)x[i], fbits(x[i]), fbits(y[i]), fbits(want));
      return 1;
    }
  }
  return 0;
}

/* Arrays of every length up to 100 and some longer, random contents with
 * specials sprinkled in, out of place and in place, at an odd offset. */
static void test_array_equals_scalar(void) {
  static float buf[4096 + 8], x[4096 + 8], y[4096 + 8];
  sk__isa isa = sk__cpu_isa();
  printf("isa: %s\n", sk__isa_name(isa));
  for (size_t f = 0; f < 3; f++) {
    int bad = 0;
    for (size_t n = 0; n <= 4096 && !bad; n = n < 100 ? n + 1 : n * 2 + 13) {
      for (size_t off = 0; off < 2 && !bad; off++) {
        float *xs = x + off, *ys = y + off;
        for (size_t i = 0; i < n; i++) xs[i] = random_value();
        for (size_t i = 0; i < n + 2; i++) ys[i] = -7.0f; /* guard: nothing past n is written */
        fns[f].a(xs, ys, n, isa);
        bad |= compare(f, xs, ys, n, "out of place");
        CHECK(ys[n] == -7.0f && ys[n + 1] == -7.0f);
        memcpy(buf, xs, n * sizeof(float));
        fns[f].a(buf, buf, n, isa);
        bad |= compare(f, xs, buf, n, "in place");
      }
    }
  }
}

/* Every special value in every lane of a 16- and an 8-wide vector and of
 * the tails. */
static void test_special_values_in_every_lane(void) {
  float x[40], y[40];
  sk__isa isa = sk__cpu_isa();
  for (size_t f = 0; f < 3; f++)
    for (size_t s = 0; s < N_SPECIAL; s++)
      for (size_t n = 1; n <= 37; n += 3) {
        for (size_t i = 0; i < n; i++) x[i] = special((s + i * 7) % N_SPECIAL);
        fns[f].a(x, y, n, isa);
        if (compare(f, x, y, n, "specials")) break;
      }
}

/* Hand-checked values of the definitions. */
static void test_special_results(void) {
  CHECK(isnan(sk__expf(NAN)) && isnan(sk__sigmoidf(NAN)) && isnan(sk__siluf(NAN)));
  CHECK(fbits(sk__expf(bitsf(0x7FA00000u))) == 0x7FE00000u); /* signaling NaN comes back quiet */
  CHECK(sk__expf(INFINITY) == INFINITY && fbits(sk__expf(-INFINITY)) == 0);
  CHECK(sk__expf(0.0f) == 1.0f && sk__expf(-0.0f) == 1.0f);
  CHECK(sk__expf(88.72283935546875f) == INFINITY);                    /* e^x > FLT_MAX */
  CHECK(isfinite(sk__expf(nextafterf(88.72283935546875f, 0))));      /* below ln(FLT_MAX) */
  CHECK(fbits(sk__expf(-103.972076416015625f)) == 1);                 /* the smallest subnormal */
  CHECK(fbits(sk__expf(nextafterf(-103.972076416015625f, -200))) == 0);
  CHECK(sk__expf(-100.0f) > 0 && sk__expf(-100.0f) < FLT_MIN);         /* subnormal result */
  CHECK(fbits(sk__expf(-1e30f)) == 0 && fbits(sk__expf(-FLT_MAX)) == 0);
  CHECK(sk__sigmoidf(0.0f) == 0.5f && sk__sigmoidf(100.0f) == 1.0f && fbits(sk__sigmoidf(-200.0f)) == 0);
  CHECK(sk__sigmoidf(INFINITY) == 1.0f && fbits(sk__sigmoidf(-INFINITY)) == 0);
  CHECK(sk__siluf(0.0f) == 0.0f && sk__siluf(100.0f) == 100.0f && fbits(sk__siluf(-200.0f)) == 0x80000000u);
  CHECK(isnan(sk__siluf(-INFINITY)) && sk__siluf(INFINITY) == INFINITY); /* -inf / inf, inf / 1 */
}

/* Error of got against the exact value in ulps of the float format at the
 * exact value (subnormal ulp below FLT_MIN). */
static double ulp_error(float got, double exact) {
  int e;
  frexp(fabs(exact), &e);
  int ulp_exp = e - 24 < -149 ? -149 : e - 24;
  return fabs((double)got - exact) / ldexp(1.0, ulp_exp);
}

/* The accuracy sweeps' strides through the bit patterns. Under a sanitizer
 * (make sanitize: what it checks is memory and undefined behaviour, which
 * the same code paths on a sparser sample show as well) they are about 16x
 * coarser: the full sweeps took 50 s a variant under ASan, and the Release
 * suite runs them in full. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRIDE 113
#define SAMPLE_STRIDE 977
#else
#define STRIDE 7
#define SAMPLE_STRIDE 61
#endif

/* exp against the correctly rounded e^x: every STRIDE-th bit pattern of the
 * floats in [-104, 89], through the array form (equal to the scalar one by
 * the tests above). */
static void test_exp_accuracy(void) {
  enum { CHUNK = 4096 };
  static float x[CHUNK], y[CHUNK];
  sk__isa isa = sk__cpu_isa();
  const uint32_t ranges[2][2] = {{0x00000000u, fbits(89.0f)}, {0x80000000u, fbits(-104.0f)}};
  uint32_t worst = 0;
  double worst_err = 0;
  float worst_x = 0;
  size_t count = 0;
  for (int r = 0; r < 2; r++)
    for (uint64_t u = ranges[r][0]; u <= ranges[r][1];) {
      size_t n = 0;
      for (; n < CHUNK && u <= ranges[r][1]; n++, u += STRIDE) x[n] = bitsf((uint32_t)u);
      sk__expf_array(x, y, n, isa);
      for (size_t i = 0; i < n; i++) {
        double exact = exp((double)x[i]);
        float cr = (float)exact;
        uint32_t d = fbits(y[i]) > fbits(cr) ? fbits(y[i]) - fbits(cr) : fbits(cr) - fbits(y[i]);
        if (d > worst) worst = d;
        if (cr < FLT_MAX) {
          double err = ulp_error(y[i], exact);
          if (err > worst_err) worst_err = err, worst_x = x[i];
        }
      }
      count += n;
    }
  printf("exp: %zu inputs, max %u ulp from the correctly rounded result, max error %.3f ulp (at %a)\n", count, worst,
         worst_err, (double)worst_x);
  CHECK_MSG(worst <= 1, "exp: %u ulp from the correctly rounded result (bound: 1)", worst);
  CHECK_MSG(worst_err < 1.02, "exp: %.3f ulp (bound: 1.02)", worst_err);
}

/* sigmoid and silu against the exact functions over a sample of all floats
 * (every SAMPLE_STRIDE-th bit pattern): the bounds stated in activation.h. */
static void test_sigmoid_silu_accuracy(void) {
  enum { CHUNK = 4096 };
  static float x[CHUNK], ys[CHUNK], yl[CHUNK];
  sk__isa isa = sk__cpu_isa();
  double sig_ulp = 0, sig_abs = 0, silu_ulp = 0, silu_abs = 0;
  for (uint64_t u = 0; u < 0x100000000ull;) {
    size_t n = 0;
    for (; n < CHUNK && u < 0x100000000ull; n++, u += SAMPLE_STRIDE) x[n] = bitsf((uint32_t)u);
    sk__sigmoidf_array(x, ys, n, isa);
    sk__siluf_array(x, yl, n, isa);
    for (size_t i = 0; i < n; i++) {
      if (isnan(x[i]) || isinf(x[i])) continue;
      double s = 1.0 / (1.0 + exp(-(double)x[i])), l = (double)x[i] * s;
      if (x[i] >= -87.3f) sig_ulp = fmax(sig_ulp, ulp_error(ys[i], s)); /* sigmoid >= 2^-126 */
      else sig_abs = fmax(sig_abs, fabs(ys[i] - s));
      if (x[i] > -88.72f) silu_ulp = fmax(silu_ulp, ulp_error(yl[i], l)); /* e^-x finite */
      else silu_abs = fmax(silu_abs, fabs(yl[i] - l));
    }
  }
  printf("sigmoid: max %.3f ulp (x >= -87.3), abs %a below; silu: max %.3f ulp (x > -88.72), abs %a below\n", sig_ulp,
         sig_abs, silu_ulp, silu_abs);
  CHECK_MSG(sig_ulp <= 2.0, "sigmoid: %.3f ulp (bound 2)", sig_ulp);
  CHECK_MSG(sig_abs < 0x1p-128, "sigmoid: absolute error %a (bound 2^-128)", sig_abs);
  CHECK_MSG(silu_ulp <= 2.5, "silu: %.3f ulp (bound 2.5)", silu_ulp);
  CHECK_MSG(silu_abs < 0x1p-121, "silu: absolute error %a (bound 2^-121)", silu_abs);
}

TEST_MAIN(TEST_CASE(test_array_equals_scalar), TEST_CASE(test_special_values_in_every_lane),
          TEST_CASE(test_special_results), TEST_CASE(test_exp_accuracy), TEST_CASE(test_sigmoid_silu_accuracy))

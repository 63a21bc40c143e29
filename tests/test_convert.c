/* sk__convert on this run's ISA path ($SK_ISA) against the reference, for
 * every dtype pair, odd sizes, random data and special values; and the rules
 * themselves on hand-written cases. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu.h"
#include "harness.h"
#include "kernels/convert/convert.h"

static const sk_dtype all_dtypes[] = {SK_FP32, SK_FP16, SK_BF16, SK_INT8, SK_INT32, SK_INT64, SK_BOOL, SK_UINT8};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

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

/* ---- test data ---------------------------------------------------------------- */

static const uint32_t special_f32[] = {
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u, 0x7FFFFFFFu, /* NaNs */
    0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,              /* Inf, 0 */
    0x00000001u, 0x807FFFFFu, 0x00400000u,                           /* fp32 subnormals */
    0x33000000u, 0x33000001u, 0x387FC000u, 0x38800000u, 0xB3800000u, /* fp16 subnormal range */
    0x477FF000u, 0x477FEFFFu, 0xC77FF000u, 0x47800000u,              /* fp16 overflow */
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x3F808000u, 0x3F818000u, /* bf16 ties */
    0x4F000000u, 0xCF000000u, 0x4EFFFFFFu, 0xCF000001u,              /* +-2^31 */
    0x5F000000u, 0xDF000000u, 0x5EFFFFFFu, 0xDF000001u,              /* +-2^63 */
    0x4F32D05Eu, 0xCF32D05Eu, 0x60AD78ECu, 0xE0AD78ECu,              /* 3e9, 1e20 */
};
static const float special_f32_values[] = {
    2.7f, -2.7f, 0.5f, -0.5f, 0.99999994f, -0.99999994f, 127.0f, 127.9f, 128.0f,
    -128.0f, -128.9f, -129.0f, 255.0f, 256.0f, 300.0f, -300.0f, 1.0f + 0x1p-11f,
    65504.0f, 65519.996f, 16777216.0f, 16777217.0f, 1.5f, 2.5f, -2.5f};
static const uint16_t special_f16[] = {0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFD55,
                                       0x7FFF, 0x0000, 0x8000, 0x0001, 0x8001, 0x03FF,
                                       0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0x5800, 0xD800,
                                       0x57FF, 0x5BFF};
static const uint16_t special_bf16[] = {0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFF81,
                                        0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x7F7F,
                                        0xFF7F, 0x4F00, 0xCF00, 0x4EFF, 0x5F00, 0xDF00,
                                        0x4300, 0x4301, 0xC301, 0x3F80};
static const int64_t special_int[] = {0, 1, -1, 127, 128, -128, -129, 255, 256, 300, -300,
                                      INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1,
                                      (int64_t)INT32_MIN - 1, 16777216, 16777217, 16777219,
                                      -16777217, 65504, 65519, 65520, 65535, 2049, 2051,
                                      (1 << 30) + (1 << 22) + 1, INT64_MAX, INT64_MIN,
                                      INT64_MAX - 1, INT64_MIN + 1, (int64_t)1 << 53,
                                      ((int64_t)1 << 53) + 1, 0x100000005};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static float random_float(void) {
  uint64_t r = next_u64();
  switch (r % 5) {
    case 0: return bitsf((uint32_t)(r >> 32));                       /* any bits */
    case 1: return bitsf(special_f32[(r >> 8) % COUNT(special_f32)]);
    case 2: return special_f32_values[(r >> 8) % COUNT(special_f32_values)];
    case 3: return (float)((int64_t)(r >> 33) % 80000) / 64.0f - 600.0f; /* +-1250 */
    default: return ldexpf((float)(r >> 40) / 16777216.0f, (int)((r >> 8) % 140) - 70);
  }
}

static int64_t random_int(void) {
  uint64_t r = next_u64();
  switch (r % 4) {
    case 0: return (int64_t)r;
    case 1: return special_int[(r >> 8) % COUNT(special_int)];
    case 2: return (int64_t)(r >> 40) - (1 << 23);                  /* +-2^23 */
    default: return (int8_t)(r >> 50);
  }
}

/* Fills n elements of dtype d: random values plus each dtype's specials. */
static void fill(void *p, sk_dtype d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = next_u64();
    int special = (r & 3) == 0;
    switch (d) {
      case SK_FP32: ((float *)p)[i] = random_float(); break;
      case SK_FP16:
        ((uint16_t *)p)[i] = special ? special_f16[(r >> 8) % COUNT(special_f16)]
                             : (r & 4) ? (uint16_t)(r >> 16)
                                       : sk_fp32_to_fp16(random_float());
        break;
      case SK_BF16:
        ((uint16_t *)p)[i] = special ? special_bf16[(r >> 8) % COUNT(special_bf16)]
                             : (r & 4) ? (uint16_t)(r >> 16)
                                       : sk_fp32_to_bf16(random_float());
        break;
      case SK_INT8: ((int8_t *)p)[i] = (int8_t)random_int(); break;
      case SK_INT32: ((int32_t *)p)[i] = (int32_t)random_int(); break;
      case SK_INT64: ((int64_t *)p)[i] = random_int(); break;
      case SK_UINT8: ((uint8_t *)p)[i] = (uint8_t)random_int(); break;
      /* Mostly 0 / 1, sometimes any byte: every nonzero one reads as true. */
      case SK_BOOL: ((uint8_t *)p)[i] = (r & 4) ? (uint8_t)(r >> 16) : (uint8_t)((r >> 16) & 1); break;
      default: break;
    }
  }
}

/* ---- the ISA path against the reference --------------------------------------- */

#define GUARD 64 /* canary elements after dst: masked tails must not write there */

/* Converts with the ISA path and the reference; checks equal bits and an
 * untouched canary. Returns 1 when they agree. */
static int compare_paths(const void *src, sk_dtype s, sk_dtype d, size_t n, const char *what) {
  size_t dsz = sk_dtype_size(d);
  size_t bytes = (n + GUARD + 1) * dsz;
  unsigned char *got = malloc(bytes);
  unsigned char *want = malloc(bytes);
  if (!got || !want) {
    CHECK(!"out of memory");
    free(got);
    free(want);
    return 0;
  }
  /* One element in, in half the runs: stores not aligned to the vector. */
  unsigned char *g = got + (n & 1) * dsz, *w = want + (n & 1) * dsz;
  memset(got, 0xA5, bytes);
  memset(want, 0xA5, bytes);
  sk__convert(src, s, g, d, n, sk__cpu_isa());
  sk__convert_reference(src, s, w, d, n);
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) {
    if (memcmp(g + i * dsz, w + i * dsz, dsz) != 0) {
      ok = 0;
      uint64_t sv = 0, gv = 0, wv = 0;
      memcpy(&sv, (const unsigned char *)src + i * sk_dtype_size(s), sk_dtype_size(s));
      memcpy(&gv, g + i * dsz, dsz);
      memcpy(&wv, w + i * dsz, dsz);
      CHECK_MSG(0, "%s %s -> %s n=%zu [%zu]: src 0x%llx, got 0x%llx, reference 0x%llx", what,
                sk_dtype_name(s), sk_dtype_name(d), n, i, (unsigned long long)sv,
                (unsigned long long)gv, (unsigned long long)wv);
    }
  }
  for (size_t i = n * dsz; i < (n + GUARD) * dsz && ok; i++) {
    if (g[i] != 0xA5) {
      ok = 0;
      CHECK_MSG(0, "%s %s -> %s n=%zu: wrote past the end (byte %zu)", what, sk_dtype_name(s),
                sk_dtype_name(d), n, i);
    }
  }
  free(got);
  free(want);
  return ok;
}

static void test_isa_matches_reference(void) {
  printf("isa: %s (supported %s)\n", sk__isa_name(sk__cpu_isa()),
         sk__isa_name(sk__cpu_isa_supported()));
  static const size_t sizes[] = {0, 1, 7, 15, 16, 17, 63, 65, 257, 1000};
  for (size_t si = 0; si < N_DTYPES; si++) {
    for (size_t di = 0; di < N_DTYPES; di++) {
      sk_dtype s = all_dtypes[si], d = all_dtypes[di];
      for (size_t k = 0; k < COUNT(sizes); k++) {
        size_t n = sizes[k];
        /* One spare element in front: an unaligned source in half the runs. */
        unsigned char *buf = malloc((n + 1) * sk_dtype_size(s));
        if (!buf) continue;
        unsigned char *src = buf + (k & 1) * sk_dtype_size(s);
        fill(src, s, n);
        compare_paths(src, s, d, n, "random");
        free(buf);
      }
    }
  }
}

/* Every fp16 / bf16 pattern and every byte as int8, uint8 and bool to every
 * dtype. */
static void test_exhaustive_16bit_sources(void) {
  uint16_t *all16 = malloc(65536 * sizeof *all16);
  int8_t all8[256];
  uint8_t bytes[256];
  if (!all16) return;
  for (uint32_t i = 0; i < 65536; i++) all16[i] = (uint16_t)i;
  for (int i = 0; i < 256; i++) all8[i] = (int8_t)(i - 128), bytes[i] = (uint8_t)i;
  for (size_t di = 0; di < N_DTYPES; di++) {
    compare_paths(all16, SK_FP16, all_dtypes[di], 65536, "all fp16");
    compare_paths(all16, SK_BF16, all_dtypes[di], 65536, "all bf16");
    compare_paths(all8, SK_INT8, all_dtypes[di], 256, "all int8");
    compare_paths(bytes, SK_UINT8, all_dtypes[di], 256, "all uint8");
    compare_paths(bytes, SK_BOOL, all_dtypes[di], 256, "all bool bytes");
  }
  free(all16);
}

/* A million fp32 patterns spread over the whole 2^32 range, and int32s. */
static void test_fp32_and_int32_sample(void) {
  const size_t n = 1u << 20;
  uint32_t *p = malloc(n * sizeof *p);
  if (!p) return;
  for (size_t i = 0; i < n; i++) p[i] = (uint32_t)(i * 4099u) ^ (uint32_t)next_u64() << 24;
  for (size_t di = 0; di < N_DTYPES; di++) {
    compare_paths(p, SK_FP32, all_dtypes[di], n, "fp32 sample");
    compare_paths(p, SK_INT32, all_dtypes[di], n, "int32 sample");
  }
  free(p);
}

/* In place with equal dtypes (the one allowed overlap) is a no-op. */
static void test_same_dtype_copy(void) {
  for (size_t di = 0; di < N_DTYPES; di++) {
    sk_dtype d = all_dtypes[di];
    unsigned char a[100 * 8], b[100 * 8], c[100 * 8];
    fill(a, d, 100);
    memcpy(c, a, sizeof a);
    sk__convert(a, d, b, d, 100, sk__cpu_isa());
    CHECK(memcmp(a, b, 100 * sk_dtype_size(d)) == 0); /* bits, sNaN included */
    sk__convert(a, d, a, d, 100, sk__cpu_isa());
    CHECK(memcmp(a, c, sizeof a) == 0);
  }
}

/* ---- the rules on hand-written cases -------------------------------------------- */

/* Converts one value with both paths; both must give want (raw bits). */
static void expect(sk_dtype s, const void *src, sk_dtype d, uint64_t want, int line) {
  uint64_t got_isa = 0, got_ref = 0;
  size_t dsz = sk_dtype_size(d);
  /* Also in the middle of a vector: 20 copies. */
  unsigned char sv[20 * 8], dv[20 * 8];
  for (int i = 0; i < 20; i++) memcpy(sv + i * sk_dtype_size(s), src, sk_dtype_size(s));
  sk__convert(sv, s, dv, d, 20, sk__cpu_isa());
  memcpy(&got_isa, dv + 17 * dsz, dsz);
  sk__convert_reference(src, s, &got_ref, d, 1);
  uint64_t mask = dsz == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * dsz)) - 1;
  want &= mask;
  CHECK_MSG(got_isa == want && got_ref == want,
            "line %d: %s -> %s: isa 0x%llx, reference 0x%llx, want 0x%llx", line,
            sk_dtype_name(s), sk_dtype_name(d), (unsigned long long)got_isa,
            (unsigned long long)got_ref, (unsigned long long)want);
}

#define F32(x, d, want) do { float v_ = (x); expect(SK_FP32, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define F16(x, d, want) do { uint16_t v_ = (x); expect(SK_FP16, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define BF16(x, d, want) do { uint16_t v_ = (x); expect(SK_BF16, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define I8(x, d, want) do { int8_t v_ = (x); expect(SK_INT8, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define I32(x, d, want) do { int32_t v_ = (x); expect(SK_INT32, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define I64(x, d, want) do { int64_t v_ = (x); expect(SK_INT64, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define U8(x, d, want) do { uint8_t v_ = (x); expect(SK_UINT8, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define B8(x, d, want) do { uint8_t v_ = (x); expect(SK_BOOL, &v_, d, (uint64_t)(want), __LINE__); } while (0)
#define U32(i) ((uint64_t)(uint32_t)(i))
#define FB(f) ((uint64_t)fbits(f))

static void test_float_to_int_rules(void) {
  /* Truncate toward zero. */
  F32(2.7f, SK_INT32, 2);
  F32(-2.7f, SK_INT32, U32(-2));
  F32(-0.5f, SK_INT32, 0);
  F32(-0.0f, SK_INT32, 0);
  F32(2.7f, SK_INT8, 2);
  F32(-2.7f, SK_INT64, (uint64_t)-2);
  /* Saturate. */
  F32(3e9f, SK_INT32, INT32_MAX);
  F32(-3e9f, SK_INT32, U32(INT32_MIN));
  F32(2147483648.0f, SK_INT32, INT32_MAX);
  F32(-2147483648.0f, SK_INT32, U32(INT32_MIN));
  F32(2147483520.0f, SK_INT32, 2147483520);
  F32(INFINITY, SK_INT32, INT32_MAX);
  F32(-INFINITY, SK_INT32, U32(INT32_MIN));
  F32(127.9f, SK_INT8, 127);
  F32(128.0f, SK_INT8, 127);
  F32(200.0f, SK_INT8, 127);
  F32(-128.9f, SK_INT8, (uint8_t)-128);
  F32(-200.0f, SK_INT8, (uint8_t)-128);
  F32(1e19f, SK_INT64, (uint64_t)INT64_MAX);
  F32(-1e19f, SK_INT64, (uint64_t)INT64_MIN);
  F32(9223372036854775808.0f, SK_INT64, (uint64_t)INT64_MAX);
  F32(-9223372036854775808.0f, SK_INT64, (uint64_t)INT64_MIN);
  F32(3e9f, SK_INT64, 3000000000u);
  /* NaN -> 0, whatever its sign and payload. */
  F32(NAN, SK_INT32, 0);
  F32(-NAN, SK_INT32, 0);
  F32(bitsf(0x7F800001u), SK_INT32, 0);
  F32(NAN, SK_INT8, 0);
  F32(NAN, SK_INT64, 0);
  F16(0x7E00, SK_INT32, 0);
  F16(0x7C01, SK_INT8, 0);
  BF16(0xFFC0, SK_INT64, 0);
  /* fp16 / bf16 sources: widened exactly first. */
  F16(0x7C00, SK_INT32, INT32_MAX);
  F16(0xFC00, SK_INT32, U32(INT32_MIN));
  F16(0x7BFF, SK_INT32, 65504);
  F16(0x7BFF, SK_INT8, 127);
  F16(0x3E00, SK_INT32, 1); /* 1.5 */
  F16(0xBE00, SK_INT8, (uint8_t)-1);
  BF16(0x4F00, SK_INT32, INT32_MAX);   /* 2^31 */
  BF16(0xCF00, SK_INT32, U32(INT32_MIN));
  BF16(0x4EFF, SK_INT32, 2139095040);  /* 2^31 - 2^23 */
  BF16(0x5F00, SK_INT64, (uint64_t)INT64_MAX);
}

static void test_int_to_float_rules(void) {
  F32(0.0f, SK_FP32, 0); /* sanity of the macro */
  I32(16777217, SK_FP32, FB(16777216.0f)); /* tie: even */
  I32(16777219, SK_FP32, FB(16777220.0f)); /* tie: even (up) */
  I32(16777218, SK_FP32, FB(16777218.0f));
  I32(INT32_MAX, SK_FP32, FB(2147483648.0f));
  I32(INT32_MIN, SK_FP32, FB(-2147483648.0f));
  I32(-7, SK_FP32, FB(-7.0f));
  I64(INT64_MAX, SK_FP32, FB(9223372036854775808.0f));
  I64(((int64_t)1 << 40) + 1, SK_FP32, FB(1099511627776.0f));
  I8(-128, SK_FP32, FB(-128.0f));
  /* fp16: exact below 2048, ties to even above, Inf from 65520. */
  I32(2049, SK_FP16, 0x6800);   /* 2048 */
  I32(2051, SK_FP16, 0x6802);   /* 2052 */
  I32(65504, SK_FP16, 0x7BFF);
  I32(65519, SK_FP16, 0x7BFF);
  I32(65520, SK_FP16, 0x7C00);
  I32(-70000, SK_FP16, 0xFC00);
  I64(INT64_MIN, SK_FP16, 0xFC00);
  I8(-128, SK_FP16, 0xD800);
  I8(127, SK_FP16, 0x57F0);
  /* bf16: rounded once from the exact integer (2^30 + 2^22 + 1 is just
   * above a bf16 tie; via an RNE fp32 it would look like the tie itself). */
  I32((1 << 30) + (1 << 22) + 1, SK_BF16, 0x4E81);
  I32((1 << 30) + (1 << 22), SK_BF16, 0x4E80); /* a true tie: even */
  I32(-((1 << 30) + (1 << 22) + 1), SK_BF16, 0xCE81);
  I64(((int64_t)1 << 62) + ((int64_t)1 << 54) + 1, SK_BF16, 0x5E81);
  I32(257, SK_BF16, 0x4380);   /* 256: tie, even */
  I32(259, SK_BF16, 0x4382);   /* 260 */
  I8(127, SK_BF16, 0x42FE);
  I64(INT64_MAX, SK_BF16, 0x5F00);
}

static void test_int_to_int_rules(void) {
  I32(300, SK_INT8, 44);
  I32(-200, SK_INT8, 56);
  I32(128, SK_INT8, (uint8_t)-128);
  I32(-1, SK_INT8, 0xFF);
  I32(-1, SK_INT64, UINT64_MAX);
  I32(INT32_MIN, SK_INT64, (uint64_t)(int64_t)INT32_MIN);
  I64(0x100000005, SK_INT32, 5);
  I64(0x1FFFFFFFF, SK_INT32, 0xFFFFFFFF);
  I64(INT64_MIN, SK_INT32, 0);
  I64(0x1234567890ABCDEF, SK_INT8, 0xEF);
  I8(-1, SK_INT64, UINT64_MAX);
  I8(-128, SK_INT32, U32(-128));
}

static void test_float_to_float_rules(void) {
  F32(1.0f, SK_FP16, 0x3C00);
  F32(65520.0f, SK_FP16, 0x7C00);
  F32(65519.996f, SK_FP16, 0x7BFF);
  F32(0x1p-25f, SK_FP16, 0x0000);
  F32(0x3p-25f, SK_FP16, 0x0002);
  F32(-0.0f, SK_FP16, 0x8000);
  F32(NAN, SK_FP16, 0x7E00);
  F32(bitsf(0xFF800001u), SK_FP16, 0xFE00); /* signaling in, quiet out */
  F32(1.0f, SK_BF16, 0x3F80);
  F32(bitsf(0x3F808000u), SK_BF16, 0x3F80); /* tie: even */
  F32(bitsf(0x3F818000u), SK_BF16, 0x3F82);
  F32(bitsf(0x00010000u), SK_BF16, 0x0001); /* subnormal kept */
  F32(FLT_MAX, SK_BF16, 0x7F80);
  F32(bitsf(0x7F800001u), SK_BF16, 0x7FC0);
  F16(0x3C00, SK_FP32, FB(1.0f));
  F16(0x0001, SK_FP32, FB(0x1p-24f));
  F16(0x8000, SK_FP32, FB(-0.0f));
  F16(0x7C00, SK_FP32, FB(INFINITY));
  BF16(0x0001, SK_FP32, 0x00010000u);
  BF16(0x7F81, SK_FP32, 0x7F810000u);      /* widening is a shift */
  F16(0x3C01, SK_BF16, 0x3F80);            /* 1 + 2^-10 -> 1 */
  F16(0x0001, SK_BF16, 0x3380);            /* 2^-24 exact */
  F16(0x7BFF, SK_BF16, 0x4780);            /* 65504 -> 65536 */
  BF16(0x4780, SK_FP16, 0x7C00);           /* 65536 -> Inf */
  BF16(0x3F81, SK_FP16, 0x3C08);           /* 1.0078125 exact */
  BF16(0x3380, SK_FP16, 0x0001);
  BF16(0x3300, SK_FP16, 0x0000);           /* 2^-25: tie, even */
  BF16(0x7FC0, SK_FP16, 0x7E00);
}

/* uint8: float sources truncate and saturate to [0, 255] (NaN -> 0);
 * integers wrap to the low byte; uint8 widens as unsigned. */
static void test_uint8_rules(void) {
  F32(2.7f, SK_UINT8, 2);
  F32(-0.5f, SK_UINT8, 0);   /* truncates to 0 */
  F32(-1.0f, SK_UINT8, 0);   /* saturates */
  F32(-300.0f, SK_UINT8, 0);
  F32(255.9f, SK_UINT8, 255);
  F32(256.0f, SK_UINT8, 255);
  F32(1e10f, SK_UINT8, 255);
  F32(INFINITY, SK_UINT8, 255);
  F32(-INFINITY, SK_UINT8, 0);
  F32(NAN, SK_UINT8, 0);
  F16(0x5BFF, SK_UINT8, 255);  /* 255.875 */
  F16(0x7E00, SK_UINT8, 0);
  BF16(0x4380, SK_UINT8, 255); /* 256 */
  BF16(0xBF80, SK_UINT8, 0);   /* -1 */
  I32(300, SK_UINT8, 44);
  I32(-1, SK_UINT8, 255);
  I8(-128, SK_UINT8, 128);
  I64(0x1234567890ABCDEF, SK_UINT8, 0xEF);
  U8(255, SK_INT8, 0xFF);
  U8(255, SK_INT32, 255);
  U8(200, SK_INT64, 200);
  U8(255, SK_FP32, FB(255.0f));
  U8(255, SK_FP16, 0x5BF8);
  U8(255, SK_BF16, 0x437F);
  U8(7, SK_BOOL, 1);
  U8(0, SK_BOOL, 0);
}

/* bool: anything -> bool is != 0 (NaN true, -0.0 false, no truncation
 * first); bool -> anything is 0 or 1, any nonzero byte being 1; bool ->
 * bool is a copy. */
static void test_bool_rules(void) {
  F32(0.0f, SK_BOOL, 0);
  F32(-0.0f, SK_BOOL, 0);
  F32(0.5f, SK_BOOL, 1);
  F32(bitsf(0x00000001u), SK_BOOL, 1); /* smallest subnormal */
  F32(NAN, SK_BOOL, 1);
  F32(-INFINITY, SK_BOOL, 1);
  F16(0x8000, SK_BOOL, 0);
  F16(0x0001, SK_BOOL, 1);
  F16(0x7E00, SK_BOOL, 1);
  BF16(0x8000, SK_BOOL, 0);
  BF16(0xFFC0, SK_BOOL, 1);
  I32(0, SK_BOOL, 0);
  I32(-1, SK_BOOL, 1);
  I32(256, SK_BOOL, 1);
  I64(0x100000000, SK_BOOL, 1); /* not the low byte */
  I8(-128, SK_BOOL, 1);
  for (unsigned b = 0; b < 256; b += 85) { /* 0, 85, 170, 255 */
    unsigned t = b != 0;
    B8((uint8_t)b, SK_INT8, t);
    B8((uint8_t)b, SK_INT32, t);
    B8((uint8_t)b, SK_INT64, t);
    B8((uint8_t)b, SK_UINT8, t);
    B8((uint8_t)b, SK_FP32, t ? FB(1.0f) : 0);
    B8((uint8_t)b, SK_FP16, t ? 0x3C00 : 0);
    B8((uint8_t)b, SK_BF16, t ? 0x3F80 : 0);
    B8((uint8_t)b, SK_BOOL, b); /* a copy */
  }
}

/* sk__load_f32 / sk__store_f32 agree with a one-element conversion. */
static void test_load_store_f32(void) {
  for (size_t di = 0; di < N_DTYPES; di++) {
    sk_dtype d = all_dtypes[di];
    unsigned char buf[32 * 8];
    fill(buf, d, 32);
    for (size_t i = 0; i < 32; i++) {
      float want;
      sk__convert_reference(buf + i * sk_dtype_size(d), d, &want, SK_FP32, 1);
      float got = sk__load_f32(buf, d, i);
      CHECK_MSG(fbits(got) == fbits(want), "load %s [%zu]", sk_dtype_name(d), i);
    }
    for (size_t i = 0; i < 32; i++) {
      float v = random_float();
      unsigned char a[8] = {0}, b[8] = {0}, block[32 * 8];
      memset(block, 0x5A, sizeof block);
      sk__convert_reference(&v, SK_FP32, a, d, 1);
      sk__store_f32(block, d, i, v);
      memcpy(b, block + i * sk_dtype_size(d), sk_dtype_size(d));
      CHECK_MSG(memcmp(a, b, 8) == 0, "store %s [%zu] of %08x", sk_dtype_name(d), i, fbits(v));
      /* Only element i was written. */
      for (size_t j = 0; j < 32 * sk_dtype_size(d); j++)
        if (j / sk_dtype_size(d) != i) CHECK(block[j] == 0x5A);
    }
  }
  CHECK(sk__load_f32((int32_t[]){16777217}, SK_INT32, 0) == 16777216.0f);
  CHECK(sk__load_f32((int64_t[]){-3}, SK_INT64, 0) == -3.0f);
}

TEST_MAIN(TEST_CASE(test_isa_matches_reference), TEST_CASE(test_exhaustive_16bit_sources),
          TEST_CASE(test_fp32_and_int32_sample), TEST_CASE(test_same_dtype_copy),
          TEST_CASE(test_float_to_int_rules), TEST_CASE(test_int_to_float_rules),
          TEST_CASE(test_int_to_int_rules), TEST_CASE(test_float_to_float_rules),
          TEST_CASE(test_uint8_rules), TEST_CASE(test_bool_rules),
          TEST_CASE(test_load_store_f32))

/* GEMM kernels: every ISA path (the ctest variants set $SK_ISA) must give the
 * bits of sk__gemm_reference for every dtype combination, shape, tiling,
 * leading dimension and special value; the reference itself is checked
 * against hand-computed results. Registered again with $SK_NUMERICS=amx:
 * the same cases under the AMX contract (bf16 x bf16 on the AMX kernel:
 * TDPBF16PS where the CPU has AMX-BF16, its emulation elsewhere). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cpu.h"
#include "harness.h"
#include "kernels/gemm/gemm.h"

/* ---- deterministic random numbers (splitmix64, fixed seed) ---- */
static uint64_t rng_state = 0x5EED5EED12345678ull;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t rng_int(int64_t lo, int64_t hi) { /* [lo, hi] */
  return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}
static float rng_float(float scale) { /* uniform in [-scale, scale), full mantissa */
  return scale * ((float)(rng_next() >> 40) * 0x1p-23f - 1.0f);
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Special values per dtype, as raw bits: zeros, infinities, NaNs (quiet,
 * signalling, negative, with payloads), subnormals, the largest finite. */
static const uint32_t special_f32[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7FA12345u,
    0xFFC00001u, 0x00000001u, 0x80400000u, 0x007FFFFFu, 0x7F7FFFFFu, 0x477FF000u,
    0x33800000u, 0x38800000u};
static const uint16_t special_f16[] = {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7D01,
                                       0xFE55, 0x0001, 0x83FF, 0x0200, 0x7BFF, 0xFBFF};
static const uint16_t special_bf16[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81,
                                        0xFFD5, 0x0001, 0x807F, 0x0040, 0x7F7F, 0x0080};

typedef enum fill_mode { FILL_RANDOM, FILL_SPECIAL } fill_mode;

/* The contract the cases run under ($SK_NUMERICS: default or amx). */
static sk_numerics numerics_under_test = SK_NUMERICS_DEFAULT;
__attribute__((constructor)) static void read_numerics(void) {
  const char *env = getenv("SK_NUMERICS");
  if (env && strcmp(env, "amx") == 0) numerics_under_test = SK_NUMERICS_AMX;
}

/* Writes value index i of a buffer of dtype: a random value of the given
 * scale (rounded to dtype) or, in FILL_SPECIAL mode, sometimes a special. */
static void fill_one(void *buf, sk_dtype dt, size_t i, fill_mode mode, float scale) {
  int special = mode == FILL_SPECIAL && rng_int(0, 99) < 12;
  if (dt == SK_FP32) {
    ((float *)buf)[i] = special ? bits_f32(special_f32[rng_int(0, 13)]) : rng_float(scale);
  } else if (dt == SK_FP16) {
    ((uint16_t *)buf)[i] =
        special ? special_f16[rng_int(0, 11)] : sk_fp32_to_fp16(rng_float(scale));
  } else {
    ((uint16_t *)buf)[i] =
        special ? special_bf16[rng_int(0, 11)] : sk_fp32_to_bf16(rng_float(scale));
  }
}

/* A rows x cols matrix with leading dimension ld, allocated to the exact
 * byte (so ASan sees any over-read past its last element); gaps between
 * rows hold a sentinel. */
static void *make_matrix(int64_t rows, int64_t cols, int64_t ld, sk_dtype dt, fill_mode mode,
                         float scale) {
  size_t es = sk_dtype_size(dt);
  size_t count = rows > 0 && cols > 0 ? (size_t)((rows - 1) * ld + cols) : 1;
  unsigned char *buf = malloc(count * es);
  memset(buf, 0xA5, count * es);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) fill_one(buf, dt, (size_t)(r * ld + c), mode, scale);
  return buf;
}

static const char *dn(sk_dtype dt) { return sk_dtype_name(dt); }

/* Computes the tiles given by the cut lists (m cuts, n cuts, both ending at
 * m and n), each with its own exactly-sized, garbage-filled workspace. */
static void run_tiles(const sk__gemm_problem *p, const int64_t *mcuts, int nm,
                      const int64_t *ncuts, int nn) {
  sk__isa isa = sk__cpu_isa();
  for (int bi = 0; bi < nm; bi++)
    for (int bj = 0; bj < nn; bj++) {
      int64_t m0 = bi ? mcuts[bi - 1] : 0, m1 = mcuts[bi];
      int64_t n0 = bj ? ncuts[bj - 1] : 0, n1 = ncuts[bj];
      size_t ws_size = sk__gemm_workspace_size(m1 - m0, n1 - n0, p->k);
      void *ws = sk__aligned_alloc(ws_size);
      memset(ws, 0xFF, ws_size ? ws_size : 1); /* NaN everywhere: stale reads show */
      sk__gemm_tile(p, m0, m1, n0, n1, ws, isa);
      sk__aligned_free(ws);
    }
}

/* Up to 4 random cuts of [0, len) into pieces, ending with len. */
static int random_cuts(int64_t len, int64_t *cuts) {
  int n = 0;
  int64_t pos = 0;
  while (n < 3 && pos < len) {
    int64_t step = rng_int(1, len);
    if (pos + step >= len) break;
    pos += step;
    cuts[n++] = pos;
  }
  cuts[n++] = len;
  return n;
}

typedef struct case_desc {
  int64_t m, n, k;
  sk_dtype a, b, bias, c; /* bias SK_DTYPE_INVALID = no bias */
  int strided;            /* lda > k, ldb > n, ldc > n */
  fill_mode mode;
  float scale_a, scale_b;
  int tilings;            /* 1: whole matrix only; more: also random odd splits */
} case_desc;

/* Runs one case against the reference; returns 1 when all bits match. */
static int check_case(const case_desc *d) {
  int64_t lda = d->k + (d->strided ? rng_int(1, 9) : 0);
  int64_t ldb = d->n + (d->strided ? rng_int(1, 9) : 0);
  int64_t ldc = d->n + (d->strided ? rng_int(1, 9) : 0);
  void *a = make_matrix(d->m, d->k, lda, d->a, d->mode, d->scale_a);
  void *b = make_matrix(d->k, d->n, ldb, d->b, d->mode, d->scale_b);
  void *bias = d->bias ? make_matrix(1, d->n, d->n, d->bias, d->mode, 1.0f) : NULL;
  size_t c_bytes = (size_t)(d->m * ldc) * sk_dtype_size(d->c);
  unsigned char *want = malloc(c_bytes), *got = malloc(c_bytes);
  memset(want, 0x5A, c_bytes);

  sk__gemm_problem p = {d->m, d->n, d->k, a, d->a, lda, b, d->b, ldb, bias, d->bias,
                        want, d->c, ldc, NULL, numerics_under_test};
  sk__gemm_reference(&p);
  p.c = got;
  /* B packed once (constant weights): every tiling runs from it as well;
   * tiles that start off a panel boundary pack for themselves. */
  size_t packed_bytes = sk__gemm_packed_b_size(sk__cpu_isa(), d->b, d->k, d->n);
  void *packed = packed_bytes ? sk__aligned_alloc(packed_bytes) : NULL; /* panels are 64-byte aligned */
  if (packed) sk__gemm_pack_b(sk__cpu_isa(), numerics_under_test, b, d->b, ldb, d->k, d->n, packed);
  int ok = 1;
  for (int run = 0; run < 2 * d->tilings && ok; run++) {
    int t = run / 2;
    p.b_packed = run % 2 ? packed : NULL;
    memset(got, 0x5A, c_bytes); /* same sentinel: gaps must stay untouched */
    int64_t mcuts[4], ncuts[4];
    int nm = 1, nn = 1;
    mcuts[0] = d->m;
    ncuts[0] = d->n;
    if (t > 0) {
      nm = random_cuts(d->m, mcuts);
      nn = random_cuts(d->n, ncuts);
    }
    run_tiles(&p, mcuts, nm, ncuts, nn);
    harness_checks++; /* one check per tiling; a failure reports its first bad element */
    if (memcmp(want, got, c_bytes) != 0) {
      size_t es = sk_dtype_size(d->c), at = 0;
      while (memcmp(want + at * es, got + at * es, es) == 0) at++;
      uint32_t w = 0, g = 0;
      memcpy(&w, want + at * es, es);
      memcpy(&g, got + at * es, es);
      harness_failures++;
      fprintf(stderr, "mismatch: %s, numerics %s, a=%s b=%s bias=%s c=%s m=%lld n=%lld k=%lld lda=%lld ldb=%lld "
                "ldc=%lld tiling %d%s: element %zu (row %lld col %lld) want 0x%x got 0x%x\n",
                sk__isa_name(sk__cpu_isa()), sk_numerics_name(numerics_under_test), dn(d->a), dn(d->b),
                d->bias ? dn(d->bias) : "none", dn(d->c), (long long)d->m, (long long)d->n,
                (long long)d->k, (long long)lda, (long long)ldb, (long long)ldc, t,
                p.b_packed ? " (B packed once)" : "", at,
                (long long)(at / (size_t)ldc), (long long)(at % (size_t)ldc), w, g);
      ok = 0;
    }
  }
  free(a);
  free(b);
  free(bias);
  free(want);
  free(got);
  sk__aligned_free(packed);
  return ok;
}

static const sk_dtype float_dtypes[] = {SK_FP32, SK_FP16, SK_BF16};
static const int64_t sizes[] = {1, 7, 17, 63, 65, 257};

/* The reference against hand-computed values, including a case where only a
 * fused multiply-add (not mul then add) gives the right answer. */
static void test_reference_hand(void) {
  const float a[4] = {1, 2, 3, 4};              /* 2 x 2 */
  const float b[6] = {5, 6, 7, 8, 9, 10};       /* 2 x 3 */
  const float bias[3] = {0.5f, -1.0f, 2.0f};
  const float want[6] = {21.5f, 23.0f, 29.0f, 47.5f, 53.0f, 63.0f};
  float c[6];
  sk__gemm_problem p = {2, 3, 2, a, SK_FP32, 2, b, SK_FP32, 3, bias, SK_FP32, c, SK_FP32, 3, NULL, SK_NUMERICS_DEFAULT};
  sk__gemm_reference(&p);
  CHECK(memcmp(c, want, sizeof c) == 0);

  /* fp16 output of the same; 21.5 etc. are exact in fp16. */
  uint16_t c16[6];
  p.c = c16;
  p.c_dtype = SK_FP16;
  sk__gemm_reference(&p);
  for (int i = 0; i < 6; i++) CHECK(c16[i] == sk_fp32_to_fp16(want[i]));

  /* x = 1 + 2^-12: fmaf(x, x, 0) = 1 + 2^-11 (the 2^-24 tie rounds to even),
   * then fmaf(x, -x, that) = -2^-24 exactly; mul-then-add would give 0. */
  const float x = 1.0f + 0x1p-12f;
  const float a2[2] = {x, x}, b2[2] = {x, -x};
  float c2;
  sk__gemm_problem q = {1, 1, 2, a2, SK_FP32, 2, b2, SK_FP32, 1, NULL, SK_DTYPE_INVALID,
                        &c2, SK_FP32, 1, NULL, SK_NUMERICS_DEFAULT};
  sk__gemm_reference(&q);
  CHECK(c2 == -0x1p-24f);
  uint16_t h;
  q.c = &h;
  q.c_dtype = SK_FP16;
  sk__gemm_reference(&q);
  CHECK(h == 0x8001); /* the smallest fp16 subnormal, negative */

  /* NaN results are stored as the canonical quiet NaN of c's dtype. */
  const float nan_in[1] = {bits_f32(0xFFA00001u)}, one[1] = {1.0f};
  float cn;
  sk__gemm_problem r = {1, 1, 1, nan_in, SK_FP32, 1, one, SK_FP32, 1, NULL,
                        SK_DTYPE_INVALID, &cn, SK_FP32, 1, NULL, SK_NUMERICS_DEFAULT};
  sk__gemm_reference(&r);
  uint32_t u;
  memcpy(&u, &cn, sizeof u);
  CHECK(u == 0x7FC00000u);
}

/* Every dtype combination (a, b, bias, c) on a rotating choice of shapes,
 * with strided leading dimensions and odd tilings. */
static void test_all_dtype_combos(void) {
  static const int64_t shapes[][3] = {{7, 17, 63}, {17, 65, 7}, {65, 7, 17}, {1, 63, 65},
                                      {63, 1, 1},  {33, 40, 29}, {20, 97, 5}};
  int idx = 0;
  for (int ia = 0; ia < 3; ia++)
    for (int ib = 0; ib < 3; ib++)
      for (int ibias = 0; ibias < 3; ibias++)
        for (int ic = 0; ic < 3; ic++, idx++) {
          sk_dtype bias_dt = ibias == 0 ? SK_DTYPE_INVALID
                             : ibias == 1 ? SK_FP32 : float_dtypes[ia];
          for (int s = 0; s < 2; s++) {
            const int64_t *sh = shapes[(idx + s * 3) % 7];
            case_desc d = {sh[0], sh[1], sh[2], float_dtypes[ia], float_dtypes[ib], bias_dt,
                           float_dtypes[ic], s, FILL_RANDOM, 2.0f, 2.0f, 3};
            check_case(&d);
          }
        }
}

/* Shapes from {1, 7, 17, 63, 65, 257} in every dimension for the two main
 * combinations (fp16 in/out with fp16 bias; fp32 without bias). */
static void test_shape_sweep(void) {
  for (int combo = 0; combo < 2; combo++)
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++)
        for (int l = 0; l < 6; l++) {
          sk_dtype dt = combo == 0 ? SK_FP16 : SK_FP32;
          case_desc d = {sizes[i], sizes[j], sizes[l], dt, dt,
                         combo == 0 ? SK_FP16 : SK_DTYPE_INVALID, dt, (i + j + l) & 1,
                         FILL_RANDOM, 1.0f, 1.0f, 2};
          check_case(&d);
        }
}

/* Inf, NaN (with payloads, signalling), subnormals, -0 and extremes mixed
 * into random inputs, for every a/b/c dtype, with and without bias. */
static void test_special_values(void) {
  for (int ia = 0; ia < 3; ia++)
    for (int ib = 0; ib < 3; ib++)
      for (int ic = 0; ic < 3; ic++)
        for (int withbias = 0; withbias < 2; withbias++) {
          case_desc d = {19, 37, 23, float_dtypes[ia], float_dtypes[ib],
                         withbias ? float_dtypes[ib] : SK_DTYPE_INVALID, float_dtypes[ic], 1,
                         FILL_SPECIAL, 1.0f, 1.0f, 2};
          check_case(&d);
          /* Short sums (k = 1, 2) keep specials from saturating every output. */
          d.k = 1 + withbias;
          check_case(&d);
        }
}

/* Tiny inputs make fp16 / bf16 / fp32 subnormal outputs; huge ones overflow
 * fp16 to Inf and land on rounding boundaries near 65504. */
static void test_tiny_and_huge(void) {
  static const float scales[][2] = {{1e-3f, 1e-4f}, {3e-20f, 2e-20f}, {300.0f, 250.0f},
                                    {1e19f, 1e19f}};
  for (int s = 0; s < 4; s++)
    for (int ia = 0; ia < 3; ia++)
      for (int ic = 0; ic < 3; ic++) {
        case_desc d = {13, 35, 9, float_dtypes[ia], float_dtypes[ia], SK_DTYPE_INVALID,
                       float_dtypes[ic], 0, FILL_RANDOM, scales[s][0], scales[s][1], 2};
        check_case(&d);
      }
}

/* k = 0: the output is the bias (+0 + bias, so -0 bias gives +0) or +0. */
static void test_k_zero(void) {
  for (int ic = 0; ic < 3; ic++)
    for (int withbias = 0; withbias < 2; withbias++) {
      case_desc d = {9, 21, 0, SK_FP16, SK_FP16, withbias ? SK_FP32 : SK_DTYPE_INVALID,
                     float_dtypes[ic], 1, FILL_SPECIAL, 1.0f, 1.0f, 3};
      check_case(&d);
    }
  /* And explicitly: one tile, fp32 out, bias {-0, 1.5}. */
  const float bias[2] = {-0.0f, 1.5f};
  float c[6] = {9, 9, 9, 9, 9, 9};
  const float dummy[1] = {0};
  sk__gemm_problem p = {3, 2, 0, dummy, SK_FP32, 1, dummy, SK_FP32, 2, bias, SK_FP32,
                        c, SK_FP32, 2, NULL, SK_NUMERICS_DEFAULT};
  void *ws = sk__aligned_alloc(sk__gemm_workspace_size(3, 2, 0));
  sk__gemm_tile(&p, 0, 3, 0, 2, ws, sk__cpu_isa());
  sk__aligned_free(ws);
  for (int i = 0; i < 3; i++) {
    CHECK(c[2 * i] == 0.0f && !signbit(c[2 * i]));
    CHECK(c[2 * i + 1] == 1.5f);
  }
}

/* Larger k than the shapes above (long fmaf chains), tiles aligned to the
 * micro-tile and not, and the micro-tile query itself. */
static void test_long_k_and_micro_tile(void) {
  int64_t mr = 0, nr = 0;
  sk__gemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  CHECK(mr > 0 && nr > 0);
  printf("isa %s, micro-tile %lld x %lld\n", sk__isa_name(sk__cpu_isa()), (long long)mr,
         (long long)nr);
  case_desc d = {2 * mr + 1, 3 * nr - 1, 1500, SK_BF16, SK_FP16, SK_BF16, SK_BF16, 1,
                 FILL_RANDOM, 1.0f, 1.0f, 3};
  check_case(&d);
  case_desc e = {3 * mr, 2 * nr, 700, SK_FP32, SK_FP32, SK_FP32, SK_FP16, 0, FILL_RANDOM,
                 1.0f, 1.0f, 2};
  check_case(&e);
}

/* K blocking: k at the single-block limit and one past it, a block plus
 * one step, whole blocks; every dtype pair, specials (a NaN or Inf early in
 * a chain must survive the carry between blocks), odd tilings and B packed
 * once (whose panels hold all k rows). */
static void test_k_blocks(void) {
  int64_t mr = 0, nr = 0;
  sk__gemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  int64_t limit = 1;
  while (sk__gemm_k_block(limit + 1) == limit + 1) limit++; /* the largest single block */
  int64_t kc = sk__gemm_k_block(limit + 1);
  CHECK(kc >= 1 && kc <= limit);
  printf("k blocks: single up to %lld, then %lld\n", (long long)limit, (long long)kc);
  const int64_t ks[] = {limit, limit + 1, 2 * kc + 1, 3 * kc, 4 * kc - 1};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    for (int ic = 0; ic < 3; ic++) {
      case_desc d = {mr + 3, 2 * nr + 5, ks[i], float_dtypes[(i + (size_t)ic) % 3], float_dtypes[ic],
                     ic == 1 ? SK_FP32 : SK_DTYPE_INVALID, float_dtypes[ic], (int)(i & 1), FILL_RANDOM,
                     1.0f, 1.0f, 3};
      check_case(&d);
      d.mode = FILL_SPECIAL;
      d.m = 5, d.n = nr + 1;
      check_case(&d);
    }
}

/* The AMX contract by hand (bf16_contract.h, "AMX"), where it and the
 * default contract differ, through the reference and the kernel:
 *  - pair sums: A = [2^24, 1, 0, 1], B = ones. Default (one chain, odd step
 *    first): 1, then 2^24 + 1 -> 2^24, + 1 -> 2^24, + 0: 2^24. AMX: even
 *    2^24 + 0, odd 1 + 1 = 2, added: 2^24 + 2, exact.
 *  - blocks of 32: A[0] = 1, A[32] = 2^24, A[33] = 1, the rest 0, k 34.
 *    Default: 1, ..., 1 + 1 = 2, 2 + 2^24: 2^24 + 2. AMX: block 0 gives 1;
 *    block 1's even 2^24 + odd 1 rounds to 2^24 (the tie to even), and
 *    1 + 2^24 again to 2^24. */
static void test_amx_contract_by_hand(void) {
  uint16_t a1[4] = {sk_fp32_to_bf16(0x1p24f), sk_fp32_to_bf16(1.0f), 0, sk_fp32_to_bf16(1.0f)};
  uint16_t a2[34] = {0}, ones[34];
  a2[0] = sk_fp32_to_bf16(1.0f), a2[32] = sk_fp32_to_bf16(0x1p24f), a2[33] = sk_fp32_to_bf16(1.0f);
  for (int i = 0; i < 34; i++) ones[i] = sk_fp32_to_bf16(1.0f);
  const struct {
    const uint16_t *a;
    int64_t k;
    float want_default, want_amx;
  } cases[] = {{a1, 4, 0x1p24f, 0x1p24f + 2.0f}, {a2, 34, 0x1p24f + 2.0f, 0x1p24f}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int amx = 0; amx < 2; amx++) {
      float got = -1.0f, want = amx ? cases[c].want_amx : cases[c].want_default;
      sk__gemm_problem p = {1, 1, cases[c].k, cases[c].a, SK_BF16, cases[c].k, ones, SK_BF16, 1, NULL,
                            SK_DTYPE_INVALID, &got, SK_FP32, 1, NULL, amx ? SK_NUMERICS_AMX : SK_NUMERICS_DEFAULT};
      sk__gemm_reference(&p);
      CHECK_MSG(got == want, "case %zu, %s contract: reference gives %.1f, want %.1f", c, amx ? "AMX" : "default",
                (double)got, (double)want);
      got = -1.0f;
      void *ws = sk__aligned_alloc(sk__gemm_workspace_size(1, 1, cases[c].k));
      sk__gemm_tile(&p, 0, 1, 0, 1, ws, sk__cpu_isa());
      sk__aligned_free(ws);
      CHECK_MSG(got == want, "case %zu, %s contract: the kernel (%s) gives %.1f, want %.1f", c, amx ? "AMX" : "default",
                sk__gemm_kernel_name(sk__cpu_isa(), p.numerics, SK_BF16, SK_BF16), (double)got, (double)want);
    }
}

TEST_MAIN(TEST_CASE(test_reference_hand), TEST_CASE(test_amx_contract_by_hand), TEST_CASE(test_all_dtype_combos),
          TEST_CASE(test_shape_sweep), TEST_CASE(test_special_values),
          TEST_CASE(test_tiny_and_huge), TEST_CASE(test_k_zero),
          TEST_CASE(test_long_k_and_micro_tile), TEST_CASE(test_k_blocks))

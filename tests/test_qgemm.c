/* int8 GEMM kernels: every ISA path (the ctest variants set $SK_ISA; each
 * AVX-512 variant also runs the AVX-512 paths below its own)
 * must give the bits of sk__qgemm_reference for every shape, tiling, leading
 * dimension and extreme value; the reference itself is checked by hand. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cpu.h"
#include "harness.h"
#include "kernels/qgemm/qgemm.h"
#include "kernels/qgemm/qgemm_internal.h"
#include "qgemm_amx_emulated.h"

static uint64_t rng_state = 0x5EED0123456789ABull;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t rng_int(int64_t lo, int64_t hi) { return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1)); }

typedef enum fill_mode { FILL_RANDOM, FILL_EXTREME, FILL_MIN, FILL_MAX } fill_mode;

/* A rows x cols int8 matrix with leading dimension ld, allocated to the exact
 * byte (ASan sees any over-read); gaps between rows hold a sentinel. */
static int8_t *make_matrix(int64_t rows, int64_t cols, int64_t ld, fill_mode mode) {
  size_t count = rows > 0 && cols > 0 ? (size_t)((rows - 1) * ld + cols) : 1;
  int8_t *buf = malloc(count);
  memset(buf, 0x5A, count);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      int8_t v = mode == FILL_MIN ? -128 : mode == FILL_MAX ? 127
               : mode == FILL_EXTREME ? (rng_next() & 1 ? 127 : -128) : (int8_t)rng_int(-128, 127);
      buf[r * ld + c] = v;
    }
  return buf;
}

/* The configurations to check under the current $SK_ISA: its own, the
 * AVX-512 ones below it (VNNI under AMX, plain AVX-512 under either), and
 * the AMX kernel with emulated tiles, which runs on any CPU. */
static int configs(const sk__qgemm_config **out) {
  int n = 0;
  sk__isa isa = sk__cpu_isa();
  out[n++] = sk__qgemm_config_for(isa);
  if (isa == SK_ISA_AMX) out[n++] = &sk__qs8_gemm_config_avx512vnni;
  if (isa >= SK_ISA_AVX512 && out[0] != &sk__qs8_gemm_config_avx512) out[n++] = &sk__qs8_gemm_config_avx512;
  out[n++] = &sk__qs8_gemm_config_amx_emulated;
  return n;
}

/* Up to 3 random cuts of [0, len), ending with len. */
static int random_cuts(int64_t len, int64_t *cuts) {
  int n = 0;
  int64_t pos = 0;
  while (n < 3 && pos < len) {
    int64_t step = rng_int(1, len);
    if (pos + step >= len) break;
    cuts[n++] = pos += step;
  }
  cuts[n++] = len;
  return n;
}

typedef struct case_desc {
  int64_t m, n, k;
  int strided;
  fill_mode mode_a, mode_b;
  int tilings; /* 1: the whole matrix; more: also random odd splits */
} case_desc;

static int check_case(const case_desc *d) {
  int64_t lda = d->k + (d->strided ? rng_int(1, 9) : 0);
  int64_t ldb = d->n + (d->strided ? rng_int(1, 9) : 0);
  int64_t ldc = d->n + (d->strided ? rng_int(1, 9) : 0);
  int8_t *a = make_matrix(d->m, d->k, lda, d->mode_a), *b = make_matrix(d->k, d->n, ldb, d->mode_b);
  size_t c_count = (size_t)(d->m * ldc);
  int32_t *want = malloc(c_count * 4 + 4), *got = malloc(c_count * 4 + 4);
  memset(want, 0x5A, c_count * 4);
  sk__qgemm_problem p = {d->m, d->n, d->k, a, lda, b, ldb, NULL};
  sk__qgemm_reference(&p, want, ldc);
  const sk__qgemm_config *cfgs[4];
  int n_cfg = configs(cfgs), ok = 1;
  /* Each configuration and tiling also runs from B packed once (constant
   * weights); tiles that start off a panel boundary pack for themselves. */
  for (int ci = 0; ci < n_cfg; ci++)
    for (int run = 0; run < 2 * d->tilings && ok; run++) {
      int t = run / 2;
      void *whole = NULL;
      if (run % 2) {
        size_t bytes = sk__qgemm_packed_b_size_config(cfgs[ci], d->k, d->n);
        whole = sk__aligned_alloc(bytes ? bytes : 1);
        sk__qgemm_pack_b_config(cfgs[ci], b, ldb, d->k, d->n, whole);
      }
      p.b_packed = whole;
      memset(got, 0x5A, c_count * 4); /* the same sentinel: gaps must stay untouched */
      int64_t mc[4] = {d->m}, nc[4] = {d->n};
      int nm = 1, nn = 1;
      if (t > 0) nm = random_cuts(d->m, mc), nn = random_cuts(d->n, nc);
      for (int bi = 0; bi < nm; bi++)
        for (int bj = 0; bj < nn; bj++) {
          int64_t m0 = bi ? mc[bi - 1] : 0, m1 = mc[bi], n0 = bj ? nc[bj - 1] : 0, n1 = nc[bj];
          size_t ws_size = sk__qgemm_workspace_size(m1 - m0, n1 - n0, d->k);
          void *ws = sk__aligned_alloc(ws_size ? ws_size : 1);
          memset(ws, 0xA7, ws_size); /* garbage: stale reads show */
          sk__qgemm_tile_config(cfgs[ci], &p, m0, m1, n0, n1, got + m0 * ldc + n0, ldc, ws);
          sk__aligned_free(ws);
        }
      harness_checks++;
      if (memcmp(want, got, c_count * 4) != 0) {
        size_t at = 0;
        while (want[at] == got[at]) at++;
        harness_failures++;
        fprintf(stderr, "mismatch: %s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld tiling %d: row %lld col %lld "
                        "want %d got %d\n", cfgs[ci]->name, (long long)d->m, (long long)d->n, (long long)d->k,
                (long long)lda, (long long)ldb, (long long)ldc, t, (long long)(at / (size_t)ldc),
                (long long)(at % (size_t)ldc), want[at], got[at]);
        ok = 0;
      }
      sk__aligned_free(whole);
    }
  free(a), free(b), free(want), free(got);
  return ok;
}

static const int64_t sizes[] = {1, 7, 17, 63, 65, 257};

static void test_reference_hand(void) {
  const int8_t a[6] = {1, -2, 3, -128, 127, 0};       /* 2 x 3 */
  const int8_t b[6] = {4, -5, 6, 7, -128, 127};       /* 3 x 2 */
  /* row 0: 4 - 12 - 384 = -392, -5 - 14 + 381 = 362
   * row 1: -512 + 762 + 0 = 250, 640 + 889 + 0 = 1529 */
  int32_t c[4];
  sk__qgemm_problem p = {2, 2, 3, a, 3, b, 2, NULL};
  sk__qgemm_reference(&p, c, 2);
  CHECK(c[0] == -392 && c[1] == 362 && c[2] == 250 && c[3] == 1529);
  int64_t mr = 0, nr = 0;
  sk__qgemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  CHECK(mr >= 1 && nr >= 1);
  CHECK(sk__qgemm_workspace_size(0, 5, 5) == 0);
}

/* Shapes from {1, 7, 17, 63, 65, 257} in m, n and k, strided every other
 * case, whole and randomly split tilings. */
static void test_shape_sweep(void) {
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      for (int l = 0; l < 6; l++) {
        case_desc d = {sizes[i], sizes[j], sizes[l], (i + j + l) & 1, FILL_RANDOM, FILL_RANDOM, 2};
        check_case(&d);
      }
}

/* K around the K blocks (256 / 512) and the packing groups (2 / 4), large
 * K, and K = 0 (C must be all zeros). */
static void test_k_sizes(void) {
  static const int64_t ks[] = {0, 2, 3, 4, 5, 255, 256, 257, 511, 512, 513, 1023, 1025, 4096};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    for (int s = 0; s < 2; s++) {
      case_desc d = {s ? 33 : 9, s ? 47 : 70, ks[i], s, FILL_RANDOM, FILL_RANDOM, 3};
      check_case(&d);
    }
  case_desc big = {65, 63, 4096, 1, FILL_RANDOM, FILL_RANDOM, 2};
  check_case(&big);
}

/* The largest sums: all -128 (positive extreme), -128 x 127 (negative
 * extreme), random extremes; up to SK_QGEMM_MAX_K, where (a + 128) * b sums
 * of the VNNI trick overflow int32 and must wrap back exactly. */
static void test_extremes(void) {
  static const fill_mode modes[][2] = {{FILL_MIN, FILL_MIN}, {FILL_MIN, FILL_MAX}, {FILL_MAX, FILL_MIN},
                                       {FILL_MAX, FILL_MAX}, {FILL_EXTREME, FILL_EXTREME}};
  for (size_t mo = 0; mo < 5; mo++) {
    case_desc d = {17, 65, 4096, (int)mo & 1, modes[mo][0], modes[mo][1], 2};
    check_case(&d);
    case_desc e = {3, 33, SK_QGEMM_MAX_K, 0, modes[mo][0], modes[mo][1], 1};
    check_case(&e);
  }
  /* The reference at the limit: 131071 * 16384 = 2147467264 < 2^31. */
  int8_t *a = make_matrix(1, SK_QGEMM_MAX_K, SK_QGEMM_MAX_K, FILL_MIN);
  int8_t *b = make_matrix(SK_QGEMM_MAX_K, 1, 1, FILL_MIN);
  int32_t c = 0;
  sk__qgemm_problem p = {1, 1, SK_QGEMM_MAX_K, a, SK_QGEMM_MAX_K, b, 1, NULL};
  sk__qgemm_reference(&p, &c, 1);
  CHECK(c == 2147467264);
  free(a), free(b);
}

/* Random shapes and tilings, leading dimensions always padded. */
static void test_random(void) {
  for (int i = 0; i < 60; i++) {
    case_desc d = {rng_int(1, 90), rng_int(1, 140), rng_int(1, 700), 1, FILL_RANDOM, FILL_RANDOM, 3};
    check_case(&d);
  }
}

/* After every case above ran the AMX kernel with emulated tiles: none of
 * its tile operations broke a rule the hardware faults on. */
static void test_amx_tiles_keep_the_rules(void) {
  long faults = sk__qgemm_amx_emulator_faults();
  CHECK_MSG(faults == 0, "%ld tile operations the hardware would fault on", faults);
}

TEST_MAIN(TEST_CASE(test_reference_hand), TEST_CASE(test_shape_sweep), TEST_CASE(test_k_sizes),
          TEST_CASE(test_extremes), TEST_CASE(test_random), TEST_CASE(test_amx_tiles_keep_the_rules))

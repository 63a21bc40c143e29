/* The ISA gate's decision (isa_gate.c): which $SK_ISA requests run, which
 * are skipped because the CPU lacks the ISA, which are misconfigurations;
 * and that the skip message says what is missing. The gate's exit before
 * main is checked end to end by isa_gate_skips_missing_isa (kernels.cmake). */
#include "harness.h"
#include "isa_gate.h"

static isa_gate_verdict decide(const char *requested, sk__isa supported, char *msg) {
  return isa_gate_decide(requested, supported, msg, 256);
}

static void test_runs_what_the_cpu_supports(void) {
  char msg[256];
  for (int s = 0; s < SK__ISA_COUNT; s++) {
    CHECK(decide(NULL, (sk__isa)s, msg) == ISA_GATE_RUN);
    CHECK(decide("", (sk__isa)s, msg) == ISA_GATE_RUN);
    for (int w = 0; w <= s; w++) {
      isa_gate_verdict v = decide(sk__isa_name((sk__isa)w), (sk__isa)s, msg);
      CHECK_MSG(v == ISA_GATE_RUN, "SK_ISA=%s on a CPU with %s: verdict %d, message %s", sk__isa_name((sk__isa)w),
                sk__isa_name((sk__isa)s), (int)v, msg);
    }
  }
}

static void test_skips_what_the_cpu_lacks(void) {
  char msg[256];
  CHECK(decide("avx512", SK_ISA_AVX2, msg) == ISA_GATE_SKIP);
  CHECK_MSG(strstr(msg, "SKIPPED: SK_ISA=avx512 but this CPU lacks AVX-512") == msg, "%s", msg);
  CHECK_MSG(strstr(msg, "up to avx2") != NULL, "%s", msg);
  CHECK(decide("avx512", SK_ISA_SCALAR, msg) == ISA_GATE_SKIP);
  CHECK_MSG(strstr(msg, "up to scalar") != NULL, "%s", msg);
  CHECK(decide("avx2", SK_ISA_SCALAR, msg) == ISA_GATE_SKIP);
  CHECK_MSG(strstr(msg, "SKIPPED: SK_ISA=avx2 but this CPU lacks AVX2") == msg, "%s", msg);
  CHECK(decide("amx", SK_ISA_AVX512, msg) == ISA_GATE_SKIP);
  CHECK_MSG(strstr(msg, "SKIPPED: SK_ISA=amx but this CPU lacks AMX-INT8") == msg && strstr(msg, "up to avx512"),
            "%s", msg);
  CHECK(decide("avx512vnni", SK_ISA_AVX512, msg) == ISA_GATE_SKIP);
  CHECK_MSG(strstr(msg, "SKIPPED: SK_ISA=avx512vnni but this CPU lacks AVX512_VNNI") == msg, "%s", msg);
  CHECK(decide("avx512bf16", SK_ISA_AVX512VNNI, msg) == ISA_GATE_SKIP);
  CHECK_MSG(strstr(msg, "SKIPPED: SK_ISA=avx512bf16 but this CPU lacks AVX512_BF16") == msg, "%s", msg);
  CHECK(decide("avx512vnni", SK_ISA_AVX512BF16, msg) == ISA_GATE_RUN);
  CHECK(decide("amx", SK_ISA_AVX512BF16, msg) == ISA_GATE_SKIP);
}

static void test_rejects_unknown_names(void) {
  static const char *const bad[] = {"sse4", "AVX512", "avx512 ", "avx-512", "neon"};
  char msg[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_MSG(decide(bad[i], SK_ISA_AVX512, msg) == ISA_GATE_BAD, "SK_ISA=\"%s\"", bad[i]);
    CHECK_MSG(strstr(msg, bad[i]) != NULL && strstr(msg, "SKIPPED") == NULL, "%s", msg);
  }
}

/* The names the gate and the library's $SK_ISA share. */
static void test_isa_names_round_trip(void) {
  CHECK(SK__ISA_COUNT == 6 && strcmp(sk__isa_name(SK_ISA_AVX512BF16), "avx512bf16") == 0 &&
        strcmp(sk__isa_name(SK_ISA_AVX512VNNI), "avx512vnni") == 0);
  for (int i = 0; i < SK__ISA_COUNT; i++) {
    sk__isa back = SK_ISA_SCALAR;
    CHECK(sk__isa_from_name(sk__isa_name((sk__isa)i), &back) && back == (sk__isa)i);
    CHECK(strstr(SK__ISA_SPELLINGS, sk__isa_name((sk__isa)i)) != NULL);
  }
  sk__isa untouched = SK_ISA_AVX2;
  CHECK(!sk__isa_from_name(NULL, &untouched) && !sk__isa_from_name("x", &untouched));
  CHECK(untouched == SK_ISA_AVX2);
}

TEST_MAIN(TEST_CASE(test_runs_what_the_cpu_supports), TEST_CASE(test_skips_what_the_cpu_lacks),
          TEST_CASE(test_rejects_unknown_names), TEST_CASE(test_isa_names_round_trip))

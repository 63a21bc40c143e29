/* AMX-INT8's gate (core/cpu.c, sk__amx_usable): with made-up CPUID, XCR0
 * and permission answers, AMX is used only when the CPU has AMX-TILE and
 * AMX-INT8 and the OS saves the tile state and grants it. Registered a
 * second time with $SK_TEST_AMX_DENY set (test_cpu_amx_denied): on a CPU
 * with AMX the detection must then say so in the log and fall back to
 * AVX-512 and its VNNI kernel, with the same integers; elsewhere that run
 * is skipped (there is nothing to refuse). */
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cpu.h"
#include "harness.h"
#include "kernels/qgemm/qgemm_internal.h"

#define AMX_TILE (1u << 24)
#define AMX_INT8 (1u << 25)
#define XCR0_AVX512 0xE7ull
#define XCR0_TILES 0x60000ull

static int requests;
static int grant(void) { return requests++, 0; }
static int refuse(void) { return requests++, -1; }

static void test_amx_only_when_cpu_os_and_permission_allow(void) {
  requests = 0;
  CHECK(sk__amx_decide(AMX_TILE | AMX_INT8, XCR0_AVX512 | XCR0_TILES, grant) == 1 && requests == 1);
  requests = 0;
  CHECK(sk__amx_decide(AMX_TILE | AMX_INT8, XCR0_AVX512 | XCR0_TILES, refuse) == -1 && requests == 1);
  /* Missing pieces: no permission is even asked for. */
  requests = 0;
  CHECK(sk__amx_decide(AMX_TILE, XCR0_AVX512 | XCR0_TILES, grant) == 0);
  CHECK(sk__amx_decide(AMX_INT8, XCR0_AVX512 | XCR0_TILES, grant) == 0);
  CHECK(sk__amx_decide(AMX_TILE | AMX_INT8, XCR0_AVX512 | 0x20000, grant) == 0); /* XTILECFG without XTILEDATA */
  CHECK(sk__amx_decide(AMX_TILE | AMX_INT8, XCR0_AVX512, grant) == 0);
  CHECK(sk__amx_decide(0, XCR0_AVX512 | XCR0_TILES, grant) == 0);
  CHECK_MSG(requests == 0, "%d permission requests without AMX", requests);
}

/* Whether this CPU and OS have AMX-INT8 before any permission. */
static int hardware_has_amx(void) {
  unsigned int eax, ebx, ecx, edx, xlo, xhi;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
  if (!(edx & AMX_TILE) || !(edx & AMX_INT8)) return 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !((ecx >> 27) & 1)) return 0;
  __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
  return (xlo & XCR0_TILES) == XCR0_TILES;
}

typedef struct captured {
  int count;
  char message[256];
} captured;

static void capture(sk_log_level level, const char *message, void *user) {
  captured *c = user;
  if (level != SK_LOG_INFO || !strstr(message, "AMX")) return;
  c->count++;
  snprintf(c->message, sizeof c->message, "%s", message);
}

static void test_refused_permission_falls_back_to_vnni(void) {
  if (!hardware_has_amx()) harness_skip_test("this CPU (or OS) has no AMX-INT8: no permission to refuse");
  captured log;
  memset(&log, 0, sizeof log);
  sk_set_log_handler(capture, &log);
  sk_set_log_level(SK_LOG_INFO);
  /* The library's first look at the CPU: it asks, is refused, says so. */
  CHECK_MSG(sk__cpu_isa_supported() == SK_ISA_AVX512VNNI || sk__cpu_isa_supported() == SK_ISA_AVX512BF16,
            "detected %s with the permission refused",
            sk__isa_name(sk__cpu_isa_supported()));
  CHECK_MSG(log.count == 1 && strstr(log.message, "refused") && strstr(log.message, "VNNI"), "%d messages: %s",
            log.count, log.message);
  sk_set_log_handler(NULL, NULL);
  sk_set_log_level(SK_LOG_WARN);
  const sk__qgemm_config *cfg = sk__qgemm_config_for(sk__cpu_isa());
  CHECK_MSG(strcmp(cfg->name, "avx512vnni") == 0, "int8 GEMMs run on %s", cfg->name);
  /* 40 x 70 x 300: two row tiles, K blocks and edges, bit for bit. */
  enum { M = 40, N = 70, K = 300 };
  int8_t *a = malloc(M * K), *b = malloc(K * N);
  int32_t *want = malloc(M * N * 4), *got = malloc(M * N * 4);
  for (int i = 0; i < M * K; i++) a[i] = (int8_t)(i * 37 + 11);
  for (int i = 0; i < K * N; i++) b[i] = (int8_t)(i * 53 - 7);
  sk__qgemm_problem p = {M, N, K, a, K, b, N, NULL};
  sk__qgemm_reference(&p, want, N);
  size_t ws_size = sk__qgemm_workspace_size(M, N, K);
  void *ws = sk__aligned_alloc(ws_size);
  sk__qgemm_tile(&p, 0, M, 0, N, got, N, ws, sk__cpu_isa());
  CHECK(memcmp(want, got, M * N * 4) == 0);
  sk__aligned_free(ws);
  free(a), free(b), free(want), free(got);
}

int main(void) {
  if (getenv("SK_TEST_AMX_DENY")) {
    static const harness_case denied[] = {TEST_CASE(test_refused_permission_falls_back_to_vnni)};
    return harness_run(denied, 1);
  }
  static const harness_case cases[] = {TEST_CASE(test_amx_only_when_cpu_os_and_permission_allow)};
  return harness_run(cases, 1);
}

/* The AMX kernel's tile configuration across calls (qgemm_amx.c,
 * core/amx_state.h): a thread keeps the kernel's configuration between
 * GEMMs, finds out when someone else loaded another one (or released the
 * tiles) and loads its own again, and a team launch leaves no tile state
 * behind on any of its threads. Each check's GEMM is held against the
 * reference, so a kernel that trusted a stale configuration fails.
 *
 * The emulated kernel runs these everywhere; the instructions run where
 * the CPU has AMX (elsewhere those cases say SKIPPED). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amx_tile_state_hw.h"
#include "core/alloc.h"
#include "core/cpu.h"
#include "harness.h"
#include "kernels/qgemm/qgemm.h"
#include "kernels/qgemm/qgemm_internal.h"
#include "qgemm_amx_emulated.h"
#include "superkernel.h"

/* A palette-1 configuration with every tile rows x colsb: the kernel's
 * (16 x 64) or another library's. */
static sk__amx_config tiles_of(int rows, int colsb) {
  sk__amx_config c;
  memset(&c, 0, sizeof c);
  c.palette_id = 1;
  for (int t = 0; t < 8; t++) c.rows[t] = (uint8_t)rows, c.colsb[t] = (uint16_t)colsb;
  return c;
}
static sk__amx_config full_tiles(void) { return tiles_of(16, 64); }
static sk__amx_config foreign_tiles(void) { return tiles_of(8, 32); }

static int is_released(const sk__amx_config *c) {
  static const sk__amx_config zero;
  return memcmp(c, &zero, sizeof zero) == 0;
}

/* One GEMM with edges in every dimension (m 40, k 200, n 72) through cfg,
 * against the reference; 1 when equal. */
static int gemm_matches(const sk__qgemm_config *cfg) {
  enum { M = 40, K = 200, N = 72 };
  int8_t *a = malloc(M * K), *b = malloc(K * N);
  int32_t *want = malloc(sizeof(int32_t) * M * N), *got = malloc(sizeof(int32_t) * M * N);
  for (int i = 0; i < M * K; i++) a[i] = (int8_t)(i * 37 + 11);
  for (int i = 0; i < K * N; i++) b[i] = (int8_t)(i * 53 - 7);
  sk__qgemm_problem p = {M, N, K, a, K, b, N, NULL};
  sk__qgemm_reference(&p, want, N);
  void *ws = sk__aligned_alloc(sk__qgemm_workspace_size(M, N, K));
  memset(got, 0x5A, sizeof(int32_t) * M * N);
  sk__qgemm_tile_config(cfg, &p, 0, M, 0, N, got, N, ws);
  int same = memcmp(want, got, sizeof(int32_t) * M * N) == 0;
  sk__aligned_free(ws);
  free(a), free(b), free(want), free(got);
  return same;
}

static void test_emulated_configuration_kept_and_rechecked(void) {
  const sk__amx_config full = full_tiles(), foreign = foreign_tiles();
  sk__amx_config now;
  long faults = sk__qgemm_amx_emulator_faults();
  sk__qgemm_amx_emulator_release();
  CHECK(gemm_matches(&sk__qs8_gemm_config_amx_emulated));
  sk__qgemm_amx_emulator_read(&now);
  CHECK_MSG(memcmp(&now, &full, sizeof now) == 0, "the kernel left another configuration than its own loaded");
  CHECK(gemm_matches(&sk__qs8_gemm_config_amx_emulated)); /* kept: no reload needed */
  sk__qgemm_amx_emulator_load(&foreign);
  CHECK_MSG(gemm_matches(&sk__qs8_gemm_config_amx_emulated), "a GEMM after another library's configuration");
  sk__qgemm_amx_emulator_read(&now);
  CHECK(memcmp(&now, &full, sizeof now) == 0);
  sk__qgemm_amx_emulator_release();
  CHECK_MSG(gemm_matches(&sk__qs8_gemm_config_amx_emulated), "a GEMM after the tiles were released");
  CHECK_MSG(sk__qgemm_amx_emulator_faults() == faults, "%ld tile operations the hardware faults on",
            sk__qgemm_amx_emulator_faults() - faults);
}

static void test_hardware_configuration_kept_and_rechecked(void) {
  if (sk__cpu_isa() != SK_ISA_AMX) {
    harness_skip_part("no AMX-INT8 here (CPU, OS or SK_ISA): the instructions' run is not checked");
    return;
  }
  const sk__amx_config full = full_tiles(), foreign = foreign_tiles();
  sk__amx_config now;
  CHECK(gemm_matches(&sk__qs8_gemm_config_amx));
  hw_tiles_read(&now);
  CHECK_MSG(memcmp(&now, &full, sizeof now) == 0, "the kernel left another configuration than its own loaded");
  CHECK(gemm_matches(&sk__qs8_gemm_config_amx));
  hw_tiles_load(&foreign);
  CHECK_MSG(gemm_matches(&sk__qs8_gemm_config_amx), "a GEMM after another library's configuration");
  hw_tiles_read(&now);
  CHECK(memcmp(&now, &full, sizeof now) == 0);
}

/* A launch's blocks: each runs the AMX GEMM (so every core configures its
 * tiles) or, in the second launch, reads the core's configuration first. */
typedef struct launch_arg {
  int read_first;
  int released[4]; /* per core: tiles found released at the block's start */
  int matched[4];
} launch_arg;

static void gemm_block(void *p, int64_t block, int core) {
  (void)block;
  launch_arg *arg = p;
  if (arg->read_first) {
    sk__amx_config now;
    hw_tiles_read(&now);
    arg->released[core] = is_released(&now);
  }
  arg->matched[core] = gemm_matches(&sk__qs8_gemm_config_amx);
}

static void test_team_launch_releases_the_tiles(void) {
  if (sk__cpu_isa() != SK_ISA_AMX) {
    harness_skip_part("no AMX-INT8 here (CPU, OS or SK_ISA): the team's release is not checked");
    return;
  }
  sk_team *team = NULL;
  sk_team_config tc = {.num_cores = 2};
  CHECK_OK(sk_team_create(&tc, &team));
  if (!team) return;
  launch_arg arg = {0};
  CHECK_OK(sk_team_launch(team, gemm_block, &arg, 2));
  sk__amx_config now;
  hw_tiles_read(&now);
  CHECK_MSG(is_released(&now), "the calling thread (core 0) kept its tiles after the launch");
  arg.read_first = 1;
  /* Claimed or strided, each core gets one block of two here. */
  CHECK_OK(sk_team_launch(team, gemm_block, &arg, 2));
  for (int c = 0; c < 2; c++) {
    CHECK_MSG(arg.released[c], "core %d started the second launch with the first one's tiles", c);
    CHECK_MSG(arg.matched[c], "core %d's GEMM differs from the reference", c);
  }
  hw_tiles_read(&now);
  CHECK(is_released(&now));
  sk_team_destroy(team);
}

int main(void) {
  const harness_case cases[] = {
      TEST_CASE(test_emulated_configuration_kept_and_rechecked),
      TEST_CASE(test_hardware_configuration_kept_and_rechecked),
      TEST_CASE(test_team_launch_releases_the_tiles),
  };
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

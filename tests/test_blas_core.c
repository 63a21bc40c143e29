/* The floor's core check (tools/blas/blas_core.c) with fake CPUs and fake
 * OpenBLAS core names: which cores match a CPU, which are older (rerun with
 * the right OPENBLAS_CORETYPE, no ratio until then) or newer (not run), what
 * an unknown or missing name means, who set $OPENBLAS_CORETYPE, and that the
 * fix leaves alone what it must not touch. The rerun itself is checked end
 * to end with a fake libopenblas.so.0 (sk_bench_core_*, tools.cmake). */
#include <stdlib.h>
#include <string.h>

#include "blas_core.h"
#include "harness.h"

static const blas_cpu intel_avx512 = {BLAS_VENDOR_INTEL, BLAS_ISA_AVX512, 6, 207, "Emerald Rapids"};
static const blas_cpu amd_avx512 = {BLAS_VENDOR_AMD, BLAS_ISA_AVX512, 25, 17, "Zen 4"};
static const blas_cpu intel_avx2 = {BLAS_VENDOR_INTEL, BLAS_ISA_AVX2, 6, 63, "Haswell"};
static const blas_cpu amd_avx2 = {BLAS_VENDOR_AMD, BLAS_ISA_AVX2, 25, 1, "Zen 3"};
static const blas_cpu intel_avx = {BLAS_VENDOR_INTEL, BLAS_ISA_AVX, 6, 42, "Sandy Bridge"};
static const blas_cpu old_sse = {BLAS_VENDOR_INTEL, BLAS_ISA_SSE, 6, 26, "Nehalem"};

static void expect(const blas_cpu *cpu, const char *core, blas_core_status status, const char *coretype) {
  blas_core_decision d = blas_core_decide(cpu, core);
  CHECK_MSG(d.status == status, "%s on %s: status %s, expected %s", core ? core : "(null)", cpu->name,
            blas_core_status_name(d.status), blas_core_status_name(status));
  CHECK_MSG(coretype ? d.coretype && strcmp(d.coretype, coretype) == 0 : !d.coretype, "%s on %s: coretype %s, expected %s",
            core ? core : "(null)", cpu->name, d.coretype ? d.coretype : "(null)", coretype ? coretype : "(null)");
}

/* The case: OpenBLAS 0.3.21 runs Prescott on Emerald Rapids. */
static void test_older_core_gets_the_cpus_type(void) {
  expect(&intel_avx512, "Prescott", BLAS_CORE_OLDER, "SKYLAKEX");
  expect(&intel_avx512, "Haswell", BLAS_CORE_OLDER, "SKYLAKEX");
  expect(&amd_avx512, "Zen", BLAS_CORE_OLDER, "SKYLAKEX");
  expect(&intel_avx2, "Sandybridge", BLAS_CORE_OLDER, "HASWELL");
  expect(&intel_avx2, "Nehalem", BLAS_CORE_OLDER, "HASWELL");
  expect(&amd_avx2, "Prescott", BLAS_CORE_OLDER, "ZEN");
  expect(&amd_avx2, "Bulldozer", BLAS_CORE_OLDER, "ZEN");
  expect(&intel_avx, "Core2", BLAS_CORE_OLDER, "SANDYBRIDGE");
}

/* A core of the CPU's ISA matches whatever its vendor's name, in any case. */
static void test_same_isa_matches(void) {
  static const char *const avx512[] = {"SkylakeX", "SKYLAKEX", "skylakex", "Cooperlake", "SapphireRapids"};
  for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++) {
    expect(&intel_avx512, avx512[i], BLAS_CORE_MATCH, "SKYLAKEX");
    expect(&amd_avx512, avx512[i], BLAS_CORE_MATCH, "SKYLAKEX");
  }
  expect(&intel_avx2, "Haswell", BLAS_CORE_MATCH, "HASWELL");
  expect(&intel_avx2, "Zen", BLAS_CORE_MATCH, "HASWELL");
  expect(&amd_avx2, "Zen", BLAS_CORE_MATCH, "ZEN");
  expect(&amd_avx2, "HASWELL", BLAS_CORE_MATCH, "ZEN");
  expect(&amd_avx2, "Excavator", BLAS_CORE_MATCH, "ZEN");
  expect(&intel_avx, "Sandybridge", BLAS_CORE_MATCH, "SANDYBRIDGE");
  expect(&old_sse, "Nehalem", BLAS_CORE_MATCH, NULL);
  expect(&old_sse, "Prescott", BLAS_CORE_MATCH, NULL);
}

/* Kernels the CPU cannot execute. */
static void test_newer_core_is_not_run(void) {
  expect(&intel_avx2, "SkylakeX", BLAS_CORE_NEWER, "HASWELL");
  expect(&amd_avx2, "Cooperlake", BLAS_CORE_NEWER, "ZEN");
  expect(&intel_avx, "Haswell", BLAS_CORE_NEWER, "SANDYBRIDGE");
  expect(&old_sse, "Sandybridge", BLAS_CORE_NEWER, NULL);
}

/* A name not in the table is not judged (no ratio, no override); no name
 * at all is no floor. */
static void test_unknown_and_missing_names(void) {
  static const char *const unknown[] = {"Frobnicator", "Zen4", "Neoversen1", "Prescott ", "Unknown"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    expect(&intel_avx512, unknown[i], BLAS_CORE_UNKNOWN, "SKYLAKEX");
    CHECK(blas_core_isa(unknown[i]) == BLAS_ISA_UNKNOWN);
  }
  expect(&intel_avx512, "", BLAS_CORE_NONE, "SKYLAKEX");
  expect(&amd_avx2, NULL, BLAS_CORE_NONE, "ZEN");
}

static void fill(blas_core_report *r, const char *core, const char *config, const char *coretype, const char *marker) {
  if (coretype) setenv("OPENBLAS_CORETYPE", coretype, 1);
  else unsetenv("OPENBLAS_CORETYPE");
  if (marker) setenv("SK_OPENBLAS_CORETYPE_BY_SK", marker, 1);
  else unsetenv("SK_OPENBLAS_CORETYPE_BY_SK");
  blas_core_report_fill(r, core, config);
}

/* Who chose the core: OpenBLAS, the user, or sk's rerun (its marker names
 * the type it set and the core OpenBLAS had chosen). */
static void test_report_says_who_chose(void) {
  blas_core_report r;
  fill(&r, "Zen", "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64 ", NULL, NULL);
  CHECK(r.source == BLAS_CORETYPE_OPENBLAS && strcmp(r.version, "0.3.21") == 0 && r.coretype[0] == '\0');
  CHECK(strcmp(r.config, "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64") == 0);
  fill(&r, "Prescott", "OpenBLAS 0.3.21 DYNAMIC_ARCH Prescott", "PRESCOTT", NULL);
  CHECK(r.source == BLAS_CORETYPE_USER && strcmp(r.coretype, "PRESCOTT") == 0);
  fill(&r, "SkylakeX", "OpenBLAS 0.3.21 DYNAMIC_ARCH SkylakeX", "SKYLAKEX", "SKYLAKEX:Prescott");
  CHECK(r.source == BLAS_CORETYPE_SK && strcmp(r.chosen, "Prescott") == 0);
  char line[256];
  blas_core_describe(&r, line, sizeof line);
  CHECK_MSG(strstr(line, "OpenBLAS 0.3.21, core SkylakeX") && strstr(line, "set by sk: OpenBLAS chose Prescott"), "%s",
            line);
  /* A marker for another type, or a prefix of it, is not ours. */
  fill(&r, "Haswell", "OpenBLAS 0.3.21", "HASWELL", "SKYLAKEX:Prescott");
  CHECK(r.source == BLAS_CORETYPE_USER);
  fill(&r, "Zen", "OpenBLAS 0.3.21", "ZE", "ZEN:Prescott");
  CHECK(r.source == BLAS_CORETYPE_USER);
  /* Set but empty is the user's too: OpenBLAS does not detect then. */
  fill(&r, "Haswell", "OpenBLAS 0.3.21", "", ":Haswell");
  CHECK(r.source == BLAS_CORETYPE_USER && r.coretype[0] == '\0');
  fill(&r, NULL, NULL, NULL, NULL);
  CHECK(r.core[0] == '\0' && r.version[0] == '\0' && r.decision.status == BLAS_CORE_NONE);
  CHECK(!blas_core_runnable(&r) && !blas_core_ratio_ok(&r));
  fill(&r, "Zen", "MyBLAS 1.0", NULL, NULL);
  CHECK(r.version[0] == '\0');
  unsetenv("SK_OPENBLAS_CORETYPE_BY_SK");
  unsetenv("OPENBLAS_CORETYPE");
}

/* A ratio only on a matching core; a newer one is not run. */
static void test_ratio_and_run_per_status(void) {
  static const struct {
    blas_core_status status;
    bool ratio, run;
    const char *verdict;
  } want[] = {
      {BLAS_CORE_NONE, false, false, "no floor"},        {BLAS_CORE_MATCH, true, true, "matches the CPU"},
      {BLAS_CORE_OLDER, false, true, "no ratios"},       {BLAS_CORE_NEWER, false, false, "not run"},
      {BLAS_CORE_UNKNOWN, false, true, "no ratios"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    blas_core_report r;
    memset(&r, 0, sizeof r);
    r.cpu = amd_avx2;
    r.decision.status = want[i].status;
    char verdict[160];
    blas_core_verdict(&r, verdict, sizeof verdict);
    CHECK_MSG(blas_core_ratio_ok(&r) == want[i].ratio && blas_core_runnable(&r) == want[i].run, "status %s",
              blas_core_status_name(want[i].status));
    CHECK_MSG(strstr(verdict, want[i].verdict) != NULL, "status %s: %s", blas_core_status_name(want[i].status), verdict);
  }
}

/* blas_core_fix returns (no rerun) for a matching core, a type sk set, a
 * build for one core, an unknown core and a CPU with no right type. (One
 * the environment set is overridden: sk_bench_core_user_older runs it.) */
static void test_fix_leaves_alone(void) {
  blas_core_report r;
  memset(&r, 0, sizeof r);
  r.cpu = amd_avx2;
  snprintf(r.config, sizeof r.config, "OpenBLAS 0.3.21 DYNAMIC_ARCH");
  r.decision = blas_core_decide(&r.cpu, "Zen");
  blas_core_fix(&r, "test_blas_core");
  r.decision = blas_core_decide(&r.cpu, "Prescott");
  r.source = BLAS_CORETYPE_SK;
  blas_core_fix(&r, "test_blas_core");
  r.source = BLAS_CORETYPE_OPENBLAS;
  snprintf(r.config, sizeof r.config, "OpenBLAS 0.3.21 NO_AFFINITY PRESCOTT");
  blas_core_fix(&r, "test_blas_core");
  snprintf(r.config, sizeof r.config, "OpenBLAS 0.3.21 DYNAMIC_ARCH");
  r.decision = blas_core_decide(&r.cpu, "Frobnicator");
  blas_core_fix(&r, "test_blas_core");
  r.cpu = old_sse;
  r.decision = blas_core_decide(&r.cpu, "Haswell");
  blas_core_fix(&r, "test_blas_core");
  CHECK(getenv("OPENBLAS_CORETYPE") == NULL);
}

/* " flag" as a whole word of /proc/cpuinfo's flags line. */
static bool has_flag(const char *line, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = strstr(line, flag); p; p = strstr(p + 1, flag))
    if (p > line && p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0')) return true;
  return false;
}

/* This CPU: the ISA agrees with the kernel's flags in /proc/cpuinfo. */
static void test_this_cpu(void) {
  blas_cpu cpu;
  blas_cpu_detect(&cpu);
  char line[256];
  blas_cpu_describe(&cpu, line, sizeof line);
  printf("this CPU: %s\n", line);
  CHECK(cpu.isa >= BLAS_ISA_SSE && cpu.family > 0);
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) {
    harness_skip_part("no /proc/cpuinfo to compare with");
    return;
  }
  char text[8192];
  bool avx512f = false, avx2 = false;
  while (fgets(text, sizeof text, f))
    if (strncmp(text, "flags", 5) == 0) {
      avx512f = has_flag(text, "avx512f");
      avx2 = has_flag(text, "avx2") && has_flag(text, "fma");
      break;
    }
  fclose(f);
  CHECK_MSG(avx512f == (cpu.isa == BLAS_ISA_AVX512), "%s", line);
  CHECK_MSG(avx2 == (cpu.isa >= BLAS_ISA_AVX2), "%s", line);
}

TEST_MAIN(TEST_CASE(test_older_core_gets_the_cpus_type), TEST_CASE(test_same_isa_matches),
          TEST_CASE(test_newer_core_is_not_run), TEST_CASE(test_unknown_and_missing_names),
          TEST_CASE(test_report_says_who_chose), TEST_CASE(test_ratio_and_run_per_status),
          TEST_CASE(test_fix_leaves_alone), TEST_CASE(test_this_cpu))

/* $SK_PIN_THREADS: the pinning policy of a team whose config leaves
 * pin_threads at 0 (auto). Each worker reads back its own affinity mask
 * inside a launch (pthread_getaffinity_np), so the test sees what the
 * kernel enforces, not what the library meant to do. The config's pin
 * policy itself is in test_team.c (test_pinning). */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "harness.h"

enum { MAX_CORES = 4 };

static int cpus_available(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

/* Per core: the number of CPUs in its affinity mask during a launch. */
static void affinity_block(void *p, int64_t b, int core) {
  (void)b;
  cpu_set_t set;
  CPU_ZERO(&set);
  int *cpu_count = p;
  cpu_count[core] = pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
}

/* Every warning logged while the log handler is installed. */
static char g_warnings[4096];

static void keep_warnings(sk_log_level level, const char *message, void *user) {
  (void)user;
  if (level != SK_LOG_WARN) return;
  size_t used = strlen(g_warnings);
  snprintf(g_warnings + used, sizeof g_warnings - used, "%s\n", message);
}

static void set_env(const char *value) {
  if (value)
    setenv("SK_PIN_THREADS", value, 1);
  else
    unsetenv("SK_PIN_THREADS");
}

/* Creates a team of n cores with config pin policy `pin` (struct_size
 * `size`) under $SK_PIN_THREADS = env (NULL: unset); returns how many of
 * its workers are pinned to one CPU (-1: creation failed), and leaves the
 * warnings it logged in g_warnings. */
static int pinned_workers(const char *env, int pin, size_t size, int n) {
  set_env(env);
  g_warnings[0] = '\0';
  sk_team_config cfg = {.struct_size = size, .num_cores = n, .pin_threads = pin};
  sk_team *team = NULL;
  sk_set_log_handler(keep_warnings, NULL);
  sk_status st = sk_team_create(&cfg, &team);
  sk_set_log_handler(NULL, NULL);
  CHECK_MSG(st == SK_STATUS_OK, "SK_PIN_THREADS=%s, pin_threads %d: %s", env ? env : "(unset)", pin,
            sk_last_error());
  if (st != SK_STATUS_OK) return -1;
  int cpu_count[MAX_CORES] = {0};
  CHECK_OK(sk_team_launch(team, affinity_block, cpu_count, n));
  sk_team_destroy(team);
  int ncpus = cpus_available(), pinned = 0;
  for (int c = 1; c < n; c++) {
    CHECK_MSG(cpu_count[c] == 1 || cpu_count[c] == ncpus, "worker %d: %d CPUs of %d", c, cpu_count[c], ncpus);
    pinned += cpu_count[c] == 1;
  }
  CHECK_MSG(cpu_count[0] == ncpus, "the caller (core 0) was pinned: %d CPUs", cpu_count[0]);
  return pinned;
}

static int g_n; /* team size: every worker has a CPU of its own */

/* The environment decides for a config that leaves the policy at 0. */
static void test_env_decides_for_auto(void) {
  const size_t full = sizeof(sk_team_config);
  int workers = g_n - 1;
  CHECK(pinned_workers(NULL, 0, full, g_n) == workers);
  CHECK(pinned_workers("", 0, full, g_n) == workers);
  CHECK(pinned_workers("auto", 0, full, g_n) == workers);
  CHECK(pinned_workers("always", 0, full, g_n) == workers);
  CHECK_MSG(pinned_workers("never", 0, full, g_n) == 0, "SK_PIN_THREADS=never left workers pinned");
  CHECK_MSG(g_warnings[0] == '\0', "unexpected warnings: %s", g_warnings);
  /* An older caller's struct without pin_threads: its default, so the
   * environment decides too. */
  CHECK(pinned_workers("never", 0, offsetof(sk_team_config, pin_threads), g_n) == 0);
  CHECK(pinned_workers("always", 0, offsetof(sk_team_config, pin_threads), g_n) == workers);
}

/* An explicit policy in the config wins over the environment. */
static void test_config_wins(void) {
  const size_t full = sizeof(sk_team_config);
  CHECK(pinned_workers("never", 1, full, g_n) == g_n - 1);
  CHECK(pinned_workers("always", -1, full, g_n) == 0);
  CHECK(pinned_workers("auto", -1, full, g_n) == 0);
}

/* "always" is the config's 1, not auto: a team larger than the CPU set is
 * not pinned either way, but only "always" warns about it. */
static void test_always_warns_when_it_cannot_pin(void) {
  int big = cpus_available() + 1;
  if (big > MAX_CORES) {
    harness_skip_part("%d CPUs: a team larger than the CPU set needs more than %d cores", big - 1, MAX_CORES);
    return;
  }
  const size_t full = sizeof(sk_team_config);
  CHECK(pinned_workers("auto", 0, full, big) == 0);
  CHECK_MSG(g_warnings[0] == '\0', "auto warned: %s", g_warnings);
  CHECK(pinned_workers("always", 0, full, big) == 0);
  CHECK_MSG(strstr(g_warnings, "not pinning threads") != NULL, "always did not warn: \"%s\"", g_warnings);
}

/* A value that names no policy is a warning naming it, and auto; team
 * creation never fails over it. */
static void test_bad_values_warn_and_mean_auto(void) {
  static const char *const bad[] = {"bogus", "NEVER", "0", "1", "-1", "never ", "pin"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_MSG(pinned_workers(bad[i], 0, sizeof(sk_team_config), g_n) == g_n - 1, "SK_PIN_THREADS=\"%s\"", bad[i]);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "SK_PIN_THREADS=\"%s\"", bad[i]);
    CHECK_MSG(strstr(g_warnings, quoted) && strstr(g_warnings, "auto, always or never"),
              "no warning naming %s: \"%s\"", quoted, g_warnings);
  }
  /* Not read at all when the config decides. */
  CHECK(pinned_workers("bogus", -1, sizeof(sk_team_config), g_n) == 0);
  CHECK_MSG(g_warnings[0] == '\0', "warned although the config decides: %s", g_warnings);
}

int main(void) {
  int ncpus = cpus_available();
  if (ncpus < 2) harness_skip_test("one CPU available: pinned and unpinned workers look the same");
  g_n = ncpus < MAX_CORES ? ncpus : MAX_CORES;
  /* Pinning may be forbidden (a sandbox): then no policy can be seen. */
  int probe = pinned_workers(NULL, 1, sizeof(sk_team_config), g_n);
  if (probe != g_n - 1)
    harness_skip_test("pinning is not permitted here (%d of %d workers pinned): %s", probe, g_n - 1, g_warnings);
  static const harness_case cases[] = {
      TEST_CASE(test_env_decides_for_auto), TEST_CASE(test_config_wins),
      TEST_CASE(test_always_warns_when_it_cannot_pin), TEST_CASE(test_bad_values_warn_and_mean_auto)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  unsetenv("SK_PIN_THREADS");
  return rc;
}

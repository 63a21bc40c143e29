/* sk_team_config.cpus: a team placed on the CPUs the caller names, made
 * from a thread bound to one CPU as vLLM binds each OpenMP thread of a rank
 * (the case it exists for: without the list the workers inherit that one
 * CPU). Each worker reads back its own affinity mask inside a launch, so the
 * test sees what the kernel enforces. */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "harness.h"

enum { MAX_CORES = 4 };

static int g_cpu_list[CPU_SETSIZE];
static int g_ncpus;

/* Per core: its affinity mask's CPU count and lowest CPU during a launch. */
typedef struct placement {
  int count[MAX_CORES];
  int first[MAX_CORES];
} placement;

static void placement_block(void *p, int64_t b, int core) {
  (void)b;
  placement *a = p;
  cpu_set_t set;
  CPU_ZERO(&set);
  a->count[core] = pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  a->first[core] = -1;
  for (int c = 0; c < CPU_SETSIZE && a->first[core] < 0; c++)
    if (CPU_ISSET(c, &set)) a->first[core] = c;
}

static int g_place_warnings;

static void count_warnings(sk_log_level level, const char *message, void *user) {
  (void)user;
  if (level == SK_LOG_WARN && (strstr(message, "cannot pin") || strstr(message, "cannot place"))) g_place_warnings++;
}

/* What a team made with cfg from a thread bound to g_cpu_list[0] sees. */
typedef struct made {
  sk_team_config cfg;
  sk_status status;
  int num_cores;
  placement where;
} made;

static void *make_from_bound_thread(void *p) {
  made *m = p;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(g_cpu_list[0], &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
    m->status = SK_STATUS_SYSTEM_ERROR;
    return NULL;
  }
  sk_team *team = NULL;
  m->status = sk_team_create(&m->cfg, &team);
  if (m->status != SK_STATUS_OK) return NULL;
  m->num_cores = sk_team_num_cores(team);
  memset(&m->where, 0, sizeof m->where);
  if (sk_team_launch(team, placement_block, &m->where, m->num_cores) != SK_STATUS_OK) m->status = SK_STATUS_INTERNAL;
  sk_team_destroy(team);
  return NULL;
}

static made make(int num_cores, int pin, const int *cpus, int num_cpus, size_t size) {
  made m = {.cfg = {.struct_size = size, .num_cores = num_cores, .pin_threads = pin, .cpus = cpus,
                    .num_cpus = num_cpus}};
  pthread_t t;
  g_place_warnings = 0;
  sk_set_log_handler(count_warnings, NULL);
  if (pthread_create(&t, NULL, make_from_bound_thread, &m) == 0) pthread_join(t, NULL);
  sk_set_log_handler(NULL, NULL);
  return m;
}

/* Worker c on exactly the c-th CPU of the list, whatever the creator's
 * mask; the caller stays where it was (one CPU). */
static void test_workers_pinned_to_the_list(void) {
  int n = g_ncpus < MAX_CORES ? g_ncpus : MAX_CORES;
  made m = make(0, 0, g_cpu_list, n, sizeof(sk_team_config));
  CHECK_MSG(m.status == SK_STATUS_OK, "%s", sk_last_error());
  CHECK_MSG(m.num_cores == n, "num_cores 0 with %d CPUs given made %d cores", n, m.num_cores);
  CHECK(m.where.count[0] == 1 && m.where.first[0] == g_cpu_list[0]);
  for (int c = 1; c < m.num_cores; c++)
    CHECK_MSG(m.where.count[c] == 1 && m.where.first[c] == g_cpu_list[c], "worker %d: %d CPUs from %d, want CPU %d",
              c, m.where.count[c], m.where.first[c], g_cpu_list[c]);
  /* The list's order, not the CPUs' (cpus[0] is the caller's). */
  int reversed[2] = {g_cpu_list[1], g_cpu_list[0]};
  m = make(2, 1, reversed, 2, sizeof(sk_team_config));
  CHECK_MSG(m.status == SK_STATUS_OK, "%s", sk_last_error());
  CHECK_MSG(m.where.count[1] == 1 && m.where.first[1] == g_cpu_list[0], "worker 1 on %d CPUs from %d, want CPU %d",
            m.where.count[1], m.where.first[1], g_cpu_list[0]);
  /* Fewer cores than CPUs: the first num_cores of them. */
  m = make(1, 0, g_cpu_list, 2, sizeof(sk_team_config));
  CHECK(m.status == SK_STATUS_OK && m.num_cores == 1);
}

/* Never pinned: each worker may run on the whole list, not on the one CPU
 * the creating thread was bound to. */
static void test_never_spreads_over_the_list(void) {
  made m = make(2, -1, g_cpu_list, 2, sizeof(sk_team_config));
  CHECK_MSG(m.status == SK_STATUS_OK, "%s", sk_last_error());
  CHECK_MSG(m.where.count[1] == 2, "worker 1 has %d CPUs, want the 2 given", m.where.count[1]);
  /* Without a list it inherits the creator's one CPU: what the list is for. */
  m = make(2, -1, NULL, 0, sizeof(sk_team_config));
  CHECK(m.status == SK_STATUS_OK && m.where.count[1] == 1 && m.where.first[1] == g_cpu_list[0]);
}

/* A caller built before the list existed: its struct ends at pin_threads,
 * and whatever follows it in memory is not read. */
static void test_older_struct_ignores_the_list(void) {
  made m = make(2, -1, g_cpu_list, 2, offsetof(sk_team_config, cpus));
  CHECK_MSG(m.status == SK_STATUS_OK, "%s", sk_last_error());
  CHECK(m.where.count[1] == 1);
}

static void test_bad_lists_name_the_field(void) {
  sk_team *t = NULL;
  int two[2] = {g_cpu_list[0], g_cpu_list[1]};
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cpus = 2};
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "cfg->cpus is NULL", "num_cpus = 2");
  cfg.cpus = two;
  cfg.num_cpus = 0;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "cfg->num_cpus = 0", "1..");
  cfg.num_cpus = -3;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "cfg->num_cpus = -3");
  int negative[2] = {g_cpu_list[0], -1};
  cfg.cpus = negative;
  cfg.num_cpus = 2;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "cfg->cpus[1] = -1", "CPU number");
  int twice[2] = {g_cpu_list[1], g_cpu_list[1]};
  cfg.cpus = twice;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "cfg->cpus[0] and cfg->cpus[1]", "both CPU");
  cfg.cpus = two;
  cfg.num_cores = 3;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "num_cores = 3", "num_cpus = 2");
  cfg.num_cores = 0;
  setenv("SK_NUM_THREADS", "3", 1);
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "SK_NUM_THREADS=3", "num_cpus = 2");
  unsetenv("SK_NUM_THREADS");
  CHECK(t == NULL);
}

int main(void) {
  unsetenv("SK_PIN_THREADS");
  unsetenv("SK_NUM_THREADS");
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) harness_skip_test("the affinity mask cannot be read");
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) g_cpu_list[g_ncpus++] = c;
  if (g_ncpus < 2) harness_skip_test("one CPU available: no second CPU to place a worker on");
  /* Placement may be forbidden (a sandbox): then nothing can be seen. */
  made probe = make(2, 1, g_cpu_list, 2, sizeof(sk_team_config));
  if (probe.status != SK_STATUS_OK || g_place_warnings > 0)
    harness_skip_test("threads cannot be placed here (%s, %d warnings)", sk_status_string(probe.status),
                      g_place_warnings);
  static const harness_case cases[] = {
      TEST_CASE(test_workers_pinned_to_the_list), TEST_CASE(test_never_spreads_over_the_list),
      TEST_CASE(test_older_struct_ignores_the_list), TEST_CASE(test_bad_lists_name_the_field)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

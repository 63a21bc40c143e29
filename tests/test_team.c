/* The core team: block placement and order, back-to-back launches, create /
 * destroy loops, argument errors, nested and concurrent launches, pinning and
 * thread-creation failure. Barriers are in test_team_barrier.c, heavy
 * oversubscription in test_team_oversub.c. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/alloc.h"
#include "harness.h"
#include "runtime/team.h"

static int cpus_available(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

static sk_team *make_team(int num_cores) {
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = num_cores};
  sk_team *team = NULL;
  CHECK_OK(sk_team_create(&cfg, &team));
  return team;
}

/* ------------------------------------------------------------------------ */

typedef struct map_arg {
  int n_cores;
  int *core_of;        /* per block: the core that ran it */
  atomic_int *runs;    /* per block: how many times it ran */
  int64_t *last;       /* per core: last block it ran (order check) */
  int *bad_order;      /* per core */
  int *bad_current;    /* per core: sk__team_current_core() disagreed */
} map_arg;

static void map_block(void *p, int64_t b, int core) {
  map_arg *a = p;
  a->core_of[b] = core;
  atomic_fetch_add_explicit(&a->runs[b], 1, memory_order_relaxed);
  if (a->last[core] >= b) a->bad_order[core] = 1;
  a->last[core] = b;
  if (sk__team_current_core() != core) a->bad_current[core] = 1;
}

static map_arg map_arg_make(int n, size_t nb) {
  map_arg a = {.n_cores = n};
  a.core_of = calloc(nb, sizeof *a.core_of);
  a.runs = calloc(nb, sizeof *a.runs);
  a.last = malloc((size_t)n * sizeof *a.last);
  a.bad_order = calloc((size_t)n, sizeof *a.bad_order);
  a.bad_current = calloc((size_t)n, sizeof *a.bad_current);
  for (int c = 0; c < n; c++) a.last[c] = -1;
  for (size_t b = 0; b < nb; b++) a.core_of[b] = -1;
  return a;
}

static void map_arg_free(map_arg *a) {
  free(a->core_of);
  free(a->runs);
  free(a->last);
  free(a->bad_order);
  free(a->bad_current);
}

static void check_mapping(sk_team *team, int64_t n_blocks) {
  int n = sk_team_num_cores(team);
  size_t nb = n_blocks > 0 ? (size_t)n_blocks : 1;
  map_arg a = map_arg_make(n, nb);

  CHECK_OK(sk_team_launch(team, map_block, &a, n_blocks));
  CHECK(sk__team_current_core() == -1);

  int bad_runs = 0, bad_core = 0;
  for (int64_t b = 0; b < n_blocks; b++) {
    if (atomic_load(&a.runs[b]) != 1) bad_runs++;
    if (a.core_of[b] != (int)(b % n)) bad_core++;
  }
  CHECK_MSG(bad_runs == 0, "team %d, %lld blocks: %d blocks not run exactly once", n,
            (long long)n_blocks, bad_runs);
  CHECK_MSG(bad_core == 0, "team %d, %lld blocks: %d blocks on the wrong core", n,
            (long long)n_blocks, bad_core);
  for (int c = 0; c < n; c++) {
    CHECK_MSG(!a.bad_order[c], "team %d, %lld blocks: core %d ran blocks out of order", n,
              (long long)n_blocks, c);
    CHECK_MSG(!a.bad_current[c], "team %d: sk__team_current_core wrong on core %d", n, c);
    /* The last block of core c is the largest b < n_blocks with b % n == c. */
    int64_t want = n_blocks > c ? c + (n_blocks - 1 - c) / n * n : -1;
    CHECK_MSG(a.last[c] == want, "team %d, %lld blocks: core %d ended at %lld, want %lld",
              n, (long long)n_blocks, c, (long long)a.last[c], (long long)want);
  }
  map_arg_free(&a);
}

/* A claimed launch, three times (the counter starts again each launch):
 * every block runs exactly once, each core's blocks in increasing order
 * (they come from one counter), on valid cores, with sk__team_current_core
 * right. check_mapping after it on the same team shows the dealt mode is
 * back (b % n: claiming does not stick). */
static void check_claimed(sk_team *team, int64_t n_blocks) {
  int n = sk_team_num_cores(team);
  size_t nb = n_blocks > 0 ? (size_t)n_blocks : 1;
  for (int rep = 0; rep < 3; rep++) {
    map_arg a = map_arg_make(n, nb);
    CHECK_OK(sk__team_launch_claimed(team, map_block, &a, n_blocks));
    int bad = 0;
    for (int64_t b = 0; b < n_blocks; b++) bad += atomic_load(&a.runs[b]) != 1 || a.core_of[b] < 0 || a.core_of[b] >= n;
    CHECK_MSG(bad == 0, "team %d, %lld claimed blocks: %d not run exactly once on a valid core", n,
              (long long)n_blocks, bad);
    for (int c = 0; c < n; c++)
      CHECK_MSG(!a.bad_order[c] && !a.bad_current[c], "team %d: core %d out of order or wrong current core", n, c);
    map_arg_free(&a);
  }
}

/* Dealt and claimed launches of every count, alternating on each team. */
static void test_block_mapping(void) {
  static const int sizes[] = {1, 2, 3, 8};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int n = sizes[i];
    sk_team *team = make_team(n);
    if (!team) continue;
    CHECK(sk_team_num_cores(team) == n);
    const int64_t counts[] = {0, 1, n - 1, n, n + 1, 2 * n + 1, 1000, 1001};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      check_claimed(team, counts[k]);
      check_mapping(team, counts[k]);
    }
    sk_team_destroy(team);
  }
}

/* ------------------------------------------------------------------------ */

typedef struct count_arg {
  int64_t per_core[64][8]; /* plain counters, one cache line per core */
} count_arg;

static void count_block(void *p, int64_t b, int core) {
  (void)b;
  ((count_arg *)p)->per_core[core][0]++;
}

/* Back-to-back tiny launches, mixing block counts (including the
 * 1-block path that does not wake the workers). */
static void run_back_to_back(int n, int launches) {
  sk_team *team = make_team(n);
  if (!team) return;
  count_arg *a = sk__aligned_calloc(sizeof *a);
  int64_t want[64] = {0};
  for (int i = 0; i < launches; i++) {
    int64_t nb = (i % 7 == 3) ? 1 : (i % 5 == 0 ? 2 * n + 1 : n);
    sk_status st = sk_team_launch(team, count_block, a, nb);
    if (st != SK_STATUS_OK) {
      CHECK_OK(st);
      break;
    }
    for (int64_t b = 0; b < nb; b++) want[b % n]++;
  }
  for (int c = 0; c < n; c++)
    CHECK_MSG(a->per_core[c][0] == want[c], "team %d core %d: %lld blocks, want %lld", n, c,
              (long long)a->per_core[c][0], (long long)want[c]);
  sk__aligned_free(a);
  sk_team_destroy(team);
}

static void test_back_to_back(void) {
  run_back_to_back(2, 10000);
  run_back_to_back(3, 3000);
}

static void test_create_destroy_loop(void) {
  count_arg *a = sk__aligned_calloc(sizeof *a);
  for (int i = 0; i < 200; i++) {
    int n = 1 + i % 8;
    sk_team *team = make_team(n);
    if (!team) break;
    if (i % 2) CHECK_OK(sk_team_launch(team, count_block, a, n));
    sk_team_destroy(team);
  }
  int64_t total = 0;
  for (int c = 0; c < 8; c++) total += a->per_core[c][0];
  int64_t want = 0;
  for (int i = 1; i < 200; i += 2) want += 1 + i % 8;
  CHECK(total == want);
  sk__aligned_free(a);
  sk_team_destroy(NULL); /* a no-op */
  CHECK(sk_team_num_cores(NULL) == 0);
}

/* ------------------------------------------------------------------------ */

static void nop_block(void *p, int64_t b, int core) {
  (void)p;
  (void)b;
  (void)core;
}

static void test_bad_arguments(void) {
  sk_team *team = make_team(2);
  if (!team) return;
  CHECK_FAILS(sk_team_launch(NULL, nop_block, NULL, 4), SK_STATUS_INVALID_ARGUMENT,
              "sk_team_launch", "team");
  CHECK_FAILS(sk_team_launch(team, NULL, NULL, 4), SK_STATUS_INVALID_ARGUMENT,
              "sk_team_launch", "fn");
  CHECK_FAILS(sk_team_launch(team, nop_block, NULL, -5), SK_STATUS_INVALID_ARGUMENT,
              "n_blocks", "-5");
  CHECK_OK(sk_team_launch(team, nop_block, NULL, 0));
  CHECK(sk_last_error()[0] == '\0');
  sk_team_destroy(team);

  sk_team *t = (sk_team *)&t; /* must be overwritten with NULL on failure */
  sk_team_config cfg = {.struct_size = 0, .num_cores = 2}; /* 0: this header's size */
  CHECK_OK(sk_team_create(&cfg, &t));
  CHECK(sk_team_num_cores(t) == 2);
  sk_team_destroy(t);
  cfg.struct_size = 2; /* shorter than num_cores */
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "struct_size = 2", "expected");
  CHECK(t == NULL);
  cfg.struct_size = sizeof cfg + 8;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "struct_size");
  cfg.struct_size = sizeof cfg;
  CHECK_FAILS(sk_team_create(&cfg, NULL), SK_STATUS_INVALID_ARGUMENT, "team_out");
  cfg.num_cores = -1;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "num_cores", "-1",
              "1024");
  cfg.num_cores = SK_TEAM_MAX_CORES + 1;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "num_cores", "1025",
              "1024");
  cfg.num_cores = 2;
  cfg.pin_threads = 3;
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_INVALID_ARGUMENT, "pin_threads", "3");
  CHECK(t == NULL);

  /* An older caller's smaller struct: fields past struct_size are not read
   * (pin_threads = 3 would be rejected if it were). */
  cfg.struct_size = offsetof(sk_team_config, pin_threads);
  CHECK_OK(sk_team_create(&cfg, &t));
  CHECK(sk_team_num_cores(t) == 2);
  sk_team_destroy(t);
}

static void test_env_threads(void) {
  char *saved = getenv("SK_NUM_THREADS");
  saved = saved ? strdup(saved) : NULL;
  sk_team *t = NULL;
  static const char *const bad[] = {"abc", "0", "-3", "3x", " 3", "2000", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("SK_NUM_THREADS", bad[i], 1);
    CHECK_FAILS(sk_team_create(NULL, &t), SK_STATUS_INVALID_ARGUMENT, "SK_NUM_THREADS",
                bad[i], "1..1024");
    CHECK(t == NULL);
  }
  setenv("SK_NUM_THREADS", "3", 1);
  CHECK_OK(sk_team_create(NULL, &t));
  CHECK(sk_team_num_cores(t) == 3);
  sk_team_destroy(t);
  /* An explicit num_cores wins over the environment (which is then not
   * even read: a bad value does not matter). */
  setenv("SK_NUM_THREADS", "abc", 1);
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 2};
  CHECK_OK(sk_team_create(&cfg, &t));
  CHECK(sk_team_num_cores(t) == 2);
  sk_team_destroy(t);
  /* Empty means unset; unset means the affinity mask. */
  setenv("SK_NUM_THREADS", "", 1);
  CHECK_OK(sk_team_create(NULL, &t));
  CHECK(sk_team_num_cores(t) == cpus_available());
  sk_team_destroy(t);
  unsetenv("SK_NUM_THREADS");
  cfg.num_cores = 0;
  CHECK_OK(sk_team_create(&cfg, &t));
  CHECK(sk_team_num_cores(t) == cpus_available());
  sk_team_destroy(t);
  if (saved) {
    setenv("SK_NUM_THREADS", saved, 1);
    free(saved);
  }
}

/* ------------------------------------------------------------------------ */

static atomic_int g_log_errors;

static void count_log(sk_log_level level, const char *message, void *user) {
  (void)user;
  if (level == SK_LOG_ERROR && strstr(message, "sk_team_destroy"))
    atomic_fetch_add(&g_log_errors, 1);
}

typedef struct nested_arg {
  sk_team *self, *other;
  sk_status st_self[16], st_other[16];
  int msg_ok[16];
} nested_arg;

static void nested_block(void *p, int64_t b, int core) {
  (void)core;
  nested_arg *a = p;
  a->st_self[b] = sk_team_launch(a->self, nop_block, NULL, 4);
  a->msg_ok[b] = strstr(sk_last_error(), "nested") != NULL;
  a->st_other[b] = sk_team_launch(a->other, nop_block, NULL, 4);
  a->msg_ok[b] &= strstr(sk_last_error(), "nested") != NULL;
  if (b == 1) sk_team_destroy(a->self); /* refused: logs an error, no deadlock */
}

static void test_nested_launch(void) {
  nested_arg a = {.self = make_team(3), .other = make_team(2)};
  if (!a.self || !a.other) return;
  sk_set_log_handler(count_log, NULL);
  CHECK_OK(sk_team_launch(a.self, nested_block, &a, 6));
  sk_set_log_handler(NULL, NULL);
  for (int b = 0; b < 6; b++) {
    CHECK(a.st_self[b] == SK_STATUS_INVALID_STATE);
    CHECK(a.st_other[b] == SK_STATUS_INVALID_STATE);
    CHECK(a.msg_ok[b]);
  }
  CHECK(atomic_load(&g_log_errors) == 1);
  /* Both teams still work. */
  check_mapping(a.self, 7);
  check_mapping(a.other, 7);
  sk_team_destroy(a.self);
  sk_team_destroy(a.other);
}

/* ------------------------------------------------------------------------ */

/* Two threads launch on one team; each launch claims the team in every block
 * (a launch seeing another's token means launches overlapped), the team
 * barrier separates the claims from core 0's release of the claim, and plain
 * per-core counters (checked by ThreadSanitizer) must add up. */
typedef struct shared_team {
  sk_team *team;
  atomic_int owner;
  atomic_int overlaps;
  int64_t per_core[8][8];
} shared_team;

typedef struct launch_token {
  shared_team *s;
  int token;
} launch_token;

static void claim_block(void *p, int64_t b, int core) {
  (void)b;
  launch_token *t = p;
  shared_team *s = t->s;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&s->owner, &expected, t->token) &&
      expected != t->token)
    atomic_fetch_add(&s->overlaps, 1);
  s->per_core[core][0]++;
  sk__team_barrier(s->team, core);
  if (core == 0) atomic_store(&s->owner, 0);
}

enum { CONCURRENT_LAUNCHES = 1500 };

static void *launch_thread(void *p) {
  launch_token *t = p;
  for (int i = 0; i < CONCURRENT_LAUNCHES; i++)
    if (sk_team_launch(t->s->team, claim_block, t, sk_team_num_cores(t->s->team)) !=
        SK_STATUS_OK)
      return (void *)1;
  return NULL;
}

static void test_concurrent_launches_one_team(void) {
  shared_team *s = sk__aligned_calloc(sizeof *s);
  s->team = make_team(3);
  if (!s->team) {
    sk__aligned_free(s);
    return;
  }
  launch_token tokens[2] = {{s, 1}, {s, 2}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, launch_thread, &tokens[i]) == 0);
  for (int i = 0; i < 2; i++) {
    void *ret = (void *)1;
    pthread_join(th[i], &ret);
    CHECK(ret == NULL);
  }
  CHECK(atomic_load(&s->overlaps) == 0);
  for (int c = 0; c < 3; c++) CHECK(s->per_core[c][0] == 2 * CONCURRENT_LAUNCHES);
  sk_team_destroy(s->team);
  sk__aligned_free(s);
}

/* ------------------------------------------------------------------------ */

typedef struct pin_arg {
  int cpu_count[8]; /* CPUs in each core's affinity mask during the launch */
  int first_cpu[8];  /* the lowest of them */
} pin_arg;

static void pin_block(void *p, int64_t b, int core) {
  (void)b;
  pin_arg *a = p;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return;
  a->cpu_count[core] = CPU_COUNT(&set);
  a->first_cpu[core] = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) {
      a->first_cpu[core] = c;
      break;
    }
}

static atomic_int g_pin_warnings;

static void count_pin_warnings(sk_log_level level, const char *message, void *user) {
  (void)user;
  if (level == SK_LOG_WARN && strstr(message, "cannot pin"))
    atomic_fetch_add(&g_pin_warnings, 1);
}

static void test_pinning(void) {
  unsetenv("SK_PIN_THREADS"); /* pin_threads 0 must mean auto here (test_team_pin.c) */
  int ncpus = cpus_available();
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  int cpu_list[CPU_SETSIZE], k = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) cpu_list[k++] = c;

  int n = ncpus < 4 ? ncpus : 4;
  if (n < 2) harness_skip_part("one CPU available: no worker to pin, placement checks left out");
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = n, .pin_threads = 1};
  sk_team *team = NULL;
  sk_set_log_handler(count_pin_warnings, NULL);
  CHECK_OK(sk_team_create(&cfg, &team));
  sk_set_log_handler(NULL, NULL);
  /* Pinning may be forbidden (a sandbox); that is a warning, not an error,
   * and then there is nothing to check. */
  if (atomic_load(&g_pin_warnings) > 0)
    harness_skip_part("pinning not permitted here (%d warnings): placement checks left out", atomic_load(&g_pin_warnings));
  if (team && atomic_load(&g_pin_warnings) == 0) {
    pin_arg a;
    memset(&a, 0, sizeof a);
    CHECK_OK(sk_team_launch(team, pin_block, &a, n));
    /* Each worker on one CPU of the set, no two on the same one (which
     * CPUs depends on where the caller ran at create time). */
    for (int c = 1; c < n; c++) {
      CHECK_MSG(a.cpu_count[c] == 1, "worker %d has %d CPUs, want 1", c, a.cpu_count[c]);
      bool in_set = false;
      for (int j = 0; j < ncpus; j++) in_set |= a.first_cpu[c] == cpu_list[j];
      CHECK_MSG(in_set, "worker %d on CPU %d, outside the affinity set", c, a.first_cpu[c]);
      for (int d = 1; d < c; d++)
        CHECK_MSG(a.first_cpu[c] != a.first_cpu[d], "workers %d and %d share CPU %d", d, c, a.first_cpu[c]);
    }
    /* The caller (core 0) is never pinned. */
    CHECK(a.cpu_count[0] == ncpus);
  }
  sk_team_destroy(team);
  /* The default pins too; -1 never pins. */
  for (int mode = 0; mode >= -1; mode--) {
    sk_team_config dflt = {.struct_size = sizeof dflt, .num_cores = n, .pin_threads = mode};
    CHECK_OK(sk_team_create(&dflt, &team));
    if (team && n > 1 && atomic_load(&g_pin_warnings) == 0) {
      pin_arg a;
      memset(&a, 0, sizeof a);
      CHECK_OK(sk_team_launch(team, pin_block, &a, n));
      CHECK_MSG(a.cpu_count[1] == (mode == 0 ? 1 : ncpus), "pin_threads %d: worker 1 has %d CPUs", mode,
                a.cpu_count[1]);
    }
    sk_team_destroy(team);
  }
  /* Larger than the CPU set: not pinned, still works (pin_arg holds 8 cores). */
  if (ncpus >= 8) {
    harness_skip_part("%d CPUs: the team-larger-than-the-CPU-set check needs fewer than 8", ncpus);
    return;
  }
  cfg.num_cores = ncpus + 1;
  CHECK_OK(sk_team_create(&cfg, &team));
  if (team) {
    pin_arg a;
    memset(&a, 0, sizeof a);
    CHECK_OK(sk_team_launch(team, pin_block, &a, cfg.num_cores));
    for (int c = 0; c < cfg.num_cores; c++) CHECK(a.cpu_count[c] == ncpus);
    sk_team_destroy(team);
  }
}

static void test_thread_create_failure(void) {
  sk_team *t = NULL;
  sk__team_test_fail_thread_create(3); /* after two workers already run */
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 6};
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_SYSTEM_ERROR, "worker thread 3",
              "pthread_create");
  CHECK(t == NULL);
  sk__team_test_fail_thread_create(1); /* the very first worker */
  CHECK_FAILS(sk_team_create(&cfg, &t), SK_STATUS_SYSTEM_ERROR, "worker thread 1");
  /* The hook is one-shot: the next create works. */
  CHECK_OK(sk_team_create(&cfg, &t));
  if (t) check_mapping(t, 13);
  sk_team_destroy(t);
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Idle workers stop spinning and sleep (the process uses next to no CPU
 * while the team waits), and a launch after the sleep wakes them. */
static void test_idle_sleep_and_wake(void) {
  sk_team *team = make_team(3);
  if (!team) return;
  count_arg *a = sk__aligned_calloc(sizeof *a);
  for (int round = 0; round < 4; round++) {
    CHECK_OK(sk_team_launch(team, count_block, a, 3));
    struct timespec pause_ts = {0, 20 * 1000 * 1000}; /* let the workers fall asleep */
    nanosleep(&pause_ts, NULL);
  }
  double c0 = cpu_seconds();
  struct timespec idle = {0, 200 * 1000 * 1000};
  nanosleep(&idle, NULL);
  double used = cpu_seconds() - c0;
  CHECK_MSG(used < 0.05, "an idle team of 3 used %.3f s of CPU in 0.2 s", used);
  CHECK_OK(sk_team_launch(team, count_block, a, 3));
  for (int c = 0; c < 3; c++) CHECK(a->per_core[c][0] == 5);
  sk__aligned_free(a);
  sk_team_destroy(team);
}

static void test_current_core_outside(void) {
  CHECK(sk__team_current_core() == -1);
}

TEST_MAIN(TEST_CASE(test_current_core_outside), TEST_CASE(test_block_mapping),
          TEST_CASE(test_back_to_back), TEST_CASE(test_create_destroy_loop),
          TEST_CASE(test_bad_arguments), TEST_CASE(test_env_threads),
          TEST_CASE(test_nested_launch), TEST_CASE(test_concurrent_launches_one_team),
          TEST_CASE(test_pinning), TEST_CASE(test_thread_create_failure),
          TEST_CASE(test_idle_sleep_and_wake))

/* Oversubscription: several teams, each larger than the machine, launched
 * concurrently from several threads. Progress relies on the waits yielding and
 * then sleeping rather than spinning; the test checks the results and that it
 * finishes in reasonable time. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "core/alloc.h"
#include "harness.h"
#include "runtime/team.h"

enum { TEAMS = 4, CORES = 8, LAUNCHES = 5000, BARRIER_EVERY = 10, EPISODES = 4 };

typedef struct team_run {
  sk_team *team;
  int64_t per_core[CORES][8]; /* plain: ordered by the launch protocol */
  int phase[2][CORES];
  int errors[CORES][16];
  int failed_launches;
} team_run;

static void count_block(void *p, int64_t b, int core) {
  (void)b;
  ((team_run *)p)->per_core[core][0]++;
}

static void barrier_block(void *p, int64_t b, int core) {
  (void)b;
  team_run *r = p;
  r->per_core[core][0]++;
  for (int i = 0; i < EPISODES; i++) {
    r->phase[i & 1][core] = i;
    sk__team_barrier(r->team, core);
    for (int j = 0; j < CORES; j++)
      if (r->phase[i & 1][j] != i) r->errors[core][0]++;
  }
}

static void *run_team(void *p) {
  team_run *r = p;
  for (int l = 0; l < LAUNCHES; l++) {
    int with_barrier = l % BARRIER_EVERY == 0;
    /* Block counts alternate between one per core and a ragged 2n+3. */
    int64_t nb = with_barrier ? CORES : (l % 2 ? CORES : 2 * CORES + 3);
    if (sk_team_launch(r->team, with_barrier ? barrier_block : count_block, r, nb) !=
        SK_STATUS_OK)
      r->failed_launches++;
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_oversubscribed_teams(void) {
  team_run *runs[TEAMS];
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = CORES};
  for (int t = 0; t < TEAMS; t++) {
    runs[t] = sk__aligned_calloc(sizeof *runs[t]);
    CHECK_OK(sk_team_create(&cfg, &runs[t]->team));
  }
  double t0 = now_s();
  pthread_t th[TEAMS];
  for (int t = 0; t < TEAMS; t++) CHECK(pthread_create(&th[t], NULL, run_team, runs[t]) == 0);
  for (int t = 0; t < TEAMS; t++) pthread_join(th[t], NULL);
  double elapsed = now_s() - t0;
  printf("     %d teams x %d cores, %d launches each: %.2f s\n", TEAMS, CORES, LAUNCHES,
         elapsed);

  /* Expected blocks per core over the launch sequence of run_team. */
  int64_t want[CORES] = {0};
  for (int l = 0; l < LAUNCHES; l++) {
    int64_t nb = l % BARRIER_EVERY == 0 ? CORES : (l % 2 ? CORES : 2 * CORES + 3);
    for (int64_t b = 0; b < nb; b++) want[b % CORES]++;
  }
  for (int t = 0; t < TEAMS; t++) {
    CHECK(runs[t]->failed_launches == 0);
    for (int c = 0; c < CORES; c++) {
      CHECK_MSG(runs[t]->per_core[c][0] == want[c], "team %d core %d: %lld blocks, want %lld",
                t, c, (long long)runs[t]->per_core[c][0], (long long)want[c]);
      CHECK(runs[t]->errors[c][0] == 0);
    }
    sk_team_destroy(runs[t]->team);
    sk__aligned_free(runs[t]);
  }
  /* Generous: sanitizer builds are several times slower than Release. */
  CHECK_MSG(elapsed < 60.0, "took %.1f s", elapsed);
}

/* One team far larger than the machine, launched back to back. */
static void count_block_big(void *p, int64_t b, int core) {
  (void)b;
  ((int64_t(*)[8])p)[core][0]++;
}

static void test_one_big_team(void) {
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 32};
  sk_team *team = NULL;
  CHECK_OK(sk_team_create(&cfg, &team));
  if (!team) return;
  static _Alignas(64) int64_t counts[32][8];
  double t0 = now_s();
  for (int l = 0; l < 500; l++) {
    sk_status st = sk_team_launch(team, count_block_big, counts, 32);
    if (st != SK_STATUS_OK) {
      CHECK_OK(st);
      break;
    }
  }
  printf("     1 team x 32 cores, 500 launches: %.2f s\n", now_s() - t0);
  for (int c = 0; c < 32; c++) CHECK(counts[c][0] == 500);
  sk_team_destroy(team);
}

TEST_MAIN(TEST_CASE(test_oversubscribed_teams), TEST_CASE(test_one_big_team))

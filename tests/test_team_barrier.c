/* Barriers: the team barrier inside launches, barriers over subsets of a
 * team's cores, and a bare sk__barrier_t between plain pthreads.
 *
 * The phase arrays are plain ints on purpose: a barrier that failed to order
 * the writes before it with the reads after it shows up as a wrong value here
 * and as a data race under ThreadSanitizer. They are double-buffered by
 * iteration parity so one barrier per iteration suffices: the slot written in
 * iteration i + 2 is only written after barrier i + 1, which every reader of
 * iteration i reaches after its reads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/alloc.h"
#include "harness.h"
#include "runtime/team.h"

#define MAX_CORES 16

typedef struct phase_arg {
  sk_team *team;
  int iters;
  int phase[2][MAX_CORES];
  atomic_int arrivals;
  int errors[MAX_CORES][16]; /* per core, a line apart */
} phase_arg;

/* Runs iters barrier episodes on this core; returns the errors seen. */
static void phase_loop(phase_arg *a, int core, int n) {
  for (int i = 0; i < a->iters; i++) {
    a->phase[i & 1][core] = i;
    atomic_fetch_add_explicit(&a->arrivals, 1, memory_order_relaxed);
    sk__team_barrier(a->team, core);
    for (int j = 0; j < n; j++)
      if (a->phase[i & 1][j] != i) a->errors[core][0]++;
    /* Every core's arrival for episode i is counted before anyone leaves it. */
    if (atomic_load_explicit(&a->arrivals, memory_order_relaxed) < (i + 1) * n)
      a->errors[core][1]++;
  }
}

static void phase_block(void *p, int64_t b, int core) {
  (void)b;
  phase_arg *a = p;
  phase_loop(a, core, sk_team_num_cores(a->team));
}

static int total_errors(const phase_arg *a, int n) {
  int e = 0;
  for (int c = 0; c < n; c++) e += a->errors[c][0] + a->errors[c][1];
  return e;
}

/* With several blocks per core, iters must be even: the first iteration of
 * a core's next block then writes the parity slot not read in the last
 * iteration of its previous block. */
static void run_phases(int n, int launches, int iters, int blocks_per_core) {
  phase_arg *a = sk__aligned_calloc(sizeof *a);
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = n};
  CHECK_OK(sk_team_create(&cfg, &a->team));
  if (!a->team) {
    sk__aligned_free(a);
    return;
  }
  a->iters = iters;
  for (int l = 0; l < launches; l++) {
    /* Each block of a core runs the full loop, so every core takes part in
     * blocks_per_core * iters episodes: the same number on every core. */
    atomic_store(&a->arrivals, 0);
    for (int k = 0; k < 2; k++)
      for (int c = 0; c < n; c++) a->phase[k][c] = -1;
    CHECK_OK(sk_team_launch(a->team, phase_block, a, (int64_t)n * blocks_per_core));
    CHECK(atomic_load(&a->arrivals) == n * iters * blocks_per_core);
  }
  CHECK_MSG(total_errors(a, n) == 0, "team %d: %d barrier errors", n, total_errors(a, n));
  sk_team_destroy(a->team);
  sk__aligned_free(a);
}

static void test_team_barrier(void) {
  run_phases(1, 3, 100, 1);
  run_phases(2, 1, 5000, 1);
  run_phases(3, 1, 3000, 1);
  run_phases(5, 1, 1000, 1);
  run_phases(8, 1, 1000, 1);
}

/* The barrier is reused across launches (its generation carries over), and
 * cores may run several blocks that each use it. */
static void test_team_barrier_across_launches(void) {
  run_phases(3, 200, 5, 1);
  run_phases(4, 20, 50, 3);
}

/* One core arrives late in every episode (2 ms), so the others go through
 * spin and yield into the futex sleep and must be woken by the last arriver. */
typedef struct late_arg {
  sk_team *team;
  int phase[2][4];
  int errors[4][16];
} late_arg;

static void late_block(void *p, int64_t b, int core) {
  (void)b;
  late_arg *a = p;
  for (int i = 0; i < 24; i++) {
    if (i % 4 == core) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    a->phase[i & 1][core] = i;
    sk__team_barrier(a->team, core);
    for (int j = 0; j < 4; j++)
      if (a->phase[i & 1][j] != i) a->errors[core][0]++;
  }
}

static void test_team_barrier_sleepers(void) {
  late_arg *a = sk__aligned_calloc(sizeof *a);
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 4};
  CHECK_OK(sk_team_create(&cfg, &a->team));
  if (a->team) {
    CHECK_OK(sk_team_launch(a->team, late_block, a, 4));
    int e = 0;
    for (int c = 0; c < 4; c++) e += a->errors[c][0];
    CHECK_MSG(e == 0, "%d barrier errors with late arrivals", e);
  }
  sk_team_destroy(a->team);
  sk__aligned_free(a);
}

/* ------------------------------------------------------------------------ */

/* A team of 6: cores 0..2 ("cube") and 3..5 ("vector") each iterate with a
 * barrier of their own, and every 8th iteration all six meet at the team
 * barrier. */
typedef struct subset_arg {
  sk_team *team;
  sk__barrier_t *group[2];
  int iters;
  int phase[2][2][3]; /* [group][parity][member] */
  int all_phase[2][6];
  int errors[6][16];
} subset_arg;

static void subset_block(void *p, int64_t b, int core) {
  (void)b;
  subset_arg *s = p;
  int g = core / 3, m = core % 3;
  for (int i = 0; i < s->iters; i++) {
    s->phase[g][i & 1][m] = i;
    sk__barrier_wait(s->group[g]);
    for (int j = 0; j < 3; j++)
      if (s->phase[g][i & 1][j] != i) s->errors[core][0]++;
    if (i % 8 == 7) {
      int e = i / 8;
      s->all_phase[e & 1][core] = e;
      sk__team_barrier(s->team, core);
      for (int j = 0; j < 6; j++)
        if (s->all_phase[e & 1][j] != e) s->errors[core][1]++;
    }
  }
}

static void test_subset_barriers(void) {
  subset_arg *s = sk__aligned_calloc(sizeof *s);
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 6};
  CHECK_OK(sk_team_create(&cfg, &s->team));
  for (int g = 0; g < 2; g++) {
    s->group[g] = sk__aligned_alloc(sizeof(sk__barrier_t));
    CHECK_OK(sk__barrier_init(s->group[g], 3));
  }
  s->iters = 800;
  if (s->team) {
    for (int l = 0; l < 3; l++) CHECK_OK(sk_team_launch(s->team, subset_block, s, 6));
    int e0 = 0, e1 = 0;
    for (int c = 0; c < 6; c++) {
      e0 += s->errors[c][0];
      e1 += s->errors[c][1];
    }
    CHECK_MSG(e0 == 0, "%d subset-barrier errors", e0);
    CHECK_MSG(e1 == 0, "%d team-barrier errors", e1);
  }
  sk_team_destroy(s->team);
  for (int g = 0; g < 2; g++) sk__aligned_free(s->group[g]);
  sk__aligned_free(s);
}

/* ------------------------------------------------------------------------ */

/* A bare barrier between pthreads that are not a team. */
typedef struct raw_arg {
  sk__barrier_t *barrier;
  int n, iters;
  int phase[2][8];
  int errors[8][16];
} raw_arg;

typedef struct raw_thread {
  raw_arg *a;
  int id;
} raw_thread;

static void *raw_main(void *p) {
  raw_thread *t = p;
  raw_arg *a = t->a;
  for (int i = 0; i < a->iters; i++) {
    a->phase[i & 1][t->id] = i;
    sk__barrier_wait(a->barrier);
    for (int j = 0; j < a->n; j++)
      if (a->phase[i & 1][j] != i) a->errors[t->id][0]++;
  }
  return NULL;
}

static void test_raw_barrier(void) {
  raw_arg *a = sk__aligned_calloc(sizeof *a);
  a->barrier = sk__aligned_alloc(sizeof(sk__barrier_t));
  a->n = 4;
  a->iters = 3000;
  CHECK_OK(sk__barrier_init(a->barrier, a->n));
  pthread_t th[8];
  raw_thread ts[8];
  for (int i = 0; i < a->n; i++) {
    ts[i] = (raw_thread){a, i};
    CHECK(pthread_create(&th[i], NULL, raw_main, &ts[i]) == 0);
  }
  for (int i = 0; i < a->n; i++) pthread_join(th[i], NULL);
  int e = 0;
  for (int i = 0; i < a->n; i++) e += a->errors[i][0];
  CHECK_MSG(e == 0, "%d raw barrier errors", e);

  /* A barrier of one never waits. */
  CHECK_OK(sk__barrier_init(a->barrier, 1));
  for (int i = 0; i < 10; i++) sk__barrier_wait(a->barrier);

  CHECK_FAILS(sk__barrier_init(a->barrier, 0), SK_STATUS_INVALID_ARGUMENT, "count", "0");
  CHECK_FAILS(sk__barrier_init(a->barrier, -2), SK_STATUS_INVALID_ARGUMENT, "count", "-2");
  CHECK_FAILS(sk__barrier_init(NULL, 2), SK_STATUS_INVALID_ARGUMENT, "NULL");
  sk__aligned_free(a->barrier);
  sk__aligned_free(a);
}

TEST_MAIN(TEST_CASE(test_team_barrier), TEST_CASE(test_team_barrier_across_launches),
          TEST_CASE(test_team_barrier_sleepers),
          TEST_CASE(test_subset_barriers), TEST_CASE(test_raw_barrier))

/* The core team: persistent worker threads and the launch protocol.
 *
 * Launch protocol (one launch in flight per team, under launch_lock):
 *
 *   launcher (core 0)                         worker c (1..N-1)
 *   fn, arg, n_blocks, claimed, next = ...    seen = wait epoch != seen (acquire)
 *   remaining = N - 1           (relaxed)     if stop: exit
 *   epoch += 1, wake            (seq_cst)     run blocks c, c+N, ... (reads fn,...)
 *   run blocks 0, N, 2N, ...                  if (remaining -= 1) was 1: wake
 *   (claimed: every core takes next++ until n_blocks instead)
 *   wait remaining == 0         (acquire)
 *
 * The epoch bump is a release that publishes the descriptor and the reset of
 * `remaining`; a worker's acquire read of the new epoch makes them visible.
 * The decrements of `remaining` are seq_cst RMWs (release), forming one
 * release sequence, so the launcher's acquire read of 0 sees every write every
 * block made: when sk_team_launch returns, all block results are visible to
 * the caller. The launcher writes the next descriptor only after that read, so
 * no worker can still be reading the old one. Only the final decrement wakes
 * the launcher; waits and wakes are in runtime/wait.c.
 *
 * A worker cannot miss an epoch: the next bump needs remaining == 0, which
 * needs this worker's decrement, so epochs advance one at a time per worker.
 * Workers start with seen = 0, the epoch at creation (read nowhere else), so a
 * launch that comes before a new thread first runs is not missed either.
 *
 * Fork. A child of fork() has only the thread that called fork(): a team made
 * before it has no workers there, so a launch would wait forever for blocks
 * nobody runs, and destroying it would join threads that do not exist. A
 * team records the fork generation it was made in (runtime/fork.h), and
 * every launch or run on it from a later generation is refused at
 * once (sk__team_check_process), before any lock is taken: the launch lock
 * may have been copied held, by a launch another thread of the parent was
 * in at the fork.
 */
#include "runtime/team.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/amx_state.h"
#include "core/error.h"
#include "core/struct_size.h"
#include "core/fork.h"
#include "runtime/wait.h"

typedef struct sk__worker {
  sk_team *team;
  int core;
  pthread_t thread;
} sk__worker;

struct sk_team {
  /* Read-mostly line: configuration, and the launch descriptor written once
   * per launch by the launcher before it bumps the epoch. */
  alignas(64) int num_cores;
  atomic_int stop; /* set (before an epoch bump) to make workers exit */
  sk_block_fn fn;
  void *arg;
  int64_t n_blocks;
  bool claimed; /* blocks taken from `next`, not dealt b % N */

  /* Hot words, each on its own cache line (sk__wait_word is alignas(64)):
   * workers poll `epoch`, the launcher polls `remaining`, which every worker
   * writes; sharing a line would make each decrement stall the pollers. */
  sk__wait_word epoch;
  sk__wait_word remaining;
  alignas(64) _Atomic int64_t next; /* a claimed launch's next block */
  sk__barrier_t barrier; /* all cores, for sk__team_barrier */

  /* The fork generation and process the team was made in (see the top of
   * the file): in any other, it has no workers. */
  unsigned fork_generation;
  pid_t pid;

  pthread_mutex_t launch_lock;
  /* Times the launcher's wait for its blocks: past it, a warning (a block
   * cannot be abandoned, so the wait goes on; see watchdog.h). */
  sk__watchdog slow_launch;
  sk__worker *workers;   /* num_cores - 1 entries; workers[i] is core i + 1 */
};

/* The calling thread's position inside a launch: set while it runs blocks
 * (core 0 for the launcher, for the whole launch). */
static _Thread_local int tl_core = -1;
static _Thread_local const sk_team *tl_team;

static atomic_int g_fail_worker; /* test-only, see sk__team_test_fail_thread_create */

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* In the child, on the thread that called fork(), before fork() returns:
 * only async-signal-safe work (the JIT's reaper is such a child). */
static void after_fork_in_child(void) {
  sk__wait_after_fork(); /* none of the parent's workers exist here */
  /* A fork from inside a block: the child's thread runs no block of any
   * team there, so its own teams' launches are not nested ones. */
  tl_core = -1;
  tl_team = NULL;
}

static void register_atfork(void) { (void)pthread_atfork(NULL, NULL, after_fork_in_child); }

/* Whether team was made in another process (an ancestor, before a fork).
 * Without the fork generation (pthread_atfork failed: out of memory), the
 * process id tells, at the price of a system call per launch. */
static bool from_another_process(const sk_team *team) {
  if (sk__fork_tracked()) return sk__fork_generation() != team->fork_generation;
  return getpid() != team->pid;
}

sk_status sk__team_check_process(const sk_team *team, const char *fn) {
  if (!team || !from_another_process(team)) return SK_STATUS_OK;
  return sk__fail(SK_STATUS_INVALID_STATE,
                  "%s: the team was created in process %ld, and this is process %ld (a child after fork()): its "
                  "worker threads exist only in the parent; after fork() create a new team in the child "
                  "(destroying this one there is safe)",
                  fn, (long)team->pid, (long)getpid());
}

void sk__team_test_fail_thread_create(int worker) {
  atomic_store(&g_fail_worker, worker);
}

int sk__team_current_core(void) { return tl_core; }

void sk__team_barrier(sk_team *team, int core) {
  (void)core;
  (void)sk__barrier_wait(&team->barrier);
}

int sk_team_num_cores(const sk_team *team) { return team ? team->num_cores : 0; }

/* ------------------------------------------------------------------------ */
/* Workers                                                                   */
/* ------------------------------------------------------------------------ */

/* A core's blocks of one launch; the AMX tiles its kernels configured are
 * released after them (core/amx_state.h). */
static void run_blocks(sk_team *team, int core, sk_block_fn fn, void *arg, int64_t n_blocks) {
  if (team->claimed) { /* relaxed: the epoch's acquire and remaining's release order the blocks' data */
    for (int64_t b; (b = atomic_fetch_add_explicit(&team->next, 1, memory_order_relaxed)) < n_blocks;) fn(arg, b, core);
  } else {
    int64_t stride = team->num_cores;
    for (int64_t b = core; b < n_blocks; b += stride) fn(arg, b, core);
  }
  sk__amx_release_thread();
}

static void *worker_main(void *p) {
  sk__worker *w = p;
  sk_team *team = w->team;
  uint32_t seen = 0; /* the epoch at creation, see the top of the file */
  tl_team = team;
  /* Named for debuggers and profilers ("sk-core-3"); failure is harmless. */
  char name[16];
  snprintf(name, sizeof name, "sk-core-%d", w->core);
  (void)pthread_setname_np(pthread_self(), name);
  for (;;) {
    seen = sk__wait_while_equal(&team->epoch, seen);
    if (atomic_load_explicit(&team->stop, memory_order_relaxed)) break;
    tl_core = w->core;
    run_blocks(team, w->core, team->fn, team->arg, team->n_blocks);
    tl_core = -1;
    if (sk__wait_fetch_add(&team->remaining, (uint32_t)-1) == 1)
      sk__wait_wake(&team->remaining);
  }
  return NULL;
}

/* Makes the first n_workers workers exit and joins them. The stop flag is
 * published by the epoch bump (release) and read after the acquire that ends
 * the worker's wait, so relaxed accesses suffice. */
static void stop_workers(sk_team *team, int n_workers) {
  atomic_store_explicit(&team->stop, 1, memory_order_relaxed);
  sk__wait_fetch_add(&team->epoch, 1);
  sk__wait_wake(&team->epoch);
  for (int i = 0; i < n_workers; i++) pthread_join(team->workers[i].thread, NULL);
}

/* ------------------------------------------------------------------------ */
/* Creation                                                                  */
/* ------------------------------------------------------------------------ */

/* The CPUs the calling thread may run on, in increasing order. Returns the
 * count (>= 1); *list_out gets a malloc'd list, or NULL when the affinity mask
 * could not be read (the count then comes from sysconf). The mask is grown
 * until it is as large as the kernel's (more than 1024 CPUs). */
static int affinity_cpus(int **list_out) {
  *list_out = NULL;
  for (int ncpu = 1024; ncpu <= (1 << 18); ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set) break;
    size_t size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      int count = CPU_COUNT_S(size, set);
      int *list = count > 0 ? malloc((size_t)count * sizeof *list) : NULL;
      if (list) {
        int k = 0;
        for (int c = 0; c < ncpu && k < count; c++)
          if (CPU_ISSET_S(c, size, set)) list[k++] = c;
      }
      CPU_FREE(set);
      if (count < 1) break;
      *list_out = list;
      return count;
    }
    int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) break;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 ? (n > 1 << 20 ? 1 << 20 : (int)n) : 1;
}

/* $SK_NUM_THREADS: *out = its value, or 0 when unset or empty. Only plain
 * decimal digits in 1..SK_TEAM_MAX_CORES are accepted. */
static sk_status threads_from_env(int *out) {
  *out = 0;
  const char *s = getenv("SK_NUM_THREADS");
  if (!s || !*s) return SK_STATUS_OK;
  long v = 0;
  const char *q = s;
  for (; *q >= '0' && *q <= '9' && v <= SK_TEAM_MAX_CORES; q++) v = v * 10 + (*q - '0');
  if (*q != '\0' || v < 1 || v > SK_TEAM_MAX_CORES)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "sk_team_create: SK_NUM_THREADS=\"%.64s\": expected an integer in 1..%d",
                    s, SK_TEAM_MAX_CORES);
  *out = (int)v;
  return SK_STATUS_OK;
}

/* $SK_PIN_THREADS, read when the config leaves pin_threads at 0: "auto" (or
 * unset or empty) 0, "always" 1, "never" -1. Anything else is a warning and
 * auto, not a failure: pinning is placement, never correctness, and a typo
 * in a host process's environment (PyTorch's, say) must not stop it from
 * getting its team. */
static int pin_from_env(void) {
  const char *s = getenv("SK_PIN_THREADS");
  if (!s || !*s) return 0;
  static const struct {
    const char *name;
    int pin;
  } policies[] = {{"auto", 0}, {"always", 1}, {"never", -1}};
  for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
    if (strcmp(s, policies[i].name) == 0) return policies[i].pin;
  sk__log(SK_LOG_WARN,
          "sk_team_create: SK_PIN_THREADS=\"%.64s\" ignored: expected auto, always or never; "
          "pinning as auto",
          s);
  return 0;
}

/* What a config asks for; cpus is NULL or the caller's list (not owned). */
typedef struct team_request {
  int num_cores, pin, num_cpus;
  const int *cpus;
} team_request;

#define SK__TEAM_MAX_CPU (1 << 20)

static sk_status read_cpus(const sk_team_config *cfg, team_request *req) {
  req->cpus = cfg->cpus;
  req->num_cpus = cfg->num_cpus;
  if (!req->cpus && req->num_cpus == 0) return SK_STATUS_OK;
  if (!req->cpus)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_create: cfg->cpus is NULL but cfg->num_cpus = %d",
                    req->num_cpus);
  if (req->num_cpus < 1 || req->num_cpus > SK__TEAM_MAX_CPU)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_create: cfg->num_cpus = %d: expected 1..%d with cfg->cpus",
                    req->num_cpus, SK__TEAM_MAX_CPU);
  for (int i = 0; i < req->num_cpus; i++) {
    if (req->cpus[i] < 0 || req->cpus[i] >= SK__TEAM_MAX_CPU)
      return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_create: cfg->cpus[%d] = %d: expected a CPU number in 0..%d",
                      i, req->cpus[i], SK__TEAM_MAX_CPU - 1);
    for (int j = 0; j < i; j++)
      if (req->cpus[j] == req->cpus[i])
        return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_create: cfg->cpus[%d] and cfg->cpus[%d] are both CPU %d",
                        j, i, req->cpus[i]);
  }
  return SK_STATUS_OK;
}

static sk_status read_config(const sk_team_config *cfg, team_request *req) {
  *req = (team_request){0};
  if (!cfg) return SK_STATUS_OK;
  size_t size;
  SK_RETURN_IF_ERROR(sk__struct_size("sk_team_create", "cfg->struct_size", "sk_team_config", cfg->struct_size,
                                     offsetof(sk_team_config, num_cores) + sizeof(int), sizeof(sk_team_config), &size));
  if (SK__HAS_FIELD(size, sk_team_config, num_cores)) req->num_cores = cfg->num_cores;
  if (SK__HAS_FIELD(size, sk_team_config, pin_threads)) req->pin = cfg->pin_threads;
  if (req->num_cores < 0 || req->num_cores > SK_TEAM_MAX_CORES)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "sk_team_create: cfg->num_cores = %d: expected 0 (all available "
                    "CPUs) or 1..%d",
                    req->num_cores, SK_TEAM_MAX_CORES);
  if (req->pin < -1 || req->pin > 1)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "sk_team_create: cfg->pin_threads = %d: expected 0 (auto), 1 (pin) or -1 (never)",
                    req->pin);
  if (SK__HAS_FIELD(size, sk_team_config, num_cpus)) SK_RETURN_IF_ERROR(read_cpus(cfg, req));
  return SK_STATUS_OK;
}

/* Sets worker c's affinity mask to the count CPUs of list; a failure is
 * only worth a warning (the team works, without the placement asked for). */
static void set_worker_cpus(sk_team *team, int c, const int *list, int count) {
  int top = 0;
  for (int k = 0; k < count; k++)
    if (list[k] > top) top = list[k];
  cpu_set_t *set = CPU_ALLOC(top + 1);
  if (!set) {
    sk__log(SK_LOG_WARN, "sk_team_create: cannot place worker %d: out of memory", c);
    return;
  }
  size_t size = CPU_ALLOC_SIZE(top + 1);
  CPU_ZERO_S(size, set);
  for (int k = 0; k < count; k++) CPU_SET_S(list[k], size, set);
  int err = pthread_setaffinity_np(team->workers[c - 1].thread, size, set);
  CPU_FREE(set);
  if (err) {
    char buf[128];
    if (count == 1)
      sk__log(SK_LOG_WARN, "sk_team_create: cannot pin worker %d to CPU %d: %s", c, list[0],
              strerror_r(err, buf, sizeof buf));
    else
      sk__log(SK_LOG_WARN, "sk_team_create: cannot place worker %d on the %d CPUs given: %s", c, count,
              strerror_r(err, buf, sizeof buf));
  }
}

/* Pins worker c to cpus[c] (given: the caller's list, whose cpus[0] is the
 * caller's), or to the c-th CPU of the affinity mask after the caller's.
 * Never pinned with a given list: every worker may run on all of it. */
static void place_workers(sk_team *team, const int *cpus, int ncpus, int pin, bool given) {
  int n = team->num_cores;
  if (given && pin < 0) {
    for (int c = 1; c < n; c++) set_worker_cpus(team, c, cpus, ncpus);
    return;
  }
  if (pin < 0) return;
  if (!cpus || n > ncpus) {
    sk__log(pin == 1 ? SK_LOG_WARN : SK_LOG_DEBUG,
            "sk_team_create: not pinning threads: team of %d cores, %d CPUs available%s",
            n, ncpus, cpus ? "" : " (affinity mask unreadable)");
    return;
  }
  /* Core 0 is the caller, which is never pinned: the workers take the CPUs
   * after the one the caller runs on now, so the two do not start out
   * sharing a CPU. */
  int first = 0;
  if (!given) {
    int here = sched_getcpu();
    for (int k = 0; k < ncpus; k++)
      if (cpus[k] == here) first = k;
  }
  for (int c = 1; c < n; c++) set_worker_cpus(team, c, &cpus[(first + c) % ncpus], 1);
}

/* Frees a team whose workers are gone (or were never started). */
static void free_team(sk_team *team) {
  pthread_mutex_destroy(&team->launch_lock);
  free(team->workers);
  sk__aligned_free(team);
}

sk_status sk_team_create(const sk_team_config *cfg, sk_team **team_out) {
  sk__clear_error();
  if (!team_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_create: team_out is NULL");
  *team_out = NULL;

  team_request req;
  SK_RETURN_IF_ERROR(read_config(cfg, &req));
  int num_cores = req.num_cores, pin = req.pin;
  if (num_cores == 0) SK_RETURN_IF_ERROR(threads_from_env(&num_cores));
  if (pin == 0) pin = pin_from_env();

  /* The CPUs: the caller's list (copied), or the calling thread's mask. */
  int *cpus = NULL;
  int ncpus = req.num_cpus;
  if (req.cpus) {
    if (num_cores > ncpus) /* the config's count, or else $SK_NUM_THREADS */
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "sk_team_create: %s%d but cfg->num_cpus = %d: give a CPU for every core",
                      req.num_cores ? "cfg->num_cores = " : "SK_NUM_THREADS=", num_cores, ncpus);
    cpus = malloc((size_t)ncpus * sizeof *cpus);
    if (!cpus) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "sk_team_create: cannot copy %d CPU numbers", ncpus);
    memcpy(cpus, req.cpus, (size_t)ncpus * sizeof *cpus);
  } else {
    ncpus = affinity_cpus(&cpus);
  }
  if (num_cores == 0) num_cores = ncpus < SK_TEAM_MAX_CORES ? ncpus : SK_TEAM_MAX_CORES;

  sk_team *team = sk__aligned_calloc(sizeof *team);
  sk__worker *workers =
      num_cores > 1 ? calloc((size_t)num_cores - 1, sizeof *workers) : NULL;
  if (!team || (num_cores > 1 && !workers)) {
    free(cpus);
    free(workers);
    sk__aligned_free(team);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY,
                    "sk_team_create: cannot allocate a team of %d cores", num_cores);
  }
  int err = pthread_mutex_init(&team->launch_lock, NULL);
  if (err) {
    char buf[128];
    free(cpus);
    free(workers);
    sk__aligned_free(team);
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "sk_team_create: pthread_mutex_init: %s",
                    strerror_r(err, buf, sizeof buf));
  }
  team->num_cores = num_cores;
  team->workers = workers;
  atomic_init(&team->stop, 0);
  atomic_init(&team->epoch.value, 0);
  atomic_init(&team->epoch.sleepers, 0);
  atomic_init(&team->remaining.value, 0);
  atomic_init(&team->remaining.sleepers, 0);
  (void)sk__barrier_init(&team->barrier, num_cores); /* 1..1024: cannot fail */
  sk__watchdog_init(&team->slow_launch, sk__watchdog_resolve_ms(0));
  (void)pthread_once(&g_atfork_once, register_atfork);
  team->fork_generation = sk__fork_generation();
  team->pid = getpid();

  int fail_at = atomic_exchange(&g_fail_worker, 0);
  for (int c = 1; c < num_cores; c++) {
    sk__worker *w = &workers[c - 1];
    w->team = team;
    w->core = c;
    err = c == fail_at ? EAGAIN : pthread_create(&w->thread, NULL, worker_main, w);
    if (err) {
      char buf[128];
      stop_workers(team, c - 1);
      free_team(team);
      free(cpus);
      return sk__fail(SK_STATUS_SYSTEM_ERROR,
                      "sk_team_create: cannot create worker thread %d of %d: "
                      "pthread_create: %s",
                      c, num_cores - 1, strerror_r(err, buf, sizeof buf));
    }
  }
  /* Pinned by default: an unpinned worker woken by a caller that then spins
   * is often placed on the caller's CPU and waits out the spin (measured
   * here: 200 us per launch after idle instead of 50 us, 11 us back to back
   * instead of 0.15 us). Never pinned on request (-1, SK_PIN_THREADS=never),
   * for a process whose other runtime keeps its own threads on the CPUs. */
  place_workers(team, cpus, ncpus, pin, req.cpus != NULL);
  free(cpus);
  sk__wait_account(num_cores - 1, ncpus);
  *team_out = team;
  return SK_STATUS_OK;
}

void sk_team_destroy(sk_team *team) {
  if (!team) return;
  if (tl_team == team) {
    /* A worker or the launcher itself, inside a launch of this team: joining
     * would wait for this very thread. Leaking is the lesser evil. */
    sk__log(SK_LOG_ERROR,
            "sk_team_destroy: called from inside a block of the same team; "
            "the team is left alive");
    return;
  }
  if (from_another_process(team)) {
    /* Made before a fork(), destroyed in the child: its workers exist only
     * in the parent, so there is nobody to stop or join, and its launch
     * lock may have been copied held (a launch of another parent thread),
     * so it is neither locked nor destroyed. The memory is the child's own
     * copy: freed. The thread accounting was reset at the fork. */
    free(team->workers);
    sk__aligned_free(team);
    return;
  }
  /* Let a launch in progress on another thread finish first (destroying a
   * team that is in use is still the caller's bug, see team.h). */
  pthread_mutex_lock(&team->launch_lock);
  stop_workers(team, team->num_cores - 1);
  pthread_mutex_unlock(&team->launch_lock);
  sk__wait_account(-(team->num_cores - 1), 0);
  free_team(team);
}

/* ------------------------------------------------------------------------ */
/* Launch                                                                    */
/* ------------------------------------------------------------------------ */

static sk_status launch(sk_team *team, sk_block_fn fn, void *arg, int64_t n_blocks, bool claimed) {
  sk__clear_error();
  if (!team) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_launch: team is NULL");
  if (!fn) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_team_launch: fn is NULL");
  if (n_blocks < 0)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "sk_team_launch: n_blocks = %lld: expected >= 0",
                    (long long)n_blocks);
  if (tl_core >= 0)
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "sk_team_launch: nested launch from inside a block (core %d of a "
                    "running launch); launches cannot be nested",
                    tl_core);
  SK_RETURN_IF_ERROR(sk__team_check_process(team, "sk_team_launch"));
  if (n_blocks == 0) return SK_STATUS_OK;

  pthread_mutex_lock(&team->launch_lock);
  int n = team->num_cores;
  const sk_team *outer_team = tl_team; /* NULL: not a worker of any team */
  tl_core = 0;
  tl_team = team;
  team->claimed = claimed;
  atomic_store_explicit(&team->next, 0, memory_order_relaxed);
  if (n == 1 || n_blocks == 1) {
    /* Everything runs on core 0: no need to wake the workers. */
    run_blocks(team, 0, fn, arg, n_blocks);
  } else {
    team->fn = fn;
    team->arg = arg;
    team->n_blocks = n_blocks;
    atomic_store_explicit(&team->remaining.value, (uint32_t)(n - 1), memory_order_relaxed);
    sk__wait_fetch_add(&team->epoch, 1); /* publishes the lines above */
    sk__wait_wake(&team->epoch);
    run_blocks(team, 0, fn, arg, n_blocks);
    if (sk__wait_until_equal_watched(&team->remaining, 0, &team->slow_launch) == SK_WAIT_TIMED_OUT) {
      sk__log(SK_LOG_WARN, "team: a launch has waited %lld ms for %u of its cores to finish their blocks; a block "
              "may be stuck in a loop of its own; still waiting", (long long)(team->slow_launch.timeout_ns / 1000000),
              atomic_load(&team->remaining.value));
      sk__wait_until_equal(&team->remaining, 0);
    }
  }
  tl_core = -1;
  tl_team = outer_team;
  pthread_mutex_unlock(&team->launch_lock);
  return SK_STATUS_OK;
}

sk_status sk_team_launch(sk_team *team, sk_block_fn fn, void *arg, int64_t n_blocks) {
  return launch(team, fn, arg, n_blocks, false);
}

sk_status sk__team_launch_claimed(sk_team *team, sk_block_fn fn, void *arg, int64_t n_blocks) {
  return launch(team, fn, arg, n_blocks, true);
}

sk_status sk__refuse_in_block(const char *fn) {
  int core = sk__team_current_core();
  if (core < 0) return SK_STATUS_OK;
  return sk__fail(SK_STATUS_INVALID_STATE,
                  "%s: called from inside a block (core %d of a running launch); programs cannot be run, bound or "
                  "profiled from there",
                  fn, core);
}

/* The JIT executor: JIT == interpreted == eager bitwise over the option
 * grid and team sizes (and the JIT really used, not fallen back); the
 * generated source (waits, barriers, profiling points, alignment, code
 * copies, determinism); the cache (hits, reuse of identical scopes, two
 * processes compiling at once, a truncated entry, an unsafe directory);
 * fallback with a broken compile, a missing compiler, a failing one; and
 * SHA-256 test vectors.
 *
 * $SK_CACHE_DIR is set by tests/jit.cmake to a directory under the build
 * tree; cases that need an empty cache use fresh subdirectories of it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "executors/jit/jit.h"
#include "executors/jit/sha256.h"
#include "jit_test_util.h"
#include "ops/op.h"
#include "runtime/profile.h"
#include "reference_runner.h"
#include "test_extra_ops.h"
#include "runtime/barrier.h"
#include "program/plan.h"

static sk_team *teams[4]; /* 1, 2, 3, 4 cores */
static char base_dir[PATH_MAX];

/* ---- compiling and comparing ---- */

static sk_program *compile(sk_graph *g, sk_team *team, sk_executor executor, const char *options) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executor, .default_options = options};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

static const sk__plan *first_plan(const sk_program *p) {
  for (size_t s = 0; p && s < p->n_steps; s++)
    if (p->steps[s].plan) return p->steps[s].plan;
  return NULL;
}

/* Runs p three times (flags carry over launches) and compares with eager.
 * Returns the number of differing outputs. */
static int run_vs(sk_program *p, sk_program *eager, sk_team *team, uint64_t seed, const char *what) {
  rr_buffers a, b;
  if (!p || !eager || !rr_alloc(p, &a, -1, 1, seed)) return 1;
  if (!rr_alloc(eager, &b, -1, 1, seed)) {
    rr_free(&a);
    return 1;
  }
  int bad = 0;
  for (int rep = 0; rep < 3; rep++) {
    CHECK_OK(sk_program_run(p, team, a.inputs, a.n_inputs, a.outputs, a.n_outputs));
    CHECK_OK(sk_program_run(eager, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs));
    for (size_t o = 0; o < a.n_outputs; o++)
      if (memcmp(a.outputs[o].data, b.outputs[o].data, a.outputs[o].bytes) != 0) {
        bad++;
        fprintf(stderr, "output %s differs from eager (%s, %d cores)\n", a.outputs[o].name, what,
                team ? sk_team_num_cores(team) : 1);
      }
  }
  rr_free(&a);
  rr_free(&b);
  return bad;
}

/* ---- SHA-256 ---- */

static bool sha_is(const void *data, size_t n, const char *want) {
  sk__sha256 h;
  unsigned char d[32];
  char hex[65];
  sk__sha256_init(&h);
  sk__sha256_update(&h, data, n);
  sk__sha256_final(&h, d);
  sk__sha256_hex(d, hex);
  if (strcmp(hex, want) != 0) fprintf(stderr, "sha256: got %s want %s\n", hex, want);
  return strcmp(hex, want) == 0;
}

static void test_sha256(void) {
  CHECK(sha_is("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  CHECK(sha_is("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK(sha_is(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
  /* A million 'a', fed in uneven pieces: the buffering across updates. */
  sk__sha256 h;
  unsigned char d[32];
  char hex[65], chunk[997];
  memset(chunk, 'a', sizeof chunk);
  sk__sha256_init(&h);
  for (size_t left = 1000000; left;) {
    size_t n = left < sizeof chunk ? left : sizeof chunk;
    sk__sha256_update(&h, chunk, n);
    left -= n;
  }
  sk__sha256_final(&h, d);
  sk__sha256_hex(d, hex);
  CHECK_MSG(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "%s", hex);
}

/* ---- JIT == interpreted == eager ---- */

static void test_option_grid(void) {
  static const char *early[] = {"early-start=0", "early-start=1", "early-start=2"};
  static const char *preload[] = {"preload-code=per-func", "preload-code=max", "preload-code=none"};
  sk_graph *g = mixed_model();
  log_reset();
  sk__jit_counters before, after;
  sk__jit_stats(&before);
  size_t plans = 0;
  for (int t = 0; t < 3; t++) {
    sk_program *eager = compile(g, teams[t], SK_EXECUTOR_EAGER, NULL);
    for (int e = 0; e < 3; e++)
      for (int pl = 0; pl < 3; pl++)
        for (int sync = 0; sync < 2; sync++)
          for (int split = 0; split < 2; split++) {
            char options[256];
            snprintf(options, sizeof options, "%s:%s:debug-sync-all=%d:split-mode=%d", early[e], preload[pl], sync,
                     split ? 4 : 1);
            sk_program *jit = compile(g, teams[t], SK_EXECUTOR_JIT, options);
            sk_program *interp = compile(g, teams[t], SK_EXECUTOR_INTERP, options);
            size_t jitted;
            plans += count_plans(jit, &jitted);
            CHECK_MSG(all_jitted(jit), "%s, %d cores: not JIT-compiled", options, t + 1);
            CHECK_MSG(run_vs(jit, eager, teams[t], (uint64_t)(e * 7 + pl), options) == 0, "jit %s", options);
            CHECK_MSG(run_vs(interp, eager, teams[t], (uint64_t)(e * 7 + pl), options) == 0, "interp %s", options);
            sk_program_destroy(jit);
            sk_program_destroy(interp);
          }
    /* Options that add tasks (flushes), change core sets, profile, or
     * change only the generated code (alignment, warnings as errors:
     * the generated file must be warning-clean). */
    static const char *more[] = {
        "debug-dcci-all=1", "dcci-before-kernel-start=grouped_.*:dcci-after-kernel-end=square", "debug-aic-num=1",
        "early-start=0:debug-aiv-num=1", "profiling=1", "profiling=1:early-start=0", "func-align=0", "func-align=64",
        "compile-options=-Wall,-Wextra,-Wshadow,-Wstrict-prototypes,-Wmissing-prototypes,-Werror"};
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
      sk_program *jit = compile(g, teams[t], SK_EXECUTOR_AUTO, more[k]);
      CHECK_MSG(all_jitted(jit), "%s, %d cores: not JIT-compiled", more[k], t + 1);
      CHECK_MSG(run_vs(jit, eager, teams[t], 5, more[k]) == 0, "jit %s", more[k]);
      sk_program_destroy(jit);
    }
    sk_program_destroy(eager);
  }
  sk__jit_stats(&after);
  CHECK_MSG(!log_has("falling back"), "%s", log_text);
  CHECK(after.compiles + after.hits + after.reuses - before.compiles - before.hits - before.reuses >= plans);
  printf("  grid: %zu super kernels: %llu compiled, %llu cache hits, %llu reused\n", plans,
         (unsigned long long)(after.compiles - before.compiles), (unsigned long long)(after.hits - before.hits),
         (unsigned long long)(after.reuses - before.reuses));
  sk_graph_destroy(g);
}

/* profiling=1: the generated code records what the interpreter records,
 * kind by kind and core by core, into the program's profile. */
static void count_records(const sk_program *p, size_t counts[][3], int n_cores) {
  for (int c = 0; c < n_cores; c++) {
    counts[c][0] = counts[c][1] = counts[c][2] = 0;
    for (size_t r = 0; p && p->profile && r < p->profile->cores[c].count; r++)
      if (p->profile->cores[c].records[r].kind <= SK_PROF_BARRIER) counts[c][p->profile->cores[c].records[r].kind]++;
  }
}

static void test_profiling(void) {
  sk_graph *g = mixed_model();
  static const char *opts[] = {"profiling=1", "profiling=1:early-start=0", "profiling=1:debug-sync-all=1"};
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
    sk_program *jit = compile(g, teams[2], SK_EXECUTOR_JIT, opts[k]);
    sk_program *interp = compile(g, teams[2], SK_EXECUTOR_INTERP, opts[k]);
    CHECK(all_jitted(jit));
    rr_buffers a, b;
    CHECK(rr_alloc(jit, &a, -1, 1, 1) && rr_alloc(interp, &b, -1, 1, 1));
    CHECK_OK(sk_program_run(jit, teams[2], a.inputs, a.n_inputs, a.outputs, a.n_outputs));
    CHECK_OK(sk_program_run(interp, teams[2], b.inputs, b.n_inputs, b.outputs, b.n_outputs));
    size_t cj[3][3], ci[3][3];
    count_records(jit, cj, 3);
    count_records(interp, ci, 3);
    CHECK_MSG(jit && jit->profile && cj[0][0] > 0, "%s: the JIT recorded nothing", opts[k]);
    for (int c = 0; c < 3; c++)
      CHECK_MSG(memcmp(cj[c], ci[c], sizeof cj[c]) == 0, "%s core %d: jit run/wait/barrier %zu/%zu/%zu, interp %zu/%zu/%zu",
                opts[k], c, cj[c][0], cj[c][1], cj[c][2], ci[c][0], ci[c][1], ci[c][2]);
    rr_free(&a);
    rr_free(&b);
    sk_program_destroy(jit);
    sk_program_destroy(interp);
  }
  sk_graph_destroy(g);
}

/* ---- a team-barrier op (feed-sync-all: COMPLEMENT tasks): test_extra_ops.h ---- */

static void test_feed_sync_all(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){2, 64});
  CHECK_OK(sk_graph_begin_scope(g, "reduce", "feed-sync-all=1"));
  sk_value y = unary(g, "square", "sq", x);
  sk_value z = unary(g, "test_allreduce", "allreduce", y);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  sk_program *jit = compile(g, teams[2], SK_EXECUTOR_JIT, NULL), *eager = compile(g, teams[2], SK_EXECUTOR_EAGER, NULL);
  const sk__plan *plan = first_plan(jit);
  size_t complements = 0;
  for (size_t t = 0; plan && t < plan->n_tasks; t++) complements += plan->tasks[t].kind == SK_TASK_COMPLEMENT;
  CHECK_MSG(complements > 0, "2 blocks on 3 cores: the idle core complements");
  CHECK(all_jitted(jit));
  CHECK(run_vs(jit, eager, teams[2], 9, "feed-sync-all") == 0);
  char *src = NULL;
  CHECK_OK(sk_program_jit_source(jit, "reduce", &src));
  CHECK(src && strstr(src, "env->sub_barrier(env, "));
  sk_free(src);
  sk_program_destroy(jit);
  sk_program_destroy(eager);
  sk_graph_destroy(g);
}

/* ---- the generated source ---- */

static size_t count(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *s = text; (s = strstr(s, needle)); s += strlen(needle)) n++;
  return n;
}

/* The source of the first super kernel of g compiled (interpreted: the
 * source needs no compiler) with options. */
static char *source_of(sk_graph *g, sk_team *team, const char *options, const sk__plan **plan_out,
                       sk_program **p_out) {
  sk_program *p = compile(g, team, SK_EXECUTOR_INTERP, options);
  char *src = NULL;
  if (p) CHECK_OK(sk__jit_source(first_plan(p), p, &src));
  *plan_out = first_plan(p);
  *p_out = p;
  return src;
}

static void check_task_counts(const char *src, const sk__plan *plan, const char *options) {
  size_t waits = 0, barriers = 0, preloads = 0, signals = 0, runs = 0, flushes = 0;
  for (size_t t = 0; t < plan->n_tasks; t++) {
    const sk__task *task = &plan->tasks[t];
    waits += task->kind == SK_TASK_WAIT ? (size_t)task->count : 0;
    barriers += task->kind == SK_TASK_BARRIER;
    preloads += task->kind == SK_TASK_PRELOAD;
    flushes += task->kind == SK_TASK_FLUSH;
    runs += task->kind == SK_TASK_RUN;
    signals += task->kind == SK_TASK_RUN && task->flag >= 0;
  }
  CHECK_MSG(count(src, "sk_wait(env, ") == waits, "%s: %zu waits in the source, %zu in the plan", options,
            count(src, "sk_wait(env, "), waits);
  CHECK_MSG(count(src, "env->barrier(env, ") == barriers, "%s: barriers", options);
  CHECK_MSG(count(src, "env->preload(env, ") == preloads, "%s: preloads", options);
  CHECK_MSG(count(src, "env->flush(env, ") == flushes, "%s: flushes", options);
  CHECK_MSG(count(src, "sk_signal(env, ") == signals, "%s: signals", options);
  CHECK_MSG(count(src, "(env, ") >= runs, "%s: runs", options);
}

static void test_source(void) {
  sk_graph *g = mixed_model();
  const sk__plan *plan;
  sk_program *p;
  /* Waits / barriers / preloads exactly where the plan has them. */
  static const char *grid[] = {"early-start=1", "early-start=0", "early-start=2:preload-code=max",
                               "debug-sync-all=1", "debug-dcci-all=1:preload-code=none"};
  for (size_t k = 0; k < sizeof grid / sizeof grid[0]; k++) {
    char *src = source_of(g, teams[2], grid[k], &plan, &p);
    if (src && plan) check_task_counts(src, plan, grid[k]);
    if (k == 0) CHECK_MSG(plan && count(src, "sk_wait(env, ") > 0, "3 cores, early start: some waits");
    if (k == 1) CHECK_MSG(plan && count(src, "env->barrier(env, ") > 0, "early-start=0: barriers");
    free(src);
    sk_program_destroy(p);
  }
  /* Profiling points: none at all when off. */
  char *src = source_of(g, teams[2], NULL, &plan, &p);
  CHECK(src && !strstr(src, "rdtsc") && !strstr(src, "SK_TSC") && !strstr(src, "env->prof(env"));
  CHECK(src && count(src, "aligned(512)") > 1); /* func-align default: entry and wrappers */
  CHECK(src && strstr(src, "sk_jit_entry") && strstr(src, "const char sk_jit_key[] = \""));
  CHECK(src && strstr(src, "/* scope 'sk1': sub 0 = gmm1, sub 1 = gmm2, sub 2 = cast, sub 3 = square */"));
  /* Deterministic: again, and from a second compile of the same graph. */
  char *again = NULL;
  CHECK_OK(sk__jit_source(plan, p, &again));
  CHECK(src && again && strcmp(src, again) == 0);
  free(again);
  sk_program *p2;
  const sk__plan *plan2;
  again = source_of(g, teams[2], NULL, &plan2, &p2);
  CHECK(src && again && strcmp(src, again) == 0);
  /* The public call gives the same text. */
  char *pub = NULL;
  CHECK_OK(sk_program_jit_source(p2, "sk1", &pub));
  CHECK(src && pub && strcmp(src, pub) == 0);
  sk_free(pub);
  CHECK_FAILS(sk_program_jit_source(p2, "nope", &pub), SK_STATUS_NOT_FOUND, "'nope'");
  free(again);
  free(src);
  sk_program_destroy(p2);
  sk_program_destroy(p);

  src = source_of(g, teams[2], "profiling=1", &plan, &p);
  size_t timed = 0;
  for (size_t t = 0; plan && t < plan->n_tasks; t++) timed += plan->tasks[t].kind == SK_TASK_RUN ||
      plan->tasks[t].kind == SK_TASK_WAIT || plan->tasks[t].kind == SK_TASK_BARRIER ||
      plan->tasks[t].kind == SK_TASK_COMPLEMENT;
  CHECK_MSG(src && count(src, "env->prof(env, ") == timed, "%zu prof calls, %zu timed tasks", count(src, "env->prof(env, "), timed);
  CHECK(src && strstr(src, "__builtin_ia32_rdtsc()"));
  free(src);
  sk_program_destroy(p);

  src = source_of(g, teams[2], "func-align=0", &plan, &p);
  CHECK(src && !strstr(src, "aligned("));
  free(src);
  sk_program_destroy(p);
  src = source_of(g, teams[2], "func-align=64", &plan, &p);
  CHECK(src && strstr(src, "aligned(64)") && !strstr(src, "aligned(512)"));
  free(src);
  sk_program_destroy(p);

  /* Code copies: core c calls copy c % split-mode. */
  src = source_of(g, teams[3], "split-mode=4", &plan, &p);
  CHECK(src && strstr(src, "sub0_copy3(") && strstr(src, "sub0_copy0("));
  free(src);
  sk_program_destroy(p);
  src = source_of(g, teams[3], "split-mode=1", &plan, &p);
  CHECK(src && strstr(src, "sub0_copy0(") && !strstr(src, "_copy1("));
  free(src);
  sk_program_destroy(p);
  src = source_of(g, teams[3], "split-mode=4:early-start=2", &plan, &p);
  CHECK(src && strstr(src, "sub0_copy0(") && !strstr(src, "_copy1("));
  free(src);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* ---- the cache ---- */

/* Files in dir ending in suffix; the first one's path into first. */
static int count_files(const char *dir, const char *suffix, char *first, size_t n) {
  DIR *d = opendir(dir);
  int found = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    if (len > sl && strcmp(e->d_name + len - sl, suffix) == 0) {
      if (!found++ && first) snprintf(first, n, "%s/%s", dir, e->d_name);
    }
  }
  if (d) closedir(d);
  return found;
}

static void restore_cache_dir(void) { setenv("SK_CACHE_DIR", base_dir, 1); }

static void use_cache_dir(const char *sub, char *path, size_t n) {
  if (snprintf(path, n, "%s/%s", base_dir, sub) >= (int)n) abort();
  setenv("SK_CACHE_DIR", path, 1);
}

/* A warm cache serves every kernel: a model with three different scopes,
 * compiled, unloaded and compiled again, is all cache hits. Each hit is
 * loaded through a /proc/self/fd/N; with N closed after loading, the next
 * hit's descriptor got the same number, and the dynamic loader handed back
 * the object already loaded under that name: its key did not match, and a
 * valid entry was deleted and rebuilt on every start. */
static void test_warm_cache_serves_every_kernel(void) {
  char dir[PATH_MAX];
  use_cache_dir("warm", dir, sizeof dir);
  fresh_dir(dir);
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value y = input(g, "x", SK_FP32, 1, (int64_t[]){1031});
  static const char *const ops[] = {"add", "mul", "add"};
  for (int s = 0; s < 3; s++) { /* y + y^2, y * y^2, y^2 + y^2 * y: three different kernels */
    char name[16];
    snprintf(name, sizeof name, "s%d", s);
    CHECK_OK(sk_graph_begin_scope(g, name, NULL));
    sk_value sq = unary(g, "square", NULL, y);
    y = binary(g, ops[s], NULL, sq, s < 2 ? y : binary(g, "mul", NULL, sq, y));
    CHECK_OK(sk_graph_end_scope(g));
    if (s < 2) y = unary(g, "square", NULL, y); /* keeps the scopes apart */
  }
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk__jit_counters a, b, c;
  sk__jit_stats(&a);
  sk_program *p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  sk__jit_stats(&b);
  CHECK(all_jitted(p));
  CHECK_MSG(b.compiles == a.compiles + 3, "a cold cache compiles the 3 kernels: %llu",
            (unsigned long long)(b.compiles - a.compiles));
  /* Every file of the cache is the owner's alone (SECURITY.md), objects too. */
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[PATH_MAX + 300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
      CHECK_MSG((st.st_mode & 0777) == 0600, "%s has mode %o, not 0600", e->d_name, (unsigned)(st.st_mode & 0777));
  }
  if (d) closedir(d);
  sk_program_destroy(p); /* unloads all three */
  p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  sk__jit_stats(&c);
  CHECK(all_jitted(p));
  CHECK_MSG(c.hits == b.hits + 3 && c.compiles == b.compiles, "warm: %llu hits, %llu compiles (want 3, 0)",
            (unsigned long long)(c.hits - b.hits), (unsigned long long)(c.compiles - b.compiles));
  sk_program *eager = compile(g, teams[1], SK_EXECUTOR_EAGER, NULL);
  CHECK(run_vs(p, eager, teams[1], 5, "warm cache") == 0);
  sk_program_destroy(p);
  sk_program_destroy(eager);
  sk_graph_destroy(g);
  restore_cache_dir();
}

static void test_cache_hit_and_reuse(void) {
  char dir[PATH_MAX];
  use_cache_dir("hits", dir, sizeof dir);
  fresh_dir(dir);
  sk_graph *g = chain_model();
  sk__jit_counters a, b, c;
  sk__jit_stats(&a);
  sk_program *p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  sk__jit_stats(&b);
  CHECK(all_jitted(p));
  CHECK_MSG(b.compiles == a.compiles + 1 && b.hits == a.hits, "a cold cache compiles");
  CHECK(count_files(dir, ".so", NULL, 0) == 1 && count_files(dir, ".c", NULL, 0) == 1);
  sk_program_destroy(p); /* the last user: the object is unloaded */
  log_reset();
  p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  sk__jit_stats(&c);
  CHECK_MSG(c.hits == b.hits + 1 && c.compiles == b.compiles, "the second compile is a cache hit");
  CHECK_MSG(log_has("jit: scope 'chain': cache hit (key "), "%s", log_text);
  sk_program *eager = compile(g, teams[1], SK_EXECUTOR_EAGER, NULL);
  CHECK(run_vs(p, eager, teams[1], 3, "cache hit") == 0);
  sk_program_destroy(p);
  sk_program_destroy(eager);
  sk_graph_destroy(g);

  /* Two identical scopes in one model: compiled once, the other reuses it. */
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){4099});
  CHECK_OK(sk_graph_begin_scope(g, "first", NULL));
  sk_value y = binary(g, "add", "add1", unary(g, "square", "sq1", x), x);
  CHECK_OK(sk_graph_end_scope(g));
  y = unary(g, "square", "between", y);
  CHECK_OK(sk_graph_begin_scope(g, "second", NULL));
  y = binary(g, "add", "add2", unary(g, "square", "sq2", y), y);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  log_reset();
  sk__jit_stats(&a);
  p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  sk__jit_stats(&b);
  CHECK(all_jitted(p));
  CHECK_MSG(b.compiles == a.compiles + 1 && b.reuses == a.reuses + 1, "compiles %llu, reuses %llu",
            (unsigned long long)(b.compiles - a.compiles), (unsigned long long)(b.reuses - a.reuses));
  CHECK_MSG(log_has("jit: scope 'second': reusing the kernel compiled for scope 'first'"), "%s", log_text);
  CHECK(p && sk__jit_entry_of(&p->steps[0]) && sk__jit_entry_of(&p->steps[0]) == sk__jit_entry_of(&p->steps[p->n_steps - 1]));
  eager = compile(g, teams[1], SK_EXECUTOR_EAGER, NULL);
  CHECK(run_vs(p, eager, teams[1], 4, "reused") == 0);
  sk_program_destroy(p);
  sk_program_destroy(eager);
  sk_graph_destroy(g);

  /* The public cache calls. */
  char path[PATH_MAX];
  CHECK_OK(sk_jit_cache_path(path, sizeof path));
  CHECK(strcmp(path, dir) == 0);
  size_t removed = 0;
  CHECK_OK(sk_jit_cache_clear(&removed));
  CHECK_MSG(removed == 6, "removed %zu (2 objects + 2 sources + 2 checksums)", removed);
  CHECK(count_files(dir, ".so", NULL, 0) == 0);
  restore_cache_dir();
}

/* Two processes compile the same kernel into an empty cache at once. */
static void test_cache_two_processes(void) {
  char dir[PATH_MAX];
  use_cache_dir("race", dir, sizeof dir);
  fresh_dir(dir);
  sk_graph *g = chain_model();
  int gate[2];
  CHECK(pipe(gate) == 0);
  pid_t pids[2];
  for (int i = 0; i < 2; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      /* The child: a one-core program (no new threads after fork). */
      char c;
      close(gate[1]);
      if (read(gate[0], &c, 1) != 0) _exit(3); /* both start when the parent closes the pipe */
      sk_program *p = compile(g, NULL, SK_EXECUTOR_JIT, NULL);
      if (!all_jitted(p)) _exit(4);
      rr_buffers b;
      if (!rr_alloc(p, &b, -1, 1, 7)) _exit(5);
      if (sk_program_run(p, NULL, b.inputs, b.n_inputs, b.outputs, b.n_outputs) != SK_STATUS_OK) _exit(6);
      char out[PATH_MAX + 16];
      snprintf(out, sizeof out, "%s/out%d.bin", dir, i);
      FILE *f = fopen(out, "wb");
      if (!f || fwrite(b.outputs[0].data, 1, b.outputs[0].bytes, f) != b.outputs[0].bytes || fclose(f) != 0) _exit(7);
      _exit(harness_failures ? 8 : 0);
    }
  }
  close(gate[0]);
  close(gate[1]);
  for (int i = 0; i < 2; i++) {
    int status = -1;
    CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", i, status);
  }
  char a[PATH_MAX + 16], b[PATH_MAX + 16];
  snprintf(a, sizeof a, "%s/out0.bin", dir);
  snprintf(b, sizeof b, "%s/out1.bin", dir);
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  char da[65536], db[65536];
  size_t na = fa ? fread(da, 1, sizeof da, fa) : 0, nb = fb ? fread(db, 1, sizeof db, fb) : 1;
  CHECK(na > 0 && na == nb && memcmp(da, db, na) == 0);
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  CHECK_MSG(count_files(dir, ".so", NULL, 0) == 1, "one object, no temporaries left");
  CHECK(count_files(dir, ".log", NULL, 0) == 0);
  sk_graph_destroy(g);
  restore_cache_dir();
}

/* A FIFO where an entry's object or checksum should be: opening it for
 * reading would wait for a writer forever. The entry is unusable, rebuilt,
 * and the JIT used (issue 15, item 6). */
static void test_cache_special_files(void) {
  char dir[PATH_MAX], so[PATH_MAX + 300], sum[PATH_MAX + 310];
  use_cache_dir("fifo", dir, sizeof dir);
  fresh_dir(dir);
  sk_graph *g = chain_model();
  for (int which = 0; which < 2; which++) {
    sk_program *p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
    CHECK(all_jitted(p));
    sk_program_destroy(p); /* unloaded: the next compile reads the entry */
    CHECK(count_files(dir, ".so", so, sizeof so) == 1);
    snprintf(sum, sizeof sum, "%.*s.sha256", (int)(strlen(so) - 3), so);
    const char *victim = which ? so : sum;
    CHECK(unlink(victim) == 0 && mkfifo(victim, 0600) == 0);
    log_reset();
    sk__jit_counters a, b;
    sk__jit_stats(&a);
    p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
    sk__jit_stats(&b);
    CHECK(all_jitted(p));
    CHECK_MSG(b.compiles == a.compiles + 1 && log_has("is unusable"), "%s as a FIFO: %s", which ? "object" : "checksum",
              log_text);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
  restore_cache_dir();
}

static void test_cache_corrupt_entry(void) {
  char dir[PATH_MAX], so[PATH_MAX + 300];
  use_cache_dir("corrupt", dir, sizeof dir);
  fresh_dir(dir);
  sk_graph *g = chain_model();
  sk_program *p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  CHECK(all_jitted(p));
  sk_program_destroy(p);
  CHECK(count_files(dir, ".so", so, sizeof so) == 1);
  CHECK(truncate(so, 100) == 0);
  log_reset();
  sk__jit_counters a, b;
  sk__jit_stats(&a);
  p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  sk__jit_stats(&b);
  CHECK(all_jitted(p));
  CHECK_MSG(b.compiles == a.compiles + 1, "the truncated entry is rebuilt");
  CHECK_MSG(log_has("is unusable") && log_has("rebuilding"), "%s", log_text);
  CHECK(!log_has("falling back"));
  sk_program *eager = compile(g, teams[1], SK_EXECUTOR_EAGER, NULL);
  CHECK(run_vs(p, eager, teams[1], 2, "rebuilt") == 0);
  sk_program_destroy(p);
  /* An object whose key does not match its file name: another kernel's
   * object put in its place. */
  p = compile(g, teams[1], SK_EXECUTOR_JIT, "func-align=16");
  CHECK(all_jitted(p));
  sk_program_destroy(p);
  char other[PATH_MAX + 300], tmp[PATH_MAX + 320];
  other[0] = '\0';
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (strstr(e->d_name, ".so") && strcmp(path, so) != 0) snprintf(other, sizeof other, "%s", path);
  }
  if (d) closedir(d);
  /* Only the object replaced: its checksum (recorded at store time) no
   * longer matches, caught before dlopen. */
  snprintf(tmp, sizeof tmp, "%s/swap.tmp", dir);
  CHECK(other[0] && link(so, tmp) == 0 && rename(tmp, other) == 0);
  log_reset();
  sk__jit_stats(&a);
  p = compile(g, teams[1], SK_EXECUTOR_JIT, "func-align=16");
  sk__jit_stats(&b);
  CHECK(all_jitted(p));
  CHECK_MSG(b.compiles == a.compiles + 1 && b.hits == a.hits, "the replaced entry is rebuilt");
  CHECK_MSG(log_has("is unusable (its SHA-256 ") && log_has("does not match its checksum file"), "%s", log_text);
  CHECK(run_vs(p, eager, teams[1], 8, "rebuilt after replacement") == 0);
  sk_program_destroy(p);
  /* Object and checksum both replaced: the checksum passes, the exported
   * key does not. */
  char so_sum[PATH_MAX + 300], other_sum[PATH_MAX + 300];
  snprintf(so_sum, sizeof so_sum, "%.*s.sha256", (int)(strlen(so) - 3), so);
  snprintf(other_sum, sizeof other_sum, "%.*s.sha256", (int)(strlen(other) - 3), other);
  CHECK(link(so, tmp) == 0 && rename(tmp, other) == 0);
  CHECK(link(so_sum, tmp) == 0 && rename(tmp, other_sum) == 0);
  log_reset();
  sk__jit_stats(&a);
  p = compile(g, teams[1], SK_EXECUTOR_JIT, "func-align=16");
  sk__jit_stats(&b);
  CHECK(all_jitted(p));
  CHECK_MSG(b.compiles == a.compiles + 1 && log_has("sk_jit_key does not match"), "%s", log_text);
  sk_program_destroy(p);
  /* A missing, then a malformed checksum file: rebuilt. */
  for (int k = 0; k < 2; k++) {
    if (k == 0) CHECK(unlink(other_sum) == 0);
    else {
      FILE *f = fopen(other_sum, "w");
      CHECK(f && fputs("not a checksum\n", f) >= 0 && fclose(f) == 0);
    }
    log_reset();
    sk__jit_stats(&a);
    p = compile(g, teams[1], SK_EXECUTOR_JIT, "func-align=16");
    sk__jit_stats(&b);
    CHECK(all_jitted(p));
    CHECK_MSG(b.compiles == a.compiles + 1 && log_has(k ? "is malformed" : "cannot be read"), "%s", log_text);
    CHECK(run_vs(p, eager, teams[1], 9, "rebuilt after a bad checksum") == 0);
    sk_program_destroy(p);
  }
  sk_program_destroy(eager);
  sk_graph_destroy(g);
  restore_cache_dir();
}

/* ---- fallback ---- */

/* Compiles g with the JIT; expects the interpreter fallback with one
 * warning holding every fragment, and results equal to eager. */
static void expect_fallback(sk_graph *g, const char *options, const char *const *fragments, size_t n) {
  log_reset();
  sk_program *p = compile(g, teams[1], SK_EXECUTOR_JIT, options);
  size_t jitted, plans = count_plans(p, &jitted);
  CHECK_MSG(plans > 0 && jitted == 0, "%s: expected the interpreter", options ? options : "");
  CHECK_MSG(count(log_text, "falling back to the interpreter") == plans, "%s", log_text);
  for (size_t i = 0; i < n; i++) CHECK_MSG(log_has(fragments[i]), "log lacks \"%s\": %s", fragments[i], log_text);
  CHECK(sk_last_error()[0] == '\0'); /* sk_compile succeeded */
  sk_program *eager = compile(g, teams[1], SK_EXECUTOR_EAGER, NULL);
  CHECK(run_vs(p, eager, teams[1], 6, "fallback") == 0);
  sk_program_destroy(p);
  sk_program_destroy(eager);
}

static void test_fallback(void) {
  char dir[PATH_MAX];
  use_cache_dir("fallback", dir, sizeof dir);
  fresh_dir(dir);
  sk_graph *g = chain_model();
  /* A compile error: the compiler's own message is in the warning. */
  expect_fallback(g, "compile-options=-fno-such-flag",
                  (const char *const[]){"scope 'chain'", "compiler 'cc' failed", "no-such-flag"}, 3);
  expect_fallback(g, "compile-options=-Dsk_signal=(", (const char *const[]){"error"}, 1);
  CHECK(count_files(dir, ".so", NULL, 0) == 0 && count_files(dir, ".c", NULL, 0) == 0); /* temporaries removed */
  /* A missing compiler; one that fails. */
  setenv("SK_CC", "/nonexistent/sk-cc", 1);
  expect_fallback(g, NULL, (const char *const[]){"'/nonexistent/sk-cc' not found"}, 1);
  setenv("SK_CC", "sk-no-such-compiler", 1);
  expect_fallback(g, NULL, (const char *const[]){"'sk-no-such-compiler' not found in $PATH"}, 1);
  setenv("SK_CC", "false", 1);
  expect_fallback(g, NULL, (const char *const[]){"compiler 'false' failed (exit status 1)"}, 1);
  unsetenv("SK_CC");
  /* Unsafe cache directories: writable by others; a symlink. */
  char unsafe[PATH_MAX], link_path[PATH_MAX + 8];
  use_cache_dir("unsafe", unsafe, sizeof unsafe);
  fresh_dir(unsafe);
  CHECK(chmod(unsafe, 0777) == 0);
  expect_fallback(g, NULL, (const char *const[]){unsafe, "writable by group or others"}, 2);
  CHECK(chmod(unsafe, 0700) == 0);
  snprintf(link_path, sizeof link_path, "%s.lnk", unsafe);
  unlink(link_path);
  CHECK(symlink(unsafe, link_path) == 0);
  setenv("SK_CACHE_DIR", link_path, 1);
  expect_fallback(g, NULL, (const char *const[]){"symbolic link"}, 1);
  unlink(link_path);
  /* Directories that are not a cache: someone's files are in them (entries
   * would land among them, and `sk cache clear` would sweep there). */
  char foreign[PATH_MAX], note[PATH_MAX + 16];
  use_cache_dir("foreign", foreign, sizeof foreign);
  fresh_dir(foreign);
  snprintf(note, sizeof note, "%s/notes.txt", foreign);
  FILE *nf = fopen(note, "w");
  CHECK(nf && fputs("mine\n", nf) >= 0 && fclose(nf) == 0);
  expect_fallback(g, NULL, (const char *const[]){"it holds 'notes.txt', which is not the cache's"}, 1);
  CHECK_MSG(count_files(foreign, ".so", NULL, 0) == 0 && access(note, F_OK) == 0, "the foreign directory was written");
  setenv("SK_CACHE_DIR", "/", 1);
  expect_fallback(g, NULL, (const char *const[]){"refusing cache directory /:"}, 1);
  /* An empty directory becomes a cache, tagged as one. */
  use_cache_dir("tagged", foreign, sizeof foreign);
  fresh_dir(foreign);
  sk_program *tp = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  CHECK(all_jitted(tp));
  sk_program_destroy(tp);
  snprintf(note, sizeof note, "%s/CACHEDIR.TAG", foreign);
  FILE *tf = fopen(note, "r");
  char line[64] = "";
  CHECK_MSG(tf && fgets(line, sizeof line, tf) && strncmp(line, "Signature: 8a477f597d28d172789f06886806bc55", 43) == 0,
            "%s: '%s'", note, line);
  if (tf) fclose(tf);
  /* SK_EXECUTOR_AUTO falls back the same way. */
  use_cache_dir("fallback", dir, sizeof dir);
  setenv("SK_CC", "false", 1);
  log_reset();
  sk_program *p = compile(g, teams[1], SK_EXECUTOR_AUTO, NULL);
  size_t jitted;
  CHECK(count_plans(p, &jitted) == 1 && jitted == 0 && log_has("falling back"));
  sk_program_destroy(p);
  unsetenv("SK_CC");
  sk_graph_destroy(g);
  restore_cache_dir();
}

/* ---- hardening ---- */

/* A compiler that answers --version and then hangs (in a child of the
 * shell, so only killing the process group ends it): the compile times out
 * after $SK_JIT_TIMEOUT seconds and falls back. */
static void test_compiler_timeout(void) {
  char dir[PATH_MAX], script[PATH_MAX + 16];
  use_cache_dir("timeout", dir, sizeof dir);
  fresh_dir(dir);
  snprintf(script, sizeof script, "%s/slow-cc", base_dir); /* beside the cache: not in it */
  FILE *f = fopen(script, "w");
  CHECK(f && fputs("#!/bin/sh\ncase \"$1\" in --version) echo slow-cc 1.0; exit 0;; esac\nsleep 1000\nexit 0\n", f) >= 0 &&
        fclose(f) == 0);
  CHECK(chmod(script, 0700) == 0);
  sk_graph *g = chain_model();
  setenv("SK_CC", script, 1);
  setenv("SK_JIT_TIMEOUT", "1", 1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  expect_fallback(g, NULL, (const char *const[]){"compiler '", "slow-cc' timed out after 1 s", "SK_JIT_TIMEOUT"}, 3);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK_MSG(s >= 0.9 && s < 8, "fell back after %.1f s", s);
  CHECK(count_files(dir, ".so", NULL, 0) == 0); /* temporaries removed */
  /* A value that is not a number of seconds: a fallback naming it. */
  setenv("SK_JIT_TIMEOUT", "soon", 1);
  expect_fallback(g, NULL, (const char *const[]){"$SK_JIT_TIMEOUT='soon' is not a number of seconds"}, 1);
  /* 0 = no limit: the real compiler works. */
  unsetenv("SK_CC");
  setenv("SK_JIT_TIMEOUT", "0", 1);
  sk_program *p = compile(g, teams[1], SK_EXECUTOR_JIT, NULL);
  CHECK(all_jitted(p));
  sk_program_destroy(p);
  unsetenv("SK_JIT_TIMEOUT");
  sk_graph_destroy(g);
  restore_cache_dir();
}

/* A cache directory we own but cannot write: storing fails, the kernel
 * stays interpreted with a warning. Root ignores the mode bits, so the
 * check is skipped when the directory is still writable after chmod. */
static void test_readonly_cache(void) {
  char dir[PATH_MAX];
  use_cache_dir("readonly", dir, sizeof dir);
  fresh_dir(dir);
  CHECK(chmod(dir, 0500) == 0);
  if (access(dir, W_OK) == 0) {
    harness_skip_part("%s is still writable after chmod 0500 (running as root?): read-only check left out", dir);
  } else {
    sk_graph *g = chain_model();
    expect_fallback(g, NULL, (const char *const[]){"cannot create a file in", dir}, 2);
    sk_graph_destroy(g);
  }
  CHECK(chmod(dir, 0700) == 0);
  restore_cache_dir();
}

/* compile-options that could redirect output or load code never reach the
 * compiler: sk_compile refuses them when it parses the options. */
static void test_denied_compile_options(void) {
  sk_graph *g = chain_model();
  static const char *bad[] = {"-o/tmp/x.so", "-MD", "-fplugin=/tmp/p.so", "-specs=/tmp/s", "-B/tmp", "-Wl", "-save-temps"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char options[128], flag[96];
    snprintf(options, sizeof options, "compile-options=-O2,%s", bad[i]);
    snprintf(flag, sizeof flag, "flag '%s' is not allowed", bad[i]);
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1], .executor = SK_EXECUTOR_JIT,
                             .default_options = options};
    sk_program *p = NULL;
    CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_ARGUMENT, "option compile-options", flag);
    CHECK(p == NULL);
  }
  sk_graph_destroy(g);
}

int main(void) {
  jit_test_start(base_dir, "jit_test_cache");
  rr_register_test_ops();
  /* The fork case runs before any team exists: the children then inherit
   * a process with one thread. */
  harness_case first[] = {TEST_CASE(test_sha256), TEST_CASE(test_cache_two_processes)};
  int rc = harness_run(first, 2);
  for (int t = 0; t < 4; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) return 1;
  }
  static const harness_case cases[] = {
      TEST_CASE(test_source),        TEST_CASE(test_option_grid),         TEST_CASE(test_profiling),   TEST_CASE(test_feed_sync_all),
      TEST_CASE(test_cache_hit_and_reuse), TEST_CASE(test_warm_cache_serves_every_kernel), TEST_CASE(test_cache_corrupt_entry), TEST_CASE(test_cache_special_files), TEST_CASE(test_fallback),
      TEST_CASE(test_compiler_timeout), TEST_CASE(test_readonly_cache), TEST_CASE(test_denied_compile_options),
  };
  rc |= harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 4; t++) sk_team_destroy(teams[t]);
  return rc;
}

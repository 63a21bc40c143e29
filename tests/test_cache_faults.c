/* JIT cache faults the library must survive: each one leaves the super
 * kernel interpreted, with a warning naming the cause, and results bitwise
 * equal to eager.
 *
 *   - a cache directory owned by another user (as root: chown'ed to
 *     65534; otherwise "/", owned by root);
 *   - a read-only cache (as root, which ignores mode bits: in a child that
 *     drops to uid/gid 65534 first; otherwise chmod 0500 on our own dir);
 *   - a full disk: in a child with RLIMIT_FSIZE lowered (SIGXFSZ ignored),
 *     once so low that writing the source fails, once so that the source
 *     fits but the compiler's output does not (the compiler inherits the
 *     limit); no temporaries may be left behind.
 *
 * Faults already shown by tests/test_jit.c (a symlinked or group/other-
 * writable cache dir, a replaced or truncated entry, a hanging or failing
 * compiler, denied compile-options) are not repeated here; SECURITY.md
 * lists which test shows what.
 *
 * The forked cases run before this process creates any team thread, so
 * each child starts from a process with one thread and may make its own
 * team. $SK_CACHE_DIR is set by tests/reliability.cmake under the build
 * tree; every case uses its own subdirectory of it. */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"
#include "fault_test_util.h"
#include "jit_test_util.h"
#include "reference_runner.h"

#define NOBODY 65534

static char base_dir[PATH_MAX];
static sk_team *team2; /* created after the forked cases */

/* ---- files ---- */

static void sub_dir(const char *base, const char *sub, char *path, size_t n) {
  if (snprintf(path, n, "%s/%s", base, sub) >= (int)n) abort();
}

/* Whether a user other than the owner can reach path (every directory on
 * the way searchable by others). */
static bool others_can_reach(const char *path) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return false;
  for (char *s = real;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      struct stat st;
      bool ok = stat(real[0] ? real : "/", &st) == 0 && (st.st_mode & S_IXOTH);
      *s = c;
      if (!ok) return false;
      if (!c) return true;
    }
  }
}

/* ---- a cache directory owned by another user ---- */

static void test_foreign_owner(void) {
  char dir[PATH_MAX], want[128];
  unsigned owner;
  bool made = false;
  if (geteuid() == 0) {
    sub_dir(base_dir, "foreign", dir, sizeof dir);
    fresh_dir(dir);
    if (chown(dir, NOBODY, NOBODY) != 0) {
      harness_skip_part("chown %s to %d failed (%s): foreign-owner check left out", dir, NOBODY, strerror(errno));
      remove_dir(dir);
      return;
    }
    owner = NOBODY;
    made = true;
  } else {
    /* Not root: "/" is someone else's directory (root's) we cannot write. */
    struct stat st;
    snprintf(dir, sizeof dir, "/");
    if (stat(dir, &st) != 0 || st.st_uid == geteuid()) {
      harness_skip_part("not root and / is ours: no foreign-owned directory, foreign-owner check left out");
      return;
    }
    owner = (unsigned)st.st_uid;
  }
  setenv("SK_CACHE_DIR", dir, 1);
  sk_graph *g = chain_model();
  snprintf(want, sizeof want, "owned by uid %u, not by uid %u", owner, (unsigned)geteuid());
  expect_fallback(g, team2, (const char *const[]){"refusing cache directory", dir, want}, 3);
  if (made) CHECK_MSG(count_entries(dir, NULL, "") == 0, "nothing written into the refused directory");
  sk_graph_destroy(g);
  setenv("SK_CACHE_DIR", base_dir, 1);
  if (made) remove_dir(dir);
}

/* ---- a read-only cache ---- */

typedef struct readonly_args {
  char ro[PATH_MAX];      /* owned by 65534, mode 0500 */
  char control[PATH_MAX]; /* owned by 65534, mode 0700 */
} readonly_args;

static void readonly_child(const void *arg) {
  const readonly_args *a = arg;
  CHECK_MSG(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0, "dropping to uid %d: %s", NOBODY,
            strerror(errno));
  if (harness_failures) return;
  CHECK(geteuid() == NOBODY && getegid() == NOBODY);
  CHECK_MSG(access(a->ro, W_OK) != 0 && errno == EACCES, "%s is writable by uid %d", a->ro, NOBODY);
  sk_team *team = child_team();
  sk_graph *g = chain_model();
  setenv("SK_CACHE_DIR", a->ro, 1);
  expect_fallback(g, team, (const char *const[]){"cannot create a file in", a->ro, strerror(EACCES)}, 3);
  /* The control: the same user with a writable cache gets the JIT, so the
   * fallback above came from the mode bits alone. */
  setenv("SK_CACHE_DIR", a->control, 1);
  expect_jit(g, team);
  CHECK(count_entries(a->control, NULL, ".so") == 1);
  sk_graph_destroy(g);
  sk_team_destroy(team);
}

static void test_readonly_cache(void) {
  if (geteuid() != 0) {
    /* Our own directory, chmod 0500: the mode bits bind us. */
    char dir[PATH_MAX];
    sub_dir(base_dir, "readonly", dir, sizeof dir);
    fresh_dir(dir);
    CHECK(chmod(dir, 0500) == 0);
    if (access(dir, W_OK) == 0) {
      harness_skip_part("%s is still writable after chmod 0500 (CAP_DAC_OVERRIDE?): read-only check left out", dir);
    } else {
      setenv("SK_CACHE_DIR", dir, 1);
      sk_graph *g = chain_model();
      expect_fallback(g, NULL, (const char *const[]){"cannot create a file in", dir, strerror(EACCES)}, 3);
      sk_graph_destroy(g);
      setenv("SK_CACHE_DIR", base_dir, 1);
    }
    remove_dir(dir);
    return;
  }
  /* Root ignores mode bits: the compile runs in a child that has dropped
   * to uid/gid 65534, in directories that user owns. They must be
   * reachable by that user: under our cache directory (made searchable,
   * not listable, for the while) when the way to it is, else in a fresh
   * directory under /tmp. */
  char parent[PATH_MAX];
  CHECK(chmod(base_dir, 0711) == 0);
  bool tmp = !others_can_reach(base_dir);
  if (tmp) {
    snprintf(parent, sizeof parent, "/tmp/sk-cache-faults-XXXXXX");
    CHECK(mkdtemp(parent) != NULL && chmod(parent, 0711) == 0);
  } else {
    snprintf(parent, sizeof parent, "%s", base_dir);
  }
  readonly_args a;
  sub_dir(parent, "readonly", a.ro, sizeof a.ro);
  sub_dir(parent, "readonly-control", a.control, sizeof a.control);
  fresh_dir(a.ro);
  fresh_dir(a.control);
  if (chown(a.ro, NOBODY, NOBODY) != 0 || chown(a.control, NOBODY, NOBODY) != 0) {
    harness_skip_part("chown to %d failed (%s): read-only check left out", NOBODY, strerror(errno));
  } else {
    CHECK(chmod(a.ro, 0500) == 0);
    int status = in_child(readonly_child, &a);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the uid-%d child failed: status %#x", NOBODY, status);
    CHECK_MSG(count_entries(a.ro, NULL, "") == 0, "nothing written into the read-only cache");
  }
  remove_dir(a.ro);
  remove_dir(a.control);
  if (tmp) rmdir(parent);
  CHECK(chmod(base_dir, 0700) == 0);
}

/* ---- a full disk ---- */

typedef struct full_args {
  char dir[PATH_MAX];
  bool source_fits; /* false: the limit is below the source's size */
} full_args;

static void full_child(const void *arg) {
  const full_args *a = arg;
  sk_team *team = child_team();
  sk_graph *g = chain_model();
  /* The limit from the size of the source the JIT will write. */
  size_t len = jit_source_length(g, team, "chain");
  CHECK_MSG(len > 2048, "the source is %zu bytes", len);
  /* Writes past the limit fail with EFBIG instead of killing the writer;
   * the compiler inherits both the limit and the ignored signal. */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0);
  rl.rlim_cur = a->source_fits ? (rlim_t)len + 512 : (rlim_t)len / 2;
  CHECK_MSG(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s", strerror(errno));
  setenv("SK_CACHE_DIR", a->dir, 1);
  if (a->source_fits) {
    /* The compiler's output does not fit (its assembly or the object,
     * whichever it writes first). Its diagnostics may be translated, so
     * only the library's own words are required. */
    expect_fallback(g, team, (const char *const[]){"scope 'chain'", "compiler '", "failed (exit status"}, 3);
  } else {
    /* The library's own write of the source fails. */
    expect_fallback(g, team, (const char *const[]){"scope 'chain'", "cannot write ", a->dir, strerror(EFBIG)}, 4);
  }
  sk_graph_destroy(g);
  sk_team_destroy(team);
}

static void test_full_cache(void) {
  for (int k = 0; k < 2; k++) {
    full_args a = {.source_fits = k == 1};
    sub_dir(base_dir, k ? "full-object" : "full-source", a.dir, sizeof a.dir);
    fresh_dir(a.dir);
    int status = in_child(full_child, &a);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child failed: status %#x", a.dir, status);
    /* Nothing left behind: no temporaries, no partial entry. */
    CHECK_MSG(count_entries(a.dir, "tmp-", "") == 0, "%s: temporaries left", a.dir);
    CHECK_MSG(count_entries(a.dir, NULL, "") == 0, "%s: %d files left", a.dir, count_entries(a.dir, NULL, ""));
    remove_dir(a.dir);
  }
}

/* A compile-options flag that makes the compiler write a file beside its
 * output (-gsplit-dwarf: <key>.so-<key>.dwo) must not leave the compile's
 * private directory behind. */
static void test_extra_compiler_files(void) {
  char dir[PATH_MAX];
  sub_dir(base_dir, "dwo", dir, sizeof dir);
  fresh_dir(dir);
  setenv("SK_CACHE_DIR", dir, 1);
  sk_graph *g = chain_model();
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team2, .executor = SK_EXECUTOR_JIT,
                           .default_options = "compile-options=-O2,-gsplit-dwarf"};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  size_t jitted, plans = count_plans(p, &jitted);
  CHECK_MSG(plans > 0 && jitted == plans, "expected the JIT: %s", log_text);
  CHECK_MSG(count_entries(dir, "tmp-", "") == 0, "%d private directories left in %s", count_entries(dir, "tmp-", ""), dir);
  CHECK(count_entries(dir, "", ".so") == 1);
  sk_program_destroy(p);
  sk_graph_destroy(g);
  setenv("SK_CACHE_DIR", base_dir, 1);
}

int main(void) {
  jit_test_start(base_dir, "cache_faults_cache");
  printf("  running as uid %u\n", (unsigned)geteuid());
  /* The forked cases first, while this process has one thread. */
  static const harness_case forked[] = {TEST_CASE(test_readonly_cache), TEST_CASE(test_full_cache)};
  int rc = harness_run(forked, sizeof forked / sizeof forked[0]);
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 2};
  if (sk_team_create(&cfg, &team2) != SK_STATUS_OK) return 1;
  static const harness_case cases[] = {TEST_CASE(test_foreign_owner), TEST_CASE(test_extra_compiler_files)};
  rc |= harness_run(cases, sizeof cases / sizeof cases[0]);
  sk_team_destroy(team2);
  return rc;
}

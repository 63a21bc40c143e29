/* The compiler process and the cache directory under a hostile or careless
 * host (issue 15, items 3, 8 and 11), each in a process of its own:
 *
 *   - the host ignores SIGCHLD: the JIT still works;
 *   - the compiler leaves a background child holding its output pipe: the
 *     compile ends with the compiler, and the child is killed;
 *   - the caller is killed during a compile: the compiler dies with it, and
 *     the next compile removes the private directory left behind, and so
 *     does the next process that only loads entries (issue 34, item 16);
 *   - a file-size limit (`ulimit -f`) with SIGXFSZ at its default: the
 *     caller is not killed, the kernel falls back naming the cause;
 *   - the cache directory is swapped for another during the compile: the
 *     object that is loaded is the one compiled from our source in our
 *     directory, and nothing from the other runs;
 *   - a directory where a cache entry belongs: removed when empty, moved
 *     aside within the cache (its files kept) when not: repaired once
 *     either way (issue 34, item 15);
 *   - a scope whose object would be mostly func-align padding (issue 15,
 *     item 2): interpreted, naming the limit, before the compiler runs.
 *
 * Fake compilers are shell scripts that end by running the real `cc`. The
 * forked cases run before this process creates a team thread. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_test_util.h"

static char base_dir[PATH_MAX];

static void path_in(const char *dir, const char *name, char *out, size_t n) {
  if (snprintf(out, n, "%s/%s", dir, name) >= (int)n) abort();
}

static void write_script(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  CHECK(fclose(f) == 0 && chmod(path, 0700) == 0);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Whether pid has ended (gone, or a zombie nobody reaped yet). */
static bool ended(pid_t pid) {
  char path[64], stat_line[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return kill(pid, 0) != 0 && errno == ESRCH;
  size_t got = fread(stat_line, 1, sizeof stat_line - 1, f);
  fclose(f);
  stat_line[got] = '\0';
  const char *paren = strrchr(stat_line, ')'); /* "pid (comm) S ..." */
  return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Waits up to seconds for pid to end. */
static bool ends_within(pid_t pid, double seconds) {
  for (double t0 = now_s(); now_s() - t0 < seconds; usleep(20000))
    if (ended(pid)) return true;
  return ended(pid);
}

/* The pid a fake compiler wrote to path, waiting up to 20 s for it. */
static pid_t read_pid(const char *path) {
  for (double t0 = now_s(); now_s() - t0 < 20; usleep(20000)) {
    FILE *f = fopen(path, "r");
    int pid = 0;
    bool ok = f && fscanf(f, "%d", &pid) == 1 && pid > 0;
    if (f) fclose(f);
    if (ok) return (pid_t)pid;
  }
  return 0;
}

/* A fresh cache directory base_dir/name, set as $SK_CACHE_DIR. */
static void use_cache(const char *name, char *dir, size_t n) {
  path_in(base_dir, name, dir, n);
  fresh_dir(dir);
  setenv("SK_CACHE_DIR", dir, 1);
}

/* ---- the host ignores SIGCHLD ---- */

static void sigchld_child(const void *arg) {
  (void)arg;
  signal(SIGCHLD, SIG_IGN); /* the kernel now reaps our children itself */
  char dir[PATH_MAX];
  use_cache("sigchld", dir, sizeof dir);
  sk_team *team = child_team();
  sk_graph *g = chain_model();
  expect_jit(g, team);
  sk_graph_destroy(g);
  sk_team_destroy(team);
}

static void test_sigchld_ignored(void) {
  int status = in_child(sigchld_child, NULL);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: status %#x", status);
}

/* ---- a compiler that leaves a child behind ---- */

static void test_background_child(void) {
  char dir[PATH_MAX], cc[PATH_MAX], pid_file[PATH_MAX];
  use_cache("background", dir, sizeof dir);
  path_in(base_dir, "background-cc", cc, sizeof cc);
  path_in(base_dir, "background.pid", pid_file, sizeof pid_file);
  unlink(pid_file);
  /* The sleep inherits stdout and stderr: the output pipe stays open for
   * 30 s after the compiler itself has finished. */
  write_script(cc, "#!/bin/sh\nsleep 30 &\necho $! > \"$SKT_PID_FILE\"\nexec cc \"$@\"\n");
  setenv("SKT_PID_FILE", pid_file, 1);
  setenv("SK_CC", cc, 1);
  sk_graph *g = chain_model();
  double t0 = now_s();
  expect_jit(g, NULL);
  double took = now_s() - t0;
  CHECK_MSG(took < 15, "the compile took %.1f s: it waited for the background child", took);
  pid_t bg = read_pid(pid_file);
  CHECK_MSG(bg > 0 && ends_within(bg, 5), "the compiler's background child %d is still running", (int)bg);
  sk_graph_destroy(g);
  unsetenv("SK_CC");
}

/* ---- the caller killed during a compile ---- */

typedef struct killed_args {
  char dir[PATH_MAX];
} killed_args;

static void killed_child(const void *arg) {
  const killed_args *a = arg;
  setenv("SK_CACHE_DIR", a->dir, 1);
  sk_graph *g = chain_model();
  sk_program *p = compile(g, NULL, SK_EXECUTOR_JIT); /* SIGTERM arrives during this */
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* Kills (SIGTERM) a process compiling into a->dir while its compiler runs;
 * checks that the compiler dies with it and that the compile's private
 * directory is left behind. Returns the killed process's pid. */
static pid_t kill_a_compile(const killed_args *a) {
  char cc[PATH_MAX], pid_file[PATH_MAX];
  path_in(base_dir, "killed-cc", cc, sizeof cc);
  path_in(base_dir, "killed.pid", pid_file, sizeof pid_file);
  unlink(pid_file);
  write_script(cc, "#!/bin/sh\ncase \"$1\" in --version) exec cc \"$@\";; esac\n"
                   "echo $$ > \"$SKT_PID_FILE\"\nexec sleep 60\n");
  setenv("SKT_PID_FILE", pid_file, 1);
  setenv("SK_CC", cc, 1);
  fflush(stdout), fflush(stderr);
  pid_t caller = fork();
  if (caller == 0) {
    killed_child(a);
    _exit(0);
  }
  CHECK(caller > 0);
  pid_t compiler = read_pid(pid_file);
  CHECK_MSG(compiler > 0, "the fake compiler never started");
  kill(caller, SIGTERM);
  int status = 0;
  CHECK(waitpid(caller, &status, 0) == caller && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  if (compiler > 0) {
    bool gone = ends_within(compiler, 5);
    CHECK_MSG(gone, "the compiler %d outlived its killed caller", (int)compiler);
    if (!gone) kill(compiler, SIGKILL);
  }
  CHECK_MSG(count_entries(a->dir, "tmp-", "") == 1, "the killed compile's private directory: %d",
            count_entries(a->dir, "tmp-", ""));
  unsetenv("SK_CC");
  setenv("SK_CACHE_DIR", a->dir, 1);
  return caller;
}

static void test_killed_during_compile(void) {
  killed_args a;
  use_cache("killed", a.dir, sizeof a.dir);
  pid_t caller = kill_a_compile(&a);
  /* The next compile (a real compiler now) removes it: its process is gone. */
  sk_graph *g = chain_model();
  expect_jit(g, NULL);
  CHECK_MSG(count_entries(a.dir, "tmp-", "") == 0, "%d private directories left", count_entries(a.dir, "tmp-", ""));
  sk_graph_destroy(g);
  /* `sk cache clear` removes a dead process's directory at once (it kept
   * any for 10 minutes); a live one's (ours) stays. */
  struct stat ns;
  CHECK(stat("/proc/self/ns/pid", &ns) == 0);
  char dead[PATH_MAX + 64], live[PATH_MAX + 64];
  snprintf(dead, sizeof dead, "%s/tmp-%llu-%d-0000abcd", a.dir, (unsigned long long)ns.st_ino, (int)caller);
  snprintf(live, sizeof live, "%s/tmp-%llu-%d-0000abcd", a.dir, (unsigned long long)ns.st_ino, (int)getpid());
  CHECK(mkdir(dead, 0700) == 0 && mkdir(live, 0700) == 0);
  size_t removed = 0;
  CHECK_OK(sk_jit_cache_clear(&removed));
  CHECK_MSG(access(dead, F_OK) != 0 && access(live, F_OK) == 0, "clear: dead %d, live %d", access(dead, F_OK),
            access(live, F_OK));
  rmdir(live);
}

/* ---- a file-size limit, SIGXFSZ at its default ---- */

typedef struct fsize_args {
  bool source_fits;
} fsize_args;

static void fsize_child(const void *arg) {
  const fsize_args *a = arg;
  char dir[PATH_MAX];
  use_cache(a->source_fits ? "fsize-object" : "fsize-source", dir, sizeof dir);
  sk_graph *g = chain_model();
  size_t len = jit_source_length(g, NULL, "chain");
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0);
  rl.rlim_cur = a->source_fits ? (rlim_t)len + 512 : (rlim_t)len / 2;
  CHECK_MSG(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s", strerror(errno));
  if (a->source_fits) /* the compiler (killed by SIGXFSZ or failing) */
    expect_fallback(g, NULL, (const char *const[]){"scope 'chain'", "compiler '", "failed ("}, 3);
  else /* our own write */
    expect_fallback(g, NULL, (const char *const[]){"scope 'chain'", "cannot write ", dir, strerror(EFBIG)}, 4);
  /* The signal is neither left blocked nor pending. */
  sigset_t mask, pending;
  CHECK(sigprocmask(SIG_SETMASK, NULL, &mask) == 0 && !sigismember(&mask, SIGXFSZ));
  CHECK(sigpending(&pending) == 0 && !sigismember(&pending, SIGXFSZ));
  CHECK(count_entries(dir, NULL, "") == 0);
  sk_graph_destroy(g);
}

static void test_file_size_limit(void) {
  for (int k = 0; k < 2; k++) {
    fsize_args a = {.source_fits = k == 1};
    int status = in_child(fsize_child, &a);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child failed: status %#x%s",
              k ? "object" : "source", status, WIFSIGNALED(status) ? " (killed by a signal)" : "");
  }
}

/* ---- the cache directory swapped during the compile ---- */

/* The fake compiler moves the cache away and puts a directory of its own
 * at its path, holding a source with a constructor that leaves a marker,
 * at the name of the source it was asked to compile; then runs cc as
 * asked. A JIT that used paths after checking the directory would compile
 * and load that source. */
static const char swap_cc[] =
    "#!/bin/sh\n"
    "case \"$1\" in --version) exec cc \"$@\";; esac\n"
    "for a; do last=$a; done\n"
    "case \"$last\" in */*) priv=$(basename \"$(dirname \"$last\")\");; *) priv=$(basename \"$(pwd -P)\");; esac\n"
    "mv \"$SKT_CACHE\" \"$SKT_CACHE.real\" && mkdir -m 700 \"$SKT_CACHE\" \"$SKT_CACHE/$priv\" || exit 99\n"
    "printf '#include <fcntl.h>\\n#include <unistd.h>\\n__attribute__((constructor)) static void evil(void) "
    "{ close(open(\"%s\", O_CREAT | O_WRONLY, 0600)); }\\n' \"$SKT_MARKER\" > \"$SKT_CACHE/$priv/$(basename "
    "\"$last\")\"\n"
    "exec cc \"$@\"\n";

static void test_cache_dir_swapped(void) {
  char dir[PATH_MAX], real[PATH_MAX + 8], cc[PATH_MAX], marker[PATH_MAX];
  use_cache("swapped", dir, sizeof dir);
  snprintf(real, sizeof real, "%s.real", dir);
  remove_dir(real);
  path_in(base_dir, "swap-cc", cc, sizeof cc);
  path_in(base_dir, "swap-marker", marker, sizeof marker);
  unlink(marker);
  write_script(cc, swap_cc);
  setenv("SKT_CACHE", dir, 1);
  setenv("SKT_MARKER", marker, 1);
  setenv("SK_CC", cc, 1);
  sk_graph *g = chain_model();
  expect_jit(g, NULL);
  CHECK_MSG(access(marker, F_OK) != 0, "code from the swapped-in directory ran in this process");
  CHECK_MSG(count_entries(real, NULL, ".so") == 1, "the entry is not in the directory that was checked");
  CHECK(count_entries(dir, NULL, ".so") == 0);
  sk_graph_destroy(g);
  unsetenv("SK_CC");
  remove_dir(real);
}

/* ---- a directory where an entry belongs ---- */

/* In a new process: the chain model's entry is loaded from the cache, with
 * no compile (counted by the JIT's own counters). */
static void hit_child(const void *arg) {
  (void)arg;
  sk__jit_counters before, after;
  sk__jit_stats(&before);
  sk_graph *g = chain_model();
  expect_jit(g, NULL);
  sk_graph_destroy(g);
  sk__jit_stats(&after);
  CHECK_MSG(after.compiles == before.compiles && after.hits > before.hits, "compiles %llu -> %llu, hits %llu -> %llu",
            (unsigned long long)before.compiles, (unsigned long long)after.compiles, (unsigned long long)before.hits,
            (unsigned long long)after.hits);
}

/* The name of the one <key>.so in dir, without ".so". */
static bool entry_key(const char *dir, char key[65]) {
  DIR *d = opendir(dir);
  bool found = false;
  for (struct dirent *e; d && !found && (e = readdir(d));)
    if (strlen(e->d_name) == 67 && strcmp(e->d_name + 64, ".so") == 0) {
      memcpy(key, e->d_name, 64);
      key[64] = '\0';
      found = true;
    }
  if (d) closedir(d);
  return found;
}

/* The one entry of dir named name.aside-*, in out; false when there is
 * not exactly one. */
static bool aside_of(const char *dir, const char *name, char *out, size_t n) {
  char prefix[128];
  snprintf(prefix, sizeof prefix, "%s.aside-", name);
  DIR *d = opendir(dir);
  int found = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && found++ == 0) path_in(dir, e->d_name, out, n);
  if (d) closedir(d);
  return found == 1;
}

/* A directory at each of an entry's names (issue 34, item 15): an empty one
 * is removed, one holding files is moved aside within the cache (its files
 * kept, a warning naming both places); either way once, and the next
 * process loads the entry without compiling. */
static void test_entry_is_directory(void) {
  static const char *const exts[] = {"so", "sha256", "c"};
  for (int i = 0; i < 3; i++) {
    for (int full = 0; full < 2; full++) {
      char dir[PATH_MAX], key[65], entry[PATH_MAX], inside[PATH_MAX + 16], nested[PATH_MAX + 16], name[80];
      char aside[PATH_MAX], kept[PATH_MAX + 16], label[32];
      snprintf(label, sizeof label, "entry-dir-%s%s", exts[i], full ? "-full" : "");
      use_cache(label, dir, sizeof dir);
      sk_graph *g = chain_model();
      expect_jit(g, NULL);
      CHECK(entry_key(dir, key));
      snprintf(name, sizeof name, "%s.%s", key, exts[i]);
      path_in(dir, name, entry, sizeof entry);
      snprintf(inside, sizeof inside, "%s/file", entry);
      snprintf(nested, sizeof nested, "%s/sub", entry);
      /* The other files go too: the entry must be made again. */
      for (int k = 0; k < 3; k++) {
        char other[80], path[PATH_MAX];
        snprintf(other, sizeof other, "%s.%s", key, exts[k]);
        path_in(dir, other, path, sizeof path);
        CHECK(unlink(path) == 0);
      }
      CHECK(mkdir(entry, 0700) == 0);
      if (full) {
        write_script(inside, "not ours\n");
        CHECK(mkdir(nested, 0700) == 0);
      }
      expect_jit(g, NULL);
      struct stat st;
      CHECK_MSG(lstat(entry, &st) == 0 && S_ISREG(st.st_mode), "%s: %s is not a file again", label, entry);
      if (full) {
        bool moved = aside_of(dir, name, aside, sizeof aside);
        CHECK_MSG(moved, "%s: no single %s.aside-* in %s", label, name, dir);
        snprintf(kept, sizeof kept, "%s/file", moved ? aside : entry);
        CHECK_MSG(access(kept, F_OK) == 0, "%s: the directory's file was not kept", label);
        CHECK_MSG(log_has("moved it aside to") && log_has(entry) && (!moved || log_has(aside)), "%s: %s", label,
                  log_text);
        if (moved) remove_dir(aside);
      } else {
        CHECK_MSG(log_has("removed the empty directory") && log_has(entry), "%s: %s", label, log_text);
      }
      /* Repaired once: a new process finds the entry (no compile). */
      int status = in_child(hit_child, NULL);
      CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the next process did not hit: status %#x", label,
                status);
      sk_graph_destroy(g);
    }
  }
}

/* Killed during a compile, and afterwards only cache hits (issue 34, item
 * 16): the next process removes the dead compile's private directory at its
 * first lookup, although it compiles nothing; the private directory of a
 * live process (this one), one of another PID namespace and a tmp- file
 * that is no directory stay. */
static void test_killed_then_hit(void) {
  killed_args a;
  use_cache("killed-hit", a.dir, sizeof a.dir);
  sk_graph *g = chain_model();
  expect_jit(g, NULL); /* the entry the next process hits */
  sk_graph_destroy(g);
  kill_a_compile(&a);
  struct stat ns;
  CHECK(stat("/proc/self/ns/pid", &ns) == 0);
  char live[PATH_MAX + 64], other_ns[PATH_MAX + 64], file[PATH_MAX + 64];
  snprintf(live, sizeof live, "%s/tmp-%llu-%d-0000abcd", a.dir, (unsigned long long)ns.st_ino, (int)getpid());
  snprintf(other_ns, sizeof other_ns, "%s/tmp-%llu-%d-0000abcd", a.dir, (unsigned long long)ns.st_ino + 1, 999999);
  snprintf(file, sizeof file, "%s/tmp-%llu-%d-0000abce", a.dir, (unsigned long long)ns.st_ino, 999999);
  CHECK(mkdir(live, 0700) == 0 && mkdir(other_ns, 0700) == 0);
  write_script(file, "not a directory\n");
  int status = in_child(hit_child, NULL);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the next process did not hit: status %#x", status);
  CHECK_MSG(count_entries(a.dir, "tmp-", "") == 3, "%d private directories and files left, want 3 (ours, another "
            "namespace's, a file)", count_entries(a.dir, "tmp-", ""));
  CHECK(access(live, F_OK) == 0 && access(other_ns, F_OK) == 0 && access(file, F_OK) == 0);
  rmdir(live);
  rmdir(other_ns);
  unlink(file);
}

/* ---- the object's size is bounded ---- */

static void test_output_bounded(void) {
  char dir[PATH_MAX];
  use_cache("bounded", dir, sizeof dir);
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){4});
  /* 17000 functions at 4096 bytes each: over the 64 MiB limit. */
  CHECK_OK(sk_graph_begin_scope(g, "wide", "func-align=4096"));
  char name[32];
  for (int i = 0; i < 17000; i++) {
    snprintf(name, sizeof name, "sq%d", i);
    x = unary(g, "square", name, x);
  }
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, x, "y"));
  double t0 = now_s();
  expect_fallback(g, NULL, (const char *const[]){"scope 'wide'", "func-align 4096", "the limit is 64 MiB"}, 3);
  CHECK(count_entries(dir, NULL, "") == 0); /* the compiler never ran */
  fprintf(stderr, "note: 17000 sub-kernels planned, refused and run in %.1f s\n", now_s() - t0);
  sk_graph_destroy(g);
}

int main(void) {
  jit_test_start(base_dir, "compiler_faults_cache");
  static const harness_case cases[] = {
      TEST_CASE(test_sigchld_ignored),  TEST_CASE(test_file_size_limit),   TEST_CASE(test_killed_during_compile),
      TEST_CASE(test_killed_then_hit),  TEST_CASE(test_background_child),  TEST_CASE(test_cache_dir_swapped),
      TEST_CASE(test_entry_is_directory), TEST_CASE(test_output_bounded)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

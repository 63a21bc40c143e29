/* Helpers shared by the JIT and cache tests (test_jit.c, test_cache_faults.c,
 * test_concurrency.c): a log capture usable from any thread, the small
 * chain model, counting the super kernels that run JIT code, and cache
 * directory chores. Header-only on purpose, like graph_builders.h: CHECK
 * counts into the including test's harness (harness.h keeps its counters
 * per file); every function is static inline, so a test need not use all. */
#ifndef SK_TEST_JIT_TEST_UTIL_H
#define SK_TEST_JIT_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executors/jit/jit.h"

#include "program/program.h"
#include "graph_builders.h"
#include "harness.h"

/* ---- log capture (from any thread) ---- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 17];
static size_t log_len;

/* The log callback: appends every message (one a line) to log_text and
 * echoes warnings to stderr. */
static inline void capture(sk_log_level level, const char *message, void *user) {
  (void)user;
  if (level == SK_LOG_WARN) fprintf(stderr, "superkernel: warning: %s\n", message);
  pthread_mutex_lock(&log_lock);
  int n = snprintf(log_text + log_len, sizeof log_text - log_len, "%s\n", message);
  if (n > 0 && log_len + (size_t)n < sizeof log_text) log_len += (size_t)n;
  pthread_mutex_unlock(&log_lock);
}

static inline void log_reset(void) {
  pthread_mutex_lock(&log_lock);
  log_len = 0;
  log_text[0] = '\0';
  pthread_mutex_unlock(&log_lock);
}

static inline bool log_has(const char *fragment) {
  pthread_mutex_lock(&log_lock);
  bool has = strstr(log_text, fragment) != NULL;
  pthread_mutex_unlock(&log_lock);
  return has;
}

/* How many times needle occurs in the log. */
static inline size_t log_count(const char *needle) {
  size_t n = 0;
  pthread_mutex_lock(&log_lock);
  for (const char *s = log_text; (s = strstr(s, needle)); s += strlen(needle)) n++;
  pthread_mutex_unlock(&log_lock);
  return n;
}

/* ---- the model ---- */

/* A small one-scope chain (a matmul and an elementwise op). */
static inline sk_graph *chain_model(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){96, 40}), w = input(g, "w", SK_FP32, 2, (int64_t[]){40, 24});
  CHECK_OK(sk_graph_begin_scope(g, "chain", NULL));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_value h;
  op(g, "grouped_matmul", "mm", in, 2, NULL, 0, &h, 1);
  sk_value y = unary(g, "square", "sq", h);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  return g;
}

/* ---- JIT use (no CHECK: usable from any thread) ---- */

/* Super-kernel steps, and how many of them run JIT code. */
static inline size_t count_plans(const sk_program *p, size_t *jitted) {
  size_t n = 0;
  *jitted = 0;
  for (size_t s = 0; p && s < p->n_steps; s++) {
    n += p->steps[s].plan != NULL;
    *jitted += p->steps[s].plan && sk__jit_entry_of(&p->steps[s]) != NULL;
  }
  return n;
}

/* Every super kernel of p runs JIT code (and there is at least one). */
static inline bool all_jitted(const sk_program *p) {
  size_t jitted, n = count_plans(p, &jitted);
  return n > 0 && jitted == n;
}

/* ---- cache directories ---- */

/* Entries of dir (but . and ..) whose name starts with prefix (NULL or ""
 * = any) and ends in suffix ("" = any). */
static inline int count_entries(const char *dir, const char *prefix, const char *suffix) {
  DIR *d = opendir(dir);
  int found = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (strcmp(e->d_name, "CACHEDIR.TAG") == 0) continue; /* the library's mark, not an entry */
    if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    if (len >= sl && strcmp(e->d_name + len - sl, suffix) == 0) found++;
  }
  if (d) closedir(d);
  return found;
}

/* rm -rf (directories made writable first; links are removed, not
 * followed). */
static inline void remove_dir(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  chmod(path, 0700);
  DIR *d = opendir(path);
  if (d) {
    char file[PATH_MAX + 300];
    for (struct dirent *e; (e = readdir(d));)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        if (snprintf(file, sizeof file, "%s/%s", path, e->d_name) < (int)sizeof file) remove_dir(file);
      }
    closedir(d);
  }
  rmdir(path);
}

/* A test's start: base (PATH_MAX bytes) becomes $SK_CACHE_DIR, or
 * `fallback` when unset, made 0700, absolute (the compiler runs in its
 * private directory: the paths tests hand fake compilers must not be
 * relative) and exported again; the log is captured from the info level
 * on. */
static inline void jit_test_start(char *base, const char *fallback) {
  const char *dir = getenv("SK_CACHE_DIR");
  char given[PATH_MAX];
  snprintf(given, sizeof given, "%s", dir && *dir ? dir : fallback);
  mkdir(given, 0700);
  chmod(given, 0700);
  if (!realpath(given, base)) snprintf(base, PATH_MAX, "%s", given);
  /* The test keeps its cases' caches in subdirectories of its own: tag it
   * as a cache, which the library then takes whatever else it holds. */
  char tag[PATH_MAX + 16];
  snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", base);
  FILE *f = fopen(tag, "w");
  if (f) {
    fputs("Signature: 8a477f597d28d172789f06886806bc55\n", f);
    fclose(f);
  }
  setenv("SK_CACHE_DIR", base, 1);
  sk_set_log_handler(capture, NULL);
  sk_set_log_level(SK_LOG_INFO);
}

/* remove_dir, then mkdir 0700. */
static inline void fresh_dir(const char *path) {
  remove_dir(path);
  CHECK_MSG(mkdir(path, 0700) == 0, "mkdir %s: %s", path, strerror(errno));
}

#endif

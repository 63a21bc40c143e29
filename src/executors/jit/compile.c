/* Running the system C compiler, Ruby MJIT's way: an explicit argument
 * vector (never system() or a shell, so no quoting and no injection through
 * option strings), stdout and stderr on one pipe that is drained while the
 * compiler runs (a chatty compiler can never block on a full pipe), and the
 * diagnostics, trimmed, in the error message when it fails. The process
 * itself is run by spawn.c. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fork.h"
#include "executors/jit/jit_internal.h"

/* A library built with ThreadSanitizer must compile its kernels with it
 * too: the flags' atomics live in the generated code, and TSan only sees
 * the happens-before they create when that code is instrumented. */
#if defined(__SANITIZE_THREAD__)
#define SK_JIT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SK_JIT_TSAN 1
#endif
#endif

static const char *const fixed_flags[] = {
    "-std=c11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
#ifdef SK_JIT_TSAN
    "-fsanitize=thread",
#endif
};
#define N_FIXED (int)(sizeof fixed_flags / sizeof fixed_flags[0])

/* Diagnostics kept for the message: the log line and sk_last_error() hold
 * 1 KB, and the first error is the one that matters. */
#define DIAG_MAX 700

int sk__jit_argv(const sk__jit_compiler *cc, const sk__options *o, const char *out, const char *src,
                 const char **argv, int max) {
  int n = 0;
  if (max < N_FIXED + o->n_compile_options + 5) return -1;
  argv[n++] = cc->argv0;
  for (int i = 0; i < N_FIXED; i++) argv[n++] = fixed_flags[i];
  /* After the fixed flags, so a user's -O3 or -march wins. */
  for (int i = 0; i < o->n_compile_options; i++) argv[n++] = o->compile_options[i];
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n++] = src;
  argv[n] = NULL;
  return n;
}

/* The compiler's time limit: $SK_JIT_TIMEOUT seconds (0 = none), else
 * SK_JIT_TIMEOUT_DEFAULT. Fails naming the variable when it is not a
 * non-negative number. */
static sk_status timeout_ms(long long *ms) {
  const char *v = getenv("SK_JIT_TIMEOUT");
  *ms = (long long)SK_JIT_TIMEOUT_DEFAULT * 1000;
  if (!v || !*v) return SK_STATUS_OK;
  char *end;
  errno = 0;
  double s = strtod(v, &end);
  while (*end == ' ') end++;
  if (end == v || *end || errno || !(s >= 0) || s > 1e9)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                    "jit: $SK_JIT_TIMEOUT='%s' is not a number of seconds (0 = no limit; default %d)", v,
                    SK_JIT_TIMEOUT_DEFAULT);
  *ms = (long long)ceil(s * 1000.0);
  return SK_STATUS_OK;
}

/* PATH lookup as execvp does it, so identity and execution agree. */
static bool find_in_path(const char *name, char *exec, size_t n) {
  if (strchr(name, '/')) {
    snprintf(exec, n, "%s", name);
    return access(exec, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *dir = path; dir;) {
    const char *colon = strchr(dir, ':');
    size_t len = colon ? (size_t)(colon - dir) : strlen(dir);
    snprintf(exec, n, "%.*s%s%s", (int)len, len ? dir : ".", "/", name);
    struct stat st;
    if (stat(exec, &st) == 0 && S_ISREG(st.st_mode) && access(exec, X_OK) == 0) return true;
    dir = colon ? colon + 1 : NULL;
  }
  return false;
}

/* Identities found so far, by name: `cc --version` runs once per process. */
static sk__fork_mutex known_lock = SK__FORK_MUTEX_INITIALIZER;
static sk__jit_compiler known[8];
static int n_known;

sk_status sk__jit_compiler_find(sk__jit_compiler *out) {
  const char *name = getenv("SK_CC");
  if (!name || !*name) name = "cc";
  memset(out, 0, sizeof *out);
  if (strlen(name) >= sizeof out->name)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "jit: compiler name $SK_CC is too long");
  snprintf(out->name, sizeof out->name, "%s", name);
  sk__fork_mutex_lock(&known_lock);
  for (int i = 0; i < n_known; i++)
    if (strcmp(known[i].name, name) == 0) {
      *out = known[i];
      sk__fork_mutex_unlock(&known_lock);
      return SK_STATUS_OK;
    }
  sk__fork_mutex_unlock(&known_lock);
  if (!find_in_path(name, out->exec, sizeof out->exec))
    return sk__fail(SK_STATUS_NOT_FOUND, "jit: compiler '%s' not found%s (set $SK_CC to a C compiler)", name,
                    strchr(name, '/') ? "" : " in $PATH");
  /* The compiler runs in its private directory: a relative path (./cc, or
   * found through a relative $PATH entry) is made absolute here, and is
   * then also its argv[0], which a driver uses to find its own parts. */
  if (out->exec[0] != '/') {
    char cwd[PATH_MAX], rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s", out->exec);
    if (!getcwd(cwd, sizeof cwd) || snprintf(out->exec, sizeof out->exec, "%s/%s", cwd, rel) >= (int)sizeof out->exec)
      return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: compiler '%s': cannot make its path absolute", name);
  }
  snprintf(out->argv0, sizeof out->argv0, "%s", strchr(name, '/') ? out->exec : name);
  if (!realpath(out->exec, out->path)) snprintf(out->path, sizeof out->path, "%s", out->exec);
  const char *argv[] = {out->argv0, "--version", NULL};
  char version[1024];
  long long limit;
  SK_RETURN_IF_ERROR(timeout_ms(&limit));
  sk__jit_proc r = {.out = version, .cap = sizeof version};
  int rc = sk__jit_run_process(out->exec, argv, -1, limit, &r);
  if (rc != 0)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot run compiler '%s' (%s): %s", name, out->exec, strerror(rc));
  if (r.timed_out)
    return sk__fail(SK_STATUS_SYSTEM_ERROR,
                    "jit: compiler '%s' timed out after %.3g s ($SK_JIT_TIMEOUT) answering --version; killed it", name,
                    (double)limit / 1000.0);
  version[strcspn(version, "\r\n")] = '\0';
  size_t len = strnlen(version, sizeof out->version - 1); /* identity: the first 255 bytes do */
  memcpy(out->version, version, len);
  out->version[len] = '\0';
  sk__fork_mutex_lock(&known_lock);
  if (n_known < (int)(sizeof known / sizeof known[0])) known[n_known++] = *out;
  sk__fork_mutex_unlock(&known_lock);
  return SK_STATUS_OK;
}

sk_status sk__jit_compile(const sk__jit_compiler *cc, const sk__options *o, int dir_fd, const char *src,
                          const char *out) {
  long long limit;
  SK_RETURN_IF_ERROR(timeout_ms(&limit));
  const char **argv = malloc((size_t)(N_FIXED + o->n_compile_options + 6) * sizeof *argv);
  if (!argv) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  sk__jit_argv(cc, o, out, src, argv, N_FIXED + o->n_compile_options + 6);
  char diag[DIAG_MAX + 8];
  sk__jit_proc r = {.out = diag, .cap = DIAG_MAX + 1};
  int rc = sk__jit_run_process(cc->exec, argv, dir_fd, limit, &r);
  free(argv);
  if (rc != 0)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot run compiler '%s' (%s): %s", cc->name, cc->exec, strerror(rc));
  bool cut = r.cut;
  int wstatus = r.wstatus;
  if (r.timed_out)
    return sk__fail(SK_STATUS_SYSTEM_ERROR,
                    "jit: compiler '%s' timed out after %.3g s ($SK_JIT_TIMEOUT; 0 = no limit); killed it", cc->name,
                    (double)limit / 1000.0);
  size_t len = strlen(diag);
  while (len && (diag[len - 1] == '\n' || diag[len - 1] == ' ' || diag[len - 1] == '\r')) diag[--len] = '\0';
  if (cut) memcpy(diag + len, " [...]", 7);
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    if (len) sk__log(SK_LOG_DEBUG, "jit: compiler '%s' said: %s", cc->name, diag);
    return SK_STATUS_OK;
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127)
    return sk__fail(SK_STATUS_NOT_FOUND, "jit: compiler '%s' (%s) could not be run (exit status 127)%s%s", cc->name,
                    cc->exec, len ? ": " : "", diag);
  char how[64];
  if (WIFEXITED(wstatus)) snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(wstatus));
  else snprintf(how, sizeof how, "signal %d", WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
  return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: compiler '%s' failed (%s)%s%s", cc->name, how,
                  len ? ": " : ", with no diagnostics", diag);
}

/* Shared between the files of src/executors/jit/ only:
 *   codegen.c  plan -> C source
 *   compile.c  the compiler: identity, argument vector, running it
 *   spawn.c    running a process: reaped, bounded, killed with its caller
 *   cache.c    key, entries: verified loads, compiles, loaded-object map
 *   cache_dir.c  the directory: located, checked, opened once; private dirs
 *   jit.c      the library side: steps, env, callbacks, run */
#ifndef SK_JIT_JIT_INTERNAL_H
#define SK_JIT_JIT_INTERNAL_H

#include <limits.h>

#include "executors/jit/jit.h"
#include "executors/jit/jit_env.h"
#include "program/plan.h"

/* ---- codegen.c ---- */

/* The source without its key line (the key is a hash of it). */
sk_status sk__jit_codegen(const sk__plan *plan, const sk_program *p, char **body_out);
/* body + the line exporting sk_jit_key, malloc'd; NULL when out of memory. */
char *sk__jit_with_key(const char *body, const char *key);

/* ---- compile.c ---- */

/* The compiler as invoked ($SK_CC, else "cc": one program, no arguments),
 * the file PATH lookup found (what is run; absolute), its argv[0] (the
 * name, or exec when the name is a path), and what identifies it: that
 * file's resolved path and the first line of its --version. */
typedef struct sk__jit_compiler {
  char name[256];
  char exec[PATH_MAX];
  char argv0[PATH_MAX];
  char path[PATH_MAX];
  char version[256];
} sk__jit_compiler;

/* Finds $SK_CC / cc in PATH and asks its version (once per name per
 * process). Fails naming the compiler when it cannot be found or run. */
sk_status sk__jit_compiler_find(sk__jit_compiler *out);

/* The full argument vector: the compiler, the fixed flags, each
 * compile-options item, "-o", out, src; NULL-terminated. Returns the count
 * (without the NULL), or -1 when max is too small. */
int sk__jit_argv(const sk__jit_compiler *cc, const sk__options *o, const char *out, const char *src,
                 const char **argv, int max);

/* The compiler's default time limit in seconds; $SK_JIT_TIMEOUT changes it
 * (0 = none). On expiry its process group is killed and the compile fails. */
#define SK_JIT_TIMEOUT_DEFAULT 60

/* Compiles src into the shared object out, both names relative to the
 * directory dir_fd, where the compiler runs. On failure the message holds
 * the exit status and the compiler's diagnostics (trimmed). */
sk_status sk__jit_compile(const sk__jit_compiler *cc, const sk__options *o, int dir_fd, const char *src,
                          const char *out);

/* ---- spawn.c ---- */

/* A finished process: its wait status, and its stdout and stderr together
 * in out (the first cap - 1 bytes, NUL-terminated; cut: more was dropped). */
typedef struct sk__jit_proc {
  char *out;
  size_t cap, len;
  int wstatus;
  bool cut, timed_out;
} sk__jit_proc;

/* Runs the program file (a path) with argv, stdin /dev/null, in the
 * directory cwd_fd (-1: this one), through a reaper (spawn.c says why).
 * It leads its own process group, which is killed when it exits, when
 * limit_ms (> 0) passes (timed_out), and when the calling thread dies.
 * Returns 0, or an errno value when it could not be started. */
int sk__jit_run_process(const char *file, const char *const *argv, int cwd_fd, long long limit_ms, sk__jit_proc *r);

/* ---- cache_dir.c ---- */

/* The cache directory: its path (for messages) and the descriptor that it
 * was checked through and that every access goes through. */
typedef struct sk__jit_cache {
  char path[PATH_MAX];
  int fd;
} sk__jit_cache;

/* Locates, creates (0700), opens and checks the directory (see
 * sk__jit_cache_dir); the caller closes it. */
sk_status sk__jit_cache_open(sk__jit_cache *c);
void sk__jit_cache_close(sk__jit_cache *c);

/* A new private compile directory in c (0700, named after this process):
 * its name and an open descriptor. */
sk_status sk__jit_private_dir(const sk__jit_cache *c, char name[64], int *fd_out);
/* Empties and removes the private directory name in dfd, never following. */
bool sk__jit_remove_private_dir(int dfd, const char *name);
/* Removes the private directories of processes that are gone. */
void sk__jit_sweep_orphans(const sk__jit_cache *c);

/* Whether name is ours: <64 hex>.so / .c / .sha256, or a temporary
 * "tmp-*" with one of those suffixes (tmp says whether it is one). */
bool sk__jit_cache_file(const char *name, bool *tmp);

/* ---- cache.c ---- */

/* The cache key: SHA-256 of the body, the argument vector (with
 * placeholders for the file names, NUL-separated) and the compiler's path
 * and version; 64 hex digits. */
sk_status sk__jit_key(const char *body, const sk__jit_compiler *cc, const sk__options *o, char key[65]);

/* A loaded object shared by every super kernel with its key. */
typedef struct sk__jit_object sk__jit_object;

/* Finds the object for this body (loaded in this process, in the cache
 * directory, or compiled now) and takes a reference. scope names the super
 * kernel in log lines. */
sk_status sk__jit_acquire(const char *scope, const char *body, const sk__options *o, sk__jit_object **obj_out,
                          sk_jit_entry_fn *entry_out);
void sk__jit_release(sk__jit_object *obj);

#endif

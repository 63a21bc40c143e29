/* Shared between the files of src/jit/ only:
 *   codegen.c  plan -> C source
 *   compile.c  the compiler: identity, argument vector, running it
 *   cache.c    key, cache directory, loaded-object map
 *   jit.c      the library side: steps, env, callbacks, run */
#ifndef SK_JIT_JIT_INTERNAL_H
#define SK_JIT_JIT_INTERNAL_H

#include <limits.h>

#include "jit/jit.h"
#include "jit/jit_env.h"
#include "superkernel/plan.h"

/* ---- codegen.c ---- */

/* The source without its key line (the key is a hash of it). */
sk_status sk__jit_codegen(const sk__plan *plan, const sk_program *p, char **body_out);
/* body + the line exporting sk_jit_key, malloc'd; NULL when out of memory. */
char *sk__jit_with_key(const char *body, const char *key);

/* ---- compile.c ---- */

/* The compiler as invoked ($SK_CC, else "cc": one program, no arguments),
 * the file PATH lookup found (what is run), and what identifies it: that
 * file's resolved path and the first line of its --version. */
typedef struct sk__jit_compiler {
  char name[256];
  char exec[PATH_MAX];
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

/* Compiles src into the shared object out. On failure the message holds
 * the exit status and the compiler's diagnostics (trimmed). */
sk_status sk__jit_compile(const sk__jit_compiler *cc, const sk__options *o, const char *src, const char *out);

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

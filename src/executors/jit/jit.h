/* The JIT executor (docs/jit.md): each super kernel's plan becomes one C
 * file, compiled by the system compiler into a cached shared object and
 * loaded with dlopen; its entry runs a core's task list as straight-line
 * code. Anything that fails on the way leaves the step interpreted, with one
 * warning: a run never fails because the JIT did.
 *
 * This header is what the compiler and the tests use (runs go through
 * sk__executor_jit, executors.h); jit_internal.h is for the files of src/executors/jit/ only. */
#ifndef SK_JIT_JIT_H
#define SK_JIT_JIT_H

#include <stdint.h>

#include "program/program.h"

struct sk__plan;

/* The generated C source of a plan as it is compiled (the code and the
 * trailing cache-key line), after one comment line naming the scope and
 * its sub-kernels' nodes (the compiled text names op types only, so that
 * identical scopes share an object). *source_out is malloc'd.
 * Deterministic: the same plan (and compiler) gives the same bytes. */
sk_status sk__jit_source(const struct sk__plan *plan, const sk_program *p, char **source_out);

/* For every interpreted super-kernel step of p: generate, find in the
 * cache or compile, load; the step's executor becomes sk__executor_jit. A
 * step that cannot be JIT-compiled stays interpreted (one warning names
 * the cause). Never fails. Called by sk_compile for the JIT and AUTO
 * executors. */
void sk__program_jit(sk_program *p);
/* The same, calling progress (may be NULL) before each super kernel. */
void sk__program_jit_progress(sk_program *p, void (*progress)(const char *scope, size_t index, size_t total, void *user),
                              void *user);

/* The loaded entry of a JIT-compiled step (NULL for any other): steps
 * with the same code share one (the tests check it). */
void *sk__jit_entry_of(const sk__step *step);

/* The cache directory ($SK_CACHE_DIR, else $XDG_CACHE_HOME/superkernel,
 * else ~/.cache/superkernel), created 0700 when missing and refused when it
 * is a symlink, not a directory, owned by another user or writable by group
 * or others (the message names the directory and why). */
sk_status sk__jit_cache_dir(char *buf, size_t n);

/* Process-wide counters since start: compiles (the compiler ran and
 * succeeded), hits (an object loaded from the cache directory), reuses (an
 * object already loaded in this process served another super kernel). */
typedef struct sk__jit_counters {
  uint64_t compiles, hits, reuses;
} sk__jit_counters;
void sk__jit_stats(sk__jit_counters *out);

#endif

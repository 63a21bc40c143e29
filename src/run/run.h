/* Running a compiled program (src/run/): the run loop, binding, and runs
 * of a program with a run-time token count. */
#ifndef SK_RUN_RUN_H
#define SK_RUN_RUN_H

#include "program/run_context.h"
#include "runtime/team.h"

/* The data of a 0-byte tensor (a caller's NULL buffer, a program without
 * an arena): non-NULL, since kernels do pointer arithmetic on data and
 * NULL + 0 is undefined (run.c; bind.c hands it for empty buffers). */
extern unsigned char sk__empty_data[64];

/* run.c: runs the program in ctx with input i in in[i] and output j in
 * out[j] (checked by the caller); bound: in and out are ctx->bound (the
 * nodes are not rebound when the last run used them too). The caller makes
 * sure no other thread uses ctx meanwhile; fn names the entry point in
 * messages. While the program profiles, runs of all its contexts take
 * turns on its profile_lock. */
sk_status sk__run_context_run(sk_run_context *ctx, sk_team *team, void *const *in, void *const *out, bool bound,
                              const char *fn);

/* tokens.c: a run of ctx (of a program with a token count) at `tokens`
 * tokens; the buffers are checked (bind.c). */
sk_status sk__tokens_run(sk_run_context *ctx, sk_team *team, void *const *in, void *const *out, bool bound,
                         int64_t tokens, const char *fn);

#endif

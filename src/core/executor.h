/* Executors: names (public, executor.c) and the resolution of
 * SK_EXECUTOR_DEFAULT shared by sk_compile and sk_fused_kernel_create. */
#ifndef SK_CORE_EXECUTOR_H
#define SK_CORE_EXECUTOR_H

#include "superkernel.h"

/* requested, or for SK_EXECUTOR_DEFAULT $SK_EXECUTOR (eager, interp, jit,
 * auto; unset or empty: auto). An invalid $SK_EXECUTOR fails naming `who`. */
sk_status sk__executor_resolve(sk_executor requested, const char *who, sk_executor *out);

#endif

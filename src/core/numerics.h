/* The numerics contract a program is compiled with (sk_numerics in
 * superkernel.h; docs/ops.md, "Numerics"). */
#ifndef SK_CORE_NUMERICS_H
#define SK_CORE_NUMERICS_H

#include "superkernel.h"

/* The contract asked for resolved: SK_NUMERICS_UNSET becomes $SK_NUMERICS
 * ("default" or "amx") or else SK_NUMERICS_DEFAULT. A value outside the
 * enum, or a $SK_NUMERICS that names none, is SK_STATUS_INVALID_ARGUMENT
 * naming it (fn: the caller, for the message). */
sk_status sk__numerics_resolve(sk_numerics asked, const char *fn, sk_numerics *out);

#endif

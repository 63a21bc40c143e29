/* The one rule for every public struct that starts with `size_t
 * struct_size` (sk_team_config, sk_compile_config, sk_op_desc,
 * sk_kernel_desc): struct_size is sizeof the struct in the caller's header,
 * or 0 for this release's size (a zero-initialized struct). It must cover
 * the fields of the struct's first release (min) and must not exceed this
 * release's size (a newer header than the library: its fields would be
 * ignored silently). Fields past struct_size take their defaults. */
#ifndef SK_CORE_STRUCT_SIZE_H
#define SK_CORE_STRUCT_SIZE_H

#include <stddef.h>

#include "superkernel.h"

/* The effective size of a struct whose struct_size is `given`, or an error
 * naming fn, what ("cfg->struct_size") and the accepted range. */
sk_status sk__struct_size(const char *fn, const char *what, const char *type, size_t given, size_t min, size_t max,
                          size_t *size_out);

/* Whether `field` of `type` lies within an effective size. */
#define SK__HAS_FIELD(size, type, field) (offsetof(type, field) + sizeof(((type *)0)->field) <= (size))

#endif

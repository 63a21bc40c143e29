#ifndef SK_PROFILE_REPORT_H
#define SK_PROFILE_REPORT_H

#include "runtime/profile.h"

/* Writes dir/op_statistic.csv and dir/trace.json (creating dir). */
sk_status sk__profile_write(sk__profile *prof, const sk_program *p, const char *dir);

#endif

#ifndef SK_PROFILE_REPORT_H
#define SK_PROFILE_REPORT_H

#include <stdio.h>

#include "runtime/profile.h"

/* Writes dir/op_statistic.csv and dir/trace.json (creating dir). */
sk_status sk__profile_write(sk__profile *prof, const sk_program *p, const char *dir);

/* A report file is written as a temporary beside its name (0600, like
 * everything the library writes) and renamed over the name once complete:
 * never through a symbolic link, which would overwrite its target wherever
 * it points, and never half-written over a previous report. */
typedef struct sk__report_file {
  FILE *f;
  const char *path;
  char tmp[4300];
} sk__report_file;

sk_status sk__report_open(sk__report_file *r, const char *path);
/* Closes r->f and renames the temporary over the name (removed on failure). */
sk_status sk__report_commit(sk__report_file *r);

/* ---- op_statistic.csv (statistics.c) ---- */

/* The program's rows (sk_op_statistic, in first-launch order) from prof:
 * *rows_out (malloc'd; free it) and *n_out. */
sk_status sk__op_statistics(const sk__profile *prof, const sk_program *p, double tsc_per_us, sk_op_statistic **rows_out,
                            size_t *n_out);
/* The program's op_statistic.csv at path. */
sk_status sk__write_program_statistics(const sk__profile *prof, const sk_program *p, double tsc_per_us,
                                       const char *path);

#endif

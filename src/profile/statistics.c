/* op_statistic.csv: one row per op type and core type (fused scopes as
 * "SuperKernel"), the seed's columns. A program's rows come from its host
 * launch records; rows of several programs (a backend's) are merged here
 * too, so front ends hand rows around and never parse the file. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "profile/report.h"
#include "program/plan.h"
#include "program/program.h"

/* "AIC" for cube work, "AIV" for vector, "MIX_AIC" for both: the seed's
 * Core Type column. */
static const char *op_core_type(sk__kernel_kind kind) {
  return kind == SK_KERNEL_CUBE ? "AIC" : kind == SK_KERNEL_VECTOR ? "AIV" : "MIX_AIC";
}

/* The step's row key: an eager op's type and core type, or SuperKernel
 * with the super kernel's core type. */
static void step_key(const sk_program *p, int32_t step, const char **op_type, const char **core_type) {
  const sk__step *s = &p->steps[step];
  if (s->plan) {
    *op_type = "SuperKernel";
    *core_type = sk__sk_core_type(s->plan->type);
  } else {
    *op_type = p->nodes[s->node].def->type;
    *core_type = op_core_type(p->nodes[s->node].def->kind);
  }
}

/* Adds one launch (or a whole row) into rows[0..*n), by its key. */
static void add_row(sk_op_statistic *rows, size_t *n, const char *op_type, const char *core_type, int64_t count,
                    double total, double min, double max) {
  size_t i = 0;
  while (i < *n && !(strcmp(rows[i].op_type, op_type) == 0 && strcmp(rows[i].core_type, core_type) == 0)) i++;
  if (i == *n) {
    sk_op_statistic *r = &rows[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->op_type, sizeof r->op_type, "%s", op_type);
    snprintf(r->core_type, sizeof r->core_type, "%s", core_type);
    r->min_us = min;
  }
  sk_op_statistic *r = &rows[i];
  r->count += count;
  r->total_us += total;
  if (min < r->min_us) r->min_us = min;
  if (max > r->max_us) r->max_us = max;
}

sk_status sk__op_statistics(const sk__profile *prof, const sk_program *p, double tsc_per_us, sk_op_statistic **rows_out,
                            size_t *n_out) {
  const sk__prof_core *host = &prof->cores[prof->n_cores];
  sk_op_statistic *rows = calloc(p->n_steps + 1, sizeof *rows); /* a row per step at most */
  if (!rows) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "profile: out of memory");
  size_t n = 0;
  for (size_t r = 0; r < host->count; r++) {
    const sk__prof_record *rec = &host->records[r];
    if (rec->kind != SK_PROF_LAUNCH) continue;
    const char *op_type, *core_type;
    step_key(p, rec->step, &op_type, &core_type);
    double us = (double)(rec->t1 - rec->t0) / tsc_per_us;
    add_row(rows, &n, op_type, core_type, 1, us, us, us);
  }
  *rows_out = rows;
  *n_out = n;
  return SK_STATUS_OK;
}

/* Writes rows[0..n), merged by key, at path. */
static sk_status write_rows(const sk_op_statistic *in, size_t n_in, const char *path) {
  sk_op_statistic *rows = calloc(n_in + 1, sizeof *rows);
  if (!rows) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "profile: out of memory");
  size_t n = 0;
  double grand = 0;
  for (size_t i = 0; i < n_in; i++) {
    add_row(rows, &n, in[i].op_type, in[i].core_type, in[i].count, in[i].total_us, in[i].min_us, in[i].max_us);
    grand += in[i].total_us;
  }
  sk__report_file r;
  sk_status st = sk__report_open(&r, path);
  if (st != SK_STATUS_OK) {
    free(rows);
    return st;
  }
  fprintf(r.f, "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%%)\n");
  for (size_t i = 0; i < n; i++)
    fprintf(r.f, "%s,%s,%lld,%.3f,%.3f,%.3f,%.3f,%.2f\n", rows[i].op_type, rows[i].core_type,
            (long long)rows[i].count, rows[i].total_us, rows[i].min_us,
            rows[i].count ? rows[i].total_us / (double)rows[i].count : 0.0, rows[i].max_us,
            grand > 0 ? rows[i].total_us * 100.0 / grand : 0.0);
  free(rows);
  return sk__report_commit(&r);
}

sk_status sk__write_program_statistics(const sk__profile *prof, const sk_program *p, double tsc_per_us,
                                       const char *path) {
  sk_op_statistic *rows;
  size_t n;
  SK_RETURN_IF_ERROR(sk__op_statistics(prof, p, tsc_per_us, &rows, &n));
  sk_status st = write_rows(rows, n, path);
  free(rows);
  return st;
}

/* ---- public ---- */

sk_status sk_write_op_statistics(const char *path, const sk_op_statistic *rows, size_t n_rows) {
  sk__clear_error();
  if (!path) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_write_op_statistics: path is NULL");
  if (!rows && n_rows) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_write_op_statistics: rows is NULL");
  for (size_t i = 0; i < n_rows; i++) {
    const sk_op_statistic *r = &rows[i];
    if (!memchr(r->op_type, '\0', sizeof r->op_type) || !memchr(r->core_type, '\0', sizeof r->core_type) ||
        !r->op_type[0] || strpbrk(r->op_type, ",\n\r") || strpbrk(r->core_type, ",\n\r"))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "sk_write_op_statistics: row %zu: op_type and core_type must be non-empty, NUL-terminated "
                      "and free of commas and line breaks",
                      i);
    if (r->count < 0 || !(r->total_us >= 0) || !(r->min_us >= 0) || !(r->max_us >= 0))
      return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                      "sk_write_op_statistics: row %zu (%s): count and times must be >= 0 (count %lld, total %g)", i,
                      r->op_type, (long long)r->count, r->total_us);
  }
  return write_rows(rows, n_rows, path);
}

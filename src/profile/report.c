/* Writing a program's profile: op_statistic.csv (one row per op type and
 * core type, super kernels as "SuperKernel") and trace.json (Chrome Trace
 * Event format: one track per core plus the host's, a slice per sub-kernel
 * block, wait, barrier, eager block and launch). Opens in Perfetto or
 * chrome://tracing. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "program/program.h"
#include "runtime/profile.h"
#include "profile/report.h"
#include "program/plan.h"
#include "program/tokens.h"
#include "runtime/team.h"

/* "AIC" for cube work, "AIV" for vector, "MIX_AIC" for both: the seed's
 * Core Type column. */
static const char *op_core_type(sk__kernel_kind kind) {
  return kind == SK_KERNEL_CUBE ? "AIC" : kind == SK_KERNEL_VECTOR ? "AIV" : "MIX_AIC";
}

static sk_status make_dir(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "profile: directory name too long");
  for (char *p = path + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return sk__fail(SK_STATUS_SYSTEM_ERROR, "profile: cannot create %s: %s", path, strerror(errno));
      *p = '/';
    }
  if (mkdir(path, 0755) != 0 && errno != EEXIST)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "profile: cannot create %s: %s", path, strerror(errno));
  return SK_STATUS_OK;
}

typedef struct stat_row {
  const char *op_type, *core_type;
  long count;
  double total, min, max;
} stat_row;

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

/* A report file is written as a temporary beside its name (0600, like
 * everything the library writes) and renamed over the name once complete:
 * never through a symbolic link, which would overwrite its target wherever
 * it points, and never half-written over a previous report. */
typedef struct report_file {
  FILE *f;
  const char *path;
  char tmp[4300];
} report_file;

static sk_status report_open(report_file *r, const char *path) {
  r->f = NULL;
  r->path = path;
  struct stat lst;
  if (lstat(path, &lst) == 0 && !S_ISREG(lst.st_mode))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "profile: %s is %s, not a regular file: not overwritten", path,
                    S_ISLNK(lst.st_mode) ? "a symbolic link" : S_ISDIR(lst.st_mode) ? "a directory" : "a special file");
  if (snprintf(r->tmp, sizeof r->tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof r->tmp)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "profile: %s: path too long", path);
  int fd = mkstemp(r->tmp);
  if (fd >= 0 && !(r->f = fdopen(fd, "w"))) {
    close(fd);
    unlink(r->tmp);
  }
  if (!r->f) return sk__fail(SK_STATUS_SYSTEM_ERROR, "profile: cannot write %s: %s", path, strerror(errno));
  return SK_STATUS_OK;
}

static sk_status report_commit(report_file *r) {
  bool ok = !ferror(r->f);
  int err = ok ? 0 : EIO;
  if (fclose(r->f) != 0 && ok) ok = false, err = errno;
  if (ok && rename(r->tmp, r->path) != 0) ok = false, err = errno;
  if (ok) return SK_STATUS_OK;
  unlink(r->tmp);
  return sk__fail(SK_STATUS_SYSTEM_ERROR, "profile: cannot write %s: %s", r->path, strerror(err));
}

static sk_status write_statistics(const sk__profile *prof, const sk_program *p, double tsc_per_us, const char *path) {
  const sk__prof_core *host = &prof->cores[prof->n_cores];
  stat_row *rows = calloc(p->n_steps + 1, sizeof *rows);
  if (!rows) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "profile: out of memory");
  size_t n_rows = 0;
  double grand = 0;
  for (size_t r = 0; r < host->count; r++) {
    const sk__prof_record *rec = &host->records[r];
    if (rec->kind != SK_PROF_LAUNCH) continue;
    const char *op_type, *core_type;
    step_key(p, rec->step, &op_type, &core_type);
    size_t i = 0;
    while (i < n_rows && !(strcmp(rows[i].op_type, op_type) == 0 && strcmp(rows[i].core_type, core_type) == 0)) i++;
    if (i == n_rows) rows[n_rows++] = (stat_row){op_type, core_type, 0, 0, 1e300, 0};
    double us = (double)(rec->t1 - rec->t0) / tsc_per_us;
    rows[i].count++;
    rows[i].total += us;
    if (us < rows[i].min) rows[i].min = us;
    if (us > rows[i].max) rows[i].max = us;
    grand += us;
  }
  report_file r;
  sk_status st = report_open(&r, path);
  if (st != SK_STATUS_OK) {
    free(rows);
    return st;
  }
  FILE *f = r.f;
  fprintf(f, "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%%)\n");
  for (size_t i = 0; i < n_rows; i++)
    fprintf(f, "%s,%s,%ld,%.3f,%.3f,%.3f,%.3f,%.2f\n", rows[i].op_type, rows[i].core_type, rows[i].count, rows[i].total,
            rows[i].min, rows[i].total / (double)rows[i].count, rows[i].max,
            grand > 0 ? rows[i].total * 100.0 / grand : 0.0);
  free(rows);
  return report_commit(&r);
}

/* JSON string with quotes, backslashes and control characters escaped. */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static const char *step_name(const sk_program *p, int32_t step) {
  const sk__step *s = &p->steps[step];
  return s->plan ? s->plan->name : p->nodes[s->node].name;
}

static void write_event(FILE *f, const sk_program *p, const sk__prof_record *rec, int tid, double tsc_per_us,
                        uint64_t origin, bool *first) {
  const sk__step *s = &p->steps[rec->step];
  const char *name, *cat;
  switch (rec->kind) {
    case SK_PROF_RUN: name = p->nodes[s->plan->subs[rec->sub].node].name, cat = "subkernel"; break;
    case SK_PROF_WAIT: name = "wait", cat = "wait"; break;
    case SK_PROF_BARRIER: name = "barrier", cat = "wait"; break;
    case SK_PROF_BLOCK: name = p->nodes[s->node].name, cat = "eager"; break;
    default: name = step_name(p, rec->step), cat = s->plan ? "superkernel" : "launch"; break;
  }
  fprintf(f, "%s\n{\"name\":", *first ? "" : ",");
  *first = false;
  json_string(f, name);
  fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":", cat, tid,
          (double)(rec->t0 - origin) / tsc_per_us, (double)(rec->t1 - rec->t0) / tsc_per_us);
  json_string(f, step_name(p, rec->step));
  if (rec->kind == SK_PROF_RUN || rec->kind == SK_PROF_BLOCK) fprintf(f, ",\"block\":%lld", (long long)rec->block);
  if (rec->kind == SK_PROF_WAIT || rec->kind == SK_PROF_BARRIER) {
    fprintf(f, ",\"before\":");
    json_string(f, p->nodes[s->plan->subs[rec->sub].node].name);
  }
  fprintf(f, "}}");
}

static sk_status write_trace(const sk__profile *prof, const sk_program *p, double tsc_per_us, const char *path) {
  report_file out;
  SK_RETURN_IF_ERROR(report_open(&out, path));
  FILE *f = out.f;
  uint64_t origin = prof->tsc_origin;
  for (int c = 0; c <= prof->n_cores; c++)
    for (size_t r = 0; r < prof->cores[c].count; r++)
      if (prof->cores[c].records[r].t0 < origin) origin = prof->cores[c].records[r].t0;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  bool first = true;
  fprintf(f, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"superkernel\"}}");
  first = false;
  size_t dropped = 0;
  for (int c = 0; c <= prof->n_cores; c++) {
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":", c);
    char label[32];
    snprintf(label, sizeof label, c == prof->n_cores ? "host" : "core %d", c);
    json_string(f, label);
    fprintf(f, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}", c, c);
    for (size_t r = 0; r < prof->cores[c].count; r++)
      write_event(f, p, &prof->cores[c].records[r], c, tsc_per_us, origin, &first);
    dropped += prof->cores[c].dropped;
  }
  fprintf(f, "\n],\"otherData\":{\"dropped_records\":%zu,\"tsc_per_us\":%.3f}}\n", dropped, tsc_per_us);
  return report_commit(&out);
}

sk_status sk__profile_write(sk__profile *prof, const sk_program *p, const char *dir) {
  SK_RETURN_IF_ERROR(make_dir(dir));
  double tsc_per_us = sk__profile_tsc_per_us(prof);
  char path[4200];
  snprintf(path, sizeof path, "%s/op_statistic.csv", dir);
  SK_RETURN_IF_ERROR(write_statistics(prof, p, tsc_per_us, path));
  snprintf(path, sizeof path, "%s/trace.json", dir);
  SK_RETURN_IF_ERROR(write_trace(prof, p, tsc_per_us, path));
  size_t dropped = 0;
  for (int c = 0; c <= prof->n_cores; c++) dropped += prof->cores[c].dropped;
  if (dropped)
    sk__log(SK_LOG_WARN, "profile: %zu records dropped (budget %d per core); the trace is incomplete", dropped,
            SK_PROF_RECORDS_PER_CORE);
  return SK_STATUS_OK;
}

/* ---- public ---- */

sk_status sk_program_write_profile(sk_program *p, const char *dir) {
  sk__clear_error();
  if (!p || !dir) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_write_profile: %s is NULL", !p ? "program" : "dir");
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_program_write_profile"));
  p = sk__tokens_last_run(p); /* a run-time token count: the bucket run last */
  sk__fork_mutex_lock(&p->profile_lock); /* a run of any context may be recording */
  sk_status st = p->profile ? sk__profile_write(p->profile, p, dir)
                            : sk__fail(SK_STATUS_INVALID_STATE,
                                       "sk_program_write_profile: nothing recorded (compile with cfg.profile = 1, or "
                                       "a scope with profiling=1, and run the program)");
  sk__fork_mutex_unlock(&p->profile_lock);
  return st;
}

void sk_program_reset_profile(sk_program *p) {
  if (!p) return;
  if (sk__refuse_in_block("sk_program_reset_profile") != SK_STATUS_OK) {
    sk__log(SK_LOG_WARN, "%s", sk_last_error()); /* no status to return it in */
    return;
  }
  const sk__token_buckets *b = p->tokens;
  for (size_t i = 0; b && i < b->n; i++) sk_program_reset_profile(b->programs[i]);
  sk__fork_mutex_lock(&p->profile_lock);
  if (p->profile) sk__profile_reset(p->profile);
  sk__fork_mutex_unlock(&p->profile_lock);
}

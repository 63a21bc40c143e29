/* Writing a program's profile: op_statistic.csv (profile/statistics.c) and
 * trace.json (Chrome Trace Event format: one track per core plus the
 * host's, a slice per sub-kernel block, wait, barrier, eager block and
 * launch). Opens in Perfetto or chrome://tracing. */
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

/* (report.h) */
sk_status sk__report_open(sk__report_file *r, const char *path) {
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

sk_status sk__report_commit(sk__report_file *r) {
  bool ok = !ferror(r->f);
  int err = ok ? 0 : EIO;
  if (fclose(r->f) != 0 && ok) ok = false, err = errno;
  if (ok && rename(r->tmp, r->path) != 0) ok = false, err = errno;
  if (ok) return SK_STATUS_OK;
  unlink(r->tmp);
  return sk__fail(SK_STATUS_SYSTEM_ERROR, "profile: cannot write %s: %s", r->path, strerror(err));
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
  sk__report_file out;
  SK_RETURN_IF_ERROR(sk__report_open(&out, path));
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
  return sk__report_commit(&out);
}

sk_status sk__profile_write(sk__profile *prof, const sk_program *p, const char *dir) {
  SK_RETURN_IF_ERROR(make_dir(dir));
  double tsc_per_us = sk__profile_tsc_per_us(prof);
  char path[4200];
  snprintf(path, sizeof path, "%s/op_statistic.csv", dir);
  SK_RETURN_IF_ERROR(sk__write_program_statistics(prof, p, tsc_per_us, path));
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

sk_status sk_program_op_statistics(sk_program *p, sk_op_statistic *rows, size_t capacity, size_t *n_rows) {
  sk__clear_error();
  if (!p || !n_rows || (!rows && capacity))
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_program_op_statistics: %s is NULL",
                    !p ? "program" : !n_rows ? "n_rows" : "rows (with a capacity)");
  SK_RETURN_IF_ERROR(sk__refuse_in_block("sk_program_op_statistics"));
  p = sk__tokens_last_run(p);
  sk__fork_mutex_lock(&p->profile_lock);
  sk_op_statistic *all = NULL;
  size_t n = 0;
  sk_status st = p->profile ? sk__op_statistics(p->profile, p, sk__profile_tsc_per_us(p->profile), &all, &n)
                            : sk__fail(SK_STATUS_INVALID_STATE,
                                       "sk_program_op_statistics: nothing recorded (compile with cfg.profile = 1, or "
                                       "a scope with profiling=1, and run the program)");
  sk__fork_mutex_unlock(&p->profile_lock);
  if (st != SK_STATUS_OK) return st;
  if (n && capacity) memcpy(rows, all, (n < capacity ? n : capacity) * sizeof *rows);
  free(all);
  *n_rows = n;
  return SK_STATUS_OK;
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

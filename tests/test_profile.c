/* Profiling: op_statistic.csv rows and counts, totals, the records of a
 * profiled super kernel, results unchanged by profiling, and the trace
 * written for tests/check_trace.py (run next by ctest) to parse. */
#include <math.h>
#include <unistd.h>
#include <stdbool.h>

#include "program/program.h"
#include "harness.h"
#include "runtime/profile.h"
#include "reference_runner.h"
#include "program/plan.h"

static sk_team *team;
static const char *out_dir = "profile_test_out";

static sk_value unary(sk_graph *g, const char *type, const char *name, sk_value x) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_op_desc d = {.op = type, .name = name, .inputs = in, .n_inputs = 1};
  sk_value y = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  return y;
}

/* x -> [scope sk: mm, square] -> square -> cast -> y */
static sk_graph *model(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x, w, h;
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP32, 2, (int64_t[]){128, 64}, &x));
  CHECK_OK(sk_graph_add_input(g, "w", SK_FP32, 2, (int64_t[]){64, 96}, &w));
  CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_op_desc mm = {.op = "grouped_matmul", .name = "mm", .inputs = in, .n_inputs = 2};
  CHECK_OK(sk_graph_add_op(g, &mm, &h, 1, NULL));
  sk_value s = unary(g, "square", "sq_in", h);
  CHECK_OK(sk_graph_end_scope(g));
  sk_value t = unary(g, "square", "sq_out", s);
  sk_op_input cin[] = {{"x", &t, 1}};
  sk_attr to16[] = {SK_ATTR_INT("dtype", SK_FP16)};
  sk_op_desc cast = {.op = "cast", .name = "cast", .inputs = cin, .n_inputs = 1, .attrs = to16, .n_attrs = 1};
  sk_value y;
  CHECK_OK(sk_graph_add_op(g, &cast, &y, 1, NULL));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  return g;
}

static sk_program *compile(sk_graph *g, const char *options, int profile, sk_executor executor) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .default_options = options, .profile = profile,
                           .executor = executor};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

/* Reads op_statistic.csv: the header and each row's type, core type, count,
 * total and ratio. */
typedef struct csv_row {
  char op[64], core[16];
  long count;
  double total, min, avg, max, ratio;
} csv_row;

static int read_csv(const char *path, csv_row *rows, int max, char *header, size_t header_size) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  if (!fgets(header, (int)header_size, f)) n = -1;
  char line[512];
  while (n >= 0 && n < max && fgets(line, sizeof line, f)) {
    csv_row *r = &rows[n];
    if (sscanf(line, "%63[^,],%15[^,],%ld,%lf,%lf,%lf,%lf,%lf", r->op, r->core, &r->count, &r->total, &r->min, &r->avg,
               &r->max, &r->ratio) == 8)
      n++;
  }
  fclose(f);
  return n;
}

static void test_statistics(void) {
  sk_graph *g = model();
  sk_program *p = compile(g, "profiling=1", 1, SK_EXECUTOR_INTERP);
  enum { RUNS = 7 };
  rr_buffers b;
  CHECK(rr_alloc(p, &b, -1, 1, 1));
  CHECK_FAILS(sk_program_write_profile(p, out_dir), SK_STATUS_INVALID_STATE, "nothing recorded");
  for (int r = 0; r < RUNS; r++) CHECK_OK(sk_program_run(p, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs));
  CHECK_OK(sk_program_write_profile(p, out_dir));
  csv_row rows[8];
  char header[256], path[256];
  snprintf(path, sizeof path, "%s/op_statistic.csv", out_dir);
  int n = read_csv(path, rows, 8, header, sizeof header);
  CHECK(strcmp(header, "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n") == 0);
  CHECK_MSG(n == 3, "%d rows", n); /* SuperKernel, square, cast */
  double total = 0, ratio = 0;
  for (int i = 0; i < n; i++) {
    total += rows[i].total;
    ratio += rows[i].ratio;
    CHECK(rows[i].min <= rows[i].avg + 1e-3 && rows[i].avg <= rows[i].max + 1e-3);
    CHECK(rows[i].total > 0 && rows[i].count > 0);
    if (strcmp(rows[i].op, "SuperKernel") == 0) CHECK(rows[i].count == RUNS && strcmp(rows[i].core, "MIX_AIC") == 0);
    if (strcmp(rows[i].op, "square") == 0) CHECK(rows[i].count == RUNS && strcmp(rows[i].core, "AIV") == 0);
    if (strcmp(rows[i].op, "cast") == 0) CHECK(rows[i].count == RUNS);
  }
  CHECK_MSG(ratio > 99.9 && ratio < 100.1, "ratios add up to %g", ratio);
  (void)total;
  /* A report never goes through a symbolic link at its name (it would
   * overwrite the link's target) and a refused write keeps the old report
   * (issue 15, item 7). */
  char target[300], tpath[300];
  snprintf(target, sizeof target, "%s/elsewhere.txt", out_dir);
  snprintf(tpath, sizeof tpath, "%s/trace.json", out_dir);
  FILE *tf = fopen(target, "w");
  CHECK(tf && fputs("keep\n", tf) >= 0 && fclose(tf) == 0);
  CHECK(unlink(tpath) == 0 && symlink("elsewhere.txt", tpath) == 0); /* beside it: a link that resolves */
  CHECK_FAILS(sk_program_write_profile(p, out_dir), SK_STATUS_INVALID_ARGUMENT, "trace.json", "a symbolic link",
              "not overwritten");
  char kept[16] = "";
  tf = fopen(target, "r");
  CHECK_MSG(tf && fgets(kept, sizeof kept, tf) && strcmp(kept, "keep\n") == 0, "the link's target was written");
  if (tf) fclose(tf);
  CHECK(unlink(tpath) == 0 && unlink(target) == 0);
  /* Sub-kernel records: every block of mm and sq_in on some core, each run. */
  const sk__profile *prof = p->profile;
  size_t runs = 0, launches = 0;
  for (int c = 0; c <= prof->n_cores; c++)
    for (size_t r = 0; r < prof->cores[c].count; r++) {
      const sk__prof_record *rec = &prof->cores[c].records[r];
      CHECK(rec->t0 <= rec->t1);
      runs += rec->kind == SK_PROF_RUN;
      launches += rec->kind == SK_PROF_LAUNCH;
    }
  const sk__plan *plan = NULL;
  for (size_t s = 0; s < p->n_steps; s++)
    if (p->steps[s].plan) plan = p->steps[s].plan;
  CHECK(plan && runs == (size_t)RUNS * (size_t)(plan->subs[0].n_blocks + plan->subs[1].n_blocks));
  CHECK(launches == (size_t)RUNS * p->n_steps);
  sk_program_reset_profile(p);
  CHECK(p->profile->cores[0].count == 0);
  rr_free(&b);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* The rows as records (sk_program_op_statistics) are the file's, and rows
 * of several programs merge into one file (sk_write_op_statistics): what a
 * front end uses instead of parsing the csv. */
static void test_rows_and_merge(void) {
  sk_graph *g = model();
  sk_program *p = compile(g, "profiling=1", 1, SK_EXECUTOR_INTERP);
  rr_buffers b;
  CHECK(rr_alloc(p, &b, -1, 1, 1));
  size_t n = 99;
  CHECK_FAILS(sk_program_op_statistics(p, NULL, 0, &n), SK_STATUS_INVALID_STATE, "nothing recorded");
  for (int r = 0; r < 4; r++) CHECK_OK(sk_program_run(p, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs));
  CHECK_OK(sk_program_op_statistics(p, NULL, 0, &n)); /* the count alone */
  CHECK_MSG(n == 3, "%zu rows", n);
  sk_op_statistic rows[6], one[1];
  size_t n1 = 0;
  CHECK_OK(sk_program_op_statistics(p, one, 1, &n1)); /* too little room: the first, and the count */
  CHECK(n1 == 3);
  CHECK_OK(sk_program_op_statistics(p, rows, 3, &n));
  CHECK(n == 3 && strcmp(one[0].op_type, rows[0].op_type) == 0 && one[0].count == rows[0].count);
  CHECK_OK(sk_program_write_profile(p, out_dir));
  csv_row file[8];
  char header[256], path[256];
  snprintf(path, sizeof path, "%s/op_statistic.csv", out_dir);
  CHECK(read_csv(path, file, 8, header, sizeof header) == 3);
  for (size_t i = 0; i < 3; i++)
    CHECK_MSG(strcmp(file[i].op, rows[i].op_type) == 0 && strcmp(file[i].core, rows[i].core_type) == 0 &&
                  file[i].count == rows[i].count && fabs(file[i].total - rows[i].total_us) <= 1e-3 + 1e-3 * rows[i].total_us,
              "row %zu: file %s %ld vs record %s %lld", i, file[i].op, file[i].count, rows[i].op_type,
              (long long)rows[i].count);
  /* Two programs' rows: one key merged (counts and totals added, min and
   * max of both), ratios over the whole. */
  memcpy(&rows[3], &rows[0], 3 * sizeof rows[0]);
  rows[3].min_us = rows[0].min_us / 2, rows[3].max_us = rows[0].max_us * 2;
  snprintf(path, sizeof path, "%s/merged.csv", out_dir);
  CHECK_OK(sk_write_op_statistics(path, rows, 6));
  CHECK(read_csv(path, file, 8, header, sizeof header) == 3);
  CHECK(strcmp(file[0].op, rows[0].op_type) == 0 && file[0].count == 2 * rows[0].count);
  CHECK(fabs(file[0].total - 2 * rows[0].total_us) < 2e-3 && fabs(file[0].min - rows[3].min_us) < 1e-3 &&
        fabs(file[0].max - rows[3].max_us) < 1e-3);
  double ratio = file[0].ratio + file[1].ratio + file[2].ratio;
  CHECK_MSG(ratio > 99.9 && ratio < 100.1, "ratios add up to %g", ratio);
  /* Bad rows are named, and nothing is written. */
  sk_op_statistic bad = rows[0];
  snprintf(bad.op_type, sizeof bad.op_type, "a,b");
  CHECK_FAILS(sk_write_op_statistics(path, &bad, 1), SK_STATUS_INVALID_ARGUMENT, "row 0", "commas");
  bad = rows[0];
  memset(bad.core_type, 'x', sizeof bad.core_type);
  CHECK_FAILS(sk_write_op_statistics(path, &bad, 1), SK_STATUS_INVALID_ARGUMENT, "row 0", "NUL-terminated");
  bad = rows[0], bad.count = -1;
  CHECK_FAILS(sk_write_op_statistics(path, &bad, 1), SK_STATUS_INVALID_ARGUMENT, "row 0", ">= 0");
  CHECK_FAILS(sk_write_op_statistics(NULL, rows, 1), SK_STATUS_INVALID_ARGUMENT, "path is NULL");
  CHECK_FAILS(sk_write_op_statistics(path, NULL, 1), SK_STATUS_INVALID_ARGUMENT, "rows is NULL");
  CHECK_FAILS(sk_program_op_statistics(p, NULL, 2, &n), SK_STATUS_INVALID_ARGUMENT, "rows");
  CHECK_FAILS(sk_program_op_statistics(NULL, rows, 2, &n), SK_STATUS_INVALID_ARGUMENT, "program is NULL");
  CHECK(unlink(path) == 0);
  rr_free(&b);
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

/* Profiling changes nothing in the results. */
static void test_results_unchanged(void) {
  sk_graph *g = model();
  sk_program *plain = compile(g, NULL, 0, SK_EXECUTOR_INTERP), *profiled = compile(g, "profiling=1", 1, SK_EXECUTOR_INTERP);
  sk_program *eager = compile(g, NULL, 1, SK_EXECUTOR_EAGER);
  rr_buffers a, b, c;
  CHECK(rr_alloc(plain, &a, -1, 1, 5) && rr_alloc(profiled, &b, -1, 1, 5) && rr_alloc(eager, &c, -1, 1, 5));
  CHECK_OK(sk_program_run(plain, team, a.inputs, a.n_inputs, a.outputs, a.n_outputs));
  CHECK_OK(sk_program_run(profiled, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs));
  CHECK_OK(sk_program_run(eager, team, c.inputs, c.n_inputs, c.outputs, c.n_outputs));
  CHECK(memcmp(a.outputs[0].data, b.outputs[0].data, a.outputs[0].bytes) == 0);
  CHECK(memcmp(a.outputs[0].data, c.outputs[0].data, a.outputs[0].bytes) == 0);
  CHECK(plain->profile == NULL); /* nothing allocated or recorded when off */
  rr_free(&a), rr_free(&b), rr_free(&c);
  sk_program_destroy(plain), sk_program_destroy(profiled), sk_program_destroy(eager);
  sk_graph_destroy(g);
}

/* Past the per-core budget, records are counted, not written. */
static void test_overflow_counted(void) {
  sk__profile *prof = sk__profile_create(1);
  CHECK(prof != NULL);
  if (!prof) return;
  for (int i = 0; i < SK_PROF_RECORDS_PER_CORE + 10; i++) sk__profile_add(prof, 0, SK_PROF_RUN, 0, 0, i, 1, 2);
  CHECK(prof->cores[0].count == SK_PROF_RECORDS_PER_CORE && prof->cores[0].dropped == 10);
  sk__profile_destroy(prof);
}

int main(int argc, char **argv) {
  if (argc > 1) out_dir = argv[1];
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 2};
  if (sk_team_create(&cfg, &team) != SK_STATUS_OK) return 1;
  static const harness_case cases[] = {TEST_CASE(test_statistics), TEST_CASE(test_rows_and_merge), TEST_CASE(test_results_unchanged),
                                       TEST_CASE(test_overflow_counted)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  /* Leave a profile of a fused run for check_trace.py. */
  sk_graph *g = model();
  sk_program *p = compile(g, "profiling=1", 1, SK_EXECUTOR_DEFAULT);
  rr_buffers b;
  if (p && rr_alloc(p, &b, -1, 1, 2)) {
    for (int r = 0; r < 3; r++) sk_program_run(p, team, b.inputs, b.n_inputs, b.outputs, b.n_outputs);
    if (sk_program_write_profile(p, out_dir) != SK_STATUS_OK) rc = 1;
    rr_free(&b);
  }
  sk_program_destroy(p);
  sk_graph_destroy(g);
  sk_team_destroy(team);
  return rc;
}

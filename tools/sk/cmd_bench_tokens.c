/*
 * sk bench SCENARIO:tmax=N --tokens LIST — what one program for every token
 * count costs: the program compiled once for up to N tokens (token buckets,
 * superkernel.h) against a program compiled for exactly T, for each T of
 * LIST and team size. Both are JIT-compiled from the same weights (the
 * session's values) and run on the same inputs (the dynamic program's
 * first T rows), their outputs are checked bitwise equal after a warm-up
 * batch, then they run interleaved in batches of BATCH until each has run
 * --iters times (a tenth of that, at least 5, from 256 tokens on); the
 * medians, p10/p90 and dynamic/exact are printed.
 */
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "sk.h"

enum { BATCH = 10 };
static const char synopsis[] = "bench SCENARIO:tmax=N --tokens LIST [options]";

/* scenario with its token parts (tN, tmax=N) replaced by tT. */
static void exact_name(const char *scenario, int64_t tokens, char *out, size_t size) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", scenario);
  size_t len = 0;
  out[0] = '\0';
  for (char *part = strtok(buf, ":"); part; part = strtok(NULL, ":")) {
    bool token_part = strncmp(part, "tmax=", 5) == 0 || (part[0] == 't' && part[1] >= '0' && part[1] <= '9');
    if (!token_part) len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s", len ? ":" : "", part);
  }
  snprintf(out + len, len < size ? size - len : 0, ":t%lld", (long long)tokens);
}

static double quantile(const double *sorted, int n, double p) {
  double pos = p * (double)(n - 1);
  int lo = (int)pos;
  return lo >= n - 1 ? sorted[n - 1] : sorted[lo] + (pos - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

typedef struct timed {
  sk_program *p;
  skm_io io;
  double *t;
} timed;

static int run_once(sk_session *s, timed *x, double *dt, const char *what) {
  double t0 = cli_now_us();
  sk_status st = sk_program_run(x->p, s->team, x->io.in_buffers, x->io.n_inputs, x->io.out_buffers, x->io.n_outputs);
  *dt = cli_now_us() - t0;
  if (st == SK_STATUS_OK) return SK_EXIT_OK;
  fprintf(stderr, "sk bench: running the %s program: %s: %s\n", what, sk_status_string(st), sk_last_error());
  return SK_EXIT_FAIL;
}

static bool outputs_equal(const skm_io *a, const skm_io *b) {
  for (size_t o = 0; o < a->n_outputs; o++)
    if (a->outputs[o].bytes != b->outputs[o].bytes ||
        memcmp(a->outputs[o].data, b->outputs[o].data, a->outputs[o].bytes) != 0) {
      fprintf(stderr, "sk bench: output %s of the dynamic program DIFFERS from the exact one\n", a->outputs[o].name);
      return false;
    }
  return true;
}

/* The dynamic program at T against the exact one: one table row. */
static int compare_at(sk_session *s, sk_program *dynamic, const char *scenario, int64_t tokens, long iters,
                      const char *options, bool *equal) {
  char name[256], msg[1024];
  exact_name(scenario, tokens, name, sizeof name);
  timed x[2] = {{.p = dynamic}, {0}};
  s->build_model = name;
  double c0 = cli_now_us();
  int rc = sk_session_compile(s, "bench", SK_EXECUTOR_JIT, options, 0, &x[1].p, NULL);
  double compile_ms = (cli_now_us() - c0) / 1e3;
  s->build_model = NULL;
  /* Prefill-sized counts run a tenth as often (at least 5), as sk bench's prefill. */
  int n = tokens >= 256 ? (int)(iters / 10 > 5 ? iters / 10 : iters < 5 ? iters : 5) : (int)iters;
  int warm = n < BATCH ? n : BATCH;
  for (int k = 0; k < 2 && rc == SK_EXIT_OK; k++) {
    if (skm_io_alloc_at(x[k].p, tokens, &x[k].io, msg, sizeof msg) != SK_STATUS_OK) {
      fprintf(stderr, "sk bench: %s\n", msg);
      rc = SK_EXIT_FAIL;
    }
    if (rc == SK_EXIT_OK) rc = sk_session_fill_inputs(s, "bench", &x[k].io);
    if (rc == SK_EXIT_OK && !(x[k].t = malloc(sizeof(double) * (size_t)n))) rc = SK_EXIT_FAIL;
  }
  static const char *const what[2] = {"dynamic", "exact"};
  double dt;
  for (int r = 0; r < warm && rc == SK_EXIT_OK; r++) /* warm-up */
    for (int k = 0; k < 2 && rc == SK_EXIT_OK; k++) rc = run_once(s, &x[k], &dt, what[k]);
  if (rc == SK_EXIT_OK) *equal = outputs_equal(&x[0].io, &x[1].io);
  for (int r0 = 0; r0 < n && rc == SK_EXIT_OK; r0 += BATCH)
    for (int k = 0; k < 2 && rc == SK_EXIT_OK; k++)
      for (int r = r0; r < r0 + BATCH && r < n && rc == SK_EXIT_OK; r++) rc = run_once(s, &x[k], &x[k].t[r], what[k]);
  if (rc == SK_EXIT_OK) {
    double med[2];
    for (int k = 0; k < 2; k++) med[k] = cli_median(x[k].t, n);
    printf("%-34s %7d %6lld  %9.1f [%7.1f, %7.1f]  %9.1f [%7.1f, %7.1f]  %9.3f  %-13s  %8.0f\n", scenario,
           sk_team_num_cores(s->team), (long long)tokens, med[0], quantile(x[0].t, n, 0.1), quantile(x[0].t, n, 0.9),
           med[1], quantile(x[1].t, n, 0.1), quantile(x[1].t, n, 0.9), med[0] / med[1],
           *equal ? "bitwise equal" : "DIFFER", compile_ms);
    fflush(stdout);
  }
  for (int k = 0; k < 2; k++) {
    free(x[k].t);
    skm_io_free(&x[k].io);
  }
  sk_program_destroy(x[1].p);
  return rc;
}

static int bench_scenario(const char *scenario, int threads, long iters, const char *options, const int64_t *tokens,
                          int n_tokens, bool *all_equal) {
  int rc = cli_check_tokens("bench", synopsis, scenario, tokens, n_tokens);
  if (rc != SK_EXIT_OK) return rc;
  sk_session s;
  rc = sk_session_open_team(&s, "bench", synopsis, scenario, options, threads);
  if (rc != SK_EXIT_OK) return rc;
  double c0 = cli_now_us();
  rc = sk_session_compile(&s, "bench", SK_EXECUTOR_JIT, options, 0, &s.program, NULL);
  if (rc == SK_EXIT_OK) {
    sk_program_stats st = {.struct_size = sizeof st};
    sk_program_get_stats(s.program, &st);
    printf("%s on %d cores: one program for 1..%lld tokens, %zu token buckets, compiled in %.0f ms\n", scenario,
           sk_team_num_cores(s.team), (long long)st.max_tokens, st.n_token_buckets, (cli_now_us() - c0) / 1e3);
  }
  for (int k = 0; k < n_tokens && rc == SK_EXIT_OK; k++) {
    bool equal = false;
    rc = compare_at(&s, s.program, scenario, tokens[k], iters, options, &equal);
    *all_equal = *all_equal && equal;
  }
  sk_session_close(&s);
  return rc;
}

int sk_bench_tokens(const char *const *scenarios, int n_scenarios, const int *threads, int n_threads, long iters,
                    const char *options, const int64_t *tokens, int n_tokens) {
  printf("one program for every token count (dynamic) vs a program compiled for exactly T (exact), both JIT\n");
  printf("times in us: median [p10, p90] of %ld runs each (from 256 tokens: a tenth, at least 5), interleaved in "
         "batches of %d after a warm-up batch\n", iters, BATCH);
  printf("%-34s %7s %6s  %9s %-18s  %9s %-18s  %9s  %-13s  %8s\n", "scenario", "threads", "T", "dynamic",
         "[p10, p90]", "exact", "[p10, p90]", "dyn/exact", "outputs", "exact compile ms");
  bool equal = true;
  int rc = SK_EXIT_OK;
  for (int i = 0; i < n_scenarios && rc == SK_EXIT_OK; i++)
    for (int k = 0; k < n_threads && rc == SK_EXIT_OK; k++)
      rc = bench_scenario(scenarios[i], threads[k], iters, options, tokens, n_tokens, &equal);
  if (rc != SK_EXIT_OK) return rc;
  return equal ? SK_EXIT_OK : SK_EXIT_FAIL;
}

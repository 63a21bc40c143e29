/*
 * sk bench [SCENARIO ...] [...] — super kernels off vs on, as
 * bench/bench_superkernel does it: for each scenario and team size, compile
 * the model three times (eager, interp, jit), check the three programs'
 * outputs bitwise equal once, time them interleaved in batches of BATCH
 * consecutive runs each (a first batch warms up) and report each mode's
 * median, p10 and p90 and the ratios between them, from the same run.
 */
#include <stdlib.h>
#include <string.h>

#include "attention_layer.h"
#include "bench_machine.h"
#include "blas_floor.h"
#include "moe_layer.h"
#include "read_bandwidth.h"
#include "models.h"
#include "sk.h"

static const char synopsis[] = "bench [SCENARIO ...] [options]";
static const char full_synopsis[] =
    "bench [SCENARIO ...] [--iters N] [--threads LIST] [--json] [--options STRING] [--no-floor]\n"
    "                [--weights-as-inputs] [--weights DIR [--layer N]] [--tokens LIST]";

enum { N_MODES = 3, BATCH = 10, MAX_SCENARIOS = 32, MAX_THREADS = 32 };
static const sk_executor mode_executor[N_MODES] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
static const char *const mode_name[N_MODES] = {"eager", "interp", "jit"};
static const char *const default_scenarios[] = {"seed", "decode", "prefill", "example02"};

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Compiles each SCENARIO three times for a team of each size in --threads: super\n"
         "kernels off (eager: every op its own launch) and on (each scope one launch,\n"
         "interpreted and JIT-compiled). Runs them interleaved in batches of %d consecutive\n"
         "runs each: a first batch warms up and is not recorded, after it the outputs of\n"
         "the three are checked bitwise equal; then batches follow until each mode has run\n"
         "--iters times, so machine noise hits the modes alike. Prints each mode's median, p10 and\n"
         "p90 time in microseconds and the ratios of the medians (< 1: the first is\n"
         "faster): interp/eager, jit/eager, jit/interp.\n\n"
         "Beside them, the GEMM floor: OpenBLAS cblas_sgemm (loaded at run time when\n"
         "libopenblas.so.0 is installed) on the scenario's matrix products in fp32 at the\n"
         "same thread count, timed in the same run after the modes, and jit/floor. The\n"
         "header and the JSON name the CPU, OpenBLAS's version and the core whose\n"
         "kernels it runs. A core older than the CPU (e.g. Prescott on an AVX-512 CPU)\n"
         "makes sk run again with the right OPENBLAS_CORETYPE, said on stderr, also over\n"
         "one from the environment (then without OPENBLAS_L2_SIZE). A floor on a core that\n"
         "still does not match the CPU (a build for one core) is printed without ratios.\n\n"
         "  SCENARIO           %s\n"
         "                     (default: seed decode prefill example02)\n"
         "  --iters N          timed runs of each mode (default 200); prefill runs N/10, at\n"
         "                     least 5 (N when N < 5)\n"
         "  --threads LIST     comma-separated team sizes, 'all' for every available core\n"
         "                     (default: 1,all; all is $SK_NUM_THREADS when set)\n"
         "  --json             print one JSON document instead of the table\n"
         "  --options STRING   super-kernel options for every scope (see 'sk options')\n"
         CLI_NUMERICS_USAGE("")
         "  --no-floor         skip the OpenBLAS floor\n"
         "  --weights-as-inputs  the weights are program inputs bound at every run;\n"
         "                     default: graph constants, packed once at compile\n"
         CLI_WEIGHTS_USAGE("")
         "  --tokens LIST      for SCENARIOs with a run-time token count (moe-layer:...:tmax=N):\n"
         "                     the one program compiled for up to N tokens against a program\n"
         "                     compiled for exactly T, for each T of LIST (JIT, interleaved,\n"
         "                     outputs checked bitwise equal): dynamic/exact per T\n"
         "  -h, --help         this help\n\n"
         "Exit status 1 also when the modes' outputs differ (the times are still printed).\n\n"
         "A whole model from a checkpoint directory, llama-bench's pp and tg tests:\n"
         "'sk bench model DIR -p 512 -n 128 -t N -r 5' (see 'sk bench model --help').\n",
         full_synopsis, BATCH, skm_model_list());
}

typedef struct bench_args {
  const char *scenarios[MAX_SCENARIOS];
  int n_scenarios;
  int threads[MAX_THREADS]; /* 0 = every available core */
  int n_threads;
  long iters;
  bool json, no_floor, weights_as_inputs;
  const char *options;
  cli_weights weights;
  cli_tokens tokens;
} bench_args;

/* Parses "1,2,all" into a->threads. */
static int parse_threads(const char *text, bench_args *a) {
  a->n_threads = 0;
  const char *p = text;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char item[32];
    if (n == 0 || n >= sizeof item || a->n_threads >= MAX_THREADS)
      return cli_usage_error("bench", synopsis,
                             "--threads: expected a comma-separated list of at most %d team sizes "
                             "(1..1024 or 'all'), got '%s'",
                             MAX_THREADS, text);
    memcpy(item, p, n);
    item[n] = '\0';
    long v;
    if (strcmp(item, "all") == 0) v = 0;
    else {
      char *e;
      v = strtol(item, &e, 10);
      if (*e != '\0' || v < 1 || v > 1024)
        return cli_usage_error("bench", synopsis,
                               "--threads: expected team sizes in 1..1024 or 'all', comma-separated, got '%s'", text);
    }
    a->threads[a->n_threads++] = (int)v;
    if (!end) break;
    p = end + 1;
  }
  return SK_EXIT_OK;
}

static bool threads_option(const char *cmd, const char *syn, const char *value, void *dest) {
  (void)cmd, (void)syn;
  return parse_threads(value, dest) == SK_EXIT_OK;
}

static int parse(int argc, char **argv, bench_args *a) {
  memset(a, 0, sizeof *a);
  a->iters = 200;
  const cli_arg opts[] = {
      CLI_OPT_FLAG("--json", &a->json),
      CLI_OPT_FLAG("--no-floor", &a->no_floor),
      CLI_OPT_FLAG("--weights-as-inputs", &a->weights_as_inputs),
      CLI_OPT_INT("--iters", &a->iters, 1, 10000000),
      CLI_OPT_CUSTOM("--threads", a, threads_option),
      CLI_OPT_STRING("--options", &a->options),
      CLI_OPT_NUMERICS,
      CLI_OPT_TOKENS("--tokens", &a->tokens, CLI_MAX_TOKENS),
      CLI_OPT_WEIGHTS(&a->weights),
  };
  cli_positional pos = {.name = "scenario", .values = a->scenarios, .max = MAX_SCENARIOS};
  bool help;
  int parsed = cli_parse_args("bench", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (parsed != SK_EXIT_OK) return parsed;
  if (help) return -1;
  a->n_scenarios = pos.n;
  /* The names are known once the checkpoint (if any) is open. */
  int rc = cli_weights_open("bench", synopsis, &a->weights);
  if (rc != SK_EXIT_OK) return rc;
  for (int k = 0; k < a->n_scenarios; k++)
    if (!skm_model_lookup(a->scenarios[k], NULL))
      return cli_usage_error("bench", synopsis, "unknown scenario '%s' (known: %s)", a->scenarios[k],
                             skm_model_list());
  if (a->n_scenarios == 0 && a->weights.dir) a->scenarios[a->n_scenarios++] = "moe-layer";
  if (a->n_scenarios == 0)
    for (size_t k = 0; k < sizeof default_scenarios / sizeof default_scenarios[0]; k++)
      a->scenarios[a->n_scenarios++] = default_scenarios[k];
  if (a->n_threads == 0) { /* no --threads */
    a->threads[0] = 1;
    a->threads[1] = 0;
    a->n_threads = 2;
  }
  if (a->options && sk_options_validate(a->options) != SK_STATUS_OK) {
    fprintf(stderr, "sk bench: invalid --options: %s\n", sk_last_error());
    return SK_EXIT_USAGE;
  }
  return SK_EXIT_OK;
}

/* The p-quantile (0..1) of sorted values, interpolated linearly. */
static double quantile(const double *sorted, int n, double p) {
  if (n <= 0) return 0;
  double pos = p * (double)(n - 1);
  int lo = (int)pos;
  if (lo >= n - 1) return sorted[n - 1];
  return sorted[lo] + (pos - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

/* One scenario on one team size. */
typedef struct bench_result {
  const char *scenario;
  int threads, iters;
  double median[N_MODES], p10[N_MODES], p90[N_MODES];
  size_t jit_total, jit_fallbacks;
  bool equal;
  bool has_floor;      /* OpenBLAS ran: floor_* are set */
  bool floor_ratio_ok; /* its core matches the CPU: ratios against it are true */
  double floor_median, floor_p10, floor_p90, floor_gflop;
  const char *floor_why; /* why there is no floor */
  /* moe-layer and attention decode: the bandwidth floor, the bytes the run
   * read (the experts it hit; the KV cache) over the read bandwidth
   * measured at the same thread count. */
  bool has_bw_floor;
  double bw_bytes, bw_gbs, bw_floor_us;
} bench_result;

static int scenario_iters(const char *scenario, long iters) {
  skm_attention attn;
  if (skm_attn_parse(scenario, &attn) && !attn.decode) { /* a prefill of T tokens: T^2 work */
    long n = attn.t >= 2048 ? iters / 40 : iters / 10;
    return (int)(n > 3 ? n : iters < 3 ? iters : 3);
  }
  if (strcmp(scenario, "prefill") != 0) return (int)iters;
  long n = iters / 10;
  long floor = iters < 5 ? iters : 5;
  return (int)(n > floor ? n : floor);
}

/* The GEMM floor of one scenario at `threads`: a warm-up batch, then n
 * timed passes. */
static void time_floor(const char *scenario, int threads, int n, bench_result *res) {
  sk_blas_floor *f = sk_blas_floor_open(scenario, &res->floor_why);
  double *t = f ? malloc(sizeof(double) * (size_t)n) : NULL;
  if (!t) {
    if (f) res->floor_why = "out of memory";
    sk_blas_floor_close(f);
    return;
  }
  if (sk_blas_floor_threads(f, threads) != threads) {
    res->floor_why = "OpenBLAS does not run that many threads (a single-threaded build?)";
    free(t);
    sk_blas_floor_close(f);
    return;
  }
  for (int r = 0; r < BATCH; r++) (void)sk_blas_floor_run_us(f);
  for (int r = 0; r < n; r++) t[r] = sk_blas_floor_run_us(f);
  res->floor_median = cli_median(t, n);
  res->floor_p10 = quantile(t, n, 0.10);
  res->floor_p90 = quantile(t, n, 0.90);
  res->floor_gflop = sk_blas_floor_gflop(f);
  res->floor_ratio_ok = sk_blas_floor_ratio_ok(f);
  res->has_floor = true;
  free(t);
  sk_blas_floor_close(f);
}

/* Compiles and times one scenario on a team of `threads` (0: all). */
static int bench_one(const bench_args *a, const char *scenario, int threads, bench_result *res) {
  memset(res, 0, sizeof *res);
  res->scenario = scenario;
  res->iters = scenario_iters(scenario, a->iters);
  sk_session s;
  int rc = sk_session_open_team(&s, "bench", synopsis, scenario, a->options, threads);
  if (rc != SK_EXIT_OK) return rc;
  s.weights_as_inputs = a->weights_as_inputs;
  res->threads = sk_team_num_cores(s.team);
  /* moe-layer's read bandwidth is measured before the modes and after
   * them, and the faster counts: a floor is the machine at its best, and
   * on a shared machine one measurement can fall in a slow stretch. */
  skm_moe_layer moe;
  skm_attention attn;
  bool is_moe = skm_moe_parse(scenario, &moe), is_decode = skm_attn_parse(scenario, &attn) && attn.decode;
  double bw_before = is_moe || is_decode ? sk_read_bandwidth_gbs(res->threads) : 0;

  sk_program *p[N_MODES] = {0};
  skm_io io[N_MODES];
  double *t[N_MODES] = {0};
  memset(io, 0, sizeof io);
  char msg[1024];
  for (int m = 0; m < N_MODES && rc == SK_EXIT_OK; m++) {
    sk_compile_stats st;
    rc = sk_session_compile(&s, "bench", mode_executor[m], a->options, 0, &p[m], &st);
    if (rc != SK_EXIT_OK) break;
    if (mode_executor[m] == SK_EXECUTOR_JIT) {
      res->jit_total = st.jit_total;
      res->jit_fallbacks = st.jit_fallbacks;
    }
    if (skm_io_alloc(p[m], &io[m], msg, sizeof msg) != SK_STATUS_OK) {
      fprintf(stderr, "sk bench: %s\n", msg);
      rc = SK_EXIT_FAIL;
      break;
    }
    rc = sk_session_fill_inputs(&s, "bench", &io[m]);
    if (rc != SK_EXIT_OK) break;
    t[m] = malloc(sizeof(double) * (size_t)res->iters);
    if (!t[m]) {
      fprintf(stderr, "sk bench: out of memory\n");
      rc = SK_EXIT_FAIL;
    }
  }

  /* The first batch (at most --iters runs) warms up; after it every mode has
   * run, so the outputs are compared then. */
  int n = res->iters, warm = n < BATCH ? n : BATCH;
  res->equal = true;
  for (int r0 = -warm; rc == SK_EXIT_OK && r0 < n; r0 += r0 < 0 ? warm : BATCH) {
    int r_end = r0 < 0 ? 0 : r0 + BATCH;
    for (int m = 0; m < N_MODES && rc == SK_EXIT_OK; m++)
      for (int r = r0; r < r_end && r < n; r++) {
        double t0 = cli_now_us();
        sk_status st = sk_program_run(p[m], s.team, io[m].in_buffers, io[m].n_inputs, io[m].out_buffers,
                                      io[m].n_outputs);
        double dt = cli_now_us() - t0;
        if (st != SK_STATUS_OK) {
          fprintf(stderr, "sk bench: running %s (%s, %d cores): %s: %s\n", scenario, mode_name[m], res->threads,
                  sk_status_string(st), sk_last_error());
          rc = SK_EXIT_FAIL;
          break;
        }
        if (r >= 0) t[m][r] = dt;
      }
    if (rc == SK_EXIT_OK && r0 < 0)
      for (int m = 1; m < N_MODES; m++)
        for (size_t o = 0; o < io[0].n_outputs; o++)
          if (memcmp(io[m].outputs[o].data, io[0].outputs[o].data, io[0].outputs[o].bytes) != 0) {
            fprintf(stderr, "sk bench: %s on %d cores: output %s of %s DIFFERS from eager\n", scenario,
                    res->threads, io[0].outputs[o].name, mode_name[m]);
            res->equal = false;
          }
  }
  if (rc == SK_EXIT_OK && is_moe)
    for (size_t o = 0; o < io[0].n_outputs; o++)
      if (strcmp(io[0].outputs[o].name, "expert_ends") == 0) {
        res->bw_bytes = skm_moe_bytes(&moe, io[0].outputs[o].data);
        res->has_bw_floor = true;
      }
  if (rc == SK_EXIT_OK && is_decode) {
    res->bw_bytes = skm_attn_bytes(&attn);
    res->has_bw_floor = true;
  }
  if (rc == SK_EXIT_OK)
    for (int m = 0; m < N_MODES; m++) {
      res->median[m] = cli_median(t[m], n); /* sorts t[m] */
      res->p10[m] = quantile(t[m], n, 0.10);
      res->p90[m] = quantile(t[m], n, 0.90);
    }
  for (int m = 0; m < N_MODES; m++) {
    free(t[m]);
    skm_io_free(&io[m]);
    sk_program_destroy(p[m]);
  }
  sk_session_close(&s);
  /* After the modes, with our team gone: OpenBLAS's threads spin a while
   * after each call and would otherwise slow the modes down. */
  if (rc == SK_EXIT_OK && !a->no_floor) time_floor(scenario, res->threads, n, res);
  else if (a->no_floor) res->floor_why = "--no-floor";
  if (rc == SK_EXIT_OK && res->has_bw_floor) {
    double bw_after = sk_read_bandwidth_gbs(res->threads);
    res->bw_gbs = bw_after > bw_before ? bw_after : bw_before;
    res->has_bw_floor = res->bw_gbs > 0;
    res->bw_floor_us = res->has_bw_floor ? res->bw_bytes / (res->bw_gbs * 1e3) : 0;
  }
  return rc;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

static void print_header(const bench_args *a, const sk_bench_machine *machine) {
  printf("super kernels off (eager: every op its own launch) vs on (each scope one launch: interp, jit)\n");
  printf("times in us: median [p10, p90] of interleaved batches of %d runs after a warm-up batch; "
         "ratios of the medians (< 1: faster)\n",
         BATCH);
  if (a->options) printf("options %s\n", a->options);
  printf("weights %s\n", a->weights_as_inputs ? "as inputs (bound at every run)" : "as constants (packed at compile)");
  sk_bench_machine_print(machine);
  printf("%-10s %7s %6s", "scenario", "threads", "iters");
  for (int m = 0; m < N_MODES; m++) printf("  %9s %-18s", mode_name[m], "[p10, p90]");
  printf(" %12s %9s %10s  %s  %9s %-18s %9s\n", "interp/eager", "jit/eager", "jit/interp", "outputs       ", "floor",
         "[p10, p90]", "jit/floor");
}

static void print_row(const bench_result *r) {
  char cell[N_MODES][64];
  for (int m = 0; m < N_MODES; m++)
    snprintf(cell[m], sizeof cell[m], "%9.1f [%7.1f, %7.1f]", r->median[m], r->p10[m], r->p90[m]);
  printf("%-10s %7d %6d  %s  %s  %s %12.3f %9.3f %10.3f  %-14s", r->scenario, r->threads, r->iters, cell[0],
         cell[1], cell[2], ratio(r->median[1], r->median[0]), ratio(r->median[2], r->median[0]),
         ratio(r->median[2], r->median[1]), r->equal ? "bitwise equal" : "DIFFER");
  if (r->has_floor && r->floor_ratio_ok)
    printf("  %9.1f [%7.1f, %7.1f] %9.3f\n", r->floor_median, r->floor_p10, r->floor_p90,
           ratio(r->median[2], r->floor_median));
  else if (r->has_floor)
    printf("  %9.1f [%7.1f, %7.1f]  mismatched core, no ratio\n", r->floor_median, r->floor_p10, r->floor_p90);
  else
    printf("  no floor: %s\n", r->floor_why ? r->floor_why : "?");
  if (r->has_bw_floor)
    printf("  bandwidth floor: %.1f us (%.1f MB read: weights hit and activations, or the KV cache, at %.1f GB/s), "
           "jit/bandwidth %.3f\n",
           r->bw_floor_us, r->bw_bytes * 1e-6, r->bw_gbs, ratio(r->median[2], r->bw_floor_us));
  if (r->jit_fallbacks)
    printf("  note: %zu of %zu super kernels were interpreted after a JIT failure\n", r->jit_fallbacks,
           r->jit_total);
  fflush(stdout);
}

static void print_json(const bench_args *a, const sk_bench_machine *machine, const bench_result *res, int n) {
  printf("{\n  \"machine\": ");
  sk_bench_machine_json(machine);
  printf(",\n  \"weights\": \"%s\",\n  \"results\": [", a->weights_as_inputs ? "inputs" : "constants");
  for (int i = 0; i < n; i++) {
    const bench_result *r = &res[i];
    printf("%s\n    {\"scenario\": \"%s\", \"threads\": %d, \"iters\": %d,\n     \"modes\": {", i ? "," : "",
           r->scenario, r->threads, r->iters);
    for (int m = 0; m < N_MODES; m++) {
      printf("%s\"%s\": {\"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f", m ? ", " : "", mode_name[m],
             r->median[m], r->p10[m], r->p90[m]);
      if (mode_executor[m] == SK_EXECUTOR_JIT)
        printf(", \"jit_compiled\": %zu, \"jit_fallbacks\": %zu", r->jit_total - r->jit_fallbacks, r->jit_fallbacks);
      printf("}");
    }
    printf("},\n     \"ratios\": {\"interp_over_eager\": %.6f, \"jit_over_eager\": %.6f, \"jit_over_interp\": %.6f",
           ratio(r->median[1], r->median[0]), ratio(r->median[2], r->median[0]), ratio(r->median[2], r->median[1]));
    if (r->has_floor && r->floor_ratio_ok)
      printf(", \"jit_over_floor\": %.6f, \"eager_over_floor\": %.6f", ratio(r->median[2], r->floor_median),
             ratio(r->median[0], r->floor_median));
    printf("},\n     \"floor\": ");
    if (r->has_floor)
      printf("{\"library\": \"OpenBLAS cblas_sgemm fp32\", \"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f, "
             "\"gflop\": %.6f, \"core_matches\": %s}",
             r->floor_median, r->floor_p10, r->floor_p90, r->floor_gflop, r->floor_ratio_ok ? "true" : "false");
    else
      printf("null");
    if (r->has_bw_floor)
      printf(",\n     \"bandwidth_floor\": {\"bytes\": %.0f, \"read_gbs\": %.3f, \"us\": %.3f, \"jit_over\": %.6f}",
             r->bw_bytes, r->bw_gbs, r->bw_floor_us, ratio(r->median[2], r->bw_floor_us));
    printf(",\n     \"bitwise_equal\": %s}", r->equal ? "true" : "false");
  }
  printf("\n  ]\n}\n");
}

static int bench(int argc, char **argv) {
  bench_args a;
  int rc = parse(argc, argv, &a);
  if (rc < 0) return SK_EXIT_OK; /* --help */
  if (rc != SK_EXIT_OK) return rc;
  /* First: loading OpenBLAS may run sk again with the right core. */
  sk_bench_machine machine;
  sk_bench_machine_read(&machine, !a.no_floor);

  /* 'all' becomes the size of a default team; a size listed twice runs once. */
  int n_threads = 0;
  for (int k = 0; k < a.n_threads; k++) {
    int size = a.threads[k];
    if (size == 0) {
      sk_team *team;
      sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 0};
      sk_status st = sk_team_create(&tc, &team);
      if (st != SK_STATUS_OK) {
        fprintf(stderr, "sk bench: creating a team of every core: %s: %s\n", sk_status_string(st), sk_last_error());
        return st == SK_STATUS_INVALID_ARGUMENT ? SK_EXIT_USAGE : SK_EXIT_FAIL;
      }
      size = sk_team_num_cores(team);
      sk_team_destroy(team);
    }
    bool dup = false;
    for (int j = 0; j < n_threads; j++) dup = dup || a.threads[j] == size;
    if (!dup) a.threads[n_threads++] = size;
  }
  a.n_threads = n_threads;

  if (a.tokens.n)
    return sk_bench_tokens(a.scenarios, a.n_scenarios, a.threads, a.n_threads, a.iters, a.options, a.tokens.counts,
                           a.tokens.n);
  int n_runs = a.n_scenarios * a.n_threads;
  bench_result *res = calloc((size_t)n_runs, sizeof *res);
  if (!res) {
    fprintf(stderr, "sk bench: out of memory\n");
    return SK_EXIT_FAIL;
  }
  if (!a.json) print_header(&a, &machine);
  int done = 0;
  bool equal = true;
  for (int i = 0; i < a.n_scenarios && rc == SK_EXIT_OK; i++)
    for (int k = 0; k < a.n_threads && rc == SK_EXIT_OK; k++) {
      rc = bench_one(&a, a.scenarios[i], a.threads[k], &res[done]);
      if (rc != SK_EXIT_OK) break;
      equal = equal && res[done].equal;
      if (!a.json) print_row(&res[done]);
      done++;
    }
  if (rc == SK_EXIT_OK && a.json) print_json(&a, &machine, res, done);
  free(res);
  if (rc != SK_EXIT_OK) return rc;
  return equal ? SK_EXIT_OK : SK_EXIT_FAIL;
}

int sk_cmd_bench(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "model") == 0) return sk_cmd_bench_model(argc - 1, argv + 1);
  int rc = bench(argc, argv);
  cli_weights_close();
  return rc;
}

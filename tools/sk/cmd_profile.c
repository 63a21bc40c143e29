/*
 * sk profile MODEL --out DIR [...] — the profiling comparison of example02
 * for any built-in model: compile it with super kernels off (eager) and on
 * (the default executor), both with cfg.profile = 1 and scope option
 * profiling=1, run each --iters times after a warm-up, write
 * DIR/no_sk_model/ and DIR/sk_model/ (op_statistic.csv, trace.json) and
 * print both tables, their totals and the gain.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "sk.h"

static const char synopsis[] =
    "profile MODEL --out DIR [--options STRING] [--threads N] [--iters N] [--weights DIR [--layer N]]\n"
    "              [--tokens T]";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Compiles MODEL twice for a team of N cores, with super kernels off (eager) and on\n"
         "(the default executor: $SK_EXECUTOR, else auto), both timing every launch and\n"
         "with the scope option profiling=1; runs each --iters times after one warm-up\n"
         "run that is not recorded; writes op_statistic.csv and trace.json (Chrome Trace\n"
         "Event format, opens in Perfetto) to DIR/no_sk_model/ and DIR/sk_model/; prints\n"
         "both tables, their totals (the sum of Total Time(us)) and the gain in percent.\n"
         "On a terminal a line 'compiling sk1 (1/2)' shows the JIT's progress.\n\n"
         "  MODEL              %s\n"
         "  --out DIR          where the profiles go (created if missing)\n"
         "  --options STRING   super-kernel options for every scope (see 'sk options'),\n"
         "                     after profiling=1 (give profiling=0 to turn the per-block\n"
         "                     records off); scopes with options of their own (example02's\n"
         "                     sk5) keep theirs\n"
         CLI_NUMERICS_USAGE("")
         "  --threads N        team size (default: every available core, or $SK_NUM_THREADS)\n"
         "  --iters N          recorded runs of each program (default 20)\n"
         CLI_WEIGHTS_USAGE("")
         "  --tokens T         a model with a run-time token count (moe-layer:...:tmax=N):\n"
         "                     the count the runs have (default: the name's tN); the\n"
         "                     profile is that of the token bucket that serves it\n"
         "  -h, --help         this help\n\n"
         "Exit status 1 also when the two programs' outputs differ.\n",
         synopsis, skm_model_list());
}

/* Whether an options string sets `key` (spelled with '-' or '_', as the
 * library accepts it). */
static bool options_set(const char *options, const char *key) {
  const char *p = options;
  while (p && *p) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    if (eq) {
      const char *k = p, *ke = eq;
      while (k < ke && (isspace((unsigned char)*k) || *k == '"')) k++;
      while (ke > k && (isspace((unsigned char)ke[-1]) || ke[-1] == '"')) ke--;
      size_t kn = strlen(key);
      if ((size_t)(ke - k) == kn) {
        size_t j = 0;
        while (j < kn && (k[j] == key[j] || (k[j] == '_' && key[j] == '-'))) j++;
        if (j == kn) return true;
      }
    }
    p = end ? end + 1 : NULL;
  }
  return false;
}

/* One row of an op_statistic.csv. */
typedef struct stat_row {
  char op[64], core[32];
  long count;
  double total;
} stat_row;

/* Prints DIR/op_statistic.csv's rows and returns the sum of its Total
 * Time(us) column (-1 when the file cannot be read). */
static double print_table(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/op_statistic.csv", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "sk profile: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  char line[1024];
  int col_op = -1, col_core = -1, col_count = -1, col_total = -1;
  if (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    int c = 0;
    for (char *save = NULL, *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save), c++) {
      if (strcmp(tok, "OP Type") == 0) col_op = c;
      else if (strcmp(tok, "Core Type") == 0) col_core = c;
      else if (strcmp(tok, "Count") == 0) col_count = c;
      else if (strcmp(tok, "Total Time(us)") == 0) col_total = c;
    }
  }
  if (col_op < 0 || col_total < 0) {
    fprintf(stderr, "sk profile: %s: no 'OP Type' and 'Total Time(us)' columns\n", path);
    fclose(f);
    return -1;
  }
  printf("%s:\n  %-24s %-10s %8s %16s\n", path, "OP Type", "Core Type", "Count", "Total Time(us)");
  double total = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    stat_row r = {.op = "", .core = "", .count = 0, .total = 0};
    int c = 0;
    for (char *save = NULL, *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save), c++) {
      if (c == col_op) snprintf(r.op, sizeof r.op, "%s", tok);
      else if (c == col_core) snprintf(r.core, sizeof r.core, "%s", tok);
      else if (c == col_count) r.count = strtol(tok, NULL, 10);
      else if (c == col_total) r.total = strtod(tok, NULL);
    }
    if (!r.op[0]) continue;
    printf("  %-24s %-10s %8ld %16.1f\n", r.op, r.core, r.count, r.total);
    total += r.total;
  }
  fclose(f);
  printf("  %-24s %-10s %8s %16.1f\n", "total", "", "", total);
  return total;
}

/* One program to profile. */
typedef struct profiled {
  const char *name; /* "no_sk_model", "sk_model" */
  sk_program *program;
  sk_compile_stats stats;
  skm_io io;
} profiled;

/* Warm-up, reset, `iters` recorded runs, the profile written to dir. */
static int profile_runs(sk_session *s, profiled *m, long iters, const char *dir) {
  for (long r = -1; r < iters; r++) {
    sk_status st = sk_program_run(m->program, s->team, m->io.in_buffers, m->io.n_inputs, m->io.out_buffers,
                                  m->io.n_outputs);
    if (st != SK_STATUS_OK) {
      fprintf(stderr, "sk profile: %s: run %ld of %s: %s: %s\n", m->name, r + 2, s->model, sk_status_string(st),
              sk_last_error());
      return SK_EXIT_FAIL;
    }
    if (r < 0) sk_program_reset_profile(m->program); /* the warm-up is not recorded */
  }
  if (cli_mkdir_p(dir) != 0) {
    fprintf(stderr, "sk profile: cannot create %s: %s\n", dir, strerror(errno));
    return SK_EXIT_FAIL;
  }
  sk_status st = sk_program_write_profile(m->program, dir);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk profile: writing the profile of %s to %s: %s: %s\n", m->name, dir, sk_status_string(st),
            sk_last_error());
    return SK_EXIT_FAIL;
  }
  return SK_EXIT_OK;
}

static bool same_outputs(const skm_io *a, const skm_io *b) {
  if (a->n_outputs != b->n_outputs) return false;
  for (size_t i = 0; i < a->n_outputs; i++)
    if (a->outputs[i].bytes != b->outputs[i].bytes ||
        memcmp(a->outputs[i].data, b->outputs[i].data, a->outputs[i].bytes) != 0)
      return false;
  return true;
}

static int profile(int argc, char **argv) {
  cli_weights weights = {0};
  const char *model = NULL, *options = NULL, *out = NULL;
  long threads = 0, iters = 20;
  cli_tokens tokens = {.n = 0};
  const cli_arg opts[] = {
      CLI_OPT_DIR("--out", &out),
      CLI_OPT_STRING("--options", &options),
      CLI_OPT_NUMERICS,
      CLI_OPT_INT("--threads", &threads, 1, 1024),
      CLI_OPT_INT("--iters", &iters, 1, 10000000),
      CLI_OPT_TOKENS("--tokens", &tokens, 1),
      CLI_OPT_WEIGHTS(&weights),
  };
  cli_positional pos = {.name = "MODEL", .values = &model, .max = 1};
  bool help;
  int parsed = cli_parse_args("profile", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (parsed != SK_EXIT_OK || help) return parsed;
  if (!model) return cli_usage_error("profile", synopsis, "missing MODEL (one of %s)", skm_model_list());
  if (!out) return cli_usage_error("profile", synopsis, "missing --out DIR");

  int rc = cli_weights_open("profile", synopsis, &weights);
  if (rc == SK_EXIT_OK) rc = cli_check_tokens("profile", synopsis, model, tokens.counts, tokens.n);
  if (rc != SK_EXIT_OK) return rc;
  int64_t run_tokens = tokens.n ? tokens.counts[0] : skm_model_run_tokens(model);
  sk_session s;
  rc = sk_session_open_team(&s, "profile", synopsis, model, options, (int)threads);
  if (rc != SK_EXIT_OK) return rc;

  /* profiling=1 under the user's options, unless they set it themselves. */
  char *scope_options = NULL;
  if (options && options_set(options, "profiling")) {
    scope_options = strdup(options);
  } else {
    size_t n = strlen("profiling=1:") + (options ? strlen(options) : 0) + 1;
    if ((scope_options = malloc(n)) != NULL)
      snprintf(scope_options, n, "profiling=1%s%s", options && *options ? ":" : "", options ? options : "");
  }
  size_t dn = strlen(out) + 16;
  char *dirs[2] = {malloc(dn), malloc(dn)};
  if (!scope_options || !dirs[0] || !dirs[1]) {
    fprintf(stderr, "sk profile: out of memory\n");
    free(scope_options);
    free(dirs[0]);
    free(dirs[1]);
    sk_session_close(&s);
    return SK_EXIT_FAIL;
  }
  snprintf(dirs[0], dn, "%s/no_sk_model", out);
  snprintf(dirs[1], dn, "%s/sk_model", out);

  profiled m[2] = {{.name = "no_sk_model"}, {.name = "sk_model"}};
  const sk_executor executors[2] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_DEFAULT};
  printf("model %s: %s\n", s.model, s.description);
  printf("team of %d cores, options %s, %ld recorded run%s of each program after 1 warm-up run\n",
         sk_team_num_cores(s.team), scope_options, iters, iters == 1 ? "" : "s");
  char msg[1024];
  for (int k = 0; k < 2 && rc == SK_EXIT_OK; k++) {
    rc = sk_session_compile(&s, "profile", executors[k], scope_options, 1, &m[k].program, &m[k].stats);
    if (rc == SK_EXIT_OK && skm_io_alloc_at(m[k].program, run_tokens, &m[k].io, msg, sizeof msg) != SK_STATUS_OK) {
      fprintf(stderr, "sk profile: %s\n", msg);
      rc = SK_EXIT_FAIL;
    }
    if (rc == SK_EXIT_OK) {
      char how[256];
      printf("%-12s executor %s\n", m[k].name, sk_compile_stats_format(&m[k].stats, how, sizeof how));
      rc = sk_session_fill_inputs(&s, "profile", &m[k].io);
    }
  }
  for (int k = 0; k < 2 && rc == SK_EXIT_OK; k++) rc = profile_runs(&s, &m[k], iters, dirs[k]);

  if (rc == SK_EXIT_OK) {
    double t_off = print_table(dirs[0]);
    double t_on = t_off >= 0 ? print_table(dirs[1]) : -1;
    if (t_off < 0 || t_on < 0) {
      rc = SK_EXIT_FAIL;
    } else {
      printf("total without super kernels: %.1f us, with: %.1f us, gain %.2f%%\n", t_off, t_on,
             t_off > 0 ? (t_off - t_on) * 100.0 / t_off : 0.0);
      bool same = same_outputs(&m[0].io, &m[1].io);
      printf("outputs %s\n", same ? "bitwise equal" : "DIFFER");
      printf("profiles written to %s and %s (op_statistic.csv, trace.json)\n", dirs[0], dirs[1]);
      if (!same) {
        fprintf(stderr, "sk profile: the outputs with super kernels differ from those without\n");
        rc = SK_EXIT_FAIL;
      }
    }
  }
  for (int k = 0; k < 2; k++) {
    skm_io_free(&m[k].io);
    sk_program_destroy(m[k].program);
  }
  free(scope_options);
  free(dirs[0]);
  free(dirs[1]);
  sk_session_close(&s);
  return rc;
}

int sk_cmd_profile(int argc, char **argv) {
  int rc = profile(argc, argv);
  cli_weights_close();
  return rc;
}

/*
 * common.c — command-line helpers and the model/team/program setup shared by
 * the `sk` subcommands.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "models.h"
#include "moe_layer.h"
#include "sk.h"

bool cli_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

int cli_usage_error(const char *cmd, const char *synopsis, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "sk%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nusage: sk %s  (try 'sk %s%s--help')\n", synopsis, cmd ? cmd : "", cmd ? " " : "");
  return SK_EXIT_USAGE;
}

int cli_option_value(const char *cmd, const char *synopsis, int argc, char **argv, int *i, const char *name,
                     const char **value) {
  const char *arg = argv[*i];
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0) return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, synopsis, "option %s needs a value", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

bool cli_parse_int(const char *cmd, const char *synopsis, const char *option, const char *text, long lo, long hi,
                   long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (text[0] == '\0' || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    cli_usage_error(cmd, synopsis, "%s: expected an integer in %ld..%ld, got '%s'", option, lo, hi, text);
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_tokens(const char *cmd, const char *synopsis, const char *text, int64_t *out, int max, int *n) {
  *n = 0;
  for (const char *p = text;;) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || errno == ERANGE || v < 0 || v > (1 << 24) || *n >= max) {
      cli_usage_error(cmd, synopsis, "--tokens: expected at most %d comma-separated token counts in 0..%d, got '%s'",
                      max, 1 << 24, text);
      return false;
    }
    out[(*n)++] = v;
    if (*end == '\0') return true;
    p = end + 1;
  }
}

int cli_check_tokens(const char *cmd, const char *synopsis, const char *model, const int64_t *tokens, int n_tokens) {
  skm_moe_layer m;
  if (n_tokens == 0) return SK_EXIT_OK;
  if (!skm_moe_parse(model, &m) || !m.tmax)
    return cli_usage_error(cmd, synopsis,
                           "--tokens: model %s has no run-time token count (add :tmax=N to a moe-layer name)", model);
  for (int k = 0; k < n_tokens; k++)
    if (tokens[k] > m.tmax)
      return cli_usage_error(cmd, synopsis, "--tokens: %lld is above the model's maximum (tmax=%lld)",
                             (long long)tokens[k], (long long)m.tmax);
  return SK_EXIT_OK;
}

bool cli_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_mkdir_p(const char *path) {
  size_t n = strlen(path);
  if (n == 0) {
    errno = ENOENT;
    return -1;
  }
  char *buf = malloc(n + 1);
  if (!buf) return -1;
  memcpy(buf, path, n + 1);
  for (char *p = buf + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
        free(buf);
        return -1;
      }
      *p = saved;
      if (saved == '\0') break;
    }
  }
  free(buf);
  if (!cli_is_dir(path)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

double cli_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double cli_median(double *values, int n) {
  if (n <= 0) return 0;
  qsort(values, (size_t)n, sizeof *values, cmp_double);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

bool sk_cli_executor_parse(const char *text, sk_executor *out) {
  /* The library's names, less "default" (leaving --executor out is that). */
  return sk_executor_parse(text, out) == SK_STATUS_OK && *out != SK_EXECUTOR_DEFAULT;
}

const char *sk_cli_executor_names(void) { return "eager, interp, jit, auto, reference"; }

const char *sk_compile_stats_format(const sk_compile_stats *st, char *buf, size_t size) {
  const char *how = st->requested != SK_EXECUTOR_DEFAULT ? "" : st->from_env ? "$SK_EXECUTOR; " : "default; ";
  const char *label = sk_executor_name(st->executor);
  switch (st->executor) {
    case SK_EXECUTOR_EAGER: snprintf(buf, size, "%s (%ssuper kernels off)", label, how); break;
    case SK_EXECUTOR_REFERENCE:
      snprintf(buf, size, "%s (%ssuper kernels off, every op's reference implementation)", label, how);
      break;
    case SK_EXECUTOR_INTERP: snprintf(buf, size, "%s (%ssuper kernels on, interpreted)", label, how); break;
    case SK_EXECUTOR_JIT:
    case SK_EXECUTOR_AUTO:
      if (st->jit_total == 0)
        snprintf(buf, size, "%s (%ssuper kernels on, none to compile)", label, how);
      else if (st->jit_fallbacks == 0)
        snprintf(buf, size, "%s (%ssuper kernels on, %zu JIT-compiled)", label, how, st->jit_total);
      else
        snprintf(buf, size, "%s (%ssuper kernels on, %zu of %zu JIT-compiled, %zu interpreted after a JIT failure)",
                 label, how, st->jit_total - st->jit_fallbacks, st->jit_total, st->jit_fallbacks);
      break;
    default: snprintf(buf, size, "%s", label); break;
  }
  return buf;
}

/* ---- Compiling with progress ---------------------------------------------- */

/* State of one sk_compile: the progress line and the JIT fallbacks seen. */
typedef struct compile_watch {
  bool show;          /* stdout is a terminal: keep the progress line */
  int width;          /* characters on the progress line now (0: none) */
  size_t total;       /* super kernels handed to the JIT */
  size_t fallbacks;   /* "falling back to the interpreter" warnings */
  sk_log_level shown; /* the level the user sees (the level before the compile) */
} compile_watch;

static void watch_clear_line(compile_watch *w) {
  if (w->width > 0) {
    printf("\r%*s\r", w->width, "");
    fflush(stdout);
    w->width = 0;
  }
}

static void watch_on_jit(const char *scope, size_t index, size_t total, void *user) {
  compile_watch *w = user;
  w->total = total;
  if (!w->show) return;
  char line[160];
  int n = snprintf(line, sizeof line, "compiling %s (%zu/%zu)", scope, index, total);
  if (n < 0) return;
  if (n >= (int)sizeof line) n = (int)sizeof line - 1;
  /* Pad over a longer previous line. */
  printf("\r%s%*s", line, w->width > n ? w->width - n : 0, "");
  if (w->width > n) printf("\r%s", line);
  fflush(stdout);
  w->width = n;
}

/* Prints through the library's default handler (below the user's level:
 * nothing) and counts JIT fallbacks. */
static void watch_log(sk_log_level level, const char *message, void *user) {
  compile_watch *w = user;
  if (level >= SK_LOG_WARN && strstr(message, "falling back to the interpreter")) w->fallbacks++;
  if (level < w->shown || w->shown >= SK_LOG_OFF) return;
  watch_clear_line(w); /* the message gets its own line; the next update redraws */
  sk_log_default(level, message);
}

int sk_session_open_team(sk_session *s, const char *cmd, const char *synopsis, const char *model, const char *options,
                         int threads) {
  memset(s, 0, sizeof *s);
  skm_model_info info;
  if (!skm_model_lookup(model, &info))
    return cli_usage_error(cmd, synopsis, "unknown model '%s' (known: %s)", model, skm_model_list());
  if (options && sk_options_validate(options) != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: invalid --options: %s\n", cmd, sk_last_error());
    return SK_EXIT_USAGE;
  }
  int rc = cli_weights_check_model(cmd, synopsis, model);
  if (rc != SK_EXIT_OK) return rc;
  snprintf(s->model, sizeof s->model, "%s", info.name);
  s->seed = SKM_DEFAULT_SEED;
  snprintf(s->description, sizeof s->description, "%s", info.description);
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = threads};
  sk_status st = sk_team_create(&tc, &s->team);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: creating a team of %d cores: %s: %s\n", cmd, threads, sk_status_string(st),
            sk_last_error());
    s->team = NULL;
    return st == SK_STATUS_INVALID_ARGUMENT ? SK_EXIT_USAGE : SK_EXIT_FAIL;
  }
  return SK_EXIT_OK;
}

int sk_session_compile(sk_session *s, const char *cmd, sk_executor executor, const char *options, int profile,
                       sk_program **out, sk_compile_stats *stats) {
  *out = NULL;
  char msg[1024];
  sk_graph *g;
  sk_status st = SK_STATUS_OK;
  if (!s->have_values) {
    st = skm_values(s->model, NULL, s->seed, &s->values, msg, sizeof msg);
    s->have_values = st == SK_STATUS_OK;
    if (s->have_values && cli_weights_fill(cmd, s->model, &s->values) != SK_EXIT_OK) return SK_EXIT_FAIL;
  }
  /* The values live until sk_session_close, after every program. */
  skm_config mc = {.weights = s->weights_as_inputs ? NULL : &s->values, .borrow_weights = 1};
  if (st == SK_STATUS_OK) st = skm_build(s->build_model ? s->build_model : s->model, &mc, &g, NULL, msg, sizeof msg);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: %s\n", cmd, msg);
    return SK_EXIT_FAIL;
  }
  compile_watch w = {.show = isatty(STDOUT_FILENO) == 1, .shown = sk_get_log_level()};
  /* The fallback warnings are counted even when the user's level hides them. */
  if (w.shown > SK_LOG_WARN) sk_set_log_level(SK_LOG_WARN);
  sk_set_log_handler(watch_log, &w);
  sk_compile_config cc = {.struct_size = sizeof cc, .team = s->team, .executor = executor,
                          .default_options = options, .profile = profile, .on_jit = watch_on_jit,
                          .on_jit_user = &w};
  st = sk_compile(g, &cc, out);
  char error[1024];
  snprintf(error, sizeof error, "%s", sk_last_error());
  sk_set_log_handler(NULL, NULL);
  sk_set_log_level(w.shown);
  watch_clear_line(&w);
  sk_graph_destroy(g);
  if (st != SK_STATUS_OK) {
    *out = NULL;
    fprintf(stderr, "sk %s: compiling %s: %s: %s\n", cmd, s->model, sk_status_string(st), error);
    /* The models are valid, so an invalid argument here comes from the
     * user's options against this team (e.g. debug-aic-num > --threads)
     * or from $SK_EXECUTOR. */
    return st == SK_STATUS_INVALID_ARGUMENT || st == SK_STATUS_INVALID_ATTRIBUTE || st == SK_STATUS_UNSUPPORTED
               ? SK_EXIT_USAGE
               : SK_EXIT_FAIL;
  }
  if (stats) {
    *stats = (sk_compile_stats){.requested = executor, .jit_total = w.total, .jit_fallbacks = w.fallbacks};
    /* What runs is the program's (the library resolved $SK_EXECUTOR). */
    sk_program_stats ps = {.struct_size = sizeof ps};
    if (sk_program_get_stats(*out, &ps) == SK_STATUS_OK) stats->executor = ps.executor;
    const char *env = getenv("SK_EXECUTOR");
    stats->from_env = executor == SK_EXECUTOR_DEFAULT && env && *env;
  }
  return SK_EXIT_OK;
}

int sk_session_open(sk_session *s, const char *cmd, const char *synopsis, const char *model, const char *options,
                    int threads, sk_executor executor) {
  int rc = sk_session_open_team(s, cmd, synopsis, model, options, threads);
  if (rc != SK_EXIT_OK) return rc;
  rc = sk_session_compile(s, cmd, executor, options, 0, &s->program, &s->stats);
  if (rc != SK_EXIT_OK) sk_session_close(s);
  return rc;
}

int sk_session_fill_inputs(sk_session *s, const char *cmd, skm_io *io) {
  char msg[512];
  if (skm_fill_from(io, &s->values, msg, sizeof msg) == SK_STATUS_OK) return SK_EXIT_OK;
  fprintf(stderr, "sk %s: %s\n", cmd, msg);
  return SK_EXIT_FAIL;
}

void sk_session_close(sk_session *s) {
  sk_program_destroy(s->program); /* first: it may borrow the values */
  skm_io_free(&s->values);
  s->have_values = false;
  sk_team_destroy(s->team);
  s->program = NULL;
  s->team = NULL;
}

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

#include "models.h"
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

const char *sk_executor_label(sk_executor executor) {
  switch (executor) {
    case SK_EXECUTOR_EAGER: return "eager";
    case SK_EXECUTOR_INTERP: return "interp";
    case SK_EXECUTOR_REFERENCE: return "reference";
    default: return "default";
  }
}

int sk_session_open(sk_session *s, const char *cmd, const char *synopsis, const char *model, const char *options,
                    int threads, sk_executor executor) {
  memset(s, 0, sizeof *s);
  skm_model_info info;
  if (!skm_model_lookup(model, &info))
    return cli_usage_error(cmd, synopsis, "unknown model '%s' (known: %s)", model, skm_model_list());
  if (options && sk_options_validate(options) != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: invalid --options: %s\n", cmd, sk_last_error());
    return SK_EXIT_USAGE;
  }
  snprintf(s->model, sizeof s->model, "%s", info.name);
  snprintf(s->description, sizeof s->description, "%s", info.description);

  char msg[1024];
  sk_graph *g;
  sk_status st = skm_build(model, NULL, &g, NULL, msg, sizeof msg);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: %s\n", cmd, msg);
    return SK_EXIT_FAIL;
  }
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = threads};
  st = sk_team_create(&tc, &s->team);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: creating a team of %d cores: %s: %s\n", cmd, threads, sk_status_string(st),
            sk_last_error());
    sk_graph_destroy(g);
    return st == SK_STATUS_INVALID_ARGUMENT ? SK_EXIT_USAGE : SK_EXIT_FAIL;
  }
  sk_compile_config cc = {.struct_size = sizeof cc, .team = s->team, .executor = executor,
                          .default_options = options};
  st = sk_compile(g, &cc, &s->program);
  sk_graph_destroy(g);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk %s: compiling %s: %s: %s\n", cmd, s->model, sk_status_string(st), sk_last_error());
    sk_session_close(s);
    /* The models are valid, so an invalid argument here comes from the
     * user's options against this team (e.g. debug-aic-num > --threads). */
    return st == SK_STATUS_INVALID_ARGUMENT || st == SK_STATUS_INVALID_ATTRIBUTE || st == SK_STATUS_UNSUPPORTED
               ? SK_EXIT_USAGE
               : SK_EXIT_FAIL;
  }
  return SK_EXIT_OK;
}

void sk_session_close(sk_session *s) {
  sk_program_destroy(s->program);
  sk_team_destroy(s->team);
  s->program = NULL;
  s->team = NULL;
}

/*
 * sk.h — shared pieces of the `sk` command-line tool.
 *
 * Exit status of every subcommand: SK_EXIT_OK (0) on success, SK_EXIT_FAIL
 * (1) when building, compiling or running fails for a reason other than the
 * user's input, SK_EXIT_USAGE (2) for a usage error or invalid input (an
 * unknown model, a bad flag or value, a bad options string, an input file of
 * the wrong dtype or shape).
 */
#ifndef SK_TOOL_SK_H
#define SK_TOOL_SK_H

#include <stdbool.h>
#include <stdio.h>

#include "superkernel.h"

enum { SK_EXIT_OK = 0, SK_EXIT_FAIL = 1, SK_EXIT_USAGE = 2 };

/* A subcommand: argv[0] is the subcommand's name. */
typedef int (*sk_cmd_fn)(int argc, char **argv);

typedef struct sk_command {
  const char *name;
  sk_cmd_fn fn;
  const char *synopsis; /* "run MODEL [options]" */
  const char *summary;  /* one line for `sk --help` */
} sk_command;

int sk_cmd_options(int argc, char **argv);
int sk_cmd_run(int argc, char **argv);
int sk_cmd_plan(int argc, char **argv);
int sk_cmd_npy(int argc, char **argv);

/* ---- Command-line helpers (common.c) ------------------------------------ */

/* True for "--help" and "-h". */
bool cli_is_help(const char *arg);

/* Prints "sk CMD: <message>" and a usage hint to stderr; returns
 * SK_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *synopsis, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Matches an option taking a value, as "--name VALUE" or "--name=VALUE".
 * Returns 0 when argv[*i] is not this option, 1 when it is (*value set, *i
 * advanced past a separate value), -1 when the value is missing (the error
 * is printed; the command should return SK_EXIT_USAGE). */
int cli_option_value(const char *cmd, const char *synopsis, int argc, char **argv, int *i, const char *name,
                     const char **value);

/* Parses a whole decimal integer in [lo, hi]; prints a usage error naming the
 * option and returns false otherwise. */
bool cli_parse_int(const char *cmd, const char *synopsis, const char *option, const char *text, long lo, long hi,
                   long *out);

/* Creates a directory and its parents (mode 0777 & ~umask); an existing
 * directory is fine. Returns 0, or -1 with errno set. */
int cli_mkdir_p(const char *path);

/* True when path is an existing directory. */
bool cli_is_dir(const char *path);

/* Microseconds on a monotonic clock. */
double cli_now_us(void);
double cli_median(double *values, int n);

/* ---- Model + team + program (common.c) ---------------------------------- */

typedef struct sk_session {
  sk_team *team;
  sk_program *program;
  char model[32];
  char description[128];
} sk_session;

/* Validates the options string, builds `model`, creates a team of `threads`
 * cores (0 = every available core) and compiles with `executor` and the
 * options as default_options. Prints any error to stderr prefixed "sk CMD: "
 * and returns the exit status (SK_EXIT_OK on success). */
int sk_session_open(sk_session *s, const char *cmd, const char *synopsis, const char *model, const char *options,
                    int threads, sk_executor executor);
void sk_session_close(sk_session *s);

/* "eager", "interp", "reference", "default". */
const char *sk_executor_label(sk_executor executor);

#endif /* SK_TOOL_SK_H */

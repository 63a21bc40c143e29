/* One argument parser for every command that takes options and positional
 * arguments: each command lists its options as a table (cli_args.h) and
 * gets the same forms (--name VALUE, --name=VALUE), the same checks and the
 * same messages. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "sk.h"

/* The value of option o, already taken off argv; false with the message
 * printed when it does not parse. */
static bool take_value(const char *cmd, const char *synopsis, const cli_arg *o, const char *val) {
  switch (o->kind) {
    case CLI_STRING:
      if (o->nonempty && !*val) return cli_usage_error(cmd, synopsis, "%s: empty %s", o->name, o->what), false;
      *(const char **)o->dest = val;
      return true;
    case CLI_INT:
      return cli_parse_int(cmd, synopsis, o->name, val, o->lo, o->hi, (long *)o->dest);
    case CLI_TOKENS: {
      cli_tokens *t = o->dest;
      return cli_parse_tokens(cmd, synopsis, val, t->counts, (int)o->hi, &t->n);
    }
    case CLI_EXECUTOR: {
      cli_executor *e = o->dest;
      if (!sk_cli_executor_parse(val, &e->executor))
        return cli_usage_error(cmd, synopsis, "%s: expected one of %s, got '%s'", o->name, sk_cli_executor_names(), val),
               false;
      e->given = true;
      return true;
    }
    case CLI_CUSTOM:
      return o->parse(cmd, synopsis, val, o->dest);
    default:
      return false;
  }
}

/* A positional argument; false with the message printed past pos->max. */
static bool take_positional(const char *cmd, const char *synopsis, cli_positional *pos, const char *arg) {
  if (pos->n == pos->max) {
    if (pos->max == 1) cli_usage_error(cmd, synopsis, "expected one %s, got another: '%s'", pos->name, arg);
    else if (pos->max == 0) cli_usage_error(cmd, synopsis, "unexpected argument '%s'", arg);
    else cli_usage_error(cmd, synopsis, "at most %d %ss", pos->max, pos->name);
    return false;
  }
  pos->values[pos->n++] = arg;
  return true;
}

int cli_parse_args(const char *cmd, const char *synopsis, void (*usage)(void), int argc, char **argv,
                   const cli_arg *opts, size_t n_opts, cli_positional *pos, bool *help) {
  *help = false;
  bool positional_only = false; /* after "--": a STRING that starts with '-' */
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!positional_only && strcmp(arg, "--") == 0) {
      positional_only = true;
      continue;
    }
    if (positional_only || strcmp(arg, "-") == 0) {
      if (!take_positional(cmd, synopsis, pos, arg)) return SK_EXIT_USAGE;
      continue;
    }
    if (cli_is_help(arg)) {
      usage();
      *help = true;
      return SK_EXIT_OK;
    }
    bool matched = false;
    for (size_t k = 0; k < n_opts && !matched; k++) {
      const cli_arg *o = &opts[k];
      if (o->kind == CLI_FLAG) {
        if (strcmp(arg, o->name) == 0) *(bool *)o->dest = matched = true;
        continue;
      }
      if (o->kind == CLI_WEIGHTS) {
        int r = cli_weights_option(cmd, synopsis, argc, argv, &i, o->dest);
        if (r < 0) return SK_EXIT_USAGE;
        matched = r > 0;
        continue;
      }
      const char *val;
      int r = cli_option_value(cmd, synopsis, argc, argv, &i, o->name, &val);
      if (r < 0) return SK_EXIT_USAGE;
      if (r > 0 && !take_value(cmd, synopsis, o, val)) return SK_EXIT_USAGE;
      matched = r > 0;
    }
    if (matched) continue;
    if (arg[0] == '-') return cli_usage_error(cmd, synopsis, "unknown option '%s'", arg);
    if (!take_positional(cmd, synopsis, pos, arg)) return SK_EXIT_USAGE;
  }
  return SK_EXIT_OK;
}

char cli_numerics_unused;

bool cli_parse_numerics(const char *cmd, const char *synopsis, const char *value, void *dest) {
  (void)dest;
  if (strcmp(value, "default") != 0 && strcmp(value, "amx") != 0)
    return cli_usage_error(cmd, synopsis, "--numerics: expected default or amx, got '%s'", value), false;
  /* Every compile of this process reads it (sk_numerics' unset value). */
  if (setenv("SK_NUMERICS", value, 1) != 0)
    return cli_usage_error(cmd, synopsis, "--numerics: could not set SK_NUMERICS"), false;
  return true;
}

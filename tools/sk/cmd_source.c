/*
 * sk source MODEL --scope NAME [--options STRING] [--threads N] — print the
 * C source the JIT generates for a scope's super kernel
 * (sk_program_jit_source), exactly as it is compiled and cached.
 */
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "sk.h"

static const char synopsis[] = "source MODEL --scope NAME [--options STRING] [--threads N] [--weights DIR [--layer N]]";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Builds MODEL, plans it for a team of N cores and prints the C source the JIT\n"
         "generates for scope NAME's super kernel: a comment mapping each sub-kernel to its\n"
         "node, then the text exactly as it is compiled and cached (see docs/jit.md).\n"
         "Nothing is compiled: the text is the same whatever the executor.\n\n"
         "  MODEL              %s\n"
         "  --scope NAME       the scope (sk1, sk2; example02: sk1..sk6); a scope split\n"
         "                     by strict-scope-check prints its first part\n"
         "  --options STRING   super-kernel options for every scope (see 'sk options'),\n"
         "                     e.g. func-align=0 (no aligned attributes), profiling=1\n"
         "  --threads N        team size the plan is made for (default: every available core)\n"
         CLI_WEIGHTS_USAGE("")
         "  -h, --help         this help\n",
         synopsis, skm_model_list());
}

/* The scopes with a super kernel, from the program's description ("super
 * kernel NAME: ..." lines; a split scope's parts "NAME.0", "NAME.1" count
 * once), as "sk1, sk2" into buf. */
static const char *scope_list(const sk_program *p, char *buf, size_t size) {
  static const char prefix[] = "super kernel ";
  char *text = NULL;
  size_t len = 0;
  buf[0] = '\0';
  if (sk_program_describe(p, &text) != SK_STATUS_OK) return buf;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    if (n > sizeof prefix - 1 && strncmp(line, prefix, sizeof prefix - 1) == 0) {
      const char *name = line + sizeof prefix - 1;
      size_t k = 0;
      while (name + k < line + n && name[k] != ':' && name[k] != '.') k++;
      /* Skip a name already listed (the parts of a split scope follow each other). */
      char item[128];
      snprintf(item, sizeof item, "%.*s", (int)k, name);
      bool seen = false;
      for (const char *q = buf; (q = strstr(q, item)) != NULL; q += strlen(item))
        if ((q == buf || q[-1] == ' ') && (q[strlen(item)] == ',' || q[strlen(item)] == '\0')) seen = true;
      if (!seen && len < size)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", item);
    }
    line = end ? end + 1 : NULL;
  }
  sk_free(text);
  return buf;
}

static int source(int argc, char **argv) {
  cli_weights weights = {0};
  const char *model = NULL, *options = NULL, *scope = NULL;
  long threads = 0;
  const cli_arg opts[] = {
      {.name = "--scope", .kind = CLI_STRING, .dest = &scope, .nonempty = true, .what = "scope name"},
      CLI_OPT_STRING("--options", &options),
      CLI_OPT_INT("--threads", &threads, 1, 1024),
      CLI_OPT_WEIGHTS(&weights),
  };
  cli_positional pos = {.name = "MODEL", .values = &model, .max = 1};
  bool help;
  int parsed = cli_parse_args("source", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (parsed != SK_EXIT_OK || help) return parsed;
  if (!model) return cli_usage_error("source", synopsis, "missing MODEL (one of %s)", skm_model_list());

  /* The interpreter's program has the same plans, so the same source, and
   * needs no compiler: nothing is built or cached. */
  int rc = cli_weights_open("source", synopsis, &weights);
  if (rc != SK_EXIT_OK) return rc;
  sk_session s;
  rc = sk_session_open(&s, "source", synopsis, model, options, (int)threads, SK_EXECUTOR_INTERP);
  if (rc != SK_EXIT_OK) return rc;
  char scopes[512];
  if (!scope) {
    rc = cli_usage_error("source", synopsis, "missing --scope NAME (scopes of %s: %s)", s.model,
                         *scope_list(s.program, scopes, sizeof scopes) ? scopes : "none");
    sk_session_close(&s);
    return rc;
  }
  char *text = NULL;
  sk_status st = sk_program_jit_source(s.program, scope, &text);
  if (st == SK_STATUS_NOT_FOUND) {
    scope_list(s.program, scopes, sizeof scopes);
    fprintf(stderr, "sk source: model %s has no super kernel for scope '%s' (%s%s)\n", s.model, scope,
            *scopes ? "scopes: " : "no super kernels", scopes);
    sk_session_close(&s);
    return SK_EXIT_USAGE;
  }
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk source: generating the source of scope '%s': %s: %s\n", scope, sk_status_string(st),
            sk_last_error());
    sk_session_close(&s);
    return SK_EXIT_FAIL;
  }
  fputs(text, stdout);
  sk_free(text);
  sk_session_close(&s);
  return fflush(stdout) == 0 ? SK_EXIT_OK : SK_EXIT_FAIL;
}

int sk_cmd_source(int argc, char **argv) {
  int rc = source(argc, argv);
  cli_weights_close();
  return rc;
}

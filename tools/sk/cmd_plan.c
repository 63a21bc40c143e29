/*
 * sk plan MODEL [--options STRING] [--threads N] — print the fused program's
 * plan (sk_program_describe): its steps, each super kernel with its type,
 * sub-kernels and every core's task list.
 */
#include <string.h>

#include "models.h"
#include "sk.h"

static const char synopsis[] = "plan MODEL [--options STRING] [--threads N] [--weights DIR [--layer N]]";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Builds MODEL, compiles it with super kernels on (interpreted) for a team of N\n"
         "cores and prints the program: each step (an op's own launch or a super kernel\n"
         "with its type, sub-kernels and one line per task of every core's task list).\n\n"
         "  MODEL              %s\n"
         "  --options STRING   super-kernel options for every scope (see 'sk options')\n"
         "  --threads N        team size the plan is made for (default: every available core)\n"
         CLI_WEIGHTS_USAGE("")
         "  -h, --help         this help\n",
         synopsis, skm_model_list());
}

static int plan(int argc, char **argv) {
  cli_weights weights = {0};
  const char *model = NULL, *options = NULL, *val;
  long threads = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r;
    if (cli_is_help(a)) {
      usage();
      return SK_EXIT_OK;
    } else if ((r = cli_option_value("plan", synopsis, argc, argv, &i, "--options", &val)) != 0) {
      if (r < 0) return SK_EXIT_USAGE;
      options = val;
    } else if ((r = cli_option_value("plan", synopsis, argc, argv, &i, "--threads", &val)) != 0) {
      if (r < 0 || !cli_parse_int("plan", synopsis, "--threads", val, 1, 1024, &threads)) return SK_EXIT_USAGE;
    } else if ((r = cli_weights_option("plan", synopsis, argc, argv, &i, &weights)) != 0) {
      if (r < 0) return SK_EXIT_USAGE;
    } else if (a[0] == '-') {
      return cli_usage_error("plan", synopsis, "unknown option '%s'", a);
    } else if (model) {
      return cli_usage_error("plan", synopsis, "expected one MODEL, got another: '%s'", a);
    } else {
      model = a;
    }
  }
  if (!model) return cli_usage_error("plan", synopsis, "missing MODEL (one of %s)", skm_model_list());

  int rc = cli_weights_open("plan", synopsis, &weights);
  if (rc != SK_EXIT_OK) return rc;
  sk_session s;
  rc = sk_session_open(&s, "plan", synopsis, model, options, (int)threads, SK_EXECUTOR_INTERP);
  if (rc != SK_EXIT_OK) return rc;
  char *text = NULL;
  sk_status st = sk_program_describe(s.program, &text);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk plan: describing %s: %s: %s\n", s.model, sk_status_string(st), sk_last_error());
    sk_session_close(&s);
    return SK_EXIT_FAIL;
  }
  printf("model %s: %s; team of %d cores\n", s.model, s.description, sk_team_num_cores(s.team));
  fputs(text, stdout);
  sk_free(text);
  sk_session_close(&s);
  return SK_EXIT_OK;
}

int sk_cmd_plan(int argc, char **argv) {
  int rc = plan(argc, argv);
  cli_weights_close();
  return rc;
}

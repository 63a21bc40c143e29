/*
 * sk plan MODEL [--options STRING] [--threads N] — print the fused program's
 * plan (sk_program_describe): its steps, each super kernel with its type,
 * sub-kernels and every core's task list.
 */
#include <string.h>

#include "models.h"
#include "sk.h"

static const char synopsis[] =
    "plan MODEL [--options STRING] [--threads N] [--numerics NAME] [--weights DIR [--layer N]]";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Builds MODEL, compiles it with super kernels on (interpreted) for a team of N\n"
         "cores and prints the program: each step (an op's own launch or a super kernel\n"
         "with its type, sub-kernels and one line per task of every core's task list).\n\n"
         "  MODEL              %s\n"
         "  --options STRING   super-kernel options for every scope (see 'sk options')\n"
         CLI_NUMERICS_USAGE("")
         "  --threads N        team size the plan is made for (default: every available core)\n"
         CLI_WEIGHTS_USAGE("")
         "  -h, --help         this help\n",
         synopsis, skm_model_list());
}

static int plan(int argc, char **argv) {
  cli_weights weights = {0};
  const char *model = NULL, *options = NULL;
  long threads = 0;
  const cli_arg opts[] = {
      CLI_OPT_STRING("--options", &options),
      CLI_OPT_NUMERICS,
      CLI_OPT_INT("--threads", &threads, 1, 1024),
      CLI_OPT_WEIGHTS(&weights),
  };
  cli_positional pos = {.name = "MODEL", .values = &model, .max = 1};
  bool help;
  int parsed = cli_parse_args("plan", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (parsed != SK_EXIT_OK || help) return parsed;
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

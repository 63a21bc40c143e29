/*
 * sk options STRING — validate a super-kernel options string and print the
 * effective options (defaults included, in table order), or the error.
 */
#include <stdlib.h>
#include <string.h>

#include "sk.h"

static const char synopsis[] = "options [--] STRING";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Validates a super-kernel options string (\"key=value:key=value\", see docs/options.md)\n"
         "and prints the effective options, defaults included, as one line:\n"
         "  key=value:key=value:...\n"
         "An empty string means all defaults. An invalid string prints the error and exits 2.\n\n"
         "  --            the next argument is the string, even if it starts with '-'\n"
         "  -h, --help    this help\n",
         synopsis);
}

int sk_cmd_options(int argc, char **argv) {
  const char *text = NULL;
  cli_positional pos = {"options string", &text, 1, 0};
  bool help;
  int rc = cli_parse_args("options", synopsis, usage, argc, argv, NULL, 0, &pos, &help);
  if (rc != SK_EXIT_OK || help) return rc;
  if (!text) return cli_usage_error("options", synopsis, "missing the options string (\"\" for the defaults)");

  size_t needed = 0;
  char small[1];
  if (sk_options_render(text, small, sizeof small, &needed) != SK_STATUS_OK) {
    fprintf(stderr, "sk options: invalid options: %s\n", sk_last_error());
    return SK_EXIT_USAGE;
  }
  char *buf = malloc(needed + 1);
  if (!buf) {
    fprintf(stderr, "sk options: out of memory\n");
    return SK_EXIT_FAIL;
  }
  sk_status st = sk_options_render(text, buf, needed + 1, NULL);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk options: %s: %s\n", sk_status_string(st), sk_last_error());
    free(buf);
    return SK_EXIT_FAIL;
  }
  printf("%s\n", buf);
  free(buf);
  return SK_EXIT_OK;
}

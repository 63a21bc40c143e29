/*
 * sk — the superkernel command-line tool.
 *
 *   sk options STRING      validate an options string, print the effective options
 *   sk ops [OP...]         print the ops' schemas
 *   sk run MODEL [...]     build, compile and run a model; outputs, checksums, median time
 *   sk plan MODEL [...]    print the fused program's plan
 *   sk npy FILE...         print .npy files' dtype, shape, checksum
 *   sk source MODEL ...    print the C the JIT generates for a scope's super kernel
 *   sk cache path|list|clear   the JIT cache
 *   sk profile MODEL ...   profile a model with super kernels off and on
 *   sk bench [SCENARIO...] time eager, interp and jit side by side: medians, p10/p90, ratios
 *   sk run model DIR ...   a checkpoint directory as a whole model: greedy decoding
 *   sk bench model DIR ... its prefill and decode tokens/s, as llama-bench, and the decode floor
 *
 * Every subcommand lives in its own file and is listed in the table below.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "models.h"
#include "sk.h"

static const sk_command commands[] = {
    {"options", sk_cmd_options, "options STRING", "validate a super-kernel options string and print the effective options"},
    {"ops", sk_cmd_ops, "ops [OP...]", "print the built-in ops' schemas: slots and their data rules, attributes, outputs"},
    {"run", sk_cmd_run, "run MODEL [options]", "build, compile and run a model; print outputs, checksums, median time"},
    {"plan", sk_cmd_plan, "plan MODEL [options]", "print the fused program's plan (steps, super kernels, task lists)"},
    {"npy", sk_cmd_npy, "npy FILE...", "print .npy files' dtype, shape and checksum (as 'sk run' prints outputs)"},
    {"source", sk_cmd_source, "source MODEL --scope S", "print the C source the JIT generates for a scope's super kernel"},
    {"cache", sk_cmd_cache, "cache path|list|clear", "show, list or empty the JIT cache"},
    {"profile", sk_cmd_profile, "profile MODEL --out D",
     "profile a model with super kernels off and on: op_statistic.csv, trace.json, gain"},
    {"bench", sk_cmd_bench, "bench [SCENARIO...]",
     "time eager, interp and jit interleaved: median, p10, p90 and ratios (--json)"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_usage(FILE *out) {
  fprintf(out, "usage: sk COMMAND [ARGS...]\n"
               "       sk --help | --version\n\n"
               "commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-22s %s\n", commands[i].synopsis, commands[i].summary);
  fprintf(out, "\nwhole models, from a Hugging Face checkpoint directory (config.json + *.safetensors):\n"
               "  %-32s %s\n  %-32s %s\n",
          "run model DIR --tokens IDS -n N", "the prompt, then N ids decoded greedily",
          "bench model DIR -p N -n N -t N", "llama-bench's ppN and tgN tokens/s; the decode floor");
  fprintf(out, "\nmodels: %s\n"
               "Run 'sk COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 run failure, 2 usage error or invalid input.\n",
          skm_model_list());
}

static int run_command(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "sk: missing command\n");
    fprintf(stderr, "usage: sk COMMAND [ARGS...]  (try 'sk --help')\n");
    return SK_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (cli_is_help(name)) {
    print_usage(stdout);
    return SK_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0) {
    printf("sk (superkernel) %s\n", sk_version()); /* the library loaded */
    return SK_EXIT_OK;
  }
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "sk: unknown %s '%s' (commands:", name[0] == '-' ? "option" : "command", name);
  for (size_t i = 0; i < N_COMMANDS; i++) fprintf(stderr, "%s %s", i ? "," : "", commands[i].name);
  fprintf(stderr, ")\nusage: sk COMMAND [ARGS...]  (try 'sk --help')\n");
  return SK_EXIT_USAGE;
}

/* Output that did not reach stdout (a full disk, a closed pipe, /dev/full)
 * is a failure, whatever the command itself returned: the buffered rest is
 * flushed here and any write error since the start is caught. */
int main(int argc, char **argv) {
  int rc = run_command(argc, argv);
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "sk: cannot write standard output%s%s\n", errno ? ": " : "", errno ? strerror(errno) : "");
    if (rc == SK_EXIT_OK) rc = SK_EXIT_FAIL;
  }
  return rc;
}

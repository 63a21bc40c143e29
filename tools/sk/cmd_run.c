/*
 * sk run MODEL [...] — build, compile (with --executor's executor, default
 * $SK_EXECUTOR or auto) and run a model: deterministic inputs
 * (optionally replaced from .npy files), --iters runs (the first a warm-up),
 * each output's dtype, shape and checksum, the median time; optionally the
 * inputs and outputs saved as .npy files.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "npy.h"
#include "sk.h"

static const char synopsis[] = "run MODEL [options]";
static const char full_synopsis[] =
    "run MODEL [--executor NAME | --no-sk] [--threads N] [--options STRING] [--iters N]\n"
    "              [--seed N] [--weights-as-inputs] [--inputs DIR] [--save-inputs DIR]\n"
    "              [--save-outputs DIR] [--weights DIR [--layer N]] [--tokens LIST]";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Builds MODEL, compiles it for a team of N cores, fills its inputs from a fixed\n"
         "seed, runs it --iters times (the first run is a warm-up) and prints each\n"
         "output's name, dtype, shape and checksum (the sum of its values) and the\n"
         "median time of the timed runs.\n\n"
         "  MODEL                %s\n"
         "  --executor NAME      how the program runs (default: $SK_EXECUTOR, else auto):\n"
         "                         eager      super kernels off: every op its own launch\n"
         "                         interp     each scope one super kernel, interpreted\n"
         "                         jit        each scope one super kernel, compiled to C by the\n"
         "                                    system compiler and cached (any failure: interp)\n"
         "                         auto       jit with fallback (the library's default)\n"
         "                         reference  every op's plain reference code on one thread\n"
         "  --no-sk              the same as --executor eager\n"
         "  --threads N          team size (default: every available core, or $SK_NUM_THREADS)\n"
         "  --options STRING     super-kernel options for every scope (see 'sk options')\n"
         CLI_NUMERICS_USAGE("  ")
         "  --iters N            total runs, the first a warm-up (default 20)\n"
         "  --seed N             seed of the built-in inputs (default %u)\n"
         "  --weights-as-inputs  the weights are program inputs bound at every run, as\n"
         "                       before constants; default: graph constants, packed once at\n"
         "                       compile (the same values, the same outputs)\n"
         "  --inputs DIR         read DIR/<input>.npy for each graph input; a missing file\n"
         "                       keeps the built-in values, a wrong dtype or shape is an error\n"
         "                       (when one of them is a weight's, implies --weights-as-inputs)\n"
         "  --save-inputs DIR    write DIR/<input>.npy for every input and weight (DIR is\n"
         "                       created)\n"
         "  --save-outputs DIR   write DIR/<output>.npy for every output (DIR is created)\n"
         CLI_WEIGHTS_USAGE("  ")
         "  --tokens LIST        a model with a run-time token count (moe-layer:...:tmax=N):\n"
         "                       run the one compiled program at each count of LIST in turn\n"
         "                       (default: the name's tN); each output also prints the hash\n"
         "                       of its first row, which a token's batch never changes\n"
         "                       (the built-in inputs' first rows are the same at every\n"
         "                       count); --save-outputs then writes DIR/t<T>/\n"
         "  -h, --help           this help\n\n"
         "The summary line names the executor that ran and how many super kernels the JIT\n"
         "compiled; on a terminal a line 'compiling sk1 (1/2)' shows the JIT's progress.\n\n"
         "A whole model from a checkpoint directory: 'sk run model DIR --tokens IDS -n N'\n"
         "(see 'sk run model --help').\n\n"
         "Input names: gmm1_x_0 gmm1_x_1 gmm1_weight_0 gmm1_weight_1 gmm1_bias_0 gmm1_bias_1\n"
         "gmm2_weight_0 gmm2_weight_1 moe1_bias dsq_input_0 dsq_input_1 dsq_input_2 data1 data2\n"
         "scale; output: output (example02: inputs x w b dsq_x dsq_scale; outputs routing\n"
         "quantized). Files are NumPy .npy (fp16 '<f2', fp32 '<f4', int8 '|i1', int32 '<i4',\n"
         "int64 '<i8').\n",
         full_synopsis, skm_model_list(), SKM_DEFAULT_SEED);
}

typedef struct run_args {
  const char *model, *options, *inputs_dir, *save_inputs_dir, *save_outputs_dir;
  bool no_sk, weights_as_inputs;
  cli_executor exec;
  long threads, iters, seed;
  cli_weights weights;
  cli_tokens tokens;
} run_args;

static int parse(int argc, char **argv, run_args *a) {
  *a = (run_args){.iters = 20, .seed = SKM_DEFAULT_SEED};
  const cli_arg opts[] = {
      CLI_OPT_FLAG("--no-sk", &a->no_sk),
      CLI_OPT_FLAG("--weights-as-inputs", &a->weights_as_inputs),
      CLI_OPT_EXECUTOR("--executor", &a->exec),
      CLI_OPT_INT("--threads", &a->threads, 1, 1024),
      CLI_OPT_INT("--iters", &a->iters, 1, 10000000),
      CLI_OPT_INT("--seed", &a->seed, 0, 2147483647),
      CLI_OPT_STRING("--options", &a->options),
      CLI_OPT_NUMERICS,
      CLI_OPT_DIR("--inputs", &a->inputs_dir),
      CLI_OPT_DIR("--save-inputs", &a->save_inputs_dir),
      CLI_OPT_DIR("--save-outputs", &a->save_outputs_dir),
      CLI_OPT_TOKENS("--tokens", &a->tokens, CLI_MAX_TOKENS),
      CLI_OPT_WEIGHTS(&a->weights),
  };
  cli_positional pos = {.name = "MODEL", .values = &a->model, .max = 1};
  bool help;
  int parsed = cli_parse_args("run", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (parsed != SK_EXIT_OK) return parsed;
  if (help) return -1;
  if (!a->model) return cli_usage_error("run", synopsis, "missing MODEL (one of %s)", skm_model_list());
  if (a->no_sk && a->exec.given && a->exec.executor != SK_EXECUTOR_EAGER)
    return cli_usage_error("run", synopsis, "--no-sk (eager) conflicts with --executor %s",
                           sk_executor_name(a->exec.executor));
  return SK_EXIT_OK;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 6;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s.npy", dir, name);
  return p;
}

static bool is_io_name(const skm_io *io, const char *stem) {
  for (size_t i = 0; i < io->n_inputs; i++)
    if (strcmp(io->inputs[i].name, stem) == 0) return true;
  for (size_t i = 0; i < io->n_outputs; i++)
    if (strcmp(io->outputs[i].name, stem) == 0) return true;
  return false;
}

/* Warns about DIR/x.npy files that match no input or output (likely typos). */
static void warn_strays(const char *dir, const skm_io *io, const char *model) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n <= 4 || strcmp(e->d_name + n - 4, ".npy") != 0) continue;
    char stem[256];
    if (n - 4 >= sizeof stem) continue;
    memcpy(stem, e->d_name, n - 4);
    stem[n - 4] = '\0';
    if (!is_io_name(io, stem))
      fprintf(stderr, "sk run: warning: %s/%s matches no input of model %s (ignored)\n", dir, e->d_name, model);
  }
  closedir(d);
}

/* Reads DIR/<input>.npy for every input that has one. */
/* Whether dir holds a weight's .npy file (then the weights must be program
 * inputs for it to be read; without one they stay constants). */
static bool holds_a_weight(const char *dir) {
  DIR *d = opendir(dir);
  bool found = false;
  for (struct dirent *e; d && !found && (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    char stem[256];
    if (n <= 4 || n - 4 >= sizeof stem || strcmp(e->d_name + n - 4, ".npy") != 0) continue;
    memcpy(stem, e->d_name, n - 4);
    stem[n - 4] = '\0';
    found = skm_is_weight(stem);
  }
  if (d) closedir(d);
  return found;
}

static int read_inputs(const char *dir, skm_io *io, const char *model) {
  size_t n_read = 0;
  for (size_t i = 0; i < io->n_inputs; i++) {
    skm_tensor *t = &io->inputs[i];
    char *path = join(dir, t->name), msg[1024];
    if (!path) return SK_EXIT_FAIL;
    sk_status st = skm_npy_read_into(path, t->dtype, t->rank, t->shape, t->data, t->bytes, msg, sizeof msg);
    free(path);
    if (st == SK_STATUS_NOT_FOUND) continue;
    if (st != SK_STATUS_OK) {
      fprintf(stderr, "sk run: --inputs: %s\n", msg);
      return st == SK_STATUS_OUT_OF_MEMORY ? SK_EXIT_FAIL : SK_EXIT_USAGE;
    }
    n_read++;
  }
  warn_strays(dir, io, model);
  printf("inputs: %zu of %zu read from %s, the rest built in\n", n_read, io->n_inputs, dir);
  return SK_EXIT_OK;
}

static int save_all(const char *flag, const char *dir, const skm_tensor *ts, size_t n) {
  if (cli_mkdir_p(dir) != 0) {
    fprintf(stderr, "sk run: %s %s: cannot create the directory: %s\n", flag, dir, strerror(errno));
    return SK_EXIT_FAIL;
  }
  for (size_t i = 0; i < n; i++) {
    char *path = join(dir, ts[i].name), msg[1024];
    if (!path) return SK_EXIT_FAIL;
    sk_status st = skm_npy_write(path, ts[i].dtype, ts[i].rank, ts[i].shape, ts[i].data, msg, sizeof msg);
    free(path);
    if (st != SK_STATUS_OK) {
      fprintf(stderr, "sk run: %s: %s\n", flag, msg);
      return SK_EXIT_FAIL;
    }
  }
  printf("%s: %zu file%s written to %s\n", flag + 2, n, n == 1 ? "" : "s", dir);
  return SK_EXIT_OK;
}

/* The hash of a per-token output's first row; 0 for other outputs. */
static uint64_t first_row_hash(const skm_tensor *t) {
  if (t->tokens_k != 1 || t->shape[0] <= 0) return 0;
  skm_tensor row = *t;
  row.bytes = t->bytes / (size_t)t->shape[0];
  return skm_hash(&row);
}

static int run_and_report(sk_session *s, skm_io *io, long iters) {
  int timed = iters > 1 ? (int)iters - 1 : 1;
  double *times = malloc(sizeof(double) * (size_t)timed);
  if (!times) return SK_EXIT_FAIL;
  for (long r = 0; r < iters; r++) {
    double t0 = cli_now_us();
    sk_status st = sk_program_run(s->program, s->team, io->in_buffers, io->n_inputs, io->out_buffers, io->n_outputs);
    double t = cli_now_us() - t0;
    if (st != SK_STATUS_OK) {
      fprintf(stderr, "sk run: run %ld of %s: %s: %s\n", r + 1, s->model, sk_status_string(st), sk_last_error());
      free(times);
      return SK_EXIT_FAIL;
    }
    if (iters == 1) times[0] = t;
    else if (r > 0) times[r - 1] = t;
  }
  for (size_t i = 0; i < io->n_outputs; i++) {
    const skm_tensor *t = &io->outputs[i];
    char shape[160];
    printf("output %s: %s %s  checksum %.6f  hash %016llx", t->name, sk_dtype_name(t->dtype),
           skm_format_shape(t->rank, t->shape, shape, sizeof shape), skm_checksum(t),
           (unsigned long long)skm_hash(t));
    if (first_row_hash(t)) printf("  row0 %016llx", (unsigned long long)first_row_hash(t));
    printf("\n");
  }
  double med = cli_median(times, timed);
  if (iters > 1)
    printf("median %.1f us over %d run%s (after 1 warm-up run)\n", med, timed, timed == 1 ? "" : "s");
  else
    printf("time %.1f us (1 run, no warm-up)\n", med);
  free(times);
  return SK_EXIT_OK;
}

/* One run of the session's program at `tokens` tokens (-1: static shapes):
 * its buffers, inputs, the timed runs, the report, the saved files
 * (per_count: under DIR/t<T>/). */
static int run_at(const run_args *a, sk_session *s, int64_t tokens, bool per_count, uint64_t *row0, size_t max_row0) {
  skm_io io;
  char msg[1024], dir[4096];
  if (skm_io_alloc_at(s->program, tokens, &io, msg, sizeof msg) != SK_STATUS_OK) {
    fprintf(stderr, "sk run: %s\n", msg);
    return SK_EXIT_FAIL;
  }
  if (tokens >= 0) printf("-- %lld tokens\n", (long long)tokens);
  int rc = sk_session_fill_inputs(s, "run", &io);
  if (rc == SK_EXIT_OK && a->inputs_dir) rc = read_inputs(a->inputs_dir, &io, s->model);
  /* Every tensor the model reads, weights included, whichever way they were
   * built: with constants the weights are not program inputs. */
  const skm_io *all = s->weights_as_inputs ? &io : &s->values;
  if (rc == SK_EXIT_OK && a->save_inputs_dir && !per_count)
    rc = save_all("--save-inputs", a->save_inputs_dir, all->inputs, all->n_inputs);
  if (rc == SK_EXIT_OK) rc = run_and_report(s, &io, a->iters);
  for (size_t j = 0; j < io.n_outputs && j < max_row0; j++) row0[j] = first_row_hash(&io.outputs[j]);
  if (rc == SK_EXIT_OK && a->save_outputs_dir) {
    snprintf(dir, sizeof dir, per_count ? "%s/t%lld" : "%s", a->save_outputs_dir, (long long)tokens);
    rc = save_all("--save-outputs", dir, io.outputs, io.n_outputs);
  }
  skm_io_free(&io);
  return rc;
}

static int run(const run_args *a) {
  int rc = cli_check_tokens("run", synopsis, a->model, a->tokens.counts, a->tokens.n);
  if (rc != SK_EXIT_OK) return rc;

  sk_executor executor = a->exec.given ? a->exec.executor : a->no_sk ? SK_EXECUTOR_EAGER : SK_EXECUTOR_DEFAULT;
  sk_session s;
  rc = sk_session_open_team(&s, "run", synopsis, a->model, a->options, (int)a->threads);
  if (rc != SK_EXIT_OK) return rc;
  s.seed = (uint64_t)a->seed;
  s.weights_as_inputs = a->weights_as_inputs || (a->inputs_dir && holds_a_weight(a->inputs_dir));
  rc = sk_session_compile(&s, "run", executor, a->options, 0, &s.program, &s.stats);
  if (rc != SK_EXIT_OK) {
    sk_session_close(&s);
    return rc;
  }

  printf("model %s: %s\n", s.model, s.description);
  char how[256];
  printf("executor %s, team of %d cores, options %s, weights %s\n",
         sk_compile_stats_format(&s.stats, how, sizeof how), sk_team_num_cores(s.team),
         a->options ? a->options : "(defaults)", s.weights_as_inputs ? "as inputs" : "as constants");
  if (sk_program_max_tokens(s.program) > 0)
    printf("run-time token count: one program for 1..%lld tokens\n", (long long)sk_program_max_tokens(s.program));
  /* The counts to run: --tokens, else the model's own (static: -1). */
  int64_t own = skm_model_run_tokens(s.model);
  const int64_t *counts = a->tokens.n ? a->tokens.counts : &own;
  int n_counts = a->tokens.n ? a->tokens.n : 1;
  /* The first token is the same at every count (the built-in inputs'
   * first rows): its output rows must be too (batch invariance). */
  enum { MAX_ROW0 = 16 };
  uint64_t first[MAX_ROW0] = {0}, row0[MAX_ROW0];
  bool same = true;
  for (int k = 0; k < n_counts && rc == SK_EXIT_OK; k++) {
    memset(row0, 0, sizeof row0);
    rc = run_at(a, &s, counts[k], n_counts > 1, row0, MAX_ROW0);
    for (int j = 0; j < MAX_ROW0; j++) {
      if (!first[j]) first[j] = row0[j];
      else if (row0[j] && row0[j] != first[j]) same = false;
    }
  }
  if (rc == SK_EXIT_OK && n_counts > 1 && !a->inputs_dir) {
    printf("first token's output rows: %s at every count\n", same ? "bitwise the same" : "DIFFER");
    if (!same) rc = SK_EXIT_FAIL;
  }
  sk_session_close(&s);
  return rc;
}

int sk_cmd_run(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "model") == 0) return sk_cmd_run_model(argc - 1, argv + 1);
  run_args a;
  int rc = parse(argc, argv, &a);
  if (rc < 0) return SK_EXIT_OK; /* --help */
  if (rc != SK_EXIT_OK) return rc;
  if (a.inputs_dir && !cli_is_dir(a.inputs_dir)) {
    fprintf(stderr, "sk run: --inputs %s: not a directory\n", a.inputs_dir);
    return SK_EXIT_USAGE;
  }
  rc = cli_weights_open("run", synopsis, &a.weights);
  if (rc == SK_EXIT_OK) rc = run(&a);
  cli_weights_close();
  return rc;
}

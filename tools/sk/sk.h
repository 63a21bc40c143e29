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

#include "models.h"
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
int sk_cmd_ops(int argc, char **argv);
int sk_cmd_run(int argc, char **argv);
int sk_cmd_plan(int argc, char **argv);
int sk_cmd_npy(int argc, char **argv);
int sk_cmd_source(int argc, char **argv);
int sk_cmd_cache(int argc, char **argv);
int sk_cmd_profile(int argc, char **argv);
int sk_cmd_bench(int argc, char **argv);

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

/* --weights DIR [--layer N] (weights_option.c): a Hugging Face checkpoint's
 * MoE layer as the moe-layer model. */
typedef struct cli_weights {
  const char *dir;
  long layer;
  bool has_layer;
} cli_weights;
/* The two options' help lines; pad: "" where a command's help puts its
 * descriptions at column 21, "  " at column 23. */
#define CLI_WEIGHTS_USAGE(pad)                                                                            \
  "  --weights DIR      " pad "a Hugging Face checkpoint directory (config.json + *.safetensors):\n"    \
  "                     " pad "MODEL is then its MoE layer, moe-layer[:tN][:bf16|fp16|int8][:eN],\n"    \
  "                     " pad "with its weights (converted once: see docs/checkpoints.md)\n"            \
  "  --layer N          " pad "the checkpoint's layer (default: its first MoE layer)\n"
/* Matches --weights / --layer at argv[*i] as cli_option_value does. */
int cli_weights_option(const char *cmd, const char *synopsis, int argc, char **argv, int *i, cli_weights *w);
/* Opens the checkpoint (if any) once the arguments are parsed; prints errors. */
int cli_weights_open(const char *cmd, const char *synopsis, const cli_weights *w);
void cli_weights_close(void);
/* With a checkpoint open: `model` must name its layer (a usage error else). */
int cli_weights_check_model(const char *cmd, const char *synopsis, const char *model);
/* With a checkpoint open and `model` its layer: its weights into values. */
int cli_weights_fill(const char *cmd, const char *model, skm_io *values);

/* Creates a directory and its parents (mode 0777 & ~umask); an existing
 * directory is fine. Returns 0, or -1 with errno set. */
int cli_mkdir_p(const char *path);

/* True when path is an existing directory. */
bool cli_is_dir(const char *path);

/* Microseconds on a monotonic clock. */
double cli_now_us(void);
double cli_median(double *values, int n);

/* --tokens LIST: comma-separated token counts (0..2^24) into out (at most
 * max of them); prints a usage error and returns false otherwise. */
#define CLI_MAX_TOKENS 32
bool cli_parse_tokens(const char *cmd, const char *synopsis, const char *text, int64_t *out, int max, int *n);
/* A --tokens list for a model: a usage error naming it when the model has
 * no run-time token count (moe-layer:...:tmax=N) or a count is above N. */
int cli_check_tokens(const char *cmd, const char *synopsis, const char *model, const int64_t *tokens, int n_tokens);

/* ---- Model + team + program (common.c) ---------------------------------- */

/* What a compile did. */
typedef struct sk_compile_stats {
  sk_executor requested; /* as asked (SK_EXECUTOR_DEFAULT: left to $SK_EXECUTOR) */
  sk_executor executor;  /* what runs: SK_EXECUTOR_DEFAULT resolved through $SK_EXECUTOR */
  bool from_env;         /* executor came from $SK_EXECUTOR */
  size_t jit_total;      /* super kernels handed to the JIT (compiled or found in the cache) */
  size_t jit_fallbacks;  /* of those, interpreted after a JIT failure (the library's warnings) */
} sk_compile_stats;

typedef struct sk_session {
  sk_team *team;
  sk_program *program;
  sk_compile_stats stats; /* of program */
  char model[128];
  char description[512];
  /* Set between sk_session_open_team and sk_session_compile: the seed of
   * the model's values (SKM_DEFAULT_SEED) and whether the weights stay
   * program inputs (--weights-as-inputs) instead of graph constants. */
  uint64_t seed;
  bool weights_as_inputs;
  skm_io values; /* skm_values of the model, made at the first compile */
  /* Set before sk_session_compile: the model name the graph is built from
   * (NULL: model) — another token count of the same layer, with the
   * session's values (sk bench --tokens). */
  const char *build_model;
  bool have_values;
} sk_session;

/* Validates the options string, builds `model`, creates a team of `threads`
 * cores (0 = every available core) and compiles with `executor` and the
 * options as default_options (sk_session_compile). Prints any error to
 * stderr prefixed "sk CMD: " and returns the exit status (SK_EXIT_OK on
 * success). */
int sk_session_open(sk_session *s, const char *cmd, const char *synopsis, const char *model, const char *options,
                    int threads, sk_executor executor);
/* The same without compiling: s->program stays NULL (sk_session_compile
 * makes programs for s->team). options is only validated. */
int sk_session_open_team(sk_session *s, const char *cmd, const char *synopsis, const char *model, const char *options,
                         int threads);
/* Builds s->model again and compiles it for s->team with `executor`,
 * default_options `options` and cfg.profile = profile into *out; stats may
 * be NULL. While super kernels are JIT-compiled and stdout is a terminal, a
 * progress line "compiling sk3 (3/6)" is kept updated in place ('\r') and
 * cleared at the end; nothing is printed otherwise. Errors as
 * sk_session_open. */
int sk_session_compile(sk_session *s, const char *cmd, sk_executor executor, const char *options, int profile,
                       sk_program **out, sk_compile_stats *stats);
/* Destroys s->program, then the values (programs from sk_session_compile
 * borrow them: destroy those first), then the team. */
void sk_session_close(sk_session *s);
/* Fills a program's inputs (io from skm_io_alloc) with the session's model
 * values, whichever way the weights were built; errors as sk_session_open. */
int sk_session_fill_inputs(sk_session *s, const char *cmd, skm_io *io);

/* sk bench --tokens (cmd_bench_tokens.c): one program compiled for a run-time
 * token count against programs compiled for exactly each count. */
int sk_bench_tokens(const char *const *scenarios, int n_scenarios, const int *threads, int n_threads, long iters,
                    const char *options, const int64_t *tokens, int n_tokens);

/* Executor names are the library's (sk_executor_name / sk_executor_parse).
 * Parses an --executor value (eager, interp, jit, auto, reference); false
 * when it is none of them. */
bool sk_cli_executor_parse(const char *text, sk_executor *out);

/* ---- the argument table (cli_args.c) ----
 * A command lists its options once; cli_parse_args takes --name VALUE and
 * --name=VALUE in any order, the help flags, and positional arguments ("-"
 * is one, and every argument after "--"). */
typedef enum cli_arg_kind {
  CLI_FLAG,     /* bool *: set when given */
  CLI_STRING,   /* const char **; nonempty: refuse "" naming `what` */
  CLI_INT,      /* long *, in [lo, hi] */
  CLI_TOKENS,   /* cli_tokens *, at most hi counts */
  CLI_EXECUTOR, /* cli_executor * */
  CLI_WEIGHTS,  /* cli_weights *: --weights DIR and --layer N */
  CLI_CUSTOM,   /* parse(cmd, synopsis, value, dest) */
} cli_arg_kind;

typedef struct cli_tokens {
  int64_t counts[CLI_MAX_TOKENS];
  int n;
} cli_tokens;

typedef struct cli_executor {
  sk_executor executor;
  bool given;
} cli_executor;

typedef struct cli_arg {
  const char *name;
  cli_arg_kind kind;
  void *dest;
  long lo, hi;
  bool nonempty;
  const char *what;
  bool (*parse)(const char *cmd, const char *synopsis, const char *value, void *dest);
} cli_arg;

#define CLI_OPT_FLAG(nm, d) {.name = (nm), .kind = CLI_FLAG, .dest = (d)}
#define CLI_OPT_STRING(nm, d) {.name = (nm), .kind = CLI_STRING, .dest = (d)}
#define CLI_OPT_DIR(nm, d) {.name = (nm), .kind = CLI_STRING, .dest = (d), .nonempty = true, .what = "directory name"}
#define CLI_OPT_INT(nm, d, l, h) {.name = (nm), .kind = CLI_INT, .dest = (d), .lo = (l), .hi = (h)}
#define CLI_OPT_TOKENS(nm, d, max) {.name = (nm), .kind = CLI_TOKENS, .dest = (d), .hi = (max)}
#define CLI_OPT_EXECUTOR(nm, d) {.name = (nm), .kind = CLI_EXECUTOR, .dest = (d)}
#define CLI_OPT_WEIGHTS(d) {.name = "--weights", .kind = CLI_WEIGHTS, .dest = (d)}
#define CLI_OPT_CUSTOM(nm, d, fn) {.name = (nm), .kind = CLI_CUSTOM, .dest = (d), .parse = (fn)}

/* --numerics default|amx: the contract of the programs' bf16 products
 * (docs/ops.md, "Numerics"), set process-wide as $SK_NUMERICS, which
 * every compile of the command then reads. dest: unused (non-NULL). */
bool cli_parse_numerics(const char *cmd, const char *synopsis, const char *value, void *dest);
extern char cli_numerics_unused;
#define CLI_OPT_NUMERICS CLI_OPT_CUSTOM("--numerics", &cli_numerics_unused, cli_parse_numerics)
#define CLI_NUMERICS_USAGE(pad)                                                                         \
  "  --numerics NAME    " pad "default or amx: the contract of bf16 products (docs/ops.md,\n"              \
  "                     " pad "\"Numerics\"; amx: AMX-BF16's sums, at its rate where the CPU has\n"         \
  "                     " pad "it); as $SK_NUMERICS (default: $SK_NUMERICS, else default)\n"

/* Positional arguments: at most max, named `name` in messages ("MODEL"). */
typedef struct cli_positional {
  const char *name;
  const char **values;
  int max, n;
} cli_positional;

/* Parses argv against opts; on a help flag calls usage and sets *help.
 * SK_EXIT_OK, or SK_EXIT_USAGE with the message printed. */
int cli_parse_args(const char *cmd, const char *synopsis, void (*usage)(void), int argc, char **argv,
                   const cli_arg *opts, size_t n_opts, cli_positional *pos, bool *help);
#define CLI_N(a) (sizeof(a) / sizeof((a)[0]))
/* "eager, interp, jit, auto, reference" */
const char *sk_cli_executor_names(void);
/* One phrase for a summary line, e.g. "auto (default; super kernels on,
 * 2 JIT-compiled)", "eager (super kernels off)" into buf. */
const char *sk_compile_stats_format(const sk_compile_stats *stats, char *buf, size_t size);

/* ---- sk run model / sk bench model: a checkpoint directory as a whole model (model_open.c) ---- */

/* `sk run model ...` and `sk bench model ...` (argv[0] "model"). */
int sk_cmd_run_model(int argc, char **argv);
int sk_cmd_bench_model(int argc, char **argv);

struct sk_checkpoint;
typedef struct cli_model {
  const char *dir;
  struct sk_checkpoint *files; /* the directory, read by the library (superkernel_checkpoint.h) */
  sk_team *team;
  struct sk_model *model;
  /* sk_model_get_info's (family, about, sizes, weight and cache bytes) */
  const char *family, *about;
  sk_dtype dtype;           /* the checkpoint's (activations, caches) */
  bool w8a8;
  int64_t vocab, max_context;
  int64_t experts, experts_per_token; /* a MoE layer's routed experts and top-k (0, 0: dense) */
  size_t weight_bytes, cache_bytes;
} cli_model;

/* What the model is made with; 0 / NULL: the library's default. */
typedef struct cli_model_options {
  long threads, max_context, max_tokens;
  cli_executor exec;
  const char *options;
  const char *quantize;     /* --quantize: NULL or "w8a8" */
} cli_model_options;

/* The options' table entries and help lines, shared by both commands. */
#define CLI_MODEL_OPTS(o)                                                                                     \
  CLI_OPT_INT("--threads", &(o)->threads, 1, 1024), CLI_OPT_INT("-t", &(o)->threads, 1, 1024),                \
      CLI_OPT_INT("--max-context", &(o)->max_context, 1, 1 << 24),                                            \
      CLI_OPT_INT("--max-tokens", &(o)->max_tokens, 1, 1 << 16), CLI_OPT_EXECUTOR("--executor", &(o)->exec),   \
      CLI_OPT_STRING("--options", &(o)->options), CLI_OPT_STRING("--quantize", &(o)->quantize), CLI_OPT_NUMERICS
#define CLI_MODEL_USAGE                                                                           \
  "  -t, --threads N      team size (default: every available core, or $SK_NUM_THREADS)\n"       \
  "  --max-tokens N       the most tokens one program run takes; longer forwards run in\n"       \
  "                       chunks of it, the same bits (default 512)\n"                           \
  "  --executor NAME      eager, interp, jit, auto or reference (default: $SK_EXECUTOR, else\n"  \
  "                       auto: each layer one super kernel, JIT-compiled)\n"                    \
  "  --options STRING     super-kernel options of every layer's scope (see 'sk options')\n"       \
  "  --quantize w8a8      every linear layer int8: weights per output channel at load,\n"       \
  "                       inputs per row at run time (docs/models.md)\n"                        \
  CLI_NUMERICS_USAGE("  ")

/* Opens DIR (sk_checkpoint_open), makes a team of o->threads cores and the model
 * (max_context: o's, else dflt_context, else the library's). Errors are
 * printed "sk CMD: ..." naming the directory, file, field or weight; the
 * exit status is SK_EXIT_USAGE for invalid input (a missing or malformed
 * file, an unsupported config, a missing weight or one of the wrong shape
 * or dtype), SK_EXIT_FAIL otherwise. */
int cli_model_open(const char *cmd, const char *dir, const cli_model_options *o, int64_t dflt_context, cli_model *m);
void cli_model_close(cli_model *m);
/* A library call that failed while running the model: printed, SK_EXIT_FAIL
 * (SK_EXIT_USAGE for an invalid argument, e.g. an id outside the vocabulary). */
int cli_model_failed(const char *cmd, const cli_model *m, const char *what, sk_status st);

#endif /* SK_TOOL_SK_H */

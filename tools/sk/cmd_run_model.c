/*
 * sk run model DIR --tokens IDS [-n N] [...] — a Hugging Face checkpoint
 * directory as a whole model (superkernel_model.h): the prompt in one
 * forward, then N tokens decoded greedily (the argmax of the fp32 logits,
 * the lowest id on ties), one forward each. stdout gets the generated ids
 * and nothing else; what ran and how long it took go to stderr.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sk.h"
#include "superkernel_model.h"

static const char synopsis[] = "run model DIR --tokens IDS [-n N] [options]";

static void usage(void) {
  printf("usage: sk run model DIR --tokens IDS [-n N] [--threads N] [--max-context N]\n"
         "              [--max-tokens N] [--executor NAME] [--options STRING] [--quantize w8a8]\n\n"
         "Runs a Hugging Face checkpoint directory as a whole model in the library\n"
         "(docs/models.md): DIR/config.json and DIR's *.safetensors files (F32, F16 or\n"
         "BF16; memory-mapped, borrowed). The prompt IDS runs in one forward, then N\n"
         "tokens are decoded greedily: each is the argmax of the previous forward's fp32\n"
         "logits (the lowest id on ties) and is fed back as the next forward's one token.\n\n"
         "Output: one line on stdout, the N generated ids in order, comma-separated\n"
         "(e.g. 17,4,4,90); the model, the team and the times go to stderr. The ids are\n"
         "the same bits whatever --threads, --max-tokens, --max-context or --executor.\n\n"
         "  DIR                  the checkpoint directory (config.json + *.safetensors; a\n"
         "                       model.safetensors.index.json's shards must all be there)\n"
         "  --tokens IDS         the prompt: comma-separated token ids (at least one)\n"
         "  -n N                 tokens to generate (default 16)\n"
         "  --max-context N      KV cache rows (default: max_position_embeddings, at most\n"
         "                       4096); the prompt and N - 1 generated tokens must fit\n"
         CLI_MODEL_USAGE
         "  -h, --help           this help\n\n"
         "Families (config.json's model_type): %s.\n"
         "A missing directory, config.json or shard, a malformed or cut-short file, an\n"
         "unsupported field, a missing weight or one of the wrong shape or dtype exits 2\n"
         "with a message naming it.\n",
         sk_model_families());
}

typedef struct id_list {
  int32_t *ids;
  int64_t n;
} id_list;

/* "1,2,3" into ids in [0, 2^31). */
static bool parse_ids(const char *cmd, const char *syn, const char *text, void *dest) {
  id_list *l = dest;
  free(l->ids);
  l->ids = NULL, l->n = 0;
  size_t max = 1;
  for (const char *p = text; *p; p++) max += *p == ',';
  if (!(l->ids = malloc(max * sizeof *l->ids))) return cli_usage_error(cmd, syn, "--tokens: out of memory"), false;
  for (const char *p = text;;) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || errno == ERANGE || v < 0 || v > INT32_MAX || *p == '+' ||
        *p == ' ') {
      cli_usage_error(cmd, syn, "--tokens: expected comma-separated token ids in 0..%d, got '%s'", INT32_MAX, text);
      return false;
    }
    l->ids[l->n++] = (int32_t)v;
    if (*end == '\0') return true;
    p = end + 1;
  }
}

/* The first greatest logit: NaN never wins. */
static int32_t argmax(const float *logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; v++)
    if (logits[v] > logits[best] || (logits[best] != logits[best] && logits[v] == logits[v])) best = v;
  return (int32_t)best;
}

typedef struct run_model_args {
  const char *dir;
  id_list prompt;
  long n;
  cli_model_options model;
} run_model_args;

static int generate(const run_model_args *a, cli_model *m) {
  const int64_t need = a->prompt.n + a->n - 1;
  if (need > m->max_context) {
    fprintf(stderr, "sk run model: %lld prompt ids and -n %ld need %lld positions: past max_context %lld (raise "
            "--max-context)\n", (long long)a->prompt.n, a->n, (long long)need, (long long)m->max_context);
    return SK_EXIT_USAGE;
  }
  sk_model_seq *seq = NULL;
  float *logits = malloc((size_t)m->vocab * sizeof *logits);
  int32_t *out = malloc((size_t)a->n * sizeof *out);
  sk_status st = logits && out ? sk_model_seq_create(m->model, &seq) : SK_STATUS_OUT_OF_MEMORY;
  int rc = st == SK_STATUS_OK ? SK_EXIT_OK : cli_model_failed("run model", m, "a sequence", st);
  double t0 = cli_now_us(), prefill_us = 0;
  if (rc == SK_EXIT_OK && (st = sk_model_forward(seq, m->team, a->prompt.ids, a->prompt.n, logits, 1)) != SK_STATUS_OK)
    rc = cli_model_failed("run model", m, "the prompt", st);
  prefill_us = cli_now_us() - t0;
  for (long i = 0; rc == SK_EXIT_OK && i < a->n; i++) {
    out[i] = argmax(logits, m->vocab);
    if (i + 1 < a->n && (st = sk_model_forward(seq, m->team, &out[i], 1, logits, 1)) != SK_STATUS_OK)
      rc = cli_model_failed("run model", m, "a decode step", st);
  }
  const double decode_us = cli_now_us() - t0 - prefill_us;
  if (rc == SK_EXIT_OK) {
    for (long i = 0; i < a->n; i++) printf("%s%d", i ? "," : "", out[i]);
    printf("\n");
    fprintf(stderr, "prompt %lld token%s in %.2f ms; %ld generated (%ld decode step%s) in %.2f ms",
            (long long)a->prompt.n, a->prompt.n == 1 ? "" : "s", prefill_us / 1e3, a->n, a->n - 1, a->n == 2 ? "" : "s",
            decode_us / 1e3);
    if (a->n > 1) fprintf(stderr, ", %.1f tokens/s", (double)(a->n - 1) / (decode_us / 1e6));
    fprintf(stderr, "\n");
  }
  sk_model_seq_destroy(seq);
  free(logits);
  free(out);
  return rc;
}

int sk_cmd_run_model(int argc, char **argv) {
  run_model_args a = {.n = 16};
  const cli_arg opts[] = {
      CLI_OPT_CUSTOM("--tokens", &a.prompt, parse_ids),
      CLI_OPT_INT("-n", &a.n, 1, 1 << 24),
      CLI_MODEL_OPTS(&a.model),
  };
  cli_positional pos = {.name = "DIR", .values = &a.dir, .max = 1};
  bool help;
  int rc = cli_parse_args("run model", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (rc == SK_EXIT_OK && !help && !a.dir) rc = cli_usage_error("run model", synopsis, "missing DIR (a checkpoint directory)");
  if (rc == SK_EXIT_OK && !help && !a.prompt.n) rc = cli_usage_error("run model", synopsis, "missing --tokens IDS (the prompt)");
  if (rc != SK_EXIT_OK || help) {
    free(a.prompt.ids);
    return rc;
  }
  cli_model m;
  rc = cli_model_open("run model", a.dir, &a.model, 0, &m);
  if (rc == SK_EXIT_OK) {
    fprintf(stderr, "model %s (%s)\nteam of %d cores, executor %s, max_context %lld\n", m.about, a.dir,
            sk_team_num_cores(m.team), sk_executor_name(a.model.exec.given ? a.model.exec.executor : SK_EXECUTOR_DEFAULT),
            (long long)m.max_context);
    rc = generate(&a, &m);
  }
  cli_model_close(&m);
  free(a.prompt.ids);
  return rc;
}

/*
 * sk bench model DIR [-p N] [-n N] [-t N] [-r N] — a checkpoint directory
 * as a whole model, timed as llama-bench times one: ppN, a prefill of N
 * prompt tokens in one forward, and tgN, N tokens decoded one forward
 * each; each test starts a fresh sequence at every repetition (after one
 * warm-up run: ppN, and tg of one token) and prints tokens/s as the mean
 * ± the standard deviation of the repetitions. The ids are random, from a
 * fixed seed. Then the decode step against its bandwidth floor: the bytes
 * a decoded token reads over the read bandwidth measured in the same run
 * (tools/blas/read_bandwidth.h, as `sk bench` measures it, before and
 * after the tests; the faster counts).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_machine.h"
#include "read_bandwidth.h"
#include "sk.h"
#include "superkernel_checkpoint.h"

static const char synopsis[] = "bench model DIR [-p N] [-n N] [-t N] [-r N] [options]";

static void usage(void) {
  printf("usage: sk bench model DIR [-p N] [-n N] [-t N] [-r N] [--max-context N]\n"
         "              [--max-tokens N] [--executor NAME] [--options STRING] [--quantize w8a8]\n"
         "              [--json] [--no-floor]\n\n"
         "Times a Hugging Face checkpoint directory as a whole model (as 'sk run model'),\n"
         "with llama-bench's tests and flags: ppN, a prefill of N prompt tokens in one\n"
         "forward, and tgN, N tokens decoded one forward each (the LM head included);\n"
         "each repetition of a test starts a fresh sequence. The ids are random (a fixed\n"
         "seed). One warm-up run of each test (tg: one token) is not counted. Rows give\n"
         "tokens/s as the mean and standard deviation over the repetitions.\n\n"
         "Then the decode step against its floor: the bytes a decoded token reads (every\n"
         "weight but the embedding table, of which it reads one row, plus the KV cache\n"
         "at tgN's mean context) over the read bandwidth measured in the same run at the\n"
         "same thread count. A MoE model's token reads only its top-k experts of each MoE\n"
         "layer: the floor counts them all and a second line gives the floor of the\n"
         "experts read alone.\n\n"
         "  DIR                  the checkpoint directory (config.json + *.safetensors)\n"
         "  -p, --n-prompt N     prompt tokens of the pp test (default 512; 0: no pp test)\n"
         "  -n, --n-gen N        tokens of the tg test (default 128; 0: no tg test)\n"
         "  -r, --repetitions N  timed runs of each test (default 5)\n"
         "  --max-context N      KV cache rows (default: the larger of -p and -n)\n"
         CLI_MODEL_USAGE
         "  --json               one JSON document (llama-bench's avg_ts, stddev_ts, samples_ts,\n"
         "                       samples_ns per test; the floor; the machine) instead of the table\n"
         "  --no-floor           skip the read bandwidth and the floor\n"
         "  -h, --help           this help\n");
}

typedef struct bench_model_args {
  const char *dir;
  long p, n, reps;
  bool json, no_floor;
  cli_model_options model;
} bench_model_args;

enum { PP, TG };

typedef struct test_result {
  char name[32];
  long tokens;
  double *us;              /* per repetition */
  double mean_ts, sd_ts;   /* tokens/s */
} test_result;

typedef struct floor_result {
  bool has;
  double gbs, weight_bytes, embedding_bytes, kv_bytes, mean_context, bytes, us, step_us;
  double expert_unread, moe_us; /* a MoE model: the experts a token does not read */
  int64_t experts, top_k;
} floor_result;

static uint32_t rng_state;
static int32_t random_id(int64_t vocab) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return (int32_t)((rng_state >> 8) % (uint32_t)vocab);
}

/* One run of a test on a fresh sequence: its time in us. */
static sk_status run_test(cli_model *m, sk_model_seq *seq, int which, const int32_t *ids, long tokens, float *logits,
                          double *us) {
  sk_status st = sk_model_seq_truncate(seq, 0);
  const double t0 = cli_now_us();
  if (which == PP) {
    if (st == SK_STATUS_OK) st = sk_model_forward(seq, m->team, ids, tokens, logits, 1);
  } else {
    for (long i = 0; st == SK_STATUS_OK && i < tokens; i++) st = sk_model_forward(seq, m->team, &ids[i], 1, logits, 1);
  }
  *us = cli_now_us() - t0;
  return st;
}

static void summarize(test_result *t, long reps) {
  double sum = 0, sq = 0;
  for (long r = 0; r < reps; r++) sum += (double)t->tokens / (t->us[r] * 1e-6);
  t->mean_ts = sum / (double)reps;
  for (long r = 0; r < reps; r++) {
    const double d = (double)t->tokens / (t->us[r] * 1e-6) - t->mean_ts;
    sq += d * d;
  }
  t->sd_ts = reps > 1 ? sqrt(sq / (double)(reps - 1)) : 0;
}

static void decode_floor(const bench_model_args *a, const cli_model *m, const test_result *tg, double gbs,
                         floor_result *f) {
  size_t embedding_bytes = 0, expert_bytes = 0; /* of the tensors the model took */
  for (size_t i = 0; i < sk_checkpoint_tensor_count(m->files); i++) {
    const sk_checkpoint_tensor *t = sk_checkpoint_tensor_at(m->files, i);
    if (!t->used) continue;
    /* an FP8 weight is held (and read) in the model's dtype */
    const size_t bytes = t->dtype == SK_DTYPE_INVALID ? (size_t)t->numel * sk_dtype_size(m->dtype) : t->bytes;
    /* the routed experts: mlp.experts.J.* (Mixtral's files: block_sparse_moe.experts.J.*), not shared_experts */
    if (strstr(t->name, ".experts.")) expert_bytes += bytes;
    if (strcmp(t->name, "model.embed_tokens.weight") == 0) embedding_bytes = t->bytes;
  }
  const int64_t experts = m->experts, top_k = m->experts_per_token;
  double step = 0;
  for (long r = 0; r < a->reps; r++) step += tg->us[r] / (double)tg->tokens;
  const double row = m->vocab ? (double)embedding_bytes / (double)m->vocab : 0;
  *f = (floor_result){.has = gbs > 0, .gbs = gbs, .weight_bytes = (double)m->weight_bytes,
                      .embedding_bytes = (double)embedding_bytes, .mean_context = (double)(tg->tokens + 1) / 2,
                      .step_us = step / (double)a->reps, .experts = experts, .top_k = top_k};
  /* a token at position i reads i + 1 rows of every layer's k and v caches */
  f->kv_bytes = (double)m->cache_bytes / (double)m->max_context * f->mean_context;
  f->bytes = f->weight_bytes - f->embedding_bytes + row + f->kv_bytes;
  f->us = f->has ? f->bytes / (gbs * 1e3) : 0;
  if (experts > 0 && top_k > 0 && top_k < experts) {
    /* w8a8: the experts are read as int8 (their scales, 4 bytes a channel, left out) */
    const double read_bytes = (double)expert_bytes / (m->w8a8 ? (double)sk_dtype_size(m->dtype) : 1.0);
    f->expert_unread = read_bytes * (double)(experts - top_k) / (double)experts;
    f->moe_us = f->has ? (f->bytes - f->expert_unread) / (gbs * 1e3) : 0;
  }
}

static void print_table(const bench_model_args *a, const cli_model *m, const sk_bench_machine *machine,
                        const test_result *tests, const bool *ran, const floor_result *f) {
  char cpu[256];
  blas_cpu_describe(&machine->cpu, cpu, sizeof cpu);
  printf("model %s (%s)\nmachine %s, %d cores\n", m->about, a->dir, cpu, machine->cores);
  printf("executor %s, max_context %lld, %ld repetitions after a warm-up run; ids random (fixed seed)\n",
         sk_executor_name(a->model.exec.given ? a->model.exec.executor : SK_EXECUTOR_DEFAULT),
         (long long)m->max_context, a->reps);
  printf("| %-24s | %10s | %7s | %10s | %20s |\n", "model", "size", "threads", "test", "t/s");
  printf("| %-24s | %10s | %7s | %10s | %20s |\n", "------------------------", "---------:", "------:", "---------:",
         "-------------------:");
  char size[32];
  const double mib = (double)m->weight_bytes / (1 << 20);
  snprintf(size, sizeof size, mib < 1024 ? "%.2f MiB" : "%.2f GiB", mib < 1024 ? mib : mib / 1024);
  for (int k = PP; k <= TG; k++)
    if (ran[k]) {
      char ts[48];
      snprintf(ts, sizeof ts, "%.2f ± %.2f", tests[k].mean_ts, tests[k].sd_ts);
      printf("| %-24s | %10s | %7d | %10s | %21s |\n", m->family, size, sk_team_num_cores(m->team), tests[k].name, ts);
    }
  if (!f->has) return;
  printf("decode floor: %.1f us a token = %.2f MB read at %.1f GB/s (read bandwidth, %d threads, measured in this run):\n"
         "  the weights' %.2f MB (sk_model_info.weight_bytes) less the embedding table's %.2f MB (a token reads one\n"
         "  row of it), plus %.3f MB of KV cache at %s's mean context of %.1f tokens\n",
         f->us, f->bytes * 1e-6, f->gbs, sk_team_num_cores(m->team), f->weight_bytes * 1e-6, f->embedding_bytes * 1e-6,
         f->kv_bytes * 1e-6, tests[TG].name, f->mean_context);
  if (f->expert_unread > 0)
    printf("  MoE: a token reads only its top %lld of the %lld experts of each MoE layer, so %.2f MB of the\n"
           "  experts counted above are not read by any one token: with only the experts read, the floor is %.1f us\n",
           (long long)f->top_k, (long long)f->experts, f->expert_unread * 1e-6, f->moe_us);
  printf("%s step: %.1f us a token = %.2fx the floor", tests[TG].name, f->step_us, f->step_us / f->us);
  if (f->expert_unread > 0) printf(" (%.2fx the experts-read floor)", f->step_us / f->moe_us);
  printf("\n");
}

static void print_json(const bench_model_args *a, const cli_model *m, const sk_bench_machine *machine,
                       const test_result *tests, const bool *ran, const floor_result *f) {
  printf("{\n  \"machine\": ");
  sk_bench_machine_json(machine);
  printf(",\n  \"model\": {\"dir\": ");
  sk_json_string(a->dir);
  printf(", \"family\": ");
  sk_json_string(m->family);
  printf(", \"about\": ");
  sk_json_string(m->about);
  printf(", \"weight_bytes\": %zu, \"cache_bytes\": %zu, \"max_context\": %lld},\n", m->weight_bytes, m->cache_bytes,
         (long long)m->max_context);
  printf("  \"executor\": \"%s\", \"threads\": %d, \"repetitions\": %ld,\n  \"results\": [",
         sk_executor_name(a->model.exec.given ? a->model.exec.executor : SK_EXECUTOR_DEFAULT),
         sk_team_num_cores(m->team), a->reps);
  bool first = true;
  for (int k = PP; k <= TG; k++) {
    if (!ran[k]) continue;
    const test_result *t = &tests[k];
    printf("%s\n    {\"test\": \"%s\", \"n_prompt\": %ld, \"n_gen\": %ld, \"avg_ts\": %.6f, \"stddev_ts\": %.6f,\n"
           "     \"samples_ts\": [", first ? "" : ",", t->name, k == PP ? t->tokens : 0L, k == TG ? t->tokens : 0L,
           t->mean_ts, t->sd_ts);
    for (long r = 0; r < a->reps; r++) printf("%s%.6f", r ? ", " : "", (double)t->tokens / (t->us[r] * 1e-6));
    printf("], \"samples_ns\": [");
    for (long r = 0; r < a->reps; r++) printf("%s%.0f", r ? ", " : "", t->us[r] * 1e3);
    printf("]}");
    first = false;
  }
  printf("\n  ],\n  \"decode_floor\": ");
  if (f->has)
    printf("{\"bytes\": %.0f, \"weight_bytes\": %.0f, \"embedding_bytes\": %.0f, \"kv_bytes\": %.0f, "
           "\"mean_context\": %.1f,\n    \"read_gbs\": %.3f, \"us\": %.3f, \"step_us\": %.3f, \"step_over_floor\": %.6f, "
           "\"moe_unread_expert_bytes\": %.0f, \"moe_floor_us\": %.3f}",
           f->bytes, f->weight_bytes, f->embedding_bytes, f->kv_bytes, f->mean_context, f->gbs, f->us, f->step_us,
           f->step_us / f->us, f->expert_unread, f->moe_us);
  else
    printf("null");
  printf("\n}\n");
}

static int bench(const bench_model_args *a, cli_model *m) {
  const long need = a->p > a->n ? a->p : a->n;
  if (need > m->max_context) {
    fprintf(stderr, "sk bench model: -p %ld / -n %ld: past max_context %lld (raise --max-context)\n", a->p, a->n,
            (long long)m->max_context);
    return SK_EXIT_USAGE;
  }
  sk_bench_machine machine;
  sk_bench_machine_read(&machine, false);
  machine.blas_why = "not used: this floor is the read bandwidth";
  const int threads = sk_team_num_cores(m->team);
  const bool floor = !a->no_floor && a->n > 0;
  const double bw_before = floor ? sk_read_bandwidth_gbs(threads) : 0;

  test_result tests[2] = {{.tokens = a->p}, {.tokens = a->n}};
  const bool ran[2] = {a->p > 0, a->n > 0};
  snprintf(tests[PP].name, sizeof tests[PP].name, "pp%ld", a->p);
  snprintf(tests[TG].name, sizeof tests[TG].name, "tg%ld", a->n);
  int32_t *ids = malloc((size_t)(need > 0 ? need : 1) * sizeof *ids);
  float *logits = malloc((size_t)m->vocab * sizeof *logits);
  sk_model_seq *seq = NULL;
  sk_status st = SK_STATUS_OK;
  for (int k = PP; k <= TG; k++)
    if (!(tests[k].us = calloc((size_t)a->reps, sizeof(double)))) st = SK_STATUS_OUT_OF_MEMORY;
  if (!ids || !logits) st = SK_STATUS_OUT_OF_MEMORY;
  if (st == SK_STATUS_OK) st = sk_model_seq_create(m->model, &seq);
  int rc = st == SK_STATUS_OK ? SK_EXIT_OK : cli_model_failed("bench model", m, "a sequence", st);
  for (int k = PP; k <= TG && rc == SK_EXIT_OK; k++) {
    if (!ran[k]) continue;
    rng_state = k == PP ? 1234u : 5678u;
    for (long i = 0; i < tests[k].tokens; i++) ids[i] = random_id(m->vocab);
    double warm;
    st = run_test(m, seq, k, ids, k == PP ? tests[k].tokens : 1, logits, &warm);
    for (long r = 0; st == SK_STATUS_OK && r < a->reps; r++)
      st = run_test(m, seq, k, ids, tests[k].tokens, logits, &tests[k].us[r]);
    if (st != SK_STATUS_OK) rc = cli_model_failed("bench model", m, tests[k].name, st);
    else summarize(&tests[k], a->reps);
  }
  sk_model_seq_destroy(seq);
  floor_result f = {0};
  if (rc == SK_EXIT_OK && floor) {
    const double bw_after = sk_read_bandwidth_gbs(threads);
    decode_floor(a, m, &tests[TG], bw_after > bw_before ? bw_after : bw_before, &f);
  }
  if (rc == SK_EXIT_OK && a->json) print_json(a, m, &machine, tests, ran, &f);
  else if (rc == SK_EXIT_OK) print_table(a, m, &machine, tests, ran, &f);
  for (int k = PP; k <= TG; k++) free(tests[k].us);
  free(ids);
  free(logits);
  return rc;
}

int sk_cmd_bench_model(int argc, char **argv) {
  bench_model_args a = {.p = 512, .n = 128, .reps = 5};
  const cli_arg opts[] = {
      CLI_OPT_INT("-p", &a.p, 0, 1 << 24),          CLI_OPT_INT("--n-prompt", &a.p, 0, 1 << 24),
      CLI_OPT_INT("-n", &a.n, 0, 1 << 24),          CLI_OPT_INT("--n-gen", &a.n, 0, 1 << 24),
      CLI_OPT_INT("-r", &a.reps, 1, 1000000),       CLI_OPT_INT("--repetitions", &a.reps, 1, 1000000),
      CLI_OPT_FLAG("--json", &a.json),              CLI_OPT_FLAG("--no-floor", &a.no_floor),
      CLI_MODEL_OPTS(&a.model),
  };
  cli_positional pos = {.name = "DIR", .values = &a.dir, .max = 1};
  bool help;
  int rc = cli_parse_args("bench model", synopsis, usage, argc, argv, opts, CLI_N(opts), &pos, &help);
  if (rc != SK_EXIT_OK || help) return rc;
  if (!a.dir) return cli_usage_error("bench model", synopsis, "missing DIR (a checkpoint directory)");
  if (!a.p && !a.n) return cli_usage_error("bench model", synopsis, "-p 0 and -n 0: no test to run");
  cli_model m;
  rc = cli_model_open("bench model", a.dir, &a.model, a.p > a.n ? a.p : a.n, &m);
  if (rc == SK_EXIT_OK) rc = bench(&a, &m);
  cli_model_close(&m);
  return rc;
}

/* moe_gating_topk on the seed's configuration: x fp16 [256, 256], bias,
 * sigmoid (norm_type 1), group_select_mode 1 over 8 groups, k_group 4, k 8,
 * renorm; one core (a team of 1, eager), bound buffers. Prints the median
 * time per call over --reps runs (after a warm-up). The ISA path is the
 * library's choice, or SK_ISA=scalar|avx2|avx512 (run it once per path).
 *
 *   build/bin/bench_moe_gating_topk [--reps N] [--t T]
 *
 * Under callgrind use a small --reps (e.g. 50): the setup is cheap, so the
 * instruction counts are the op's (divide sk__moe_run_block's inclusive
 * count by reps + the warm-up runs printed). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>

#include "bench_util.h"

#define E 256
#define K 8
#define WARMUP 5

static uint64_t rng = 20240505;
static float uniform(double lo, double hi) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)(lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53);
}

int main(int argc, char **argv) {
  int reps = 2000;
  int64_t t = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--t") == 0) t = atoll(argv[i + 1]);
  }
  if (reps < 1 || t < 1) {
    fprintf(stderr, "usage: bench_moe_gating_topk [--reps N>=1] [--t T>=1]\n");
    return 2;
  }
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value x, b, outs[3];
  CHECK(sk_graph_add_input(g, "x", SK_FP16, 2, (int64_t[]){t, E}, &x));
  CHECK(sk_graph_add_input(g, "bias", SK_FP16, 1, (int64_t[]){E}, &b));
  sk_op_input in[] = {{"x", &x, 1}, {"bias", &b, 1}};
  sk_attr at[] = {SK_ATTR_INT("k", K),           SK_ATTR_INT("k_group", 4),   SK_ATTR_INT("group_count", 8),
                  SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("renorm", 1), SK_ATTR_INT("norm_type", 1)};
  sk_op_desc d = {.op = "moe_gating_topk", .inputs = in, .n_inputs = 2, .attrs = at, .n_attrs = 6};
  CHECK(sk_graph_add_op(g, &d, outs, 3, NULL));
  CHECK(sk_graph_mark_output(g, outs[0], "y"));
  CHECK(sk_graph_mark_output(g, outs[1], "expert_idx"));
  CHECK(sk_graph_mark_output(g, outs[2], "out"));
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 1};
  CHECK(sk_team_create(&tc, &team));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_program *p;
  CHECK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);

  uint16_t *xd = malloc((size_t)(t * E) * 2), bd[E], *y = malloc((size_t)(t * K) * 2);
  int32_t *idx = malloc((size_t)(t * K) * 4);
  float *out = malloc((size_t)(t * E) * 4);
  for (int64_t i = 0; i < t * E; i++) xd[i] = sk_fp32_to_fp16(uniform(-4, 4));
  for (int i = 0; i < E; i++) bd[i] = sk_fp32_to_fp16(uniform(-0.5, 0.5));
  CHECK(sk_program_bind(p, SK_IO_INPUT, 0, xd, (size_t)(t * E) * 2));
  CHECK(sk_program_bind(p, SK_IO_INPUT, 1, bd, sizeof bd));
  CHECK(sk_program_bind(p, SK_IO_OUTPUT, 0, y, (size_t)(t * K) * 2));
  CHECK(sk_program_bind(p, SK_IO_OUTPUT, 1, idx, (size_t)(t * K) * 4));
  CHECK(sk_program_bind(p, SK_IO_OUTPUT, 2, out, (size_t)(t * E) * 4));
  for (int r = 0; r < WARMUP; r++) CHECK(sk_program_run_bound(p, team));
  double *ts = malloc((size_t)reps * sizeof *ts);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    CHECK(sk_program_run_bound(p, team));
    ts[r] = now_us() - t0;
  }
  /* A checksum of the outputs, so a change that alters them shows here too. */
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < t * K; i++) h = (h ^ (uint64_t)(uint32_t)idx[i] ^ ((uint64_t)y[i] << 32)) * 1099511628211ull;
  for (int64_t i = 0; i < t * E; i++) {
    uint32_t u;
    memcpy(&u, &out[i], 4);
    h = (h ^ u) * 1099511628211ull;
  }
  const char *isa = getenv("SK_ISA");
  printf("moe_gating_topk fp16 [%lld, %d] sigmoid, bias, 8 groups mode 1, k_group 4, k %d; 1 core, ISA %s\n",
         (long long)t, E, K, isa ? isa : "(default)");
  printf("  median of %d runs (+%d warm-up): %.2f us/call  (%.1f ns/row)  checksum %016llx\n", reps, WARMUP,
         median(ts, reps), median(ts, reps) * 1e3 / (double)t, (unsigned long long)h);
  free(ts), free(xd), free(y), free(idx), free(out);
  sk_program_destroy(p);
  sk_team_destroy(team);
  return 0;
}

/* example05_super_kernel_options — one scope under many option strings (the
 * seed's options AOT example, on our runtime).
 *
 * The scope "moe" is a small MoE-like block:
 *
 *   g          = grouped_matmul(x, weight)                 [256,256] fp16  (CUBE)
 *   y, idx, _  = moe_gating_topk(g, bias, k=8, k_group=4, group_count=8,
 *                                group_select_mode=1, norm_type=1)        (VECTOR)
 *   c          = cast(g, fp32)                              [256,256] fp32  (VECTOR)
 *   act        = add(square(c), c)                          [256,256] fp32  (VECTOR)
 *
 * outputs y (fp16 [256,8]), idx (int32 [256,8]) and act. The same graph is
 * built once per option string below, compiled as an interpreted super
 * kernel on a team of every core, run, and compared bit for bit with the
 * graph run with super kernels off (eager). Each line gives the options, the
 * plan's flag and barrier counts (from sk_program_describe), the median run
 * time and whether the outputs are equal. An invalid option string is then
 * shown being rejected (sk_options_validate + sk_last_error), which is
 * expected and does not fail the example.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "superkernel.h"

/* Timed runs for a median; a sanitizer build sets 5 (examples/CMakeLists.txt). */
#ifndef SK_EXAMPLE_TIMING_REPS
#define SK_EXAMPLE_TIMING_REPS 51
#endif

#define CHECK(call)                                                                          \
  do {                                                                                       \
    sk_status st_ = (call);                                                                  \
    if (st_ != SK_STATUS_OK) {                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, sk_status_string(st_), sk_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { T = 256, H = 128, E = 256, TOPK = 8 };

static const char *const option_strings[] = {
    "",
    "early-start=0",
    "early-start=2",
    "preload-code=max",
    "preload-code=none",
    "debug-sync-all=1",
    "debug-dcci-all=1",
    "dcci-before-kernel-start=grouped_.*:dcci-after-kernel-end=square",
    "debug-aic-num=1",
    "split-mode=1:feed-sync-all=1",
};
enum { N_OPTIONS = sizeof option_strings / sizeof option_strings[0] };

static const char *const invalid_options = "early-start=3";

enum { IN_X, IN_W, IN_BIAS, N_INPUTS };
enum { OUT_Y, OUT_IDX, OUT_ACT, N_OUTPUTS };
static const char *const output_names[N_OUTPUTS] = {"y", "idx", "act"};
static const size_t output_bytes[N_OUTPUTS] = {T * TOPK * 2, T * TOPK * 4, T * E * 4};

static uint64_t rng = 20240505;
static float uniform(double lo, double hi) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)(lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53);
}

static void node(sk_graph *g, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                 const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs) {
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                  .attrs = attrs, .n_attrs = n_attrs};
  CHECK(sk_graph_add_op(g, &d, outs, max_outs, NULL));
}

/* The model with its one scope under `options`. */
static sk_graph *build_model(const char *options) {
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value in[N_INPUTS];
  CHECK(sk_graph_add_input(g, "x", SK_FP16, 2, (const int64_t[]){T, H}, &in[IN_X]));
  CHECK(sk_graph_add_input(g, "weight", SK_FP16, 2, (const int64_t[]){H, E}, &in[IN_W]));
  CHECK(sk_graph_add_input(g, "bias", SK_FP16, 1, (const int64_t[]){E}, &in[IN_BIAS]));

  CHECK(sk_graph_begin_scope(g, "moe", options));
  sk_value gmm, moe[3], c, sq, act;
  sk_op_input gmm_in[] = {{"x", &in[IN_X], 1}, {"weight", &in[IN_W], 1}};
  sk_attr gmm_attrs[] = {SK_ATTR_INT("group_type", -1)};
  node(g, "gmm", "grouped_matmul", gmm_in, 2, gmm_attrs, 1, &gmm, 1);
  sk_op_input moe_in[] = {{"x", &gmm, 1}, {"bias", &in[IN_BIAS], 1}};
  sk_attr moe_attrs[] = {SK_ATTR_INT("k", TOPK), SK_ATTR_INT("k_group", 4), SK_ATTR_INT("group_count", 8),
                         SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1)};
  node(g, "gating", "moe_gating_topk", moe_in, 2, moe_attrs, 5, moe, 3);
  sk_op_input cast_in[] = {{"x", &gmm, 1}};
  sk_attr to_fp32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  node(g, "cast", "cast", cast_in, 1, to_fp32, 1, &c, 1);
  sk_op_input sq_in[] = {{"x", &c, 1}};
  node(g, "square", "square", sq_in, 1, NULL, 0, &sq, 1);
  sk_op_input add_in[] = {{"x", &sq, 1}, {"y", &c, 1}};
  node(g, "add", "add", add_in, 2, NULL, 0, &act, 1);
  CHECK(sk_graph_end_scope(g));

  CHECK(sk_graph_mark_output(g, moe[0], output_names[OUT_Y]));
  CHECK(sk_graph_mark_output(g, moe[1], output_names[OUT_IDX]));
  CHECK(sk_graph_mark_output(g, act, output_names[OUT_ACT]));
  return g;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { REPS = SK_EXAMPLE_TIMING_REPS };

static double median_run_us(sk_program *p, sk_team *team, const sk_buffer *inputs, const sk_buffer *outputs) {
  double times[REPS];
  CHECK(sk_program_run(p, team, inputs, N_INPUTS, outputs, N_OUTPUTS));
  for (int r = 0; r < REPS; r++) {
    double t0 = now_us();
    CHECK(sk_program_run(p, team, inputs, N_INPUTS, outputs, N_OUTPUTS));
    times[r] = now_us() - t0;
  }
  qsort(times, REPS, sizeof times[0], cmp_double);
  return times[REPS / 2];
}

/* The flag and barrier counts from the plan's header line. */
static void plan_counts(const sk_program *p, int *flags, int *barriers) {
  char *text;
  CHECK(sk_program_describe(p, &text));
  *flags = *barriers = -1;
  const char *at = strstr(text, " sub-kernels, ");
  if (at && sscanf(at, " sub-kernels, %d flags, %d barriers", flags, barriers) != 2) *flags = *barriers = -1;
  sk_free(text);
}

int main(void) {
  sk_team *team;
  CHECK(sk_team_create(NULL, &team));

  /* Inputs: activations in [-1, 1], weights scaled for outputs near unit size. */
  uint16_t *x = malloc(T * H * 2), *w = malloc(H * E * 2), *bias = malloc(E * 2);
  if (!x || !w || !bias) return 1;
  for (int i = 0; i < T * H; i++) x[i] = sk_fp32_to_fp16(uniform(-1, 1));
  for (int i = 0; i < H * E; i++) w[i] = sk_fp32_to_fp16(uniform(-0.15, 0.15));
  for (int i = 0; i < E; i++) bias[i] = sk_fp32_to_fp16(uniform(-0.1, 0.1));
  sk_buffer inputs[N_INPUTS] = {{"x", x, T * H * 2}, {"weight", w, H * E * 2}, {"bias", bias, E * 2}};

  void *want[N_OUTPUTS], *got[N_OUTPUTS];
  sk_buffer out_want[N_OUTPUTS], out_got[N_OUTPUTS];
  for (int o = 0; o < N_OUTPUTS; o++) {
    want[o] = calloc(1, output_bytes[o]);
    got[o] = calloc(1, output_bytes[o]);
    if (!want[o] || !got[o]) return 1;
    out_want[o] = (sk_buffer){output_names[o], want[o], output_bytes[o]};
    out_got[o] = (sk_buffer){output_names[o], got[o], output_bytes[o]};
  }

  /* The baseline: super kernels off. */
  sk_graph *g = build_model("");
  sk_compile_config eager_cfg = {.struct_size = sizeof eager_cfg, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_program *eager;
  CHECK(sk_compile(g, &eager_cfg, &eager));
  sk_graph_destroy(g);
  double t_eager = median_run_us(eager, team, inputs, out_want);
  sk_program_destroy(eager);

  printf("scope moe: grouped_matmul [%d,%d]x[%d,%d] -> moe_gating_topk k=%d, cast -> square -> add; fp16 in\n", T, H, H,
         E, TOPK);
  printf("team of %d cores, medians of %d runs; super kernels off (eager): %.1f us\n", sk_team_num_cores(team), REPS,
         t_eager);
  printf("  %-66s %5s %8s %10s  %s\n", "options", "flags", "barriers", "time (us)", "vs eager");
  bool all_equal = true;
  sk_compile_config fused_cfg = {.struct_size = sizeof fused_cfg, .team = team, .executor = SK_EXECUTOR_INTERP};
  for (int k = 0; k < N_OPTIONS; k++) {
    g = build_model(option_strings[k]);
    sk_program *fused;
    CHECK(sk_compile(g, &fused_cfg, &fused));
    sk_graph_destroy(g);
    for (int o = 0; o < N_OUTPUTS; o++) memset(got[o], 0xA5, output_bytes[o]); /* no stale results */
    int flags, barriers;
    plan_counts(fused, &flags, &barriers);
    double t = median_run_us(fused, team, inputs, out_got);
    bool equal = true;
    for (int o = 0; o < N_OUTPUTS; o++) equal = equal && memcmp(want[o], got[o], output_bytes[o]) == 0;
    all_equal = all_equal && equal;
    char quoted[96];
    snprintf(quoted, sizeof quoted, "\"%s\"", option_strings[k]);
    printf("  %-66s %5d %8d %10.1f  %s\n", quoted, flags, barriers, t, equal ? "equal" : "DIFFERS");
    sk_program_destroy(fused);
  }

  /* An invalid string is reported, not fatal. */
  sk_status st = sk_options_validate(invalid_options);
  printf("invalid options \"%s\": %s: %s\n", invalid_options, sk_status_string(st), sk_last_error());
  if (st == SK_STATUS_OK) all_equal = false; /* it must have been rejected */

  for (int o = 0; o < N_OUTPUTS; o++) {
    free(want[o]);
    free(got[o]);
  }
  free(x);
  free(w);
  free(bias);
  sk_team_destroy(team);
  if (!all_equal) return 1;
  printf("execute sample success\n");
  return 0;
}

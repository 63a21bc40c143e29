/* example02_super_kernel_profiling — the seed's profiling comparison.
 *
 * A model of six scopes built from the MoE op set:
 *
 *   x ─ sk1: grouped_matmul → moe_gating_topk ─ cast ─┐        (sk1, sk2, sk4: identical)
 *       sk2: grouped_matmul → moe_gating_topk ─ cast ─┤
 *       sk3: grouped_matmul (+ bias) → moe_gating_topk ─ cast ─┤   (an extra bias: its own kernel)
 *       sk4: grouped_matmul → moe_gating_topk ─ cast ─┤
 *       sk5: grouped_matmul → moe_gating_topk ─ cast   (early-start=0: its own kernel)
 *       sk6: dequant_swiglu_quant                      (a different op)
 *
 * Identical scopes (same ops, shapes, options) reuse one compiled super
 * kernel while differing scopes compile on their own — the JIT's log lines
 * (shown here) say which. The model then runs with super kernels off and on,
 * each writing op_statistic.csv and trace.json under prof_result/no_sk_model/
 * and prof_result/sk_model/, and the example prints both totals and the
 * gain in percent (the seed's published figure for its hardware: 5.61%).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "superkernel.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    sk_status st_ = (call);                                                                  \
    if (st_ != SK_STATUS_OK) {                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, sk_status_string(st_), sk_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { T = 64, E = 128, H = 64 };

static sk_value node(sk_graph *g, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                     const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs) {
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                  .attrs = attrs, .n_attrs = n_attrs};
  CHECK(sk_graph_add_op(g, &d, outs, max_outs, NULL));
  return outs[0];
}

/* One routing scope: scores = x @ w (+ bias), gating top-k; returns the
 * normalized scores cast back to fp16 for the next scope. */
static sk_value routing_scope(sk_graph *g, int index, sk_value x, sk_value w, const sk_value *bias, const char *options) {
  char scope[8], name[32];
  snprintf(scope, sizeof scope, "sk%d", index);
  CHECK(sk_graph_begin_scope(g, scope, options));
  sk_op_input mm_in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", bias, 1}};
  sk_value scores, gate[3], next;
  snprintf(name, sizeof name, "gmm_%d", index);
  node(g, name, "grouped_matmul", mm_in, bias ? 3 : 2, NULL, 0, &scores, 1);
  sk_op_input moe_in[] = {{"x", &scores, 1}};
  sk_attr moe_attrs[] = {SK_ATTR_INT("k", 8), SK_ATTR_INT("k_group", 4), SK_ATTR_INT("group_count", 8),
                         SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1), SK_ATTR_INT("out_flag", 1)};
  snprintf(name, sizeof name, "moe_%d", index);
  node(g, name, "moe_gating_topk", moe_in, 1, moe_attrs, 6, gate, 3);
  sk_op_input cast_in[] = {{"x", &gate[2], 1}};
  sk_attr to_fp16[] = {SK_ATTR_INT("dtype", SK_FP16)};
  snprintf(name, sizeof name, "cast_%d", index);
  node(g, name, "cast", cast_in, 1, to_fp16, 1, &next, 1);
  CHECK(sk_graph_end_scope(g));
  return next;
}

static sk_graph *build_model(void) {
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value x, w, b, dx, ws;
  CHECK(sk_graph_add_input(g, "x", SK_FP16, 2, (int64_t[]){T, E}, &x));
  CHECK(sk_graph_add_input(g, "w", SK_FP16, 2, (int64_t[]){E, E}, &w));
  CHECK(sk_graph_add_input(g, "b", SK_FP16, 1, (int64_t[]){E}, &b));
  CHECK(sk_graph_add_input(g, "dsq_x", SK_INT32, 2, (int64_t[]){T, 2 * H}, &dx));
  CHECK(sk_graph_add_input(g, "dsq_scale", SK_FP32, 1, (int64_t[]){2 * H}, &ws));
  sk_value h = routing_scope(g, 1, x, w, NULL, NULL);
  h = routing_scope(g, 2, h, w, NULL, NULL);
  h = routing_scope(g, 3, h, w, &b, NULL);
  h = routing_scope(g, 4, h, w, NULL, NULL);
  h = routing_scope(g, 5, h, w, NULL, "early-start=0");
  CHECK(sk_graph_begin_scope(g, "sk6", NULL));
  sk_op_input dsq_in[] = {{"x", &dx, 1}, {"weight_scale", &ws, 1}};
  sk_attr dsq_attrs[] = {SK_ATTR_INT("quant_mode", 1)};
  sk_value q[2];
  node(g, "dsq", "dequant_swiglu_quant", dsq_in, 2, dsq_attrs, 1, q, 2);
  CHECK(sk_graph_end_scope(g));
  CHECK(sk_graph_mark_output(g, h, "routing"));
  CHECK(sk_graph_mark_output(g, q[0], "quantized"));
  return g;
}

/* Prints the JIT's lines about compiling, cache hits and reuse. */
static void show_jit_lines(sk_log_level level, const char *message, void *user) {
  (void)user;
  if (strncmp(message, "jit:", 4) == 0 || level >= SK_LOG_WARN) printf("  [log] %s\n", message);
}

/* Total of the Total Time(us) column of an op_statistic.csv. */
static double csv_total(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  double total = 0;
  if (!fgets(line, sizeof line, f)) total = -1;
  while (total >= 0 && fgets(line, sizeof line, f)) {
    char op[64], core[32];
    long count;
    double t;
    if (sscanf(line, "%63[^,],%31[^,],%ld,%lf", op, core, &count, &t) == 4) {
      total += t;
      printf("    %-22s %-8s %4ld launches %10.1f us\n", op, core, count, t);
    }
  }
  fclose(f);
  return total;
}

static void fill(sk_buffer *b, sk_dtype dt, uint64_t *seed) {
  size_t n = b->bytes / sk_dtype_size(dt);
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*seed >> 11) * 0x1p-53;
    if (dt == SK_FP16) ((uint16_t *)b->data)[i] = sk_fp32_to_fp16((float)(u - 0.5) * 0.25f);
    else if (dt == SK_INT32) ((int32_t *)b->data)[i] = (int32_t)(u * 2000.0) - 1000;
    else ((float *)b->data)[i] = (float)(0.001 + 0.01 * u);
  }
}

/* Runs p `iters` times with profiling and writes its profile to dir. */
static void profile_run(sk_program *p, sk_team *team, sk_buffer *in, size_t n_in, sk_buffer *out, size_t n_out,
                        const char *dir, int iters) {
  CHECK(sk_program_run(p, team, in, n_in, out, n_out)); /* warm-up, not recorded */
  sk_program_reset_profile(p);
  for (int i = 0; i < iters; i++) CHECK(sk_program_run(p, team, in, n_in, out, n_out));
  CHECK(sk_program_write_profile(p, dir));
}

int main(void) {
  sk_graph *g = build_model();
  sk_team *team;
  CHECK(sk_team_create(NULL, &team));
  sk_set_log_handler(show_jit_lines, NULL);
  sk_set_log_level(SK_LOG_INFO);
  printf("compiling the six scopes (super kernels on):\n");
  sk_compile_config on = {.struct_size = sizeof on, .team = team, .executor = SK_EXECUTOR_DEFAULT, .profile = 1};
  sk_compile_config off = {.struct_size = sizeof off, .team = team, .executor = SK_EXECUTOR_EAGER, .profile = 1};
  sk_program *sk_model, *no_sk_model;
  CHECK(sk_compile(g, &on, &sk_model));
  sk_set_log_level(SK_LOG_WARN);
  CHECK(sk_compile(g, &off, &no_sk_model));
  sk_graph_destroy(g);

  sk_dtype dtypes[] = {SK_FP16, SK_FP16, SK_FP16, SK_INT32, SK_FP32};
  const char *names[] = {"x", "w", "b", "dsq_x", "dsq_scale"};
  size_t sizes[] = {T * E * 2, E * E * 2, E * 2, T * 2 * H * 4, 2 * H * 4};
  sk_buffer in[5], out_on[2], out_off[2];
  uint64_t seed = 2;
  for (int i = 0; i < 5; i++) {
    in[i] = (sk_buffer){names[i], malloc(sizes[i]), sizes[i]};
    fill(&in[i], dtypes[i], &seed);
  }
  size_t out_sizes[] = {T * E * 2, T * H};
  const char *out_names[] = {"routing", "quantized"};
  for (int i = 0; i < 2; i++) {
    out_on[i] = (sk_buffer){out_names[i], calloc(1, out_sizes[i]), out_sizes[i]};
    out_off[i] = (sk_buffer){out_names[i], calloc(1, out_sizes[i]), out_sizes[i]};
  }
  enum { ITERS = 50 };
  profile_run(no_sk_model, team, in, 5, out_off, 2, "prof_result/no_sk_model", ITERS);
  profile_run(sk_model, team, in, 5, out_on, 2, "prof_result/sk_model", ITERS);
  bool same = memcmp(out_on[0].data, out_off[0].data, out_sizes[0]) == 0 &&
              memcmp(out_on[1].data, out_off[1].data, out_sizes[1]) == 0;

  printf("prof_result/no_sk_model/op_statistic.csv (%d runs):\n", ITERS);
  double t_off = csv_total("prof_result/no_sk_model/op_statistic.csv");
  printf("prof_result/sk_model/op_statistic.csv (%d runs):\n", ITERS);
  double t_on = csv_total("prof_result/sk_model/op_statistic.csv");
  printf("total without super kernels: %.1f us, with: %.1f us, gain %.2f%%\n", t_off, t_on,
         t_off > 0 ? (t_off - t_on) * 100.0 / t_off : 0.0);
  printf("outputs %s\n", same ? "bitwise equal" : "DIFFER");

  for (int i = 0; i < 5; i++) free(in[i].data);
  for (int i = 0; i < 2; i++) free(out_on[i].data), free(out_off[i].data);
  sk_program_destroy(sk_model);
  sk_program_destroy(no_sk_model);
  sk_team_destroy(team);
  if (!same || t_off <= 0 || t_on <= 0) return 1;
  printf("execute sample success\n");
  return 0;
}

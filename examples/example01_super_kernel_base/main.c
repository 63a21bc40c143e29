/* example01_super_kernel_base — the seed model (shared/spec/models.md).
 *
 *   sk1:  g1 = grouped_matmul(x=gmm1_x, weight=gmm1_weight, bias=gmm1_bias)   # [64,64], [256,320]
 *         g2 = grouped_matmul(x=g1, weight=gmm2_weight)                        # [64,56], [256,256]
 *         y, idx, out = moe_gating_topk(g2[1], bias=moe1_bias, k=8, k_group=4,
 *                                       group_count=8, group_select_mode=1, norm_type=1)
 *         r1 = reshape(idx, [2,8,128]); s = square(r1); c = concat([s, data1], dim=0)
 *         r2 = reshape(c, [-1,128])                                            # [48,128] int32
 *   sk2:  q, qs = dequant_swiglu_quant(r2, weight_scale=dsq_input[0], activation_scale=dsq_input[1],
 *                                      quant_scale=dsq_input[2], activate_left=0, quant_mode=1)
 *         output = quant_matmul(q, data2, scale=scale, output_dtype=fp16)       # [6,48,64] fp16
 *
 * The model is built with the C API (sk1 and sk2 as super-kernel scopes),
 * its inputs filled from a fixed seed, and run on a core team with super
 * kernels off (every op its own launch) and on (each scope one launch,
 * interpreted and JIT-compiled). Every output is checked bit for bit
 * against the same model run through every op's plain reference
 * implementation, and the times are printed side by side.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
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

/* The model's inputs, named as in models.md, with the value range each is
 * drawn from (uniformly, fixed seed): ranges keep every op in its meaningful
 * range (activations near unit size, silu arguments within a few units,
 * fp16 outputs far from overflow). */
typedef struct input_spec {
  const char *name;
  sk_dtype dtype;
  int rank;
  int64_t shape[3];
  double lo, hi;
} input_spec;

enum {
  GMM1_X0, GMM1_X1, GMM1_W0, GMM1_W1, GMM1_B0, GMM1_B1, GMM2_W0, GMM2_W1, MOE1_BIAS,
  DSQ0, DSQ1, DSQ2, DATA1, DATA2, SCALE, N_INPUTS
};

static const input_spec inputs_spec[N_INPUTS] = {
    [GMM1_X0] = {"gmm1_x_0", SK_FP16, 2, {64, 128}, -1, 1},
    [GMM1_X1] = {"gmm1_x_1", SK_FP16, 2, {256, 180}, -1, 1},
    [GMM1_W0] = {"gmm1_weight_0", SK_FP16, 2, {128, 64}, -0.088, 0.088},
    [GMM1_W1] = {"gmm1_weight_1", SK_FP16, 2, {180, 320}, -0.075, 0.075},
    [GMM1_B0] = {"gmm1_bias_0", SK_FP16, 1, {64}, -0.1, 0.1},
    [GMM1_B1] = {"gmm1_bias_1", SK_FP16, 1, {320}, -0.1, 0.1},
    [GMM2_W0] = {"gmm2_weight_0", SK_FP16, 2, {64, 56}, -0.125, 0.125},
    [GMM2_W1] = {"gmm2_weight_1", SK_FP16, 2, {320, 256}, -0.056, 0.056},
    [MOE1_BIAS] = {"moe1_bias", SK_FP16, 1, {256}, -0.1, 0.1},
    [DSQ0] = {"dsq_input_0", SK_FP32, 1, {128}, 1e-5, 1e-4},
    [DSQ1] = {"dsq_input_1", SK_FP32, 2, {48, 1}, 0.5, 1.5},
    [DSQ2] = {"dsq_input_2", SK_FP32, 2, {1, 64}, 0.5, 1.5},
    [DATA1] = {"data1", SK_INT32, 3, {4, 8, 128}, 0, 65536},
    [DATA2] = {"data2", SK_INT8, 3, {6, 64, 64}, -128, 128},
    [SCALE] = {"scale", SK_INT64, 1, {1}, 0, 0}, /* packed from a fixed fp32 scale below */
};

static int64_t numel(const input_spec *s) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->shape[d];
  return n;
}

static uint64_t rng = 20261129;
static double uniform(double lo, double hi) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

static void fill(const input_spec *s, void *data) {
  for (int64_t i = 0; i < numel(s); i++) {
    double v = uniform(s->lo, s->hi);
    switch (s->dtype) {
      case SK_FP16: ((uint16_t *)data)[i] = sk_fp32_to_fp16((float)v); break;
      case SK_FP32: ((float *)data)[i] = (float)v; break;
      case SK_INT32: ((int32_t *)data)[i] = (int32_t)floor(v); break;
      case SK_INT8: ((int8_t *)data)[i] = (int8_t)floor(v); break;
      default: break;
    }
  }
  if (s->dtype == SK_INT64) {
    float quant_scale = 1.0f / 4096.0f; /* keeps |output| well inside fp16 */
    CHECK(sk_trans_quant_param(&quant_scale, NULL, 1, data));
  }
}

/* One node with a single output. */
static sk_value node(sk_graph *g, const char *name, const char *op, const sk_op_input *in, size_t n_in,
                     const sk_attr *attrs, size_t n_attrs, sk_value *outs, size_t max_outs) {
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .name = name, .inputs = in, .n_inputs = n_in,
                  .attrs = attrs, .n_attrs = n_attrs};
  CHECK(sk_graph_add_op(g, &d, outs, max_outs, NULL));
  return outs[0];
}

static sk_graph *build_model(void) {
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value in[N_INPUTS];
  for (int i = 0; i < N_INPUTS; i++)
    CHECK(sk_graph_add_input(g, inputs_spec[i].name, inputs_spec[i].dtype, inputs_spec[i].rank, inputs_spec[i].shape,
                             &in[i]));

  /* ---- sk1: one super kernel ---- */
  CHECK(sk_graph_begin_scope(g, "sk1", NULL));
  sk_value g1[2], g2[2], moe[3];
  sk_op_input gmm1_in[] = {{"x", &in[GMM1_X0], 2}, {"weight", &in[GMM1_W0], 2}, {"bias", &in[GMM1_B0], 2}};
  sk_attr lists[] = {SK_ATTR_INT("group_type", -1)};
  node(g, "gmm1", "grouped_matmul", gmm1_in, 3, lists, 1, g1, 2);
  sk_op_input gmm2_in[] = {{"x", g1, 2}, {"weight", &in[GMM2_W0], 2}};
  node(g, "gmm2", "grouped_matmul", gmm2_in, 2, lists, 1, g2, 2);
  sk_op_input moe_in[] = {{"x", &g2[1], 1}, {"bias", &in[MOE1_BIAS], 1}};
  sk_attr moe_attrs[] = {SK_ATTR_INT("k", 8), SK_ATTR_INT("k_group", 4), SK_ATTR_INT("group_count", 8),
                         SK_ATTR_INT("group_select_mode", 1), SK_ATTR_INT("norm_type", 1)};
  node(g, "moe1", "moe_gating_topk", moe_in, 2, moe_attrs, 5, moe, 3);
  sk_value idx = moe[1];
  CHECK(sk_graph_end_scope(g));

  /* ---- unfused middle segment: reshape -> square -> concat -> reshape ---- */
  sk_value r1, s, c, r2;
  sk_op_input r1_in[] = {{"x", &idx, 1}};
  sk_attr r1_shape[] = {SK_ATTR_INTS("shape", ((const int64_t[]){2, 8, 128}), 3)};
  node(g, "reshape1", "reshape", r1_in, 1, r1_shape, 1, &r1, 1);
  sk_op_input s_in[] = {{"x", &r1, 1}};
  node(g, "square", "square", s_in, 1, NULL, 0, &s, 1);
  sk_value parts[2] = {s, in[DATA1]};
  sk_op_input c_in[] = {{"x", parts, 2}};
  sk_attr dim0[] = {SK_ATTR_INT("dim", 0)};
  node(g, "concat", "concat", c_in, 1, dim0, 1, &c, 1);
  sk_op_input r2_in[] = {{"x", &c, 1}};
  sk_attr r2_shape[] = {SK_ATTR_INTS("shape", ((const int64_t[]){-1, 128}), 2)};
  node(g, "reshape2", "reshape", r2_in, 1, r2_shape, 1, &r2, 1);

  /* ---- sk2: one super kernel ---- */
  CHECK(sk_graph_begin_scope(g, "sk2", NULL));
  sk_value dsq[2], out;
  sk_op_input dsq_in[] = {{"x", &r2, 1},
                          {"weight_scale", &in[DSQ0], 1},
                          {"activation_scale", &in[DSQ1], 1},
                          {"quant_scale", &in[DSQ2], 1}};
  sk_attr dsq_attrs[] = {SK_ATTR_INT("activate_left", 0), SK_ATTR_INT("quant_mode", 1)};
  node(g, "dsq", "dequant_swiglu_quant", dsq_in, 4, dsq_attrs, 2, dsq, 2);
  sk_op_input qmm_in[] = {{"x1", &dsq[0], 1}, {"x2", &in[DATA2], 1}, {"scale", &in[SCALE], 1}};
  sk_attr qmm_attrs[] = {SK_ATTR_INT("output_dtype", SK_FP16)};
  node(g, "qmm", "quant_matmul", qmm_in, 3, qmm_attrs, 1, &out, 1);
  CHECK(sk_graph_end_scope(g));
  CHECK(sk_graph_mark_output(g, out, "output"));
  return g;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median time of REPS runs of a program (after one warm-up run). */
static double median_run_us(sk_program *p, sk_team *team, const sk_buffer *inputs, const sk_buffer *outputs) {
  enum { REPS = SK_EXAMPLE_TIMING_REPS };
  double times[REPS];
  CHECK(sk_program_run(p, team, inputs, N_INPUTS, outputs, 1));
  for (int r = 0; r < REPS; r++) {
    double t0 = now_us();
    CHECK(sk_program_run(p, team, inputs, N_INPUTS, outputs, 1));
    times[r] = now_us() - t0;
  }
  qsort(times, REPS, sizeof times[0], cmp_double);
  return times[REPS / 2];
}

int main(void) {
  sk_graph *g = build_model();
  sk_team *team;
  CHECK(sk_team_create(NULL, &team));
  sk_compile_config fused_cfg = {.struct_size = sizeof fused_cfg, .team = team, .executor = SK_EXECUTOR_INTERP};
  sk_compile_config jit_cfg = {.struct_size = sizeof jit_cfg, .team = team, .executor = SK_EXECUTOR_JIT};
  sk_compile_config eager_cfg = {.struct_size = sizeof eager_cfg, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_compile_config ref_cfg = {.struct_size = sizeof ref_cfg, .executor = SK_EXECUTOR_REFERENCE};
  sk_program *fused, *jit, *eager, *reference;
  CHECK(sk_compile(g, &fused_cfg, &fused));
  CHECK(sk_compile(g, &jit_cfg, &jit)); /* falls back to interpreting, with a warning, if cc is missing */
  CHECK(sk_compile(g, &eager_cfg, &eager));
  CHECK(sk_compile(g, &ref_cfg, &reference));
  sk_graph_destroy(g);

  sk_buffer inputs[N_INPUTS];
  for (int i = 0; i < N_INPUTS; i++) {
    size_t bytes = (size_t)numel(&inputs_spec[i]) * sk_dtype_size(inputs_spec[i].dtype);
    inputs[i] = (sk_buffer){inputs_spec[i].name, malloc(bytes), bytes};
    fill(&inputs_spec[i], inputs[i].data);
  }
  int rank;
  int64_t shape[SK_MAX_RANK];
  CHECK(sk_program_output_info(fused, 0, NULL, NULL, &rank, shape));
  size_t out_elems = (size_t)(shape[0] * shape[1] * shape[2]);
  uint16_t *want = calloc(out_elems, 2), *got_eager = calloc(out_elems, 2), *got_fused = calloc(out_elems, 2),
           *got_jit = calloc(out_elems, 2);
  sk_buffer out_want[] = {{"output", want, out_elems * 2}}, out_eager[] = {{"output", got_eager, out_elems * 2}},
            out_fused[] = {{"output", got_fused, out_elems * 2}}, out_jit[] = {{"output", got_jit, out_elems * 2}};

  CHECK(sk_program_run(reference, NULL, inputs, N_INPUTS, out_want, 1));
  double t_eager = median_run_us(eager, team, inputs, out_eager);
  double t_fused = median_run_us(fused, team, inputs, out_fused);
  double t_jit = median_run_us(jit, team, inputs, out_jit);

  double checksum = 0, abs_sum = 0;
  for (size_t i = 0; i < out_elems; i++) {
    float v = sk_fp16_to_fp32(got_fused[i]);
    checksum += v;
    abs_sum += fabs(v);
  }
  bool eager_ok = memcmp(got_eager, want, out_elems * 2) == 0, fused_ok = memcmp(got_fused, want, out_elems * 2) == 0;
  bool jit_ok = memcmp(got_jit, want, out_elems * 2) == 0;
  printf("output: fp16 [%lld, %lld, %lld]  checksum %.4f  mean |x| %.4f\n", (long long)shape[0], (long long)shape[1],
         (long long)shape[2], checksum, abs_sum / (double)out_elems);
  printf("team of %d cores, medians of 51 runs:\n", sk_team_num_cores(team));
  printf("  super kernels off (eager):          %8.1f us  %s\n", t_eager,
         eager_ok ? "bitwise equal to the reference" : "DIFFERS from the reference");
  printf("  super kernels on, interpreted:      %8.1f us  %s  (%.2fx)\n", t_fused,
         fused_ok ? "bitwise equal to the reference" : "DIFFERS from the reference", t_eager / t_fused);
  printf("  super kernels on, JIT-compiled:     %8.1f us  %s  (%.2fx)\n", t_jit,
         jit_ok ? "bitwise equal to the reference" : "DIFFERS from the reference", t_eager / t_jit);

  for (int i = 0; i < N_INPUTS; i++) free(inputs[i].data);
  free(want);
  free(got_eager);
  free(got_fused);
  free(got_jit);
  sk_program_destroy(fused);
  sk_program_destroy(jit);
  sk_program_destroy(eager);
  sk_program_destroy(reference);
  sk_team_destroy(team);
  if (!eager_ok || !fused_ok || !jit_ok) return 1;
  printf("execute sample success\n");
  return 0;
}

/* example01_super_kernel_base — the seed model's first segment.
 *
 * Builds the two grouped matmuls of the seed's MoE block with the C API
 * (shapes from shared/spec/models.md), runs them on a core team, checks the
 * result against a plain C computation, and prints the output shapes and a
 * checksum. The MoE-operators issue extends it to the whole seed model.
 *
 *   g1 = grouped_matmul(x=[x0, x1], weight=[w0, w1], bias=[b0, b1])  # [64,64], [256,320]
 *   g2 = grouped_matmul(x=g1, weight=[w2, w3])                        # [64,56], [256,256]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "superkernel.h"

#define CHECK(call)                                                                        \
  do {                                                                                     \
    sk_status st_ = (call);                                                                \
    if (st_ != SK_STATUS_OK) {                                                             \
      fprintf(stderr, "%s failed: %s: %s\n", #call, sk_status_string(st_), sk_last_error()); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

typedef struct tensor_spec {
  const char *name;
  int64_t rows, cols; /* cols = 0: a vector of rows elements */
} tensor_spec;

static const tensor_spec specs[] = {
    {"gmm1_x_0", 64, 128},      {"gmm1_x_1", 256, 180},     {"gmm1_weight_0", 128, 64}, {"gmm1_weight_1", 180, 320},
    {"gmm1_bias_0", 64, 0},     {"gmm1_bias_1", 320, 0},    {"gmm2_weight_0", 64, 56},  {"gmm2_weight_1", 320, 256},
};
enum { N_INPUTS = sizeof specs / sizeof specs[0] };

static int64_t numel(const tensor_spec *s) { return s->rows * (s->cols ? s->cols : 1); }

/* A fixed-seed generator, so every run sees the same inputs. */
static uint64_t rng_state = 2026;
static float uniform(float lo, float hi) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (float)(rng_state >> 40) * 0x1p-24f;
}

/* The plain computation the library must match bit for bit:
 * acc = sequential fmaf over k from +0, + bias, rounded to fp16. */
static void plain_matmul(const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y, int64_t m,
                         int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; p++) acc = fmaf(sk_fp16_to_fp32(x[i * k + p]), sk_fp16_to_fp32(w[p * n + j]), acc);
      if (bias) acc += sk_fp16_to_fp32(bias[j]);
      y[i * n + j] = sk_fp32_to_fp16(acc);
    }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void) {
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value in[N_INPUTS];
  for (int i = 0; i < N_INPUTS; i++) {
    int64_t shape[2] = {specs[i].rows, specs[i].cols};
    CHECK(sk_graph_add_input(g, specs[i].name, SK_FP16, specs[i].cols ? 2 : 1, shape, &in[i]));
  }
  /* gmm1: lists of two groups with bias; group_type -1 is the default. */
  sk_value g1[2], g2[2];
  sk_op_input gmm1_in[] = {{"x", &in[0], 2}, {"weight", &in[2], 2}, {"bias", &in[4], 2}};
  sk_attr lists[] = {SK_ATTR_INT("group_type", -1)};
  sk_op_desc gmm1 = {.struct_size = sizeof gmm1, .op = "grouped_matmul", .name = "gmm1",
                     .inputs = gmm1_in, .n_inputs = 3, .attrs = lists, .n_attrs = 1};
  CHECK(sk_graph_add_op(g, &gmm1, g1, 2, NULL));
  /* gmm2: the whole output list of gmm1 is its x list. */
  sk_op_input gmm2_in[] = {{"x", g1, 2}, {"weight", &in[6], 2}};
  sk_op_desc gmm2 = {.struct_size = sizeof gmm2, .op = "grouped_matmul", .name = "gmm2",
                     .inputs = gmm2_in, .n_inputs = 2, .attrs = lists, .n_attrs = 1};
  CHECK(sk_graph_add_op(g, &gmm2, g2, 2, NULL));
  CHECK(sk_graph_mark_output(g, g2[0], "output_0"));
  CHECK(sk_graph_mark_output(g, g2[1], "output_1"));

  sk_team *team;
  CHECK(sk_team_create(NULL, &team));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team};
  sk_program *prog;
  CHECK(sk_compile(g, &cfg, &prog));
  sk_graph_destroy(g);

  /* Inputs in [-1, 1), weights scaled so activations stay near unit size. */
  sk_buffer inputs[N_INPUTS];
  for (int i = 0; i < N_INPUTS; i++) {
    uint16_t *data = malloc((size_t)numel(&specs[i]) * 2);
    float scale = strstr(specs[i].name, "weight") ? 1.0f / sqrtf((float)specs[i].rows) : 1.0f;
    for (int64_t j = 0; j < numel(&specs[i]); j++) data[j] = sk_fp32_to_fp16(uniform(-scale, scale));
    inputs[i] = (sk_buffer){specs[i].name, data, (size_t)numel(&specs[i]) * 2};
  }
  sk_buffer outputs[2];
  for (size_t i = 0; i < 2; i++) {
    const char *name;
    int rank;
    int64_t shape[SK_MAX_RANK];
    CHECK(sk_program_output_info(prog, i, &name, NULL, &rank, shape));
    outputs[i] = (sk_buffer){name, calloc((size_t)(shape[0] * shape[1]), 2), (size_t)(shape[0] * shape[1]) * 2};
  }

  /* The first run checks; the time reported is the median of the next 21. */
  CHECK(sk_program_run(prog, team, inputs, N_INPUTS, outputs, 2));
  enum { REPS = 21 };
  double times[REPS];
  for (int r = 0; r < REPS; r++) {
    double t0 = now_us();
    CHECK(sk_program_run(prog, team, inputs, N_INPUTS, outputs, 2));
    times[r] = now_us() - t0;
  }
  for (int i = 1; i < REPS; i++) /* insertion sort: 21 values */
    for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
      double t = times[j];
      times[j] = times[j - 1];
      times[j - 1] = t;
    }
  double elapsed = times[REPS / 2];

  /* Check against the plain computation, group by group. */
  const int64_t m[2] = {64, 256}, k1[2] = {128, 180}, n1[2] = {64, 320}, n2[2] = {56, 256};
  int mismatches = 0;
  for (int grp = 0; grp < 2; grp++) {
    uint16_t *mid = malloc((size_t)(m[grp] * n1[grp]) * 2), *want = malloc((size_t)(m[grp] * n2[grp]) * 2);
    plain_matmul(inputs[grp].data, inputs[2 + grp].data, inputs[4 + grp].data, mid, m[grp], k1[grp], n1[grp]);
    plain_matmul(mid, inputs[6 + grp].data, NULL, want, m[grp], n1[grp], n2[grp]);
    if (memcmp(want, outputs[grp].data, outputs[grp].bytes) != 0) mismatches++;
    free(mid);
    free(want);
  }

  for (size_t i = 0; i < 2; i++) {
    const char *name;
    int rank;
    int64_t shape[SK_MAX_RANK];
    CHECK(sk_program_output_info(prog, i, &name, NULL, &rank, shape));
    double checksum = 0;
    const uint16_t *y = outputs[i].data;
    for (int64_t j = 0; j < shape[0] * shape[1]; j++) checksum += sk_fp16_to_fp32(y[j]);
    printf("%s: fp16 [%lld, %lld]  checksum %.6f\n", name, (long long)shape[0], (long long)shape[1], checksum);
  }
  printf("team of %d cores, eager run %.1f us (median of 21), %s\n", sk_team_num_cores(team), elapsed,
         mismatches ? "MISMATCH against the plain C computation" : "bitwise equal to the plain C computation");

  for (int i = 0; i < N_INPUTS; i++) free(inputs[i].data);
  for (int i = 0; i < 2; i++) free(outputs[i].data);
  sk_program_destroy(prog);
  sk_team_destroy(team);
  if (mismatches) return 1;
  printf("execute sample success\n");
  return 0;
}

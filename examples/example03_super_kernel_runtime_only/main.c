/* example03_super_kernel_runtime_only — runtime only, custom kernels
 * (shared/spec/models.md).
 *
 * No graph. Two user-written kernels, described by their metadata (the
 * seed's kernel binary + json meta: entry, kernel type, block count,
 * workspace, parameter count):
 *
 *   pows    y[i] = x[i]^p         fp32 -> fp32, p a scalar argument
 *           args {x, y, &p, &n}   VECTOR, 8 blocks, no workspace
 *   is_inf  z[i] = isinf(y[i])    fp32 -> int8
 *           args {y, z, &n}       VECTOR, 4 blocks, no workspace
 *
 * are fused through the runtime API into one super kernel with the options
 * "compile-options=-g", launched with their argument lists, and checked bit
 * for bit against launching each kernel alone and against plain loops. Some
 * inputs are large enough that x^p overflows to inf, so is_inf finds them.
 *
 * Part 2 uses a kernel in a graph instead: registered with an infer
 * function, it sits in a super-kernel scope between built-in ops (square ->
 * pows -> cast), and the fused program must equal the eager one bitwise.
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
#define SK_EXAMPLE_TIMING_REPS 201
#endif

#define CHECK(call)                                                                          \
  do {                                                                                       \
    sk_status st_ = (call);                                                                  \
    if (st_ != SK_STATUS_OK) {                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, sk_status_string(st_), sk_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* Block `block` of n_blocks handles elements [begin, end) of n. */
static void block_range(int64_t n, int64_t block, int64_t n_blocks, int64_t *begin, int64_t *end) {
  *begin = n * block / n_blocks;
  *end = n * (block + 1) / n_blocks;
}

/* ---- the two user kernels ---------------------------------------------- */

static void pows_entry(void *const *args, int64_t block, int64_t n_blocks, void *workspace, sk_kernel_ctx *ctx) {
  (void)workspace, (void)ctx;
  const float *x = args[0];
  float *y = args[1];
  const float p = *(const float *)args[2];
  int64_t begin, end;
  block_range(*(const int64_t *)args[3], block, n_blocks, &begin, &end);
  for (int64_t i = begin; i < end; i++) y[i] = powf(x[i], p);
}

static void is_inf_entry(void *const *args, int64_t block, int64_t n_blocks, void *workspace, sk_kernel_ctx *ctx) {
  (void)workspace, (void)ctx;
  const float *y = args[0];
  int8_t *z = args[1];
  int64_t begin, end;
  block_range(*(const int64_t *)args[2], block, n_blocks, &begin, &end);
  for (int64_t i = begin; i < end; i++) z[i] = (int8_t)(isinf(y[i]) ? 1 : 0);
}

/* ---- timing -------------------------------------------------------------- */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { REPS = SK_EXAMPLE_TIMING_REPS };

/* One round: every fused kernel of fks launched once, fks[i] with args[i]. */
static double round_us(sk_fused_kernel *const *fks, size_t n, void *const *const *const *args) {
  double t0 = now_us();
  for (size_t i = 0; i < n; i++) CHECK(sk_fused_kernel_launch(fks[i], args[i]));
  return now_us() - t0;
}

/* Medians of REPS rounds of a and of b, taken alternately so that both see
 * the same machine load. */
static void medians_us(sk_fused_kernel *const *a, size_t n_a, void *const *const *const *args_a,
                       sk_fused_kernel *const *b, size_t n_b, void *const *const *const *args_b, double *med_a,
                       double *med_b) {
  static double ta[REPS], tb[REPS];
  round_us(a, n_a, args_a); /* warm-up */
  round_us(b, n_b, args_b);
  for (int r = 0; r < REPS; r++) {
    ta[r] = round_us(a, n_a, args_a);
    tb[r] = round_us(b, n_b, args_b);
  }
  qsort(ta, REPS, sizeof ta[0], cmp_double);
  qsort(tb, REPS, sizeof tb[0], cmp_double);
  *med_a = ta[REPS / 2];
  *med_b = tb[REPS / 2];
}

/* ---- part 1: runtime-only fusion ----------------------------------------- */

static bool runtime_only(sk_team *team) {
  enum { N = 1 << 16 };
  const sk_kernel_desc pows_desc = {.struct_size = sizeof pows_desc, .name = "pows", .entry = pows_entry,
                                    .type = SK_KERNEL_TYPE_VECTOR, .block_count = 8, .workspace_bytes = 0,
                                    .n_params = 4};
  const sk_kernel_desc is_inf_desc = {.struct_size = sizeof is_inf_desc, .name = "is_inf", .entry = is_inf_entry,
                                      .type = SK_KERNEL_TYPE_VECTOR, .block_count = 4, .workspace_bytes = 0,
                                      .n_params = 3};
  sk_kernel *kernels[2];
  CHECK(sk_kernel_register(&pows_desc, &kernels[0]));
  CHECK(sk_kernel_register(&is_inf_desc, &kernels[1]));

  /* Inputs: mostly in [-8, 8); every 16th element around ±1e13..1e15,
   * whose cube overflows fp32 to ±inf. */
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *y_alone = malloc(N * sizeof *y);
  int8_t *z = malloc(N), *z_alone = malloc(N);
  if (!x || !y || !y_alone || !z || !z_alone) exit(1);
  uint64_t rng = 20261129;
  for (int i = 0; i < N; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(rng >> 11) * 0x1p-53;
    x[i] = i % 16 == 5 ? (float)((i % 32 < 16 ? 1 : -1) * pow(10.0, 13 + 2 * u)) : (float)(16 * u - 8);
  }
  float p = 3.0f;
  int64_t n = N;
  void *pows_args[] = {x, y, &p, &n}, *is_inf_args[] = {y, z, &n};
  void *pows_alone[] = {x, y_alone, &p, &n}, *is_inf_alone[] = {y_alone, z_alone, &n};
  void *const *fused_args[] = {pows_args, is_inf_args};

  /* One super kernel for both, and each kernel alone (a fused kernel of
   * one kernel is that kernel's own launch). */
  sk_fused_kernel *fused, *alone[2];
  CHECK(sk_fused_kernel_create(kernels, 2, "compile-options=-g", team, &fused));
  CHECK(sk_fused_kernel_create(&kernels[0], 1, "compile-options=-g", team, &alone[0]));
  CHECK(sk_fused_kernel_create(&kernels[1], 1, "compile-options=-g", team, &alone[1]));

  char *plan;
  CHECK(sk_fused_kernel_describe(fused, &plan));
  printf("part 1: pows (8 blocks) + is_inf (4 blocks) fused at run time, %d elements\n", N);
  const char *line = plan;
  for (int l = 0; l < 5 && *line; l++) { /* the summary: header, options, sub-kernels */
    const char *nl = strchr(line, '\n');
    int len = nl ? (int)(nl - line) : (int)strlen(line);
    printf("  | %.*s\n", len, line);
    line = nl ? nl + 1 : line + len;
  }
  sk_free(plan);

  CHECK(sk_fused_kernel_launch(fused, fused_args));
  void *const *one_pows[] = {pows_alone}, *const *one_is_inf[] = {is_inf_alone};
  CHECK(sk_fused_kernel_launch(alone[0], one_pows));
  CHECK(sk_fused_kernel_launch(alone[1], one_is_inf));

  int infs = 0, loop_mismatches = 0;
  for (int i = 0; i < N; i++) {
    float want = powf(x[i], p);
    loop_mismatches += memcmp(&want, &y[i], sizeof want) != 0 || z[i] != (isinf(want) ? 1 : 0);
    infs += z[i];
  }
  bool same = memcmp(y, y_alone, N * sizeof *y) == 0 && memcmp(z, z_alone, N) == 0;
  printf("  y = x^%g: %d of %d elements overflowed to inf, is_inf found them\n", p, infs, N);
  printf("  fused vs each kernel alone: %s; vs plain loops: %s\n", same ? "bitwise equal" : "DIFFERENT",
         loop_mismatches ? "DIFFERENT" : "bitwise equal");

  void *const *const *fused_rounds[] = {fused_args};
  void *const *const *alone_rounds[] = {one_pows, one_is_inf};
  double t_alone, t_fused;
  medians_us(alone, 2, alone_rounds, &fused, 1, fused_rounds, &t_alone, &t_fused);
  printf("  team of %d cores, medians of %d launches:\n", sk_team_num_cores(team), REPS);
  printf("    each kernel alone (2 launches): %8.1f us\n", t_alone);
  printf("    fused (1 launch):               %8.1f us  (%.2fx)\n", t_fused, t_alone / t_fused);

  sk_fused_kernel_destroy(fused);
  sk_fused_kernel_destroy(alone[0]);
  sk_fused_kernel_destroy(alone[1]);
  free(x), free(y), free(y_alone), free(z), free(z_alone);
  return same && loop_mismatches == 0 && infs > 0;
}

/* ---- part 2: the same pows in a graph ------------------------------------ */

/* In a graph the arguments are the node's tensors ({x, y}); the exponent
 * comes through the user pointer and the element count from the node. */
static void pows_graph_entry(void *const *args, int64_t block, int64_t n_blocks, void *workspace,
                             sk_kernel_ctx *ctx) {
  (void)workspace;
  int rank;
  int64_t shape[SK_MAX_RANK], n = 1, begin, end;
  if (sk_kernel_arg_info(ctx, 0, NULL, &rank, shape) != SK_STATUS_OK) return;
  for (int d = 0; d < rank; d++) n *= shape[d];
  const float p = *(const float *)sk_kernel_user(ctx);
  const float *x = args[0];
  float *y = args[1];
  block_range(n, block, n_blocks, &begin, &end);
  for (int64_t i = begin; i < end; i++) y[i] = powf(x[i], p);
}

/* One fp32 input; one output of the same shape. */
static sk_status pows_infer(const sk_dtype *in_dtypes, const int *in_ranks, const int64_t *const *in_shapes,
                            size_t n_in, sk_dtype *out_dtypes, int *out_ranks, int64_t (*out_shapes)[SK_MAX_RANK],
                            size_t *n_out, void *user) {
  (void)user;
  if (n_in != 1 || in_dtypes[0] != SK_FP32) return SK_STATUS_INVALID_DTYPE;
  out_dtypes[0] = SK_FP32;
  out_ranks[0] = in_ranks[0];
  memcpy(out_shapes[0], in_shapes[0], sizeof(int64_t) * (size_t)in_ranks[0]);
  *n_out = 1;
  return SK_STATUS_OK;
}

static sk_value add(sk_graph *g, const char *op, sk_value x, const sk_attr *attrs, size_t n_attrs) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_op_desc d = {.struct_size = sizeof d, .op = op, .inputs = in, .n_inputs = 1, .attrs = attrs, .n_attrs = n_attrs};
  sk_value y;
  CHECK(sk_graph_add_op(g, &d, &y, 1, NULL));
  return y;
}

static bool in_a_graph(sk_team *team) {
  static float exponent = 1.5f;
  const sk_kernel_desc desc = {.struct_size = sizeof desc, .name = "pows_graph", .entry = pows_graph_entry,
                               .type = SK_KERNEL_TYPE_VECTOR, .block_count = 6, .n_params = 2, .infer = pows_infer,
                               .user = &exponent};
  sk_kernel *k;
  CHECK(sk_kernel_register(&desc, &k));
  sk_graph *g;
  CHECK(sk_graph_create(&g));
  sk_value x;
  const int64_t shape[] = {96, 80};
  CHECK(sk_graph_add_input(g, "x", SK_FP32, 2, shape, &x));
  CHECK(sk_graph_begin_scope(g, "custom", NULL));
  sk_attr to_fp16 = SK_ATTR_INT("dtype", SK_FP16);
  sk_value y = add(g, "cast", add(g, "pows_graph", add(g, "square", x, NULL, 0), NULL, 0), &to_fp16, 1);
  CHECK(sk_graph_end_scope(g));
  CHECK(sk_graph_mark_output(g, y, "y"));

  sk_compile_config fused_cfg = {.struct_size = sizeof fused_cfg, .team = team};
  sk_compile_config eager_cfg = {.struct_size = sizeof eager_cfg, .team = team, .executor = SK_EXECUTOR_EAGER};
  sk_program *fused, *eager;
  CHECK(sk_compile(g, &fused_cfg, &fused));
  CHECK(sk_compile(g, &eager_cfg, &eager));
  sk_graph_destroy(g);

  enum { N = 96 * 80 };
  static float xs[N];
  static uint16_t y_fused[N], y_eager[N];
  for (int i = 0; i < N; i++) xs[i] = (float)((i % 97) - 48) / 8.0f;
  sk_buffer in[] = {{"x", xs, sizeof xs}};
  sk_buffer out_fused[] = {{"y", y_fused, sizeof y_fused}}, out_eager[] = {{"y", y_eager, sizeof y_eager}};
  CHECK(sk_program_run(fused, team, in, 1, out_fused, 1));
  CHECK(sk_program_run(eager, team, in, 1, out_eager, 1));
  bool same = memcmp(y_fused, y_eager, sizeof y_fused) == 0;
  char *text;
  CHECK(sk_program_describe(fused, &text));
  const char *sub = strstr(text, "sub 1:");
  printf("part 2: square -> pows_graph (x^%g) -> cast(fp16) in one scope\n", exponent);
  if (sub) printf("  | %.*s\n", (int)(strchr(sub, '\n') ? strchr(sub, '\n') - sub : (long)strlen(sub)), sub);
  printf("  fused vs eager: %s\n", same ? "bitwise equal" : "DIFFERENT");
  sk_free(text);
  sk_program_destroy(fused);
  sk_program_destroy(eager);
  return same;
}

int main(void) {
  sk_team *team;
  CHECK(sk_team_create(NULL, &team));
  bool ok = runtime_only(team);
  ok = in_a_graph(team) && ok;
  sk_team_destroy(team);
  if (!ok) return 1;
  printf("execute sample success\n");
  return 0;
}

/* grouped_matmul's transpose_weight: weights given as [E, N, K] (torch's
 * Linear layout) give bitwise the outputs of the same weights given as
 * [E, K, N], on every executor, as constants (packed through a transposed
 * copy at compile) and as inputs (each tile transposes its columns), for
 * the row tiles of many rows and the decode work items of a run-time group
 * list. The reference executor reads the transposed layout itself, so
 * this also checks it against the plain layout. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static sk_team *team;

static uint16_t bf16_of(int i) { return sk_fp32_to_bf16((float)((i * 37 % 101) - 50) / 64.0f); }

/* y = grouped_matmul(x, w) over E experts of `rows` rows each (a run-time
 * cumulative list), w [E, K, N] or, transposed, [E, N, K]. */
static void run(int64_t e, int64_t rows, int64_t k, int64_t n, bool trans, bool constant, sk_executor ex,
                uint16_t *y) {
  const int64_t m = e * rows;
  uint16_t *x = malloc((size_t)(m * k) * 2), *w = malloc((size_t)(e * k * n) * 2);
  for (int64_t i = 0; i < m * k; i++) x[i] = bf16_of((int)i);
  for (int64_t g = 0; g < e; g++) /* w[g][r][c] of the plain layout */
    for (int64_t r = 0; r < k; r++)
      for (int64_t c = 0; c < n; c++) {
        int64_t at = trans ? (g * n + c) * k + r : (g * k + r) * n + c;
        w[at] = bf16_of((int)(g * 1000 + r * 31 + c * 7));
      }
  int64_t ends[64];
  for (int64_t g = 0; g < e; g++) ends[g] = (g + 1) * rows;
  sk_graph *gr;
  sk_value vx, vw, vl, vy;
  CHECK_OK(sk_graph_create(&gr));
  CHECK_OK(sk_graph_add_input(gr, "x", SK_BF16, 2, (int64_t[]){m, k}, &vx));
  int64_t wshape[3] = {e, trans ? n : k, trans ? k : n};
  if (constant) CHECK_OK(sk_graph_add_constant(gr, "w", SK_BF16, 3, wshape, w, SK_CONSTANT_COPY, &vw));
  else CHECK_OK(sk_graph_add_input(gr, "w", SK_BF16, 3, wshape, &vw));
  CHECK_OK(sk_graph_add_input(gr, "ends", SK_INT64, 1, (int64_t[]){e}, &vl));
  CHECK_OK(sk_graph_begin_scope(gr, "mm", NULL));
  sk_op_input in[] = {{"x", &vx, 1}, {"weight", &vw, 1}, {"group_list", &vl, 1}};
  sk_attr at[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3), SK_ATTR_INT("transpose_weight", trans)};
  sk_op_desc d = {.struct_size = sizeof d, .op = "grouped_matmul", .inputs = in, .n_inputs = 3, .attrs = at, .n_attrs = 3};
  CHECK_OK(sk_graph_add_op(gr, &d, &vy, 1, NULL));
  CHECK_OK(sk_graph_end_scope(gr));
  CHECK_OK(sk_graph_mark_output(gr, vy, "y"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = ex};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(gr, &cfg, &p));
  sk_buffer ib[3] = {{"x", x, (size_t)(m * k) * 2}, {"ends", ends, (size_t)e * 8}, {"w", w, (size_t)(e * k * n) * 2}};
  sk_buffer ob[] = {{"y", y, (size_t)(m * n) * 2}};
  if (p) CHECK_OK(sk_program_run(p, team, ib, constant ? 2 : 3, ob, 1));
  sk_program_destroy(p);
  sk_graph_destroy(gr);
  free(x);
  free(w);
}

static void check_shapes(int64_t e, int64_t rows, int64_t k, int64_t n) {
  static const sk_executor exs[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT, SK_EXECUTOR_REFERENCE};
  size_t bytes = (size_t)(e * rows * n) * 2;
  uint16_t *want = malloc(bytes), *got = malloc(bytes);
  run(e, rows, k, n, false, true, SK_EXECUTOR_REFERENCE, want);
  for (size_t i = 0; i < sizeof exs / sizeof exs[0]; i++)
    for (int constant = 0; constant < 2; constant++) {
      memset(got, 0xA5, bytes);
      run(e, rows, k, n, true, constant, exs[i], got);
      CHECK_MSG(memcmp(got, want, bytes) == 0, "E %lld, %lld rows each, K %lld, N %lld, %s, %s: differs from [E, K, N]",
                (long long)e, (long long)rows, (long long)k, (long long)n, sk_executor_name(exs[i]),
                constant ? "constant" : "input");
    }
  free(want);
  free(got);
}

static void test_decode_rows(void) { check_shapes(6, 1, 96, 72); }
static void test_many_rows(void) { check_shapes(3, 70, 64, 200); }
static void test_odd_sizes(void) { check_shapes(2, 5, 33, 17); }

/* The int8 path does not take it; a weight whose K does not match is named. */
static void test_refusals(void) {
  sk_graph *g;
  sk_value x, w, y;
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_add_input(g, "x", SK_BF16, 2, (int64_t[]){4, 8}, &x));
  CHECK_OK(sk_graph_add_input(g, "w", SK_BF16, 2, (int64_t[]){8, 6}, &w)); /* [K, N], not [N, K] */
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_attr at[] = {SK_ATTR_INT("transpose_weight", 1)};
  sk_op_desc d = {.struct_size = sizeof d, .op = "grouped_matmul", .inputs = in, .n_inputs = 2, .attrs = at, .n_attrs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_SHAPE, "weight[0]", "columns");
  sk_value xi, wi;
  CHECK_OK(sk_graph_add_input(g, "xi", SK_INT8, 2, (int64_t[]){4, 8}, &xi));
  CHECK_OK(sk_graph_add_input(g, "wi", SK_INT8, 2, (int64_t[]){6, 8}, &wi));
  sk_op_input qin[] = {{"x", &xi, 1}, {"weight", &wi, 1}};
  d.inputs = qin;
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_ATTRIBUTE, "transpose_weight", "int8");
  sk_graph_destroy(g);
}

int main(void) {
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2};
  if (sk_team_create(&tc, &team) != SK_STATUS_OK) return 1;
  static const harness_case cases[] = {TEST_CASE(test_decode_rows), TEST_CASE(test_many_rows), TEST_CASE(test_odd_sizes),
                                       TEST_CASE(test_refusals)};
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  sk_team_destroy(team);
  return rc;
}

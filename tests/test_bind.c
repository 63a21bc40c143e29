/* Binding by index and persistent bindings: sk_program_run_by_index,
 * sk_program_bind + sk_program_run_bound, sk_program_find; every way gives
 * what a by-name run gives, bound runs follow rebinding and the buffers'
 * contents, and bad bindings are refused naming what is wrong. */
#include <string.h>

#include "graph_builders.h"

#define N 300

static float xs[2][N], ws[N], ys[3][N], zs[3][N];

static void fill(float *p, float base) {
  for (int i = 0; i < N; i++) p[i] = base + (float)i / 64.0f;
}

static void expect(const float *y, const float *z, const float *x, const float *w) {
  int bad = 0;
  for (int i = 0; i < N; i++) bad += y[i] != x[i] * x[i] + x[i] || z[i] != x[i] * w[i];
  CHECK_MSG(bad == 0, "%d wrong elements", bad);
}

static void run_every_way(sk_executor ex, sk_team *team) {
  sk_graph *g = bind_model(N);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = ex};
  sk_program *p;
  CHECK_OK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  size_t ix = 9, iw = 9, iy = 9, iz = 9;
  CHECK_OK(sk_program_find(p, SK_IO_INPUT, "x", &ix));
  CHECK_OK(sk_program_find(p, SK_IO_INPUT, "w", &iw));
  CHECK_OK(sk_program_find(p, SK_IO_OUTPUT, "y", &iy));
  CHECK_OK(sk_program_find(p, SK_IO_OUTPUT, "z", &iz));
  CHECK(ix == 0 && iw == 1 && iy == 0 && iz == 1);
  fill(xs[0], 1.0f), fill(xs[1], -3.0f), fill(ws, 0.5f);

  /* by name */
  sk_buffer in[] = {{"w", ws, sizeof ws}, {"x", xs[0], sizeof xs[0]}};
  sk_buffer out[] = {{"z", zs[0], sizeof zs[0]}, {"y", ys[0], sizeof ys[0]}};
  CHECK_OK(sk_program_run(p, team, in, 2, out, 2));
  expect(ys[0], zs[0], xs[0], ws);

  /* by index: positions, names ignored */
  sk_buffer in_i[] = {{NULL, xs[1], sizeof xs[1]}, {NULL, ws, sizeof ws}};
  sk_buffer out_i[] = {{NULL, ys[1], sizeof ys[1]}, {NULL, zs[1], sizeof zs[1]}};
  CHECK_OK(sk_program_run_by_index(p, team, in_i, 2, out_i, 2));
  expect(ys[1], zs[1], xs[1], ws);
  CHECK_FAILS(sk_program_run_by_index(p, team, in_i, 1, out_i, 2), SK_STATUS_INVALID_ARGUMENT, "2 inputs", "1 buffers");

  /* bound: follows the buffers' contents and rebinding, also after a run
   * by name in between (which points the program elsewhere) */
  CHECK_FAILS(sk_program_run_bound(p, team), SK_STATUS_INVALID_STATE, "input 'x'", "not bound");
  CHECK_OK(sk_program_bind(p, SK_IO_INPUT, ix, xs[0], sizeof xs[0]));
  CHECK_OK(sk_program_bind(p, SK_IO_INPUT, iw, ws, sizeof ws));
  CHECK_OK(sk_program_bind(p, SK_IO_OUTPUT, iy, ys[2], sizeof ys[2]));
  CHECK_FAILS(sk_program_run_bound(p, team), SK_STATUS_INVALID_STATE, "output 'z'", "not bound");
  CHECK_OK(sk_program_bind(p, SK_IO_OUTPUT, iz, zs[2], sizeof zs[2]));
  CHECK_OK(sk_program_run_bound(p, team));
  expect(ys[2], zs[2], xs[0], ws);
  fill(xs[0], 2.5f); /* same buffer, new contents */
  CHECK_OK(sk_program_run_bound(p, team));
  expect(ys[2], zs[2], xs[0], ws);
  CHECK_OK(sk_program_run(p, team, in, 2, out, 2));
  memset(ys[2], 0, sizeof ys[2]);
  CHECK_OK(sk_program_run_bound(p, team));
  expect(ys[2], zs[2], xs[0], ws);
  CHECK_OK(sk_program_bind(p, SK_IO_INPUT, ix, xs[1], sizeof xs[1]));
  CHECK_OK(sk_program_run_bound(p, team));
  expect(ys[2], zs[2], xs[1], ws);

  /* refused bindings keep the old one */
  CHECK_FAILS(sk_program_bind(p, SK_IO_INPUT, ix, xs[0], sizeof xs[0] - 4), SK_STATUS_INVALID_ARGUMENT, "input 'x'",
              "expected 1200 bytes", "got 1196");
  CHECK_FAILS(sk_program_bind(p, SK_IO_OUTPUT, iz, xs[1], sizeof xs[1]), SK_STATUS_INVALID_ARGUMENT,
              "output 'z' overlaps input 'x'");
  CHECK_FAILS(sk_program_bind(p, SK_IO_INPUT, iw, ys[2], sizeof ys[2]), SK_STATUS_INVALID_ARGUMENT,
              "output 'y' overlaps input 'w'");
  CHECK_FAILS(sk_program_bind(p, SK_IO_OUTPUT, 2, zs[0], sizeof zs[0]), SK_STATUS_NOT_FOUND, "output 2");
  CHECK_FAILS(sk_program_bind(p, SK_IO_INPUT, ix, NULL, sizeof xs[0]), SK_STATUS_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(sk_program_bind(p, (sk_io_kind)7, 0, xs[0], sizeof xs[0]), SK_STATUS_INVALID_ARGUMENT, "kind 7");
  fill(xs[1], 7.0f);
  CHECK_OK(sk_program_run_bound(p, team));
  expect(ys[2], zs[2], xs[1], ws);

  sk_program_unbind_all(p);
  CHECK_FAILS(sk_program_run_bound(p, team), SK_STATUS_INVALID_STATE, "not bound");
  size_t i;
  CHECK_FAILS(sk_program_find(p, SK_IO_OUTPUT, "x", &i), SK_STATUS_NOT_FOUND, "no output named 'x'");
  sk_program_destroy(p);
}

static void test_every_executor(void) {
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  CHECK_OK(sk_team_create(&tc, &team));
  run_every_way(SK_EXECUTOR_EAGER, team);
  run_every_way(SK_EXECUTOR_INTERP, team);
  run_every_way(SK_EXECUTOR_JIT, team);
  run_every_way(SK_EXECUTOR_REFERENCE, NULL);
  sk_team_destroy(team);
}

static void test_null_arguments(void) {
  CHECK_FAILS(sk_program_run_bound(NULL, NULL), SK_STATUS_INVALID_ARGUMENT, "program is NULL");
  CHECK_FAILS(sk_program_bind(NULL, SK_IO_INPUT, 0, NULL, 0), SK_STATUS_INVALID_ARGUMENT, "program is NULL");
  CHECK_FAILS(sk_program_run_by_index(NULL, NULL, NULL, 0, NULL, 0), SK_STATUS_INVALID_ARGUMENT, "program is NULL");
  size_t i;
  CHECK_FAILS(sk_program_find(NULL, SK_IO_INPUT, "x", &i), SK_STATUS_INVALID_ARGUMENT, "program");
  sk_program_unbind_all(NULL);
}

TEST_MAIN(TEST_CASE(test_every_executor), TEST_CASE(test_null_arguments))

/* The arena's layout (compile/arena_plan.c): intermediates whose steps do
 * not overlap share bytes, those of one super kernel never do, a view keeps
 * its root alive to its last reader, an output copied out after the run
 * lives to the end; and the outputs are what each op computes on its own
 * (a wrong overlap would overwrite a value before its last read). */
#include <string.h>

#include "core/alloc.h"
#include "graph_builders.h"

#define R 64
#define C 48
#define LINKS 8

static float x_data[R * C];

static size_t buf_bytes(void) { return sk__align_up(R * C * sizeof(float)); }

static size_t arena_of(sk_program *p) {
  sk_program_stats s = {.struct_size = sizeof s};
  CHECK_OK(sk_program_get_stats(p, &s));
  return s.arena_bytes;
}

static void fill(void) {
  for (int i = 0; i < R * C; i++) x_data[i] = 0.5f + (float)((i * 37) % 101) / 202.0f;
}

/* x -> square -> (add x) -> square -> (add x) ... LINKS ops, each reading
 * the last and x; in one scope when scoped. */
static sk_graph *chain(bool scoped) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){R, C}), v = x;
  if (scoped) CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  for (int i = 0; i < LINKS; i++) {
    char name[16];
    snprintf(name, sizeof name, "op%d", i);
    v = i % 2 ? binary(g, "add", name, v, x) : unary(g, "square", name, v);
  }
  if (scoped) CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, v, "y"));
  return g;
}

static void chain_want(float *want) {
  for (int i = 0; i < R * C; i++) {
    float v = x_data[i];
    for (int k = 0; k < LINKS; k++) v = k % 2 ? v + x_data[i] : v * v;
    want[i] = v;
  }
}

static void run1(sk_program *p, sk_team *team, float *y) {
  sk_buffer in = {"x", x_data, sizeof x_data}, out = {"y", y, R * C * sizeof(float)};
  CHECK_OK(sk_program_run(p, team, &in, 1, &out, 1));
}

static void test_steps_share_a_super_kernel_does_not(void) {
  static float want[R * C], got[R * C];
  fill();
  chain_want(want);
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  CHECK_OK(sk_team_create(&tc, &team));
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  for (int scoped = 0; scoped < 2; scoped++)
    for (size_t e = 0; e < 4; e++) {
      sk_graph *g = chain(scoped);
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executors[e]};
      sk_program *p;
      CHECK_OK(sk_compile(g, &cfg, &p));
      /* LINKS - 1 intermediates. Step by step, each lives from its op's step
       * to the next op's: two at a time. In one super kernel (interp, JIT
       * with the scope) all live through its one step. */
      bool one_step = scoped && (executors[e] == SK_EXECUTOR_INTERP || executors[e] == SK_EXECUTOR_JIT);
      size_t want_arena = (one_step ? LINKS - 1 : 2) * buf_bytes();
      CHECK_MSG(arena_of(p) == want_arena, "scoped %d executor %zu: arena %zu, want %zu", scoped, e, arena_of(p),
                want_arena);
      for (int rep = 0; rep < 2; rep++) {
        memset(got, 0, sizeof got);
        run1(p, team, got);
        CHECK_MSG(memcmp(got, want, sizeof got) == 0, "scoped %d executor %zu: y differs from each op on its own",
                  scoped, e);
      }
      sk_program_destroy(p);
      sk_graph_destroy(g);
    }
  sk_team_destroy(team);
}

/* a = square(x), read last through two reshapes (views); b = x + x;
 * c = square(b), whose first rows are also an output (a slice: copied out
 * after the run); d = square(c); e = square(d); y = a + e. a must outlive
 * b..e although its own node ran first, and c must outlive e although its
 * last reader is d: a wrong overlap changes y or z. */
static void test_views_and_copied_outputs_stay_alive(void) {
  static float want_y[R * C], want_z[R / 2 * C], y[R * C], z[R / 2 * C];
  fill();
  for (int i = 0; i < R * C; i++) {
    float a = x_data[i] * x_data[i], b = x_data[i] + x_data[i], c = b * b, d = c * c, e = d * d;
    want_y[i] = a + e;
    if (i < R / 2 * C) want_z[i] = c;
  }
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){R, C});
  sk_value a = unary(g, "square", "a", x), r, r2, zs;
  const int64_t flat[] = {R * C}, back[] = {R, C};
  sk_attr to_flat = SK_ATTR_INTS("shape", flat, 1), to_back = SK_ATTR_INTS("shape", back, 2);
  op(g, "reshape", "r", (sk_op_input[]){{"x", &a, 1}}, 1, &to_flat, 1, &r, 1);
  sk_value b = binary(g, "add", "b", x, x);
  sk_value c = unary(g, "square", "c", b);
  sk_attr rows[] = {SK_ATTR_INT("start", 0), SK_ATTR_INT("end", R / 2)};
  op(g, "slice", "z", (sk_op_input[]){{"x", &c, 1}}, 1, rows, 2, &zs, 1);
  sk_value d = unary(g, "square", "d", c);
  sk_value e = unary(g, "square", "e", d);
  op(g, "reshape", "r2", (sk_op_input[]){{"x", &r, 1}}, 1, &to_back, 1, &r2, 1);
  sk_value yv = binary(g, "add", "y", r2, e);
  CHECK_OK(sk_graph_mark_output(g, yv, "y"));
  CHECK_OK(sk_graph_mark_output(g, zs, "z"));
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_EAGER};
  sk_program *p;
  CHECK_OK(sk_compile(g, &cfg, &p));
  /* Steps a b c d e y (the slice and reshapes are views): a lives through
   * y's step, c to the end (copied out), b over c's step, d over e's. At
   * e's step a, c, d and e live: 4 buffers; d takes b's. */
  CHECK_MSG(arena_of(p) == 4 * buf_bytes(), "arena %zu, want %zu", arena_of(p), 4 * buf_bytes());
  sk_buffer in = {"x", x_data, sizeof x_data};
  sk_buffer out[] = {{"y", y, sizeof y}, {"z", z, sizeof z}};
  for (int rep = 0; rep < 2; rep++) {
    memset(y, 0, sizeof y);
    memset(z, 0, sizeof z);
    CHECK_OK(sk_program_run(p, NULL, &in, 1, out, 2));
    CHECK(memcmp(y, want_y, sizeof y) == 0);
    CHECK(memcmp(z, want_z, sizeof z) == 0);
  }
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

TEST_MAIN(TEST_CASE(test_steps_share_a_super_kernel_does_not), TEST_CASE(test_views_and_copied_outputs_stay_alive))

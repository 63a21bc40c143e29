/* grouped_matmul with a run-time group list (the group_list input): one
 * compiled program serves any routing; every list gives the bits the same
 * list as a compile-time attribute gives, on every executor and team size,
 * float and int8; empty experts, all rows in one expert and a zero tail
 * work; an invalid list fails the run naming the entry, and the next run
 * is normal. */
#include <string.h>

#include "graph_builders.h"

#define M 45
#define M_PREFILL 600 /* past the 256 rows of a tile: expert tiles of a prefill */
#define K 40
#define N 72
#define E 5

typedef struct variant {
  const char *what;
  sk_dtype x_dtype, out_dtype;
  bool constant_weights;
  int list_type; /* 0 cumulative, 1 counts */
} variant;

static const variant VARIANTS[] = {
    {"fp16, counts", SK_FP16, SK_FP16, false, 1},
    {"bf16 -> fp32, cumulative, constant weights", SK_BF16, SK_FP32, true, 0},
    {"int8 -> int32, counts", SK_INT8, SK_INT32, false, 1},
    {"int8 -> int32, cumulative, constant weights", SK_INT8, SK_INT32, true, 0},
};

/* Expert row counts to try (converted to cumulative ends as needed). */
static const int64_t LISTS[][E] = {
    {9, 9, 9, 9, 9},   /* every row */
    {0, 20, 0, 0, 25}, /* empty experts */
    {45, 0, 0, 0, 0},  /* all rows in one */
    {3, 0, 7, 1, 0},   /* a zero tail of 34 rows */
    {0, 0, 0, 0, 0},   /* nothing routed */
};
#define N_LISTS (sizeof LISTS / sizeof LISTS[0])

static unsigned char x_data[M_PREFILL * K * 4], w_data[E * K * N * 4];

static void as_list(const int64_t *counts, int list_type, int64_t *out) {
  int64_t end = 0;
  for (int e = 0; e < E; e++) out[e] = list_type ? counts[e] : (end += counts[e]);
}

/* y = grouped_matmul(x, weight [E,K,N]) with the list as an input
 * (list == NULL) or as the attribute. */
static sk_graph *build_rows(const variant *v, const int64_t *attr_list, int64_t m) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", v->x_dtype, 2, (int64_t[]){m, K}), w, gl = SK_VALUE_NONE, y;
  if (v->constant_weights)
    CHECK_OK(sk_graph_add_constant(g, "w", v->x_dtype, 3, (int64_t[]){E, K, N}, w_data, SK_CONSTANT_BORROW, &w));
  else
    w = input(g, "w", v->x_dtype, 3, (int64_t[]){E, K, N});
  if (!attr_list) gl = input(g, "group_list", SK_INT64, 1, (int64_t[]){E});
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"group_list", &gl, 1}};
  sk_attr attrs[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3),
                     SK_ATTR_INT("group_list_type", v->list_type), SK_ATTR_INT("output_dtype", v->out_dtype),
                     SK_ATTR_INTS("group_list", attr_list, E)};
  CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  op(g, "grouped_matmul", "gmm", in, attr_list ? 2 : 3, attrs, attr_list ? 5 : 4, &y, 1);
  sk_value z = unary(g, "square", "sq", y); /* a consumer inside the scope: early start across the list */
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  return g;
}

static sk_graph *build(const variant *v, const int64_t *attr_list) { return build_rows(v, attr_list, M); }

/* Runs with x (m rows), the weights unless constant, and the list unless NULL. */
static sk_status run_rows(sk_program *p, sk_team *team, const variant *v, const int64_t *list, void *y, void *z,
                          int64_t m) {
  size_t ob = (size_t)m * N * sk_dtype_size(v->out_dtype), n = 0;
  sk_buffer in[3];
  in[n++] = (sk_buffer){"x", x_data, (size_t)m * K * sk_dtype_size(v->x_dtype)};
  if (list) in[n++] = (sk_buffer){"group_list", (void *)list, E * sizeof(int64_t)};
  if (!v->constant_weights) in[n++] = (sk_buffer){"w", w_data, (size_t)E * K * N * sk_dtype_size(v->x_dtype)};
  sk_buffer out[] = {{"y", y, ob}, {"z", z, ob}};
  return sk_program_run(p, team, in, n, out, 2);
}

static sk_status run(sk_program *p, sk_team *team, const variant *v, const int64_t *list, void *y, void *z) {
  return run_rows(p, team, v, list, y, z, M);
}

/* p (the list an input, m rows) run with the list `counts` gives the bits
 * of the same list as a compile-time attribute, that program compiled for
 * want_executor; the stale values in y must not survive (the zero tail is
 * written). */
static bool matches_attribute(sk_program *p, sk_team *team, const variant *v, const int64_t *counts, int64_t m,
                              sk_executor want_executor) {
  static unsigned char want_y[M_PREFILL * N * 4], want_z[M_PREFILL * N * 4], y[M_PREFILL * N * 4],
      z[M_PREFILL * N * 4];
  int64_t list[E];
  as_list(counts, v->list_type, list);
  sk_graph *ga = build_rows(v, list, m);
  sk_program *pa;
  sk_compile_config ec = {.struct_size = sizeof ec, .executor = want_executor};
  CHECK_OK(sk_compile(ga, &ec, &pa));
  memset(want_y, 0x33, sizeof want_y);
  CHECK_OK(run_rows(pa, NULL, v, NULL, want_y, want_z, m));
  memset(y, 0x55, sizeof y);
  CHECK_OK(run_rows(p, team, v, list, y, z, m));
  size_t ob = (size_t)m * N * sk_dtype_size(v->out_dtype);
  bool same = memcmp(y, want_y, ob) == 0 && memcmp(z, want_z, ob) == 0;
  sk_program_destroy(pa);
  sk_graph_destroy(ga);
  return same;
}

static void test_every_list_matches_the_attribute(void) {
  sk_team *teams[4] = {NULL};
  for (int n = 2; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  for (size_t vi = 0; vi < sizeof VARIANTS / sizeof VARIANTS[0]; vi++) {
    const variant *v = &VARIANTS[vi];
    uint64_t seed = 17 + vi;
    double lo = v->x_dtype == SK_INT8 ? -128 : -1, hi = v->x_dtype == SK_INT8 ? 128 : 1;
    rr_fill(x_data, v->x_dtype, M * K, lo, hi, &seed);
    rr_fill(w_data, v->x_dtype, E * K * N, lo, hi, &seed);
    sk_graph *g = build(v, NULL);
    for (size_t e = 0; e < 4; e++)
      for (int cores = 1; cores <= 3; cores++) {
        if (executors[e] == SK_EXECUTOR_REFERENCE && cores > 1) continue;
        sk_team *team = cores > 1 ? teams[cores] : NULL;
        sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executors[e]};
        sk_program *p;
        CHECK_OK(sk_compile(g, &cfg, &p));
        for (size_t li = 0; li < N_LISTS; li++) /* one program, every routing */
          CHECK_MSG(matches_attribute(p, team, v, LISTS[li], M, SK_EXECUTOR_EAGER),
                    "%s: list %zu: executor %d on %d cores differs from the attribute's", v->what, li,
                    (int)executors[e], cores);
        sk_program_destroy(p);
      }
    sk_graph_destroy(g);
  }
  sk_team_destroy(teams[2]);
  sk_team_destroy(teams[3]);
}

/* A prefill's rows (more than a tile's 256): each expert one block of all
 * its rows, an expert past 256 rows computed a tile of rows at a time. */
static void test_prefill_lists_match_the_attribute(void) {
  static const int64_t lists[][E] = {
      {120, 120, 120, 120, 120}, /* every row */
      {600, 0, 0, 0, 0},         /* all rows in one: three row tiles */
      {0, 300, 0, 257, 1},       /* past a tile by one; a zero tail */
      {3, 0, 7, 1, 0},           /* a zero tail of 589 rows */
  };
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  sk_team *team;
  CHECK_OK(sk_team_create(&tc, &team));
  for (size_t vi = 0; vi < sizeof VARIANTS / sizeof VARIANTS[0]; vi++) {
    const variant *v = &VARIANTS[vi];
    uint64_t seed = 71 + vi;
    double lo = v->x_dtype == SK_INT8 ? -128 : -1, hi = v->x_dtype == SK_INT8 ? 128 : 1;
    rr_fill(x_data, v->x_dtype, M_PREFILL * K, lo, hi, &seed);
    rr_fill(w_data, v->x_dtype, E * K * N, lo, hi, &seed);
    sk_graph *g = build_rows(v, NULL, M_PREFILL);
    for (int jit = 0; jit < 2; jit++) {
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team,
                               .executor = jit ? SK_EXECUTOR_JIT : SK_EXECUTOR_EAGER};
      sk_program *p;
      CHECK_OK(sk_compile(g, &cfg, &p));
      for (size_t li = 0; li < sizeof lists / sizeof lists[0]; li++)
        CHECK_MSG(matches_attribute(p, team, v, lists[li], M_PREFILL, SK_EXECUTOR_REFERENCE),
                  "%s: prefill list %zu: %s on 2 cores differs from the reference's", v->what, li, jit ? "jit" : "eager");
      sk_program_destroy(p);
    }
    sk_graph_destroy(g);
  }
  sk_team_destroy(team);
}

/* Invalid lists fail the run naming the op, the input and the entry; the
 * program stays usable. */
static void test_invalid_lists(void) {
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  CHECK_OK(sk_team_create(&tc, &team));
  static unsigned char y[M * N * 4], z[M * N * 4];
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  for (int list_type = 0; list_type < 2; list_type++)
    for (size_t e = 0; e < 4; e++) {
      variant v = {"fp16", SK_FP16, SK_FP16, false, list_type};
      sk_graph *g = build(&v, NULL);
      sk_team *t = executors[e] == SK_EXECUTOR_REFERENCE ? NULL : team;
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = t, .executor = executors[e]};
      sk_program *p;
      CHECK_OK(sk_compile(g, &cfg, &p));
      if (list_type == 0) {
        const int64_t decreasing[E] = {10, 20, 15, 30, 40}, past[E] = {10, 20, 30, 40, 46};
        CHECK_FAILS(run(p, t, &v, decreasing, y, z), SK_STATUS_INVALID_ARGUMENT, "gmm", "group_list", "entry 2",
                    "non-decreasing");
        CHECK_FAILS(run(p, t, &v, past, y, z), SK_STATUS_INVALID_ARGUMENT, "gmm", "group_list", "entry 4",
                    "past M = 45");
      } else {
        const int64_t negative[E] = {10, -1, 5, 5, 5}, past[E] = {10, 10, 10, 10, 6},
                      huge[E] = {INT64_MAX, INT64_MAX, 0, 0, 0};
        CHECK_FAILS(run(p, t, &v, negative, y, z), SK_STATUS_INVALID_ARGUMENT, "gmm", "group_list", "count 1",
                    "negative");
        CHECK_FAILS(run(p, t, &v, past, y, z), SK_STATUS_INVALID_ARGUMENT, "entry 4", "past M = 45");
        CHECK_FAILS(run(p, t, &v, huge, y, z), SK_STATUS_INVALID_ARGUMENT, "entry 0", "past M = 45");
      }
      int64_t fine[E];
      as_list(LISTS[1], list_type, fine);
      CHECK_OK(run(p, t, &v, fine, y, z)); /* the error did not stick */
      CHECK(strcmp(sk_last_error(), "") == 0);
      sk_program_destroy(p);
      sk_graph_destroy(g);
    }
  sk_team_destroy(team);
}

static void test_build_errors(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP16, 2, (int64_t[]){M, K}), w = input(g, "w", SK_FP16, 3, (int64_t[]){E, K, N});
  sk_value l64 = input(g, "l", SK_INT64, 1, (int64_t[]){E}), l32 = input(g, "l32", SK_INT32, 1, (int64_t[]){E});
  sk_value lshort = input(g, "ls", SK_INT64, 1, (int64_t[]){E - 1});
  sk_value y;
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"group_list", &l64, 1}};
  sk_attr a[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 2), SK_ATTR_INTS("group_list", LISTS[0], E)};
  sk_op_desc d = {.op = "grouped_matmul", .inputs = in, .n_inputs = 3, .attrs = a, .n_attrs = 2};
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL));
  d.n_attrs = 3;
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_ATTRIBUTE, "not both");
  d.n_attrs = 2;
  in[2].values = &l32;
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_DTYPE, "input group_list", "int64", "int32");
  in[2].values = &lshort;
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_SHAPE, "input group_list", "[5]", "[4]");
  in[2].values = &l64;
  a[1] = SK_ATTR_INT("split_item", 0);
  sk_value ys[E];
  CHECK_FAILS(sk_graph_add_op(g, &d, ys, E, NULL), SK_STATUS_INVALID_ATTRIBUTE, "split_item", "2 or 3");
  a[0] = SK_ATTR_INT("group_type", -1);
  d.n_attrs = 1;
  CHECK_FAILS(sk_graph_add_op(g, &d, ys, E, NULL), SK_STATUS_INVALID_ARGUMENT, "group_list", "group_type -1");
  sk_graph_destroy(g);
}

TEST_MAIN(TEST_CASE(test_every_list_matches_the_attribute), TEST_CASE(test_prefill_lists_match_the_attribute), TEST_CASE(test_invalid_lists), TEST_CASE(test_build_errors))

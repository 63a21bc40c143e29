/* grouped_matmul's tiling with groups known at compile: the tiles cover
 * every output element once; where the groups allow it, every core (block
 * b runs on core b % n) gets the same work to within a cut unit or two
 * (the seed's decode step once gave one core a small group's tile on top
 * of its half of the large group); and results on 2-4 cores are bitwise
 * those of one core, float and int8. With a run-time group list and rows
 * that fit one tile (a decode step's), every block is a work item, a
 * column strip of the j-th expert with rows, for the cores to claim: each
 * (j, strip) once, strips even, and bitwise those of one core. */
#include <stdlib.h>
#include <string.h>

#include "program/program.h"
#include "graph_builders.h"
#include "kernels/packed_groups.h"
#include "kernels/qgemm/qgemm.h"
#include "ops/grouped_matmul.h"
#include "ops/op_util.h"

#define MAX_M 640
#define MAX_N 720
#define MAX_K 400

typedef struct tiling_case {
  const char *what;
  int64_t rows[6]; /* rows per group, 0-terminated */
  int64_t k, n;
  bool balanced; /* expected: the work can be shared evenly */
} tiling_case;

static const tiling_case CASES[] = {
    {"seed sk1: 8 + 248 rows", {8, 248}, 180, 320, true},
    {"decode: 8 + 8 rows", {8, 8}, 180, 320, true},
    {"uneven groups", {3, 1, 100, 40}, 64, 96, true},
    {"tall groups cut by rows", {300, 2}, 40, 24, true},
    {"one tiny group: fewer units than cores", {1}, 32, 9, false},
    {"taller than a tile and wide: the plain tiling", {600}, 16, 700, false},
};

static unsigned char x_data[MAX_M * MAX_K * 4], w_data[6 * MAX_K * MAX_N * 4];
static unsigned char y1[MAX_M * MAX_N * 4], yn[MAX_M * MAX_N * 4];
static unsigned char covered[MAX_M * MAX_N];

static int64_t n_groups(const tiling_case *c) {
  int64_t g = 0;
  while (g < 6 && c->rows[g]) g++;
  return g;
}

static sk_graph *build(const tiling_case *c, sk_dtype dt, int64_t *m_out) {
  int64_t e = n_groups(c), m = 0, ends[6];
  for (int64_t g = 0; g < e; g++) ends[g] = (m += c->rows[g]);
  *m_out = m;
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", dt, 2, (int64_t[]){m, c->k}), w = input(g, "w", dt, 3, (int64_t[]){e, c->k, c->n}), y;
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  sk_attr attrs[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3),
                     SK_ATTR_INTS("group_list", ends, (size_t)e),
                     SK_ATTR_INT("output_dtype", dt == SK_INT8 ? SK_INT32 : dt)};
  op(g, "grouped_matmul", "gmm", in, 2, attrs, 4, &y, 1);
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  return g;
}

static const sk__exec_node *gmm_node(const sk_program *p) {
  for (size_t i = 0; i < p->n_nodes; i++)
    if (strcmp(p->nodes[i].def->type, "grouped_matmul") == 0) return &p->nodes[i];
  return NULL;
}

/* Coverage and balance of one compiled node on n cores. */
static void check_tiles(const tiling_case *c, const sk__exec_node *node, int64_t m, int n, bool quant) {
  const gmm_tile *tiles = node->tiling.plan;
  int64_t mr, nr;
  if (quant) sk__qgemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  else sk__gemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  memset(covered, 0, sizeof covered);
  double work[8] = {0}, unit = 0;
  int64_t row0[7] = {0}, groups = n_groups(c), real_blocks = 0;
  for (int64_t g = 0; g < groups; g++) {
    row0[g + 1] = row0[g] + c->rows[g];
    double u = (double)(c->rows[g] <= c->n ? c->rows[g] * nr : mr * c->n) * (double)(c->k + 1);
    if (u > unit) unit = u;
  }
  for (int64_t b = 0; b < node->tiling.n_blocks; b++) {
    const gmm_tile *t = &tiles[b];
    int64_t base = t->group >= 0 ? row0[t->group] : 0;
    CHECK(t->m0 <= t->m1 && t->n0 <= t->n1 && base + t->m1 <= m && t->n1 <= c->n);
    for (int64_t r = base + t->m0; r < base + t->m1 && r < m; r++)
      for (int64_t j = t->n0; j < t->n1 && j < c->n; j++) covered[r * c->n + j]++;
    if (t->group < 0) continue;
    real_blocks++;
    work[b % n] += (double)(t->m1 - t->m0) * (double)(t->n1 - t->n0) * (double)(c->k + 1);
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < m * c->n; i++) bad += covered[i] != 1;
  CHECK_MSG(bad == 0, "%s on %d cores: %lld output elements not covered exactly once", c->what, n, (long long)bad);
  if (!c->balanced) return;
  double lo = work[0], hi = work[0];
  for (int i = 1; i < n; i++) lo = work[i] < lo ? work[i] : lo, hi = work[i] > hi ? work[i] : hi;
  CHECK_MSG(real_blocks % n == 0 && hi - lo <= 2 * unit,
            "%s on %d cores: %lld blocks, core work from %.0f to %.0f (a cut unit is %.0f)", c->what, n,
            (long long)real_blocks, lo, hi, unit);
}

static void test_tiles_cover_and_balance(void) {
  sk_team *teams[5] = {NULL};
  for (int n = 2; n <= 4; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
  static const sk_dtype dtypes[] = {SK_FP16, SK_INT8};
  for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++)
    for (size_t di = 0; di < 2; di++) {
      const tiling_case *c = &CASES[ci];
      sk_dtype dt = dtypes[di];
      int64_t m;
      sk_graph *g = build(c, dt, &m);
      uint64_t seed = 7 + ci;
      double lo = dt == SK_INT8 ? -128 : -1, hi = dt == SK_INT8 ? 128 : 1;
      rr_fill(x_data, dt, (size_t)(m * c->k), lo, hi, &seed);
      rr_fill(w_data, dt, (size_t)(n_groups(c) * c->k * c->n), lo, hi, &seed);
      size_t xb = (size_t)(m * c->k) * sk_dtype_size(dt), wb = (size_t)(n_groups(c) * c->k * c->n) * sk_dtype_size(dt);
      size_t yb = (size_t)(m * c->n) * (dt == SK_INT8 ? 4 : sk_dtype_size(dt));
      sk_buffer in[] = {{"x", x_data, xb}, {"w", w_data, wb}};
      sk_program *p1;
      sk_compile_config one = {.struct_size = sizeof one, .executor = SK_EXECUTOR_EAGER};
      CHECK_OK(sk_compile(g, &one, &p1));
      CHECK_OK(sk_program_run(p1, NULL, in, 2, (sk_buffer[]){{"y", y1, yb}}, 1));
      for (int n = 2; n <= 4; n++) {
        sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[n], .executor = SK_EXECUTOR_EAGER};
        sk_program *p;
        CHECK_OK(sk_compile(g, &cfg, &p));
        const sk__exec_node *node = gmm_node(p);
        CHECK(node != NULL);
        if (node) check_tiles(c, node, m, n, dt == SK_INT8);
        memset(yn, 0x5A, yb);
        CHECK_OK(sk_program_run(p, teams[n], in, 2, (sk_buffer[]){{"y", yn, yb}}, 1));
        CHECK_MSG(memcmp(y1, yn, yb) == 0, "%s, %s: %d cores differ from one", c->what, sk_dtype_name(dt), n);
        sk_program_destroy(p);
      }
      sk_program_destroy(p1);
      sk_graph_destroy(g);
    }
  for (int n = 2; n <= 4; n++) sk_team_destroy(teams[n]);
}

/* 8 rows (a decode step: T 1, top-8) over 16 experts found at run time. */
static void test_runtime_tiles_are_expert_items(void) {
  const int64_t m = 8, k = 64, n = 720, e = 16;
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){m, k}), w = input(g, "w", SK_FP32, 3, (int64_t[]){e, k, n});
  sk_value ends = input(g, "ends", SK_INT64, 1, (int64_t[]){e}), y;
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"group_list", &ends, 1}};
  sk_attr attrs[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3)};
  op(g, "grouped_matmul", "gmm", in, 3, attrs, 2, &y, 1);
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  uint64_t seed = 99;
  rr_fill(x_data, SK_FP32, (size_t)(m * k), -1, 1, &seed);
  rr_fill(w_data, SK_FP32, (size_t)(e * k * n), -1, 1, &seed);
  /* Rows of experts 1, 3 (three rows), 4, 9, 15 (two): cumulative ends;
   * then only 6 of the 8 rows routed (the last two are zero-filled). */
  static const int64_t lists[2][16] = {{0, 1, 1, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 8},
                                       {0, 1, 1, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6}};
  size_t yb = (size_t)(m * n) * 4;
  /* Strips are whole stream units (NR multiples): each reads one run of
   * packed weights. */
  const int64_t unit = SK_PACKED_GROUP_COLUMNS;
  for (int l = 0; l < 2; l++) {
    sk_buffer bufs[] = {{"x", x_data, (size_t)(m * k) * 4}, {"w", w_data, (size_t)(e * k * n) * 4},
                        {"ends", (void *)lists[l], sizeof lists[l]}};
    sk_program *p1;
    sk_compile_config one = {.struct_size = sizeof one, .executor = SK_EXECUTOR_EAGER};
    CHECK_OK(sk_compile(g, &one, &p1));
    memset(y1, 0x5A, yb);
    CHECK_OK(sk_program_run(p1, NULL, bufs, 3, (sk_buffer[]){{"y", y1, yb}}, 1));
    for (int cores = 2; cores <= 4; cores++) {
      sk_team *team;
      sk_team_config tc = {.struct_size = sizeof tc, .num_cores = cores, .pin_threads = -1};
      CHECK_OK(sk_team_create(&tc, &team));
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = SK_EXECUTOR_EAGER};
      sk_program *p;
      CHECK_OK(sk_compile(g, &cfg, &p));
      const sk__exec_node *node = gmm_node(p);
      CHECK(node != NULL && node->tiling.claim);
      /* Items (j, strip), j < min(e, m) = 8, strips over [0, n) in order. */
      int64_t n_items = node ? node->tiling.n_blocks : 0, strips = n_items / 8, widest = 0, narrowest = n;
      CHECK_MSG(n_items > 0 && n_items % 8 == 0 && strips >= 2, "%d cores: %lld blocks for 8 experts", cores,
                (long long)n_items);
      for (int64_t b = 0; b < n_items; b++) {
        const gmm_tile *t = &((const gmm_tile *)node->tiling.plan)[b];
        const gmm_tile *first = &((const gmm_tile *)node->tiling.plan)[b - b % strips];
        int64_t n0 = b % strips ? t[-1].n1 : 0;
        CHECK_MSG(t->group == GMM_EXPERT_TILE && t->m0 == b / strips && t->m1 == m && t->n0 == n0 &&
                      t->n0 % unit == 0 && first->m0 == t->m0,
                  "%d cores: block %lld is {%lld, %lld, %lld, %lld, %lld}", cores, (long long)b, (long long)t->group,
                  (long long)t->m0, (long long)t->m1, (long long)t->n0, (long long)t->n1);
        if (b % strips == strips - 1) CHECK(t->n1 == n);
        widest = t->n1 - t->n0 > widest ? t->n1 - t->n0 : widest;
        narrowest = t->n1 - t->n0 < narrowest ? t->n1 - t->n0 : narrowest;
      }
      CHECK_MSG(widest - narrowest <= unit, "%d cores: strips from %lld to %lld columns", cores, (long long)narrowest,
                (long long)widest);
      memset(yn, 0xA5, yb);
      CHECK_OK(sk_program_run(p, team, bufs, 3, (sk_buffer[]){{"y", yn, yb}}, 1));
      CHECK_MSG(memcmp(y1, yn, yb) == 0, "run-time groups (list %d): %d cores differ from one", l, cores);
      sk_program_destroy(p);
      sk_team_destroy(team);
    }
    sk_program_destroy(p1);
  }
  sk_graph_destroy(g);
}

/* A weight large next to its rows (a shared expert at decode): work items
 * of whole rows for the cores to claim, bitwise those of one core, eager
 * and in a super kernel; a small one keeps the dealt, even tiles. */
static void test_streamed_weights_are_claimed_items(void) {
  const int64_t m = 3, k = 1024, n = 2048;
  size_t xb = (size_t)(m * k) * 4, wb = (size_t)(k * n) * 4, yb = (size_t)(m * n) * 4;
  float *xs = malloc(xb), *ws = malloc(wb), *ya = malloc(yb), *yc = malloc(yb);
  uint64_t seed = 5;
  rr_fill(xs, SK_FP32, (size_t)(m * k), -1, 1, &seed);
  rr_fill(ws, SK_FP32, (size_t)(k * n), -1, 1, &seed);
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){m, k}), w = input(g, "w", SK_FP32, 2, (int64_t[]){k, n}), y;
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
  CHECK_OK(sk_graph_begin_scope(g, "shared", NULL));
  op(g, "grouped_matmul", "gmm", in, 2, NULL, 0, &y, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  sk_buffer bufs[] = {{"x", xs, xb}, {"w", ws, wb}};
  sk_program *p1;
  sk_compile_config one = {.struct_size = sizeof one, .executor = SK_EXECUTOR_EAGER};
  CHECK_OK(sk_compile(g, &one, &p1));
  CHECK_OK(sk_program_run(p1, NULL, bufs, 2, (sk_buffer[]){{"y", ya, yb}}, 1));
  CHECK(!gmm_node(p1)->tiling.claim);
  const int64_t unit = SK_PACKED_GROUP_COLUMNS;
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  CHECK_OK(sk_team_create(&tc, &team));
  for (int e = 0; e < 2; e++) {
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team,
                             .executor = e ? SK_EXECUTOR_INTERP : SK_EXECUTOR_EAGER};
    sk_program *p;
    CHECK_OK(sk_compile(g, &cfg, &p));
    const sk__exec_node *node = gmm_node(p);
    /* 8 MiB of fp32 weights: 16 strips of 128 columns, all 3 rows each. */
    CHECK_MSG(node->tiling.claim && node->tiling.n_blocks == 16, "claim %d, %lld blocks", node->tiling.claim,
              (long long)node->tiling.n_blocks);
    for (int64_t b = 0; b < node->tiling.n_blocks; b++) {
      const gmm_tile *t = &((const gmm_tile *)node->tiling.plan)[b];
      CHECK(t->group == 0 && t->m0 == 0 && t->m1 == m && t->n0 == (b ? t[-1].n1 : 0) && t->n0 % unit == 0);
    }
    memset(yc, 0x5A, yb);
    CHECK_OK(sk_program_run(p, team, bufs, 2, (sk_buffer[]){{"y", yc, yb}}, 1));
    CHECK_MSG(memcmp(ya, yc, yb) == 0, "%s on 2 cores differs from one core", e ? "claimed super kernel" : "eager");
    sk_program_destroy(p);
  }
  sk_team_destroy(team);
  sk_program_destroy(p1);
  sk_graph_destroy(g);
  free(xs), free(ws), free(ya), free(yc);
}

/* Constant weights (packed at compile) of a group with enough rows: row
 * tiles for the cores to claim, MR-multiple heights of at least 4 MR,
 * every output element once, a weight over 1 MiB in no more than 8 row
 * tiles; the same op with the
 * weight as an input, or with decode's few rows, keeps the dealt tiles.
 * Bitwise those of one core, eager and in a super kernel (interp, jit). */
static void test_constant_weights_are_claimed_row_tiles(void) {
  static const tiling_case cases[] = {
      {"seed sk1: 64 + 256 rows", {64, 256}, 180, 320, true},
      {"tall and wide: columns within a tile", {600, 5}, 16, 700, true},
      {"a weight over 1 MiB: streamed at most 8 times", {600}, 400, 700, true},
      {"decode: 8 + 16 rows", {8, 16}, 180, 320, false},
  };
  int64_t mr, nr;
  sk__gemm_micro_tile(sk__cpu_isa(), &mr, &nr);
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  CHECK_OK(sk_team_create(&tc, &team));
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const tiling_case *c = &cases[ci];
    int64_t e = n_groups(c), m = 0, ends[6];
    for (int64_t g = 0; g < e; g++) ends[g] = (m += c->rows[g]);
    uint64_t seed = 31 + ci;
    rr_fill(x_data, SK_FP32, (size_t)(m * c->k), -1, 1, &seed);
    rr_fill(w_data, SK_FP32, (size_t)(e * c->k * c->n), -1, 1, &seed);
    size_t xb = (size_t)(m * c->k) * 4, yb = (size_t)(m * c->n) * 4;
    for (int constant = 0; constant < 2; constant++) {
      sk_graph *g;
      CHECK_OK(sk_graph_create(&g));
      sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){m, c->k}), w, y;
      if (constant)
        CHECK_OK(sk_graph_add_constant(g, "w", SK_FP32, 3, (int64_t[]){e, c->k, c->n}, w_data, SK_CONSTANT_BORROW, &w));
      else
        w = input(g, "w", SK_FP32, 3, (int64_t[]){e, c->k, c->n});
      sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}};
      sk_attr attrs[] = {SK_ATTR_INT("group_type", 0), SK_ATTR_INT("split_item", 3),
                         SK_ATTR_INTS("group_list", ends, (size_t)e)};
      CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
      op(g, "grouped_matmul", "gmm", in, 2, attrs, 3, &y, 1);
      CHECK_OK(sk_graph_end_scope(g));
      CHECK_OK(sk_graph_mark_output(g, y, "y"));
      size_t n_in = constant ? 1 : 2;
      sk_buffer bufs[] = {{"x", x_data, xb}, {"w", w_data, (size_t)(e * c->k * c->n) * 4}};
      sk_program *p1;
      sk_compile_config one = {.struct_size = sizeof one, .executor = SK_EXECUTOR_EAGER};
      CHECK_OK(sk_compile(g, &one, &p1));
      CHECK(!gmm_node(p1)->tiling.claim);
      CHECK_OK(sk_program_run(p1, NULL, bufs, n_in, (sk_buffer[]){{"y", y1, yb}}, 1));
      for (int ex = 0; ex < 3; ex++) {
        static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
        sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executors[ex]};
        sk_program *p;
        CHECK_OK(sk_compile(g, &cfg, &p));
        const sk__exec_node *node = gmm_node(p);
        bool want = constant && c->balanced;
        CHECK_MSG(node->tiling.claim == want, "%s, weight %s: claim %d", c->what, constant ? "constant" : "input",
                  node->tiling.claim);
        if (want) {
          int64_t row0[7] = {0}, per_group[6] = {0};
          for (int64_t gi = 0; gi < e; gi++) row0[gi + 1] = row0[gi] + c->rows[gi];
          memset(covered, 0, sizeof covered);
          for (int64_t b = 0; b < node->tiling.n_blocks; b++) {
            const gmm_tile *t = &((const gmm_tile *)node->tiling.plan)[b];
            CHECK(t->group >= 0 && t->group < e && (t->m0 % mr == 0) && (t->m1 % mr == 0 || t->m1 == c->rows[t->group]));
            CHECK(t->n1 - t->n0 <= 512 && t->n0 % nr == 0);
            per_group[t->group] += t->n0 == 0;
            for (int64_t r = row0[t->group] + t->m0; r < row0[t->group] + t->m1; r++)
              for (int64_t j = t->n0; j < t->n1; j++) covered[r * c->n + j]++;
          }
          int64_t bad = 0;
          for (int64_t i = 0; i < m * c->n; i++) bad += covered[i] != 1;
          CHECK_MSG(bad == 0 && node->tiling.n_blocks >= 8, "%s: %lld blocks, %lld elements not covered once",
                    c->what, (long long)node->tiling.n_blocks, (long long)bad);
          /* A group's weight over 1 MiB is cut in at most 8 row tiles;
           * smaller ones in tiles of at least 4 MR rows (but the last). */
          for (int64_t gi = 0; gi < e; gi++) {
            bool streamed = c->k * c->n * 4 > (1 << 20);
            CHECK_MSG(!streamed || per_group[gi] <= 8, "%s: group %lld in %lld row tiles", c->what, (long long)gi,
                      (long long)per_group[gi]);
            CHECK_MSG(per_group[gi] <= sk__ceil_div(c->rows[gi], 4 * mr), "%s: group %lld in %lld row tiles",
                      c->what, (long long)gi, (long long)per_group[gi]);
          }
        }
        memset(yn, 0x5A, yb);
        CHECK_OK(sk_program_run(p, team, bufs, n_in, (sk_buffer[]){{"y", yn, yb}}, 1));
        CHECK_MSG(memcmp(y1, yn, yb) == 0, "%s, executor %d: 2 cores differ from one", c->what, ex);
        sk_program_destroy(p);
      }
      sk_program_destroy(p1);
      sk_graph_destroy(g);
    }
  }
  sk_team_destroy(team);
}

TEST_MAIN(TEST_CASE(test_tiles_cover_and_balance), TEST_CASE(test_runtime_tiles_are_expert_items),
          TEST_CASE(test_streamed_weights_are_claimed_items), TEST_CASE(test_constant_weights_are_claimed_row_tiles))

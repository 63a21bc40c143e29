/* Conformance: one table of cases (tests/cases/ops.cases, which the
 * Python op tests read too), every built-in op (the list of sk_op_count /
 * sk_op_info) with at least one, each run through the eager, interpreted
 * and JIT executors on teams of 1, 2 and 3 cores and compared bit for bit
 * with the op's plain reference — the way ggml's test-backend-ops runs one
 * table over every backend. ctest registers it once per ISA path (SK_ISA).
 * Each case runs twice: every tensor a graph input, and every slot but the
 * first a graph constant (weights: what ops pack at compile). Each case
 * also checks sk_op_infer against the shapes the graph inferred.
 *
 * `test_conformance --time [REPS]` instead times every case (inputs) on
 * every executor and team size: the median of REPS runs (default 50) in
 * microseconds, one line per op x executor x team size, for the ISA that
 * SK_ISA (or the CPU) gives. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "reference_runner.h"

#include "case_table.h"
#include "kernels/convert/convert.h"

/* The table (tests/cases/ops.cases), read by setup. */
static op_case *CASES;
static size_t N_CASES;

static sk_team *teams[4];

/* A slot's literal values (ops.cases "=v0,v1,..."), converted to dt: the
 * integers as they are, the floats through fp32 (as the Python reader). */
static void fill_values(const op_case *c, const case_slot *sl, void *data, sk_dtype dt) {
  const case_value *v = &c->values[sl->first_value];
  bool is_float = dt == SK_FP32 || dt == SK_FP16 || dt == SK_BF16;
  for (int i = 0; i < sl->n_values; i++)
    if (dt == SK_INT64) ((int64_t *)data)[i] = v[i].i; /* exact past 2^53 */
    else rr_store(data, dt, (size_t)i, is_float ? v[i].f : (double)v[i].i);
}

/* Fills tensor j of slot sl (n elements of dt): its literal values, values
 * from its range, else a range fit for the dtype. */
static void fill_slot_tensor(const op_case *c, const case_slot *sl, void *data, sk_dtype dt, size_t n,
                             uint64_t seed) {
  if (sl->n_values > 0) {
    CHECK_MSG((size_t)sl->n_values == n, "%s (%s): slot %s has %d values for %zu elements", c->op, c->what,
              sl->name, sl->n_values, n);
    if ((size_t)sl->n_values == n) fill_values(c, sl, data, dt);
  } else if (sl->hi > sl->lo) rr_fill(data, dt, n, sl->lo, sl->hi, &seed);
  else rr_fill_dtype_range(data, dt, n, &seed);
}

/* The case as one node inside scope "sk" (so the fused executors fuse it),
 * every output marked; with constants, every slot after the first holds
 * graph constants (copied) instead of inputs. Also checks sk_op_infer on
 * the same description. */
static sk_graph *build_case(const op_case *c, bool constants) {
  sk_graph *g = NULL;
  CHECK_OK(sk_graph_create(&g));
  sk_value values[CASE_MAX_SLOTS][CASE_MAX_LIST];
  sk_op_input ins[CASE_MAX_SLOTS];
  sk_tensor_meta metas[CASE_MAX_SLOTS * CASE_MAX_LIST];
  size_t n_ins = 0, n_metas = 0;
  for (; n_ins < (size_t)c->n_slots; n_ins++) {
    const case_slot *s = &c->slots[n_ins];
    for (int j = 0; j < s->count; j++) {
      char name[64];
      snprintf(name, sizeof name, "%s%d", s->name, j);
      const case_tensor *t = &s->t[j];
      if (constants && n_ins > 0) {
        int64_t numel = 1;
        for (int d = 0; d < t->rank; d++) numel *= t->shape[d];
        void *data = calloc((size_t)numel + 1, sk_dtype_size(t->dtype));
        fill_slot_tensor(c, s, data, t->dtype, (size_t)numel, 1234 + (uint64_t)n_metas);
        CHECK_OK(sk_graph_add_constant(g, name, t->dtype, t->rank, t->shape, data, SK_CONSTANT_COPY,
                                       &values[n_ins][j]));
        free(data);
      } else {
        CHECK_OK(sk_graph_add_input(g, name, t->dtype, t->rank, t->shape, &values[n_ins][j]));
      }
      metas[n_metas] = (sk_tensor_meta){.dtype = t->dtype, .rank = t->rank};
      memcpy(metas[n_metas++].shape, t->shape, sizeof t->shape);
    }
    ins[n_ins] = (sk_op_input){s->name, values[n_ins], (size_t)s->count};
  }
  sk_op_desc d = {.op = c->op, .inputs = ins, .n_inputs = n_ins, .attrs = c->attrs, .n_attrs = c->n_attrs};
  sk_value outs[8];
  size_t n_out = 0;
  CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
  CHECK_OK(sk_graph_add_op(g, &d, outs, 8, &n_out));
  CHECK_OK(sk_graph_end_scope(g));
  sk_tensor_meta inferred[8];
  size_t n_inferred = 0;
  CHECK_OK(sk_op_infer(&d, metas, n_metas, inferred, 8, &n_inferred));
  CHECK_MSG(n_inferred == n_out, "%s: sk_op_infer gave %zu outputs, the graph %zu", c->op, n_inferred, n_out);
  for (size_t o = 0; o < n_out && o < n_inferred; o++) {
    sk_tensor_meta m = {0};
    CHECK_OK(sk_graph_value_info(g, outs[o], &m.dtype, &m.rank, m.shape));
    CHECK_MSG(m.dtype == inferred[o].dtype && m.rank == inferred[o].rank &&
                  memcmp(m.shape, inferred[o].shape, (size_t)m.rank * sizeof(int64_t)) == 0,
              "%s (%s): output %zu: sk_op_infer disagrees with the graph", c->op, c->what, o);
    char name[32];
    snprintf(name, sizeof name, "out%zu", o);
    CHECK_OK(sk_graph_mark_output(g, outs[o], name));
  }
  CHECK_OK(sk_op_supported(&d, metas, n_metas));
  return g;
}

/* Inputs of a slot with a range or literal values (named <slot><j>) get
 * them; the others keep rr_fill_by_dtype's. */
static void fill_ranges(const op_case *c, sk_program *p, rr_buffers *b) {
  for (size_t i = 0; i < b->n_inputs; i++)
    for (int s = 0; s < c->n_slots; s++) {
      const case_slot *sl = &c->slots[s];
      if (!(sl->hi > sl->lo) && sl->n_values == 0) continue;
      for (int j = 0; j < sl->count; j++) {
        char name[64];
        snprintf(name, sizeof name, "%s%d", sl->name, j);
        if (strcmp(b->inputs[i].name, name) != 0) continue;
        const char *info_name;
        sk_dtype dt;
        int rank;
        int64_t shape[SK_MAX_RANK];
        CHECK_OK(sk_program_input_info(p, i, &info_name, &dt, &rank, shape));
        fill_slot_tensor(c, sl, b->inputs[i].data, dt, b->inputs[i].bytes / sk_dtype_size(dt), 99 + i);
      }
    }
}

static int run_case(const op_case *c, sk_graph *g, sk_executor ex, int cores) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[cores], .executor = ex};
  sk_program *p = NULL;
  sk_status st = sk_compile(g, &cfg, &p);
  CHECK_MSG(st == SK_STATUS_OK, "%s (%s): compile: %s", c->op, c->what, sk_last_error());
  if (st != SK_STATUS_OK) return 1;
  rr_buffers b;
  int bad = 1;
  if (rr_alloc(p, &b, -1, 1, 7)) {
    rr_fill_by_dtype(&b, p, 11);
    fill_ranges(c, p, &b);
    bad = rr_check_program(p, teams[cores], &b);
    rr_free(&b);
  }
  CHECK_MSG(bad == 0, "%s (%s): executor %d on %d cores differs from the reference", c->op, c->what, (int)ex, cores);
  sk_program_destroy(p);
  return bad;
}

static void test_every_case_on_every_executor(void) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (size_t i = 0; i < N_CASES; i++)
    for (int constants = 0; constants < 2; constants++) {
      sk_graph *g = build_case(&CASES[i], constants);
      int bad = 0;
      for (size_t e = 0; e < 3; e++)
        for (int cores = 1; cores <= 3; cores++) bad += run_case(&CASES[i], g, executors[e], cores);
      printf("  %-22s %-32s %-10s %s\n", CASES[i].op, CASES[i].what, constants ? "constants" : "inputs",
             bad ? "MISMATCH" : "bitwise equal x9");
      sk_graph_destroy(g);
    }
}

/* The table covers every built-in op: a new op without a case fails here. */
static void test_every_op_has_a_case(void) {
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    CHECK_OK(sk_op_info(i, &s));
    bool found = false;
    for (size_t k = 0; k < N_CASES && !found; k++) found = strcmp(CASES[k].op, s.name) == 0;
    CHECK_MSG(found, "op %s has no conformance case", s.name);
  }
}

/* The table's literal values (" =v0,v1,...", ops.cases's header): the
 * reader takes good ones and the runner fills the tensors with exactly them.
 * (test_schema_edges feeds the reader the bad lines, wrong values too.) */
static void test_table_reader_literal_values(void) {
  op_case cases[2];
  bool ok = case_table_parse_line("grouped_matmul | ok | x: fp16[20,8]; weight: fp16[3,8,5]; "
                                  "group_list: int64[3] =5,9,20 | group_type=0",
                                  &cases[0]) == 0 &&
            case_table_parse_line("add | ok | x: fp16[2,1] =0.05,-1e-3; y: int8[2] =-128,+127; z: bool[1] =1",
                                  &cases[1]) == 0;
  CHECK(ok);
  if (ok) {
    const case_slot *g = &cases[0].slots[2], *x = &cases[1].slots[0], *y = &cases[1].slots[1];
    const case_value *v0 = cases[0].values, *v1 = cases[1].values;
    CHECK(g->n_values == 3 && v0[g->first_value].i == 5 && v0[g->first_value + 2].i == 20);
    CHECK(x->n_values == 2 && v1[x->first_value].f == 0.05 && v1[x->first_value + 1].f == -1e-3);
    CHECK(y->n_values == 2 && v1[y->first_value].i == -128 && v1[y->first_value + 1].i == 127);
    CHECK(cases[1].slots[2].n_values == 1 && cases[1].n_values == 5);
    /* and the runner fills the tensors with exactly them, in their dtypes */
    int64_t groups[3] = {0};
    uint16_t halves[2] = {0}, want[2] = {0};
    int8_t bytes[2] = {0};
    fill_slot_tensor(&cases[0], g, groups, SK_INT64, 3, 1);
    fill_slot_tensor(&cases[1], x, halves, SK_FP16, 2, 1);
    fill_slot_tensor(&cases[1], y, bytes, SK_INT8, 2, 1);
    sk__store_f32(want, SK_FP16, 0, 0.05f);
    sk__store_f32(want, SK_FP16, 1, -1e-3f);
    CHECK(groups[0] == 5 && groups[1] == 9 && groups[2] == 20);
    CHECK(halves[0] == want[0] && halves[1] == want[1] && halves[0] == 0x2a66);
    CHECK(bytes[0] == -128 && bytes[1] == 127);
  }
}

static void setup(void) {
  int n_cases = case_table_read(NULL, &CASES);
  CHECK_MSG(n_cases > 0, "the case table could not be read");
  N_CASES = n_cases > 0 ? (size_t)n_cases : 0;
  for (int n = 1; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
}

static void teardown(void) {
  for (int n = 1; n <= 3; n++) sk_team_destroy(teams[n]);
  free(CASES);
}

/* ---- timing mode ---- */

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of reps runs of c (every slot a graph input) on executor ex
 * and a team of `cores`, in microseconds; a negative value when it fails. */
static double time_case(const op_case *c, sk_graph *g, sk_executor ex, int cores, int reps) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[cores], .executor = ex};
  sk_program *p = NULL;
  if (sk_compile(g, &cfg, &p) != SK_STATUS_OK) return -1;
  rr_buffers b;
  double median = -1;
  double *times = malloc((size_t)reps * sizeof *times);
  if (times && rr_alloc(p, &b, -1, 1, 7)) {
    rr_fill_by_dtype(&b, p, 11);
    fill_ranges(c, p, &b);
    bool ok = true;
    for (int r = -1; r < reps && ok; r++) { /* one warm-up run */
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      ok = sk_program_run(p, teams[cores], b.inputs, b.n_inputs, b.outputs, b.n_outputs) == SK_STATUS_OK;
      clock_gettime(CLOCK_MONOTONIC, &t1);
      if (r >= 0) times[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    if (ok) {
      qsort(times, (size_t)reps, sizeof *times, compare_doubles);
      median = times[reps / 2];
    }
    rr_free(&b);
  }
  free(times);
  sk_program_destroy(p);
  return median;
}

static int time_every_case(int reps) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  static const char *const names[] = {"eager", "interp", "jit"};
  setup();
  printf("median of %d runs, microseconds (SK_ISA=%s)\n", reps, getenv("SK_ISA") ? getenv("SK_ISA") : "(the CPU's)");
  printf("%-22s %-44s %-7s %5s %10s\n", "op", "case", "exec", "cores", "us");
  for (size_t i = 0; i < N_CASES; i++) {
    sk_graph *g = build_case(&CASES[i], false);
    for (size_t e = 0; e < 3; e++)
      for (int cores = 1; cores <= 3; cores++)
        printf("%-22s %-44.44s %-7s %5d %10.2f\n", CASES[i].op, CASES[i].what, names[e], cores,
               time_case(&CASES[i], g, executors[e], cores, reps));
    sk_graph_destroy(g);
  }
  teardown();
  return harness_failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--time") == 0) return time_every_case(argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 50);
  static const harness_case cases[] = {TEST_CASE(setup), TEST_CASE(test_every_op_has_a_case),
                                       TEST_CASE(test_table_reader_literal_values),
                                       TEST_CASE(test_every_case_on_every_executor), TEST_CASE(teardown)};
  return harness_run(cases, sizeof cases / sizeof cases[0]);
}

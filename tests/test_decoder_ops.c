/* softmax, argmax, embedding and rotary_embedding: what the case table
 * cannot say. An id or position out of range fails the run on every
 * executor and team size, naming the entry, with nothing written, and the
 * next run is normal; NaN and -inf rows of softmax (the canonical NaN);
 * argmax's ties, NaNs and zeros; the RoPE frequencies of each scaling type
 * against values worked out by hand; build errors. */
#include <math.h>
#include <string.h>

#include "graph_builders.h"
#include "ops/rope_freq.h"

static const sk_executor EXECUTORS[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT, SK_EXECUTOR_REFERENCE};
static sk_team *teams[4];

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* One-node graph: op `type` on inputs named as its slots, all graph inputs. */
typedef struct one_input {
  const char *name;
  sk_dtype dt;
  int rank;
  int64_t shape[3];
} one_input;

static sk_graph *one_op(const char *type, const one_input *ins, size_t n_in, const sk_attr *at, size_t n_at,
                        size_t n_out) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value v[4], outs[2];
  sk_op_input in[4];
  for (size_t i = 0; i < n_in; i++) {
    v[i] = input(g, ins[i].name, ins[i].dt, ins[i].rank, ins[i].shape);
    in[i] = (sk_op_input){ins[i].name, &v[i], 1};
  }
  op(g, type, "node", in, n_in, at, n_at, outs, n_out);
  for (size_t j = 0; j < n_out; j++) CHECK_OK(sk_graph_mark_output(g, outs[j], j ? "y1" : "y0"));
  return g;
}

/* Program i of g (i < N_PROGRAMS: every executor on teams of 1-3 cores,
 * the reference on one), its team in *team; NULL for a pair not run. */
enum { N_PROGRAMS = 12 };
static sk_program *program_at(const sk_graph *g, int i, sk_team **team) {
  const size_t e = (size_t)i / 3;
  const int cores = i % 3 + 1;
  if (EXECUTORS[e] == SK_EXECUTOR_REFERENCE && cores > 1) return NULL;
  *team = teams[cores];
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = *team, .executor = EXECUTORS[e]};
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, &cfg, &p));
  return p;
}

/* Runs g's program on every executor and team of 1-3 cores with `good`
 * and `bad` index data (input `index` of the others' fixed data): the bad
 * run fails naming `fragment` and leaves every output as it was; a good
 * run after it succeeds. */
static void check_run_error(sk_graph *g, sk_buffer *in, size_t n_in, size_t index, const void *bad, const void *good,
                            sk_buffer *out, size_t n_out, const char *fragment) {
  for (int i = 0; i < N_PROGRAMS; i++) {
    sk_team *team;
    sk_program *p = program_at(g, i, &team);
    if (!p) continue;
    in[index].data = (void *)bad;
    for (size_t j = 0; j < n_out; j++) memset(out[j].data, 0x5A, out[j].bytes);
    CHECK_FAILS(sk_program_run(p, team, in, n_in, out, n_out), SK_STATUS_INVALID_ARGUMENT, fragment);
    for (size_t j = 0; j < n_out; j++)
      for (size_t b = 0; b < out[j].bytes; b++)
        if (((unsigned char *)out[j].data)[b] != 0x5A) {
          CHECK_MSG(false, "program %d: output %zu byte %zu written by a failed run", i, j, b);
          break;
        }
    in[index].data = (void *)good;
    CHECK_OK(sk_program_run(p, team, in, n_in, out, n_out));
    sk_program_destroy(p);
  }
}

static void test_embedding_out_of_range_ids(void) {
  enum { V = 10, H = 300, N = 64 };
  static float table[V * H], y[N * H];
  int64_t good[N], bad[N];
  for (int i = 0; i < V * H; i++) table[i] = (float)i;
  for (int i = 0; i < N; i++) good[i] = bad[i] = i % V;
  bad[37] = V; /* in the last block of any split: the first blocks must not write either */
  one_input ins[] = {{"table", SK_FP32, 2, {V, H}}, {"ids", SK_INT64, 1, {N}}};
  sk_graph *g = one_op("embedding", ins, 2, NULL, 0, 1);
  sk_buffer in[] = {{"table", table, sizeof table}, {"ids", good, sizeof good}};
  sk_buffer out[] = {{"y0", y, sizeof y}};
  check_run_error(g, in, 2, 1, bad, good, out, 1, "node (embedding): ids[37] = 10 is out of range for a table of 10 rows");
  CHECK(y[37 * H + 5] == (float)(7 * H + 5));
  bad[37] = -3;
  check_run_error(g, in, 2, 1, bad, good, out, 1, "ids[37] = -3 is out of range");
  sk_graph_destroy(g);
}

static void test_rotary_out_of_range_positions(void) {
  enum { T = 40, H = 8, D = 64 };
  static float q[T * H * D], k[T * D], yq[T * H * D], yk[T * D];
  int32_t good[T], bad[T];
  for (int i = 0; i < T * H * D; i++) q[i] = (float)(i % 13) / 13.0f;
  for (int i = 0; i < T * D; i++) k[i] = (float)(i % 7) / 7.0f;
  for (int t = 0; t < T; t++) good[t] = bad[t] = t;
  bad[T - 1] = 64;
  one_input ins[] = {{"q", SK_FP32, 3, {T, H, D}}, {"k", SK_FP32, 3, {T, 1, D}}, {"positions", SK_INT32, 1, {T}}};
  sk_attr at[] = {SK_ATTR_INT("max_positions", 64)};
  sk_graph *g = one_op("rotary_embedding", ins, 3, at, 1, 2);
  sk_buffer in[] = {{"q", q, sizeof q}, {"k", k, sizeof k}, {"positions", good, sizeof good}};
  sk_buffer out[] = {{"y0", yq, sizeof yq}, {"y1", yk, sizeof yk}};
  check_run_error(g, in, 3, 2, bad, good, out, 2,
                  "node (rotary_embedding): positions[39] = 64 is out of range for max_positions 64");
  CHECK(memcmp(yq, q, D * H * sizeof(float)) == 0); /* position 0: cos 1, sin 0 */
  sk_graph_destroy(g);
}

/* Runs a one-node graph of fp32 x [rows, n] on every executor and team,
 * each result bitwise the first. */
static void run_everywhere(sk_graph *g, const float *x, size_t x_bytes, void *y, size_t y_bytes) {
  unsigned char first[4096];
  CHECK(y_bytes <= sizeof first);
  for (int i = 0; i < N_PROGRAMS; i++) {
    sk_team *team;
    sk_program *p = program_at(g, i, &team);
    if (!p) continue;
    sk_buffer in[] = {{"x", (void *)x, x_bytes}};
    sk_buffer out[] = {{"y0", y, y_bytes}};
    CHECK_OK(sk_program_run(p, team, in, 1, out, 1));
    if (i == 0) memcpy(first, y, y_bytes);
    CHECK_MSG(memcmp(first, y, y_bytes) == 0, "program %d differs from the first", i);
    sk_program_destroy(p);
  }
}

static void test_softmax_edge_rows(void) {
  enum { R = 5, N = 37 };
  float x[R * N], y[R * N];
  for (int i = 0; i < R * N; i++) x[i] = (float)(i % N) / 8.0f;
  x[0 * N + 20] = NAN;                                  /* a NaN: a NaN row */
  for (int j = 0; j < N; j++) x[1 * N + j] = -INFINITY; /* all -inf: NaN */
  x[2 * N + 3] = INFINITY;                              /* +inf: inf - inf, NaN */
  x[3 * N + 3] = -INFINITY;                             /* -inf among numbers: 0 */
  for (int j = 0; j < N; j++) x[4 * N + j] = j % 2 ? -0.0f : 0.0f; /* equal: 1 / N each */
  one_input ins[] = {{"x", SK_FP32, 2, {R, N}}};
  sk_graph *g = one_op("softmax", ins, 1, NULL, 0, 1);
  run_everywhere(g, x, sizeof x, y, sizeof y);
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < N; j++) CHECK_MSG(bits(y[r * N + j]) == 0x7FC00000u, "row %d: %08x", r, bits(y[r * N + j]));
  float sum = 0;
  for (int j = 0; j < N; j++) sum += y[3 * N + j];
  CHECK(y[3 * N + 3] == 0.0f && fabsf(sum - 1.0f) < 1e-6f);
  for (int j = 0; j < N; j++) CHECK(y[4 * N + j] == 1.0f / N);
  sk_graph_destroy(g);
}

static void test_argmax_ties_nans_zeros(void) {
  enum { R = 6, N = 9000 }; /* rows past one 4096-value chunk */
  static float x[R * N];
  int64_t y[R];
  for (int i = 0; i < R * N; i++) x[i] = (float)(i % 101) / 101.0f - 2.0f;
  x[0 * N + 8000] = 5.0f, x[0 * N + 5000] = 5.0f, x[0 * N + 8999] = 5.0f; /* ties: the lowest */
  x[1 * N + 6000] = NAN, x[1 * N + 4] = 9.0f, x[1 * N + 7000] = NAN;     /* the first NaN over any number */
  for (int j = 0; j < N; j++) x[2 * N + j] = j % 3 ? -0.0f : 0.0f, x[3 * N + j] = -INFINITY;
  x[3 * N + 8191] = -3e38f;
  x[4 * N + 0] = INFINITY, x[4 * N + 1] = INFINITY;
  x[5 * N + 4095] = 7.0f, x[5 * N + 4096] = 7.0f; /* a tie across the chunk boundary */
  one_input ins[] = {{"x", SK_FP32, 2, {R, N}}};
  sk_graph *g = one_op("argmax", ins, 1, NULL, 0, 1);
  run_everywhere(g, x, sizeof x, y, sizeof y);
  static const int64_t want[R] = {5000, 6000, 0, 8191, 0, 4095};
  for (int r = 0; r < R; r++) CHECK_MSG(y[r] == want[r], "row %d: %lld, expected %lld", r, (long long)y[r], (long long)want[r]);
  sk_graph_destroy(g);
}

/* inv_freq and the attention factor of rotary_dim 4, theta 10000: e = 0
 * and 0.5, so pow gives 1 and 100. */
static void test_rope_frequencies_by_hand(void) {
  rope_config c = {.rotary_dim = 4, .max_positions = 8, .theta = 10000, .factor = 4, .beta_fast = 32, .beta_slow = 1,
                   .truncate = true};
  float inv[2], af;
  sk__rope_inv_freq(&c, inv, &af);
  CHECK(inv[0] == 1.0f && inv[1] == 1.0f / 100.0f && af == 1.0f); /* none: factor ignored */
  c.scaling = ROPE_LINEAR;
  sk__rope_inv_freq(&c, inv, &af);
  CHECK(inv[0] == 1.0f / 4.0f && inv[1] == (1.0f / 100.0f) / 4.0f && af == 1.0f);
  /* yarn, DeepSeek-V3's 40 over 4096: the correction range is
   * floor(4 ln(4096 / 64 pi) / 2 ln 10000) = floor(0.654) = 0 to
   * ceil(4 ln(4096 / 2 pi) / 2 ln 10000) = ceil(1.407) = 2; ramp(i) = i / 2:
   * dim 0 keeps its frequency, dim 1 is half interpolated. */
  c.scaling = ROPE_YARN, c.factor = 40, c.original_max_positions = 4096;
  sk__rope_inv_freq(&c, inv, &af);
  float half_interp = (1.0f / (40.0f * 100.0f)) * 0.5f, half_extra = (1.0f / 100.0f) * 0.5f;
  CHECK(inv[0] == 1.0f && inv[1] == half_interp + half_extra);
  CHECK(af == (float)(0.1 * log(40.0) + 1.0)); /* no mscales: the paper's 0.1 ln s + 1 */
  c.mscale = 1, c.mscale_all_dim = 1;
  sk__rope_inv_freq(&c, inv, &af);
  CHECK(af == 1.0f); /* DeepSeek-V3: their ratio */
  c.mscale = 0.707, c.mscale_all_dim = 0;
  sk__rope_inv_freq(&c, inv, &af);
  CHECK(af == (float)(0.1 * log(40.0) + 1.0)); /* one of them 0: the paper's */
  c.attention_factor = 2.5;
  sk__rope_inv_freq(&c, inv, &af);
  CHECK(af == 2.5f);
  /* the table row of position 3: cos then sin of inv * 3, times af */
  float row[4];
  sk__rope_table_row(&c, inv, af, 3, row);
  CHECK(row[0] == (float)cos(3.0) * 2.5f && row[2] == (float)sin(3.0) * 2.5f);
  CHECK(row[1] == (float)cos((double)(inv[1] * 3.0f)) * 2.5f);
}

/* One rotation through the op: q [1, 1, 4] at position 1, neox and
 * interleaved, default frequencies [1, 0.01]. */
static void test_rope_rotation_by_hand(void) {
  for (int layout = 0; layout <= 1; layout++) {
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    sk_value q = input(g, "q", SK_FP32, 3, (int64_t[]){1, 1, 4}), pos = input(g, "positions", SK_INT64, 1, (int64_t[]){1});
    sk_value outs[2];
    sk_op_input in[] = {{"q", &q, 1}, {"k", &q, 1}, {"positions", &pos, 1}};
    sk_attr at[] = {SK_ATTR_INT("max_positions", 2), SK_ATTR_INT("layout", layout)};
    op(g, "rotary_embedding", "rope", in, 3, at, 2, outs, 2);
    CHECK_OK(sk_graph_mark_output(g, outs[0], "q_out"));
    sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_EAGER};
    sk_program *p;
    CHECK_OK(sk_compile(g, &cfg, &p));
    float x[4] = {0.5f, -1.5f, 2.0f, 0.25f}, y[4];
    int64_t one = 1;
    sk_buffer bi[] = {{"q", x, sizeof x}, {"positions", &one, sizeof one}};
    sk_buffer bo[] = {{"q_out", y, sizeof y}};
    CHECK_OK(sk_program_run(p, NULL, bi, 2, bo, 1));
    const float c0 = (float)cos(1.0), s0 = (float)sin(1.0), c1 = (float)cos((double)0.01f), s1 = (float)sin((double)0.01f);
    /* neox pairs (0, 2), (1, 3); interleaved (0, 1), (2, 3) */
    const int a0 = 0, b0 = layout ? 1 : 2, a1 = layout ? 2 : 1, b1 = 3;
    float p1 = x[a0] * c0, p2 = x[b0] * s0, p3 = x[b0] * c0, p4 = x[a0] * s0;
    CHECK(y[a0] == p1 - p2 && y[b0] == p3 + p4);
    p1 = x[a1] * c1, p2 = x[b1] * s1, p3 = x[b1] * c1, p4 = x[a1] * s1;
    CHECK(y[a1] == p1 - p2 && y[b1] == p3 + p4);
    sk_program_destroy(p);
    sk_graph_destroy(g);
  }
}

static void test_build_errors(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value t8 = input(g, "t8", SK_INT8, 2, (int64_t[]){10, 4}), tf = input(g, "tf", SK_FP16, 2, (int64_t[]){10, 4});
  sk_value ids = input(g, "ids", SK_INT32, 1, (int64_t[]){3}), sc = input(g, "sc", SK_FP32, 1, (int64_t[]){9});
  sk_value y[2];
  sk_op_input e1[] = {{"table", &t8, 1}, {"ids", &ids, 1}};
  sk_op_desc d = {.op = "embedding", .inputs = e1, .n_inputs = 2};
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 1, NULL), SK_STATUS_INVALID_ARGUMENT, "input scale", "int8 table");
  sk_op_input e2[] = {{"table", &t8, 1}, {"ids", &ids, 1}, {"scale", &sc, 1}};
  d.inputs = e2, d.n_inputs = 3;
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 1, NULL), SK_STATUS_INVALID_SHAPE, "input scale", "[10]", "[9]");
  e2[0].values = &tf;
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 1, NULL), SK_STATUS_INVALID_ARGUMENT, "only an int8 table", "fp16");
  sk_value q = input(g, "q", SK_FP32, 3, (int64_t[]){3, 2, 8}), k = input(g, "k", SK_FP32, 3, (int64_t[]){3, 1, 6});
  sk_op_input r[] = {{"q", &q, 1}, {"k", &k, 1}, {"positions", &ids, 1}};
  sk_attr at[] = {SK_ATTR_INT("max_positions", 16), SK_ATTR_INT("rotary_dim", 5), SK_ATTR_INT("scaling_type", 2)};
  sk_op_desc rd = {.op = "rotary_embedding", .inputs = r, .n_inputs = 3, .attrs = at, .n_attrs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &rd, y, 2, NULL), SK_STATUS_INVALID_SHAPE, "input k", "[3, Hk, 8]", "[3, 1, 6]");
  r[1].values = &q;
  rd.n_attrs = 2;
  CHECK_FAILS(sk_graph_add_op(g, &rd, y, 2, NULL), SK_STATUS_INVALID_ATTRIBUTE, "rotary_dim", "even", "5");
  at[1] = SK_ATTR_INT("rotary_dim", 4);
  rd.n_attrs = 3;
  CHECK_FAILS(sk_graph_add_op(g, &rd, y, 2, NULL), SK_STATUS_INVALID_ATTRIBUTE, "original_max_positions");
  sk_value empty = input(g, "empty", SK_FP32, 2, (int64_t[]){3, 0});
  sk_op_input a[] = {{"x", &empty, 1}};
  sk_op_desc ad = {.op = "argmax", .inputs = a, .n_inputs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &ad, y, 1, NULL), SK_STATUS_INVALID_SHAPE, "input x", "N >= 1", "[3, 0]");
  ad.op = "softmax";
  CHECK_FAILS(sk_graph_add_op(g, &ad, y, 1, NULL), SK_STATUS_INVALID_SHAPE, "input x", "1 <= N", "[3, 0]");
  sk_graph_destroy(g);
  /* a reduced dimension that is the token count */
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_set_max_tokens(g, 8));
  sk_value dx = input(g, "x", SK_FP32, 1, (int64_t[]){SK_DIM_DYNAMIC});
  a[0].values = &dx;
  CHECK_FAILS(sk_graph_add_op(g, &ad, y, 1, NULL), SK_STATUS_INVALID_SHAPE, "run-time token count");
  sk_graph_destroy(g);
}

static void setup(void) {
  for (int n = 2; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
}

TEST_MAIN(TEST_CASE(setup), TEST_CASE(test_embedding_out_of_range_ids), TEST_CASE(test_rotary_out_of_range_positions),
          TEST_CASE(test_softmax_edge_rows), TEST_CASE(test_argmax_ties_nans_zeros),
          TEST_CASE(test_rope_frequencies_by_hand), TEST_CASE(test_rope_rotation_by_hand), TEST_CASE(test_build_errors))

/* split and sigmoid: what the case table cannot say. sigmoid's edges (NaN
 * to the canonical NaN, the infinities, signed zeros, where it saturates to
 * 1 and underflows to 0) and every fp16 / bf16 input pattern, on every
 * executor and team size (the ISA paths through the ISA_VARIANTS
 * registration); split's block footprint, each block's write spans exact
 * and the blocks' spans a partition of every output, also under a
 * run-time token count; every hand-written build error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_builders.h"
#include "kernels/activation/activation.h"
#include "ops/build_ctx.h"
#include "ops/op_util.h"

static sk_team *teams[4]; /* teams[n]: n cores, n = 1..3 */

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* A graph y = sigmoid(x), x [n] of dtype dt, in a scope (a super kernel
 * for the interpreter and the JIT). */
static sk_graph *sigmoid_graph(sk_dtype dt, int64_t n) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", dt, 1, (int64_t[]){n});
  CHECK_OK(sk_graph_begin_scope(g, "sk", NULL));
  sk_value y = unary(g, "sigmoid", "sig", x);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  return g;
}

/* Runs g on x (its one input) with the eager, interpreted and JIT executors
 * on 1-3 cores and the reference on one: every run's y bitwise the first
 * run's, which stays in y. */
static void run_each_executor(const sk_graph *g, const void *x, size_t x_bytes, void *y, size_t y_bytes) {
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT, SK_EXECUTOR_REFERENCE};
  unsigned char *first = malloc(y_bytes);
  bool have_first = false;
  for (size_t e = 0; e < sizeof executors / sizeof executors[0]; e++)
    for (int cores = 1; cores <= (executors[e] == SK_EXECUTOR_REFERENCE ? 1 : 3); cores++) {
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[cores], .executor = executors[e]};
      sk_program *p = NULL;
      CHECK_OK(sk_compile(g, &cfg, &p));
      sk_buffer in[] = {{"x", (void *)x, x_bytes}}, out[] = {{"y", y, y_bytes}};
      memset(y, 0xA5, y_bytes);
      CHECK_OK(sk_program_run(p, teams[cores], in, 1, out, 1));
      if (!have_first) memcpy(first, y, y_bytes), have_first = true;
      CHECK_MSG(memcmp(first, y, y_bytes) == 0, "executor %d on %d cores differs from the first run", (int)executors[e],
                cores);
      sk_program_destroy(p);
    }
  memcpy(y, first, y_bytes);
  free(first);
}

static void test_sigmoid_edges(void) {
  float nan_payload, neg_nan;
  uint32_t u = 0x7FA12345u; /* a signalling NaN with a payload */
  memcpy(&nan_payload, &u, sizeof u);
  u = 0xFFC00001u;
  memcpy(&neg_nan, &u, sizeof u);
  const float x[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, nan_payload, neg_nan,
                     0x1.154246p+4f, 0x1.154244p+4f, /* the first x giving 1, the one before it */
                     -0x1.9fe368p+6f, -0x1.9fe36ap+6f, /* the last x above +0 (the smallest subnormal), the first 0 */
                     -88.0f, -100.0f, 3.4e38f, -3.4e38f, 1e-30f, -1e-30f, 0x1p-149f};
  enum { N = sizeof x / sizeof x[0] };
  float y[N];
  sk_graph *g = sigmoid_graph(SK_FP32, N);
  run_each_executor(g, x, sizeof x, y, sizeof y);
  for (int i = 0; i < N; i++) {
    uint32_t want = x[i] != x[i] ? 0x7FC00000u : f32_bits(sk__sigmoidf(x[i]));
    CHECK_MSG(f32_bits(y[i]) == want, "x[%d] = %a: %08x, expected %08x", i, (double)x[i], f32_bits(y[i]), want);
  }
  CHECK(f32_bits(y[0]) == 0x3F000000u && f32_bits(y[1]) == 0x3F000000u); /* +-0: 0.5 */
  CHECK(y[4] == 1.0f && f32_bits(y[5]) == 0);                            /* +inf: 1, -inf: +0 */
  CHECK(y[9] == 1.0f && y[10] < 1.0f);
  CHECK(f32_bits(y[11]) == 1 && f32_bits(y[12]) == 0);
  CHECK(y[13] > 0.0f && y[13] < 0x1p-126f); /* subnormal */
  CHECK(y[15] == 1.0f && f32_bits(y[16]) == 0 && y[17] == 0.5f && y[18] == 0.5f && y[19] == 0.5f);
  sk_graph_destroy(g);
}

/* Every fp16 and bf16 pattern: y = sigmoid of the value widened, rounded
 * once; NaNs the canonical NaN of the dtype. */
static void test_sigmoid_every_half_pattern(void) {
  enum { N = 65536 };
  uint16_t *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (int half = 0; half < 2; half++) {
    const sk_dtype dt = half ? SK_BF16 : SK_FP16;
    for (int i = 0; i < N; i++) x[i] = (uint16_t)i;
    sk_graph *g = sigmoid_graph(dt, N);
    run_each_executor(g, x, N * sizeof *x, y, N * sizeof *y);
    int bad = 0;
    for (int i = 0; i < N; i++) {
      float v = dt == SK_FP16 ? sk_fp16_to_fp32(x[i]) : sk_bf16_to_fp32(x[i]);
      float s = sk__sigmoidf(v);
      uint16_t want = v != v ? (dt == SK_FP16 ? 0x7E00 : 0x7FC0) : dt == SK_FP16 ? sk_fp32_to_fp16(s) : sk_fp32_to_bf16(s);
      if (y[i] != want && bad++ < 5) CHECK_MSG(false, "%s %04x: %04x, expected %04x", sk_dtype_name(dt), i, y[i], want);
    }
    CHECK_MSG(bad == 0, "%s: %d patterns differ", sk_dtype_name(dt), bad);
    sk_graph_destroy(g);
  }
  free(x);
  free(y);
}

/* ---- split's blocks --------------------------------------------------------- */

/* split's node built on x through the op's own build (the checks and output
 * shapes sk_graph_add_op uses), for calling its tile, footprint and
 * run_block directly. */
typedef struct split_node {
  sk__build_ctx ctx;
  sk__tensor x;
  sk__node_io io;
} split_node;

static void split_node_build(split_node *s, sk_dtype dt, int rank, const int64_t *shape, int64_t dim,
                             const int64_t *sizes, size_t n) {
  memset(s, 0, sizeof *s);
  static sk_value unused;
  static sk_op_input in;
  static sk_attr attrs[2];
  static sk_op_desc desc;
  in = (sk_op_input){"x", &unused, 1};
  attrs[0] = SK_ATTR_INTS("sizes", sizes, n);
  attrs[1] = SK_ATTR_INT("dim", dim);
  desc = (sk_op_desc){.op = "split", .inputs = &in, .n_inputs = 1, .attrs = attrs, .n_attrs = 2};
  sk__tensor_init(&s->x, dt, rank, shape);
  s->ctx = (sk__build_ctx){.def = sk__op_find("split"), .label = "split", .desc = &desc};
  CHECK_OK(sk__build_check_desc(&s->ctx));
  s->ctx.slots[0] = (sk__slot){&s->x, 1};
  CHECK_OK(sk__build_node(&s->ctx));
  s->io = (sk__node_io){.out = s->ctx.outs, .n_out = s->ctx.n_outs, .params = s->ctx.params};
  s->io.in[0] = s->ctx.slots[0];
}

static void split_node_free(split_node *s) {
  free(s->ctx.params);
  sk__build_ctx_free(&s->ctx);
}

/* Runs every block of the node alone on outputs set to 0 (x's bytes are
 * never 0): a block must write exactly the bytes of its write spans, the
 * blocks' spans must tile each output in order, and the bytes must be the
 * reference's. With tokens < planned (x dynamic), a block writes only live
 * bytes, within its planned spans. */
static void check_split_blocks(split_node *s, int64_t n_blocks, int64_t tokens, int64_t planned) {
  sk__node_io *io = &s->io;
  const sk__tensor *x = &s->x;
  const size_t x_bytes = sk__tensor_bytes(x), n_out = io->n_out;
  unsigned char *xd = malloc(x_bytes + 1);
  for (size_t b = 0; b < x_bytes; b++) xd[b] = (unsigned char)(b % 251 + 1);
  s->x.data = xd;
  io->n_blocks = n_blocks, io->tokens = tokens, io->planned_tokens = planned;
  unsigned char **got = calloc(n_out, sizeof *got), **want = calloc(n_out, sizeof *want);
  int64_t *next = calloc(n_out, sizeof *next);
  sk__tensor *ref_out = calloc(n_out, sizeof *ref_out);
  for (size_t i = 0; i < n_out; i++) {
    size_t bytes = sk__tensor_bytes(&io->out[i]);
    got[i] = calloc(bytes + 1, 1), want[i] = calloc(bytes + 1, 1);
    ref_out[i] = io->out[i], ref_out[i].data = want[i];
  }
  sk__node_io ref = *io;
  ref.out = ref_out;
  s->ctx.def->reference(&ref);
  sk__span reads[1], *writes = calloc(n_out, sizeof *writes);
  for (int64_t b = 0; b < n_blocks; b++) {
    for (size_t i = 0; i < n_out; i++) {
      memset(got[i], 0, sk__tensor_bytes(&io->out[i]));
      io->out[i].data = got[i];
      writes[i] = (sk__span){0, (int64_t)sk__tensor_bytes(&io->out[i])};
    }
    reads[0] = (sk__span){0, (int64_t)x_bytes};
    s->ctx.def->footprint(io, b, reads, writes);
    s->ctx.def->run_block(io, b, NULL);
    for (size_t i = 0; i < n_out; i++) {
      const int64_t bytes = (int64_t)sk__tensor_bytes(&io->out[i]);
      const int64_t live = sk__live_numel(io, &io->out[i]) * (int64_t)sk_dtype_size(io->out[i].dtype);
      CHECK_MSG(writes[i].begin == next[i] && writes[i].end >= writes[i].begin && writes[i].end <= bytes,
                "block %lld output %zu: span [%lld, %lld) after %lld", (long long)b, i, (long long)writes[i].begin,
                (long long)writes[i].end, (long long)next[i]);
      next[i] = writes[i].end;
      for (int64_t k = 0; k < bytes; k++) {
        bool should = k >= writes[i].begin && k < writes[i].end && k < live;
        if ((got[i][k] != 0) != should || (should && got[i][k] != want[i][k])) {
          CHECK_MSG(false, "block %lld of %lld, output %zu byte %lld: %s", (long long)b, (long long)n_blocks, i,
                    (long long)k, should ? "unwritten, or not the reference's" : "written outside its span or live rows");
          break;
        }
      }
    }
  }
  for (size_t i = 0; i < n_out; i++) {
    CHECK_MSG(next[i] == (int64_t)sk__tensor_bytes(&io->out[i]), "output %zu: spans end at %lld", i, (long long)next[i]);
    io->out[i].data = NULL;
    free(got[i]), free(want[i]);
  }
  s->x.data = NULL;
  free(writes), free(ref_out), free(next), free(got), free(want), free(xd);
}

static void test_split_block_footprints(void) {
  static const struct {
    sk_dtype dt;
    int rank;
    int64_t shape[3], dim;
    size_t n;
    int64_t sizes[4];
  } cases[] = {
      {SK_FP16, 2, {3, 30000}, -1, 3, {10000, 19999, 1}}, /* blocks across rows and parts */
      {SK_FP32, 2, {20000, 3}, 0, 2, {7001, 12999}},     /* one row: blocks across parts */
      {SK_INT8, 3, {5, 7, 3}, 1, 4, {1, 2, 3, 1}},
      {SK_BF16, 2, {4, 576}, -1, 2, {512, 64}},
      {SK_BOOL, 1, {9}, 0, 3, {4, 4, 1}},
      {SK_INT64, 3, {2, 3, 0}, 1, 2, {1, 2}}, /* no bytes */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    split_node s;
    split_node_build(&s, cases[c].dt, cases[c].rank, cases[c].shape, cases[c].dim, cases[c].sizes, cases[c].n);
    for (int cores = 1; cores <= 3; cores++) { /* the op's own tiling */
      sk__tiling t;
      CHECK_OK(s.ctx.def->tile(&s.io, cores, &t));
      CHECK_MSG(t.n_blocks == 0 || t.n_blocks >= (sk__tensor_bytes(&s.x) >= (size_t)cores * 65536 ? cores : 1),
                "case %zu: %lld blocks for %d cores", c, (long long)t.n_blocks, cores);
      if (t.n_blocks) check_split_blocks(&s, t.n_blocks, 0, 0);
    }
    for (int64_t nb = 1; sk__tensor_bytes(&s.x) && nb <= 7; nb++) check_split_blocks(&s, nb, 0, 0); /* small blocks */
    split_node_free(&s);
  }
  /* a run-time token count: x [8 (planned), 3, 10] split along dim 2, 3 of 8 tokens live */
  split_node s;
  split_node_build(&s, SK_FP32, 3, (int64_t[]){8, 3, 10}, 2, (int64_t[]){4, 6}, 2);
  s.x.dynamic = true;
  for (size_t i = 0; i < s.io.n_out; i++) s.io.out[i].dynamic = true;
  for (int64_t nb = 1; nb <= 9; nb++) check_split_blocks(&s, nb, 3, 8);
  split_node_free(&s);
}

/* ---- build errors ------------------------------------------------------------ */

static sk_status add_split(sk_graph *g, sk_value x, const int64_t *sizes, size_t n, int64_t dim, bool give_sizes) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr at[] = {SK_ATTR_INT("dim", dim), SK_ATTR_INTS("sizes", sizes, n)};
  sk_op_desc d = {.op = "split", .inputs = in, .n_inputs = 1, .attrs = at, .n_attrs = give_sizes ? 2 : 1};
  sk_value outs[2048];
  return sk_graph_add_op(g, &d, outs, 2048, NULL);
}

static void test_split_build_errors(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP16, 2, (int64_t[]){4, 10});
  CHECK_FAILS(add_split(g, x, NULL, 0, -1, false), SK_STATUS_INVALID_ATTRIBUTE, "split", "sizes", "required");
  CHECK_FAILS(add_split(g, x, (int64_t[]){3, 7}, 2, 2, true), SK_STATUS_INVALID_ATTRIBUTE, "split", "dim", "-2..1",
              "got 2");
  CHECK_FAILS(add_split(g, x, (int64_t[]){3, 7}, 2, -3, true), SK_STATUS_INVALID_ATTRIBUTE, "dim", "got -3");
  CHECK_FAILS(add_split(g, x, (int64_t[]){3, 6}, 2, -1, true), SK_STATUS_INVALID_ATTRIBUTE, "attribute sizes",
              "2 sizes summing to 9", "length 10 of dimension 1", "[4, 10]");
  CHECK_FAILS(add_split(g, x, (int64_t[]){3, 8}, 2, -1, true), SK_STATUS_INVALID_ATTRIBUTE, "summing to more than 10");
  CHECK_FAILS(add_split(g, x, (int64_t[]){INT64_MAX, INT64_MAX, 1}, 3, -1, true), SK_STATUS_INVALID_ATTRIBUTE,
              "summing to more than 10");
  CHECK_FAILS(add_split(g, x, (int64_t[]){3, 0, 7}, 3, -1, true), SK_STATUS_INVALID_ATTRIBUTE, "sizes[1]", ">= 1",
              "got 0");
  CHECK_FAILS(add_split(g, x, (int64_t[]){-2, 12}, 2, -1, true), SK_STATUS_INVALID_ATTRIBUTE, "sizes[0]", "got -2");
  CHECK_FAILS(add_split(g, x, (int64_t[]){4}, 0, 0, true), SK_STATUS_INVALID_ATTRIBUTE, "sizes", "1 to 1024",
              "got 0");
  int64_t *ones = malloc(1025 * sizeof *ones);
  for (int i = 0; i < 1025; i++) ones[i] = 1;
  sk_value wide = input(g, "wide", SK_INT8, 1, (int64_t[]){1025});
  CHECK_FAILS(add_split(g, wide, ones, 1025, 0, true), SK_STATUS_INVALID_ATTRIBUTE, "1 to 1024", "got 1025");
  sk_value wide1024 = input(g, "wide1024", SK_INT8, 1, (int64_t[]){1024});
  CHECK_OK(add_split(g, wide1024, ones, 1024, 0, true)); /* 1024 parts: the limit */
  free(ones);
  sk_graph_destroy(g);
  /* the token count: dimension 0 of a dynamic x cannot be split by fixed sizes */
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_set_max_tokens(g, 8));
  sk_value d2 = input(g, "x", SK_BF16, 2, (int64_t[]){SK_DIM_DYNAMIC, 6}), d1 = input(g, "t", SK_FP32, 1, (int64_t[]){SK_DIM_DYNAMIC});
  CHECK_FAILS(add_split(g, d2, (int64_t[]){4, 4}, 2, 0, true), SK_STATUS_INVALID_SHAPE, "split", "input x",
              "dimension 0 is the run-time token count");
  CHECK_FAILS(add_split(g, d1, (int64_t[]){8}, 1, -1, true), SK_STATUS_INVALID_SHAPE, "run-time token count");
  CHECK_OK(add_split(g, d2, (int64_t[]){2, 4}, 2, -1, true)); /* a later dimension follows the count */
  sk_value outs[2];
  sk_op_input in[] = {{"x", &d2, 1}};
  sk_attr at[] = {SK_ATTR_INTS("sizes", ((const int64_t[]){5, 1}), 2), SK_ATTR_INT("dim", 1)};
  op(g, "split", "parts", in, 1, at, 2, outs, 2);
  int64_t shape[SK_MAX_RANK];
  int rank;
  CHECK_OK(sk_graph_value_info(g, outs[1], NULL, &rank, shape));
  CHECK(rank == 2 && shape[0] == SK_DIM_TOKENS(1) && shape[1] == 1);
  sk_graph_destroy(g);
}

static void setup(void) {
  for (int n = 1; n <= 3; n++) {
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = n, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &teams[n]));
  }
}

static void teardown(void) {
  for (int n = 1; n <= 3; n++) sk_team_destroy(teams[n]);
}

TEST_MAIN(TEST_CASE(setup), TEST_CASE(test_sigmoid_edges), TEST_CASE(test_sigmoid_every_half_pattern),
          TEST_CASE(test_split_block_footprints), TEST_CASE(test_split_build_errors), TEST_CASE(teardown))

/* dequant_swiglu_quant: the kernel against the reference, bitwise, over every
 * dtype, optional-input shape, quant mode and group layout, on teams of 1, 2
 * and 3 cores; hand-computed rows for every branch of the maths; and every
 * rejection path. Registered once per ISA path. */
#include <math.h>

#include "harness.h"
#include "reference_runner.h"

static sk_team *teams[3];

enum { WS_NONE, WS_VEC, WS_ROW, WS_GROUPS };                 /* [2H], [1, 2H], [G, 2H] */
enum { AS_NONE, AS_VEC, AS_COL };                            /* [T], [T, 1] */
enum { QS_NONE, QS_VEC, QS_ROW, QS_GROUPS, QS_ONE };         /* [H], [1, H], [G, H], [1] */
#define NO_BIAS SK_DTYPE_INVALID

typedef struct dsq_case {
  sk_dtype x;
  int64_t t, h;
  int ws, as;
  sk_dtype bias; /* NO_BIAS, int32 or a float dtype */
  int qs;
  sk_dtype qs_dt; /* 0 = fp32 */
  bool qo;
  int left, mode;
  int64_t groups; /* 0 = no group_index */
  const int64_t *counts;
} dsq_case;

static sk_graph *build_case(const dsq_case *c) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value v[7];
  sk_op_input in[7];
  size_t n = 0;
  int64_t t = c->t, h = c->h, w = 2 * c->h, gr = c->groups;
  sk_dtype qdt = c->qs_dt ? c->qs_dt : SK_FP32;
#define ADD(name, dt, rank, ...)                                                   \
  do {                                                                             \
    CHECK_OK(sk_graph_add_input(g, name, dt, rank, (int64_t[]){__VA_ARGS__}, &v[n])); \
    in[n] = (sk_op_input){name, &v[n], 1};                                         \
    n++;                                                                           \
  } while (0)
  ADD("x", c->x, 2, t, w);
  if (c->ws == WS_VEC) ADD("weight_scale", SK_FP32, 1, w);
  if (c->ws == WS_ROW) ADD("weight_scale", SK_FP32, 2, 1, w);
  if (c->ws == WS_GROUPS) ADD("weight_scale", SK_FP32, 2, gr, w);
  if (c->as == AS_VEC) ADD("activation_scale", SK_FP32, 1, t);
  if (c->as == AS_COL) ADD("activation_scale", SK_FP32, 2, t, 1);
  if (c->bias != NO_BIAS) ADD("bias", c->bias, 1, w);
  if (c->qs == QS_VEC) ADD("quant_scale", qdt, 1, h);
  if (c->qs == QS_ROW) ADD("quant_scale", qdt, 2, 1, h);
  if (c->qs == QS_GROUPS) ADD("quant_scale", qdt, 2, gr, h);
  if (c->qs == QS_ONE) ADD("quant_scale", qdt, 1, 1);
  if (c->qo) ADD("quant_offset", qdt, 1, 1);
  if (gr) ADD("group_index", SK_INT64, 1, gr);
#undef ADD
  sk_attr at[] = {SK_ATTR_INT("activate_left", c->left), SK_ATTR_INT("quant_mode", c->mode)};
  sk_op_desc d = {.op = "dequant_swiglu_quant", .inputs = in, .n_inputs = n, .attrs = at, .n_attrs = 2};
  sk_value outs[2] = {SK_VALUE_NONE, SK_VALUE_NONE};
  size_t got = 0;
  CHECK_OK(sk_graph_add_op(g, &d, outs, 2, &got));
  CHECK(got == 2);
  CHECK_OK(sk_graph_mark_output(g, outs[0], "y"));
  CHECK_OK(sk_graph_mark_output(g, outs[1], "scale"));
  return g;
}

static sk_buffer *find(rr_buffers *b, const char *name, bool output) {
  sk_buffer *list = output ? b->outputs : b->inputs;
  size_t n = output ? b->n_outputs : b->n_inputs;
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i].name, name) == 0) return &list[i];
  return NULL;
}

static void fill(rr_buffers *b, const char *name, sk_dtype dt, double lo, double hi, uint64_t *rng) {
  sk_buffer *buf = find(b, name, false);
  if (buf) rr_fill(buf->data, dt, buf->bytes / sk_dtype_size(dt), lo, hi, rng);
}

/* Inputs in ranges that exercise the maths: outputs spread over int8 (the
 * static scale makes some saturate), a zero x row (a zero output row when
 * no bias), scales of both signs. */
static void fill_case(const dsq_case *c, rr_buffers *b, uint64_t seed) {
  uint64_t rng = seed;
  bool ix = c->x == SK_INT32;
  sk_dtype qdt = c->qs_dt ? c->qs_dt : SK_FP32;
  fill(b, "x", c->x, ix ? -500 : -6, ix ? 500 : 6, &rng);
  if (c->t > 3) memset((char *)find(b, "x", false)->data + 3 * 2 * c->h * sk_dtype_size(c->x), 0, 2 * c->h * sk_dtype_size(c->x));
  fill(b, "weight_scale", SK_FP32, -0.02, 0.02, &rng);
  fill(b, "activation_scale", SK_FP32, 0.25, 2, &rng);
  fill(b, "bias", c->bias, c->bias == SK_INT32 ? -100 : -1, c->bias == SK_INT32 ? 100 : 1, &rng);
  fill(b, "quant_scale", qdt, c->mode ? 0.5 : 0.005, c->mode ? 2 : 0.05, &rng);
  fill(b, "quant_offset", qdt, -5, 5, &rng);
  sk_buffer *gi = find(b, "group_index", false);
  if (gi) memcpy(gi->data, c->counts, gi->bytes);
}

static void check_case(const dsq_case *c, uint64_t seed) {
  sk_graph *g = build_case(c);
  for (int t = 0; t < 3; t++) {
    sk_program *p = NULL;
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t]};
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) break;
    rr_buffers b;
    CHECK(rr_alloc(p, &b, -1, 1, seed));
    fill_case(c, &b, seed);
    CHECK_MSG(rr_check_program(p, teams[t], &b) == 0, "team of %d, x %s [%lld, %lld], ws %d as %d bias %s qs %d qo %d left %d mode %d groups %lld",
              t + 1, sk_dtype_name(c->x), (long long)c->t, (long long)(2 * c->h), c->ws, c->as, sk_dtype_name(c->bias),
              c->qs, c->qo, c->left, c->mode, (long long)c->groups);
    rr_free(&b);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

static const int64_t ts[] = {1, 7, 48, 65, 257}, hs[] = {1, 7, 64, 65};
static const sk_dtype x_dtypes[] = {SK_INT32, SK_FP32, SK_FP16, SK_BF16};
static const sk_dtype float_dtypes[] = {SK_FP32, SK_FP16, SK_BF16};
static const sk_dtype biases[] = {NO_BIAS, SK_INT32, SK_FP32, SK_FP16, SK_BF16};

/* Every x dtype and size, the options cycling with the case number. */
static void test_dtypes_and_sizes(void) {
  int k = 0;
  for (size_t d = 0; d < 4; d++)
    for (size_t ti = 0; ti < 5; ti++)
      for (size_t hi = 0; hi < 4; hi++, k++) {
        bool ix = x_dtypes[d] == SK_INT32;
        int mode = (k / 2) % 2;
        dsq_case c = {.x = x_dtypes[d], .t = ts[ti], .h = hs[hi], .ws = ix ? k % 3 : WS_NONE,
                      .as = ix ? (k / 3) % 3 : AS_NONE, .bias = ix ? biases[k % 5] : NO_BIAS,
                      .qs = mode ? k % 3 : QS_ONE, .qs_dt = float_dtypes[k % 3], .qo = !mode && k % 3 != 0,
                      .left = k % 2, .mode = mode};
        check_case(&c, (uint64_t)k);
      }
  dsq_case empty = {.x = SK_INT32, .t = 0, .h = 5, .ws = WS_VEC, .as = AS_VEC, .qs = QS_VEC, .mode = 1}; /* T = 0 */
  check_case(&empty, 1);
}

/* int32 x: every weight_scale / activation_scale shape with every bias
 * dtype, both activation sides. */
static void test_dequant_inputs(void) {
  int k = 0;
  for (int ws = WS_NONE; ws <= WS_ROW; ws++)
    for (int as = AS_NONE; as <= AS_COL; as++)
      for (size_t bi = 0; bi < 5; bi++)
        for (int left = 0; left < 2; left++, k++) {
          dsq_case c = {.x = SK_INT32, .t = k % 2 ? 65 : 7, .h = k % 2 ? 7 : 64, .ws = ws, .as = as,
                        .bias = biases[bi], .qs = QS_ROW, .left = left, .mode = 1};
          check_case(&c, 100 + (uint64_t)k);
        }
}

/* Dynamic with each quant_scale shape and dtype, static with and without
 * quant_offset, on int32 and fp16 x. */
static void test_quant_modes(void) {
  int k = 0;
  for (int xi = 0; xi < 2; xi++)
    for (size_t q = 0; q < 3; q++)
      for (int left = 0; left < 2; left++) {
        sk_dtype x = xi ? SK_FP16 : SK_INT32;
        for (int qs = QS_NONE; qs <= QS_ROW; qs++, k++) {
          dsq_case c = {.x = x, .t = 65, .h = 65, .ws = xi ? 0 : WS_VEC, .as = xi ? 0 : AS_COL, .qs = qs,
                        .qs_dt = float_dtypes[q], .left = left, .mode = 1};
          check_case(&c, 200 + (uint64_t)k);
        }
        for (int qo = 0; qo < 2; qo++, k++) {
          dsq_case c = {.x = x, .t = 48, .h = 64, .ws = xi ? 0 : WS_VEC, .as = xi ? 0 : AS_VEC, .qs = QS_ONE,
                        .qs_dt = float_dtypes[q], .qo = qo, .left = left, .mode = 0};
          check_case(&c, 300 + (uint64_t)k);
        }
      }
}

/* Groups: per-group and shared scales, empty groups, rows past the total,
 * and the run-time clamps (a negative count, a total past T). */
static void test_groups(void) {
  int k = 0;
  for (size_t ti = 0; ti < 5; ti++)
    for (int layout = 0; layout < 4; layout++)
      for (int variant = 0; variant < 3; variant++, k++) {
        int64_t t = ts[ti], counts[4];
        int64_t n = layout == 0 ? 1 : layout == 1 ? 3 : layout == 2 ? 4 : 2;
        if (layout == 0) counts[0] = t;
        if (layout == 1) counts[0] = t / 3, counts[1] = 0, counts[2] = t / 3; /* rows past the total */
        if (layout == 2) counts[0] = 1, counts[1] = t, counts[2] = 0, counts[3] = 5; /* total past T */
        if (layout == 3) counts[0] = -2, counts[1] = t / 2;                       /* negative count */
        bool ix = variant != 1;
        dsq_case c = {.x = ix ? SK_INT32 : SK_BF16, .t = t, .h = variant == 2 ? 7 : 64,
                      .ws = ix ? (variant ? WS_VEC : WS_GROUPS) : WS_NONE, .as = ix ? AS_COL : AS_NONE,
                      .bias = variant == 2 ? SK_FP32 : NO_BIAS, .qs = variant == 0 ? QS_ROW : QS_GROUPS,
                      .qs_dt = float_dtypes[k % 3], .left = k % 2, .mode = 1, .groups = n, .counts = counts};
        check_case(&c, 400 + (uint64_t)k);
      }
}

/* The seed's use: x [48, 128] int32, weight_scale [128], activation_scale
 * [48, 1], quant_scale [1, 64], activate_left 0, dynamic. */
static void test_seed(void) {
  dsq_case c = {.x = SK_INT32, .t = 48, .h = 64, .ws = WS_VEC, .as = AS_COL, .qs = QS_ROW, .left = 0, .mode = 1};
  check_case(&c, 7);
}

/* ---- hand-computed rows ----
 * silu is exact at a few points: silu(a) = a for a >= 32 (1 + e^-a rounds
 * to 1), silu(0) = 0, silu(a) = -0 for a <= -100 (e^100 overflows). So an
 * activated half of 64s makes o = 64 * other half exactly. */

typedef struct hand_input {
  const char *name;
  const void *data;
} hand_input;

static void run_hand(const dsq_case *c, const hand_input *ins, size_t n, const int8_t *y, const float *scale) {
  sk_graph *g = build_case(c);
  for (int t = 0; t < 3; t += 2) {
    sk_program *p = NULL;
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t]};
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) break;
    rr_buffers b;
    CHECK(rr_alloc(p, &b, -1, 1, 1));
    for (size_t i = 0; i < n; i++) {
      sk_buffer *buf = find(&b, ins[i].name, false);
      CHECK(buf != NULL);
      if (buf) memcpy(buf->data, ins[i].data, buf->bytes);
    }
    CHECK(rr_check_program(p, teams[t], &b) == 0);
    const int8_t *gy = find(&b, "y", true)->data;
    const float *gs = find(&b, "scale", true)->data;
    for (int64_t i = 0; i < c->t * c->h; i++) CHECK_MSG(gy[i] == y[i], "y[%lld] = %d, want %d", (long long)i, gy[i], y[i]);
    for (int64_t r = 0; r < c->t; r++)
      CHECK_MSG(memcmp(&gs[r], &scale[r], 4) == 0, "scale[%lld] = %.9g, want %.9g", (long long)r, gs[r], scale[r]);
    rr_free(&b);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

/* Dynamic, 16 columns (the SIMD body of the kernel): m = 127 makes s = 1,
 * so row 0 gives y = rint(o) with ties to even (2.5 -> 2, 3.5 -> 4, -2.5 ->
 * -2, 0.5 -> 0, ...). Row 1 is all zero: y = 0, scale = 0. Row 2 activates
 * -100 (silu = -0): zero again. Row 3 has s = 7/64 and o / s exactly 6.5,
 * 12.5, ..., where a multiply by the rounded 1 / s would give 6.5000005
 * (rounding up). Row 4 is row 0 with two NaNs: ignored by the max, y = 0. */
static void test_hand_dynamic(void) {
  for (int left = 0; left < 2; left++) {
    dsq_case c = {.x = SK_FP32, .t = 5, .h = 16, .left = left, .mode = 1};
    static const float o[3][16] = {
        {127, 2.5f, 3.5f, -2.5f, 0.5f, 1.5f, -0.5f, -127, 4.5f, -4.5f, 126.5f, -126.5f, 0, -0.0f, 5.5f, -1.5f},
        {13.890625f, 0.7109375f, 1.3671875f, 1.5859375f, 2.4609375f, -0.7109375f, 0, -13.890625f, -1.3671875f,
         -1.5859375f, -2.4609375f, 2.6796875f},
        {127, NAN, 3.5f, -2.5f, 0.5f, NAN, -0.5f, -127, 4.5f, -4.5f, 126.5f, -126.5f, 0, -0.0f, 5.5f, -1.5f}};
    float x[5][32] = {{0}};
    for (int i = 0; i < 16; i++) {
      for (int r = 0; r < 3; r++) {
        int row = r == 0 ? 0 : r + 2;
        x[row][left ? i : 16 + i] = 64; /* the activated half */
        x[row][left ? 16 + i : i] = o[r][i] / 64;
      }
      x[2][left ? i : 16 + i] = -100;
      x[2][left ? 16 + i : i] = 1;
    }
    static const int8_t y[80] = {127, 2, 4, -2, 0, 2, 0, -127, 4, -4, 126, -126, 0, 0, 6, -2,
                                 [48] = 127, 6, 12, 14, 22, -6, 0, -127, -12, -14, -22, 24, 0, 0, 0, 0,
                                 127, 0, 4, -2, 0, 0, 0, -127, 4, -4, 126, -126, 0, 0, 6, -2};
    static const float scale[5] = {1, 0, 0, 0.109375f, 1};
    run_hand(&c, (hand_input[]){{"x", x}}, 1, y, scale);
  }
  /* quant_scale per column: o = 64 * qs[c]. */
  dsq_case c = {.x = SK_FP32, .t = 1, .h = 4, .qs = QS_VEC, .mode = 1};
  static const float x[8] = {1, 1, 1, 1, 64, 64, 64, 64}, qs[4] = {127.0f / 64, 2.5f / 64, 3.5f / 64, -0.5f / 64};
  static const int8_t y[4] = {127, 2, 4, 0};
  run_hand(&c, (hand_input[]){{"x", x}, {"quant_scale", qs}}, 2, y, (const float[]){1});
}

/* Static, 16 columns: y = clip(rint(o / qs + qo)) saturating at 127 and
 * -128, ties to even, NaN -> 0; the scale output is quant_scale. */
static void test_hand_static(void) {
  for (int with_offset = 0; with_offset < 2; with_offset++) {
    dsq_case c = {.x = SK_FP32, .t = 1, .h = 16, .qs = QS_ONE, .qo = with_offset, .mode = 0};
    static const float o[16] = {400, -400, 255, -257, 5, -7, 6, 1, 253, -253, 9, -9, 1e6f, -1e6f, NAN, 0};
    float x[32];
    for (int i = 0; i < 16; i++) x[i] = o[i] / 64, x[16 + i] = 64;
    /* qs = 2: o / qs = {200, -200, 127.5, -128.5, 2.5, -3.5, 3, 0.5, 126.5, -126.5, 4.5, -4.5, ...} */
    static const int8_t plain[16] = {127, -128, 127, -128, 2, -4, 3, 0, 126, -126, 4, -4, 127, -128, 0, 0};
    /* qo = 0.5: {.., 128, -128, 3, -3, 3.5, 1, 127, -126, 5, -4, .., 0.5} */
    static const int8_t offset[16] = {127, -128, 127, -128, 3, -3, 4, 1, 127, -126, 5, -4, 127, -128, 0, 0};
    const float qs = 2, qo = 0.5f;
    run_hand(&c, (hand_input[]){{"x", x}, {"quant_scale", &qs}, {"quant_offset", &qo}}, 2 + (size_t)with_offset,
             with_offset ? offset : plain, &qs);
  }
}

/* int32 x: an int32 bias is added before the scales, a float bias after.
 * x = {10, -10 | 256, 256}, weight_scale 0.25, bias {6, 6, 0, 0},
 * activation_scale {1, 0.5}, static qs = 8:
 *   int32 bias: row 0 L = {4, -1}, R = 64 -> o = {256, -64} -> y = {32, -8}
 *               row 1 L = {2, -0.5}, R = 32 -> o = {64, -16} -> y = {8, -2}
 *   fp32 bias:  row 0 L = {8.5, 3.5} -> o = {544, 224} -> y = {68, 28}
 *               row 1 L = {7.25, 4.75}, R = 32 -> o = {232, 152} -> y = {29, 19} */
static void test_hand_bias_order(void) {
  static const int32_t x[8] = {10, -10, 256, 256, 10, -10, 256, 256}, ib[4] = {6, 6, 0, 0};
  static const float ws[4] = {0.25f, 0.25f, 0.25f, 0.25f}, as[2] = {1, 0.5f}, fb[4] = {6, 6, 0, 0}, qs = 8;
  for (int fbias = 0; fbias < 2; fbias++) {
    dsq_case c = {.x = SK_INT32, .t = 2, .h = 2, .ws = WS_VEC, .as = AS_VEC, .bias = fbias ? SK_FP32 : SK_INT32,
                  .qs = QS_ONE, .mode = 0};
    static const int8_t y_int[4] = {32, -8, 8, -2}, y_float[4] = {68, 28, 29, 19};
    hand_input in[] = {{"x", x}, {"weight_scale", ws}, {"activation_scale", as}, {"bias", fbias ? (const void *)fb : ib},
                       {"quant_scale", &qs}};
    run_hand(&c, in, 5, fbias ? y_float : y_int, (const float[]){8, 8});
  }
}

/* Groups: counts {2, 1} over 5 rows; weight_scale row g per group; rows 3
 * and 4 past the total. x row {127, 2 | 64, 64}:
 *   group 0 (ws 1):   L = {127, 2}, R = 64 -> o = {8128, 128}, s = 64
 *   group 1 (ws 0.5): L = {63.5, 1}, R = 32 -> o = {2032, 32}, s = 16
 * Then the clamps: counts {-3, 2, 100} put rows 0-1 in group 1, 2-4 in 2. */
static void test_hand_groups(void) {
  static const int32_t x[20] = {127, 2, 64, 64, 127, 2, 64, 64, 127, 2, 64, 64, 127, 2, 64, 64, 127, 2, 64, 64};
  static const float ws2[8] = {1, 1, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f}, ws3[12] = {9, 9, 9, 9, 1, 1, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f};
  static const int64_t counts2[2] = {2, 1}, counts3[3] = {-3, 2, 100};
  dsq_case c = {.x = SK_INT32, .t = 5, .h = 2, .ws = WS_GROUPS, .mode = 1, .groups = 2, .counts = counts2};
  static const int8_t y2[10] = {127, 2, 127, 2, 127, 2, 0, 0, 0, 0}, y3[10] = {127, 2, 127, 2, 127, 2, 127, 2, 127, 2};
  run_hand(&c, (hand_input[]){{"x", x}, {"weight_scale", ws2}, {"group_index", counts2}}, 3, y2,
           (const float[]){64, 64, 16, 0, 0});
  c.groups = 3;
  c.counts = counts3;
  run_hand(&c, (hand_input[]){{"x", x}, {"weight_scale", ws3}, {"group_index", counts3}}, 3, y3,
           (const float[]){64, 64, 16, 16, 16});
}

/* ---- rejection paths ---- */

static sk_graph *eg;

static sk_value ein(const char *name, sk_dtype dt, int rank, const int64_t *shape) {
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_input(eg, name, dt, rank, shape, &v));
  return v;
}

/* Adds the op with x and one optional input (slot NULL = none) and mode. */
static sk_status add_with(sk_value x, const char *slot, sk_value v, int64_t mode) {
  sk_op_input in[] = {{"x", &x, 1}, {slot, &v, 1}};
  sk_attr at[] = {SK_ATTR_INT("quant_mode", mode)};
  sk_op_desc d = {.op = "dequant_swiglu_quant", .inputs = in, .n_inputs = slot ? 2 : 1, .attrs = at, .n_attrs = 1};
  sk_value outs[2];
  return sk_graph_add_op(eg, &d, outs, 2, NULL);
}

#define OP "dequant_swiglu_quant"

static void test_errors_x_and_attributes(void) {
  CHECK_OK(sk_graph_create(&eg));
  sk_value x = ein("x", SK_INT32, 2, (int64_t[]){4, 8});
  CHECK_OK(add_with(x, NULL, 0, 1));
  CHECK_FAILS(add_with(ein("x1", SK_INT32, 1, (int64_t[]){8}), NULL, 0, 1), SK_STATUS_INVALID_SHAPE, OP, "input x",
              "rank 2", "[8]");
  CHECK_FAILS(add_with(ein("x3", SK_INT32, 3, (int64_t[]){2, 2, 8}), NULL, 0, 1), SK_STATUS_INVALID_SHAPE, OP, "input x",
              "[2, 2, 8]");
  CHECK_FAILS(add_with(ein("odd", SK_INT32, 2, (int64_t[]){4, 7}), NULL, 0, 1), SK_STATUS_INVALID_SHAPE, OP, "input x",
              "even last dimension", "got 7");
  CHECK_FAILS(add_with(ein("empty", SK_FP32, 2, (int64_t[]){4, 0}), NULL, 0, 1), SK_STATUS_INVALID_SHAPE, OP,
              "even last dimension", "got 0");
  CHECK_FAILS(add_with(ein("i8", SK_INT8, 2, (int64_t[]){4, 8}), NULL, 0, 1), SK_STATUS_INVALID_DTYPE, OP, "input x",
              "fp32, fp16, bf16 or int32", "got int8");
  CHECK_FAILS(add_with(x, NULL, 0, 2), SK_STATUS_INVALID_ATTRIBUTE, OP, "quant_mode", "expected 0..1 (0 static", "got 2");
  sk_value outs[2];
  sk_op_input in[] = {{"x", &x, 1}};
  sk_attr left[] = {SK_ATTR_INT("activate_left", 2), SK_ATTR_INT("quant_mode", 1)};
  sk_op_desc d = {.op = OP, .inputs = in, .n_inputs = 1, .attrs = left, .n_attrs = 2};
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_ATTRIBUTE, OP, "activate_left", "expected 0..1", "got 2");
  sk_attr kind[] = {SK_ATTR_FLOAT("quant_mode", 1.0)};
  d.attrs = kind;
  d.n_attrs = 1;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_ATTRIBUTE, OP, "quant_mode", "expected kind int");
  sk_attr unknown[] = {SK_ATTR_INT("quant_mode", 1), SK_ATTR_INT("dst_type", 2)};
  d.attrs = unknown;
  d.n_attrs = 2;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_ATTRIBUTE, OP, "unknown attribute 'dst_type'");
  d.attrs = left + 1;
  d.n_attrs = 1;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 1, NULL), SK_STATUS_INVALID_ARGUMENT, "2 outputs", "room for 1");
  sk_value two[2] = {x, x};
  sk_op_input list[] = {{"x", &x, 1}, {"weight_scale", two, 2}};
  d.inputs = list;
  d.n_inputs = 2;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_ARGUMENT, OP, "input weight_scale",
              "expected 1 tensor, got 2");
  sk_graph_destroy(eg);
}

static void test_errors_dequant_inputs(void) {
  CHECK_OK(sk_graph_create(&eg));
  sk_value x = ein("x", SK_INT32, 2, (int64_t[]){4, 8}), xf = ein("xf", SK_BF16, 2, (int64_t[]){4, 8});
  sk_value ws = ein("ws", SK_FP32, 1, (int64_t[]){8}), as = ein("as", SK_FP32, 2, (int64_t[]){4, 1});
  sk_value bias = ein("bias", SK_INT32, 1, (int64_t[]){8});
  CHECK_OK(add_with(x, "weight_scale", ws, 1));
  CHECK_OK(add_with(x, "weight_scale", ein("ws_row", SK_FP32, 2, (int64_t[]){1, 8}), 1));
  CHECK_OK(add_with(x, "activation_scale", as, 1));
  CHECK_OK(add_with(x, "activation_scale", ein("as_vec", SK_FP32, 1, (int64_t[]){4}), 1));
  CHECK_OK(add_with(x, "bias", ein("bias_bf16", SK_BF16, 1, (int64_t[]){8}), 1));
  /* float x: only converted */
  CHECK_FAILS(add_with(xf, "weight_scale", ws, 1), SK_STATUS_INVALID_ARGUMENT, OP, "input weight_scale", "float x", "bf16");
  CHECK_FAILS(add_with(xf, "activation_scale", as, 1), SK_STATUS_INVALID_ARGUMENT, OP, "input activation_scale", "float x");
  CHECK_FAILS(add_with(xf, "bias", bias, 1), SK_STATUS_INVALID_ARGUMENT, OP, "input bias", "float x");
  /* shapes */
  CHECK_FAILS(add_with(x, "weight_scale", ein("ws9", SK_FP32, 1, (int64_t[]){9}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input weight_scale", "[8] or [1, 8]", "got [9]");
  CHECK_FAILS(add_with(x, "weight_scale", ein("ws2", SK_FP32, 2, (int64_t[]){2, 8}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input weight_scale", "[8] or [1, 8]", "got [2, 8]");
  CHECK_FAILS(add_with(x, "weight_scale", ein("ws3d", SK_FP32, 3, (int64_t[]){1, 1, 8}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input weight_scale", "got [1, 1, 8]");
  CHECK_FAILS(add_with(x, "activation_scale", ein("as5", SK_FP32, 1, (int64_t[]){5}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input activation_scale", "[4] or [4, 1]", "got [5]");
  CHECK_FAILS(add_with(x, "activation_scale", ein("as42", SK_FP32, 2, (int64_t[]){4, 2}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input activation_scale", "got [4, 2]");
  CHECK_FAILS(add_with(x, "bias", ein("bias4", SK_INT32, 1, (int64_t[]){4}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input bias", "expected shape [8]", "got [4]");
  CHECK_FAILS(add_with(x, "bias", ein("bias18", SK_FP32, 2, (int64_t[]){1, 8}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input bias", "got [1, 8]");
  /* dtypes */
  CHECK_FAILS(add_with(x, "weight_scale", ein("ws16", SK_FP16, 1, (int64_t[]){8}), 1), SK_STATUS_INVALID_DTYPE, OP,
              "input weight_scale", "expected dtype fp32", "got fp16");
  CHECK_FAILS(add_with(x, "activation_scale", ein("asbf", SK_BF16, 1, (int64_t[]){4}), 1), SK_STATUS_INVALID_DTYPE, OP,
              "input activation_scale", "fp32", "got bf16");
  CHECK_FAILS(add_with(x, "bias", ein("bias64", SK_INT64, 1, (int64_t[]){8}), 1), SK_STATUS_INVALID_DTYPE, OP,
              "input bias", "fp32, fp16, bf16 or int32", "got int64");
  sk_graph_destroy(eg);
}

static void test_errors_quant_inputs(void) {
  CHECK_OK(sk_graph_create(&eg));
  sk_value x = ein("x", SK_FP16, 2, (int64_t[]){4, 8});
  sk_value one = ein("one", SK_FP32, 1, (int64_t[]){1}), qs_vec = ein("qs_vec", SK_FP32, 1, (int64_t[]){4});
  CHECK_OK(add_with(x, "quant_scale", qs_vec, 1));
  CHECK_OK(add_with(x, "quant_scale", one, 0));
  /* dynamic */
  CHECK_FAILS(add_with(x, "quant_offset", one, 1), SK_STATUS_INVALID_ARGUMENT, OP, "input quant_offset",
              "absent in dynamic mode");
  CHECK_FAILS(add_with(x, "quant_scale", ein("qs8", SK_FP32, 1, (int64_t[]){8}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input quant_scale", "[4] or [1, 4]", "got [8]");
  CHECK_FAILS(add_with(x, "quant_scale", ein("qs24", SK_FP32, 2, (int64_t[]){2, 4}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input quant_scale", "[4] or [1, 4]", "got [2, 4]");
  CHECK_FAILS(add_with(x, "quant_scale", ein("qsi", SK_INT32, 1, (int64_t[]){4}), 1), SK_STATUS_INVALID_DTYPE, OP,
              "input quant_scale", "fp32, fp16 or bf16", "got int32");
  /* static */
  CHECK_FAILS(add_with(x, NULL, 0, 0), SK_STATUS_INVALID_ARGUMENT, OP, "input quant_scale", "required in static mode");
  CHECK_FAILS(add_with(x, "quant_offset", one, 0), SK_STATUS_INVALID_ARGUMENT, OP, "quant_scale", "required");
  CHECK_FAILS(add_with(x, "quant_scale", qs_vec, 0), SK_STATUS_INVALID_SHAPE, OP, "input quant_scale",
              "[1] in static mode", "got [4]");
  sk_value outs[2];
  sk_value qo2 = ein("qo2", SK_FP32, 1, (int64_t[]){2}), qoi = ein("qoi", SK_INT8, 1, (int64_t[]){1});
  sk_op_input in[] = {{"x", &x, 1}, {"quant_scale", &one, 1}, {"quant_offset", &qo2, 1}};
  sk_op_desc d = {.op = OP, .inputs = in, .n_inputs = 3};
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_SHAPE, OP, "input quant_offset", "[1]", "got [2]");
  in[2].values = &qoi;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_DTYPE, OP, "input quant_offset", "got int8");
  in[2].values = &one;
  CHECK_OK(sk_graph_add_op(eg, &d, outs, 2, NULL));
  sk_graph_destroy(eg);
}

static void test_errors_groups(void) {
  CHECK_OK(sk_graph_create(&eg));
  sk_value x = ein("x", SK_INT32, 2, (int64_t[]){4, 8}), gi = ein("gi", SK_INT64, 1, (int64_t[]){3});
  sk_value outs[2];
  sk_attr dyn[] = {SK_ATTR_INT("quant_mode", 1)};
  sk_value ws = ein("ws", SK_FP32, 2, (int64_t[]){3, 8}), qs = ein("qs", SK_FP32, 2, (int64_t[]){3, 4});
  sk_op_input in[] = {{"x", &x, 1}, {"group_index", &gi, 1}, {"weight_scale", &ws, 1}, {"quant_scale", &qs, 1}};
  sk_op_desc d = {.op = OP, .inputs = in, .n_inputs = 4, .attrs = dyn, .n_attrs = 1};
  CHECK_OK(sk_graph_add_op(eg, &d, outs, 2, NULL));
  sk_value ws4 = ein("ws4", SK_FP32, 2, (int64_t[]){4, 8}), qs2 = ein("qs2", SK_FP32, 2, (int64_t[]){2, 4});
  in[2].values = &ws4;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_SHAPE, OP, "input weight_scale",
              "[8], [1, 8] or [3, 8] (one row per group)", "got [4, 8]");
  in[2].values = &ws;
  in[3].values = &qs2;
  CHECK_FAILS(sk_graph_add_op(eg, &d, outs, 2, NULL), SK_STATUS_INVALID_SHAPE, OP, "input quant_scale",
              "[4], [1, 4] or [3, 4]", "got [2, 4]");
  /* group mode is dynamic only */
  CHECK_FAILS(add_with(x, "group_index", gi, 0), SK_STATUS_INVALID_ARGUMENT, OP, "input group_index",
              "dynamic quantization only", "quant_mode 0");
  CHECK_FAILS(add_with(x, "group_index", ein("gi32", SK_INT32, 1, (int64_t[]){3}), 1), SK_STATUS_INVALID_DTYPE, OP,
              "input group_index", "expected dtype int64", "got int32");
  CHECK_FAILS(add_with(x, "group_index", ein("gi2d", SK_INT64, 2, (int64_t[]){1, 3}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input group_index", "[G] with 1 <= G <= 1024", "got [1, 3]");
  CHECK_FAILS(add_with(x, "group_index", ein("gi0", SK_INT64, 1, (int64_t[]){0}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input group_index", "got [0]");
  CHECK_FAILS(add_with(x, "group_index", ein("gibig", SK_INT64, 1, (int64_t[]){1025}), 1), SK_STATUS_INVALID_SHAPE, OP,
              "input group_index", "got [1025]");
  sk_graph_destroy(eg);
}

int main(void) {
  for (int t = 0; t < 3; t++) {
    sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = t + 1};
    if (sk_team_create(&cfg, &teams[t]) != SK_STATUS_OK) {
      fprintf(stderr, "team: %s\n", sk_last_error());
      return 1;
    }
  }
  static const harness_case cases[] = {
      TEST_CASE(test_dtypes_and_sizes),       TEST_CASE(test_dequant_inputs),
      TEST_CASE(test_quant_modes),            TEST_CASE(test_groups),
      TEST_CASE(test_seed),                   TEST_CASE(test_hand_dynamic),
      TEST_CASE(test_hand_static),            TEST_CASE(test_hand_bias_order),
      TEST_CASE(test_hand_groups),            TEST_CASE(test_errors_x_and_attributes),
      TEST_CASE(test_errors_dequant_inputs),  TEST_CASE(test_errors_quant_inputs),
      TEST_CASE(test_errors_groups),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

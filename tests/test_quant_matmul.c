/* quant_matmul against its reference, bitwise, for every output dtype x scale
 * form x offset x bias dtype x per-token scale, batch broadcasting and the
 * seed shape, on teams of 1, 2 and 3 cores (registered once per ISA path);
 * hand-computed cases pin the arithmetic itself (double rounding, clips,
 * half-even ties, 19-bit truncation, packed scales); every rejection path;
 * sk_trans_quant_param / sk_decode_quant_param round trips. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "reference_runner.h"

static sk_team *teams[3];
static uint64_t rng = 77;

/* One op input: slot name (also the graph input's name), dtype, shape and
 * data (NULL = random values suited to the slot, see fill()). */
typedef struct tin {
  const char *slot;
  sk_dtype dt;
  int rank;
  int64_t shape[4];
  const void *data;
} tin;

static size_t numel(const tin *t) {
  size_t n = 1;
  for (int d = 0; d < t->rank; d++) n *= (size_t)t->shape[d];
  return n;
}

/* Random data for a slot: scales sized so |acc * scale| is mostly in the
 * int8 inner range (with some clipping), full-mantissa fp32 values (the
 * 19-bit truncation matters), packed int64 scales with random offsets. */
static void fill(const tin *t, void *buf, int64_t k) {
  size_t n = numel(t);
  float typical = 120.0f / (5500.0f * sqrtf((float)(k ? k : 1)));
  for (size_t i = 0; i < n; i++) {
    double u = rr_uniform(&rng, 0, 1);
    if (!strcmp(t->slot, "x1") || !strcmp(t->slot, "x2")) {
      ((int8_t *)buf)[i] = (int8_t)(rr_next(&rng) & 0xFF);
    } else if (!strcmp(t->slot, "scale")) {
      float s = typical * (float)(0.5 + u) * (i % 5 == 3 ? -1.0f : 1.0f);
      if (t->dt == SK_INT64) {
        float off = (float)rr_uniform(&rng, -300, 300);
        if (sk_trans_quant_param(&s, i % 3 ? &off : NULL, 1, &((int64_t *)buf)[i]) != SK_STATUS_OK) CHECK(0);
      } else if (t->dt == SK_BF16) {
        ((uint16_t *)buf)[i] = sk_fp32_to_bf16(s);
      } else {
        ((float *)buf)[i] = s;
      }
    } else if (!strcmp(t->slot, "offset")) {
      ((float *)buf)[i] = i % 4 == 1 ? (float)(int)rr_uniform(&rng, -40, 40) + 0.5f : (float)rr_uniform(&rng, -300, 300);
    } else if (!strcmp(t->slot, "pertoken_scale")) {
      ((float *)buf)[i] = (float)(0.25 + 2 * u);
    } else if (t->dt == SK_INT32) { /* bias */
      ((int32_t *)buf)[i] = (int32_t)rr_uniform(&rng, -20000, 20000);
    } else {
      float v = (float)rr_uniform(&rng, -60, 60);
      if (t->dt == SK_FP32) ((float *)buf)[i] = v;
      else ((uint16_t *)buf)[i] = t->dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
    }
  }
}

static sk_status add_qmm(sk_graph *g, const tin *ins, size_t n_in, int64_t out_dtype, int with_attr, sk_value *y) {
  sk_value v[8];
  sk_op_input in[8];
  for (size_t i = 0; i < n_in; i++) {
    sk_status st = sk_graph_add_input(g, ins[i].slot, ins[i].dt, ins[i].rank, ins[i].shape, &v[i]);
    if (st != SK_STATUS_OK) return st;
    in[i] = (sk_op_input){ins[i].slot, &v[i], 1};
  }
  sk_attr at[] = {SK_ATTR_INT("output_dtype", out_dtype)};
  sk_op_desc d = {.struct_size = sizeof d, .op = "quant_matmul", .inputs = in, .n_inputs = n_in,
                  .attrs = at, .n_attrs = with_attr ? 1 : 0};
  return sk_graph_add_op(g, &d, y, 1, NULL);
}

/* Builds the op, runs it on teams of 1..3 cores against the reference
 * (bitwise), checks every team gives the same bytes and copies them to out
 * (out_bytes must match). */
static void run_qmm(const tin *ins, size_t n_in, int64_t out_dtype, void *out, size_t out_bytes) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value y;
  CHECK_OK(add_qmm(g, ins, n_in, out_dtype, 1, &y));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  int64_t k = ins[0].shape[ins[0].rank - 1];
  void *data[8] = {0};
  for (size_t i = 0; i < n_in; i++) {
    size_t bytes = numel(&ins[i]) * sk_dtype_size(ins[i].dt);
    data[i] = malloc(bytes + 1);
    if (ins[i].data) memcpy(data[i], ins[i].data, bytes);
    else fill(&ins[i], data[i], k);
  }
  void *first = NULL;
  for (int t = 0; t < 3; t++) {
    sk_program *p = NULL;
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t]};
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) break;
    rr_buffers b;
    CHECK(rr_alloc(p, &b, 0, 1, 1));
    for (size_t i = 0; i < b.n_inputs; i++)
      for (size_t j = 0; j < n_in; j++)
        if (!strcmp(b.inputs[i].name, ins[j].slot)) memcpy(b.inputs[i].data, data[j], b.inputs[i].bytes);
    CHECK_MSG(rr_check_program(p, teams[t], &b) == 0, "team of %d cores", t + 1);
    if (out) CHECK(b.outputs[0].bytes == out_bytes);
    if (!first) {
      first = malloc(b.outputs[0].bytes + 1);
      memcpy(first, b.outputs[0].data, b.outputs[0].bytes);
      if (out && b.outputs[0].bytes == out_bytes) memcpy(out, first, out_bytes);
    } else {
      CHECK(memcmp(first, b.outputs[0].data, b.outputs[0].bytes) == 0);
    }
    rr_free(&b);
    sk_program_destroy(p);
  }
  free(first);
  for (size_t i = 0; i < n_in; i++) free(data[i]);
  sk_graph_destroy(g);
}

static const sk_dtype out_dtypes[] = {SK_FP16, SK_BF16, SK_INT8, SK_INT32};
static const sk_dtype bias_dtypes[] = {SK_DTYPE_INVALID, SK_INT32, SK_FP32, SK_FP16, SK_BF16};
static const int64_t odd[] = {1, 7, 17, 63, 65, 257};

/* Shapes (x1, x2) cycled through by the combination sweep. */
static void pick_shapes(int idx, tin *x1, tin *x2, int64_t *n, int *out_rank, int64_t *batch0) {
  int64_t m = odd[idx % 6], k = odd[(idx / 2 + 3) % 6], nn = odd[(idx / 3 + 1) % 6];
  if (k == 257 && m == 257) m = 63; /* keep the sweep quick */
  *x1 = (tin){"x1", SK_INT8, 2, {m, k}, NULL};
  *x2 = (tin){"x2", SK_INT8, 2, {k, nn}, NULL};
  *out_rank = 2;
  *batch0 = 0;
  switch (idx % 4) {
    case 1: *x1 = (tin){"x1", SK_INT8, 3, {3, m, k}, NULL}, *out_rank = 3, *batch0 = 3; break; /* [b,m,k] x [k,n] */
    case 2: *x2 = (tin){"x2", SK_INT8, 3, {2, k, nn}, NULL}, *out_rank = 3, *batch0 = 2; break; /* [m,k] x [b,k,n] */
    case 3: *x1 = (tin){"x1", SK_INT8, 4, {2, 1, m, k}, NULL};
            *x2 = (tin){"x2", SK_INT8, 3, {3, k, nn}, NULL}, *out_rank = 4; break; /* [2,1,m,k] x [3,k,n] */
    default: break;
  }
  *n = nn;
}

/* Every legal combination of output dtype, scale form (fp32 / bf16 / int64,
 * [1] or [n]; none for int32), offset input, bias dtype (and [b,1,n] for 3-D
 * outputs) and per-token scale. */
static void test_combinations(void) {
  int idx = 0;
  for (int o = 0; o < 4; o++)
    for (int s = 0; s < 4; s++)   /* fp32, bf16, int64, absent */
      for (int off = 0; off < 3; off++)    /* none, [1], [n] */
        for (int bi = 0; bi < 5; bi++)
          for (int pt = 0; pt < 2; pt++) {
            sk_dtype out = out_dtypes[o], bias_dt = bias_dtypes[bi];
            int float_out = out == SK_FP16 || out == SK_BF16;
            if (s == 3 && out != SK_INT32) continue;
            if (off && out != SK_INT8) continue;
            if (pt && !float_out) continue;
            if (bi >= 2 && !float_out) continue;
            tin ins[6];
            size_t n_in = 2;
            int64_t n, batch0;
            int out_rank;
            pick_shapes(idx++, &ins[0], &ins[1], &n, &out_rank, &batch0);
            int64_t m = ins[0].shape[ins[0].rank - 2];
            int per_col = idx % 2;
            static const sk_dtype scale_dts[] = {SK_FP32, SK_BF16, SK_INT64};
            if (s < 3) ins[n_in++] = (tin){"scale", scale_dts[s], 1, {per_col ? n : 1}, NULL};
            if (off) ins[n_in++] = (tin){"offset", SK_FP32, 1, {off == 2 ? n : 1}, NULL};
            if (pt) ins[n_in++] = (tin){"pertoken_scale", SK_FP32, 1, {m}, NULL};
            if (bias_dt) {
              if (out_rank == 3 && idx % 3 == 0) ins[n_in++] = (tin){"bias", bias_dt, 3, {batch0, 1, n}, NULL};
              else ins[n_in++] = (tin){"bias", bias_dt, 1, {n}, NULL};
            }
            run_qmm(ins, n_in, out, NULL, 0);
          }
}

/* Output shapes of the three broadcasting forms. */
static void test_broadcast_shapes(void) {
  static const struct { int r1; int64_t s1[4]; int r2; int64_t s2[4]; int ro; int64_t so[4]; } cases[] = {
      {2, {5, 9}, 3, {4, 9, 6}, 3, {4, 5, 6}},
      {3, {4, 5, 9}, 2, {9, 6}, 3, {4, 5, 6}},
      {4, {2, 1, 5, 9}, 3, {3, 9, 6}, 4, {2, 3, 5, 6}},
      {3, {4, 5, 9}, 3, {4, 9, 6}, 3, {4, 5, 6}},
      {3, {1, 5, 9}, 3, {4, 9, 6}, 3, {4, 5, 6}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sk_graph *g;
    CHECK_OK(sk_graph_create(&g));
    tin ins[2] = {{"x1", SK_INT8, cases[c].r1, {0}, NULL}, {"x2", SK_INT8, cases[c].r2, {0}, NULL}};
    memcpy(ins[0].shape, cases[c].s1, sizeof ins[0].shape);
    memcpy(ins[1].shape, cases[c].s2, sizeof ins[1].shape);
    sk_value y;
    CHECK_OK(add_qmm(g, ins, 2, SK_INT32, 1, &y));
    sk_dtype dt;
    int rank;
    int64_t shape[SK_MAX_RANK];
    CHECK_OK(sk_graph_value_info(g, y, &dt, &rank, shape));
    CHECK(dt == SK_INT32 && rank == cases[c].ro && memcmp(shape, cases[c].so, (size_t)rank * 8) == 0);
    sk_graph_destroy(g);
    run_qmm(ins, 2, SK_INT32, NULL, 0);
  }
}

/* The seed: x1 [48, 64] x x2 [6, 64, 64], scale [1] int64, fp16 [6, 48, 64];
 * also a larger shape that spans several tiles and K blocks. */
static void test_seed_and_large(void) {
  float s = 0.0123f;
  int64_t packed;
  CHECK_OK(sk_trans_quant_param(&s, NULL, 1, &packed));
  tin ins[3] = {{"x1", SK_INT8, 2, {48, 64}, NULL}, {"x2", SK_INT8, 3, {6, 64, 64}, NULL},
                {"scale", SK_INT64, 1, {1}, &packed}};
  uint16_t *y = malloc(6 * 48 * 64 * 2);
  run_qmm(ins, 3, SK_FP16, y, 6 * 48 * 64 * 2);
  free(y);
  tin big[4] = {{"x1", SK_INT8, 2, {300, 1100}, NULL}, {"x2", SK_INT8, 2, {1100, 600}, NULL},
                {"scale", SK_FP32, 1, {600}, NULL}, {"bias", SK_INT32, 1, {600}, NULL}};
  run_qmm(big, 4, SK_INT8, NULL, 0);
  run_qmm(big, 4, SK_INT32, NULL, 0);
  /* more than 65535 columns (an LM head's vocabulary) in one op */
  tin wide[4] = {{"x1", SK_INT8, 2, {3, 40}, NULL}, {"x2", SK_INT8, 2, {40, 70001}, NULL},
                 {"scale", SK_FP32, 1, {70001}, NULL}, {"pertoken_scale", SK_FP32, 1, {3}, NULL}};
  run_qmm(wide, 4, SK_BF16, NULL, 0);
  /* k = 0: acc = 0, output = the bias / offset alone. */
  tin empty[3] = {{"x1", SK_INT8, 2, {5, 0}, NULL}, {"x2", SK_INT8, 2, {0, 7}, NULL}, {"bias", SK_INT32, 1, {7}, NULL}};
  run_qmm(empty, 3, SK_INT32, NULL, 0);
  tin none[2] = {{"x1", SK_INT8, 3, {0, 5, 3}, NULL}, {"x2", SK_INT8, 2, {3, 7}, NULL}};
  run_qmm(none, 2, SK_INT32, NULL, 0);
}


static float f32_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* One output row: x1 [1, 1] = 1, x2 [1, n] = 0, so acc + bias_i32 = the
 * int32 bias (any value); extra inputs follow. */
static void run_row(const int32_t *acc, int64_t n, const tin *extra, size_t n_extra, sk_dtype out, void *y) {
  static const int8_t one = 1, zeros[64] = {0};
  tin ins[6] = {{"x1", SK_INT8, 2, {1, 1}, &one}, {"x2", SK_INT8, 2, {1, n}, zeros}, {"bias", SK_INT32, 1, {n}, acc}};
  memcpy(ins + 3, extra, n_extra * sizeof(tin));
  run_qmm(ins, 3 + n_extra, out, y, (size_t)n * sk_dtype_size(out));
}

/* int8 output: double rounding, both clips, half-even ties, offsets. */
static void test_hand_int8(void) {
  enum { N = 16 };
  static const int32_t acc[N] = {511, 509, -513, -600, 400, -400, 20, 20, 20, 5, 7, -5, 600, 300, 1, 2};
  float off[N] = {-200, -130, 200, 200, 0, 0, 2.5f, 3.5f, -2.5f, 0, 0, 0, -300, NAN, INFINITY, -INFINITY};
  /* 255.5 -> 256 -> 255 - 200; 254.5 -> 254 (even); -256.5 -> -256; -300
   * clipped to -256 (not -100); saturation 127 / -128; offsets 2.5 -> 2,
   * 3.5 -> 4, -2.5 -> -2; 2.5 -> 2, 3.5 -> 4, -2.5 -> -2; an offset input is
   * not clipped (255 - 300); NaN offset -> -128; +-inf offsets saturate. */
  static const int8_t want[N] = {55, 124, -56, -56, 127, -128, 12, 14, 8, 2, 4, -2, -45, -128, 127, -128};
  const float half = 0.5f;
  tin ex[2] = {{"scale", SK_FP32, 1, {1}, &half}, {"offset", SK_FP32, 1, {N}, off}};
  int8_t y[N];
  run_row(acc, N, ex, 2, SK_INT8, y);
  for (int j = 0; j < N; j++) CHECK_MSG(y[j] == want[j], "column %d: got %d, want %d", j, y[j], want[j]);

  /* int64 scale: its offset field is used without an offset input, the
   * input wins when given; trans_quant_param clips offsets to [-256, 255]. */
  static const int32_t acc2[4] = {20, 20, 1000, -1000};
  float scales[4] = {0.5f, 0.5f, 0.5f, 0.5f}, offs[4] = {-10.6f, -10.6f, -1000.0f, 300.0f};
  int64_t packed[4];
  CHECK_OK(sk_trans_quant_param(scales, offs, 4, packed));
  int8_t y2[4];
  tin ex2[1] = {{"scale", SK_INT64, 1, {4}, packed}};
  run_row(acc2, 4, ex2, 1, SK_INT8, y2);
  CHECK(y2[0] == -1 && y2[1] == -1 && y2[2] == -1 && y2[3] == -1); /* 10 - 11; 255 - 256; -256 + 255 */
  float three = 3.0f;
  tin ex3[2] = {{"scale", SK_INT64, 1, {4}, packed}, {"offset", SK_FP32, 1, {1}, &three}};
  run_row(acc2, 4, ex3, 2, SK_INT8, y2);
  CHECK(y2[0] == 13 && y2[2] == 127 && y2[3] == -128);
  CHECK_OK(sk_trans_quant_param(scales, NULL, 4, packed));
  run_row(acc2, 4, ex2, 1, SK_INT8, y2);
  CHECK(y2[0] == 10 && y2[2] == 127 && y2[3] == -128);

  /* 19-bit truncation: 0.5 + 2^-14 becomes 0.5, so 201 * s = 100.5 -> 100
   * (untruncated 100.51 -> 101). NaN / inf products count as 0. */
  float s19 = 0.5f + 0x1p-14f;
  static const int32_t acc3[1] = {201};
  tin ex4[1] = {{"scale", SK_FP32, 1, {1}, &s19}};
  run_row(acc3, 1, ex4, 1, SK_INT8, y2);
  CHECK(y2[0] == 100);
  float nan_inf[2] = {NAN, INFINITY};
  static const int32_t acc4[2] = {5, 0};
  tin ex5[1] = {{"scale", SK_FP32, 1, {2}, nan_inf}};
  run_row(acc4, 2, ex5, 1, SK_INT8, y2);
  CHECK(y2[0] == 0 && y2[1] == 0);
}

/* fp16 / bf16 / int32 outputs: order of operations, truncation rules,
 * packed offsets ignored, NaN canonical, int32 wrapping. */
static void test_hand_float_int32(void) {
  const float half = 0.5f, two = 2.0f, quarter = 0.25f, one = 1.0f;
  static const int8_t three = 3, unit = 1;
  uint16_t h;
  tin base[2] = {{"x1", SK_INT8, 2, {1, 1}, &three}, {"x2", SK_INT8, 2, {1, 1}, &unit}};
  tin a[5] = {base[0], base[1], {"scale", SK_FP32, 1, {1}, &half}, {"pertoken_scale", SK_FP32, 1, {1}, &two},
              {"bias", SK_FP32, 1, {1}, &quarter}};
  run_qmm(a, 5, SK_FP16, &h, 2);
  CHECK(h == sk_fp32_to_fp16(3.25f)); /* 3 * 0.5 * 2 + 0.25 */
  int32_t five = 5;
  a[4] = (tin){"bias", SK_INT32, 1, {1}, &five};
  run_qmm(a, 5, SK_BF16, &h, 2);
  CHECK(h == sk_fp32_to_bf16(8.0f)); /* (3 + 5) * 0.5 * 2 */

  /* fp16 without per-token: fp32 scale truncated (1 + 2^-11 + 2^-12 -> 1);
   * with a per-token scale it is not (-> rounds up to 1 + 2^-10). */
  float s = 1.0f + 0x1p-11f + 0x1p-12f;
  static const int32_t acc1 = 1;
  tin ex[2] = {{"scale", SK_FP32, 1, {1}, &s}, {"pertoken_scale", SK_FP32, 1, {1}, &one}};
  run_row(&acc1, 1, ex, 1, SK_FP16, &h);
  CHECK(h == 0x3C00);
  run_row(&acc1, 1, ex, 2, SK_FP16, &h);
  CHECK(h == 0x3C01);
  /* bf16 output: never truncated; 1 + 2^-8 + 2^-11 rounds up (0x3F81),
   * truncated it would be the tie 1 + 2^-8 -> 0x3F80. */
  float sb = 1.0f + 0x1p-8f + 0x1p-11f;
  tin exb[1] = {{"scale", SK_FP32, 1, {1}, &sb}};
  run_row(&acc1, 1, exb, 1, SK_BF16, &h);
  CHECK(h == 0x3F81);

  /* int64 scale with fp16 output: the offset field is ignored. */
  float o = -10.0f;
  int64_t packed;
  CHECK_OK(sk_trans_quant_param(&half, &o, 1, &packed));
  static const int32_t acc20 = 20;
  tin ex6[1] = {{"scale", SK_INT64, 1, {1}, &packed}};
  run_row(&acc20, 1, ex6, 1, SK_FP16, &h);
  CHECK(h == sk_fp32_to_fp16(10.0f));

  /* NaN results are the canonical quiet NaN; inf * 0 too. */
  float nans[2] = {f32_bits(0xFFC12345u), INFINITY};
  static const int32_t acc_n[2] = {7, 0};
  uint16_t h2[2];
  tin ex7[1] = {{"scale", SK_FP32, 1, {2}, nans}};
  run_row(acc_n, 2, ex7, 1, SK_FP16, h2);
  CHECK(h2[0] == 0x7E00 && h2[1] == 0x7E00);
  run_row(acc_n, 2, ex7, 1, SK_BF16, h2);
  CHECK(h2[0] == 0x7FC0 && h2[1] == 0x7FC0);

  /* int32 output: acc + bias, scale ignored (or absent), wrapping. */
  int32_t y;
  a[4] = (tin){"bias", SK_INT32, 1, {1}, &five};
  tin c[4] = {base[0], base[1], a[2], a[4]};
  run_qmm(c, 4, SK_INT32, &y, 4);
  CHECK(y == 8);
  tin d[3] = {base[0], base[1], a[4]};
  run_qmm(d, 3, SK_INT32, &y, 4);
  CHECK(y == 8);
  int32_t big = INT32_MAX;
  d[2] = (tin){"bias", SK_INT32, 1, {1}, &big};
  run_qmm(d, 3, SK_INT32, &y, 4);
  CHECK(y == INT32_MIN + 2);
  /* Batched bias [b, 1, n]: batch b adds its own row. */
  static const int8_t x1v[2] = {1, 2}, x2v[2] = {3, 4};
  int32_t bb[2] = {100, 200}, y3[2];
  tin e[3] = {{"x1", SK_INT8, 3, {2, 1, 1}, x1v}, {"x2", SK_INT8, 2, {1, 1}, x2v}, {"bias", SK_INT32, 3, {2, 1, 1}, bb}};
  run_qmm(e, 3, SK_INT32, y3, 8);
  CHECK(y3[0] == 103 && y3[1] == 206);
}

static sk_status try_add(const tin *ins, size_t n_in, int64_t out_dtype) {
  sk_graph *g;
  sk_graph_create(&g);
  sk_value y;
  sk_status st = add_qmm(g, ins, n_in, out_dtype, out_dtype >= 0, &y);
  sk_graph_destroy(g);
  return st;
}

static void test_errors(void) {
  const tin x1 = {"x1", SK_INT8, 2, {4, 8}, NULL}, x2 = {"x2", SK_INT8, 2, {8, 5}, NULL};
  const tin sc = {"scale", SK_FP32, 1, {1}, NULL};
#define TRY(out, ...) try_add((const tin[]){__VA_ARGS__}, sizeof((const tin[]){__VA_ARGS__}) / sizeof(tin), out)
  CHECK_FAILS(TRY(SK_FP16, {"x1", SK_FP16, 2, {4, 8}, NULL}, x2, sc), SK_STATUS_INVALID_DTYPE, "quant_matmul", "input x1",
              "int8", "fp16");
  CHECK_FAILS(TRY(SK_FP16, x1, {"x2", SK_INT32, 2, {8, 5}, NULL}, sc), SK_STATUS_INVALID_DTYPE, "input x2", "int32");
  CHECK_FAILS(TRY(SK_FP16, {"x1", SK_INT8, 1, {8}, NULL}, x2, sc), SK_STATUS_INVALID_SHAPE, "input x1", "rank >= 2", "[8]");
  CHECK_FAILS(TRY(SK_FP16, x1, {"x2", SK_INT8, 2, {9, 5}, NULL}, sc), SK_STATUS_INVALID_SHAPE, "input x2", "expected 8",
              "got 9");
  CHECK_FAILS(TRY(SK_INT32, {"x1", SK_INT8, 3, {2, 4, 8}, NULL}, {"x2", SK_INT8, 3, {3, 8, 5}, NULL}),
              SK_STATUS_INVALID_SHAPE, "x1 [2, 4, 8]", "x2 [3, 8, 5]", "do not broadcast");
  CHECK_FAILS(TRY(SK_INT32, {"x1", SK_INT8, 2, {2, 65536}, NULL}, {"x2", SK_INT8, 2, {65536, 3}, NULL}),
              SK_STATUS_INVALID_SHAPE, "input x1", "65536", "65535");
  CHECK_OK(TRY(SK_INT32, x1, {"x2", SK_INT8, 2, {8, 70000}, NULL})); /* n has no limit: only k's sums must fit */
  CHECK_OK(TRY(SK_INT32, {"x1", SK_INT8, 2, {1, 65535}, NULL}, {"x2", SK_INT8, 2, {65535, 65535}, NULL}));
  CHECK_OK(TRY(SK_FP32, x1, x2, sc));
  CHECK_FAILS(TRY(SK_INT64, x1, x2, sc), SK_STATUS_INVALID_ATTRIBUTE, "output_dtype",
              "fp16, bf16, fp32, int8 or int32", "got int64");
  CHECK_FAILS(TRY(99, x1, x2, sc), SK_STATUS_INVALID_ATTRIBUTE, "output_dtype", "got 99");
  CHECK_FAILS(TRY(SK_FP16, x1, x2), SK_STATUS_INVALID_ARGUMENT, "input scale", "required for fp16");
  CHECK_FAILS(TRY(-1, x1, x2), SK_STATUS_INVALID_ARGUMENT, "input scale", "required for int8"); /* default output */
  CHECK_FAILS(TRY(SK_FP16, x1, x2, {"scale", SK_FP16, 1, {1}, NULL}), SK_STATUS_INVALID_DTYPE, "input scale",
              "fp32, bf16 or int64", "got fp16");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, {"scale", SK_FP32, 1, {3}, NULL}), SK_STATUS_INVALID_SHAPE, "input scale",
              "[1] or [5]", "[3]");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, {"scale", SK_FP32, 2, {1, 5}, NULL}), SK_STATUS_INVALID_SHAPE, "input scale",
              "[1, 5]");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, sc, {"offset", SK_FP32, 1, {1}, NULL}), SK_STATUS_INVALID_ARGUMENT, "input offset",
              "int8", "fp16");
  CHECK_FAILS(TRY(SK_INT8, x1, x2, sc, {"offset", SK_BF16, 1, {1}, NULL}), SK_STATUS_INVALID_DTYPE, "input offset",
              "fp32", "bf16");
  CHECK_FAILS(TRY(SK_INT8, x1, x2, sc, {"offset", SK_FP32, 1, {4}, NULL}), SK_STATUS_INVALID_SHAPE, "input offset",
              "[1] or [5]", "[4]");
  CHECK_FAILS(TRY(SK_INT8, x1, x2, sc, {"pertoken_scale", SK_FP32, 1, {4}, NULL}), SK_STATUS_INVALID_ARGUMENT,
              "input pertoken_scale", "int8");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, sc, {"pertoken_scale", SK_FP16, 1, {4}, NULL}), SK_STATUS_INVALID_DTYPE,
              "input pertoken_scale", "fp32", "fp16");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, sc, {"pertoken_scale", SK_FP32, 1, {5}, NULL}), SK_STATUS_INVALID_SHAPE,
              "input pertoken_scale", "[4]", "[5]");
  CHECK_FAILS(TRY(SK_INT8, x1, x2, sc, {"bias", SK_FP32, 1, {5}, NULL}), SK_STATUS_INVALID_DTYPE, "input bias", "int32",
              "got fp32");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, sc, {"bias", SK_INT8, 1, {5}, NULL}), SK_STATUS_INVALID_DTYPE, "input bias",
              "int32, fp32, fp16 or bf16", "got int8");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, sc, {"bias", SK_FP32, 1, {4}, NULL}), SK_STATUS_INVALID_SHAPE, "input bias", "[5]",
              "[4]");
  CHECK_FAILS(TRY(SK_FP16, {"x1", SK_INT8, 3, {2, 4, 8}, NULL}, x2, sc, {"bias", SK_FP32, 3, {3, 1, 5}, NULL}),
              SK_STATUS_INVALID_SHAPE, "input bias", "[5] or [2, 1, 5]", "[3, 1, 5]");
  CHECK_FAILS(TRY(SK_FP16, x1, x2, sc, {"bias", SK_FP32, 3, {1, 1, 5}, NULL}), SK_STATUS_INVALID_SHAPE, "input bias",
              "expected shape [5]", "[1, 1, 5]");
  CHECK_FAILS(TRY(SK_FP16, x2), SK_STATUS_INVALID_ARGUMENT, "input x1", "expected 1 tensor, got 0");
#undef TRY
  /* Two tensors in the scale slot; an unknown attribute. */
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value v[3];
  CHECK_OK(sk_graph_add_input(g, "x1", SK_INT8, 2, (int64_t[]){4, 8}, &v[0]));
  CHECK_OK(sk_graph_add_input(g, "x2", SK_INT8, 2, (int64_t[]){8, 5}, &v[1]));
  CHECK_OK(sk_graph_add_input(g, "s", SK_FP32, 1, (int64_t[]){1}, &v[2]));
  sk_value two_scales[2] = {v[2], v[2]}, y;
  sk_op_input in[] = {{"x1", &v[0], 1}, {"x2", &v[1], 1}, {"scale", two_scales, 2}};
  sk_op_desc d = {.op = "quant_matmul", .inputs = in, .n_inputs = 3};
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_ARGUMENT, "input scale", "expected 1 tensor", "got 2");
  in[2].count = 1;
  sk_attr bad[] = {SK_ATTR_INT("transpose", 1)};
  d.attrs = bad;
  d.n_attrs = 1;
  CHECK_FAILS(sk_graph_add_op(g, &d, &y, 1, NULL), SK_STATUS_INVALID_ATTRIBUTE, "unknown attribute 'transpose'");
  d.n_attrs = 0;
  CHECK_OK(sk_graph_add_op(g, &d, &y, 1, NULL)); /* default output: int8 */
  sk_dtype dt;
  CHECK_OK(sk_graph_value_info(g, y, &dt, NULL, NULL));
  CHECK(dt == SK_INT8);
  sk_graph_destroy(g);
}

static void test_trans_quant_param(void) {
  float s[8] = {1.2345f, -0.75f, 3e-5f, 7.0f, 0.1f, 2.0f, 1e10f, -0.0f};
  float off[8] = {2.5f, 3.5f, -2.5f, 300.0f, -1000.0f, 255.4f, -256.6f, 0.49f};
  static const float want_off[8] = {2, 4, -2, 255, -256, 255, -256, 0};
  int64_t packed[8];
  CHECK_OK(sk_trans_quant_param(s, off, 8, packed));
  for (int i = 0; i < 8; i++) {
    uint32_t bits;
    memcpy(&bits, &s[i], 4);
    float ds, doff;
    sk_decode_quant_param(packed[i], &ds, &doff);
    CHECK(ds == f32_bits(bits & 0xFFFFE000u) && signbit(ds) == signbit(s[i]));
    CHECK_MSG(doff == want_off[i], "offset %d: got %g, want %g", i, (double)doff, (double)want_off[i]);
    CHECK(((uint64_t)packed[i] >> 46 & 1) == 1 && ((uint64_t)packed[i] >> 47) == 0);
    CHECK((uint32_t)packed[i] == (bits & 0xFFFFE000u));
  }
  CHECK((((uint64_t)packed[4] >> 37) & 0x1FF) == 0x100); /* -256 in 9-bit two's complement */
  CHECK_OK(sk_trans_quant_param(s, NULL, 8, packed));
  for (int i = 0; i < 8; i++) {
    float ds, doff = 99;
    sk_decode_quant_param(packed[i], &ds, &doff);
    CHECK(doff == 0.0f && (((uint64_t)packed[i] >> 37) & 0x1FF) == 0);
  }
  sk_decode_quant_param(packed[0], NULL, NULL); /* NULL outputs are fine */
  off[1] = NAN;
  CHECK_FAILS(sk_trans_quant_param(s, off, 8, packed), SK_STATUS_INVALID_ARGUMENT, "offset[1]");
  off[1] = 0;
  off[6] = -INFINITY;
  CHECK_FAILS(sk_trans_quant_param(s, off, 8, packed), SK_STATUS_INVALID_ARGUMENT, "offset[6]");
  CHECK_OK(sk_trans_quant_param(NULL, NULL, 0, NULL));
  CHECK_FAILS(sk_trans_quant_param(NULL, NULL, 1, packed), SK_STATUS_INVALID_ARGUMENT, "scale");
  /* Random round trips. */
  for (int i = 0; i < 1000; i++) {
    float sc = f32_bits((uint32_t)rr_next(&rng) & 0xBFFFFFFFu), o = (float)rr_uniform(&rng, -400, 400);
    int64_t q;
    CHECK_OK(sk_trans_quant_param(&sc, &o, 1, &q));
    float ds, doff, r = rintf(o);
    sk_decode_quant_param(q, &ds, &doff);
    uint32_t a, b;
    memcpy(&a, &sc, 4);
    memcpy(&b, &ds, 4);
    CHECK(b == (a & 0xFFFFE000u) && doff == fminf(fmaxf(r, -256), 255));
  }
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
      TEST_CASE(test_combinations),   TEST_CASE(test_broadcast_shapes), TEST_CASE(test_seed_and_large),
      TEST_CASE(test_hand_int8),      TEST_CASE(test_hand_float_int32), TEST_CASE(test_errors),
      TEST_CASE(test_trans_quant_param),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

/* moe_gating_topk: the kernel against the reference, bitwise (y, expert_idx
 * and out), over dtypes, E, T, both norms, both group modes, renorm, bias,
 * scaling, ties and special values, on teams of 1, 2 and 3 cores; the seed's
 * and DeepSeek-V3's configurations; hand-computed rows for every branch
 * (exact indices, values within 1e-6 relative); every rejection path.
 * Registered once per ISA path. */
#include <math.h>

#include "harness.h"
#include "reference_runner.h"

static sk_team *teams[3];
static const sk_dtype float_dtypes[] = {SK_FP32, SK_FP16, SK_BF16};

typedef struct moe_case {
  sk_dtype dt;
  int64_t t, e;
  bool bias;
  int64_t k, k_group, group_count, mode, renorm, norm_type, out_flag;
  double rsf, eps; /* rsf 0: attribute left out (default 1.0); eps -1: left out */
} moe_case;

static sk_status add_case(sk_graph *g, const moe_case *c, sk_value outs[3]) {
  sk_value x, b;
  sk_status st = sk_graph_add_input(g, "x", c->dt, 2, (int64_t[]){c->t, c->e}, &x);
  if (st == SK_STATUS_OK && c->bias) st = sk_graph_add_input(g, "bias", c->dt, 1, &c->e, &b);
  if (st != SK_STATUS_OK) return st;
  sk_op_input in[] = {{"x", &x, 1}, {"bias", &b, 1}};
  sk_attr at[10] = {SK_ATTR_INT("k", c->k),
                    SK_ATTR_INT("k_group", c->k_group),
                    SK_ATTR_INT("group_count", c->group_count),
                    SK_ATTR_INT("group_select_mode", c->mode),
                    SK_ATTR_INT("renorm", c->renorm),
                    SK_ATTR_INT("norm_type", c->norm_type),
                    SK_ATTR_INT("out_flag", c->out_flag)};
  size_t n_at = 7;
  if (c->rsf != 0) at[n_at++] = SK_ATTR_FLOAT("routed_scaling_factor", c->rsf);
  if (c->eps != -1) at[n_at++] = SK_ATTR_FLOAT("eps", c->eps);
  sk_op_desc d = {.op = "moe_gating_topk", .inputs = in, .n_inputs = c->bias ? 2 : 1, .attrs = at, .n_attrs = n_at};
  size_t got = 0;
  st = sk_graph_add_op(g, &d, outs, 3, &got);
  if (st == SK_STATUS_OK) CHECK(got == 3);
  return st;
}

static sk_graph *build_case(const moe_case *c) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value outs[3];
  CHECK_OK(add_case(g, c, outs));
  CHECK_OK(sk_graph_mark_output(g, outs[0], "y"));
  CHECK_OK(sk_graph_mark_output(g, outs[1], "expert_idx"));
  CHECK_OK(sk_graph_mark_output(g, outs[2], "out"));
  return g;
}

static sk_buffer *find(rr_buffers *b, const char *name, bool output) {
  sk_buffer *list = output ? b->outputs : b->inputs;
  size_t n = output ? b->n_outputs : b->n_inputs;
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i].name, name) == 0) return &list[i];
  return NULL;
}

/* Input styles: plain random x, x from a few integers (ties everywhere),
 * x with NaN / +-Inf sprinkled in (rows of all -Inf, a NaN bias entry), and
 * (16-bit dtypes, T * E a multiple of 65536) every code of the dtype, each
 * as often, in a scrambled order: the whole sigmoid lookup table. */
enum { FILL_RANDOM, FILL_TIES, FILL_SPECIAL, FILL_CODES };

static void fill_inputs(rr_buffers *b, const moe_case *c, int style, uint64_t seed) {
  sk_buffer *x = find(b, "x", false), *bias = find(b, "bias", false);
  size_t n = (size_t)(c->t * c->e);
  rr_fill(x->data, c->dt, n, -4, 4, &seed);
  if (bias) rr_fill(bias->data, c->dt, (size_t)c->e, -0.5, 0.5, &seed);
  if (style == FILL_TIES) {
    for (size_t i = 0; i < n; i++) {
      float v = floorf((float)rr_uniform(&seed, -2, 3));
      if (c->dt == SK_FP32) ((float *)x->data)[i] = v;
      else ((uint16_t *)x->data)[i] = c->dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
    }
    if (bias)
      for (int64_t e = 0; e < c->e; e++) {
        float v = (float)(e % 3) * 0.25f;
        if (c->dt == SK_FP32) ((float *)bias->data)[e] = v;
        else ((uint16_t *)bias->data)[e] = c->dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
      }
  } else if (style == FILL_CODES) {
    for (size_t i = 0; i < n; i++) ((uint16_t *)x->data)[i] = (uint16_t)(i * 40503u + (size_t)seed);
  } else if (style == FILL_SPECIAL) {
    static const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
    for (size_t i = 0; i < n; i++) {
      uint64_t r = rr_next(&seed);
      int64_t row = (int64_t)i / c->e;
      float v = row % 5 == 1 ? -INFINITY : r % 7 == 0 ? specials[(r >> 8) % 6] : (float)rr_uniform(&seed, -4, 4);
      if (row % 5 == 1 || r % 7 == 0) {
        if (c->dt == SK_FP32) ((float *)x->data)[i] = v;
        else ((uint16_t *)x->data)[i] = c->dt == SK_FP16 ? sk_fp32_to_fp16(v) : sk_fp32_to_bf16(v);
      }
    }
    if (bias && c->e > 2) {
      float nan = NAN;
      if (c->dt == SK_FP32) ((float *)bias->data)[1] = nan;
      else ((uint16_t *)bias->data)[1] = c->dt == SK_FP16 ? sk_fp32_to_fp16(nan) : sk_fp32_to_bf16(nan);
    }
  }
}

/* Compiles the case for each team, runs it on the given inputs, and checks
 * the three outputs against the reference bitwise. */
static void check_case(const moe_case *c, int style, uint64_t seed) {
  sk_graph *g = build_case(c);
  for (int t = 0; t < 3; t++) {
    sk_program *p = NULL;
    sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[t]};
    CHECK_OK(sk_compile(g, &cfg, &p));
    if (!p) break;
    rr_buffers b;
    CHECK(rr_alloc(p, &b, 0, 1, seed));
    fill_inputs(&b, c, style, seed);
    CHECK_MSG(rr_check_program(p, teams[t], &b) == 0,
              "%s T=%lld E=%lld bias=%d k=%lld k_group=%lld groups=%lld mode=%lld renorm=%lld norm=%lld style=%d, "
              "team of %d",
              sk_dtype_name(c->dt), (long long)c->t, (long long)c->e, c->bias, (long long)c->k, (long long)c->k_group,
              (long long)c->group_count, (long long)c->mode, (long long)c->renorm, (long long)c->norm_type, style,
              sk_team_num_cores(teams[t]));
    rr_free(&b);
    sk_program_destroy(p);
  }
  sk_graph_destroy(g);
}

/* A valid random configuration for E: group_count a divisor (with > 2
 * experts per group in mode 1), k_group and k in range (k capped at 80 so
 * the reference's repeated scans stay quick, and so both the insertion and
 * the sorting selection run). */
static moe_case random_case(sk_dtype dt, int64_t t, int64_t e, uint64_t *rng) {
  moe_case c = {.dt = dt, .t = t, .e = e, .eps = -1};
  int64_t divisors[64], nd = 0;
  c.mode = (int64_t)(rr_next(rng) % 2);
  for (int64_t d = 1; d <= e && nd < 64; d++)
    if (e % d == 0 && (c.mode == 0 || e / d > 2)) divisors[nd++] = d;
  if (nd == 0) c.mode = 0, divisors[nd++] = 1;
  c.group_count = divisors[rr_next(rng) % (uint64_t)nd];
  c.k_group = 1 + (int64_t)(rr_next(rng) % (uint64_t)c.group_count);
  int64_t kmax = c.k_group * (e / c.group_count);
  c.k = 1 + (int64_t)(rr_next(rng) % (uint64_t)(kmax < 80 ? kmax : 80));
  c.bias = rr_next(rng) % 2;
  c.renorm = (int64_t)(rr_next(rng) % 2);
  c.norm_type = (int64_t)(rr_next(rng) % 2);
  c.out_flag = (int64_t)(rr_next(rng) % 2);
  c.rsf = rr_next(rng) % 2 ? 0 : 2.5;
  if (rr_next(rng) % 3 == 0) c.eps = 1e-3;
  return c;
}

static void test_against_reference(void) {
  static const int64_t es[] = {8, 16, 64, 256, 257, 2048};
  static const int64_t ts[] = {1, 7, 17, 65, 256};
  uint64_t rng = 1234;
  for (size_t d = 0; d < 3; d++)
    for (size_t ei = 0; ei < 6; ei++)
      for (size_t ti = 0; ti < 5; ti++) {
        moe_case c = random_case(float_dtypes[d], es[ei] == 2048 && ts[ti] > 65 ? 65 : ts[ti], es[ei], &rng);
        check_case(&c, (int)((d + ei + ti) % 3), rr_next(&rng));
      }
}

/* Each branch explicitly: norms x group modes x renorm x bias, and large k
 * (the sorting selection) and k_group (groups sorted too). */
static void test_branches(void) {
  uint64_t seed = 77;
  for (int norm = 0; norm < 2; norm++)
    for (int mode = 0; mode < 3; mode++) /* 2: no groups */
      for (int renorm = 0; renorm < 2; renorm++)
        for (int bias = 0; bias < 2; bias++)
          for (int style = 0; style < 3; style++) {
            moe_case c = {.dt = float_dtypes[(norm + mode + style) % 3], .t = 33, .e = 96, .bias = bias,
                          .k = 6, .k_group = mode == 2 ? 1 : 3, .group_count = mode == 2 ? 1 : 8,
                          .mode = mode == 2 ? 0 : mode, .renorm = renorm, .norm_type = norm, .rsf = 1.5, .eps = -1};
            check_case(&c, style, seed++);
          }
  moe_case big_k = {.dt = SK_FP32, .t = 20, .e = 512, .bias = true, .k = 300, .k_group = 1, .group_count = 1, .eps = -1};
  check_case(&big_k, FILL_TIES, 5);
  check_case(&big_k, FILL_SPECIAL, 6);
  moe_case big_groups = {.dt = SK_BF16, .t = 20, .e = 2048, .bias = true, .k = 100, .k_group = 100,
                         .group_count = 512, .mode = 1, .norm_type = 1, .eps = -1};
  check_case(&big_groups, FILL_TIES, 7);
  check_case(&big_groups, FILL_RANDOM, 8);
  moe_case all = {.dt = SK_FP16, .t = 9, .e = 64, .k = 64, .k_group = 1, .group_count = 1, .eps = -1};
  check_case(&all, FILL_TIES, 9); /* k = E: a full sort */
  moe_case empty = {.dt = SK_FP32, .t = 0, .e = 64, .k = 4, .k_group = 1, .group_count = 1, .eps = -1};
  check_case(&empty, FILL_RANDOM, 10);
}

/* The seed's use and DeepSeek-V3's routing. */
static void test_seed(void) {
  for (int ds = 0; ds < 2; ds++) {
    moe_case c = {.dt = SK_FP16, .t = 256, .e = 256, .bias = true, .k = 8, .k_group = 4, .group_count = 8,
                  .mode = 1, .norm_type = 1, .rsf = ds ? 2.5 : 0, .eps = -1};
    for (int style = 0; style < 3; style++) check_case(&c, style, 100 + (uint64_t)style);
  }
}

/* The floor of the expert scan (the kept groups' tops: mode 0 with k <=
 * k_group, mode 1 with k <= 2 k_group), at those bounds, below them, with k
 * all the kept experts (groups of 1), on group sizes that are no multiple
 * of a vector; mode 1 over 8, 16 and 24 groups of a multiple of 8 (the
 * AVX2 fold of 8 groups at once; 24: kept by the list, not by rank) and
 * the AVX-512 ones (8 to 64 groups of 16 to 64, the pick of <= 16); then
 * every fp16 / bf16 code through the sigmoid table. */
static void test_floor_and_table(void) {
  static const int64_t cfgs[][5] = {/* E, group_count, k_group, k, mode */
                                    {96, 8, 3, 3, 0},  {96, 8, 3, 1, 0}, {96, 8, 3, 6, 1}, {96, 8, 3, 5, 1},
                                    {27, 9, 4, 8, 1},  {45, 5, 2, 4, 1}, {24, 8, 3, 6, 1}, {8, 8, 3, 3, 0},
                                    {256, 8, 4, 8, 1}, {80, 4, 2, 4, 1}, {128, 16, 5, 6, 1}, {384, 24, 7, 9, 1},
                                    /* AVX-512's 8-group scores and pick (groups of a multiple of 16) */
                                    {128, 8, 3, 6, 1}, {512, 16, 4, 8, 1}, {1024, 64, 8, 16, 1}, {256, 8, 4, 4, 0}};
  uint64_t seed = 300;
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
    for (int norm = 0; norm < 2; norm++)
      for (int style = 0; style < 3; style++) {
        moe_case c = {.dt = float_dtypes[(i + (size_t)style) % 3], .t = 37, .e = cfgs[i][0], .bias = (i + norm) % 2,
                      .k = cfgs[i][3], .k_group = cfgs[i][2], .group_count = cfgs[i][1], .mode = cfgs[i][4],
                      .renorm = 1, .norm_type = norm, .eps = -1};
        check_case(&c, style, seed++);
      }
  for (int d = 1; d < 3; d++)
    for (int bias = 0; bias < 2; bias++) {
      moe_case c = {.dt = float_dtypes[d], .t = 256, .e = 256, .bias = bias, .k = 8, .k_group = 4, .group_count = 8,
                    .mode = 1, .norm_type = 1, .eps = -1};
      check_case(&c, FILL_CODES, seed++);
    }
}

/* ---- hand-computed cases ----------------------------------------------------- */

typedef struct run_result {
  float y[64], out[64];
  int32_t idx[64];
} run_result;

/* Runs one row of fp32 x (and bias) through the library on a team of 2 and
 * checks it against the reference too. */
static void run_row(const moe_case *c, const float *x, const float *bias, run_result *r) {
  sk_graph *g = build_case(c);
  sk_program *p = NULL;
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = teams[1]};
  CHECK_OK(sk_compile(g, &cfg, &p));
  sk_graph_destroy(g);
  if (!p) return;
  rr_buffers b;
  CHECK(rr_alloc(p, &b, 0, 1, 1));
  memcpy(find(&b, "x", false)->data, x, (size_t)c->e * sizeof(float));
  if (bias) memcpy(find(&b, "bias", false)->data, bias, (size_t)c->e * sizeof(float));
  CHECK(rr_check_program(p, teams[1], &b) == 0);
  memcpy(r->y, find(&b, "y", true)->data, (size_t)c->k * sizeof(float));
  memcpy(r->idx, find(&b, "expert_idx", true)->data, (size_t)c->k * sizeof(int32_t));
  memcpy(r->out, find(&b, "out", true)->data, (size_t)c->e * sizeof(float));
  rr_free(&b);
  sk_program_destroy(p);
}

#define TOL 1e-6
static bool near(double got, double want) { return fabs(got - want) <= TOL * fabs(want) + 1e-30; }

static void expect(const run_result *r, int64_t k, const int32_t *idx, const double *y) {
  for (int64_t j = 0; j < k; j++) {
    CHECK_MSG(r->idx[j] == idx[j], "idx[%lld] = %d, want %d", (long long)j, r->idx[j], idx[j]);
    CHECK_MSG(near(r->y[j], y[j]), "y[%lld] = %.9g, want %.9g", (long long)j, r->y[j], y[j]);
  }
}

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

static void test_hand_softmax_topk_ties(void) {
  /* Equal values: lower index first; softmax of equal values is 1/8. */
  float x[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  moe_case c = {.dt = SK_FP32, .t = 1, .e = 8, .k = 3, .k_group = 1, .group_count = 1, .eps = -1};
  run_result r;
  run_row(&c, x, NULL, &r);
  expect(&r, 3, (int32_t[]){0, 1, 2}, (double[]){0.125, 0.125, 0.125});
  for (int e = 0; e < 8; e++) CHECK(r.out[e] == 0.125f);
  c.renorm = 1; /* renorm: each of three equal values becomes 1/3 */
  run_row(&c, x, NULL, &r);
  expect(&r, 3, (int32_t[]){0, 1, 2}, (double[]){1 / 3.0, 1 / 3.0, 1 / 3.0});
  /* Descending order with a tie (3 at 1 and 3), softmax values. */
  float x2[8] = {1, 3, 2, 3, 0, -1, 5, 2};
  double z = 0;
  for (int e = 0; e < 8; e++) z += exp(x2[e]);
  c.renorm = 0;
  c.k = 5;
  run_row(&c, x2, NULL, &r);
  expect(&r, 5, (int32_t[]){6, 1, 3, 2, 7}, (double[]){exp(5) / z, exp(3) / z, exp(3) / z, exp(2) / z, exp(2) / z});
  for (int e = 0; e < 8; e++) CHECK(near(r.out[e], exp(x2[e]) / z));
  c.renorm = 1; /* renorm over the five */
  double s = (exp(5) + 2 * exp(3) + 2 * exp(2)) / z;
  run_row(&c, x2, NULL, &r);
  expect(&r, 5, (int32_t[]){6, 1, 3, 2, 7},
         (double[]){exp(5) / z / s, exp(3) / z / s, exp(3) / z / s, exp(2) / z / s, exp(2) / z / s});
}

static void test_hand_sigmoid_bias_scale_eps(void) {
  /* sigmoid renormalizes always; the bias picks experts but y is unbiased. */
  float x[4] = {0, 1, -1, 2}, bias[4] = {0, 0, 3, 0};
  moe_case c = {.dt = SK_FP32, .t = 1, .e = 4, .k = 2, .k_group = 1, .group_count = 1, .norm_type = 1, .eps = -1};
  run_result r;
  run_row(&c, x, NULL, &r);
  double s = sig(2) + sig(1);
  expect(&r, 2, (int32_t[]){3, 1}, (double[]){sig(2) / s, sig(1) / s});
  for (int e = 0; e < 4; e++) CHECK(near(r.out[e], sig(x[e])));
  c.bias = true; /* v = sigmoid(x) + bias: expert 2 first (0.27 + 3) */
  c.rsf = 2.5;
  run_row(&c, x, bias, &r);
  s = sig(-1) + sig(2);
  expect(&r, 2, (int32_t[]){2, 3}, (double[]){2.5 * sig(-1) / s, 2.5 * sig(2) / s});
  /* eps: tiny scores (sigmoid(-88) ~ 6e-39, subnormal) vanish against the
   * default 1e-20, and give exactly 1/2 each with eps = 0; eps = 1 halves
   * 1/2. (sigmoid(-120) is +0: e^120 overflows.) */
  float tiny[4] = {-88, -88, -120, -120};
  c.bias = false;
  c.rsf = 0;
  run_row(&c, tiny, NULL, &r);
  double want = r.out[0] / (double)1e-20f; /* 2 * out[0] + eps rounds to eps */
  expect(&r, 2, (int32_t[]){0, 1}, (double[]){want, want});
  CHECK(r.out[0] > 0 && r.out[0] < 1e-38f && r.y[0] < 1e-17f && r.out[2] == 0);
  c.eps = 0;
  run_row(&c, tiny, NULL, &r);
  CHECK(r.y[0] == 0.5f && r.y[1] == 0.5f);
  float zero[4] = {0, 0, 0, 0};
  c.eps = 1;
  run_row(&c, zero, NULL, &r);
  expect(&r, 2, (int32_t[]){0, 1}, (double[]){0.25, 0.25});
  /* out_flag changes nothing: out is the norm either way (our rule). */
  c.out_flag = 1;
  run_row(&c, x, NULL, &r);
  for (int e = 0; e < 4; e++) CHECK(near(r.out[e], sig(x[e])));
}

static void test_hand_groups(void) {
  /* Mode 0, 4 groups of 2, k_group 1: groups 0 and 2 tie on their max (1):
   * group 0 wins; without groups the two 1s at 0 and 4 would be the top 2. */
  float x[8] = {1, 0, 0.5f, 0.9f, 1, -1, 0.2f, 0.3f};
  moe_case c = {.dt = SK_FP32, .t = 1, .e = 8, .k = 2, .k_group = 1, .group_count = 4, .norm_type = 1, .eps = 0};
  run_result r;
  run_row(&c, x, NULL, &r);
  expect(&r, 2, (int32_t[]){0, 1}, (double[]){sig(1) / (sig(1) + sig(0)), sig(0) / (sig(1) + sig(0))});
  c.group_count = 1;
  run_row(&c, x, NULL, &r);
  expect(&r, 2, (int32_t[]){0, 4}, (double[]){0.5, 0.5});
  /* k_group 2 of 4: groups 0 and 2 (max 1, 1) beat 1 (0.9) and 3 (0.3). */
  c.group_count = 4;
  c.k_group = 2;
  c.k = 4;
  run_row(&c, x, NULL, &r);
  double s = 2 * sig(1) + sig(0) + sig(-1);
  expect(&r, 4, (int32_t[]){0, 4, 1, 5}, (double[]){sig(1) / s, sig(1) / s, sig(0) / s, sig(-1) / s});
  /* Mode 1, 3 groups of 3: group 0 has the largest max (3) but the smallest
   * top-2 sum; groups 1 and 2 tie on their sums ({2, 1} and {1, 2}): group 1
   * wins. Mode 0 picks group 0. */
  float x3[9] = {3, -5, -5, 2, 1, 0, 1, 2, 0};
  moe_case m = {.dt = SK_FP32, .t = 1, .e = 9, .k = 2, .k_group = 1, .group_count = 3, .mode = 1, .norm_type = 1,
                .eps = 0};
  run_row(&m, x3, NULL, &r);
  s = sig(2) + sig(1);
  expect(&r, 2, (int32_t[]){3, 4}, (double[]){sig(2) / s, sig(1) / s});
  m.mode = 0;
  run_row(&m, x3, NULL, &r);
  s = sig(3) + sig(-5);
  expect(&r, 2, (int32_t[]){0, 1}, (double[]){sig(3) / s, sig(-5) / s});
  /* Excluded groups are never selected, even against -inf kept experts:
   * bias -inf on the kept group's experts 1 and 2, k = 3 (tie: 1 first). */
  float bias3[9] = {0, -INFINITY, -INFINITY, 0, 0, 0, 0, 0, 0};
  m.bias = true;
  m.k = 3;
  run_row(&m, x3, bias3, &r);
  s = sig(3) + 2 * sig(-5);
  expect(&r, 3, (int32_t[]){0, 1, 2}, (double[]){sig(3) / s, sig(-5) / s, sig(-5) / s});
}

static void test_hand_fp16_store(void) {
  /* y rounds once to fp16 (RNE) from the fp32 result. */
  uint16_t xh[4] = {sk_fp32_to_fp16(0.0f), sk_fp32_to_fp16(1.0f), sk_fp32_to_fp16(-1.0f), sk_fp32_to_fp16(2.0f)};
  moe_case c = {.dt = SK_FP16, .t = 1, .e = 4, .k = 2, .k_group = 1, .group_count = 1, .norm_type = 1, .eps = 0};
  sk_graph *g = build_case(&c);
  sk_program *p = NULL;
  CHECK_OK(sk_compile(g, NULL, &p));
  sk_graph_destroy(g);
  rr_buffers b;
  CHECK(rr_alloc(p, &b, 0, 1, 1));
  memcpy(find(&b, "x", false)->data, xh, sizeof xh);
  CHECK(rr_check_program(p, NULL, &b) == 0);
  const uint16_t *y = find(&b, "y", true)->data;
  float s2 = 1.0f / (1.0f + expf(-2.0f)), s1 = 1.0f / (1.0f + expf(-1.0f));
  float want = s2 / (s2 + s1);
  CHECK_MSG(fabsf(sk_fp16_to_fp32(y[0]) - want) <= 0x1p-11f, "y[0] = %g, want %g", sk_fp16_to_fp32(y[0]), want);
  CHECK(((const int32_t *)find(&b, "expert_idx", true)->data)[0] == 3);
  rr_free(&b);
  sk_program_destroy(p);
}

/* ---- rejection paths ------------------------------------------------------- */

static sk_status try_case(const moe_case *c) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value outs[3];
  sk_status st = add_case(g, c, outs);
  sk_graph_destroy(g);
  return st;
}

static void test_errors(void) {
  const moe_case ok = {.dt = SK_FP32, .t = 4, .e = 16, .bias = true, .k = 2, .k_group = 2, .group_count = 4,
                       .mode = 1, .eps = -1};
  CHECK_OK(try_case(&ok));
  moe_case c = ok;
  sk_graph *g;
  sk_value v, y[3], b;
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_add_input(g, "x3", SK_FP32, 3, (int64_t[]){2, 4, 16}, &v));
  CHECK_OK(sk_graph_add_input(g, "xi", SK_INT32, 2, (int64_t[]){2, 16}, &b));
  sk_attr k1[] = {SK_ATTR_INT("k", 1)};
  sk_op_desc d = {.op = "moe_gating_topk", .inputs = (sk_op_input[]){{"x", &v, 1}}, .n_inputs = 1, .attrs = k1, .n_attrs = 1};
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 3, NULL), SK_STATUS_INVALID_SHAPE, "moe_gating_topk", "input x", "rank 2",
              "[2, 4, 16]");
  d.inputs = (sk_op_input[]){{"x", &b, 1}};
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 3, NULL), SK_STATUS_INVALID_DTYPE, "moe_gating_topk", "input x", "int32");
  d.n_attrs = 0;
  d.inputs = (sk_op_input[]){{"x", &v, 1}};
  sk_value x2;
  CHECK_OK(sk_graph_add_input(g, "x2", SK_FP32, 2, (int64_t[]){2, 16}, &x2));
  d.inputs = (sk_op_input[]){{"x", &x2, 1}};
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 3, NULL), SK_STATUS_INVALID_ATTRIBUTE, "moe_gating_topk", "k is required");
  d.attrs = k1;
  d.n_attrs = 1;
  CHECK_OK(sk_graph_add_op(g, &d, y, 3, NULL));
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 2, NULL), SK_STATUS_INVALID_ARGUMENT, "3 outputs");
  sk_graph_destroy(g);

  c.e = 2049, c.group_count = 1, c.k_group = 1, c.mode = 0, c.bias = false;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_SHAPE, "moe_gating_topk", "input x", "at most 2048", "2049");
  c = ok;
  c.dt = SK_FP16;
  CHECK_OK(try_case(&c));
  /* bias: wrong shape, wrong dtype */
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_add_input(g, "x", SK_FP16, 2, (int64_t[]){4, 16}, &v));
  CHECK_OK(sk_graph_add_input(g, "b17", SK_FP16, 1, (int64_t[]){17}, &b));
  sk_value b32, b2d;
  CHECK_OK(sk_graph_add_input(g, "b32", SK_FP32, 1, (int64_t[]){16}, &b32));
  CHECK_OK(sk_graph_add_input(g, "b2d", SK_FP16, 2, (int64_t[]){1, 16}, &b2d));
  sk_op_input in[] = {{"x", &v, 1}, {"bias", &b, 1}};
  d.inputs = in;
  d.n_inputs = 2;
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 3, NULL), SK_STATUS_INVALID_SHAPE, "moe_gating_topk", "input bias", "[16]",
              "[17]");
  in[1].values = &b2d;
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 3, NULL), SK_STATUS_INVALID_SHAPE, "input bias", "[16]", "[1, 16]");
  in[1].values = &b32;
  CHECK_FAILS(sk_graph_add_op(g, &d, y, 3, NULL), SK_STATUS_INVALID_DTYPE, "input bias", "fp16", "fp32");
  sk_graph_destroy(g);

  /* attributes */
  c = ok, c.group_count = 0;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "group_count", "expected 1..", "got 0");
  c = ok, c.group_count = 3;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "group_count", "divisor of E = 16", "got 3");
  c = ok, c.group_count = 8; /* 2 experts per group: mode 1 refused (the spec's rule, literally) */
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "group_select_mode", "more than 2", "got 2");
  c.mode = 0;
  CHECK_OK(try_case(&c));
  c = ok, c.k_group = 0; /* below the schema's range */
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "k_group", "expected 1..", "got 0");
  c.k_group = 5;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "k_group", "1..4", "got 5");
  c = ok, c.k = 0;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "attribute k:", "expected 1..", "got 0");
  c.k = 9;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "attribute k:", "1..8", "got 9");
  c.k = 8;
  CHECK_OK(try_case(&c));
  const char *flags[] = {"norm_type", "group_select_mode", "renorm", "out_flag"};
  for (int f = 0; f < 4; f++)
    for (int64_t bad = -1; bad <= 2; bad += 3) {
      c = ok;
      int64_t *field = f == 0 ? &c.norm_type : f == 1 ? &c.mode : f == 2 ? &c.renorm : &c.out_flag;
      *field = bad;
      char got[16];
      snprintf(got, sizeof got, "got %lld", (long long)bad);
      CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "moe_gating_topk", flags[f], "expected 0..1", got);
    }
  c = ok, c.eps = -1e-3;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "eps", ">= 0", "-0.001");
  c.eps = NAN;
  CHECK_FAILS(try_case(&c), SK_STATUS_INVALID_ATTRIBUTE, "eps", "nan");
  c.eps = 0;
  CHECK_OK(try_case(&c));
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
      TEST_CASE(test_against_reference),  TEST_CASE(test_branches),
      TEST_CASE(test_seed),                TEST_CASE(test_floor_and_table),
      TEST_CASE(test_hand_softmax_topk_ties),
      TEST_CASE(test_hand_sigmoid_bias_scale_eps), TEST_CASE(test_hand_groups),
      TEST_CASE(test_hand_fp16_store),     TEST_CASE(test_errors),
  };
  int rc = harness_run(cases, sizeof cases / sizeof cases[0]);
  for (int t = 0; t < 3; t++) sk_team_destroy(teams[t]);
  return rc;
}

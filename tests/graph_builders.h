/* Graph-building shorthands and the mixed model shared by the super-kernel
 * and JIT tests. Header-only on purpose: CHECK counts into the including
 * test's harness (harness.h keeps its counters per file). */
#ifndef SK_TEST_GRAPH_BUILDERS_H
#define SK_TEST_GRAPH_BUILDERS_H

#include "harness.h"
#include "reference_runner.h"

static inline sk_value input(sk_graph *g, const char *name, sk_dtype dt, int rank, const int64_t *shape) {
  sk_value v = SK_VALUE_NONE;
  CHECK_OK(sk_graph_add_input(g, name, dt, rank, shape, &v));
  return v;
}

static inline sk_value op(sk_graph *g, const char *type, const char *name, const sk_op_input *in, size_t n_in,
                   const sk_attr *at, size_t n_at, sk_value *outs, size_t max_outs) {
  sk_op_desc d = {.op = type, .name = name, .inputs = in, .n_inputs = n_in, .attrs = at, .n_attrs = n_at};
  CHECK_OK(sk_graph_add_op(g, &d, outs, max_outs, NULL));
  return outs[0];
}

static inline sk_value unary(sk_graph *g, const char *type, const char *name, sk_value x) {
  sk_op_input in[] = {{"x", &x, 1}};
  sk_value y;
  return op(g, type, name, in, 1, NULL, 0, &y, 1);
}

static inline sk_value binary(sk_graph *g, const char *type, const char *name, sk_value x, sk_value y) {
  sk_op_input in[] = {{"x", &x, 1}, {"y", &y, 1}};
  sk_value z;
  return op(g, type, name, in, 2, NULL, 0, &z, 1);
}


/* The binding tests' model: inputs x, w fp32 [n]; y = x * x + x inside
 * scope "s" and z = x * w outside it; outputs y, z. */
static inline sk_graph *bind_model(int64_t n) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP32, 1, (int64_t[]){n});
  sk_value w = input(g, "w", SK_FP32, 1, (int64_t[]){n});
  CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  sk_value y = binary(g, "add", "y", unary(g, "square", "sq", x), x);
  CHECK_OK(sk_graph_end_scope(g));
  sk_value z = binary(g, "mul", "z", x, w);
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  return g;
}

/* A model mixing cube and vector sub-kernels inside a scope, ops outside it,
 * list outputs, views inside the scope, and a second scope. */
static inline sk_graph *mixed_model(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x0 = input(g, "x0", SK_FP16, 2, (int64_t[]){64, 128}), x1 = input(g, "x1", SK_FP16, 2, (int64_t[]){200, 96});
  sk_value w0 = input(g, "w0", SK_FP16, 2, (int64_t[]){128, 64}), w1 = input(g, "w1", SK_FP16, 2, (int64_t[]){96, 80});
  sk_value w2 = input(g, "w2", SK_FP16, 2, (int64_t[]){64, 48}), w3 = input(g, "w3", SK_FP16, 2, (int64_t[]){80, 80});
  sk_value e = input(g, "e", SK_FP32, 2, (int64_t[]){200, 80});
  CHECK_OK(sk_graph_begin_scope(g, "sk1", NULL));
  sk_value xs[2] = {x0, x1}, ws[2] = {w0, w1}, g1[2], g2[2];
  sk_op_input in1[] = {{"x", xs, 2}, {"weight", ws, 2}};
  op(g, "grouped_matmul", "gmm1", in1, 2, NULL, 0, g1, 2);
  sk_value ws2[2] = {w2, w3};
  sk_op_input in2[] = {{"x", g1, 2}, {"weight", ws2, 2}};
  op(g, "grouped_matmul", "gmm2", in2, 2, NULL, 0, g2, 2);
  sk_op_input cin[] = {{"x", &g2[1], 1}};
  sk_attr to32[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value c, r;
  op(g, "cast", "cast", cin, 1, to32, 1, &c, 1);
  sk_op_input rin[] = {{"x", &c, 1}};
  sk_attr flat[] = {SK_ATTR_INTS("shape", ((int64_t[]){-1}), 1)};
  op(g, "reshape", "flat", rin, 1, flat, 1, &r, 1);
  sk_value sq = unary(g, "square", "square", r);
  CHECK_OK(sk_graph_end_scope(g));
  sk_value sq2 = unary(g, "square", "outside", sq);
  CHECK_OK(sk_graph_begin_scope(g, "sk2", NULL));
  sk_op_input rin2[] = {{"x", &sq2, 1}};
  sk_attr back[] = {SK_ATTR_INTS("shape", ((int64_t[]){200, 80}), 2)};
  sk_value r2;
  op(g, "reshape", "unflat", rin2, 1, back, 1, &r2, 1);
  sk_value sum = binary(g, "add", "add", r2, e);
  sk_value prod = binary(g, "mul", "mul", sum, r2);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, prod, "prod"));
  CHECK_OK(sk_graph_mark_output(g, g2[0], "g2_0"));
  CHECK_OK(sk_graph_mark_output(g, sq, "sq"));
  return g;
}

/* The feed-sync-all contract for a graph whose scope holds one barrier-using
 * node with a single block: refused on two cores without the option (naming
 * the node and the option), planned with complement tasks with it, and then
 * equal to eager under every early-start value on two and three cores. */
static inline void check_feed_sync_all(sk_graph *g, sk_team *two, sk_team *three, const char *node, int barriers,
                                       uint64_t seed) {
  sk_compile_config cfg = {.struct_size = sizeof cfg, .team = two, .executor = SK_EXECUTOR_INTERP};
  sk_program *p = NULL;
  CHECK_FAILS(sk_compile(g, &cfg, &p), SK_STATUS_INVALID_STATE, node, "team barrier", "1 blocks for 2 cores",
              "feed-sync-all=1");
  cfg.default_options = "feed-sync-all=1";
  CHECK_OK(sk_compile(g, &cfg, &p));
  if (p) {
    char *text = NULL, want[128];
    snprintf(want, sizeof want, "complement %s's barrier x%d", node, barriers);
    CHECK_OK(sk_program_describe(p, &text));
    CHECK_MSG(text && strstr(text, want), "the plan lacks \"%s\"", want);
    sk_free(text);
    sk_program_destroy(p);
  }
  for (int e = 0; e < 3; e++) {
    char options[64];
    snprintf(options, sizeof options, "feed-sync-all=1:early-start=%d", e);
    CHECK_MSG(rr_fused_vs_eager(g, two, SK_EXECUTOR_INTERP, options, seed) == 0, "%s", options);
    CHECK_MSG(rr_fused_vs_eager(g, three, SK_EXECUTOR_INTERP, options, seed) == 0, "%s, 3 cores", options);
  }
}

/* The flags core `core` waits for before sub-kernel `sub` in a program's
 * description (sk_program_describe: "  core 1: wait for flags 0 2 (before
 * sub)"), into flags[0..max); returns how many (all waits added up). */
static inline int plan_wait_flags(const char *text, int core, const char *sub, int *flags, int max) {
  char head[32], tail[96];
  snprintf(head, sizeof head, "  core %d: wait for flag", core);
  snprintf(tail, sizeof tail, " (before %s)\n", sub);
  int n = 0;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line + 1) : strlen(line);
    size_t tl = strlen(tail);
    if (strncmp(line, head, strlen(head)) == 0 && len >= tl && strncmp(line + len - tl, tail, tl) == 0) {
      const char *p = line + strlen(head);
      while (*p && *p != ' ') p++; /* "flag" or "flags" */
      while (p < line + len - tl) {
        char *next;
        long f = strtol(p, &next, 10);
        if (next == p) break;
        if (n < max) flags[n] = (int)f;
        n++;
        p = next;
      }
    }
    line = end ? end + 1 : NULL;
  }
  return n;
}

/* The flag that core `core`'s run of block `block` of `sub` signals, or -1. */
static inline int plan_block_flag(const char *text, int core, const char *sub, int block) {
  char want[128];
  snprintf(want, sizeof want, "  core %d: run %s block %d, signal flag ", core, sub, block);
  const char *at = strstr(text, want);
  return at ? atoi(at + strlen(want)) : -1;
}

#endif

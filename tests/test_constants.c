/* Graph constants (sk_graph_add_constant): copied vs borrowed, packed at
 * compile (grouped_matmul weights, reported by sk_program_describe), the
 * same bits as the weights given as inputs on every executor, constants
 * as outputs and behind views, and the errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "program/program.h"
#include "kernels/gemm/gemm.h"
#include "graph_builders.h"

#define M 37
#define K 64
#define N 80

static uint16_t x_data[M * K], w_data[K * N], b_data[N];

/* y = grouped_matmul(x, w, bias b) in a scope; w and b constants (with
 * flags) or inputs (flags < 0). */
static sk_graph *gmm_graph(int flags) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value x = input(g, "x", SK_FP16, 2, (int64_t[]){M, K}), w, b;
  if (flags < 0) {
    w = input(g, "w", SK_FP16, 2, (int64_t[]){K, N});
    b = input(g, "b", SK_FP16, 1, (int64_t[]){N});
  } else {
    CHECK_OK(sk_graph_add_constant(g, "w", SK_FP16, 2, (int64_t[]){K, N}, w_data, (sk_constant_flags)flags, &w));
    CHECK_OK(sk_graph_add_constant(g, "b", SK_FP16, 1, (int64_t[]){N}, b_data, (sk_constant_flags)flags, &b));
  }
  CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  sk_op_input in[] = {{"x", &x, 1}, {"weight", &w, 1}, {"bias", &b, 1}};
  sk_value y;
  op(g, "grouped_matmul", "gmm", in, 3, NULL, 0, &y, 1);
  sk_value z = unary(g, "square", "sq", y);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, z, "z"));
  return g;
}

static void fill_data(uint32_t salt) {
  uint64_t seed = 99 + salt;
  rr_fill(x_data, SK_FP16, M * K, -1, 1, &seed);
  rr_fill(w_data, SK_FP16, K * N, -1, 1, &seed);
  rr_fill(b_data, SK_FP16, N, -1, 1, &seed);
}

/* z of the graph with weights as inputs (the reference behaviour). */
static void run_with_inputs(uint16_t *z) {
  sk_graph *g = gmm_graph(-1);
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_EAGER};
  sk_program *p;
  CHECK_OK(sk_compile(g, &cfg, &p));
  sk_buffer in[] = {{"x", x_data, sizeof x_data}, {"w", w_data, sizeof w_data}, {"b", b_data, sizeof b_data}};
  sk_buffer out = {"z", z, M * N * 2};
  CHECK_OK(sk_program_run(p, NULL, in, 3, &out, 1));
  sk_program_destroy(p);
  sk_graph_destroy(g);
}

static void test_constants_match_inputs_on_every_executor(void) {
  static uint16_t want[M * N], got[M * N];
  fill_data(0);
  run_with_inputs(want);
  sk_team *team;
  sk_team_config tc = {.struct_size = sizeof tc, .num_cores = 2, .pin_threads = -1};
  CHECK_OK(sk_team_create(&tc, &team));
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT,
                                          SK_EXECUTOR_REFERENCE};
  for (int flags = 0; flags < 2; flags++)
    for (size_t e = 0; e < 4; e++) {
      sk_graph *g = gmm_graph(flags);
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executors[e]};
      sk_program *p;
      CHECK_OK(sk_compile(g, &cfg, &p));
      sk_graph_destroy(g); /* copied and borrowed constants outlive the graph */
      CHECK(sk_program_num_inputs(p) == 1); /* constants are not inputs */
      char *text = NULL;
      CHECK_OK(sk_program_describe(p, &text));
      CHECK_MSG(text && strstr(text, "constants: 2 (10400 bytes); packed at compile: "),
                "describe: %s", text ? text : "(null)");
      CHECK_MSG(text && !strstr(text, "packed at compile: 0 bytes"), "the weights were not packed: %s", text);
      /* The kernel the node runs, and the ISA, are named (the reference
       * executor runs no kernel). */
      char kernel[128];
      snprintf(kernel, sizeof kernel, ", kernel %s", sk__gemm_kernel_name(sk__cpu_isa(), SK_NUMERICS_DEFAULT, SK_FP16, SK_FP16));
      CHECK_MSG(text && (executors[e] == SK_EXECUTOR_REFERENCE || strstr(text, kernel)) &&
                    strstr(text, sk__isa_name(sk__cpu_isa())),
                "describe lacks \"%s\": %s", kernel, text ? text : "(null)");
      sk_free(text);
      sk_program_stats stats = {.struct_size = sizeof stats};
      CHECK_OK(sk_program_get_stats(p, &stats));
      CHECK(stats.n_constants == 2 && stats.constant_bytes == 10400 && stats.n_inputs == 1 && stats.n_outputs == 1);
      /* fp16 weights stay 16-bit in their panels: their bytes (N is whole
       * panels), a header, and not the twice as many of fp32 panels */
      CHECK_MSG(stats.packed_bytes >= K * N * 2 && stats.packed_bytes < 2 * K * N * 2, "packed %zu bytes",
                stats.packed_bytes);
      CHECK(stats.executor == executors[e]);
      CHECK(stats.n_super_kernels == (executors[e] == SK_EXECUTOR_INTERP || executors[e] == SK_EXECUTOR_JIT));
      CHECK(stats.n_jit_compiled == (executors[e] == SK_EXECUTOR_JIT));
      memset(got, 0, sizeof got);
      sk_buffer in = {"x", x_data, sizeof x_data}, out = {"z", got, sizeof got};
      sk_team *t = executors[e] == SK_EXECUTOR_REFERENCE ? NULL : team;
      for (int rep = 0; rep < 2; rep++) {
        CHECK_OK(sk_program_run(p, t, &in, 1, &out, 1));
        CHECK_MSG(memcmp(got, want, sizeof got) == 0, "flags %d executor %d: differs from weights as inputs", flags,
                  (int)executors[e]);
      }
      sk_program_destroy(p);
    }
  sk_team_destroy(team);
}

/* A copied constant is immune to later changes of the caller's buffer; a
 * borrowed one reads the buffer as it is when compiled. */
static void test_copied_and_borrowed(void) {
  static uint16_t want[M * N], got[M * N], saved_w[K * N];
  fill_data(1);
  run_with_inputs(want);
  memcpy(saved_w, w_data, sizeof w_data);
  sk_graph *copied = gmm_graph(SK_CONSTANT_COPY), *borrowed = gmm_graph(SK_CONSTANT_BORROW);
  for (int i = 0; i < K * N; i++) w_data[i] ^= 0x0100; /* changed after add_constant, before compile */
  sk_program *pc, *pb;
  sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = SK_EXECUTOR_EAGER};
  CHECK_OK(sk_compile(copied, &cfg, &pc));
  CHECK_OK(sk_compile(borrowed, &cfg, &pb));
  sk_buffer in = {"x", x_data, sizeof x_data}, out = {"z", got, sizeof got};
  CHECK_OK(sk_program_run(pc, NULL, &in, 1, &out, 1));
  CHECK_MSG(memcmp(got, want, sizeof got) == 0, "a copied constant followed its caller's buffer");
  static uint16_t changed[M * N];
  run_with_inputs(changed); /* with the changed weights */
  CHECK_OK(sk_program_run(pb, NULL, &in, 1, &out, 1));
  CHECK_MSG(memcmp(got, changed, sizeof got) == 0, "a borrowed constant did not read its caller's buffer");
  CHECK(memcmp(want, changed, sizeof want) != 0);
  memcpy(w_data, saved_w, sizeof w_data);
  sk_program_destroy(pc);
  sk_program_destroy(pb);
  sk_graph_destroy(copied);
  sk_graph_destroy(borrowed);
}

/* A constant marked as an output, and one behind a view, with no packing op. */
static void test_constant_outputs_and_views(void) {
  static const float c[6] = {1, 2, 3, 4, 5, 6};
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value k, x = input(g, "x", SK_FP32, 2, (int64_t[]){3, 2});
  CHECK_OK(sk_graph_add_constant(g, "k", SK_FP32, 1, (int64_t[]){6}, c, SK_CONSTANT_COPY, &k));
  int64_t shape[] = {3, 2};
  sk_attr a = SK_ATTR_INTS("shape", shape, 2);
  sk_op_input in[] = {{"x", &k, 1}};
  sk_value kv;
  op(g, "reshape", "kv", in, 1, &a, 1, &kv, 1);
  sk_value y = binary(g, "add", "y", x, kv);
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  CHECK_OK(sk_graph_mark_output(g, k, "k_out"));
  sk_program *p;
  CHECK_OK(sk_compile(g, NULL, &p));
  sk_graph_destroy(g);
  float xs[6] = {10, 20, 30, 40, 50, 60}, ys[6], ks[6];
  sk_buffer ib = {"x", xs, sizeof xs};
  sk_buffer ob[] = {{"y", ys, sizeof ys}, {"k_out", ks, sizeof ks}};
  CHECK_OK(sk_program_run(p, NULL, &ib, 1, ob, 2));
  for (int i = 0; i < 6; i++) CHECK(ys[i] == xs[i] + c[i] && ks[i] == c[i]);
  sk_program_destroy(p);
}

/* The int8 paths pack too: quant_matmul's x2 and int8 grouped_matmul's
 * weights, with the same results as unpacked. */
static void test_int8_weights_are_packed(void) {
  static int8_t a[33 * 96], w[96 * 40];
  static int32_t want[33 * 40], got[33 * 40];
  uint64_t seed = 5;
  rr_fill(a, SK_INT8, sizeof a, -128, 128, &seed);
  rr_fill(w, SK_INT8, sizeof w, -128, 128, &seed);
  for (int use_gmm = 0; use_gmm < 2; use_gmm++)
    for (int constant = 1; constant >= 0; constant--) {
      sk_graph *g;
      CHECK_OK(sk_graph_create(&g));
      sk_value x = input(g, "a", SK_INT8, 2, (int64_t[]){33, 96}), wv, y;
      if (constant) CHECK_OK(sk_graph_add_constant(g, "w", SK_INT8, 2, (int64_t[]){96, 40}, w, SK_CONSTANT_BORROW, &wv));
      else wv = input(g, "w", SK_INT8, 2, (int64_t[]){96, 40});
      sk_attr i32 = SK_ATTR_INT("output_dtype", SK_INT32);
      if (use_gmm) {
        sk_op_input in[] = {{"x", &x, 1}, {"weight", &wv, 1}};
        op(g, "grouped_matmul", "gmm", in, 2, NULL, 0, &y, 1);
      } else {
        sk_op_input in[] = {{"x1", &x, 1}, {"x2", &wv, 1}};
        op(g, "quant_matmul", "qmm", in, 2, &i32, 1, &y, 1);
      }
      CHECK_OK(sk_graph_mark_output(g, y, "y"));
      sk_program *p;
      CHECK_OK(sk_compile(g, NULL, &p));
      char *text = NULL;
      CHECK_OK(sk_program_describe(p, &text));
      CHECK_MSG(!constant || (text && !strstr(text, "packed at compile: 0 bytes")), "not packed: %s", text);
      sk_free(text);
      sk_buffer in[] = {{"a", a, sizeof a}, {"w", w, sizeof w}};
      sk_buffer out = {"y", constant ? got : want, sizeof got};
      CHECK_OK(sk_program_run(p, NULL, in, constant ? 1 : 2, &out, 1));
      if (!constant) CHECK_MSG(memcmp(got, want, sizeof got) == 0, "%s: packed int8 weights differ", use_gmm ? "gmm" : "qmm");
      sk_program_destroy(p);
      sk_graph_destroy(g);
    }
}

/* Packed weights a kernel streams: a large pack starts on a 2 MiB
 * boundary (the huge-page request, sk__alloc_streamed), a small one is
 * ordinary 64-byte-aligned memory; both compute the same bits. */
static void test_large_packs_are_huge_page_aligned(void) {
  for (int big = 0; big < 2; big++) {
    const int64_t k = big ? 1024 : 64, n = big ? 2048 : 64; /* 8 MiB or 16 KiB of fp32 */
    size_t wb = (size_t)(k * n) * 4;
    float *w = malloc(wb), xs[2 * 1024], want[2 * 2048], got[2 * 2048];
    uint64_t seed = 11;
    rr_fill(w, SK_FP32, (size_t)(k * n), -1, 1, &seed);
    rr_fill(xs, SK_FP32, (size_t)(2 * k), -1, 1, &seed);
    for (int constant = 0; constant < 2; constant++) {
      sk_graph *g;
      CHECK_OK(sk_graph_create(&g));
      sk_value x = input(g, "x", SK_FP32, 2, (int64_t[]){2, k}), wv, y;
      if (constant) CHECK_OK(sk_graph_add_constant(g, "w", SK_FP32, 2, (int64_t[]){k, n}, w, SK_CONSTANT_BORROW, &wv));
      else wv = input(g, "w", SK_FP32, 2, (int64_t[]){k, n});
      sk_op_input in[] = {{"x", &x, 1}, {"weight", &wv, 1}};
      op(g, "grouped_matmul", "gmm", in, 2, NULL, 0, &y, 1);
      CHECK_OK(sk_graph_mark_output(g, y, "y"));
      sk_program *p;
      CHECK_OK(sk_compile(g, NULL, &p));
      const void *packed = NULL;
      for (size_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].packed) packed = p->nodes[i].packed;
      if (constant) {
        uintptr_t at = (uintptr_t)packed, want_align = big ? (uintptr_t)2 << 20 : 64;
        CHECK_MSG(packed && at % want_align == 0, "%s pack at %p, not %zu-aligned", big ? "8 MiB" : "16 KiB", packed,
                  (size_t)want_align);
      }
      sk_buffer bufs[] = {{"x", xs, (size_t)(2 * k) * 4}, {"w", w, wb}};
      sk_buffer out = {"y", constant ? got : want, (size_t)(2 * n) * 4};
      CHECK_OK(sk_program_run(p, NULL, bufs, constant ? 1 : 2, &out, 1));
      if (constant) CHECK_MSG(memcmp(got, want, (size_t)(2 * n) * 4) == 0, "packed weights differ (big %d)", big);
      sk_program_destroy(p);
      sk_graph_destroy(g);
    }
    free(w);
  }
}

static void test_errors(void) {
  sk_program_stats bad = {.struct_size = 1};
  CHECK_FAILS(sk_program_get_stats(NULL, &bad), SK_STATUS_INVALID_ARGUMENT, "program is NULL");
  /* An older caller's shorter struct gets what fits and nothing past it. */
  sk_graph *one;
  CHECK_OK(sk_graph_create(&one));
  sk_value in = input(one, "x", SK_FP32, 1, (int64_t[]){4});
  CHECK_OK(sk_graph_mark_output(one, unary(one, "square", "sq", in), "y"));
  sk_program *prog;
  CHECK_OK(sk_compile(one, NULL, &prog));
  sk_graph_destroy(one);
  struct {
    sk_program_stats stats;
    size_t canary;
  } short_stats;
  memset(&short_stats, 0x5A, sizeof short_stats);
  short_stats.stats.struct_size = offsetof(sk_program_stats, n_constants);
  CHECK_OK(sk_program_get_stats(prog, &short_stats.stats));
  CHECK(short_stats.stats.n_inputs == 1 && short_stats.stats.n_outputs == 1);
  unsigned char past[sizeof short_stats.stats - offsetof(sk_program_stats, n_constants)];
  memset(past, 0x5A, sizeof past);
  CHECK(memcmp((char *)&short_stats.stats + offsetof(sk_program_stats, n_constants), past, sizeof past) == 0);
  bad.struct_size = sizeof bad + 8; /* a newer header */
  CHECK_FAILS(sk_program_get_stats(prog, &bad), SK_STATUS_INVALID_ARGUMENT, "struct_size", "expected");
  sk_program_destroy(prog);
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  sk_value v;
  float d[4] = {0};
  input(g, "x", SK_FP32, 1, (int64_t[]){4});
  CHECK_FAILS(sk_graph_add_constant(g, "x", SK_FP32, 1, (int64_t[]){4}, d, SK_CONSTANT_COPY, &v),
              SK_STATUS_INVALID_ARGUMENT, "'x'", "already an input or constant");
  CHECK_OK(sk_graph_add_constant(g, "c", SK_FP32, 1, (int64_t[]){4}, d, SK_CONSTANT_COPY, &v));
  CHECK_FAILS(sk_graph_add_input(g, "c", SK_FP32, 1, (int64_t[]){4}, &v), SK_STATUS_INVALID_ARGUMENT, "'c'");
  CHECK_FAILS(sk_graph_add_constant(g, "n", SK_FP32, 1, (int64_t[]){4}, NULL, SK_CONSTANT_COPY, &v),
              SK_STATUS_INVALID_ARGUMENT, "'n'", "data is NULL");
  CHECK_OK(sk_graph_add_constant(g, "empty", SK_FP32, 1, (int64_t[]){0}, NULL, SK_CONSTANT_BORROW, &v));
  CHECK_FAILS(sk_graph_add_constant(g, "f", SK_FP32, 1, (int64_t[]){4}, d, (sk_constant_flags)5, &v),
              SK_STATUS_INVALID_ARGUMENT, "'f'", "flags 5");
  CHECK_FAILS(sk_graph_add_constant(g, "t", (sk_dtype)99, 1, (int64_t[]){4}, d, SK_CONSTANT_COPY, &v),
              SK_STATUS_INVALID_DTYPE, "'t'", "99");
  CHECK_FAILS(sk_graph_add_constant(g, "s", SK_FP32, 1, (int64_t[]){-4}, d, SK_CONSTANT_COPY, &v),
              SK_STATUS_INVALID_SHAPE, "'s'");
  CHECK_FAILS(sk_graph_add_constant(g, "", SK_FP32, 1, (int64_t[]){4}, d, SK_CONSTANT_COPY, &v),
              SK_STATUS_INVALID_ARGUMENT, "empty constant name");
  CHECK_FAILS(sk_graph_add_constant(NULL, "z", SK_FP32, 1, (int64_t[]){4}, d, SK_CONSTANT_COPY, &v),
              SK_STATUS_INVALID_ARGUMENT, "graph is NULL");
  sk_graph_destroy(g);
}

TEST_MAIN(TEST_CASE(test_constants_match_inputs_on_every_executor), TEST_CASE(test_copied_and_borrowed),
          TEST_CASE(test_constant_outputs_and_views), TEST_CASE(test_int8_weights_are_packed),
          TEST_CASE(test_large_packs_are_huge_page_aligned), TEST_CASE(test_errors))

/* sk_program_describe names each node's kernels for the ISA the program was
 * compiled with (op.h: kernel_name, sk__node_io.isa): the vector ops with
 * the path their kernel families take on this rung, in their own launches
 * (eager) and as sub-kernels of a super kernel (interp). Run once per ISA
 * variant, so each rung's name is checked where the CPU has it. */
#include <string.h>

#include "core/cpu.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "kernels/moe/moe_select.h"
#include "graph_builders.h"

/* The path the families' tables take for isa: one name for all three, as
 * the ops' kernel names (SK__VECTOR_KERNEL_NAME) assume. */
static const char *path_name(sk__isa isa) {
  const char *name = sk__convert_config_for(isa)->name;
  CHECK_MSG(strcmp(sk__activation_config_for(isa)->name, name) == 0 &&
                strcmp(sk__moe_select_config_for(isa)->name, name) == 0,
            "conversion takes %s, activation %s, selection %s", name, sk__activation_config_for(isa)->name,
            sk__moe_select_config_for(isa)->name);
  return name;
}

/* x fp16 [4, 64] -> rms_norm -> swiglu -> cast to fp32, in scope "s". */
static sk_graph *vector_graph(void) {
  sk_graph *g;
  CHECK_OK(sk_graph_create(&g));
  CHECK_OK(sk_graph_begin_scope(g, "s", NULL));
  sk_value x = input(g, "x", SK_FP16, 2, (const int64_t[]){4, 64});
  sk_value gamma = input(g, "gamma", SK_FP16, 1, (const int64_t[]){64});
  sk_op_input rin[] = {{"x", &x, 1}, {"gamma", &gamma, 1}};
  sk_value r[2]; /* y and rstd */
  op(g, "rms_norm", "norm", rin, 2, NULL, 0, r, 2);
  sk_value s = unary(g, "swiglu", "act", r[0]);
  sk_op_input cin[] = {{"x", &s, 1}};
  sk_attr to[] = {SK_ATTR_INT("dtype", SK_FP32)};
  sk_value y;
  op(g, "cast", "widen", cin, 1, to, 1, &y, 1);
  CHECK_OK(sk_graph_end_scope(g));
  CHECK_OK(sk_graph_mark_output(g, y, "y"));
  return g;
}

static void test_vector_ops_name_their_kernels(void) {
  const char *path = path_name(sk__cpu_isa());
  static const struct {
    const char *node, *what;
  } want[] = {{"norm", "dtype conversion"}, {"act", "silu, dtype conversion"}, {"widen", "dtype conversion"}};
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP};
  for (size_t e = 0; e < 2; e++) {
    sk_graph *g = vector_graph();
    sk_compile_config cfg = {.struct_size = sizeof cfg, .executor = executors[e]};
    sk_program *p = NULL;
    CHECK_OK(sk_compile(g, &cfg, &p));
    sk_graph_destroy(g);
    char *text = NULL;
    if (p) CHECK_OK(sk_program_describe(p, &text));
    for (size_t i = 0; text && i < sizeof want / sizeof want[0]; i++) {
      /* The node's line, then its kernel on that line. */
      const char *line = strstr(text, want[i].node);
      char kernel[96];
      snprintf(kernel, sizeof kernel, ", kernel %s (%s)", want[i].what, path);
      const char *end = line ? strchr(line, '\n') : NULL;
      const char *at = line ? strstr(line, kernel) : NULL;
      CHECK_MSG(at && (!end || at < end), "executor %d: %s lacks \"%s\":\n%s", (int)executors[e], want[i].node, kernel,
                text);
    }
    sk_free(text);
    sk_program_destroy(p);
  }
}

TEST_MAIN(TEST_CASE(test_vector_ops_name_their_kernels))

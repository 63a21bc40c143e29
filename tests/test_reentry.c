/* Public calls from inside a running block: a custom kernel that runs,
 * binds or profiles its own program, runs a context of it, or launches the
 * fused kernel it is part of. Each of these once waited for a lock its own
 * launch held and hung; each now returns SK_STATUS_INVALID_STATE with a
 * message, the outer run completes with its correct output, and
 * sk_last_error() after that successful run holds nothing from the nested
 * call. Eager, interpreted and JIT programs, on 1 and 2 cores. */
#include <stdatomic.h>

#include "graph_builders.h"

#define N 1024
#define BLOCKS 4

enum { CALL_RUN, CALL_RUN_BOUND, CALL_BIND, CALL_CTX_RUN, CALL_WRITE_PROFILE, CALL_FUSED_LAUNCH, N_CALLS };
static const char *const CALL_NAMES[N_CALLS] = {"sk_program_run",     "sk_program_run_bound",     "sk_program_bind",
                                                "sk_run_context_run", "sk_program_write_profile", "sk_fused_kernel_launch"};

static float x_data[N], y_data[N], scratch[N], scratch_out[N];

/* What the kernel's block 0 calls, and what came back. */
static struct {
  int call;
  sk_program *self;
  sk_run_context *ctx;
  sk_fused_kernel *fk;
  sk_team *team;
  atomic_int calls, wrong;
  char msg[512];
} g;

static void nested_call(void) {
  sk_status st = SK_STATUS_OK;
  /* Valid arguments: only being inside a block is wrong. */
  sk_buffer in[] = {{"x", scratch, sizeof scratch}}, out[] = {{"y", scratch_out, sizeof scratch_out}};
  void *args[] = {scratch, scratch_out};
  void *const *lists[] = {args};
  switch (g.call) {
    case CALL_RUN: st = sk_program_run(g.self, g.team, in, 1, out, 1); break;
    case CALL_RUN_BOUND: st = sk_program_run_bound(g.self, g.team); break;
    case CALL_BIND: st = sk_program_bind(g.self, SK_IO_INPUT, 0, scratch, sizeof scratch); break;
    case CALL_CTX_RUN: st = sk_run_context_run(g.ctx, g.team); break;
    case CALL_WRITE_PROFILE: st = sk_program_write_profile(g.self, "reentry_profile"); break;
    case CALL_FUSED_LAUNCH: st = sk_fused_kernel_launch(g.fk, (void *const *const *)lists); break;
  }
  atomic_fetch_add(&g.calls, 1);
  if (st != SK_STATUS_INVALID_STATE || !strstr(sk_last_error(), "inside a block")) {
    atomic_fetch_add(&g.wrong, 1);
    snprintf(g.msg, sizeof g.msg, "%s: %s", sk_status_string(st), sk_last_error());
  }
}

/* y = 2 x, block b its quarter; block 0 first makes the nested call. */
static void nested_entry(void *const *args, int64_t block, int64_t n_blocks, void *ws, sk_kernel_ctx *ctx) {
  (void)ws, (void)ctx;
  if (block == 0) nested_call();
  const float *x = args[0];
  float *y = args[1];
  for (int64_t i = N * block / n_blocks; i < N * (block + 1) / n_blocks; i++) y[i] = 2.0f * x[i];
}

static sk_kernel *kernel(void) {
  static sk_kernel *k;
  if (!k) {
    sk_kernel_desc d = {.struct_size = sizeof d, .name = "reentry_double", .entry = nested_entry,
                        .type = SK_KERNEL_TYPE_VECTOR, .block_count = BLOCKS, .n_params = 2};
    CHECK_OK(sk_kernel_register(&d, &k));
  }
  return k;
}

static bool output_right(void) {
  for (int i = 0; i < N; i++)
    if (y_data[i] != 2.0f * x_data[i]) return false;
  return true;
}

static void expect_refused(const char *where) {
  CHECK_MSG(atomic_load(&g.calls) >= 1 && atomic_load(&g.wrong) == 0, "%s: %s from inside a block: %d calls, %s", where,
            CALL_NAMES[g.call], atomic_load(&g.calls), atomic_load(&g.wrong) ? g.msg : "none made");
  CHECK_MSG(output_right(), "%s: %s: the outer run's output is wrong", where, CALL_NAMES[g.call]);
  atomic_store(&g.calls, 0);
  atomic_store(&g.wrong, 0);
}

static void test_graph_programs(void) {
  kernel();
  for (int i = 0; i < N; i++) x_data[i] = (float)i - 100.0f;
  static const sk_executor executors[] = {SK_EXECUTOR_EAGER, SK_EXECUTOR_INTERP, SK_EXECUTOR_JIT};
  for (int cores = 1; cores <= 2; cores++) {
    sk_team *team = NULL;
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = cores, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &team));
    for (size_t e = 0; e < 3; e++) {
      sk_graph *gr;
      CHECK_OK(sk_graph_create(&gr));
      sk_value x = input(gr, "x", SK_FP32, 1, (int64_t[]){N}), y;
      sk_op_input in[] = {{"x", &x, 1}};
      CHECK_OK(sk_graph_begin_scope(gr, "s", NULL));
      op(gr, "reentry_double", "double", in, 1, NULL, 0, &y, 1);
      CHECK_OK(sk_graph_end_scope(gr));
      CHECK_OK(sk_graph_mark_output(gr, y, "y"));
      sk_compile_config cfg = {.struct_size = sizeof cfg, .team = team, .executor = executors[e], .profile = 1};
      sk_program *p;
      CHECK_OK(sk_compile(gr, &cfg, &p));
      sk_graph_destroy(gr);
      CHECK_OK(sk_run_context_create(p, &g.ctx));
      g.self = p, g.team = team;
      for (int call = CALL_RUN; call < CALL_FUSED_LAUNCH; call++) {
        char where[64];
        snprintf(where, sizeof where, "executor %d, %d core%s", (int)executors[e], cores, cores > 1 ? "s" : "");
        g.call = call;
        memset(y_data, 0, sizeof y_data);
        sk_buffer bi[] = {{"x", x_data, sizeof x_data}}, bo[] = {{"y", y_data, sizeof y_data}};
        CHECK_OK(sk_program_run(p, team, bi, 1, bo, 1));
        CHECK_MSG(sk_last_error()[0] == '\0', "%s: after a successful run sk_last_error() holds '%s'", where,
                  sk_last_error());
        expect_refused(where);
      }
      sk_run_context_destroy(g.ctx);
      g.ctx = NULL;
      sk_program_destroy(p);
    }
    sk_team_destroy(team);
  }
}

/* A fused kernel whose block launches that same fused kernel. */
static void test_fused_kernel_launches_itself(void) {
  sk_kernel *k = kernel();
  for (int cores = 1; cores <= 2; cores++) {
    sk_team *team = NULL;
    sk_team_config tc = {.struct_size = sizeof tc, .num_cores = cores, .pin_threads = -1};
    CHECK_OK(sk_team_create(&tc, &team));
    CHECK_OK(sk_fused_kernel_create(&k, 1, NULL, team, &g.fk));
    g.call = CALL_FUSED_LAUNCH, g.team = team;
    memset(y_data, 0, sizeof y_data);
    void *args[] = {x_data, y_data};
    void *const *lists[] = {args};
    CHECK_OK(sk_fused_kernel_launch(g.fk, (void *const *const *)lists));
    CHECK_MSG(sk_last_error()[0] == '\0', "after a successful launch sk_last_error() holds '%s'", sk_last_error());
    expect_refused(cores > 1 ? "fused, 2 cores" : "fused, 1 core");
    sk_fused_kernel_destroy(g.fk);
    g.fk = NULL;
    sk_team_destroy(team);
  }
}

TEST_MAIN(TEST_CASE(test_graph_programs), TEST_CASE(test_fused_kernel_launches_itself))

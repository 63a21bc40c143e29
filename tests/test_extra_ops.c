/* Test ops shared by several tests (test_extra_ops.h). */
#include <pthread.h>

#include "core/error.h"
#include "harness.h"
#include "ops/op.h"
#include "runtime/barrier.h"
#include "test_extra_ops.h"

/* ---- test_allreduce: y[b] = sum of all of x, each block one row ----
 * Block b sums row b into y[b]; barrier; sums y[0..B) in order; barrier;
 * stores the total in y[b]. Two barriers per block. */
static sk_status allreduce_build(sk__build_ctx *ctx) {
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, 0, &x));
  if (x->rank != 2 || x->dtype != SK_FP32) return SK_STATUS_INVALID_SHAPE;
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  sk__tensor_init(out, SK_FP32, 1, x->shape);
  return SK_STATUS_OK;
}

static sk_status allreduce_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  (void)n_cores;
  *out = (sk__tiling){.n_blocks = io->in[0].tensors[0].shape[0]};
  return SK_STATUS_OK;
}

static float row_sum(const sk__tensor *x, int64_t b) {
  const float *row = (const float *)x->data + b * x->shape[1];
  float s = 0;
  for (int64_t j = 0; j < x->shape[1]; j++) s += row[j];
  return s;
}

static void allreduce_run(const sk__node_io *io, int64_t block, void *workspace) {
  (void)workspace;
  const sk__tensor *x = &io->in[0].tensors[0];
  float *y = io->out[0].data;
  y[block] = row_sum(x, block);
  sk__barrier_wait(io->barrier);
  float total = 0;
  for (int64_t b = 0; b < x->shape[0]; b++) total += y[b];
  sk__barrier_wait(io->barrier);
  y[block] = total;
}

static void allreduce_reference(const sk__node_io *io) {
  const sk__tensor *x = &io->in[0].tensors[0];
  float total = 0;
  for (int64_t b = 0; b < x->shape[0]; b++) total += row_sum(x, b);
  for (int64_t b = 0; b < x->shape[0]; b++) ((float *)io->out[0].data)[b] = total;
}

static const sk_op_slot_info x_slot[] = {SK__IN("x", "fp32")};
static const sk_op_output_info y_out[] = {SK__OUT("y", "x's dtype and shape")};
static const sk__op_def allreduce_op = {
    .type = "test_allreduce", SK__SCHEMA_INPUTS(x_slot), SK__SCHEMA_OUTPUTS(y_out), .kind = SK_KERNEL_VECTOR, .build = allreduce_build,
    .tile = allreduce_tile, .run_block = allreduce_run, .reference = allreduce_reference, .barriers_per_block = 2,
};

/* ---- test_unfusable: a copy that declares itself unfusable ---- */
static sk_status copy_build(sk__build_ctx *ctx) {
  const sk__tensor *x;
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, 0, &x));
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 1, &out));
  *out = *x;
  return SK_STATUS_OK;
}
static sk_status copy_tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  (void)io, (void)n_cores;
  *out = (sk__tiling){.n_blocks = 1};
  return SK_STATUS_OK;
}
static void copy_reference(const sk__node_io *io) {
  memcpy(io->out[0].data, io->in[0].tensors[0].data, sk__tensor_bytes(&io->out[0]));
}
static void copy_run(const sk__node_io *io, int64_t block, void *workspace) {
  (void)block, (void)workspace;
  copy_reference(io);
}
static const sk__op_def unfusable_op = {
    .type = "test_unfusable", SK__SCHEMA_INPUTS(x_slot), SK__SCHEMA_OUTPUTS(y_out), .kind = SK_KERNEL_VECTOR, .build = copy_build,
    .tile = copy_tile, .run_block = copy_run, .reference = copy_reference, .unfusable = true,
};


static void register_once(void) {
  if (sk__op_register(&allreduce_op) != SK_STATUS_OK || sk__op_register(&unfusable_op) != SK_STATUS_OK)
    fprintf(stderr, "test ops: %s\n", sk_last_error());
}

void rr_register_test_ops(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_once);
}

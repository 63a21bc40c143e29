/* sigmoid(x): torch.sigmoid, the logistic function 1 / (1 + e^-x), the gate
 * of Qwen2-MoE's shared expert.
 *
 * Per element, in fp32 (x widened exactly; docs/ops.md):
 *   y = round(sk__sigmoidf(x))                        (kernels/activation)
 * sk__sigmoidf is the library's sigmoid (gelu's and moe_gating_topk's) on
 * its own exp (sk__expf, swiglu's and softmax's): e = sk__expf(-|x|), then
 * (x >= 0 ? 1 : e) / (1 + e) with the rounding of 1 + e taken back; a NaN
 * x gives the canonical quiet NaN; one rounding to x's dtype (to nearest
 * even). The kernel runs the array form of the same sigmoid (bitwise the
 * scalar one on every ISA), so it matches the reference bit for bit, and
 * each element depends on its own x alone. */
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

enum { SLOT_X };

static const sk_op_slot_info inputs[] = {SK__IN("x", "fp32, fp16 or bf16, any shape", .dtypes = SK__FLOATS)};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x's dtype and shape")};

/* The library's sigmoid, its NaN made the canonical one (which NaN
 * sk__sigmoidf returns is x's, quieted: an input's payload would leak). */
static inline float sigmoid_value(float s) { return s == s ? s : sk__canonical_nan(); }

static void reference(const sk__node_io *io) {
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  int64_t n = sk__tensor_numel(x);
  for (int64_t i = 0; i < n; i++) {
    float v = sk__load_f32(x->data, x->dtype, (size_t)i);
    sk__store_f32(io->out[0].data, x->dtype, (size_t)i, sigmoid_value(sk__sigmoidf(v)));
  }
}

/* Blocks are ranges of elements; fp16 / bf16 ones are converted CHUNK at a
 * time into fp32 scratch, fp32 ones computed in y itself. */
#define CHUNK 1024

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t total = sk__tensor_numel(&io->out[0]);
  *out = sk__flat_tiling(total, sk__flat_block_size(total, n_cores, 64, 4096));
  out->workspace_bytes = CHUNK * sizeof(float);
  return SK_STATUS_OK;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk_dtype dt = x->dtype;
  const size_t es = sk_dtype_size(dt);
  int64_t e0, e1;
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &e0, &e1);
  sk__clip(&e0, &e1, sk__live_numel(io, &io->out[0])); /* a run-time token count: live elements only */
  for (int64_t e = e0; e < e1; e += CHUNK) {
    size_t len = (size_t)(e1 - e < CHUNK ? e1 - e : CHUNK);
    char *y = (char *)io->out[0].data + (size_t)e * es;
    float *s = dt == SK_FP32 ? (float *)y : workspace;
    const float *from = (const float *)((const char *)x->data + (size_t)e * es);
    if (dt != SK_FP32) {
      sk__convert((const char *)x->data + (size_t)e * es, dt, s, SK_FP32, len, io->isa);
      from = s;
    }
    sk__sigmoidf_array(from, s, len, io->isa);
    for (size_t j = 0; j < len; j++) s[j] = sigmoid_value(s[j]);
    if (dt != SK_FP32) sk__convert(s, SK_FP32, y, dt, len, io->isa);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "sigmoid, dtype conversion");
}

const sk__op_def sk__op_sigmoid = {
    .type = "sigmoid",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = 1 / (1 + e^-x), fp32 with the library's exp, rounded once to x's dtype",
    .kind = SK_KERNEL_VECTOR,
    .build = sk__build_like_x,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .dynamic_rows = true, /* a block computes its live elements only */
};

/* gelu(x): the tanh form of the Gaussian error linear unit, the activation
 * of GELU experts (torch.nn.functional.gelu(x, approximate="tanh"),
 * transformers' "gelu_pytorch_tanh"). Its tanh is written as a sigmoid:
 *   0.5 * x * (1 + tanh(u)) = x * sigmoid(2 * u),  u = sqrt(2/pi) * (x + 0.044715 x^3)
 * Per element, in fp32 (x widened exactly; docs/ops.md), in this order:
 *   c = x * x * x;  v = 1.5957691216f * (x + 0.044715f * c);  y = round(x * sk__sigmoidf(v))
 * rounded to x's dtype (to nearest even). The kernel runs the array form of
 * the same sigmoid (bitwise the scalar one on every ISA), so it matches the
 * reference bit for bit, and each element depends on its own x alone. */
#include "core/error.h"
#include "kernels/activation/activation.h"
#include "kernels/convert/convert.h"
#include "ops/op_util.h"

enum { SLOT_X };

static const sk_op_slot_info inputs[] = {SK__IN("x", "fp32, fp16 or bf16, any shape", .dtypes = SK__FLOATS)};
static const sk_op_output_info outputs[] = {SK__OUT("y", "x's dtype and shape")};

/* 2 * sqrt(2 / pi), the sigmoid's argument scale, and the cubic's weight. */
#define GELU_SCALE 1.5957691216057308f
#define GELU_CUBIC 0.044715f

/* The sigmoid's argument for x, in the order docs/ops.md fixes. */
static inline float gelu_arg(float x) {
  float c = x * x * x;
  return GELU_SCALE * (x + GELU_CUBIC * c);
}

static void reference(const sk__node_io *io) {
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  int64_t n = sk__tensor_numel(x);
  for (int64_t i = 0; i < n; i++) {
    float v = sk__load_f32(x->data, x->dtype, (size_t)i);
    sk__store_f32(io->out[0].data, x->dtype, (size_t)i, v * sk__sigmoidf(gelu_arg(v)));
  }
}

/* Blocks are ranges of elements, converted CHUNK at a time into fp32
 * scratch (x, then the sigmoid of its argument). */
#define CHUNK 1024

static sk_status tile(const sk__node_io *io, int n_cores, sk__tiling *out) {
  int64_t total = sk__tensor_numel(&io->out[0]);
  *out = sk__flat_tiling(total, sk__flat_block_size(total, n_cores, 64, 4096));
  out->workspace_bytes = 2 * CHUNK * sizeof(float);
  return SK_STATUS_OK;
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  const sk__tensor *x = &io->in[SLOT_X].tensors[0];
  const sk_dtype dt = x->dtype;
  const size_t es = sk_dtype_size(dt);
  float *a = workspace, *s = a + CHUNK;
  int64_t e0, e1;
  sk__flat_block_range(sk__tensor_numel(&io->out[0]), io->n_blocks, block, &e0, &e1);
  sk__clip(&e0, &e1, sk__live_numel(io, &io->out[0])); /* a run-time token count: live elements only */
  for (int64_t e = e0; e < e1; e += CHUNK) {
    size_t len = (size_t)(e1 - e < CHUNK ? e1 - e : CHUNK);
    sk__convert((const char *)x->data + (size_t)e * es, dt, a, SK_FP32, len, io->isa);
    for (size_t j = 0; j < len; j++) s[j] = gelu_arg(a[j]);
    sk__sigmoidf_array(s, s, len, io->isa);
    for (size_t j = 0; j < len; j++) a[j] = a[j] * s[j];
    sk__convert(a, SK_FP32, (char *)io->out[0].data + (size_t)e * es, dt, len, io->isa);
  }
}

static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "sigmoid, dtype conversion");
}

const sk__op_def sk__op_gelu = {
    .type = "gelu",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "y = x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)): GELU, tanh form",
    .kind = SK_KERNEL_VECTOR,
    .build = sk__build_like_x,
    .tile = tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .dynamic_rows = true, /* a block computes its live elements only */
};

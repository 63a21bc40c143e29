/* moe_gating_topk_softmax (torch_npu's npu_moe_gating_top_k_softmax and its
 * _v2): softmax gating as Mixtral and Qwen-MoE route, the k best experts of
 * softmax(x) per token.
 *
 *   x [T, E] fp32 / fp16 / bf16 -> y [T, k] x's dtype, expert_idx int32
 *   [T, k], row_idx int32 [T, k], softmax fp32 [T, E]
 *
 * It is moe_gating_topk with norm_type 0 (softmax), one group and no bias,
 * run by that op's kernel and reference (the arithmetic at the top of
 * moe_gating_topk.c): y are the chosen softmax values, or with renorm 1
 * those divided by their sum (eps 0; in exact arithmetic the softmax of the
 * k chosen logits, which _v2's renorm = 1 computes). row_idx[t, j] = j * T + t,
 * the pair numbering torch_npu's npu_moe_init_routing takes. */
#include "core/error.h"
#include "ops/moe_gating_topk.h"
#include "ops/op_util.h"

extern const sk__op_def sk__op_moe_gating_topk;

enum { OUT_Y, OUT_IDX, OUT_ROW_IDX, OUT_SOFTMAX };

static const sk_op_slot_info inputs[] = {SK__IN("x", "[T, E] fp32, fp16 or bf16: the router logits", .dtypes = SK__FLOATS, SK__RANK(2, 2))};
static const sk_op_attr_info attrs[] = {
    SK__ATTR_INT("k", 1, 1, MOE_MAX_EXPERTS, "experts per token, at most E"),
    SK__ATTR_INT("renorm", 0, 0, 1, "1: the k weights divided by their sum (softmax over the chosen)"),
};
static const sk_op_output_info outputs[] = {
    SK__OUT("y", "[T, k], x's dtype: the weights of the chosen experts"),
    SK__OUT("expert_idx", "int32 [T, k]: the chosen experts, best first"),
    SK__OUT("row_idx", "int32 [T, k]: j * T + t"),
    SK__OUT("softmax", "fp32 [T, E]: softmax(x)"),
};

static sk_status build(sk__build_ctx *ctx) {
  const char *op = sk__ctx_op(ctx);
  const sk__tensor *x;
  char s[SK_SHAPE_STR_MAX];
  SK_RETURN_IF_ERROR(sk__ctx_single(ctx, MOE_X, &x));
  if (x->rank != 2 || x->shape[1] < 1 || x->shape[1] > MOE_MAX_EXPERTS)
    return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input x: expected [T, E] with 1 <= E <= %d, got %s", op,
                    MOE_MAX_EXPERTS, sk__shape_str(x->rank, x->shape, s, sizeof s));
  int64_t k, renorm, t = x->shape[0], e = x->shape[1];
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "k", &k));
  SK_RETURN_IF_ERROR(sk__ctx_attr_int(ctx, "renorm", &renorm));
  if (k > e)
    return sk__fail(SK_STATUS_INVALID_ATTRIBUTE, "%s: attribute k: expected 1..%lld (E), got %lld", op, (long long)e,
                    (long long)k);
  moe_params *p = sk__ctx_params(ctx);
  *p = (moe_params){.t = t, .e = e, .k = k, .k_group = 1, .group_count = 1, .group_size = e, .norm_type = 0,
                    .renorm = (int)renorm, .routed_scaling_factor = 1.0f, .eps = 0.0f, .dtype = x->dtype};
  sk__tensor *out;
  SK_RETURN_IF_ERROR(sk__ctx_set_outputs(ctx, 4, &out));
  sk__tensor_init(&out[OUT_Y], x->dtype, 2, (int64_t[]){t, k});
  sk__tensor_init(&out[OUT_IDX], SK_INT32, 2, (int64_t[]){t, k});
  sk__tensor_init(&out[OUT_ROW_IDX], SK_INT32, 2, (int64_t[]){t, k});
  sk__tensor_init(&out[OUT_SOFTMAX], SK_FP32, 2, (int64_t[]){t, e});
  return SK_STATUS_OK;
}

/* The node as moe_gating_topk sees it: outputs y, expert_idx, out. */
static sk__node_io gating_io(const sk__node_io *io, sk__tensor outs[3]) {
  sk__node_io sub = *io;
  outs[MOE_Y] = io->out[OUT_Y];
  outs[MOE_IDX] = io->out[OUT_IDX];
  outs[MOE_OUT] = io->out[OUT_SOFTMAX];
  sub.out = outs;
  sub.n_out = 3;
  return sub;
}

/* row_idx of rows [r0, r1): j * T + t with T the rows of this run (the live
 * ones under a run-time token count, as a program built for them writes). */
static void row_indices(const sk__node_io *io, int64_t r0, int64_t r1) {
  const moe_params *p = io->params;
  const int64_t tokens = sk__moe_live_rows(io);
  int32_t *row_idx = io->out[OUT_ROW_IDX].data;
  for (int64_t t = r0; t < r1; t++)
    for (int64_t j = 0; j < p->k; j++) row_idx[t * p->k + j] = (int32_t)(j * tokens + t);
}

static void reference(const sk__node_io *io) {
  sk__tensor outs[3];
  sk__node_io sub = gating_io(io, outs);
  sk__op_moe_gating_topk.reference(&sub);
  row_indices(io, 0, ((const moe_params *)io->params)->t);
}

static void run_block(const sk__node_io *io, int64_t block, void *workspace) {
  sk__tensor outs[3];
  sk__node_io sub = gating_io(io, outs);
  sk__moe_run_block(&sub, block, workspace);
  int64_t r0, r1;
  if (sk__moe_block_rows(io, block, &r0, &r1)) row_indices(io, r0, r1);
}

static void footprint(const sk__node_io *io, int64_t block, sk__span *reads, sk__span *writes) {
  sk__tensor outs[3];
  sk__node_io sub = gating_io(io, outs);
  sk__span w[3] = {writes[OUT_Y], writes[OUT_IDX], writes[OUT_SOFTMAX]};
  sk__moe_footprint(&sub, block, reads, w);
  writes[OUT_Y] = w[MOE_Y], writes[OUT_IDX] = w[MOE_IDX], writes[OUT_SOFTMAX] = w[MOE_OUT];
  writes[OUT_ROW_IDX] = w[MOE_IDX]; /* the same rows of the same [T, k] int32 layout */
}

/* Its vector kernels (op.h: kernel_name): the gating's. */
static const char *kernel_name(const sk__node_io *io) {
  return SK__VECTOR_KERNEL_NAME(io->isa, "exp or sigmoid, top-k selection");
}

const sk__op_def sk__op_moe_gating_topk_softmax = {
    .type = "moe_gating_topk_softmax",
    SK__SCHEMA_INPUTS(inputs),
    SK__SCHEMA_ATTRS(attrs),
    SK__SCHEMA_OUTPUTS(outputs),
    .doc = "softmax gating (Mixtral / Qwen-MoE): the k best experts of softmax(x) per token, optionally renormalized",
    .kind = SK_KERNEL_VECTOR,
    .build = build,
    .tile = sk__moe_tile,
    .run_block = run_block,
    .kernel_name = kernel_name,
    .reference = reference,
    .footprint = footprint,
    .dynamic_rows = true, /* per row (row_idx's T: the live rows) */
    .params_size = sizeof(moe_params),
};

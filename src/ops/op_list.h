/* The one list of built-in ops, in the order sk_op_info numbers them. Each
 * entry X(name) is the op type "name", defined as sk__op_<name> in its
 * file of src/ops/. The registry, sk_op_count / sk_op_info, the fuzzer and
 * the conformance test all read this list (through sk_op_info outside the
 * library). New ops go at the end, so the numbers of the others stay.
 * Adding an op: docs/adding-an-op.md. */
#ifndef SK_OPS_OP_LIST_H
#define SK_OPS_OP_LIST_H

#define SK__BUILTIN_OPS(X) \
  X(reshape)               \
  X(square)                \
  X(add)                   \
  X(mul)                   \
  X(cast)                  \
  X(concat)                \
  X(grouped_matmul)        \
  X(moe_gating_topk)       \
  X(dequant_swiglu_quant)  \
  X(quant_matmul)          \
  X(slice)                 \
  X(squeeze)               \
  X(unsqueeze)             \
  X(rms_norm)              \
  X(add_rms_norm)          \
  X(swiglu)                \
  X(moe_init_routing)      \
  X(moe_finalize_routing)  \
  X(moe_gating_topk_softmax) \
  X(linear)                \
  X(gelu)                  \
  X(softmax)               \
  X(argmax)                \
  X(embedding)             \
  X(rotary_embedding)      \
  X(kv_cache_write)        \
  X(attention)             \
  X(mla_attention)         \
  X(split)                 \
  X(sigmoid)               \
  X(dynamic_quant)

#endif

list(APPEND SK_SOURCES
  ops/registry.c
  ops/build_ctx.c
  ops/reshape.c
  ops/squeeze.c
  ops/slice.c
  ops/broadcast.c
  ops/elementwise.c
  ops/elementwise_kernel.c
  ops/cast.c
  ops/concat.c
  ops/split.c
  ops/dynamic_quant.c
  ops/grouped_matmul.c
  ops/grouped_matmul_quant.c
  ops/grouped_matmul_tiling.c
  ops/grouped_matmul_kernel.c
  ops/grouped_matmul_balance.c
  ops/grouped_matmul_groups.c
  ops/packed_weights.c
  ops/index_input.c
  ops/quant_param.c
  ops/quant_matmul.c
  ops/quant_matmul_tiling.c
  ops/quant_matmul_kernel.c
  ops/dequant_swiglu_quant.c
  ops/dequant_swiglu_quant_kernel.c
  ops/int8_quantize.c
  ops/moe_gating_topk.c ops/moe_gating_topk_kernel.c
  ops/rms_norm.c
  ops/swiglu.c
  ops/gelu.c
  ops/sigmoid.c
  ops/moe_init_routing.c
  ops/moe_finalize_routing.c
  ops/moe_gating_topk_softmax.c
  ops/linear.c
  ops/softmax.c
  ops/argmax.c
  ops/embedding.c
  ops/rotary_embedding.c ops/rope_freq.c
  ops/kv_cache_write.c
  ops/attention.c ops/attention_common.c
  ops/mla_attention.c
)
# Their arithmetic is written as separate multiplies and adds (docs/ops.md):
# a compiler must not fuse them on an ISA that has FMA.
set_source_files_properties(ops/rms_norm.c ops/swiglu.c ops/moe_finalize_routing.c
  ops/rotary_embedding.c ops/rope_freq.c ops/attention.c ops/attention_common.c ops/mla_attention.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")

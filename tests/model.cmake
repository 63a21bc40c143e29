# Whole decoder models (superkernel_model.h, src/model): invariance of a token's logits to chunking,
# executor, team size and the experts' layout; bad configs, weights, ids and lengths.
sk_add_test(NAME test_model SOURCES test_model.c tiny_model.c ISA_VARIANTS_WITHOUT avx512vnni amx)
# The checkpoint reader (superkernel_checkpoint.h, src/checkpoint): safetensors files mapped and checked,
# config.json and the index, the weight callback (FP8 dequantized, aligned copies), bad files refused by name.
sk_add_test(NAME test_checkpoint_files SOURCES test_checkpoint_files.c)
# One MoE block on its own (sk_moe_block: superkernel.optimize's per-block path, the model builder's MoE block):
# every router and the shared experts against an fp64 reference, layouts and runs the same bits, w8a8, bad input.
sk_add_test(NAME test_moe_block SOURCES test_moe_block.c ISA_VARIANTS_WITHOUT avx512vnni amx)

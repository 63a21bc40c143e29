# Whole decoder models (superkernel_model.h, src/model): invariance of a token's logits to chunking,
# executor, team size and the experts' layout; bad configs, weights, ids and lengths.
sk_add_test(NAME test_model SOURCES test_model.c tiny_model.c ISA_VARIANTS_WITHOUT avx512vnni amx)

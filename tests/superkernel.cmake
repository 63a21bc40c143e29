# tests of the super-kernel layer
sk_add_test(NAME test_options SOURCES test_options.c)
sk_add_test(NAME test_superkernel SOURCES test_superkernel.c LIBS sk_reference_runner)
sk_add_test(NAME test_superkernel_ops SOURCES test_superkernel_ops.c LIBS sk_reference_runner)
sk_add_test(NAME test_scopes SOURCES test_scopes.c LIBS sk_reference_runner)
# a run-time token count: one program for every T, bitwise the exact builds'
sk_add_test(NAME test_tokens SOURCES test_tokens.c ISA_VARIANTS)
# batch invariance: a token's output rows are its rows alone, whatever the batch
sk_add_test(NAME test_batch_invariance SOURCES test_batch_invariance.c ISA_VARIANTS)

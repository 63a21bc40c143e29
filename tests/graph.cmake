# tests of the graph area
sk_add_test(NAME test_graph SOURCES test_graph.c)
sk_add_test(NAME test_op_schema SOURCES test_op_schema.c)
sk_add_test(NAME test_bind SOURCES test_bind.c LIBS sk_reference_runner)
sk_add_test(NAME test_constants SOURCES test_constants.c LIBS sk_reference_runner)
# Each rung names its own kernels: ISA variants, less the rungs that add no vector path.
sk_add_test(NAME test_kernel_names SOURCES test_kernel_names.c LIBS sk_reference_runner
  ISA_VARIANTS_WITHOUT avx512vnni avx512bf16)
sk_add_test(NAME test_arena_plan SOURCES test_arena_plan.c LIBS sk_reference_runner)

# tests of the ops: each against its plain reference, on every ISA path
add_library(sk_reference_runner STATIC reference_runner.c test_extra_ops.c)
target_link_libraries(sk_reference_runner PUBLIC superkernel_internal)
sk_add_test(NAME test_ops SOURCES test_ops.c LIBS sk_reference_runner ISA_VARIANTS)
sk_add_test(NAME test_ops_broadcast SOURCES test_ops_broadcast.c LIBS sk_reference_runner ISA_VARIANTS)
sk_add_test(NAME test_dequant_swiglu_quant SOURCES test_dequant_swiglu_quant.c LIBS sk_reference_runner ISA_VARIANTS)
sk_add_test(NAME test_quant_matmul SOURCES test_quant_matmul.c LIBS sk_reference_runner ISA_VARIANTS)
sk_add_test(NAME test_moe_gating_topk SOURCES test_moe_gating_topk.c LIBS sk_reference_runner ISA_VARIANTS)
sk_add_test(NAME test_conformance SOURCES test_conformance.c LIBS sk_reference_runner ISA_VARIANTS)

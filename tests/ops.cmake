# tests of the ops: each against its plain reference, on every ISA path
add_library(sk_reference_runner STATIC reference_runner.c test_extra_ops.c)
target_link_libraries(sk_reference_runner PUBLIC superkernel_internal)
sk_add_test(NAME test_ops SOURCES test_ops.c LIBS sk_reference_runner ISA_VARIANTS)
sk_add_test(NAME test_ops_broadcast SOURCES test_ops_broadcast.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)
sk_add_test(NAME test_ops_views SOURCES test_ops_views.c LIBS sk_reference_runner)
sk_add_test(NAME test_dequant_swiglu_quant SOURCES test_dequant_swiglu_quant.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512bf16)
sk_add_test(NAME test_quant_matmul SOURCES test_quant_matmul.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512bf16)
sk_add_test(NAME test_moe_gating_topk SOURCES test_moe_gating_topk.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)
# The op case table (tests/cases/ops.cases), one file for the C conformance
# test, the bad-input rows derived from schemas, and the Python op tests.
add_library(sk_case_table STATIC case_table.c)
target_link_libraries(sk_case_table PUBLIC superkernel_internal)
target_compile_definitions(sk_case_table PRIVATE SK_CASES_FILE="${CMAKE_CURRENT_SOURCE_DIR}/cases/ops.cases")
sk_add_test(NAME test_conformance SOURCES test_conformance.c LIBS sk_reference_runner sk_case_table ISA_VARIANTS)
sk_add_test(NAME test_runtime_group_list SOURCES test_runtime_group_list.c LIBS sk_reference_runner)
sk_add_test(NAME test_gmm_transpose SOURCES test_gmm_transpose.c ISA_VARIANTS_WITHOUT avx512vnni)
sk_add_test(NAME test_gmm_tiling SOURCES test_gmm_tiling.c LIBS sk_reference_runner)
sk_add_test(NAME test_moe_layer SOURCES test_moe_layer.c LIBS sk_reference_runner TIMEOUT 300)
# softmax, argmax, embedding, rotary_embedding: run-time errors, edge rows, RoPE by hand
# (its expected products must not be fused, as the op's are not).
sk_add_test(NAME test_decoder_ops SOURCES test_decoder_ops.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)
set_source_files_properties(test_decoder_ops.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
# kv_cache_write and attention: invariance to chunking, batch, executor and team; run-time errors; refusals
sk_add_test(NAME test_attention SOURCES test_attention.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512vnni avx512bf16 amx)
# mla_attention: invariance with kv_cache_write of the latent cache (chunks, batch, executor, team); run-time errors; shape refusals
sk_add_test(NAME test_mla_attention SOURCES test_mla_attention.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512vnni avx512bf16 amx)
# split and sigmoid: sigmoid's edges and every fp16 / bf16 pattern, split's block footprints, build errors
sk_add_test(NAME test_split_sigmoid SOURCES test_split_sigmoid.c LIBS sk_reference_runner ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni amx)
# The numerics option: the AMX contract through the API, every executor,
# on every ISA path (below amx, its emulation).
sk_add_test(NAME test_numerics SOURCES test_numerics.c ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)

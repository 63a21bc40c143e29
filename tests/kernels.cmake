# tests of the kernels area
# GEMM: every ISA path against the reference, bit for bit.
sk_add_test(NAME test_gemm SOURCES test_gemm.c ISA_VARIANTS_WITHOUT avx512vnni)
# The same cases under the AMX contract: on this CPU's ISA (TDPBF16PS where
# it has AMX-BF16) and emulated (SK_ISA=avx2, which every CI CPU has).
add_test(NAME test_gemm_numerics_amx COMMAND test_gemm)
add_test(NAME test_gemm_numerics_amx_emulated COMMAND test_gemm)
set_tests_properties(test_gemm_numerics_amx PROPERTIES ENVIRONMENT "SK_NUMERICS=amx" LABELS single_thread
                     SKIP_RETURN_CODE 77 TIMEOUT 600)
set_tests_properties(test_gemm_numerics_amx_emulated PROPERTIES ENVIRONMENT "SK_NUMERICS=amx;SK_ISA=avx2"
                     LABELS "single_thread;lower_isa" SKIP_RETURN_CODE 77 TIMEOUT 600)
# The bf16 contract: the instruction, the FMA way and the kernels against it.
sk_add_test(NAME test_bf16_dot SOURCES test_bf16_dot.c)
# SK_ISA=avx512bf16 runs the dot kernel even where the FMAs are faster.
set_tests_properties(test_bf16_dot PROPERTIES ENVIRONMENT SK_ISA=avx512bf16 LABELS single_thread)
# AMX-BF16 against its definition and the contract: the instruction's file
# gets its flags (called only where sk__cpu_has_amx_bf16()), the emulated
# copy none.
# test_bf16_amx holds the SDM's definition against the contract (every CPU),
# test_bf16_amx_instruction the instruction against the definition.
foreach(t test_bf16_amx test_bf16_amx_instruction)
  sk_add_test(NAME ${t} SOURCES test_bf16_amx.c bf16_amx_tile.c bf16_amx_tile_emulated.c)
  set_property(TEST ${t} APPEND PROPERTY LABELS single_thread)
endforeach()
target_compile_definitions(test_bf16_amx_instruction PRIVATE SK_TEST_AMX_INSTRUCTION)
set_source_files_properties(bf16_amx_tile.c PROPERTIES COMPILE_OPTIONS "-mamx-tile;-mamx-bf16")
set_source_files_properties(test_bf16_amx.c bf16_amx_tile_emulated.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
sk_add_test(NAME test_convert SOURCES test_convert.c ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)
sk_add_test(NAME test_qgemm SOURCES test_qgemm.c qgemm_amx_emulated.c ISA_VARIANTS_WITHOUT avx512bf16)
# The AMX kernel's tiles across calls and launches (emulated everywhere,
# the instructions where the CPU has AMX; the helper file gets the flag).
sk_add_test(NAME test_amx_tile_state SOURCES test_amx_tile_state.c qgemm_amx_emulated.c amx_tile_state_hw.c)
set_source_files_properties(amx_tile_state_hw.c PROPERTIES COMPILE_OPTIONS "-mamx-tile")
sk_add_test(NAME test_activation SOURCES test_activation.c ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)
sk_add_test(NAME test_moe_select SOURCES test_moe_select.c ISA_VARIANTS_WITHOUT avx512bf16 avx512vnni)
# Kernel-level tests run on one thread: ThreadSanitizer has nothing to check.
foreach(t test_gemm test_convert test_qgemm test_activation test_moe_select)
  foreach(isa ${SK_TEST_ISAS})
    if(TEST ${t}_${isa})
      set_property(TEST ${t}_${isa} APPEND PROPERTY LABELS single_thread)
    endif()
  endforeach()
endforeach()
# The gate end to end: test_gemm asked for AVX-512 on a CPU that (we
# pretend) stops at AVX2 must exit with the skip code and say why, before
# running anything.
add_test(NAME isa_gate_skips_missing_isa
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_expect.sh 77 -o "SKIPPED: SK_ISA=avx512 but this CPU lacks AVX-512"
                 -o "it supports up to avx2" -O "passed" -- $<TARGET_FILE:test_gemm>)
set_tests_properties(isa_gate_skips_missing_isa PROPERTIES ENVIRONMENT "SK_ISA=avx512;SK_TEST_ISA_SUPPORTED=avx2" TIMEOUT 60)

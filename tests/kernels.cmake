# tests of the kernels area
# GEMM: every ISA path against the reference, bit for bit.
sk_add_test(NAME test_gemm SOURCES test_gemm.c ISA_VARIANTS)
sk_add_test(NAME test_convert SOURCES test_convert.c ISA_VARIANTS)
sk_add_test(NAME test_qgemm SOURCES test_qgemm.c ISA_VARIANTS)
sk_add_test(NAME test_activation SOURCES test_activation.c ISA_VARIANTS)
# Kernel-level tests run on one thread: ThreadSanitizer has nothing to check.
foreach(t test_gemm test_convert test_qgemm test_activation)
  foreach(isa scalar avx2 avx512)
    set_property(TEST ${t}_${isa} APPEND PROPERTY LABELS single_thread)
  endforeach()
endforeach()

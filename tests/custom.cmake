# tests of custom (user) kernels: registration, graph use, runtime-only
# fusion (interpreted, JIT and eager). The JIT cache stays under the build
# directory.
sk_add_test(NAME test_custom_kernels SOURCES test_custom_kernels.c LIBS sk_reference_runner)
set_tests_properties(test_custom_kernels PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/custom_cache")
# Public calls from inside a running block return INVALID_STATE, never hang.
sk_add_test(NAME test_reentry SOURCES test_reentry.c LIBS sk_reference_runner TIMEOUT 60)
set_tests_properties(test_reentry PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/reentry_cache")

# The JIT executor: generated source, compile, cache, fallback, and JIT ==
# interpreted == eager bitwise. The test keeps its cache under the build
# directory (never ~/.cache); cases that need an empty or unsafe cache make
# their own subdirectories of it.
sk_add_test(NAME test_jit SOURCES test_jit.c LIBS sk_reference_runner TIMEOUT 180)
set_tests_properties(test_jit PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/jit_cache")

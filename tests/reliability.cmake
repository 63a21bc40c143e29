# Reliability: JIT cache faults the library survives (a foreign-owned,
# read-only or full cache: interpreted with a warning, results unchanged),
# and concurrency (many teams and programs in one process, one program run
# from several threads, several processes sharing one cache; run contexts:
# one program run in parallel, each thread in a context of its own). Each test
# keeps its cache under the build directory; cases that need an empty or
# broken cache make their own subdirectories of it.
sk_add_test(NAME test_cache_faults SOURCES test_cache_faults.c LIBS sk_reference_runner TIMEOUT 120)
set_tests_properties(test_cache_faults PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/cache_faults_cache")
# The compiler process and the cache directory under a hostile host (SIGCHLD
# ignored, a lingering compiler child, a killed caller, ulimit -f, a swapped
# cache directory, a directory where an entry belongs).
sk_add_test(NAME test_compiler_faults SOURCES test_compiler_faults.c LIBS sk_reference_runner TIMEOUT 180)
set_tests_properties(test_compiler_faults PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/compiler_faults_cache")
sk_add_test(NAME test_concurrency SOURCES test_concurrency.c LIBS sk_reference_runner TIMEOUT 180)
set_tests_properties(test_concurrency PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/concurrency_cache")
sk_add_test(NAME test_run_context SOURCES test_run_context.c LIBS sk_reference_runner TIMEOUT 240)
set_tests_properties(test_run_context PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/run_context_cache")

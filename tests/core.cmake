# tests of the core area
sk_add_test(NAME test_dtype SOURCES test_dtype.c)
sk_add_test(NAME test_status_log SOURCES test_status_log.c)
# A value of $SK_LOG_LEVEL the library does not know: warn, with a warning.
add_test(NAME test_status_log_env_garbage COMMAND test_status_log)
set_tests_properties(test_status_log_env_garbage PROPERTIES ENVIRONMENT "SK_LOG_LEVEL=garbage" TIMEOUT 60 SKIP_RETURN_CODE 77)
set_property(TEST test_dtype APPEND PROPERTY LABELS single_thread)
sk_add_test(NAME test_version SOURCES test_version.c)
target_compile_definitions(test_version PRIVATE SK_PROJECT_VERSION="${PROJECT_VERSION}")
# The ISA gate's decision (isa_gate.c): a variant whose ISA the CPU lacks is
# skipped, never run on a lower path and passed.
sk_add_test(NAME test_isa_gate SOURCES test_isa_gate.c isa_gate.c)
# AMX-INT8's gate: its decision with made-up inputs, and (SK_TEST_AMX_DENY)
# the fallback to VNNI when the OS refuses the tile state.
sk_add_test(NAME test_cpu_amx SOURCES test_cpu_amx.c)
add_test(NAME test_cpu_amx_denied COMMAND test_cpu_amx)
set_tests_properties(test_cpu_amx_denied PROPERTIES ENVIRONMENT "SK_TEST_AMX_DENY=1" TIMEOUT 60 SKIP_RETURN_CODE 77)

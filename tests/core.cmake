# tests of the core area
sk_add_test(NAME test_dtype SOURCES test_dtype.c)
sk_add_test(NAME test_status_log SOURCES test_status_log.c)
set_property(TEST test_dtype APPEND PROPERTY LABELS single_thread)
sk_add_test(NAME test_version SOURCES test_version.c)
target_compile_definitions(test_version PRIVATE SK_PROJECT_VERSION="${PROJECT_VERSION}")
# The ISA gate's decision (isa_gate.c): a variant whose ISA the CPU lacks is
# skipped, never run on a lower path and passed.
sk_add_test(NAME test_isa_gate SOURCES test_isa_gate.c isa_gate.c)

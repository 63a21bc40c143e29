# Profiling: the C test writes a profile, then Python's json parses the trace.
sk_add_test(NAME test_profile SOURCES test_profile.c LIBS sk_reference_runner)
set_tests_properties(test_profile PROPERTIES WORKING_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
set_tests_properties(test_profile PROPERTIES FIXTURES_SETUP profile_out)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME check_trace_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py
                   ${PROJECT_BINARY_DIR}/tests/profile_test_out mm sq_in)
  set_tests_properties(check_trace_json PROPERTIES FIXTURES_REQUIRED profile_out)
else()
  # Reported as skipped, not left out unseen (scripts/install-deps.sh installs python3).
  add_test(NAME check_trace_json COMMAND sh -c "echo 'SKIPPED: python3 not found: trace.json not parsed'; exit 77")
  set_tests_properties(check_trace_json PROPERTIES SKIP_RETURN_CODE 77)
endif()

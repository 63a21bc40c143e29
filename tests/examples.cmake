# The examples run as tests: each must exit 0 and print its success line.
# (Each times 51-201 repetitions for its medians; 5 in a sanitizer build.)
math(EXPR SK_EXAMPLE_TIMEOUT "120 * ${SK_TEST_TIME_SCALE}")
add_test(NAME example01_super_kernel_base COMMAND example01_super_kernel_base)
set_tests_properties(example01_super_kernel_base PROPERTIES
  PASS_REGULAR_EXPRESSION "execute sample success" TIMEOUT ${SK_EXAMPLE_TIMEOUT})
add_test(NAME example04_super_kernel_dual_stream COMMAND example04_super_kernel_dual_stream)
set_tests_properties(example04_super_kernel_dual_stream PROPERTIES
  PASS_REGULAR_EXPRESSION "execute sample success" TIMEOUT ${SK_EXAMPLE_TIMEOUT})
add_test(NAME example05_super_kernel_options COMMAND example05_super_kernel_options)
set_tests_properties(example05_super_kernel_options PROPERTIES
  PASS_REGULAR_EXPRESSION "execute sample success" TIMEOUT ${SK_EXAMPLE_TIMEOUT})
add_test(NAME example02_super_kernel_profiling COMMAND example02_super_kernel_profiling
         WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(example02_super_kernel_profiling PROPERTIES
  PASS_REGULAR_EXPRESSION "execute sample success" TIMEOUT ${SK_EXAMPLE_TIMEOUT})
add_test(NAME example03_super_kernel_runtime_only COMMAND example03_super_kernel_runtime_only)
set_tests_properties(example03_super_kernel_runtime_only PROPERTIES
  PASS_REGULAR_EXPRESSION "execute sample success" TIMEOUT ${SK_EXAMPLE_TIMEOUT})

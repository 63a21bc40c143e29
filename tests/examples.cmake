# The examples run as tests: each must exit 0 and print its success line.
add_test(NAME example01_super_kernel_base COMMAND example01_super_kernel_base)
set_tests_properties(example01_super_kernel_base PROPERTIES
  PASS_REGULAR_EXPRESSION "execute sample success" TIMEOUT 120)

sk_add_test(NAME test_bad_inputs SOURCES test_bad_inputs.c)

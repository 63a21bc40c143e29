sk_add_test(NAME test_bad_inputs SOURCES test_bad_inputs.c)
sk_add_test(NAME test_schema_edges SOURCES test_schema_edges.c LIBS sk_case_table)

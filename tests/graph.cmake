# tests of the graph area
sk_add_test(NAME test_graph SOURCES test_graph.c)
sk_add_test(NAME test_op_schema SOURCES test_op_schema.c)
sk_add_test(NAME test_bind SOURCES test_bind.c LIBS sk_reference_runner)
sk_add_test(NAME test_constants SOURCES test_constants.c LIBS sk_reference_runner)

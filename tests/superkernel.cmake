# tests of the super-kernel layer
sk_add_test(NAME test_options SOURCES test_options.c)

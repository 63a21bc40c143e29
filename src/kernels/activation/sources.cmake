list(APPEND SK_SOURCES kernels/activation/activation.c)
set_source_files_properties(kernels/activation/activation.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")

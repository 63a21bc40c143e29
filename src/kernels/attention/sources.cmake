# The attention op's inner loops (dots, accumulate): the scalar definitions
# and dispatcher (baseline x86-64) and one file per ISA with its own flags,
# all with -ffp-contract=off so nothing is fused beyond the explicit fmaf.
list(APPEND SK_SOURCES
  kernels/attention/attention.c
  kernels/attention/attention_avx2.c
  kernels/attention/attention_avx512.c
)
set_source_files_properties(kernels/attention/attention.c PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off")
set_source_files_properties(kernels/attention/attention_avx2.c PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-ffp-contract=off")
set_source_files_properties(kernels/attention/attention_avx512.c PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx2;-mfma;-ffp-contract=off")

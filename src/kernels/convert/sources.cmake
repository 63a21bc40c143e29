# dtype conversion kernels: the dispatcher and reference (baseline x86-64),
# and one file per ISA, each compiled with its own flags.
list(APPEND SK_SOURCES
  kernels/convert/convert.c
  kernels/convert/convert_avx2.c
  kernels/convert/convert_avx512.c
)
set_source_files_properties(kernels/convert/convert_avx2.c PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(kernels/convert/convert_avx512.c PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx2;-mfma;-mf16c")

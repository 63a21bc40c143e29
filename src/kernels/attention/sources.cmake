# The attention op's inner loops (dots, accumulate): the scalar definitions
# and dispatcher (baseline x86-64) and one file per ISA with its own flags,
# all with -ffp-contract=off so nothing is fused beyond the explicit fmaf.
list(APPEND SK_SOURCES
  kernels/attention/attention.c
  kernels/attention/attention_avx2.c
  kernels/attention/attention_avx512.c
  kernels/attention/attention_amx.c
  kernels/attention/attention_amx_emulated.c
)
set_source_files_properties(kernels/attention/attention.c PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off")
set_source_files_properties(kernels/attention/attention_avx2.c PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-ffp-contract=off")
set_source_files_properties(kernels/attention/attention_avx512.c PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx2;-mfma;-ffp-contract=off")
# The AMX contract's products: the tiles run only where sk__cpu_has_amx_bf16()
# (every such CPU has AVX-512, which packs the value rows' pairs).
set_source_files_properties(kernels/attention/attention_amx.c PROPERTIES
  COMPILE_OPTIONS "-mamx-tile;-mamx-bf16;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx2;-mfma;-ffp-contract=off")
set_source_files_properties(kernels/attention/attention_amx_emulated.c PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off")

# moe_gating_topk's selection steps: the scalar code and dispatcher
# (baseline x86-64) and the AVX2 file with its own flags (AVX-512 machines
# run it too: moe_select.c says why).
list(APPEND SK_SOURCES
  kernels/moe/moe_select.c
  kernels/moe/moe_select_avx2.c
  kernels/moe/moe_select_avx512.c
)
set_source_files_properties(kernels/moe/moe_select_avx2.c PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma")
set_source_files_properties(kernels/moe/moe_select_avx512.c PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx512vl;-mavx2;-mfma")

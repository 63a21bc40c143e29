# exp / sigmoid / silu: the scalar definitions and dispatcher (baseline
# x86-64) and one file per ISA with its own flags. -ffp-contract=off on all
# of them: the scalar definition spells every fused multiply-add as fmaf and
# the SIMD lanes must not fuse anything more, or the bits would differ.
list(APPEND SK_SOURCES
  kernels/activation/activation.c
  kernels/activation/activation_avx2.c
  kernels/activation/activation_avx512.c
)
set_source_files_properties(kernels/activation/activation.c PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off")
set_source_files_properties(kernels/activation/activation_avx2.c PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-ffp-contract=off")
set_source_files_properties(kernels/activation/activation_avx512.c PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx2;-mfma;-ffp-contract=off")

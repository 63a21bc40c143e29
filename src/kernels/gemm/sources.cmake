# f32-accumulating GEMM kernels: the ISA-independent driver and reference,
# then one file per ISA, each compiled with exactly its ISA's flags (the rest
# of the library targets baseline x86-64; sk__gemm_tile only calls a path the
# caller got from sk__cpu_isa()).
#
# Every file gets -ffp-contract=off: the contract is an explicit fmaf chain,
# and a compiler fusing some other multiply and add would change the bits.
list(APPEND SK_SOURCES
  kernels/gemm/gemm.c
  kernels/gemm/gemm_pack.c
  kernels/gemm/gemm_reference.c
  kernels/gemm/f32_gemm_scalar.c
  kernels/gemm/f32_gemm_avx2.c
  kernels/gemm/f32_gemm_avx512.c
  kernels/gemm/bf16_dot.c
  kernels/gemm/bf16_dot_check.c
  kernels/gemm/bf16_gemm_avx512bf16.c
  kernels/gemm/bf16_gemm_amx.c
  kernels/gemm/bf16_gemm_amx_emulated.c
)
set_source_files_properties(kernels/gemm/gemm.c kernels/gemm/gemm_pack.c kernels/gemm/gemm_reference.c
  kernels/gemm/f32_gemm_scalar.c kernels/gemm/bf16_dot.c kernels/gemm/bf16_gemm_amx_emulated.c
  PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
# The AMX contract's kernel: run only where sk__cpu_has_amx_bf16().
set_source_files_properties(kernels/gemm/bf16_gemm_amx.c
  PROPERTIES COMPILE_OPTIONS "-ffp-contract=off;-mamx-tile;-mamx-bf16")
set_source_files_properties(kernels/gemm/f32_gemm_avx2.c
  PROPERTIES COMPILE_OPTIONS "-ffp-contract=off;-mavx2;-mfma;-mf16c")
set_source_files_properties(kernels/gemm/f32_gemm_avx512.c
  PROPERTIES COMPILE_OPTIONS
  "-ffp-contract=off;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx2;-mfma;-mf16c")
set_source_files_properties(kernels/gemm/bf16_dot_check.c kernels/gemm/bf16_gemm_avx512bf16.c
  PROPERTIES COMPILE_OPTIONS
  "-ffp-contract=off;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512bf16;-mavx2;-mfma;-mf16c")

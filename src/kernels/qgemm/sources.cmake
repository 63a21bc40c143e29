# int8 GEMM kernels: the ISA-independent driver and reference (baseline
# x86-64), then one file per ISA, each compiled with exactly its ISA's flags
# (sk__qgemm_tile only calls a path the caller got from sk__cpu_isa(), and
# the VNNI one only from the avx512vnni rung up, the AMX one only when
# sk__cpu_isa() is SK_ISA_AMX: the CPU has it and the OS granted its state).
list(APPEND SK_SOURCES
  kernels/qgemm/qgemm.c
  kernels/qgemm/qgemm_scalar.c
  kernels/qgemm/qgemm_avx2.c
  kernels/qgemm/qgemm_avx512.c
  kernels/qgemm/qgemm_avx512vnni.c
  kernels/qgemm/qgemm_amx.c
)
set_source_files_properties(kernels/qgemm/qgemm_avx2.c
  PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(kernels/qgemm/qgemm_avx512.c
  PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx2;-mfma;-mf16c")
set_source_files_properties(kernels/qgemm/qgemm_avx512vnni.c
  PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512vnni;-mavx2;-mfma;-mf16c")
set_source_files_properties(kernels/qgemm/qgemm_amx.c
  PROPERTIES COMPILE_OPTIONS "-mamx-tile;-mamx-int8")

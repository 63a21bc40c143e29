# Kernels: one folder per kind, one ISA per file, each file compiled with its
# own ISA flags (the rest of the library is built for the baseline x86-64).
include(kernels/gemm/sources.cmake)
include(kernels/qgemm/sources.cmake)
include(kernels/convert/sources.cmake)
include(kernels/activation/sources.cmake)
include(kernels/moe/sources.cmake)
include(kernels/attention/sources.cmake)

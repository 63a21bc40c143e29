# int8 GEMM kernels (listed by their owner)

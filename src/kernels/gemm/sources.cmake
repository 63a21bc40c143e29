# f32-accumulating GEMM kernels

/* The arithmetic peak a GEMM kernel can approach, measured in the run that
 * compares with it: bench_gemm_large's "of peak" column. */
#ifndef SK_TOOLS_COMPUTE_PEAK_H
#define SK_TOOLS_COMPUTE_PEAK_H

/* GFLOP/s of `threads` threads (1..64) each running independent chains of
 * the widest multiply-add this CPU has for `bf16` (1: VDPBF16PS, 64 flops
 * an instruction, where the CPU has AVX512_BF16; else fp32 FMAs, 32 flops a
 * zmm or 16 a ymm one) on registers only, no memory: the best of 5 passes.
 * *what names the instruction. */
double sk_compute_peak_gflops(int bf16, int threads, const char **what);

#endif

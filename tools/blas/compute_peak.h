/* The arithmetic peak a GEMM kernel can approach, measured in the run that
 * compares with it: bench_gemm_large's "of peak" column. */
#ifndef SK_TOOLS_COMPUTE_PEAK_H
#define SK_TOOLS_COMPUTE_PEAK_H

/* GFLOP/s of `threads` threads (1..64) each running independent chains of
 * the fastest multiply-add this CPU has for `bf16` on registers only, no
 * memory: the best of 5 passes. For bf16, VDPBF16PS (64 flops an
 * instruction, where the CPU has AVX512_BF16) or the fp32 FMA, whichever
 * is faster here, as the library chooses its bf16 kernel (VDPBF16PS is
 * 0.5x the zmm FMA's rate on Intel Emerald Rapids, 2x on AMD Zen 4); else
 * fp32 FMAs, 32 flops a zmm or 16 a ymm one. *what names the instruction. */
double sk_compute_peak_gflops(int bf16, int threads, const char **what);

#endif

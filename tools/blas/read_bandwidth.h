/* The machine's read bandwidth, measured in the run that uses it: the
 * bandwidth floors of `sk bench` (moe-layer) and bench_gemm_large. */
#ifndef SK_TOOLS_READ_BANDWIDTH_H
#define SK_TOOLS_READ_BANDWIDTH_H

/* GB/s of `threads` threads (1..64) each summing its slice of a 512 MiB
 * buffer, the fastest of 5 passes; 0 when the buffer cannot be had. */
double sk_read_bandwidth_gbs(int threads);

#endif

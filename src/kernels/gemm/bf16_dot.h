/* Whether bf16 GEMMs may use VDPBF16PS: not trusted from CPUID alone. The
 * instruction computes the bf16 contract (bf16_contract.h) on the CPUs we
 * measured; another vendor, a microcode change or an emulator might not, so
 * the library runs the contract's corner cases and a batch of random lanes
 * through it once, and a CPU that differs keeps the FMA path (said once in
 * the log). */
#ifndef SK_KERNELS_GEMM_BF16_DOT_H
#define SK_KERNELS_GEMM_BF16_DOT_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"

/* Runs the corner cases and random_lanes pseudo-random lanes (from seed:
 * normal, tiny and denormal magnitudes) through VDPBF16PS and compares every
 * lane with two sk__bf16_step calls, odd element first. Returns the lanes
 * that differ, the first described in why. Only on a CPU with AVX512_BF16
 * (bf16_dot_check.c is compiled for it). */
size_t sk__bf16_dot_characterize(uint64_t seed, size_t random_lanes, char *why, size_t why_size);

/* The register-only rates, in GFLOP/s on the calling core, of VDPBF16PS
 * and of the zmm FMA (the FMA kernels' instruction): the best of a few
 * alternated runs of about 100 us each. */
void sk__bf16_dot_rates(double *dot_gflops, double *fma_gflops);

/* 1 when the CPU has VDPBF16PS ($SK_ISA allowing) and it passed the
 * characterization (run on the first call of this or the next). */
int sk__gemm_bf16_dot_checked(void);

/* 1 when the kernels for isa use VDPBF16PS: isa at least avx512bf16, the
 * instruction checked, and either faster than the FMA kernels' instruction
 * on this CPU (1.25x its rate or more, measured once: AMD Zen 4 and Zen 5
 * have twice the FMA's rate; Intel Emerald Rapids half, and there its bf16
 * GEMMs of 64-1024 rows ran 1.1-1.7x slower than the FMA path's) or
 * $SK_ISA=avx512bf16 forcing it. Either way the
 * bits are the same: only the speed depends on the choice. */
int sk__gemm_bf16_dot_usable(sk__isa isa);

#endif

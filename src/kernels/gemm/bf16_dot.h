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

/* 1 when the kernels for isa use VDPBF16PS: isa at least avx512bf16, the
 * CPU has the instruction ($SK_ISA allowing) and the characterization has
 * passed (it runs on the first call). */
int sk__gemm_bf16_dot_usable(sk__isa isa);

#endif

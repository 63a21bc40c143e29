/* Instruction-set selection: detected once from CPUID and XGETBV, best first,
 * scalar last. $SK_ISA (a rung's name: scalar, avx2, avx512, avx512bf16,
 * amx) lowers the choice (never raises it past what the CPU and OS
 * support), so tests cover every path on one machine. The rungs are listed
 * once, in core/isa_list.h:
 *   - avx2: AVX2 + FMA + F16C;
 *   - avx512: AVX-512 F/BW/DQ/VL (+ the AVX2 set);
 *   - avx512vnni: AVX-512 with VNNI (VPDPBUSD for int8 GEMMs);
 *   - avx512bf16: AVX-512 with AVX512_BF16 (VDPBF16PS for bf16 GEMMs, when
 *     the instruction passes the contract's self-check, kernels/gemm/bf16_dot.h);
 *   - amx: avx512bf16 or avx512vnni, plus AMX-INT8 tiles the OS let us use (int8
 *     GEMMs). */
#ifndef SK_CORE_CPU_H
#define SK_CORE_CPU_H

#include "core/isa_list.h"

#define SK__ISA_ENUM(suffix, name, needs) SK_ISA_##suffix,
typedef enum sk__isa { SK__ISA_LIST(SK__ISA_ENUM) SK__ISA_COUNT } sk__isa;
#undef SK__ISA_ENUM

/* Highest ISA the CPU and OS support, ignoring $SK_ISA; but AMX only when
 * $SK_ISA allowed asking the OS for it (unset or amx) and the OS agreed. */
sk__isa sk__cpu_isa_supported(void);
/* The ISA kernels use: the supported one, lowered by $SK_ISA; read once. */
sk__isa sk__cpu_isa(void);
/* AMX-INT8's gate: 0 when CPUID.(7,0):EDX lacks AMX-TILE (bit 24) or
 * AMX-INT8 (bit 25) or XCR0 the tile state (bits 17, 18), request() not
 * called; else request() (the arch_prctl permission call) decides: 1 when
 * it returns 0, -1 when it refuses. The detection calls it, only when
 * $SK_ISA allows AMX, and logs a refusal at info level; tests give it
 * made-up inputs. */
int sk__amx_decide(unsigned int cpuid7_edx, unsigned long long xcr0, int (*request)(void));
/* Whether the CPU has AVX512_BF16 and the chosen ISA allows it (at least
 * avx512bf16: an AMX CPU passes the rung without it being a condition). */
int sk__cpu_has_avx512_bf16(void);
/* Whether $SK_ISA named exactly isa and it was applied (a rung whose kernels
 * are otherwise chosen by speed then runs them: the tests' ISA variants). */
int sk__cpu_isa_forced(sk__isa isa);
/* Whether TDPBF16PS may run: the chosen ISA is amx (the OS granted the
 * tile state) and CPUID.(7,0):EDX has AMX-BF16 (bit 22). No GEMM uses it
 * (docs/ops.md); tests/test_bf16_amx.c holds it against its definition. */
int sk__cpu_has_amx_bf16(void);
/* How the GEMMs' few-row tiles (a decode step's) prefetch the weights they
 * stream: 1 non-temporal (NTA), 0 into every level (T0). Set with the ISA,
 * before any kernel runs: NTA on AMD, where it measured ~15% over T0 (Zen
 * 5, f32_gemm_avx512.c); T0 elsewhere, since on an Intel Xeon (family 6
 * model 167, KVM guest) NTA starved the stream: a 2048 x 4096 bf16
 * linear at one row read 1.6 GB/s with NTA, 26.7 GB/s with T0.
 * $SK_STREAM_PREFETCH=nta or t0 overrides the choice (for measuring). */
extern int sk__stream_nta;

/* The rung's name ($SK_ISA's spelling), and what a CPU needs for it. */
const char *sk__isa_name(sk__isa isa);
const char *sk__isa_needs(sk__isa isa);
/* The inverse: 1 and *isa_out set for one of those names, else 0. */
int sk__isa_from_name(const char *name, sk__isa *isa_out);

#endif

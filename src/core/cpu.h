/* Instruction-set selection: detected once from CPUID and XGETBV, best first,
 * scalar last. $SK_ISA=scalar|avx2|avx512|amx lowers the choice (never raises
 * it past what the CPU and OS support), so tests cover every path on one
 * machine. */
#ifndef SK_CORE_CPU_H
#define SK_CORE_CPU_H

typedef enum sk__isa {
  SK_ISA_SCALAR = 0,
  SK_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
  SK_ISA_AVX512 = 2, /* AVX-512 F/BW/DQ/VL (+ the AVX2 set) */
  SK_ISA_AMX = 3,    /* AVX-512 with VNNI, plus AMX-INT8 tiles the OS let us use (int8 GEMMs) */
} sk__isa;

/* Highest ISA the CPU and OS support, ignoring $SK_ISA. */
sk__isa sk__cpu_isa_supported(void);
/* The ISA kernels use: the supported one, lowered by $SK_ISA; read once. */
sk__isa sk__cpu_isa(void);
/* Whether AMX-INT8 can run: CPUID.(7,0):EDX has AMX-TILE (bit 24) and
 * AMX-INT8 (bit 25), XCR0 has the tile state (bits 17, 18), and request()
 * (the arch_prctl permission call) returns 0; a refusal is logged at info
 * level. Separate from the detection so tests can give it any inputs. */
int sk__amx_usable(unsigned int cpuid7_edx, unsigned long long xcr0, int (*request)(void));
/* Whether the CPU supports AVX-512 VNNI (for the int8 kernels). */
int sk__cpu_has_avx512_vnni(void);
/* "scalar", "avx2" or "avx512" ($SK_ISA's spellings). */
const char *sk__isa_name(sk__isa isa);
/* The inverse: 1 and *isa_out set for one of those names, else 0. */
int sk__isa_from_name(const char *name, sk__isa *isa_out);

#endif

/* Instruction-set selection: detected once from CPUID and XGETBV, best first,
 * scalar last. $SK_ISA=scalar|avx2|avx512 lowers the choice (never raises it
 * past what the CPU and OS support), so tests cover every path on one machine. */
#ifndef SK_CORE_CPU_H
#define SK_CORE_CPU_H

typedef enum sk__isa {
  SK_ISA_SCALAR = 0,
  SK_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
  SK_ISA_AVX512 = 2, /* AVX-512 F/BW/DQ/VL (+ the AVX2 set) */
} sk__isa;

/* Highest ISA the CPU and OS support, ignoring $SK_ISA. */
sk__isa sk__cpu_isa_supported(void);
/* The ISA kernels use: the supported one, lowered by $SK_ISA; read once. */
sk__isa sk__cpu_isa(void);
/* Whether the CPU supports AVX-512 VNNI (for the int8 kernels). */
int sk__cpu_has_avx512_vnni(void);
/* "scalar", "avx2" or "avx512" ($SK_ISA's spellings). */
const char *sk__isa_name(sk__isa isa);
/* The inverse: 1 and *isa_out set for one of those names, else 0. */
int sk__isa_from_name(const char *name, sk__isa *isa_out);

#endif

/* Which OpenBLAS kernels a floor ran on, and whether to trust it
 * (blas_core.c): shared by `sk bench` (OpenBLAS loaded at run time) and the
 * benchmarks in bench/ that link it.
 *
 * A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels ("core") from CPUID
 * when it loads. One that does not know the CPU falls back to an older core:
 * OpenBLAS 0.3.21 on Intel Emerald Rapids runs its Prescott (SSE) kernels,
 * about 4.7x slower than its SkylakeX ones. A ratio against such a floor
 * flatters us. So the floor's core is compared with what CPUID reports, by
 * the best ISA of each:
 *
 *   core (openblas_get_corename, any case)             ISA
 *   Prescott Core2 Penryn Dunnington Nehalem Atom
 *   Opteron Opteron_SSE3 Barcelona Bobcat Nano         SSE
 *   Sandybridge Bulldozer Piledriver Steamroller       AVX
 *   Haswell Zen Excavator                              AVX2
 *   SkylakeX Cooperlake SapphireRapids                 AVX-512
 *
 *   CPU (CPUID and XGETBV: what the OS saves)           ISA       right OPENBLAS_CORETYPE
 *   AVX512F                                             AVX-512   SKYLAKEX (Intel and AMD)
 *   AVX2 + FMA                                          AVX2      HASWELL (Intel), ZEN (AMD, Hygon)
 *   AVX                                                 AVX       SANDYBRIDGE
 *   otherwise                                           SSE       none
 *
 * AVX-512 is AVX512F with the ZMM state enabled: OpenBLAS's own test for
 * SkylakeX. On AMD Zen 4 OpenBLAS 0.3.21 itself picks Cooperlake (it has
 * AVX512-BF16); an older one picks Zen, and SKYLAKEX (AVX-512 kernels without
 * BF16, which sgemm does not use) is the type that runs on every AVX-512 CPU.
 *
 * The core matches when its ISA equals the CPU's. Older: a ratio against it
 * would be wrong, and the caller reruns with the right OPENBLAS_CORETYPE
 * (blas_core_fix). Newer: its kernels need instructions this CPU lacks and
 * would fault, so it is not run. A name not in the table is unknown: timed,
 * but no ratio, and not overridden (it may be a newer core we do not know).
 * An empty name or none: no core to judge, no floor.
 */
#ifndef SK_TOOLS_BLAS_CORE_H
#define SK_TOOLS_BLAS_CORE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum blas_isa {
  BLAS_ISA_UNKNOWN = 0, /* a core name not in the table */
  BLAS_ISA_SSE,
  BLAS_ISA_AVX,
  BLAS_ISA_AVX2,
  BLAS_ISA_AVX512,
} blas_isa;

typedef enum blas_vendor { BLAS_VENDOR_OTHER, BLAS_VENDOR_INTEL, BLAS_VENDOR_AMD } blas_vendor;

typedef struct blas_cpu {
  blas_vendor vendor;
  blas_isa isa;
  int family, model; /* CPUID leaf 1, extended fields folded in */
  char name[49];     /* the brand string, trimmed ("" when CPUID has none) */
} blas_cpu;

typedef enum blas_core_status {
  BLAS_CORE_NONE,    /* no core name: no floor */
  BLAS_CORE_MATCH,   /* the core's ISA is the CPU's: floor and ratios */
  BLAS_CORE_OLDER,   /* below the CPU's: floor times, no ratio */
  BLAS_CORE_NEWER,   /* above the CPU's: would fault, not run */
  BLAS_CORE_UNKNOWN, /* not in the table: floor times, no ratio */
} blas_core_status;

typedef struct blas_core_decision {
  blas_core_status status;
  blas_isa core_isa;
  /* The OPENBLAS_CORETYPE that matches the CPU; NULL for an SSE-only CPU. */
  const char *coretype;
} blas_core_decision;

/* Who set $OPENBLAS_CORETYPE for the loaded OpenBLAS. */
typedef enum blas_coretype_source {
  BLAS_CORETYPE_OPENBLAS, /* unset: OpenBLAS chose from CPUID */
  BLAS_CORETYPE_USER,     /* set (even empty) in the environment the program was started with */
  BLAS_CORETYPE_SK,       /* set by blas_core_fix before running again */
} blas_coretype_source;

/* What one process knows of its CPU and OpenBLAS. */
typedef struct blas_core_report {
  blas_cpu cpu;
  char core[32];     /* openblas_get_corename() */
  char config[160];  /* openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64" */
  char version[24];  /* its second word when it starts with "OpenBLAS " */
  char coretype[32]; /* $OPENBLAS_CORETYPE ("" unset or empty) */
  blas_coretype_source source;
  char chosen[32];   /* with BLAS_CORETYPE_SK: the core OpenBLAS had chosen */
  blas_core_decision decision;
} blas_core_report;

/* This CPU, from CPUID. */
void blas_cpu_detect(blas_cpu *cpu);

/* The pure part, testable with any CPU and name. */
blas_isa blas_core_isa(const char *corename);
blas_core_decision blas_core_decide(const blas_cpu *cpu, const char *corename);
const char *blas_isa_name(blas_isa isa);         /* "sse", "avx", "avx2", "avx512", "unknown" */
const char *blas_vendor_name(blas_vendor vendor); /* "Intel", "AMD", "other" */
const char *blas_core_status_name(blas_core_status status); /* "match", "older", ... */

/* Fills r for this CPU, the environment and OpenBLAS's answers (either may
 * be NULL). */
void blas_core_report_fill(blas_core_report *r, const char *corename, const char *config);
/* A ratio against this floor is true. */
bool blas_core_ratio_ok(const blas_core_report *r);
/* The floor may run (a core the CPU can execute). */
bool blas_core_runnable(const blas_core_report *r);

/* When r's core is older than the CPU (or newer), whether OpenBLAS chose it
 * or $OPENBLAS_CORETYPE from the environment did (not sk: no second
 * rerun), the build reads the variable (DYNAMIC_ARCH) and a right type
 * exists: sets it (and drops $OPENBLAS_L2_SIZE), says so on stderr as
 * `prog` and runs this program again
 * (/proc/self/exe with /proc/self/cmdline), which does not return. Returns
 * when none of that applies or the exec failed (said on stderr). Call it
 * before anything is timed or printed on stdout. */
void blas_core_fix(const blas_core_report *r, const char *prog);

/* For a program that links OpenBLAS: fills r, runs the program again when
 * blas_core_fix does, and prints the CPU, OpenBLAS and the verdict on its
 * core ("peer ..."), two lines on stdout. */
void blas_core_check(blas_core_report *r, const char *corename, const char *config, const char *prog);

/* One line for a table: "OpenBLAS 0.3.21, core Zen (OpenBLAS's choice)". */
void blas_core_describe(const blas_core_report *r, char *buf, size_t size);
/* One line on the CPU: "AMD EPYC (AMD family 25 model 1, avx2)". */
void blas_cpu_describe(const blas_cpu *cpu, char *buf, size_t size);
/* What the status means for the floor: "matches the CPU's avx2", ... */
void blas_core_verdict(const blas_core_report *r, char *buf, size_t size);

#endif

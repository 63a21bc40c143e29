/* The ISA gate of the ISA_VARIANTS tests (tests/CMakeLists.txt): a variant
 * run with $SK_ISA naming an ISA this CPU lacks would silently test a lower
 * path (the library ignores such a request with a warning), so the test
 * exits before main with HARNESS_SKIP_CODE, which ctest reports as skipped.
 *
 * $SK_TEST_ISA_SUPPORTED (a rung's name, core/isa_list.h; tests only) pretends the CPU
 * supports no more than that, so the skip can be checked on any machine. */
#ifndef SK_TEST_ISA_GATE_H
#define SK_TEST_ISA_GATE_H

#include <stddef.h>

#include "core/cpu.h"

typedef enum isa_gate_verdict {
  ISA_GATE_RUN,  /* no $SK_ISA, or one the CPU supports */
  ISA_GATE_SKIP, /* the CPU lacks the ISA asked for */
  ISA_GATE_BAD,  /* $SK_ISA is no ISA name: the variant is misconfigured, a failure */
} isa_gate_verdict;

/* The verdict for $SK_ISA = requested (NULL: unset) on a CPU supporting up
 * to `supported`; for SKIP and BAD, message gets the line to print
 * ("SKIPPED: SK_ISA=avx512 but this CPU lacks AVX-512 ..."). */
isa_gate_verdict isa_gate_decide(const char *requested, sk__isa supported, char *message, size_t size);

#endif

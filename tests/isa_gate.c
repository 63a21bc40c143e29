/* The ISA gate (see isa_gate.h). Linked into every ISA_VARIANTS test; its
 * constructor runs before main, so no test file has to call it. */
#include "isa_gate.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

/* What a CPU must have for each ISA, as core/cpu.c detects it. */
static const char *isa_needs(sk__isa isa) {
  switch (isa) {
    case SK_ISA_AMX: return "AMX-INT8 (AMX-TILE and AMX-INT8 on an AVX-512 VNNI CPU, the tile state granted by the OS)";
    case SK_ISA_AVX512BF16: return "AVX512_BF16 (VDPBF16PS) on an AVX-512 CPU";
    case SK_ISA_AVX512: return "AVX-512 (F, DQ, BW and VL, with OS support for the ZMM state)";
    case SK_ISA_AVX2: return "AVX2 with FMA and F16C (with OS support for the YMM state)";
    default: return "nothing";
  }
}

isa_gate_verdict isa_gate_decide(const char *requested, sk__isa supported, char *message, size_t size) {
  if (size) message[0] = '\0';
  if (!requested || !*requested) return ISA_GATE_RUN;
  sk__isa want;
  if (!sk__isa_from_name(requested, &want)) {
    snprintf(message, size, "SK_ISA=%s: not an ISA the tests know (scalar, avx2, avx512, avx512bf16, amx)", requested);
    return ISA_GATE_BAD;
  }
  if (want <= supported) return ISA_GATE_RUN;
  snprintf(message, size, "SKIPPED: SK_ISA=%s but this CPU lacks %s; it supports up to %s", requested,
           isa_needs(want), sk__isa_name(supported));
  return ISA_GATE_SKIP;
}

/* The CPU's ISA, lowered by $SK_TEST_ISA_SUPPORTED (never raised: the
 * library would not run a path the CPU lacks anyway). */
static sk__isa gate_supported(void) {
  sk__isa real = sk__cpu_isa_supported(), pretend;
  const char *s = getenv("SK_TEST_ISA_SUPPORTED");
  if (s && sk__isa_from_name(s, &pretend) && pretend < real) return pretend;
  return real;
}

__attribute__((constructor)) static void isa_gate_check(void) {
  char message[256];
  isa_gate_verdict v = isa_gate_decide(getenv("SK_ISA"), gate_supported(), message, sizeof message);
  if (v == ISA_GATE_RUN) return;
  fprintf(v == ISA_GATE_SKIP ? stdout : stderr, "%s\n", message);
  fflush(NULL);
  exit(v == ISA_GATE_SKIP ? HARNESS_SKIP_CODE : 1);
}

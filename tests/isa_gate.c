/* The ISA gate (see isa_gate.h). Linked into every ISA_VARIANTS test; its
 * constructor runs before main, so no test file has to call it. */
#include "isa_gate.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

isa_gate_verdict isa_gate_decide(const char *requested, sk__isa supported, char *message, size_t size) {
  if (size) message[0] = '\0';
  if (!requested || !*requested) return ISA_GATE_RUN;
  sk__isa want;
  if (!sk__isa_from_name(requested, &want)) {
    snprintf(message, size, "SK_ISA=%s: not an ISA the tests know (one of" SK__ISA_SPELLINGS ")", requested);
    return ISA_GATE_BAD;
  }
  if (want <= supported) return ISA_GATE_RUN;
  snprintf(message, size, "SKIPPED: SK_ISA=%s but this CPU lacks %s; it supports up to %s", requested,
           sk__isa_needs(want), sk__isa_name(supported));
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

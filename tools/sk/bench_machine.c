/*
 * The machine under `sk bench`'s numbers: the CPU (CPUID's brand string,
 * vendor, family, model and best ISA), the cores this process may run on,
 * and the floor's BLAS: OpenBLAS's version, build configuration and the core
 * whose kernels it runs, who chose that core and whether it matches the CPU
 * (blas_core.h). A ratio against the floor is printed only when it does.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "bench_machine.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "blas_floor.h"

/* CPUs this process may run on. */
static int machine_cores(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void sk_bench_machine_read(sk_bench_machine *m, bool with_floor) {
  blas_cpu_detect(&m->cpu);
  m->cores = machine_cores();
  m->blas = NULL;
  m->blas_why = "--no-floor";
  if (with_floor) m->blas = sk_blas_floor_core(&m->blas_why);
}

void sk_bench_machine_print(const sk_bench_machine *m) {
  char line[256];
  blas_cpu_describe(&m->cpu, line, sizeof line);
  printf("machine %s, %d cores\n", line, m->cores);
  if (!m->blas) {
    printf("floor none: %s\n", m->blas_why ? m->blas_why : "?");
    return;
  }
  char verdict[160];
  blas_core_describe(m->blas, line, sizeof line);
  blas_core_verdict(m->blas, verdict, sizeof verdict);
  printf("floor %s: %s\n", line, verdict);
}

void sk_json_string(const char *s) {
  if (!s) {
    printf("null");
    return;
  }
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if (*p < 0x20) printf("\\u%04x", *p);
    else putchar(*p);
  putchar('"');
}

static const char *nonempty(const char *s) { return s && *s ? s : NULL; }

void sk_bench_machine_json(const sk_bench_machine *m) {
  printf("{\"cores\": %d,\n    \"cpu\": {\"name\": ", m->cores);
  sk_json_string(nonempty(m->cpu.name));
  printf(", \"vendor\": \"%s\", \"family\": %d, \"model\": %d, \"isa\": \"%s\"},\n    \"blas\": ",
         blas_vendor_name(m->cpu.vendor), m->cpu.family, m->cpu.model, blas_isa_name(m->cpu.isa));
  const blas_core_report *b = m->blas;
  if (b) {
    static const char *const set_by[] = {"openblas", "user", "sk"};
    printf("{\"name\": \"OpenBLAS\", \"version\": ");
    sk_json_string(nonempty(b->version));
    printf(", \"config\": ");
    sk_json_string(nonempty(b->config));
    printf(",\n             \"core\": ");
    sk_json_string(nonempty(b->core));
    printf(", \"core_isa\": \"%s\", \"core_status\": \"%s\", \"core_matches\": %s,\n             \"coretype\": ",
           blas_isa_name(b->decision.core_isa), blas_core_status_name(b->decision.status),
           blas_core_ratio_ok(b) ? "true" : "false");
    sk_json_string(b->source == BLAS_CORETYPE_OPENBLAS ? NULL : b->coretype);
    printf(", \"coretype_set_by\": \"%s\", \"openblas_chose\": ", set_by[b->source]);
    sk_json_string(b->source == BLAS_CORETYPE_SK ? b->chosen : b->source == BLAS_CORETYPE_OPENBLAS ? b->core : NULL);
    printf("}");
  } else {
    printf("null");
  }
  printf(",\n    \"blas_why\": ");
  sk_json_string(m->blas_why);
  printf("}");
}

/* The machine as `sk bench` reports it (bench_machine.c): the CPU, the cores
 * this process may run on, and the floor's BLAS, version and core. */
#ifndef SK_TOOLS_BENCH_MACHINE_H
#define SK_TOOLS_BENCH_MACHINE_H

#include <stdbool.h>

#include "blas_core.h"

typedef struct sk_bench_machine {
  blas_cpu cpu;
  int cores;
  const blas_core_report *blas; /* NULL: OpenBLAS not loaded */
  const char *blas_why;         /* why there is no floor (NULL: there is one) */
} sk_bench_machine;

/* Reads the machine; with_floor loads OpenBLAS and checks its core, which
 * may run sk again (sk_blas_floor_core): call it before printing anything. */
void sk_bench_machine_read(sk_bench_machine *m, bool with_floor);
/* Two lines of the table's header: the machine and the floor. */
void sk_bench_machine_print(const sk_bench_machine *m);
/* s as a JSON string (quoted, escaped) on stdout, or null. */
void sk_json_string(const char *s);
/* The JSON object, without a newline after it. */
void sk_bench_machine_json(const sk_bench_machine *m);

#endif

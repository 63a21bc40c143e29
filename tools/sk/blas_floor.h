/* The GEMM floor of `sk bench` (blas_floor.c): OpenBLAS, loaded at run
 * time, on a scenario's matrix products in fp32. */
#ifndef SK_TOOLS_BLAS_FLOOR_H
#define SK_TOOLS_BLAS_FLOOR_H

#include "blas_core.h"
#include "models.h"

#define SK_FLOOR_MAX_GEMMS 8

typedef struct sk_blas_floor sk_blas_floor;

/* Loads OpenBLAS (once per process; never unloaded) and checks its core
 * against the CPU once (blas_core.h). When the core is older (or newer) than
 * the CPU and $OPENBLAS_CORETYPE is unset, it sets the right one and runs
 * sk again with the same arguments: call it before printing or timing
 * anything. NULL with *why set when OpenBLAS is not loaded; *why is also set
 * when the floor cannot run on that core (a newer one, or none reported). */
const blas_core_report *sk_blas_floor_core(const char **why);
/* sk_blas_floor_core, then prepares fp32 operands for the scenario's products;
 * NULL with *why set when OpenBLAS is not installed (or lacks a symbol). */
sk_blas_floor *sk_blas_floor_open(const char *scenario, const char **why);
/* Sets OpenBLAS's thread count for the following runs; returns the count
 * it then reports (1 for a single-threaded build of OpenBLAS). */
int sk_blas_floor_threads(sk_blas_floor *f, int threads);
/* One pass over every product; returns its wall time in microseconds. */
double sk_blas_floor_run_us(sk_blas_floor *f);
/* Whether a ratio against this floor is true: its core matches the CPU. */
bool sk_blas_floor_ratio_ok(const sk_blas_floor *f);
/* The products' arithmetic, in GFLOP (2 m n k per product). */
double sk_blas_floor_gflop(const sk_blas_floor *f);
void sk_blas_floor_close(sk_blas_floor *f);

#endif

/* The GEMM floor of `sk bench` (blas_floor.c): OpenBLAS, loaded at run
 * time, on a scenario's matrix products in fp32. */
#ifndef SK_TOOLS_BLAS_FLOOR_H
#define SK_TOOLS_BLAS_FLOOR_H

#include "models.h"

#define SK_FLOOR_MAX_GEMMS 8

typedef struct sk_blas_floor sk_blas_floor;

/* Loads OpenBLAS (once per process; never unloaded) and prepares fp32 operands for the scenario's products;
 * NULL with *why set when OpenBLAS is not installed (or lacks a symbol). */
sk_blas_floor *sk_blas_floor_open(const char *scenario, const char **why);
/* Sets OpenBLAS's thread count for the following runs; returns the count
 * it then reports (1 for a single-threaded build of OpenBLAS). */
int sk_blas_floor_threads(sk_blas_floor *f, int threads);
/* One pass over every product; returns its wall time in microseconds. */
double sk_blas_floor_run_us(sk_blas_floor *f);
/* The products' arithmetic, in GFLOP (2 m n k per product). */
double sk_blas_floor_gflop(const sk_blas_floor *f);
void sk_blas_floor_close(sk_blas_floor *f);

#endif

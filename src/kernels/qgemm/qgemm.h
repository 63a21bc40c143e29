/* int8 GEMM with exact int32 accumulation, for quant_matmul and the int8 path
 * of grouped_matmul. Integer sums are exact, so every ISA path and the
 * reference agree bit for bit whatever the order:
 *
 *   C[i, j] = sum over p of (int32)A[i, p] * (int32)B[p, j]
 *
 * A [m, k] and B [k, n] are int8, row-major with leading dimensions in
 * elements; C is int32. k is at most 131071 (|sum| < 2^31 guaranteed).
 * The epilogue (bias, scales, output dtype) is the caller's.
 */
#ifndef SK_KERNELS_QGEMM_H
#define SK_KERNELS_QGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"

#define SK_QGEMM_MAX_K 131071

typedef struct sk__qgemm_problem {
  int64_t m, n, k;
  const int8_t *a; int64_t lda; /* A [m, k] */
  const int8_t *b; int64_t ldb; /* B [k, n] */
  /* B already packed whole by sk__qgemm_pack_b for the ISA the tile runs
   * with, or NULL: the tile then packs its columns itself. */
  const void *b_packed;
} sk__qgemm_problem;

/* Packing B once (constant weights, at compile): the panels and column
 * sums sk__qgemm_tile builds per tile, in groups of columns that each lie
 * in one run over all of k (kernels/packed_groups.h; qgemm.c: the packed layout), so a tile of few
 * rows streams its weights in one pass; reading it gives the same
 * integers. dst: sk__qgemm_packed_b_size bytes, 64-byte aligned. */
size_t sk__qgemm_packed_b_size(sk__isa isa, int64_t k, int64_t n);
void sk__qgemm_pack_b(sk__isa isa, const int8_t *b, int64_t ldb, int64_t k, int64_t n, void *dst);

/* Bytes of workspace sk__qgemm_tile needs for a tile of at most tile_m rows
 * and tile_n columns with this k (packed panels), for any ISA. */
size_t sk__qgemm_workspace_size(int64_t tile_m, int64_t tile_n, int64_t k);

/* Computes C[m0:m1, n0:n1] of p into c (int32, leading dimension ldc, so
 * c points at the tile's element (m0, n0)) with the given ISA path (the
 * node's io->isa: sk__qgemm_config_for's kernel, VNNI from the avx512vnni
 * rung up). workspace holds sk__qgemm_workspace_size(...)
 * bytes, 64-byte aligned. Tiles are independent. */
void sk__qgemm_tile(const sk__qgemm_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                    int32_t *c, int64_t ldc, void *workspace, sk__isa isa);

/* Tile granularity the kernels prefer for this ISA. */
void sk__qgemm_micro_tile(sk__isa isa, int64_t *mr, int64_t *nr);

/* The int8 micro-kernel isa runs ("avx512vnni", "amx", ...): sk plan and
 * sk_program_describe print it. */
const char *sk__qgemm_kernel_name(sk__isa isa);

/* The plain reference (the test oracle): C [m, n] with leading dimension ldc. */
void sk__qgemm_reference(const sk__qgemm_problem *p, int32_t *c, int64_t ldc);

#endif

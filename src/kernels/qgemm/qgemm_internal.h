/* Internals shared by the int8 GEMM driver (qgemm.c) and the per-ISA files.
 *
 * Data flow of one tile (see qgemm.c for the loops): K is split into blocks
 * of at most cfg->kc rows (integer sums are exact, so any order gives the
 * same bits and K blocking is free to use); per K block
 *   - B is packed, nc columns at a time, into NR-column micro-panels: panel
 *     j holds kcp = round_up(kc, kgroup) rows (rows past kc are zero) laid
 *     out as kcp / kgroup groups of NR columns x kgroup consecutive k values
 *     (what one vpdpbusd / vpmaddwd lane consumes), plus the int32 column
 *     sums of the block when the ISA needs them (the VNNI +128 trick);
 *   - MR rows of A are copied (converted: u8 = a ^ 0x80 for VNNI, int16 for
 *     the vpmaddwd paths) into rows of stride sk__qgemm_a_stride bytes;
 *   - the micro-kernel keeps an MR x NR int32 block in registers for the
 *     whole K block, then stores it into C (first K block) or adds it to C.
 */
#ifndef SK_KERNELS_QGEMM_INTERNAL_H
#define SK_KERNELS_QGEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/qgemm/qgemm.h"

/* Converts rows [0, mr) of A (row stride lda, kc columns) into rows of
 * a_stride bytes at dst, each holding kcp elements (the tail past kc is
 * zero or any value: the matching B rows are zero). */
typedef void (*sk__qgemm_pack_a_fn)(size_t mr, size_t kc, const int8_t *a, size_t lda, void *dst,
                                    size_t a_stride);

/* Packs columns [0, nc) of kc rows of B (row stride ldb) into ceil(nc / NR)
 * micro-panels of kcp * NR elements each (columns past nc and rows past kc
 * are zero); colsum receives round_up(nc, NR) int32 column sums of the kc
 * rows, or is ignored by ISAs that need none. */
typedef void (*sk__qgemm_pack_b_fn)(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst,
                                    int32_t *colsum);

/* C[0:mr, 0:nr] (=, or += when accumulate) A_rows @ W for one micro-panel:
 * a holds mr (1..MR) packed rows of a_stride bytes, w one panel of kcp rows,
 * colsum NR column sums of that panel; c has leading dimension ldc. */
typedef void (*sk__qgemm_ukernel_fn)(size_t mr, size_t nr, size_t kcp, const void *a, size_t a_stride,
                                     const void *w, const int32_t *colsum, int32_t *c, size_t ldc,
                                     int accumulate);

typedef struct sk__qgemm_config {
  const char *name;
  int mr, nr;
  int kgroup;     /* packed K is padded with zero rows to a multiple of this */
  int elem_bytes; /* bytes per packed A element: 1 (int8 / uint8) or 2 (int16) */
  int kc;         /* K block (a multiple of kgroup): a B micro-panel is kc * NR elements */
  sk__qgemm_pack_a_fn pack_a;
  sk__qgemm_pack_b_fn pack_b;
  sk__qgemm_ukernel_fn ukernel;
  int b_elem_bytes; /* bytes per packed B element: what a decode step streams */
  /* NULL, or the ISA's own loop nest in place of the driver's (AMX: C
   * stays in the tiles over all of k, A is read where it lies), with the
   * workspace it needs (NULL: the driver's). */
  void (*tile)(const struct sk__qgemm_config *cfg, const sk__qgemm_problem *p, int64_t m0, int64_t m1, int64_t n0,
               int64_t n1, int32_t *c, int64_t ldc, void *workspace);
  size_t (*workspace_size)(const struct sk__qgemm_config *cfg, size_t tile_m, size_t tile_n, size_t k);
} sk__qgemm_config;

/* One configuration per ISA file. */
extern const sk__qgemm_config sk__qs8_gemm_config_scalar;
extern const sk__qgemm_config sk__qs8_gemm_config_avx2;
extern const sk__qgemm_config sk__qs8_gemm_config_avx512;
extern const sk__qgemm_config sk__qs8_gemm_config_avx512vnni;
extern const sk__qgemm_config sk__qs8_gemm_config_amx;

/* The VNNI configuration's pack_b (VNNI's panels are AMX's but for the K
 * padding: qgemm_amx.c packs with it where the CPU has VNNI). */
void sk__qgemm_pack_b_vnni(size_t kc, size_t nc, const int8_t *b, size_t ldb, void *dst, int32_t *colsum);

/* The configuration sk__qgemm_tile uses for an ISA on this CPU. */
const sk__qgemm_config *sk__qgemm_config_for(sk__isa isa);

/* sk__qgemm_tile with an explicit configuration (tests run every path the
 * CPU supports, e.g. AVX-512 without VNNI on a VNNI machine). */
void sk__qgemm_tile_config(const sk__qgemm_config *cfg, const sk__qgemm_problem *p, int64_t m0, int64_t m1,
                           int64_t n0, int64_t n1, int32_t *c, int64_t ldc, void *workspace);

/* Row stride in bytes of packed A rows of `bytes` bytes: whole 64-byte lines
 * (so every row starts aligned and full-vector stores fit), an odd number
 * of them so MR rows walked in lockstep do not collide in L1 sets. */
static inline size_t sk__qgemm_a_stride(size_t bytes) {
  size_t lines = (bytes + 63) / 64;
  return 64 * (lines | 1);
}

static inline size_t sk__qgemm_round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/* sk__qgemm_packed_b_size / sk__qgemm_pack_b for one configuration (the
 * tests pack for each configuration of an ISA). */
size_t sk__qgemm_packed_b_size_config(const sk__qgemm_config *cfg, int64_t k, int64_t n);
void sk__qgemm_pack_b_config(const sk__qgemm_config *cfg, const int8_t *b, int64_t ldb, int64_t k, int64_t n,
                             void *dst);

/* Where panel j's K block starting at row pc lies in B packed whole for a
 * k x n matrix (bytes from its start), and where that block's column sums
 * for panel j begin. */
void sk__qgemm_packed_at(const sk__qgemm_config *cfg, size_t k, size_t n, size_t j, size_t pc, size_t *panel,
                         size_t *sums);

#endif

/* GEMM with fp32 accumulation for the float path of grouped_matmul.
 *
 * The arithmetic contract, which every ISA path and the reference follow so
 * that all of them give the same bits:
 *
 *   for each (i, j):  acc = +0.0f
 *                     for p = 0 .. k-1 in order: acc = fmaf(A[i,p], B[p,j], acc)
 *                     y = acc + bias[j]        (fp32 add; skipped when bias is NULL)
 *                     C[i,j] = y rounded to c_dtype (round to nearest even)
 *
 * except that a NaN y is stored as the canonical quiet NaN of c_dtype
 * (0x7FC00000, 0x7E00, 0x7FC0): which input NaN's payload an FMA propagates
 * depends on the instruction form and the CPU, so only this makes every path
 * agree bit for bit (see gemm_internal.h).
 *
 * A, B and bias are fp32, fp16 or bf16 (widened exactly to fp32); C is fp32,
 * fp16 or bf16. All matrices are row-major with leading dimensions in
 * elements. The weight layout is (K, N): C = A @ B, no implicit transpose.
 */
#ifndef SK_KERNELS_GEMM_H
#define SK_KERNELS_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"
#include "superkernel.h"

typedef struct sk__gemm_problem {
  int64_t m, n, k;
  const void *a; sk_dtype a_dtype; int64_t lda;   /* A [m, k] */
  const void *b; sk_dtype b_dtype; int64_t ldb;   /* B [k, n] */
  const void *bias; sk_dtype bias_dtype;          /* [n], or NULL */
  void *c; sk_dtype c_dtype; int64_t ldc;         /* C [m, n] */
  /* B already packed whole by sk__gemm_pack_b for the ISA and numerics the
   * tile runs with (in b_dtype's panels), or NULL: the tile then packs its
   * columns itself. */
  const void *b_packed;
  /* The contract (0 reads as SK_NUMERICS_DEFAULT). SK_NUMERICS_AMX
   * changes bf16 A times bf16 B only (bf16_contract.h, "AMX"): every other
   * pair of dtypes keeps the contract above. */
  sk_numerics numerics;
} sk__gemm_problem;

/* Packing B once (constant weights, at compile): B [k, n] in the
 * micro-kernel's panels for `isa`, holding B's own values: fp32 as fp32,
 * fp16 and bf16 as their 16 bits, in groups of panels that each lie in one
 * run over all of k (kernels/packed_groups.h; gemm.c: the packed layout), so that a tile of few rows
 * streams its weights in one pass. A decode step reads each weight once,
 * so its time is the weights' bytes; 16-bit panels keep them at half of
 * fp32's, widened in registers as they are used, or (many rows) block by
 * block in cache (exactly: the widening is exact). sk__gemm_packed_b_size
 * gives the bytes. A tile reading the panels computes the same bits as one
 * packing itself. */
size_t sk__gemm_packed_b_size(sk__isa isa, sk_dtype b_dtype, int64_t k, int64_t n);
/* dst: sk__gemm_packed_b_size bytes, 64-byte aligned. bf16 weights take
 * the pair layout for the AMX contract (numerics) and on a CPU whose bf16
 * dot products are used. */
void sk__gemm_pack_b(sk__isa isa, sk_numerics numerics, const void *b, sk_dtype b_dtype, int64_t ldb, int64_t k,
                     int64_t n, void *dst);

/* Bytes of workspace sk__gemm_tile needs for a tile of at most tile_m rows
 * and tile_n columns with this k (packed panels); 64-byte aligned. */
size_t sk__gemm_workspace_size(int64_t tile_m, int64_t tile_n, int64_t k);

/* Computes C[m0:m1, n0:n1] with the given ISA path (the caller passes
 * sk__cpu_isa()). workspace holds sk__gemm_workspace_size(m1-m0, n1-n0, k)
 * bytes, 64-byte aligned; tiles are independent, so blocks of a launch may
 * compute disjoint tiles at once. */
void sk__gemm_tile(const sk__gemm_problem *p, int64_t m0, int64_t m1,
                   int64_t n0, int64_t n1, void *workspace, sk__isa isa);

/* Tile granularity the kernels prefer for this ISA: callers make tile
 * heights multiples of *mr and widths multiples of *nr where they can. */
void sk__gemm_micro_tile(sk__isa isa, int64_t *mr, int64_t *nr);
/* The same for a product of these dtypes under numerics: the AMX
 * contract's bf16 x bf16 blocks are 32 rows (its tiles' 16 twice). */
void sk__gemm_micro_tile_for(sk__isa isa, sk_numerics numerics, sk_dtype a_dtype, sk_dtype b_dtype, int64_t *mr,
                             int64_t *nr);

/* The micro-kernel a tile of these dtypes runs with isa, e.g. "bf16 dot
 * products 8x32 (avx512bf16)" or "fp32 FMA 8x32 (avx512)": sk plan and
 * sk_program_describe print it. */
const char *sk__gemm_kernel_name(sk__isa isa, sk_numerics numerics, sk_dtype a_dtype, sk_dtype b_dtype);

/* Steps of k one micro-kernel call covers: k itself up to a limit, else a
 * fixed block, the sums carried across blocks (tests aim at the edges). */
int64_t sk__gemm_k_block(int64_t k);

/* The plain reference (the test oracle): the contract above (or p's
 * numerics') as loops. */
void sk__gemm_reference(const sk__gemm_problem *p);

#endif

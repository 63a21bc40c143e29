/* The AMX contract's GEMM kernel (SK_NUMERICS_AMX; bf16_contract.h,
 * "AMX"): bf16 rows of A times bf16 weights with TDPBF16PS, 32 k values
 * (16 pairs) an instruction. Two entries:
 *   - a micro-kernel for the driver's loops (gemm.c), as the VDPBF16PS
 *     kernel's: the same pair layouts, K blocks, fp32 sums carried between
 *     them and epilogue (weights packed per tile, narrow panels);
 *   - whole_k, its own loop for weights packed at compile: A packed once
 *     in tile order, each block's sums in the tiles over all of k.
 *
 * Block 32 x 32: C in tmm0-3 (2 x 2 tiles of 16 x 16 fp32), A in tmm4-5 (16
 * rows x 16 pairs each, at a row stride of a_stride pairs), B in
 * tmm6-7 (16 pair rows x 16 columns each: the first and second 64 bytes of
 * the panel's 128-byte pair rows; a narrower panel, an ISA below AVX-512's,
 * is widened a step at a time). Every tile is 16 rows x 64 bytes, the
 * configuration the thread keeps (amx_full_tiles.h). A K block's last
 * instruction, when its pairs are not a whole 16, reads copies of A's and
 * B's last pairs padded with zero pairs: the contract's zero padding (a
 * tile load past them would read the next panel's weights). Rows of A past
 * mr are whatever the driver's buffer holds: their sums are not stored.
 *
 * The sums leave through a 32 x 32 fp32 block: the carried sums (acc_out)
 * or the epilogue, y = step(1, bias, acc) and the store with the NaN rule,
 * as every GEMM path's.
 *
 * Built twice: with the instructions (-mamx-tile -mamx-bf16, run only
 * where sk__cpu_has_amx_bf16()) and with SK_AMX_EMULATE
 * (bf16_gemm_amx_emulated.c): the same bits, the emulation at a small
 * fraction of the speed, for CPUs without AMX-BF16. */
#include <stdint.h>
#include <string.h>

#include "kernels/amx_full_tiles.h"
#include "kernels/amx_tiles.h"
#include "kernels/convert/convert.h"
#include "kernels/gemm/bf16_contract.h"
#include "kernels/gemm/gemm_internal.h"

#define MR 32
#define NR 32
#define PAIRS 16 /* one A tile's row: 16 pairs, 32 k values */

#ifdef SK_AMX_EMULATE
#define CONFIG_NAME sk__bf16_gemm_config_amx_emulated
#define NAME_WS sk__bf16_gemm_amx_emulated_workspace
#else
#define CONFIG_NAME sk__bf16_gemm_config_amx
#define NAME_WS sk__bf16_gemm_amx_workspace
#endif

#define SK_ALWAYS_INLINE static inline __attribute__((always_inline))

/* One instruction step for the tiles the block has (two_rows, two_cols
 * constant after inlining): A rows from a (stride a_bytes), B pair rows
 * from w (stride NR lanes). */
SK_ALWAYS_INLINE void step(int two_rows, int two_cols, const uint32_t *a, size_t a_bytes, const uint32_t *w) {
  TILE_LOAD(4, a, a_bytes);
  TILE_LOAD(6, w, NR * 4);
  if (two_cols) TILE_LOAD(7, w + 16, NR * 4);
  TILE_DPBF16PS(0, 4, 6);
  if (two_cols) TILE_DPBF16PS(1, 4, 7);
  if (two_rows) {
    TILE_LOAD(5, (const char *)a + 16 * a_bytes, a_bytes);
    TILE_DPBF16PS(2, 5, 6);
    if (two_cols) TILE_DPBF16PS(3, 5, 7);
  }
}

/* C's tiles start at zero, or from acc_in (MR x NR fp32 rows). */
SK_ALWAYS_INLINE void sums_begin(int two_rows, int two_cols, const float *acc_in) {
  TILE_BARRIER(); /* the tiles read memory the compiler cannot see them read */
  if (acc_in) {
    TILE_LOAD(0, acc_in, NR * 4);
    if (two_cols) TILE_LOAD(1, acc_in + 16, NR * 4);
    if (two_rows) TILE_LOAD(2, acc_in + 16 * NR, NR * 4);
    if (two_rows && two_cols) TILE_LOAD(3, acc_in + 16 * NR + 16, NR * 4);
  } else {
    TILE_ZERO(0);
    if (two_cols) TILE_ZERO(1);
    if (two_rows) TILE_ZERO(2);
    if (two_rows && two_cols) TILE_ZERO(3);
  }
}

/* C's tiles out to sums (MR x NR fp32 rows). */
SK_ALWAYS_INLINE void sums_end(int two_rows, int two_cols, float *sums) {
  TILE_STORE(0, sums, NR * 4);
  if (two_cols) TILE_STORE(1, sums + 16, NR * 4);
  if (two_rows) TILE_STORE(2, sums + 16 * NR, NR * 4);
  if (two_rows && two_cols) TILE_STORE(3, sums + 16 * NR + 16, NR * 4);
  TILE_BARRIER(); /* and wrote memory it cannot see them write */
}

/* C += A W over kp pairs: a (mr rows, stride a_stride pairs), w (kp pair
 * rows of w_lanes lanes). copy_a: A's rows past mr are not there to load
 * (A read in place), so A is copied a step at a time with zero rows. */
SK_ALWAYS_INLINE void sums_steps(int two_rows, int two_cols, size_t mr, size_t kp, const uint32_t *a,
                                 size_t a_stride, const uint32_t *w, size_t w_lanes, int copy_a) {
  const size_t a_bytes = a_stride * 4;
  for (size_t q = 0; q < kp; q += PAIRS) {
    const size_t pairs = kp - q < PAIRS ? kp - q : PAIRS;
    if (pairs == PAIRS && w_lanes == NR && !copy_a) {
      step(two_rows, two_cols, a + q, a_bytes, w + q * NR);
      continue;
    }
    /* The last pairs, zero-padded to an instruction's; panels narrower
     * than NR lanes (an ISA below AVX-512: the emulation) widened to it;
     * or A's rows padded with zero ones. */
    _Alignas(64) uint32_t a_step[MR * PAIRS], w_step[PAIRS * NR];
    const uint32_t *a_at = a + q, *w_at = w + q * NR;
    size_t a_step_bytes = a_bytes;
    if (pairs < PAIRS || w_lanes != NR) {
      memset(w_step, 0, sizeof w_step);
      for (size_t r = 0; r < pairs; r++) memcpy(w_step + r * NR, w + (q + r) * w_lanes, w_lanes * 4);
      w_at = w_step;
    }
    if (pairs < PAIRS || copy_a) {
      memset(a_step, 0, sizeof a_step);
      for (size_t i = 0; i < mr; i++) memcpy(a_step + i * PAIRS, a + i * a_stride + q, pairs * 4);
      a_at = a_step, a_step_bytes = PAIRS * 4;
    }
    TILE_BARRIER();
    step(two_rows, two_cols, a_at, a_step_bytes, w_at);
  }
}

/* The four forms of begin-steps-end, by the tiles an mr x nr block has. */
#define SK__BY_TILES(mr, nr, call)      \
  do {                                  \
    if ((mr) > 16 && (nr) > 16) call(1, 1); \
    else if ((mr) > 16) call(1, 0);     \
    else if ((nr) > 16) call(0, 1);     \
    else call(0, 0);                    \
  } while (0)

/* y = step(1, bias, acc): a plain add under the driver's MXCSR.FTZ/DAZ; a
 * NaN stored as the canonical one (gemm_internal.h); each row converted
 * to c's dtype at once (sk__convert rounds as the scalar store does). */
static void epilogue(size_t mr, size_t nr, float *sums, const float *bias, void *c, size_t ldc, sk_dtype c_dtype) {
  const size_t es = sk_dtype_size(c_dtype);
  const sk__isa isa = sk__cpu_isa();
  float canonical;
  const uint32_t nan_bits = SK__GEMM_NAN_F32;
  memcpy(&canonical, &nan_bits, sizeof canonical);
  for (size_t i = 0; i < mr; i++) {
    float *row = sums + i * NR;
    if (bias)
      for (size_t j = 0; j < nr; j++) row[j] = row[j] + bias[j];
    for (size_t j = 0; j < nr; j++) row[j] = row[j] != row[j] ? canonical : row[j];
    sk__convert(row, SK_FP32, (char *)c + i * ldc * es, c_dtype, nr, isa);
  }
}

static void ukernel_amx_bf16(size_t mr, size_t nr, size_t kp, const uint32_t *a, size_t a_stride, const uint32_t *w,
                             size_t w_lanes, const float *acc_in, float *acc_out, const float *bias, void *c,
                             size_t ldc, sk_dtype c_dtype) {
  sk__amx_use_full_tiles();
  _Alignas(64) float local[MR * NR];
  float *sums = acc_out ? acc_out : local;
#define ONE_K_BLOCK(tr, tc)                                          \
  do {                                                               \
    sums_begin(tr, tc, acc_in);                                      \
    sums_steps(tr, tc, mr, kp, a, a_stride, w, w_lanes, 0);          \
    sums_end(tr, tc, sums);                                          \
  } while (0)
  SK__BY_TILES(mr, nr, ONE_K_BLOCK);
#undef ONE_K_BLOCK
  if (!acc_out) epilogue(mr, nr, sums, bias, c, ldc, c_dtype);
}

/* Columns of packed weights per chunk: about 1 MiB of panels (half an
 * L2 of the Xeons with AMX), re-read from there by each row block. */
#define CHUNK_BYTES (1u << 20)
#define A_STEP_U32 (MR * PAIRS) /* one step of a packed row block: 32 rows x 16 pairs, 2 KiB */

size_t NAME_WS(size_t tile_m, size_t k);

/* Bytes of the whole-k loop's packed A for a tile of tile_m rows. */
size_t NAME_WS(size_t tile_m, size_t k) {
  const size_t ks = k + (k & 1), steps = (ks + 2 * PAIRS - 1) / (2 * PAIRS);
  return (tile_m + MR - 1) / MR * steps * A_STEP_U32 * 4;
}

/* A's rows [m0, m1) packed for the tiles: row block after row block, in
 * each its steps of 16 pairs, each 32 rows x 64 bytes (both A tiles,
 * stride 64), rows past m1 and pairs past k zero. Read once per tile from
 * contiguous memory (in place, 16 rows 4 KiB apart shared L1 sets: 1.9 ms
 * for 512 x 2048 x 768 on an Intel Xeon, family 6 model 167). */
static void pack_a_tiles(const sk__gemm_problem *p, size_t m0, size_t m1, uint32_t *dst) {
  const size_t k = (size_t)p->k, lda = (size_t)p->lda, steps = NAME_WS(1, k) / (A_STEP_U32 * 4);
  const uint16_t *a = p->a;
  for (size_t i0 = m0; i0 < m1; i0 += MR) {
    uint32_t *blk = dst + (i0 - m0) / MR * steps * A_STEP_U32;
    const size_t rows = m1 - i0 < MR ? m1 - i0 : MR;
    for (size_t s = 0; s < steps; s++) {
      const size_t q = s * 2 * PAIRS, have = k > q ? (k - q < 2 * PAIRS ? k - q : 2 * PAIRS) : 0;
      uint16_t *out = (uint16_t *)(void *)(blk + s * A_STEP_U32);
      for (size_t i = 0; i < MR; i++, out += 2 * PAIRS) {
        const size_t n = i < rows ? have : 0;
        if (n == 2 * PAIRS) {
          memcpy(out, a + (i0 + i) * lda + q, 4 * PAIRS); /* a constant size: plain moves, not rep movs */
          continue;
        }
        if (n) memcpy(out, a + (i0 + i) * lda + q, n * 2);
        memset(out + n, 0, (2 * PAIRS - n) * 2);
      }
    }
  }
}

/* The whole-k loop (gemm_internal.h: whole_k): A packed once; per chunk
 * of panels, per 32-row block, per panel, the block's sums stay in the
 * tiles across all K blocks of the packed weights. Few rows (a MoE
 * expert's, a decode step's) make the weights' bytes the time: a core's
 * tile loads stream 12-15 GB/s from memory on an Intel Xeon (family 6
 * model 167; a loop of nothing but tile loads: 14.7), prefetched or not,
 * and reading each group's K blocks in the order they lie (one stream)
 * instead of panel by panel measured the same. */
static void whole_k(const sk__gemm_problem *p, size_t m0, size_t m1, size_t n0, size_t n1, void *workspace) {
  sk__amx_use_full_tiles();
  const size_t k = (size_t)p->k, ks = k + (k & 1), ldc = (size_t)p->ldc, steps = NAME_WS(1, k) / (A_STEP_U32 * 4);
  const size_t kb = sk__gemm_kc_for(ks), n_panels = ((size_t)p->n + NR - 1) / NR;
  const size_t es = sk_dtype_size(p->c_dtype);
  uint32_t *a_packed = workspace;
  pack_a_tiles(p, m0, m1, a_packed);
  size_t chunk = CHUNK_BYTES / (ks * 2 + 1) / NR * NR;
  if (chunk < NR) chunk = NR;
  _Alignas(64) float sums[MR * NR];
  _Alignas(64) uint32_t w_step[PAIRS * NR];
  float bias[NR];
  for (size_t jc = n0; jc < n1; jc += chunk) {
    const size_t jc1 = jc + chunk < n1 ? jc + chunk : n1;
    for (size_t i0 = m0; i0 < m1; i0 += MR) {
      const size_t mr = m1 - i0 < MR ? m1 - i0 : MR;
      const uint32_t *a_blk = a_packed + (i0 - m0) / MR * steps * A_STEP_U32;
      for (size_t j0 = jc; j0 < jc1; j0 += NR) {
        const size_t nr = jc1 - j0 < NR ? jc1 - j0 : NR, panel = j0 / NR;
        /* K block by K block (the packed layout's), 16 pairs a step; the
         * last step's pairs past k come from a zero-padded copy. */
#define WHOLE_K(tr, tc)                                                                                          \
  do {                                                                                                           \
    sums_begin(tr, tc, NULL);                                                                                    \
    for (size_t pc = 0; pc < ks; pc += kb) {                                                                     \
      const size_t kp = (ks - pc < kb ? ks - pc : kb) / 2;                                                       \
      const uint32_t *w = (const uint32_t *)p->b_packed + sk__gemm_packed_offset(NR, ks, n_panels, panel, pc) / 2; \
      for (size_t q = 0; q < kp; q += PAIRS) {                                                                   \
        const uint32_t *wq = w + q * NR;                                                                         \
        if (kp - q < PAIRS) {                                                                                    \
          memset(w_step, 0, sizeof w_step);                                                                      \
          memcpy(w_step, wq, (kp - q) * NR * 4);                                                                 \
          wq = w_step;                                                                                           \
          TILE_BARRIER();                                                                                        \
        }                                                                                                        \
        step(tr, tc, a_blk + (pc / 2 + q) / PAIRS * A_STEP_U32, PAIRS * 4, wq);                                  \
      }                                                                                                          \
    }                                                                                                            \
    sums_end(tr, tc, sums);                                                                                      \
  } while (0)
        SK__BY_TILES(mr, nr, WHOLE_K);
#undef WHOLE_K
        if (p->bias)
          for (size_t j = 0; j < nr; j++) bias[j] = sk__gemm_load_scalar(p->bias, p->bias_dtype, j0 + j);
        epilogue(mr, nr, sums, p->bias ? bias : NULL, (char *)p->c + (i0 * ldc + j0) * es, ldc, p->c_dtype);
      }
    }
  }
}

const sk__gemm_dot_config CONFIG_NAME = {MR, NR, ukernel_amx_bf16, whole_k, NAME_WS};

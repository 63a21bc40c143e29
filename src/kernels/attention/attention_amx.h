/* attention's two products under the AMX contract (SK_NUMERICS_AMX, bf16
 * q, k and v; docs/ops.md, "Numerics"): TDPBF16PS tiles, built twice like
 * the AMX GEMM (attention_amx.c with the instructions, run only where
 * sk__cpu_has_amx_bf16(); attention_amx_emulated.c with the tiles in plain
 * C, the same bits). Each product is the contract's sum (bf16_contract.h):
 *
 *   scores  s[n][r] = the contract's dot of q row n and key row r over d
 *           (d in blocks of 32 from 0), for up to 16 q rows (a token's
 *           heads of one kv group) and up to 16 keys;
 *   values  acc[n][i] = the contract's step of acc[n][i] and one block of
 *           up to 32 keys: the bf16-rounded weights p[n][r] times v[r][i]
 *           (keys past nk zero), for 16 rows of d accumulators.
 *
 * The tiles are 16 rows x 64 bytes (the configuration the thread keeps,
 * amx_full_tiles.h). */
#ifndef SK_KERNELS_ATTENTION_AMX_H
#define SK_KERNELS_ATTENTION_AMX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu.h"

#define SK_ATTN_AMX_ROWS 16        /* q rows a call takes at most */
#define SK_ATTN_AMX_SCORE_KEYS 16  /* keys a scores call takes at most (a tile's rows) */
#define SK_ATTN_AMX_KEYS 32        /* keys a values call takes at most (one block) */

typedef struct sk__attention_amx {
  const char *name; /* for the op's kernel name */
  /* q rows (nh <= 16, d values each, bf16) as the scores' B tiles:
   * ceil(d / 32) tiles of 16 pair rows x 16 columns (q rows past nh and
   * values past d zero); qt holds (d + 31) / 32 * 256 uint32_t. */
  void (*pack_q)(const uint16_t *q, size_t nh, size_t d, uint32_t *qt);
  /* out[n * stride + r] for n < nh, r < nk <= 16: keys k (row stride ks
   * elements); scratch: 2 KiB. */
  void (*scores)(const uint32_t *qt, size_t nh, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
                 size_t stride, void *scratch);
  /* acc (16 rows of d floats) += one key block of p (nh rows, stride ps,
   * fp32, rounded here to bf16) times v (nk <= 32 rows, stride vs); scratch:
   * 64 * d + 1024 bytes. */
  void (*values)(const float *p, size_t nh, size_t ps, const uint16_t *v, size_t vs, size_t nk, size_t d, float *acc,
                 void *scratch);
} sk__attention_amx;

/* The tiles where isa is amx and the CPU has AMX-BF16, else the emulation. */
const sk__attention_amx *sk__attention_amx_for(sk__isa isa);

/* An attention weight rounded to bf16 for the values product: to nearest
 * even, a NaN kept a (quiet) NaN; weights are in [0, 1] or NaN. */
static inline uint16_t sk__attn_bf16_weight(float p) {
  uint32_t u;
  memcpy(&u, &p, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif

/* attention's two products under the AMX contract (SK_NUMERICS_AMX, bf16
 * q, k and v; docs/ops.md, "Numerics"): TDPBF16PS tiles, built twice like
 * the AMX GEMM (attention_amx.c with the instructions, run only where
 * sk__cpu_has_amx_bf16(); attention_amx_emulated.c with the tiles in plain
 * C, the same bits). Each product is the contract's sum (bf16_contract.h):
 *
 *   scores  s[c][r] = the contract's dot of q row c and key row r over d
 *           (d in blocks of 32 from 0), for up to 16 q rows (the heads of
 *           one kv group of one or more tokens) and up to 64 keys;
 *   values  acc[n][i] = the contract's steps of acc[n][i], one block of 32
 *           keys after another: the bf16-rounded weights p[n][r] times
 *           v[r][i] (keys past a token's last zero in both), for 16 rows of
 *           d sums.
 *
 * A q row's score against a key does not depend on the other rows or keys
 * of the call, so a call may hold several tokens' rows and keys past a
 * token's position (the caller ignores those scores); a values call is one
 * token's: its zero weights must meet zero values. The tiles are 16 rows x
 * 64 bytes (the configuration the thread keeps, amx_full_tiles.h). */
#ifndef SK_KERNELS_ATTENTION_AMX_H
#define SK_KERNELS_ATTENTION_AMX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu.h"

#define SK_ATTN_AMX_SCORE_KEYS 64  /* keys a scores call takes at most (four tiles of 16) */
#define SK_ATTN_AMX_KEYS 32        /* keys a values block holds (the contract's block) */

/* uint32_t words of one packed block of values (32 keys x d) and of the
 * packed q rows (attention_amx.c has the layouts). */
static inline size_t sk__attn_amx_block_words(size_t d) { return d / 16 * 256; }
static inline size_t sk__attn_amx_q_words(size_t d) { return (d + 31) / 32 * 256; }

typedef struct sk__attention_amx {
  const char *name; /* for the op's kernel name */
  /* q rows as the scores' B tiles: `tokens` tokens of nh rows each (token i
   * at q + i * token_stride, its rows d apart; tokens * nh <= 16; bf16) in
   * the columns c = i * nh + n; columns past them and values past d zero. */
  void (*pack_q)(const uint16_t *q, size_t tokens, size_t nh, size_t token_stride, size_t d, uint32_t *qt);
  /* out[c * stride + r] for c < ncols, r < nk <= 64: keys k (row stride ks
   * elements); scratch: 8 KiB. */
  void (*scores)(const uint32_t *qt, size_t ncols, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
                 size_t stride, void *scratch);
  /* nk value rows (row stride vs) as ceil(nk / 32) packed blocks, keys past
   * nk zero. */
  void (*pack_v)(const uint16_t *v, size_t vs, size_t nk, size_t d, uint32_t *vp);
  /* The weights p (nh <= 16 rows, stride ps, nk keys each) rounded to bf16
   * as ceil(nk / 32) A tiles of 16 rows x 32 keys, rows and keys past them
   * zero. */
  void (*weights)(const float *p, size_t nh, size_t ps, size_t nk, uint16_t *w);
  /* acc (16 rows of d floats; +0 where `first`) stepped by nb blocks: the
   * weight tiles w times the packed blocks vp, except that the last block's
   * values come from `last` where it is not NULL. */
  void (*values)(const uint16_t *w, size_t nb, const uint32_t *vp, const uint32_t *last, size_t d, float *acc,
                 int first);
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

/* attention's products on AMX-BF16 tiles (attention_amx.h). Built twice:
 * with the instructions (-mamx-tile -mamx-bf16, and AVX-512, which every
 * AMX CPU has) and with SK_AMX_EMULATE (attention_amx_emulated.c, the
 * tiles in plain C at the baseline ISA).
 *
 * Scores: S^T = K Q^T, so the key rows load as A tiles straight from the
 * cache (16 keys x 32 values at the cache's row stride) and the token's q
 * rows, packed once per item into pair rows, are the B tiles; each (key,
 * q row) sum is the contract's over d (a product and its order do not
 * depend on which operand is A). The 16 x 16 sums are stored and
 * transposed into the caller's rows. Values: the weights of one block of
 * 32 keys, rounded to bf16, are one A tile (16 rows x 32 keys); the block's
 * value rows are packed into pair rows, 16 columns a tile; the 16 x d sums
 * are loaded from acc, stepped by the block and stored back, 64 columns
 * (four C tiles) at a time. Keys past nk are zero in both operands, never
 * read from the cache: its rows past a token's position may hold anything. */
#include <stdint.h>
#include <string.h>

#include "kernels/amx_full_tiles.h"
#include "kernels/amx_tiles.h"
#include "kernels/attention/attention_amx.h"

#ifdef SK_AMX_EMULATE
#define SCORES sk__attn_amx_scores_emulated
#define VALUES sk__attn_amx_values_emulated
#else
#define SCORES sk__attn_amx_scores
#define VALUES sk__attn_amx_values
#endif

#define ROWS SK_ATTN_AMX_ROWS

void SCORES(const uint32_t *qt, size_t nh, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
            size_t stride, void *scratch);
void VALUES(const float *p, size_t nh, size_t ps, const uint16_t *v, size_t vs, size_t nk, size_t d, float *acc,
            void *scratch);

void SCORES(const uint32_t *qt, size_t nh, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
            size_t stride, void *scratch) {
  sk__amx_use_full_tiles();
  uint16_t *a_pad = scratch;                                   /* 16 keys x 32 values: a short block's keys */
  float *sums = (float *)(void *)((char *)scratch + 1024);     /* 16 keys x 16 q rows */
  TILE_BARRIER();
  TILE_ZERO(0);
  for (size_t d0 = 0; d0 < d; d0 += 32) {
    const size_t dd = d - d0 < 32 ? d - d0 : 32; /* d is a multiple of 16: the last block may be half */
    if (nk == SK_ATTN_AMX_SCORE_KEYS && dd == 32) {
      TILE_LOAD(4, k + d0, ks * 2);
    } else { /* keys past nk and values past d zero, not read */
      memset(a_pad, 0, 1024);
      for (size_t r = 0; r < nk; r++) memcpy(a_pad + r * 32, k + r * ks + d0, dd * 2);
      TILE_BARRIER();
      TILE_LOAD(4, a_pad, 64);
    }
    TILE_LOAD(5, qt + d0 / 32 * 256, 64);
    TILE_DPBF16PS(0, 4, 5);
  }
  TILE_STORE(0, sums, 64);
  TILE_BARRIER();
  for (size_t n = 0; n < nh; n++)
    for (size_t r = 0; r < nk; r++) out[n * stride + r] = sums[r * ROWS + n];
}

void VALUES(const float *p, size_t nh, size_t ps, const uint16_t *v, size_t vs, size_t nk, size_t d, float *acc,
            void *scratch) {
  sk__amx_use_full_tiles();
  uint16_t *w = scratch;                                /* 16 rows x 32 keys: the weights */
  uint32_t *vp = (uint32_t *)(void *)((char *)scratch + 1024); /* d / 16 tiles of 16 key pairs x 16 columns */
  memset(w, 0, 1024);
  for (size_t n = 0; n < nh; n++)
    for (size_t r = 0; r < nk; r++) w[n * 32 + r] = sk__attn_bf16_weight(p[n * ps + r]);
  for (size_t c = 0; c < d; c += 16)
    for (size_t r = 0; r < 16; r++) {
      uint32_t *row = vp + c / 16 * 256 + r * 16;
      const uint16_t *even = v + 2 * r * vs + c, *odd = even + vs;
      if (2 * r + 1 < nk)
        for (size_t i = 0; i < 16; i++) row[i] = (uint32_t)even[i] | (uint32_t)odd[i] << 16;
      else if (2 * r < nk)
        for (size_t i = 0; i < 16; i++) row[i] = even[i];
      else
        memset(row, 0, 64);
    }
  TILE_BARRIER();
  TILE_LOAD(4, w, 64);
  for (size_t c0 = 0; c0 < d; c0 += 64) { /* four C tiles of 16 columns (d is a multiple of 16) */
    const size_t tiles = (d - c0) / 16 < 4 ? (d - c0) / 16 : 4;
    TILE_LOAD(0, acc + c0, d * 4);
    if (tiles > 1) TILE_LOAD(1, acc + c0 + 16, d * 4);
    if (tiles > 2) TILE_LOAD(2, acc + c0 + 32, d * 4);
    if (tiles > 3) TILE_LOAD(3, acc + c0 + 48, d * 4);
    TILE_LOAD(5, vp + c0 / 16 * 256, 64);
    TILE_DPBF16PS(0, 4, 5);
    if (tiles > 1) {
      TILE_LOAD(5, vp + (c0 / 16 + 1) * 256, 64);
      TILE_DPBF16PS(1, 4, 5);
    }
    if (tiles > 2) {
      TILE_LOAD(5, vp + (c0 / 16 + 2) * 256, 64);
      TILE_DPBF16PS(2, 4, 5);
    }
    if (tiles > 3) {
      TILE_LOAD(5, vp + (c0 / 16 + 3) * 256, 64);
      TILE_DPBF16PS(3, 4, 5);
    }
    TILE_STORE(0, acc + c0, d * 4);
    if (tiles > 1) TILE_STORE(1, acc + c0 + 16, d * 4);
    if (tiles > 2) TILE_STORE(2, acc + c0 + 32, d * 4);
    if (tiles > 3) TILE_STORE(3, acc + c0 + 48, d * 4);
  }
  TILE_BARRIER();
}

#ifdef SK_AMX_EMULATE
/* In the emulated build, which has the baseline ISA (the other has
 * AVX-512's, and the emulation runs on CPUs without it): the scores' B
 * tiles from q rows, shared by both, and the choice between them. */
static void pack_q(const uint16_t *q, size_t nh, size_t d, uint32_t *qt) {
  memset(qt, 0, (d + 31) / 32 * 256 * sizeof *qt);
  for (size_t d0 = 0; d0 < d; d0 += 32)
    for (size_t r = 0; r < 16 && d0 + 2 * r < d; r++) /* pairs past d zero */
      for (size_t n = 0; n < nh; n++)
        qt[d0 / 32 * 256 + r * 16 + n] = (uint32_t)q[n * d + d0 + 2 * r] | (uint32_t)q[n * d + d0 + 2 * r + 1] << 16;
}

void sk__attn_amx_scores(const uint32_t *qt, size_t nh, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
                         size_t stride, void *scratch);
void sk__attn_amx_values(const float *p, size_t nh, size_t ps, const uint16_t *v, size_t vs, size_t nk, size_t d,
                         float *acc, void *scratch);

static const sk__attention_amx hardware = {"attention products on AMX tiles, AMX contract (amx)", pack_q,
                                           sk__attn_amx_scores, sk__attn_amx_values};
static const sk__attention_amx emulated = {"attention, AMX contract, tiles emulated", pack_q,
                                           sk__attn_amx_scores_emulated, sk__attn_amx_values_emulated};

const sk__attention_amx *sk__attention_amx_for(sk__isa isa) {
  return isa == SK_ISA_AMX && sk__cpu_has_amx_bf16() ? &hardware : &emulated;
}
#endif

/* attention's products on AMX-BF16 tiles (attention_amx.h). Built twice:
 * with the instructions (-mamx-tile -mamx-bf16, and AVX-512, which every
 * AMX CPU has) and with SK_AMX_EMULATE (attention_amx_emulated.c, the
 * tiles in plain C at the baseline ISA).
 *
 * Scores: S^T = K Q^T, so the key rows load as A tiles straight from the
 * cache (16 keys x 32 values at the cache's row stride) and the q rows,
 * packed once into pair rows (up to 16: two tokens' heads of a kv group
 * fill a tile), are the B tiles; each (key, q row) sum is the contract's
 * over d (a product and its order do not depend on which operand is A).
 * Four key tiles a call keep four independent chains of tile products in
 * flight (one chain waits on each product's latency). The sums are stored
 * and transposed into the caller's rows.
 *
 * Values: the weights of one block of 32 keys, rounded to bf16, are one A
 * tile (16 rows x 32 keys); a block's value rows are packed into pair rows,
 * 16 columns a tile (the B tiles: packed once for every token that reads
 * the block). The 16 x d sums stay in four C tiles (64 columns) over every
 * block of a call: loading and storing them each block cost more than the
 * products. Keys past a token's last are zero in both operands, never read
 * from the cache: its rows past a position may hold anything. */
#include <stdint.h>
#include <string.h>

#include "kernels/amx_full_tiles.h"
#include "kernels/amx_tiles.h"
#include "kernels/attention/attention_amx.h"

#ifndef SK_AMX_EMULATE
#include <immintrin.h>
#endif

#ifdef SK_AMX_EMULATE
#define SCORES sk__attn_amx_scores_emulated
#define PACK_Q sk__attn_amx_pack_q_emulated
#define VALUES sk__attn_amx_values_emulated
#define PACK_V sk__attn_amx_pack_v_emulated
#define WEIGHTS sk__attn_amx_weights_emulated
#else
#define SCORES sk__attn_amx_scores
#define PACK_Q sk__attn_amx_pack_q
#define VALUES sk__attn_amx_values
#define PACK_V sk__attn_amx_pack_v
#define WEIGHTS sk__attn_amx_weights
#endif

#define TILE_KEYS 16 /* keys of one scores tile */

#ifndef SK_AMX_EMULATE
/* out row j, element i = row i's element j for 16 rows of 16 32-bit
 * values (rows past `rows` zero; of each row the elements past `width`
 * zero, not read; out's rows past out_rows and elements past `cols` not
 * written): unpacks and lane shuffles, a tile's worth in registers. */
static inline void transpose16(const void *const *in, size_t rows, size_t width, void *out, size_t out_stride,
                               size_t out_rows, size_t cols) {
  __m512 r[16], t[16];
  const __mmask16 read = (__mmask16)((1u << width) - 1u);
  for (size_t i = 0; i < 16; i++) r[i] = i < rows ? _mm512_maskz_loadu_ps(read, in[i]) : _mm512_setzero_ps();
  for (size_t i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (size_t i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (size_t i = 0; i < 16; i += 8)
    for (size_t j = 0; j < 4; j++) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (size_t j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
  const __mmask16 live = (__mmask16)((1u << cols) - 1u);
  for (size_t j = 0; j < out_rows; j++) _mm512_mask_storeu_ps((char *)out + j * out_stride, live, r[j]);
}
#endif

void SCORES(const uint32_t *qt, size_t ncols, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
            size_t stride, void *scratch);
void VALUES(const uint16_t *w, size_t nb, const uint32_t *vp, const uint32_t *last, size_t d, float *acc, int first);
void PACK_V(const uint16_t *v, size_t vs, size_t nk, size_t d, uint32_t *vp);
void PACK_Q(const uint16_t *q, size_t tokens, size_t nh, size_t token_stride, size_t d, uint32_t *qt);
void WEIGHTS(const float *p, size_t nh, size_t ps, size_t nk, uint16_t *w);

/* Key tile kt's 16 rows of values [d0, d0 + 32) as an A tile: in place
 * when whole, else copied into pad with keys past nk and values past d
 * zero (d is a multiple of 16: a last block may be half). */
static const uint16_t *key_tile(const uint16_t *k, size_t ks, size_t nk, size_t d, size_t kt, size_t d0,
                                uint16_t *pad, size_t *stride) {
  const size_t keys = nk - kt * TILE_KEYS < TILE_KEYS ? nk - kt * TILE_KEYS : TILE_KEYS;
  const size_t dd = d - d0 < 32 ? d - d0 : 32;
  const uint16_t *src = k + kt * TILE_KEYS * ks + d0;
  if (keys == TILE_KEYS && dd == 32) {
    *stride = ks * 2;
    return src;
  }
  memset(pad, 0, 1024);
  for (size_t r = 0; r < keys; r++) memcpy(pad + r * 32, src + r * ks, dd * 2);
  *stride = 64;
  return pad;
}

/* One key tile's product for d block d0 into C tile C (A in tile A). */
#define SCORE_PRODUCT(C, A)                                                                \
  do {                                                                                     \
    if (tiles > (C)) {                                                                     \
      size_t st;                                                                           \
      const uint16_t *src = key_tile(k, ks, nk, d, (C), d0, pad + (C) * 512, &st);         \
      TILE_BARRIER();                                                                      \
      TILE_LOAD(A, src, st);                                                               \
      TILE_DPBF16PS(C, A, 5);                                                              \
    }                                                                                      \
  } while (0)

void SCORES(const uint32_t *qt, size_t ncols, const uint16_t *k, size_t ks, size_t nk, size_t d, float *out,
            size_t stride, void *scratch) {
  sk__amx_use_full_tiles();
  uint16_t *pad = scratch;                                 /* 4 tiles of 16 keys x 32 values */
  float *sums = (float *)(void *)((char *)scratch + 4096); /* 4 tiles of 16 keys x 16 q rows */
  const size_t tiles = (nk + TILE_KEYS - 1) / TILE_KEYS;
  TILE_BARRIER();
  TILE_ZERO(0);
  if (tiles > 1) TILE_ZERO(1);
  if (tiles > 2) TILE_ZERO(2);
  if (tiles > 3) TILE_ZERO(3);
  for (size_t d0 = 0; d0 < d; d0 += 32) {
    TILE_LOAD(5, qt + d0 / 32 * 256, 64);
    SCORE_PRODUCT(0, 4);
    SCORE_PRODUCT(1, 6);
    SCORE_PRODUCT(2, 4);
    SCORE_PRODUCT(3, 6);
  }
  TILE_STORE(0, sums, 64);
  if (tiles > 1) TILE_STORE(1, sums + 256, 64);
  if (tiles > 2) TILE_STORE(2, sums + 512, 64);
  if (tiles > 3) TILE_STORE(3, sums + 768, 64);
  TILE_BARRIER();
  for (size_t t = 0; t < tiles; t++) { /* sums[t]: 16 keys x 16 columns, into rows of keys */
    const float *s = sums + t * 256;
    const size_t keys = nk - t * TILE_KEYS < TILE_KEYS ? nk - t * TILE_KEYS : TILE_KEYS;
#ifdef SK_AMX_EMULATE
    for (size_t c = 0; c < ncols; c++)
      for (size_t r = 0; r < keys; r++) out[c * stride + t * TILE_KEYS + r] = s[r * 16 + c];
#else
    const void *rows[16];
    for (size_t r = 0; r < 16; r++) rows[r] = s + r * 16;
    transpose16(rows, 16, 16, out + t * TILE_KEYS, stride * 4, ncols, keys);
#endif
  }
}

/* Pair row r of d block d0, column c = i * nh + n: q values d0 + 2 r and
 * + 1 of token i's row n, one 32-bit word: a block is the transpose of the
 * columns' 16 words [d0 / 2, d0 / 2 + 16). */
void PACK_Q(const uint16_t *q, size_t tokens, size_t nh, size_t token_stride, size_t d, uint32_t *qt) {
  const size_t cols = tokens * nh;
  memset(qt, 0, sk__attn_amx_q_words(d) * sizeof *qt); /* for the transposes: the rows past a half block's pairs */
#ifdef SK_AMX_EMULATE
  for (size_t c = 0; c < cols; c++) {
    const uint16_t *row = q + c / nh * token_stride + c % nh * d;
    for (size_t d0 = 0; d0 < d; d0 += 32)
      for (size_t r = 0; r < 16 && d0 + 2 * r < d; r++) /* pairs past d zero */
        qt[d0 / 32 * 256 + r * 16 + c] = (uint32_t)row[d0 + 2 * r] | (uint32_t)row[d0 + 2 * r + 1] << 16;
  }
#else
  const void *rows[16];
  for (size_t d0 = 0; d0 < d; d0 += 32) {
    const size_t pairs = d - d0 < 32 ? (d - d0) / 2 : 16; /* pairs past d zero */
    for (size_t c = 0; c < cols; c++) rows[c] = q + c / nh * token_stride + c % nh * d + d0;
    transpose16(rows, cols, pairs, qt + d0 / 32 * 256, 64, pairs, 16);
  }
#endif
}

void PACK_V(const uint16_t *v, size_t vs, size_t nk, size_t d, uint32_t *vp) {
  const size_t nb = (nk + 31) / 32, words = sk__attn_amx_block_words(d);
  for (size_t b = 0; b < nb; b++)
    for (size_t c = 0; c < d; c += 16)
      for (size_t r = 0; r < 16; r++) { /* pair row r: keys 32 b + 2 r and + 1, columns c .. c + 15 */
        uint32_t *row = vp + b * words + c / 16 * 256 + r * 16;
        const size_t key = b * 32 + 2 * r;
        const uint16_t *even = v + key * vs + c, *odd = even + vs;
        if (key + 1 < nk)
          for (size_t i = 0; i < 16; i++) row[i] = (uint32_t)even[i] | (uint32_t)odd[i] << 16;
        else if (key < nk)
          for (size_t i = 0; i < 16; i++) row[i] = even[i];
        else
          memset(row, 0, 64);
      }
}

void WEIGHTS(const float *p, size_t nh, size_t ps, size_t nk, uint16_t *w) {
  const size_t nb = (nk + 31) / 32;
  memset(w, 0, nb * 1024);
  for (size_t b = 0; b < nb; b++)
    for (size_t n = 0; n < nh; n++) {
      const size_t keys = nk - b * 32 < 32 ? nk - b * 32 : 32;
      const float *src = p + n * ps + b * 32;
      uint16_t *dst = w + b * 512 + n * 32;
      for (size_t r = 0; r < keys; r++) dst[r] = sk__attn_bf16_weight(src[r]);
    }
}

/* Column tile T of the block's values (B in tile B) into C tile T. */
#define VALUE_PRODUCT(T, B)                                   \
  do {                                                        \
    if (tiles > (T)) {                                        \
      TILE_LOAD(B, vb + (c0 / 16 + (T)) * 256, 64);           \
      TILE_DPBF16PS(T, 4, B);                                 \
    }                                                         \
  } while (0)

void VALUES(const uint16_t *w, size_t nb, const uint32_t *vp, const uint32_t *last, size_t d, float *acc, int first) {
  sk__amx_use_full_tiles();
  const size_t words = sk__attn_amx_block_words(d);
  TILE_BARRIER();
  for (size_t c0 = 0; c0 < d; c0 += 64) { /* four C tiles of 16 columns (d is a multiple of 16) */
    const size_t tiles = (d - c0) / 16 < 4 ? (d - c0) / 16 : 4;
    if (first) {
      TILE_ZERO(0);
      if (tiles > 1) TILE_ZERO(1);
      if (tiles > 2) TILE_ZERO(2);
      if (tiles > 3) TILE_ZERO(3);
    } else {
      TILE_LOAD(0, acc + c0, d * 4);
      if (tiles > 1) TILE_LOAD(1, acc + c0 + 16, d * 4);
      if (tiles > 2) TILE_LOAD(2, acc + c0 + 32, d * 4);
      if (tiles > 3) TILE_LOAD(3, acc + c0 + 48, d * 4);
    }
    for (size_t b = 0; b < nb; b++) {
      const uint32_t *vb = last && b + 1 == nb ? last : vp + b * words;
      TILE_LOAD(4, w + b * 512, 64);
      VALUE_PRODUCT(0, 5);
      VALUE_PRODUCT(1, 6);
      VALUE_PRODUCT(2, 5);
      VALUE_PRODUCT(3, 6);
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
 * AVX-512's, and the emulation runs on CPUs without it): the choice
 * between them. */
void sk__attn_amx_pack_q(const uint16_t *q, size_t tokens, size_t nh, size_t token_stride, size_t d, uint32_t *qt);
void sk__attn_amx_scores(const uint32_t *qt, size_t ncols, const uint16_t *k, size_t ks, size_t nk, size_t d,
                         float *out, size_t stride, void *scratch);
void sk__attn_amx_values(const uint16_t *w, size_t nb, const uint32_t *vp, const uint32_t *last, size_t d, float *acc,
                         int first);
void sk__attn_amx_pack_v(const uint16_t *v, size_t vs, size_t nk, size_t d, uint32_t *vp);
void sk__attn_amx_weights(const float *p, size_t nh, size_t ps, size_t nk, uint16_t *w);

static const sk__attention_amx hardware = {"attention products on AMX tiles, AMX contract (amx)", sk__attn_amx_pack_q,
                                           sk__attn_amx_scores, sk__attn_amx_pack_v, sk__attn_amx_weights,
                                           sk__attn_amx_values};
static const sk__attention_amx emulated = {"attention, AMX contract, tiles emulated", sk__attn_amx_pack_q_emulated,
                                           sk__attn_amx_scores_emulated, sk__attn_amx_pack_v_emulated,
                                           sk__attn_amx_weights_emulated, sk__attn_amx_values_emulated};

const sk__attention_amx *sk__attention_amx_for(sk__isa isa) {
  return isa == SK_ISA_AMX && sk__cpu_has_amx_bf16() ? &hardware : &emulated;
}
#endif

/* The AMX tile operations the library and its tests use, as the hardware's
 * instructions or, with SK_AMX_EMULATE, as plain C that follows the Intel
 * SDM's definitions (palette 1: 8 tiles of at most 16 rows x 64 bytes) and
 * counts every use the hardware would fault on (an unconfigured tile,
 * shapes that do not fit together). The tests build kernels the second way,
 * so packing, tile shapes and edges are checked on CPUs without AMX; on one
 * with AMX the same tests run the instructions too.
 *   - TDPBSSD (AMX-INT8): qgemm_amx.c.
 *   - TDPBF16PS (AMX-BF16): only tests/test_bf16_amx.c, which holds the
 *     SDM's arithmetic against the bf16 contract and, on a CPU with
 *     AMX-BF16, the instruction against the SDM (docs/ops.md: why no bf16
 *     GEMM uses it).
 *
 * The tile numbers must be constants (the instructions encode them). A
 * file using an instruction is compiled with its flag (-mamx-int8,
 * -mamx-bf16) unless it emulates. */
#ifndef SK_KERNELS_AMX_TILES_H
#define SK_KERNELS_AMX_TILES_H

#include <stdint.h>
#include <string.h>

/* LDTILECFG's 64-byte operand. */
typedef struct sk__amx_config {
  uint8_t palette_id; /* 1: the 8-tile palette */
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16]; /* bytes per row of tile t */
  uint8_t rows[16];
} sk__amx_config;

#ifndef SK_AMX_EMULATE

#include <immintrin.h>

/* GCC 12's _tile_loadconfig names only 8 bytes of its operand and
 * _tile_loadd no memory at all: a compiler barrier first, so every plain
 * store the tiles read (the shapes, packed A, C) is in memory by then. */
#define TILE_BARRIER() __asm__ volatile("" ::: "memory")
#define TILE_CONFIG(cfg)       \
  do {                         \
    TILE_BARRIER();            \
    _tile_loadconfig(cfg);     \
  } while (0)
#define TILE_LOAD(t, base, stride) _tile_loadd(t, base, (long)(stride))
#define TILE_STORE(t, base, stride) _tile_stored(t, base, (long)(stride))
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#define TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#define TILE_RELEASE() _tile_release()
/* STTILECFG: the thread's configuration, all zero when none is loaded. */
#define TILE_STORE_CONFIG(cfg) \
  do {                         \
    _tile_storeconfig(cfg);    \
    TILE_BARRIER();            \
  } while (0)

#else

#include <stdatomic.h>

#include "kernels/gemm/bf16_contract.h"

typedef struct amx_emulator {
  sk__amx_config cfg;
  uint8_t tile[8][16][64];
} amx_emulator;

static _Thread_local amx_emulator emu;
static atomic_long emu_faults; /* uses the hardware would fault on */

static inline long sk__amx_emulator_faults(void) { return atomic_load(&emu_faults); }

static inline int emu_ok(int t) {
  int ok = emu.cfg.palette_id == 1 && t >= 0 && t < 8 && emu.cfg.rows[t] >= 1 && emu.cfg.rows[t] <= 16 &&
           emu.cfg.colsb[t] >= 1 && emu.cfg.colsb[t] <= 64;
  if (!ok) atomic_fetch_add(&emu_faults, 1);
  return ok;
}

/* LDTILECFG faults on any tile's shape past the palette's limits, used or
 * not, and on a half-configured one. */
static inline void emu_config(const sk__amx_config *cfg) {
  memcpy(&emu.cfg, cfg, sizeof emu.cfg);
  memset(emu.tile, 0, sizeof emu.tile);
  int ok = cfg->palette_id == 1 && cfg->start_row == 0;
  for (int i = 0; i < 14; i++) ok &= cfg->reserved[i] == 0;
  for (int t = 8; t < 16; t++) ok &= cfg->rows[t] == 0 && cfg->colsb[t] == 0;
  for (int t = 0; t < 8; t++)
    ok &= (cfg->rows[t] == 0) == (cfg->colsb[t] == 0) && cfg->rows[t] <= 16 && cfg->colsb[t] <= 64;
  if (!ok) atomic_fetch_add(&emu_faults, 1);
}

/* Rows past `rows` and bytes past `colsb` of a loaded tile are zero. */
static inline void emu_load(int t, const void *base, long stride) {
  if (!emu_ok(t)) return;
  memset(emu.tile[t], 0, sizeof emu.tile[t]);
  for (int r = 0; r < emu.cfg.rows[t]; r++) memcpy(emu.tile[t][r], (const char *)base + r * stride, emu.cfg.colsb[t]);
}

static inline void emu_store(int t, void *base, long stride) {
  if (!emu_ok(t)) return;
  for (int r = 0; r < emu.cfg.rows[t]; r++) memcpy((char *)base + r * stride, emu.tile[t][r], emu.cfg.colsb[t]);
}

static inline void emu_zero(int t) {
  if (emu_ok(t)) memset(emu.tile[t], 0, sizeof emu.tile[t]);
}

/* The operands of a tile product: three configured tiles whose shapes
 * agree (a.rows = c.rows, a.colsb = 4 b.rows, b.colsb = c.colsb, whole
 * dwords); anything else faults. */
static inline int emu_product_ok(int c, int a, int b) {
  if (!emu_ok(c) || !emu_ok(a) || !emu_ok(b)) return 0;
  const sk__amx_config *f = &emu.cfg;
  if (c == a || c == b || a == b || f->rows[a] != f->rows[c] || f->colsb[a] != 4 * f->rows[b] ||
      f->colsb[b] != f->colsb[c] || f->colsb[c] % 4) {
    atomic_fetch_add(&emu_faults, 1);
    return 0;
  }
  return 1;
}

/* TDPBSSD c, a, b: c[m][n] += sum over k4 < b.rows, i < 4 of
 * a[m][4 k4 + i] * b[k4][4 n + i], signed bytes, int32 sums wrapping. */
static inline void emu_dpbssd(int c, int a, int b) {
  if (!emu_product_ok(c, a, b)) return;
  const sk__amx_config *f = &emu.cfg;
  for (int m = 0; m < f->rows[c]; m++)
    for (int n = 0; n < f->colsb[c] / 4; n++) {
      uint32_t acc;
      memcpy(&acc, &emu.tile[c][m][4 * n], 4);
      for (int k4 = 0; k4 < f->rows[b]; k4++)
        for (int i = 0; i < 4; i++)
          acc += (uint32_t)((int32_t)(int8_t)emu.tile[a][m][4 * k4 + i] * (int32_t)(int8_t)emu.tile[b][k4][4 * n + i]);
      memcpy(&emu.tile[c][m][4 * n], &acc, 4);
    }
}

/* TDPBF16PS c, a, b as the SDM's pseudocode writes it, a pair of bf16 per
 * dword (Intel Emerald Rapids computes exactly this: test_bf16_amx.c). For
 * each c[m][n], the products of the pairs' even elements and those of
 * their odd elements are summed in two chains of their own, both from
 * zero; the two sums are added, and the result added to c[m][n]. Every
 * multiply-add and add is one fp32 rounding with denormals flushed
 * (sk__bf16_step). That is not the contract's one chain over k through c:
 * docs/ops.md. */
static inline float emu_bf16(const uint8_t *p) {
  uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static inline void emu_dpbf16ps(int c, int a, int b) {
  if (!emu_product_ok(c, a, b)) return;
  const sk__amx_config *f = &emu.cfg;
  for (int m = 0; m < f->rows[c]; m++)
    for (int n = 0; n < f->colsb[c] / 4; n++) {
      float even = 0.0f, odd = 0.0f, acc;
      for (int k = 0; k < f->rows[b]; k++) {
        even = sk__bf16_step(emu_bf16(&emu.tile[a][m][4 * k]), emu_bf16(&emu.tile[b][k][4 * n]), even);
        odd = sk__bf16_step(emu_bf16(&emu.tile[a][m][4 * k + 2]), emu_bf16(&emu.tile[b][k][4 * n + 2]), odd);
      }
      memcpy(&acc, &emu.tile[c][m][4 * n], 4);
      acc = sk__bf16_step(1.0f, acc, sk__bf16_step(1.0f, even, odd));
      memcpy(&emu.tile[c][m][4 * n], &acc, 4);
    }
}

#define TILE_BARRIER() ((void)0)
#define TILE_CONFIG(cfg) emu_config(cfg)
#define TILE_LOAD(t, base, stride) emu_load(t, base, (long)(stride))
#define TILE_STORE(t, base, stride) emu_store(t, base, (long)(stride))
#define TILE_ZERO(t) emu_zero(t)
#define TILE_DPBSSD(c, a, b) emu_dpbssd(c, a, b)
#define TILE_DPBF16PS(c, a, b) emu_dpbf16ps(c, a, b)
#define TILE_RELEASE() memset(&emu, 0, sizeof emu)
#define TILE_STORE_CONFIG(dst) memcpy(dst, &emu.cfg, sizeof emu.cfg)

#endif
#endif

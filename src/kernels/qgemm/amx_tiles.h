/* The AMX tile operations qgemm_amx.c uses, as the hardware's instructions
 * or, with SK_QGEMM_AMX_EMULATE, as plain C that follows the Intel SDM's
 * definitions (palette 1: 8 tiles of at most 16 rows x 64 bytes) and counts
 * every use the hardware would fault on (an unconfigured tile, shapes that
 * do not fit together). The tests build the kernel the second way, so its
 * packing, tile shapes and edges are checked on CPUs without AMX; on one
 * with AMX the same tests run the instructions too.
 *
 * The tile numbers must be constants (the instructions encode them). */
#ifndef SK_KERNELS_QGEMM_AMX_TILES_H
#define SK_KERNELS_QGEMM_AMX_TILES_H

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

#ifndef SK_QGEMM_AMX_EMULATE

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
#define TILE_RELEASE() _tile_release()

#else

#include <stdatomic.h>

typedef struct amx_emulator {
  sk__amx_config cfg;
  uint8_t tile[8][16][64];
} amx_emulator;

static _Thread_local amx_emulator emu;
static atomic_long emu_faults; /* uses the hardware would fault on */

static long sk__amx_emulator_faults(void) { return atomic_load(&emu_faults); }

static int emu_ok(int t) {
  int ok = emu.cfg.palette_id == 1 && t >= 0 && t < 8 && emu.cfg.rows[t] >= 1 && emu.cfg.rows[t] <= 16 &&
           emu.cfg.colsb[t] >= 1 && emu.cfg.colsb[t] <= 64;
  if (!ok) atomic_fetch_add(&emu_faults, 1);
  return ok;
}

/* LDTILECFG faults on any tile's shape past the palette's limits, used or
 * not, and on a half-configured one. */
static void emu_config(const sk__amx_config *cfg) {
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
static void emu_load(int t, const void *base, long stride) {
  if (!emu_ok(t)) return;
  memset(emu.tile[t], 0, sizeof emu.tile[t]);
  for (int r = 0; r < emu.cfg.rows[t]; r++) memcpy(emu.tile[t][r], (const char *)base + r * stride, emu.cfg.colsb[t]);
}

static void emu_store(int t, void *base, long stride) {
  if (!emu_ok(t)) return;
  for (int r = 0; r < emu.cfg.rows[t]; r++) memcpy((char *)base + r * stride, emu.tile[t][r], emu.cfg.colsb[t]);
}

static void emu_zero(int t) {
  if (emu_ok(t)) memset(emu.tile[t], 0, sizeof emu.tile[t]);
}

/* TDPBSSD c, a, b: c[m][n] += sum over k4 < b.rows, i < 4 of
 * a[m][4 k4 + i] * b[k4][4 n + i], signed bytes, int32 sums wrapping; the
 * tiles must be three and their shapes agree (a.rows = c.rows, a.colsb =
 * 4 b.rows, b.colsb = c.colsb). */
static void emu_dpbssd(int c, int a, int b) {
  if (!emu_ok(c) || !emu_ok(a) || !emu_ok(b)) return;
  const sk__amx_config *f = &emu.cfg;
  if (c == a || c == b || a == b || f->rows[a] != f->rows[c] || f->colsb[a] != 4 * f->rows[b] || f->colsb[b] != f->colsb[c] || f->colsb[c] % 4) {
    atomic_fetch_add(&emu_faults, 1);
    return;
  }
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

#define TILE_BARRIER() ((void)0)
#define TILE_CONFIG(cfg) emu_config(cfg)
#define TILE_LOAD(t, base, stride) emu_load(t, base, (long)(stride))
#define TILE_STORE(t, base, stride) emu_store(t, base, (long)(stride))
#define TILE_ZERO(t) emu_zero(t)
#define TILE_DPBSSD(c, a, b) emu_dpbssd(c, a, b)
#define TILE_RELEASE() memset(&emu, 0, sizeof emu)

#endif
#endif

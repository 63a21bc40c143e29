/* The AMX tile configuration a thread keeps between GEMM calls.
 *
 * LDTILECFG costs about 50 ns (Intel Xeon, family 6 model 167), as much as
 * a whole 48 x 64 x 64 int8 product on VNNI, so the AMX kernel configures
 * a thread's tiles once and keeps them (checking with STTILECFG, ~5 ns,
 * that nobody else reconfigured them) instead of configuring and releasing
 * on every call. The team releases them when a launch's blocks are done on
 * each of its threads (sk__amx_release_thread), so no tile state outlives
 * a launch on a caller's thread or idles in a worker. */
#ifndef SK_CORE_AMX_STATE_H
#define SK_CORE_AMX_STATE_H

/* The kernel loaded a tile configuration on this thread (hardware only:
 * the tests' emulated tiles never call it). */
void sk__amx_note_configured(void);

/* TILERELEASE if this thread loaded a configuration since its last
 * release; nothing otherwise (so it is safe on CPUs without AMX). */
void sk__amx_release_thread(void);

#endif

/* See qgemm_amx_emulated.c. */
#ifndef SK_TESTS_QGEMM_AMX_EMULATED_H
#define SK_TESTS_QGEMM_AMX_EMULATED_H

#include "kernels/amx_tiles.h"
#include "kernels/qgemm/qgemm_internal.h"

extern const sk__qgemm_config sk__qs8_gemm_config_amx_emulated;

/* Tile operations so far that the hardware would have faulted on (an
 * unconfigured tile, shapes that do not fit together): 0 when the kernel
 * keeps the rules. */
long sk__qgemm_amx_emulator_faults(void);

/* The calling thread's emulated tiles, as the kernel's emulator sees
 * them: LDTILECFG, STTILECFG, TILERELEASE (another library's use of the
 * tiles between two GEMMs, and what the kernel leaves loaded). */
void sk__qgemm_amx_emulator_load(const sk__amx_config *cfg);
void sk__qgemm_amx_emulator_read(sk__amx_config *cfg);
void sk__qgemm_amx_emulator_release(void);

#endif

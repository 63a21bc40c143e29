/* See amx_tile_state_hw.c. */
#ifndef SK_TESTS_AMX_TILE_STATE_HW_H
#define SK_TESTS_AMX_TILE_STATE_HW_H

#include "kernels/amx_tiles.h"

void hw_tiles_load(const sk__amx_config *cfg);
void hw_tiles_read(sk__amx_config *cfg);

#endif

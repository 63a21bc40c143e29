/* See amx_state.h. Compiled with -mamx-tile; the instruction runs only on
 * a thread that loaded a configuration, so only where AMX runs. */
#include "core/amx_state.h"

#include <immintrin.h>
#include <stdbool.h>

static _Thread_local bool tl_configured;

void sk__amx_note_configured(void) { tl_configured = true; }

void sk__amx_release_thread(void) {
  if (!tl_configured) return;
  _tile_release();
  tl_configured = false;
}

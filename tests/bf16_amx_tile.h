/* See bf16_amx_tile.c. */
#ifndef SK_TESTS_BF16_AMX_TILE_H
#define SK_TESTS_BF16_AMX_TILE_H

#include <stdint.h>

/* c[m * 16 + n] += sum over q < pairs of the pairs a[m * 16 + q] and
 * b[q * 16 + n] (1 <= pairs <= 16), by one TDPBF16PS: the instruction
 * (only on a CPU where sk__cpu_has_amx_bf16()) or its emulation. */
void bf16_amx_tile_product(int pairs, const uint32_t *a, const uint32_t *b, float *c);
void bf16_amx_tile_product_emulated(int pairs, const uint32_t *a, const uint32_t *b, float *c);

/* Emulated tile operations the hardware would have faulted on. */
long bf16_amx_emulator_faults(void);

#endif

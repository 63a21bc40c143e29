/* Test support: runs a compiled program both through the library and through
 * the ops' plain reference implementations, node by node, and compares the
 * outputs bit for bit. */
#ifndef SK_TEST_REFERENCE_RUNNER_H
#define SK_TEST_REFERENCE_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "superkernel.h"

/* Deterministic pseudo-random numbers (splitmix64). */
uint64_t rr_next(uint64_t *state);
/* Uniform in [lo, hi). */
double rr_uniform(uint64_t *state, double lo, double hi);

/* Fills n elements of dtype with values from [lo, hi) (integers rounded
 * down; uint8 wraps; bool gets floor(v) & 3, so also non-canonical trues). */
void rr_fill(void *data, sk_dtype dtype, size_t n, double lo, double hi, uint64_t *state);
/* Element i of data (dtype) set to v: integers rounded down (bool: its low
 * two bits), floats through fp32. */
void rr_store(void *data, sk_dtype dtype, size_t i, double v);

/* Buffers for every program input (filled by rr_fill over [lo, hi)) and
 * output (zeroed), named as the program's. */
typedef struct rr_buffers {
  sk_buffer *inputs, *outputs;
  size_t n_inputs, n_outputs;
} rr_buffers;

bool rr_alloc(const sk_program *p, rr_buffers *b, double lo, double hi, uint64_t seed);
void rr_free(rr_buffers *b);

/* Refills every input with a range fit for its dtype: floats [-1, 1), int8
 * [-128, 127], int32 [-1000, 1000), uint8 [0, 255], bool bytes 0..3 (2 and
 * 3 are true too), int64 packed quant scales (fp32 scales in [2^-12, 2^-8)
 * with offsets in [-20, 20]). */
void rr_fill_by_dtype(rr_buffers *b, const sk_program *p, uint64_t seed);
/* The same ranges for one buffer of n elements of dt. */
void rr_fill_dtype_range(void *data, sk_dtype dt, size_t n, uint64_t *seed);

/* Runs p on team (may be NULL) with b, runs the reference of every node on
 * the same inputs, and compares each output bitwise. Returns the number of
 * mismatching outputs (0 = equal) and prints the first differing element. */
int rr_check_program(sk_program *p, sk_team *team, rr_buffers *b);

/* Compiles g with `executor` and `options` (the default options of its
 * scopes) and with super kernels off, for team; runs both three times on
 * the same inputs (from seed); the first fused run is also checked against
 * the references. Returns the number of mismatches (0 = all bitwise equal)
 * and prints what differed. */
int rr_fused_vs_eager(const sk_graph *g, sk_team *team, sk_executor executor, const char *options, uint64_t seed);

#endif

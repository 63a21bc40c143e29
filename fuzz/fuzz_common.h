/* Shared helpers of the fuzz targets (fuzz/README.md): a byte reader that
 * turns the fuzzer's input into choices, the "every failure has a message"
 * check, and a log hook that keeps libFuzzer's output readable.
 * Header-only; every target includes it once. */
#ifndef SK_FUZZ_COMMON_H
#define SK_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "superkernel.h"

/* libFuzzer's entry points (declared here for -Wmissing-prototypes). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- Failing loudly ------------------------------------------------------ */

/* A property violation: print what and where, then trap, so libFuzzer saves
 * the input as a crash. */
#define FUZZ_FAIL(...)                                               \
  do {                                                               \
    fprintf(stderr, "\n==fuzz== property violated at %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                                    \
    fprintf(stderr, "\n");                                           \
    fflush(stderr);                                                  \
    __builtin_trap();                                                \
  } while (0)

#define FUZZ_ASSERT(cond, ...)                                              \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "\n==fuzz== assertion '%s' failed", #cond);           \
      FUZZ_FAIL(__VA_ARGS__);                                               \
    }                                                                       \
  } while (0)

/* Every public call returns a known status; a failed one leaves a non-empty
 * sk_last_error() that names the culprit. Returns st. */
static inline sk_status fuzz_check_status(sk_status st, const char *call) {
  if ((unsigned)st >= (unsigned)SK_STATUS_COUNT_) FUZZ_FAIL("%s returned status %d, not an sk_status", call, (int)st);
  if (st != SK_STATUS_OK) {
    const char *msg = sk_last_error();
    if (!msg || !*msg) FUZZ_FAIL("%s failed with %s but sk_last_error() is empty", call, sk_status_string(st));
  }
  return st;
}
#define FUZZ_CALL(expr) fuzz_check_status((expr), #expr)

/* ---- Logging --------------------------------------------------------------- */

/* Messages are formatted (the hook still runs, so the formatting paths are
 * exercised) but printed only with $SK_FUZZ_VERBOSE set. */
static void fuzz_log(sk_log_level level, const char *message, void *user) {
  (void)user;
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("SK_FUZZ_VERBOSE") != NULL;
  if (!message) FUZZ_FAIL("log hook got a NULL message (level %d)", (int)level);
  if (verbose) fprintf(stderr, "superkernel[%d]: %s\n", (int)level, message);
}

static inline void fuzz_quiet_logs(sk_log_level level) {
  sk_set_log_handler(fuzz_log, NULL);
  sk_set_log_level(level);
}

/* ---- Reading choices from the input ---------------------------------------- */

typedef struct fuzz_reader {
  const uint8_t *p;
  size_t n;
} fuzz_reader;

static inline bool fr_empty(const fuzz_reader *r) { return r->n == 0; }

/* Past the end every read gives 0, so any input is a complete program. */
static inline uint8_t fr_u8(fuzz_reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}
/* Little-endian; each read in sequence (never two reads in one expression,
 * whose order C leaves open). */
static inline uint16_t fr_u16(fuzz_reader *r) {
  uint16_t lo = fr_u8(r);
  return (uint16_t)(lo | fr_u8(r) << 8);
}
static inline uint32_t fr_u32(fuzz_reader *r) {
  uint32_t lo = fr_u16(r);
  return lo | (uint32_t)fr_u16(r) << 16;
}
static inline uint64_t fr_u64(fuzz_reader *r) {
  uint64_t lo = fr_u32(r);
  return lo | (uint64_t)fr_u32(r) << 32;
}
/* Uniform-ish in [0, n) (n > 0). */
static inline unsigned fr_below(fuzz_reader *r, unsigned n) { return n <= 256 ? fr_u8(r) % n : fr_u16(r) % n; }
/* In [lo, hi]. */
static inline int fr_range(fuzz_reader *r, int lo, int hi) { return lo + (int)fr_below(r, (unsigned)(hi - lo + 1)); }
/* True with probability about num / 256. */
static inline bool fr_chance(fuzz_reader *r, unsigned num) { return fr_u8(r) < num; }

/* splitmix64: data fill derived from the input. */
static inline uint64_t fuzz_mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* FNV-1a of the whole input: a reproducible per-input seed (never a run
 * counter, so a saved crash replays the same way). */
static inline uint64_t fuzz_hash(const uint8_t *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

#endif

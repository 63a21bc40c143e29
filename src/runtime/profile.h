/* Profiling: per-core records of what each core did and when, collected
 * across runs, written as op_statistic.csv and a Chrome Trace Event
 * trace.json (src/profile/report.c).
 *
 * Sources of records:
 *   - super kernels whose options say profiling=1: every sub-kernel block
 *     (RUN), every WAIT and BARRIER / COMPLEMENT, on the core that ran it,
 *     from the interpreter or the JIT's generated code;
 *   - the run-level switch (sk_compile_config.profile): every launch, an
 *     eager op's or a super kernel's, timed on the calling thread, and an
 *     eager op's blocks on their cores.
 * Timestamps are TSC cycles, converted to microseconds when written.
 * Each core has a fixed budget of records; past it records are counted as
 * dropped, never written out of bounds. */
#ifndef SK_RUNTIME_PROFILE_H
#define SK_RUNTIME_PROFILE_H

#include <stdatomic.h>
#include <stdint.h>

#include "superkernel.h"

typedef enum sk__prof_kind {
  SK_PROF_RUN = 0,      /* a sub-kernel block inside a super kernel */
  SK_PROF_WAIT = 1,     /* waiting for producer flags */
  SK_PROF_BARRIER = 2,  /* a barrier or a feed-sync-all complement */
  SK_PROF_BLOCK = 3,    /* a block of an eager op */
  SK_PROF_LAUNCH = 4,   /* a whole launch (eager op or super kernel), host side */
} sk__prof_kind;

typedef struct sk__prof_record {
  uint64_t t0, t1; /* TSC */
  int64_t block;
  int32_t step;    /* the program step (eager op or super kernel) */
  uint16_t sub;    /* sub-kernel index within a super kernel */
  uint8_t kind;
} sk__prof_record;

#define SK_PROF_RECORDS_PER_CORE (1 << 18) /* 8 MiB a core, touched only as used: a claimed MoE layer records ~10^3 blocks a run */

typedef struct sk__prof_core {
  sk__prof_record *records;
  size_t count;            /* written by its core only, inside a launch */
  size_t dropped;
} sk__prof_core;

typedef struct sk__profile {
  sk__prof_core *cores;    /* n_cores + 1: the last one is the host's */
  int n_cores;
  uint64_t tsc_origin;     /* first TSC seen: times are relative to it */
  uint64_t tsc0, ns0;      /* calibration start */
} sk__profile;

static inline uint64_t sk__tsc(void) { return __builtin_ia32_rdtsc(); }

/* A profile for teams of up to n_cores cores. */
sk__profile *sk__profile_create(int n_cores);
void sk__profile_destroy(sk__profile *prof);
void sk__profile_reset(sk__profile *prof);

/* Appends a record to core's list (core = n_cores for the host). Called
 * only by the thread acting as that core. */
static inline void sk__profile_add(sk__profile *prof, int core, sk__prof_kind kind, int32_t step, uint16_t sub,
                                   int64_t block, uint64_t t0, uint64_t t1) {
  sk__prof_core *c = &prof->cores[core];
  if (c->count >= SK_PROF_RECORDS_PER_CORE) {
    c->dropped++;
    return;
  }
  c->records[c->count++] = (sk__prof_record){t0, t1, block, step, sub, (uint8_t)kind};
}

/* TSC cycles per microsecond, measured against CLOCK_MONOTONIC since the
 * profile was created (at least 5 ms of baseline). */
double sk__profile_tsc_per_us(sk__profile *prof);

#endif

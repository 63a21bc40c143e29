#include "runtime/profile.h"

#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

sk__profile *sk__profile_create(int n_cores) {
  sk__profile *prof = calloc(1, sizeof *prof);
  if (!prof) return NULL;
  prof->n_cores = n_cores;
  prof->cores = calloc((size_t)n_cores + 1, sizeof *prof->cores);
  if (!prof->cores) {
    free(prof);
    return NULL;
  }
  for (int c = 0; c <= n_cores; c++) {
    prof->cores[c].records = malloc(SK_PROF_RECORDS_PER_CORE * sizeof(sk__prof_record));
    if (!prof->cores[c].records) {
      sk__profile_destroy(prof);
      return NULL;
    }
  }
  prof->tsc0 = sk__tsc();
  prof->ns0 = now_ns();
  prof->tsc_origin = prof->tsc0;
  return prof;
}

void sk__profile_destroy(sk__profile *prof) {
  if (!prof) return;
  for (int c = 0; c <= prof->n_cores && prof->cores; c++) free(prof->cores[c].records);
  free(prof->cores);
  free(prof);
}

void sk__profile_reset(sk__profile *prof) {
  for (int c = 0; c <= prof->n_cores; c++) prof->cores[c].count = prof->cores[c].dropped = 0;
  prof->tsc_origin = sk__tsc();
}

double sk__profile_tsc_per_us(sk__profile *prof) {
  uint64_t ns = now_ns();
  if (ns - prof->ns0 < 5000000u) { /* too short a baseline: wait it out */
    struct timespec pause = {0, (long)(5000000u - (ns - prof->ns0))};
    nanosleep(&pause, NULL);
    ns = now_ns();
  }
  uint64_t tsc = sk__tsc();
  return (double)(tsc - prof->tsc0) * 1000.0 / (double)(ns - prof->ns0);
}

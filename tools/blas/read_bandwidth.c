/* See read_bandwidth.h. A sum per thread over its own slice: reads that
 * stream from memory (512 MiB is far past any cache), with eight
 * independent sums so the adds never limit it. The buffer is asked for
 * huge pages, as the library's packed weights are (sk__alloc_streamed):
 * the floor is what the machine's memory gives at its best, so the
 * fastest pass counts; a shared machine only ever makes a pass slower
 * (a median of 5 measured 33.6 GB/s in a run whose layer read 51). */
#define _DEFAULT_SOURCE /* clock_gettime, madvise */
#include "read_bandwidth.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define BW_BYTES ((size_t)512 << 20)

typedef struct slice {
  const double *p;
  size_t n;
  double sum;
} slice;

static void *sum_slice(void *arg) {
  slice *s = arg;
  double a[8] = {0};
  for (size_t i = 0; i + 8 <= s->n; i += 8)
    for (int j = 0; j < 8; j++) a[j] += s->p[i + j];
  s->sum = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double sk_read_bandwidth_gbs(int threads) {
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  void *mem = NULL;
  if (posix_memalign(&mem, (size_t)2 << 20, BW_BYTES) != 0) return 0;
  double *buf = mem;
#ifdef MADV_HUGEPAGE
  (void)madvise(buf, BW_BYTES, MADV_HUGEPAGE);
#endif
  /* Every page written with values (not zeros, which some memory systems
   * serve faster): the passes then read memory, not page faults. */
  for (size_t i = 0; i < BW_BYTES / sizeof(double); i++) buf[i] = (double)(i & 7);
  double best = 0;
  pthread_t tid[64];
  int started[64] = {0};
  slice s[64];
  size_t n = BW_BYTES / sizeof(double), per = n / (size_t)threads;
  for (int r = 0; r < 5; r++) {
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
      s[i] = (slice){buf + (size_t)i * per, per, 0};
      started[i] = i > 0 && pthread_create(&tid[i], NULL, sum_slice, &s[i]) == 0;
    }
    for (int i = 0; i < threads; i++)
      if (!started[i]) sum_slice(&s[i]); /* ours, or one whose thread could not start */
    for (int i = 1; i < threads; i++)
      if (started[i]) pthread_join(tid[i], NULL);
    double dt = now_s() - t0;
    if (dt > 0 && (best == 0 || dt < best)) best = dt;
  }
  free(buf);
  return best > 0 ? (double)BW_BYTES / best * 1e-9 : 0;
}

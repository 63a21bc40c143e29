/* The once-per-process decision of bf16_dot.h. */
#include "kernels/gemm/bf16_dot.h"

#include <pthread.h>
#include <stdatomic.h>

#include "core/error.h"

/* Lanes the self-check runs besides the corner cases: about 50 us. */
#define SELF_CHECK_LANES 4096

static int passed;
static char failure[256];
static atomic_int failure_to_log;

static void check(void) {
  if (!sk__cpu_has_avx512_bf16()) return;
  passed = sk__bf16_dot_characterize(0x5EEDB16Full, SELF_CHECK_LANES, failure, sizeof failure) == 0;
  if (!passed) atomic_store(&failure_to_log, 1);
}

int sk__gemm_bf16_dot_usable(sk__isa isa) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (isa < SK_ISA_AVX512BF16) return 0;
  pthread_once(&once, check);
  /* Logged outside pthread_once: a log handler may call into the library. */
  if (atomic_exchange(&failure_to_log, 0))
    sk__log(SK_LOG_WARN, "AVX512_BF16: VDPBF16PS differs from the bf16 contract on this CPU (%s): bf16 GEMMs use FMAs",
            failure);
  return passed;
}

/* The once-per-process decision of bf16_dot.h. */
#include "kernels/gemm/bf16_dot.h"

#include <pthread.h>
#include <stdatomic.h>

#include "core/error.h"

/* Lanes the self-check runs besides the corner cases: about 50 us. */
#define SELF_CHECK_LANES 4096

/* The dot kernel's instruction must beat the FMA's rate by this much: the
 * FMA path also streams fp32 A rows and widened panels, the dot path half
 * of those bytes, but a tie in rate is not worth a second layout. */
#define DOT_RATE_MARGIN 1.25

static int passed, faster;
static int use; /* passed, and faster or forced by SK_ISA=avx512bf16: read on every tile */
static double dot_rate, fma_rate;
static char failure[256];
static atomic_int to_log; /* 1: the failure, 2: the rates */

static void check(void) {
  if (!sk__cpu_has_avx512_bf16()) return;
  passed = sk__bf16_dot_characterize(0x5EEDB16Full, SELF_CHECK_LANES, failure, sizeof failure) == 0;
  if (!passed) {
    atomic_store(&to_log, 1);
    return;
  }
  sk__bf16_dot_rates(&dot_rate, &fma_rate);
  faster = dot_rate >= DOT_RATE_MARGIN * fma_rate;
  use = faster || sk__cpu_isa_forced(SK_ISA_AVX512BF16);
  atomic_store(&to_log, 2);
}

static void check_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, check);
  /* Logged outside pthread_once: a log handler may call into the library. */
  switch (atomic_load_explicit(&to_log, memory_order_relaxed) ? atomic_exchange(&to_log, 0) : 0) {
    case 1:
      sk__log(SK_LOG_WARN, "AVX512_BF16: VDPBF16PS differs from the bf16 contract on this CPU (%s): bf16 GEMMs use FMAs",
              failure);
      break;
    case 2:
      sk__log(SK_LOG_INFO, "AVX512_BF16: VDPBF16PS %.0f GFLOP/s, FMA %.0f on one core: bf16 GEMMs use %s", dot_rate,
              fma_rate, faster ? "VDPBF16PS" : "FMAs (SK_ISA=avx512bf16 forces VDPBF16PS)");
      break;
  }
}

int sk__gemm_bf16_dot_checked(void) {
  check_once();
  return passed;
}

int sk__gemm_bf16_dot_usable(sk__isa isa) {
  if (isa < SK_ISA_AVX512BF16) return 0;
  check_once();
  return use;
}

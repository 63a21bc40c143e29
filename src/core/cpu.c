#define _DEFAULT_SOURCE /* syscall */
#include "core/cpu.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/error.h"

static unsigned long long read_xcr0(void) {
  unsigned int eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

static sk__isa detected_isa;
static int detected_bf16;
/* What sk__amx_decide reads, kept from the detection for choose(). */
static unsigned int cpuid7_edx;
static unsigned long long xcr0_bits;

/* Messages of the detection, logged after it (a log handler may call back
 * into the library, which inside pthread_once would deadlock). */
static char deferred[2][192];
static sk_log_level deferred_level[2];
static int n_deferred;
static atomic_int deferred_pending;

__attribute__((format(printf, 2, 3))) static void defer_log(sk_log_level level, const char *fmt, ...) {
  if (n_deferred == 2) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(deferred[n_deferred], sizeof deferred[0], fmt, ap);
  va_end(ap);
  deferred_level[n_deferred++] = level;
  atomic_store(&deferred_pending, 1);
}

/* Linux keeps the AMX tile data (8 KiB a thread) out of a process until it
 * asks: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), Linux 5.16 and
 * later; an older kernel or a refusal leaves tile instructions faulting.
 * $SK_TEST_AMX_DENY (non-empty, not "0") makes the request fail, so the
 * fallback can be run on a machine whose OS would grant it. */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int request_amx(void) {
  const char *deny = getenv("SK_TEST_AMX_DENY");
  if (deny && *deny && strcmp(deny, "0") != 0) return -1;
  return (int)syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA);
}

int sk__amx_decide(unsigned int edx, unsigned long long xcr0, int (*request)(void)) {
  int amx_tile = (edx >> 24) & 1, amx_int8 = (edx >> 25) & 1;
  if (!amx_tile || !amx_int8 || (xcr0 & 0x60000) != 0x60000) return 0; /* XCR0: the OS saves XTILECFG, XTILEDATA */
  return request() == 0 ? 1 : -1;
}

int sk__stream_nta;

/* sk__stream_nta from the vendor (cpu.h says why), or $SK_STREAM_PREFETCH. */
static void choose_stream_hint(void) {
  unsigned int eax, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) sk__stream_nta = ebx == 0x68747541u; /* "Auth"enticAMD */
  const char *hint = getenv("SK_STREAM_PREFETCH");
  if (hint && strcmp(hint, "nta") == 0) sk__stream_nta = 1;
  else if (hint && strcmp(hint, "t0") == 0) sk__stream_nta = 0;
  else if (hint && *hint) defer_log(SK_LOG_WARN, "SK_STREAM_PREFETCH=%s ignored: expected nta or t0", hint);
}

static void detect(void) {
  unsigned int eax, ebx, ecx, edx;
  detected_isa = SK_ISA_SCALAR;
  choose_stream_hint();
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return;
  int osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
  int fma = (ecx >> 12) & 1, f16c = (ecx >> 29) & 1;
  if (!osxsave || !avx) return;
  unsigned long long xcr0 = read_xcr0();
  if ((xcr0 & 0x6) != 0x6) return; /* OS saves XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return;
  int avx2 = (ebx >> 5) & 1;
  if (!(avx2 && fma && f16c)) return;
  detected_isa = SK_ISA_AVX2;
  int avx512f = (ebx >> 16) & 1, avx512dq = (ebx >> 17) & 1;
  int avx512bw = (ebx >> 30) & 1, avx512vl = (ebx >> 31) & 1;
  if ((xcr0 & 0xE6) != 0xE6) return; /* opmask, ZMM_Hi256, Hi16_ZMM */
  if (!(avx512f && avx512dq && avx512bw && avx512vl)) return;
  detected_isa = SK_ISA_AVX512;
  cpuid7_edx = edx;
  xcr0_bits = xcr0;
  if (!((ecx >> 11) & 1)) return; /* AVX512_VNNI: the rungs above all have it (every BF16 CPU does) */
  detected_isa = SK_ISA_AVX512VNNI;
  unsigned int max_leaf7 = eax;
  if (max_leaf7 >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) detected_bf16 = (eax >> 5) & 1;
  if (detected_bf16) detected_isa = SK_ISA_AVX512BF16;
}

static sk__isa chosen_isa;
static int isa_forced; /* $SK_ISA named chosen_isa (and it was applied) */

static void choose(void) {
  detect();
  const char *forced = getenv("SK_ISA");
  sk__isa want = SK_ISA_AMX;
  if (forced && *forced && !sk__isa_from_name(forced, &want)) {
    defer_log(SK_LOG_WARN, "SK_ISA=%s ignored: expected one of" SK__ISA_SPELLINGS, forced);
    forced = NULL; /* want is untouched: as if unset */
  }
  /* The tile state is asked for only when AMX may be used: the grant is
   * process-wide and for good (Linux then sizes every signal frame for it),
   * so SK_ISA=avx512 or lower leaves the process as it was. */
  if (detected_isa >= SK_ISA_AVX512VNNI && want == SK_ISA_AMX) {
    int amx = sk__amx_decide(cpuid7_edx, xcr0_bits, request_amx);
    if (amx > 0) detected_isa = SK_ISA_AMX;
    if (amx < 0) defer_log(SK_LOG_INFO, "AMX-INT8: the OS refused the tile state (arch_prctl): int8 GEMMs use AVX-512 VNNI");
  }
  chosen_isa = detected_isa;
  if (!forced || !*forced) return;
  if (want > detected_isa)
    defer_log(SK_LOG_WARN, "SK_ISA=%s ignored: this CPU supports up to %s", forced, sk__isa_name(detected_isa));
  else
    chosen_isa = want, isa_forced = 1;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void detect_once(void) {
  pthread_once(&once, choose);
  /* A plain load first: this runs on every ISA query, the exchange once. */
  if (atomic_load_explicit(&deferred_pending, memory_order_relaxed) && atomic_exchange(&deferred_pending, 0))
    for (int i = 0; i < n_deferred; i++) sk__log(deferred_level[i], "%s", deferred[i]);
}

sk__isa sk__cpu_isa_supported(void) {
  detect_once();
  return detected_isa;
}

sk__isa sk__cpu_isa(void) {
  detect_once();
  return chosen_isa;
}

int sk__cpu_has_avx512_bf16(void) {
  detect_once();
  return chosen_isa >= SK_ISA_AVX512BF16 && detected_bf16;
}

int sk__cpu_isa_forced(sk__isa isa) {
  detect_once();
  return isa_forced && chosen_isa == isa;
}

int sk__cpu_has_amx_bf16(void) {
  detect_once();
  return chosen_isa == SK_ISA_AMX && ((cpuid7_edx >> 22) & 1);
}

#define SK__ISA_NAME(suffix, name, needs) #name,
#define SK__ISA_NEEDS(suffix, name, needs) needs,
static const char *const isa_names[] = {SK__ISA_LIST(SK__ISA_NAME)};
static const char *const isa_needs[] = {SK__ISA_LIST(SK__ISA_NEEDS)};

int sk__isa_from_name(const char *name, sk__isa *isa_out) {
  for (int i = 0; name && i < SK__ISA_COUNT; i++)
    if (strcmp(name, isa_names[i]) == 0) {
      *isa_out = (sk__isa)i;
      return 1;
    }
  return 0;
}

const char *sk__isa_name(sk__isa isa) { return (unsigned)isa < SK__ISA_COUNT ? isa_names[isa] : "scalar"; }

const char *sk__isa_needs(sk__isa isa) { return (unsigned)isa < SK__ISA_COUNT ? isa_needs[isa] : "nothing"; }

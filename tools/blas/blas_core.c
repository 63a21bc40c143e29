/*
 * Whether OpenBLAS runs kernels made for this CPU (blas_core.h has the
 * tables), and rerunning with the right OPENBLAS_CORETYPE when not.
 *
 * OpenBLAS reads $OPENBLAS_CORETYPE once, when it loads, and is never
 * unloaded reliably (its thread pool): a process that loaded the wrong core
 * sets the variable and executes itself again, once. The marker
 * $SK_OPENBLAS_CORETYPE_BY_SK ("TYPE:CHOSEN") says the variable is ours and
 * what OpenBLAS had chosen, so the second run cannot loop. A
 * $OPENBLAS_CORETYPE from the environment that selects another ISA's
 * kernels than the CPU's is overridden too, saying so (issue 44: some
 * machines' environments set one that makes Debian's OpenBLAS run SSE
 * "Prescott" kernels on an AVX-512 Xeon, and the floor was then
 * meaningless); $OPENBLAS_L2_SIZE, which such environments set beside it,
 * is dropped for the second run.
 */
#define _GNU_SOURCE /* strcasecmp, setenv */
#include "blas_core.h"

#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MARKER "SK_OPENBLAS_CORETYPE_BY_SK"

static unsigned long long xcr0(void) {
  unsigned int eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

static blas_isa detect_isa(void) {
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return BLAS_ISA_SSE;
  int fma = (ecx >> 12) & 1, osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
  if (!osxsave || !avx) return BLAS_ISA_SSE;
  unsigned long long os = xcr0();
  if ((os & 0x6) != 0x6) return BLAS_ISA_SSE; /* XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !((ebx >> 5) & 1) || !fma) return BLAS_ISA_AVX;
  if ((ebx >> 16) & 1 && (os & 0xE0) == 0xE0) return BLAS_ISA_AVX512; /* AVX512F, opmask and ZMM state */
  return BLAS_ISA_AVX2;
}

void blas_cpu_detect(blas_cpu *cpu) {
  memset(cpu, 0, sizeof *cpu);
  unsigned int r[4] = {0};
  if (__get_cpuid(0, &r[0], &r[1], &r[2], &r[3])) {
    char vendor[13];
    memcpy(vendor, &r[1], 4), memcpy(vendor + 4, &r[3], 4), memcpy(vendor + 8, &r[2], 4);
    vendor[12] = '\0';
    cpu->vendor = strcmp(vendor, "GenuineIntel") == 0                                      ? BLAS_VENDOR_INTEL
                  : strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0 ? BLAS_VENDOR_AMD
                                                                                           : BLAS_VENDOR_OTHER;
  }
  if (__get_cpuid(1, &r[0], &r[1], &r[2], &r[3])) {
    int family = (r[0] >> 8) & 0xF, model = (r[0] >> 4) & 0xF;
    if (family == 0xF) family += (r[0] >> 20) & 0xFF;
    if (family == 0x6 || family >= 0xF) model |= ((r[0] >> 16) & 0xF) << 4;
    cpu->family = family, cpu->model = model;
  }
  char brand[49] = {0};
  if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u)
    for (unsigned i = 0; i < 3; i++) {
      __get_cpuid(0x80000002u + i, &r[0], &r[1], &r[2], &r[3]);
      memcpy(brand + 16 * i, r, 16);
    }
  const char *b = brand;
  while (*b == ' ') b++;
  snprintf(cpu->name, sizeof cpu->name, "%s", b);
  for (size_t n = strlen(cpu->name); n > 0 && cpu->name[n - 1] == ' '; n--) cpu->name[n - 1] = '\0';
  cpu->isa = detect_isa();
}

blas_isa blas_core_isa(const char *corename) {
  static const struct {
    const char *name;
    blas_isa isa;
  } cores[] = {
      {"Prescott", BLAS_ISA_SSE},      {"Core2", BLAS_ISA_SSE},          {"Penryn", BLAS_ISA_SSE},
      {"Dunnington", BLAS_ISA_SSE},    {"Nehalem", BLAS_ISA_SSE},        {"Atom", BLAS_ISA_SSE},
      {"Opteron", BLAS_ISA_SSE},       {"Opteron_SSE3", BLAS_ISA_SSE},   {"Barcelona", BLAS_ISA_SSE},
      {"Bobcat", BLAS_ISA_SSE},        {"Nano", BLAS_ISA_SSE},           {"Sandybridge", BLAS_ISA_AVX},
      {"Bulldozer", BLAS_ISA_AVX},     {"Piledriver", BLAS_ISA_AVX},     {"Steamroller", BLAS_ISA_AVX},
      {"Haswell", BLAS_ISA_AVX2},      {"Zen", BLAS_ISA_AVX2},           {"Excavator", BLAS_ISA_AVX2},
      {"SkylakeX", BLAS_ISA_AVX512},   {"Cooperlake", BLAS_ISA_AVX512},  {"SapphireRapids", BLAS_ISA_AVX512},
  };
  for (size_t i = 0; corename && i < sizeof cores / sizeof cores[0]; i++)
    if (strcasecmp(corename, cores[i].name) == 0) return cores[i].isa;
  return BLAS_ISA_UNKNOWN;
}

blas_core_decision blas_core_decide(const blas_cpu *cpu, const char *corename) {
  blas_core_decision d = {BLAS_CORE_NONE, blas_core_isa(corename), NULL};
  switch (cpu->isa) {
    case BLAS_ISA_AVX512: d.coretype = "SKYLAKEX"; break;
    case BLAS_ISA_AVX2: d.coretype = cpu->vendor == BLAS_VENDOR_AMD ? "ZEN" : "HASWELL"; break;
    case BLAS_ISA_AVX: d.coretype = "SANDYBRIDGE"; break;
    default: break;
  }
  if (!corename || !*corename) return d;
  d.status = d.core_isa == BLAS_ISA_UNKNOWN ? BLAS_CORE_UNKNOWN
             : d.core_isa < cpu->isa        ? BLAS_CORE_OLDER
             : d.core_isa > cpu->isa        ? BLAS_CORE_NEWER
                                            : BLAS_CORE_MATCH;
  return d;
}

const char *blas_isa_name(blas_isa isa) {
  static const char *const names[] = {"unknown", "sse", "avx", "avx2", "avx512"};
  return isa >= 0 && (size_t)isa < sizeof names / sizeof names[0] ? names[isa] : "unknown";
}

const char *blas_vendor_name(blas_vendor vendor) {
  return vendor == BLAS_VENDOR_INTEL ? "Intel" : vendor == BLAS_VENDOR_AMD ? "AMD" : "other";
}

const char *blas_core_status_name(blas_core_status status) {
  static const char *const names[] = {"none", "match", "older", "newer", "unknown"};
  return status >= 0 && (size_t)status < sizeof names / sizeof names[0] ? names[status] : "none";
}

void blas_core_report_fill(blas_core_report *r, const char *corename, const char *config) {
  memset(r, 0, sizeof *r);
  blas_cpu_detect(&r->cpu);
  snprintf(r->core, sizeof r->core, "%s", corename ? corename : "");
  snprintf(r->config, sizeof r->config, "%s", config ? config : "");
  for (size_t n = strlen(r->config); n > 0 && r->config[n - 1] == ' '; n--) r->config[n - 1] = '\0';
  if (strncmp(r->config, "OpenBLAS ", 9) == 0) sscanf(r->config + 9, "%23s", r->version);
  const char *type = getenv("OPENBLAS_CORETYPE"), *mark = getenv(MARKER);
  snprintf(r->coretype, sizeof r->coretype, "%s", type ? type : "");
  size_t n = strlen(r->coretype);
  if (!type) r->source = BLAS_CORETYPE_OPENBLAS; /* set but empty is a choice too: OpenBLAS 0.3.21 then runs Haswell */
  else if (n && mark && strncmp(mark, r->coretype, n) == 0 && mark[n] == ':') {
    r->source = BLAS_CORETYPE_SK;
    snprintf(r->chosen, sizeof r->chosen, "%s", mark + n + 1);
  } else r->source = BLAS_CORETYPE_USER;
  r->decision = blas_core_decide(&r->cpu, r->core);
}

bool blas_core_ratio_ok(const blas_core_report *r) { return r->decision.status == BLAS_CORE_MATCH; }

bool blas_core_runnable(const blas_core_report *r) {
  return r->decision.status != BLAS_CORE_NONE && r->decision.status != BLAS_CORE_NEWER;
}

/* This process's command line, from /proc/self/cmdline (NUL-separated):
 * a NULL-terminated array of allocated strings, or NULL. */
static char **own_argv(void) {
  FILE *f = fopen("/proc/self/cmdline", "re");
  char **argv = NULL, *arg = NULL;
  size_t n = 0, cap = 0;
  while (f && getdelim(&arg, &cap, '\0', f) > 0) {
    char **more = realloc(argv, (n + 2) * sizeof *argv);
    if (!more) break;
    argv = more;
    argv[n++] = arg;
    argv[n] = NULL;
    arg = NULL, cap = 0;
  }
  free(arg);
  if (f) fclose(f);
  return argv;
}

static void free_argv(char **argv) {
  for (size_t i = 0; argv && argv[i]; i++) free(argv[i]);
  free(argv);
}

void blas_core_fix(const blas_core_report *r, const char *prog) {
  const blas_core_decision *d = &r->decision;
  if ((d->status != BLAS_CORE_OLDER && d->status != BLAS_CORE_NEWER) || !d->coretype) return;
  if (r->source == BLAS_CORETYPE_SK) return; /* ours already: never twice */
  if (!strstr(r->config, "DYNAMIC_ARCH")) return; /* a build for one core ignores the variable */
  char mark[80];
  snprintf(mark, sizeof mark, "%s:%s", d->coretype, r->core);
  const char *l2 = getenv("OPENBLAS_L2_SIZE");
  if (r->source == BLAS_CORETYPE_USER)
    fprintf(stderr, "%s: OPENBLAS_CORETYPE=%s from the environment makes OpenBLAS run its %s kernels (%s), this CPU "
            "has %s: running again with OPENBLAS_CORETYPE=%s%s\n", prog, r->coretype, r->core,
            blas_isa_name(d->core_isa), blas_isa_name(r->cpu.isa), d->coretype, l2 ? ", without OPENBLAS_L2_SIZE" : "");
  else
    fprintf(stderr, "%s: OpenBLAS chose its %s kernels (%s), this CPU has %s: running again with OPENBLAS_CORETYPE=%s%s\n",
            prog, r->core, blas_isa_name(d->core_isa), blas_isa_name(r->cpu.isa), d->coretype,
            l2 ? ", without OPENBLAS_L2_SIZE" : "");
  char **argv = own_argv();
  if (l2) unsetenv("OPENBLAS_L2_SIZE"); /* set for another core's blocking, if at all */
  if (argv && setenv("OPENBLAS_CORETYPE", d->coretype, 1) == 0 && setenv(MARKER, mark, 1) == 0) {
    fflush(NULL);
    execv("/proc/self/exe", argv);
  }
  fprintf(stderr, "%s: could not run again (%s): the floor stays on %s, without ratios\n", prog,
          argv ? strerror(errno) : "cannot read /proc/self/cmdline", r->core);
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(MARKER);
  free_argv(argv);
}

void blas_core_check(blas_core_report *r, const char *corename, const char *config, const char *prog) {
  blas_core_report_fill(r, corename, config);
  blas_core_fix(r, prog);
  char line[256], verdict[160];
  blas_cpu_describe(&r->cpu, line, sizeof line);
  printf("cpu: %s\n", line);
  blas_core_describe(r, line, sizeof line);
  blas_core_verdict(r, verdict, sizeof verdict);
  printf("peer: %s: %s\n", line, verdict);
}

void blas_cpu_describe(const blas_cpu *cpu, char *buf, size_t size) {
  snprintf(buf, size, "%s (%s family %d model %d, %s)", cpu->name[0] ? cpu->name : "unnamed x86-64 CPU",
           blas_vendor_name(cpu->vendor), cpu->family, cpu->model, blas_isa_name(cpu->isa));
}

void blas_core_describe(const blas_core_report *r, char *buf, size_t size) {
  char who[128];
  if (r->source == BLAS_CORETYPE_OPENBLAS) snprintf(who, sizeof who, "OpenBLAS's choice");
  else if (r->source == BLAS_CORETYPE_USER) snprintf(who, sizeof who, "OPENBLAS_CORETYPE=%s, set by the user", r->coretype);
  else snprintf(who, sizeof who, "OPENBLAS_CORETYPE=%s, set by sk: OpenBLAS chose %s", r->coretype, r->chosen);
  snprintf(buf, size, "OpenBLAS %s, core %s (%s)", r->version[0] ? r->version : "(version unknown)",
           r->core[0] ? r->core : "(none reported)", who);
}

void blas_core_verdict(const blas_core_report *r, char *buf, size_t size) {
  const char *cpu = blas_isa_name(r->cpu.isa), *core = blas_isa_name(r->decision.core_isa);
  switch (r->decision.status) {
    case BLAS_CORE_MATCH: snprintf(buf, size, "the core's %s matches the CPU", core); break;
    case BLAS_CORE_OLDER:
      snprintf(buf, size, "MISMATCHED CORE: %s kernels, this CPU has %s: floor timed, no ratios", core, cpu);
      break;
    case BLAS_CORE_NEWER:
      snprintf(buf, size, "MISMATCHED CORE: %s kernels, this CPU has only %s: not run", core, cpu);
      break;
    case BLAS_CORE_UNKNOWN:
      snprintf(buf, size, "UNKNOWN CORE: not in sk's table, so not checked against the CPU's %s: floor timed, no ratios",
               cpu);
      break;
    default: snprintf(buf, size, "OpenBLAS reports no core: no floor"); break;
  }
}

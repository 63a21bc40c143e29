/* A minimal test harness: CHECK records a failure with its location and goes
 * on; TEST_MAIN runs the listed cases and prints "N passed, N skipped,
 * N failed". The exit status is nonzero when any check failed.
 *
 * Skips are never passes. When this machine lacks what a whole test needs,
 * harness_skip_test() exits with HARNESS_SKIP_CODE, which every test
 * registers as ctest's SKIP_RETURN_CODE (ctest reports "Skipped"). When a
 * case can run only part of its checks, harness_skip_part() prints
 * "SKIPPED (part of CASE): why" and the case counts as skipped, not passed. */
#ifndef SK_TEST_HARNESS_H
#define SK_TEST_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "superkernel.h"

/* The exit status of a test that did not run (automake's convention). */
#define HARNESS_SKIP_CODE 77

static int harness_failures;      /* checks failed in the current case */
static int harness_checks;        /* checks run in total */
static int harness_failed_cases;  /* cases failed so far, in every harness_run */
static int harness_case_skipped;  /* the current case skipped some checks */
static const char *harness_case_name = "(outside any case)";

#define CHECK(cond)                                                       \
  do {                                                                    \
    harness_checks++;                                                     \
    if (!(cond)) {                                                        \
      harness_failures++;                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                     \
  } while (0)

#define CHECK_MSG(cond, ...)                                              \
  do {                                                                    \
    harness_checks++;                                                     \
    if (!(cond)) {                                                        \
      harness_failures++;                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
    }                                                                     \
  } while (0)

/* A call expected to succeed; prints sk_last_error() when it does not. */
#define CHECK_OK(expr)                                                    \
  do {                                                                    \
    sk_status st_ = (expr);                                               \
    CHECK_MSG(st_ == SK_STATUS_OK, "%s: %s", sk_status_string(st_), sk_last_error()); \
  } while (0)

/* A call expected to fail with a given status and a message containing
 * every listed fragment (the culprit's name, expected and actual values). */
#define CHECK_FAILS(expr, status, ...)                                    \
  do {                                                                    \
    sk_status st_ = (expr);                                               \
    CHECK_MSG(st_ == (status), "got %s (%s), want %s", sk_status_string(st_), \
              sk_last_error(), sk_status_string(status));                 \
    const char *frags_[] = {__VA_ARGS__};                                 \
    for (size_t i_ = 0; i_ < sizeof frags_ / sizeof frags_[0]; i_++)      \
      CHECK_MSG(strstr(sk_last_error(), frags_[i_]) != NULL,              \
                "message \"%s\" lacks \"%s\"", sk_last_error(), frags_[i_]); \
  } while (0)

/* This machine cannot run the test at all (no second CPU, say): prints
 * "SKIPPED: why" and exits with HARNESS_SKIP_CODE, or with 1 when a check
 * has already failed (a failure is never hidden behind a skip). */
__attribute__((format(printf, 1, 2), noreturn)) static inline void harness_skip_test(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("SKIPPED: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  exit(harness_failures || harness_failed_cases ? 1 : HARNESS_SKIP_CODE);
}

/* The current case leaves out checks this machine cannot make; the case is
 * reported as skipped (unless it fails). */
__attribute__((format(printf, 1, 2))) static inline void harness_skip_part(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("     SKIPPED (part of %s): ", harness_case_name);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  harness_case_skipped = 1;
}

typedef struct harness_case {
  const char *name;
  void (*fn)(void);
} harness_case;

/* A thread's verdict, for checks made off the main thread (CHECK is not
 * thread-safe): failures counted, the first one described; the main thread
 * checks failures == 0 after joining. */
typedef struct harness_verdict {
  int failures;
  char first[768];
} harness_verdict;

__attribute__((format(printf, 2, 3), unused)) static void harness_verdict_fail(harness_verdict *v,
                                                                                const char *fmt, ...) {
  if (v->failures++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->first, sizeof v->first, fmt, ap);
    va_end(ap);
  }
}

#define TEST_CASE(fn) {#fn, fn}

static inline int harness_run(const harness_case *cases, size_t n) {
  int passed = 0, skipped = 0, failed = 0;
  for (size_t i = 0; i < n; i++) {
    harness_failures = 0;
    harness_case_skipped = 0;
    harness_case_name = cases[i].name;
    cases[i].fn();
    if (harness_failures) {
      failed++;
      harness_failed_cases++;
      fprintf(stderr, "FAIL %s (%d failed checks)\n", cases[i].name, harness_failures);
    } else if (harness_case_skipped) {
      skipped++;
      printf("skip %s (partly: see SKIPPED above)\n", cases[i].name);
    } else {
      passed++;
      printf("ok   %s\n", cases[i].name);
    }
    harness_case_name = "(outside any case)";
  }
  printf("%d passed, %d skipped, %d failed (%d checks)\n", passed, skipped, failed, harness_checks);
  return failed ? 1 : 0;
}

#define TEST_MAIN(...)                                                    \
  int main(void) {                                                        \
    static const harness_case cases_[] = {__VA_ARGS__};                   \
    return harness_run(cases_, sizeof cases_ / sizeof cases_[0]);         \
  }

#endif

/* A minimal test harness: CHECK records a failure with its location and goes
 * on; TEST_MAIN runs the listed cases and prints "N passed, N failed".
 * The exit status is nonzero when any check failed. */
#ifndef SK_TEST_HARNESS_H
#define SK_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "superkernel.h"

static int harness_failures;   /* checks failed in the current case */
static int harness_checks;     /* checks run in total */

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

typedef struct harness_case {
  const char *name;
  void (*fn)(void);
} harness_case;

#define TEST_CASE(fn) {#fn, fn}

static inline int harness_run(const harness_case *cases, size_t n) {
  int passed = 0, failed = 0;
  for (size_t i = 0; i < n; i++) {
    harness_failures = 0;
    cases[i].fn();
    if (harness_failures) {
      failed++;
      fprintf(stderr, "FAIL %s (%d failed checks)\n", cases[i].name, harness_failures);
    } else {
      passed++;
      printf("ok   %s\n", cases[i].name);
    }
  }
  printf("%d passed, %d failed (%d checks)\n", passed, failed, harness_checks);
  return failed ? 1 : 0;
}

#define TEST_MAIN(...)                                                    \
  int main(void) {                                                        \
    static const harness_case cases_[] = {__VA_ARGS__};                   \
    return harness_run(cases_, sizeof cases_ / sizeof cases_[0]);         \
  }

#endif

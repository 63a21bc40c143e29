/* The version: the library's sk_version() and sk_version_number() agree
 * with the header's SK_VERSION_* macros, and both with CMake's project
 * version (passed in as SK_PROJECT_VERSION by tests/core.cmake). */
#include <stdio.h>

#include "harness.h"

#ifndef SK_PROJECT_VERSION
#error "tests/core.cmake passes SK_PROJECT_VERSION"
#endif

static void test_library_matches_header(void) {
  CHECK_MSG(strcmp(sk_version(), SK_VERSION_STRING) == 0, "sk_version() = \"%s\", header \"%s\"", sk_version(),
            SK_VERSION_STRING);
  CHECK_MSG(sk_version_number() == SK_VERSION_NUMBER, "sk_version_number() = %d, header %d", sk_version_number(),
            SK_VERSION_NUMBER);
}

static void test_header_matches_project(void) {
  CHECK_MSG(strcmp(SK_VERSION_STRING, SK_PROJECT_VERSION) == 0, "header \"%s\", CMake project \"%s\"",
            SK_VERSION_STRING, SK_PROJECT_VERSION);
  char spelled[64];
  snprintf(spelled, sizeof spelled, "%d.%d.%d", SK_VERSION_MAJOR, SK_VERSION_MINOR, SK_VERSION_PATCH);
  CHECK_MSG(strcmp(spelled, SK_VERSION_STRING) == 0, "numbers %s, string %s", spelled, SK_VERSION_STRING);
  CHECK(SK_VERSION_NUMBER == SK_VERSION_MAJOR * 10000 + SK_VERSION_MINOR * 100 + SK_VERSION_PATCH);
  /* The number orders versions only while minor and patch stay below 100. */
  CHECK(SK_VERSION_MINOR < 100 && SK_VERSION_PATCH < 100);
}

TEST_MAIN(TEST_CASE(test_library_matches_header), TEST_CASE(test_header_matches_project))

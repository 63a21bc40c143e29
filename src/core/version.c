/* The library's version, from the header it was built with (whose numbers
 * configuring checks against CMake's project version). */
#include "superkernel.h"

const char *sk_version(void) { return SK_VERSION_STRING; }

int sk_version_number(void) { return SK_VERSION_NUMBER; }

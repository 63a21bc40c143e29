# The version has one source: project(superkernel VERSION ...) in the top
# CMakeLists.txt. include/superkernel.h stays a plain committed file (tests
# and users include it straight from the source tree), so its SK_VERSION_*
# numbers are checked here, and configuring stops when they differ.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/superkernel.h sk_version_lines
     REGEX "^#define SK_VERSION_(MAJOR|MINOR|PATCH) ")
set(sk_header_version "")
foreach(part MAJOR MINOR PATCH)
  if(NOT sk_version_lines MATCHES "#define SK_VERSION_${part} +([0-9]+)")
    message(FATAL_ERROR "include/superkernel.h: no '#define SK_VERSION_${part} <number>' line")
  endif()
  list(APPEND sk_header_version ${CMAKE_MATCH_1})
endforeach()
list(JOIN sk_header_version "." sk_header_version)
if(NOT sk_header_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "include/superkernel.h says version ${sk_header_version} (SK_VERSION_MAJOR/MINOR/PATCH) "
                      "but CMakeLists.txt's project() says ${PROJECT_VERSION}: make them equal")
endif()

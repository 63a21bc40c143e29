#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian 12 machine, and nothing when
# it is already there. Needs root (or sudo) only when something is missing.
#   cmake, gcc, make        the build
#   libopenblas-dev         the peer in bench/ (the library never links it)
#   python3                 tests/check_trace.py parses trace.json with a real JSON parser
#   libcjson-dev            cJSON: the whole-model builder reads config.json with it
#   pkg-config              the install test builds a program with the installed superkernel.pc
set -euo pipefail

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
# OpenBLAS itself: reference BLAS (libblas-dev) also ships cblas.h, and with
# it the peer benchmarks and sk bench's floor had nothing to measure.
{ [ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ]; } &&
  { [ -e /usr/lib/x86_64-linux-gnu/libopenblas.so.0 ] || ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0'; } ||
  need+=(libopenblas-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
[ -f /usr/include/cjson/cJSON.h ] || need+=(libcjson-dev)
[ ${#need[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${need[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}"

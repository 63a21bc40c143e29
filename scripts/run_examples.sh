#!/usr/bin/env bash
# Runs every example in turn, like the seed's run_example.sh: stops at the
# first failure and prints "Run all examples success" at the end.
#   scripts/run_examples.sh [BUILD_DIR]   (default: build; built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -d "$build/bin" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

examples=(
  example01_super_kernel_base
  example02_super_kernel_profiling
  example03_super_kernel_runtime_only
  example04_super_kernel_dual_stream
  example05_super_kernel_options
)
for example in "${examples[@]}"; do
  program="$build/bin/$example"
  if [ ! -x "$program" ]; then
    echo "run_examples: $example is not built ($program missing)" >&2
    exit 1
  fi
  echo "==== $example"
  # example02 writes prof_result/ into the current directory: run it in the build dir.
  if ! (cd "$build" && "./bin/$example"); then
    echo "run_examples: $example failed" >&2
    exit 1
  fi
done
echo "Run all examples success"

#!/usr/bin/env bash
# Runs every example in turn, like the seed's run_example.sh: stops at the
# first failure and prints "Run all examples success" at the end.
#   scripts/run_examples.sh [BUILD_DIR]   (default: build; built if missing)
# The C examples, then the Python ones (examples/python/) with the project
# virtual environment's python when .venv/bin/python has torch; without it
# they are skipped, saying so.
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

python_examples=(
  example01_super_kernel_base.py
  example02_super_kernel_profiling.py
  torchair_superkernel_scope.py
)
root="$PWD"
case "$build" in /*) build_abs="$build" ;; *) build_abs="$root/$build" ;; esac
python="$root/.venv/bin/python"
if [ -x "$python" ] && "$python" -c "import torch" >/dev/null 2>&1; then
  for example in "${python_examples[@]}"; do
    if [ "$example" = torchair_superkernel_scope.py ] && [ ! -f python/superkernel/compat/torch_npu.py ]; then
      echo "run_examples: skipping python/$example: superkernel.compat.torch_npu is not in this tree"
      continue
    fi
    echo "==== python/$example"
    # Run in the build dir as well: example02 writes prof_result/ into the current directory.
    if ! (cd "$build_abs" && SUPERKERNEL_LIBRARY="$build_abs/lib/libsuperkernel.so" \
          PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$root/examples/python/$example"); then
      echo "run_examples: python/$example failed" >&2
      exit 1
    fi
  done
else
  echo "run_examples: skipping the Python examples (examples/python/): no .venv/bin/python with torch"
fi
echo "Run all examples success"

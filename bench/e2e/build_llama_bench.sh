#!/usr/bin/env bash
# Builds llama.cpp's llama-bench for the end-to-end benchmark (bench/e2e/):
#
#   bench/e2e/build_llama_bench.sh [WORKDIR]       (default: build/ggml-peer)
#
# From the same pinned llama-cpp-python source distribution as
# bench/peers/build_ggml.sh (it vendors llama.cpp, its convert_hf_to_gguf.py
# and gguf-py), CPU backend only, GGML_NATIVE=ON (-march=native: what a
# llama.cpp user building on the machine gets), OpenMP threads. Optional:
# nothing else needs it. Prints the llama.cpp source directory, then the
# llama-bench path.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-$root/build/ggml-peer}"
src="$("$root/bench/peers/llama_cpp_source.sh" "$work")"
cmake -S "$src" -B "$work/build-tools" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  -DGGML_BLAS=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >&2
cmake --build "$work/build-tools" -j"$(nproc)" --target llama-bench >&2
echo "$src"
echo "$work/build-tools/bin/llama-bench"

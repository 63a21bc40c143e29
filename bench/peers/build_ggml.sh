#!/usr/bin/env bash
# Builds the ggml peer of the moe-layer benchmark (bench/peers/ggml_moe_layer.c):
#
#   bench/peers/build_ggml.sh [WORKDIR]        (default: build/ggml-peer)
#
# ggml comes from the source distribution of llama-cpp-python on the package
# index (pinned in llama_cpp_source.sh; it vendors llama.cpp and its ggml), built with CMake:
# the CPU backend only, GGML_NATIVE=ON (what a llama.cpp user building on the
# machine gets: -march=native, its fastest kernels here), OpenMP threads. The
# driver links it with our checkpoint readers (build/lib/libsk_models.a,
# libsuperkernel's superkernel_checkpoint.h and Debian's cJSON, so `make
# build` first). Optional: nothing else needs it.
# Prints the driver's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-$root/build/ggml-peer}"
src="$("$root/bench/peers/llama_cpp_source.sh" "$work")"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  -DGGML_BLAS=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >&2
cmake --build "$work/build" -j"$(nproc)" --target ggml >&2
lib="$work/build/ggml/src"
[ -f "$root/build/lib/libsk_models.a" ] || { echo "build_ggml.sh: run 'make build' first" >&2; exit 1; }
cc -O2 -std=c11 -Wall -Wextra -I"$src/ggml/include" -I"$root/tools/models" -I"$root/include" \
  "$root/bench/peers/ggml_moe_layer.c" -o "$work/ggml_moe_layer" \
  "$root/build/lib/libsk_models.a" "$lib/libggml.a" "$lib/libggml-cpu.a" "$lib/libggml-base.a" \
  -L"$root/build/lib" -lsuperkernel -Wl,-rpath,"$root/build/lib" -lcjson -fopenmp -lstdc++ -lm -lpthread
echo "$work/ggml_moe_layer"

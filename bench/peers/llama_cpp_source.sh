#!/usr/bin/env bash
# The llama.cpp source the ggml peers build from: the pinned llama-cpp-python
# source distribution of the package index (it vendors llama.cpp, its ggml,
# convert_hf_to_gguf.py and gguf-py), downloaded and unpacked once into
# WORKDIR (default build/ggml-peer). Prints the source directory.
#
#   bench/peers/llama_cpp_source.sh [WORKDIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-$root/build/ggml-peer}"
version=0.3.36
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
mkdir -p "$work"
sdist="$work/llama_cpp_python-$version.tar.gz"
if [ ! -f "$sdist" ]; then
  "$py" -m pip download "llama-cpp-python==$version" --no-binary :all: --no-deps --no-build-isolation -d "$work" >&2
fi
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
[ -d "$src" ] || tar xzf "$sdist" -C "$work"
echo "$src"

#!/usr/bin/env bash
# The llama.cpp source the ggml peers build from: the pinned llama-cpp-python
# source distribution of the package index (it vendors llama.cpp, its ggml,
# convert_hf_to_gguf.py and gguf-py), downloaded and unpacked once into
# WORKDIR (default build/ggml-peer). Prints the source directory.
#
#   bench/peers/llama_cpp_source.sh [WORKDIR]
#
# Only the download uses Python: `pip download` of $PYTHON, else .venv/bin/python,
# else python3 (any Python 3 with pip). pip reads an sdist's metadata through
# its build backend (scikit-build-core); when that Python can't import it, pip
# installs the backend from the package index into a throwaway environment of
# its own (build isolation), so the backend needn't be installed anywhere.
# llama.cpp itself is then built with CMake straight from the unpacked source.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-$root/build/ggml-peer}"
version=0.3.36
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
mkdir -p "$work"
sdist="$work/llama_cpp_python-$version.tar.gz"
if [ ! -f "$sdist" ]; then
  if ! "$py" -m pip --version >/dev/null 2>&1; then
    echo "llama_cpp_source.sh: $py has no pip: install it (Debian: apt-get install python3-pip) or set PYTHON" >&2
    exit 1
  fi
  isolation=()
  "$py" -c 'import scikit_build_core' >/dev/null 2>&1 && isolation=(--no-build-isolation)
  "$py" -m pip download "llama-cpp-python==$version" --no-binary llama-cpp-python --no-deps ${isolation[@]+"${isolation[@]}"} \
    -d "$work" >&2
fi
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
[ -d "$src" ] || tar xzf "$sdist" -C "$work"
echo "$src"

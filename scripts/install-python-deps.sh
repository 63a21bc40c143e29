#!/usr/bin/env bash
# The project virtual environment for the Python tests (make test runs this
# before ctest): $SK_VENV, default .venv at the repository root, made with
# `python3 -m venv` when missing, then given what python/requirements-test.txt
# lists and the venv lacks. When the venv already imports all of it, this is a
# no-op that never calls pip.
#
# Without a reachable package index, or when installing fails, it prints a
# warning and exits 0: make test still runs the C tests, and the Python tests
# report Skipped (tests/python/run_pytest.sh), never Passed.
#
# Needs root (or sudo) only on a Debian whose python3 lacks ensurepip: then it
# installs python3-venv, which `python3 -m venv` needs.
set -uo pipefail
cd "$(dirname "$0")/.."

venv="${SK_VENV:-$PWD/.venv}"
req="$PWD/python/requirements-test.txt"
py="$venv/bin/python"
modules="torch, numpy, pytest, scikit_build_core, transformers, safetensors"

give_up() {
  echo "install-python-deps: WARNING: $*" >&2
  echo "install-python-deps: WARNING: the Python tests will be reported as skipped; the C tests still run" >&2
  exit 0
}

# Everything there: nothing to do.
if [ -x "$py" ] && "$py" -c "import $modules" >/dev/null 2>&1; then
  exit 0
fi

if [ ! -x "$py" ]; then
  command -v python3 >/dev/null 2>&1 || give_up "no python3 (scripts/install-deps.sh installs it)"
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' || give_up "python3 is older than 3.9"
  if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    echo "install-python-deps: installing python3-venv (python3 -m venv needs ensurepip)"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq python3-venv; } ||
      give_up "could not install python3-venv"
  fi
  echo "install-python-deps: making the virtual environment $venv"
  python3 -m venv "$venv" || give_up "python3 -m venv $venv failed"
fi
"$py" -m pip --version >/dev/null 2>&1 || "$py" -m ensurepip >/dev/null 2>&1 ||
  give_up "$venv has no pip"

# pip skips what is already installed; torch is the large one (minutes and
# several GB the first time). Without network, fail fast rather than wait out
# pip's default timeout and retries, unless the caller chose them.
echo "install-python-deps: installing what $venv lacks of python/requirements-test.txt"
pip_args=(install --disable-pip-version-check -r "$req")
[ -n "${PIP_TIMEOUT:-}${PIP_DEFAULT_TIMEOUT:-}" ] || pip_args+=(--timeout 30)
[ -n "${PIP_RETRIES:-}" ] || pip_args+=(--retries 2)
"$py" -m pip "${pip_args[@]}" ||
  give_up "pip could not install python/requirements-test.txt into $venv (no package index reachable?)"
"$py" -c "import $modules" || give_up "$venv still cannot import $modules"
echo "install-python-deps: $venv is ready"

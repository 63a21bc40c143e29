#!/usr/bin/env bash
# One ctest test per tests/python/test_*.py (tests/python.cmake):
#   run_pytest.sh FILE
# runs `python -m pytest -q FILE` with the project venv's python ($SK_VENV,
# default .venv at the repository root, made by scripts/install-python-deps.sh)
# in ctest's working directory and environment (the repository root;
# PYTHONPATH, SUPERKERNEL_LIBRARY, SK_CACHE_DIR).
#
# Exit 77, which ctest reports as skipped, never passed: when the venv is
# missing or cannot import torch, numpy or pytest; when FILE holds no tests;
# when every test in it was skipped.
set -uo pipefail
file="$1"
venv="${SK_VENV:-$PWD/.venv}"
py="$venv/bin/python"
if [ ! -x "$py" ]; then
  echo "SKIPPED: no Python virtual environment at $venv (make test runs scripts/install-python-deps.sh to make it)"
  exit 77
fi
if [ ! -f "${SUPERKERNEL_LIBRARY:-}" ]; then
  echo "run_pytest: the library ${SUPERKERNEL_LIBRARY:-(SUPERKERNEL_LIBRARY unset)} is not built (make build)" >&2
  exit 1
fi

exec "$py" - "$file" "$venv" <<'EOF'
import importlib
import sys

file, venv = sys.argv[1], sys.argv[2]
missing = []
for name in ("torch", "numpy", "pytest"):
    try:
        importlib.import_module(name)
    except Exception as e:  # an install broken half-way raises more than ImportError
        missing.append(f"{name} ({type(e).__name__}: {e})")
if missing:
    print(f"SKIPPED: {venv} cannot import " + ", ".join(missing)
          + " (scripts/install-python-deps.sh installs them)")
    sys.exit(77)

import pytest


class Outcomes:
    """What the tests did: a file whose tests all skipped is not a pass."""

    def __init__(self):
        self.seen = set()

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.seen.add(report.outcome)


outcomes = Outcomes()
# -rsfE: the reasons of skips, failures and errors; no .pytest_cache in the tree.
rc = pytest.main(["-q", "-rsfE", "-p", "no:cacheprovider", file], plugins=[outcomes])
if rc == pytest.ExitCode.NO_TESTS_COLLECTED:
    print(f"SKIPPED: {file} has no tests")
    sys.exit(77)
if rc == pytest.ExitCode.OK and "passed" not in outcomes.seen:
    print(f"SKIPPED: every test in {file} was skipped")
    sys.exit(77)
sys.exit(int(rc))
EOF

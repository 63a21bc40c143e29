#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang-14 (ASan + UBSan) and runs
# each for a while (fuzz/README.md).
#
#   scripts/run_fuzz.sh [SECONDS_PER_TARGET]     default 60
#
# Steps: install clang-14 and libclang-rt-14-dev when missing (apt-get, as
# root or with sudo); configure and build build-fuzz/ (-DSK_BUILD_FUZZ=ON);
# replay every saved input under fuzz/regressions/<target>/; fuzz every
# target on a COPY of its corpus (fuzz/corpus/<target>/ is never written).
# Targets run FUZZ_PARALLEL at a time (default 2), each for
# SECONDS_PER_TARGET seconds. Prints the executions per target and exits
# non-zero on any crash, leak, timeout (an input past TIMEOUT_SECONDS below)
# or out-of-memory; an input past SLOW_SECONDS is reported, not failed.
# Crashing and slow inputs and logs are kept under
# build-fuzz/fuzz-work/<target>/.
#
# Environment: FUZZ_BUILD (build-fuzz), FUZZ_PARALLEL (2), JOBS (nproc),
# FUZZ_TARGETS ("fuzz_exec fuzz_options fuzz_graph").
set -euo pipefail

SECONDS_PER_TARGET=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
PARALLEL=${FUZZ_PARALLEL:-2}
read -r -a TARGETS <<<"${FUZZ_TARGETS:-fuzz_exec fuzz_options fuzz_graph}"
case "$SECONDS_PER_TARGET" in '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET]" >&2; exit 2 ;; esac

# ---- toolchain --------------------------------------------------------------
need=()
command -v clang-14 >/dev/null 2>&1 || need+=(clang-14)
dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cc >/dev/null 2>&1 || need+=(gcc) # the JIT's compiler (fuzz_exec)
if [ ${#need[@]} -gt 0 ]; then
  echo "run_fuzz: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# ---- build ------------------------------------------------------------------
t0=$(date +%s)
if ! grep -q "SK_BUILD_FUZZ:BOOL=ON" "$BUILD/CMakeCache.txt" 2>/dev/null ||
  ! grep -q "^CMAKE_C_COMPILER:.*clang-14" "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles" # configured otherwise: start over
  CC=clang-14 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSK_BUILD_FUZZ=ON \
    -DSK_SANITIZE=address,undefined -DSK_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$BUILD" --target sk_fuzz -j "$JOBS" >"$BUILD/fuzz-build.log" 2>&1 || {
  tail -50 "$BUILD/fuzz-build.log"
  echo "run_fuzz: build failed (log: $BUILD/fuzz-build.log)" >&2
  exit 1
}
echo "run_fuzz: built in $(($(date +%s) - t0)) s"

# ---- environment --------------------------------------------------------------
WORK="$BUILD/fuzz-work"
rm -rf "$WORK"
mkdir -p "$WORK"
# fuzz_exec's JIT cache: private, fresh per run.
export SK_CACHE_DIR="$WORK/jit-cache"
mkdir -p "$SK_CACHE_DIR"
chmod 700 "$SK_CACHE_DIR"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=64:malloc_context_size=20}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Time per input. The generators bound each input's work so that it runs in
# well under a second on a 2-core machine (fuzz/README.md, "Time per
# input"). One that runs past SLOW_SECONDS is a finding that is reported
# (libFuzzer's slow-unit artifact, listed below) but does not fail the run:
# the speed of the machine CI lands on must not decide. Only one past
# TIMEOUT_SECONDS, which no reasonable machine reaches for a bounded input,
# fails the run (libFuzzer's -timeout). A saved regression input must run
# within REGRESSION_SECONDS, JIT compile included.
SLOW_SECONDS=5
TIMEOUT_SECONDS=120
REGRESSION_SECONDS=10

# Per-target libFuzzer flags.
flags_for() {
  local time="-timeout=$TIMEOUT_SECONDS -report_slow_units=$SLOW_SECONDS"
  case "$1" in
    fuzz_options) echo "-max_len=1024 $time -rss_limit_mb=2048 -dict=$ROOT/fuzz/fuzz_options.dict" ;;
    fuzz_graph) echo "-max_len=4096 $time -rss_limit_mb=2048" ;;
    fuzz_exec) echo "-max_len=1024 $time -rss_limit_mb=3072" ;;
    *) echo "$time -rss_limit_mb=2048" ;;
  esac
}

status=0

# ---- regressions ----------------------------------------------------------------
# Each saved input runs once (SK_FUZZ_JIT_EVERY=1: fuzz_exec takes the JIT
# path on every one); any failure fails the run.
for t in "${TARGETS[@]}"; do
  dir="$ROOT/fuzz/regressions/$t"
  files=()
  [ -d "$dir" ] && mapfile -t files < <(find "$dir" -type f ! -name '*.md' | sort)
  [ ${#files[@]} -eq 0 ] && continue
  log="$WORK/$t.regressions.log"
  # shellcheck disable=SC2046
  if SK_FUZZ_JIT_EVERY=1 "$BUILD/fuzz/$t" $(flags_for "$t") -timeout="$REGRESSION_SECONDS" "${files[@]}" >"$log" 2>&1; then
    echo "run_fuzz: $t: ${#files[@]} regression inputs pass"
  else
    status=1
    grep -E "==fuzz==|ERROR|runtime error|Running:" "$log" | tail -20
    echo "run_fuzz: $t: a regression input FAILS (log: $log)" >&2
  fi
done

# ---- fuzzing -----------------------------------------------------------------------
run_target() {
  local t=$1 dir="$WORK/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  if [ -d "$ROOT/fuzz/corpus/$t" ]; then cp -R "$ROOT/fuzz/corpus/$t/." "$dir/corpus/"; fi
  local rc=0
  # shellcheck disable=SC2046
  "$BUILD/fuzz/$t" $(flags_for "$t") -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

t0=$(date +%s)
pids=()
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do sleep 1; done
  run_target "$t" &
  pids+=($!)
done
wait "${pids[@]}" || true

printf '\nrun_fuzz: %d s per target, %d at a time, %d s in all\n' "$SECONDS_PER_TARGET" "$PARALLEL" "$(($(date +%s) - t0))"
printf '%-14s %12s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${TARGETS[@]}"; do
  dir="$WORK/$t"
  rc=$(cat "$dir/rc" 2>/dev/null || echo 99)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  crashes=$(find "$dir/artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  slow=$(find "$dir/artifacts" -type f -name 'slow-unit-*' | wc -l)
  result=ok
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    result="FAILED (exit $rc, $crashes artifacts in $dir/artifacts, log $dir/log)"
    status=1
  fi
  printf '%-14s %12s %10s %8s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$corpus" "$result"
  if [ "$slow" -ne 0 ]; then # a finding to look into, not a failure (SLOW_SECONDS above)
    echo "  $t: $slow slow input(s) over ${SLOW_SECONDS} s, not a failure (below the ${TIMEOUT_SECONDS} s timeout): $dir/artifacts/slow-unit-*"
    grep -h "Slowest unit" "$dir/log" | tail -1 | sed "s/^/  $t: /" || true
  fi
  grep -h "^Done [0-9]* runs" "$dir/log" | sed "s/^/  $t: /" || true
done
for t in "${TARGETS[@]}"; do
  dir="$WORK/$t"
  if [ "$(cat "$dir/rc" 2>/dev/null || echo 99)" -ne 0 ]; then
    echo
    echo "---- $t: end of log ----"
    grep -v -E "^#[0-9]+.*(NEW|REDUCE|pulse)" "$dir/log" | tail -40
  fi
done
exit $status

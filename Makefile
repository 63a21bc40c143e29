# The README's two commands:
#   make run   configure, build and run the main example
#   make test  configure, build and run every test (ctest), the Python ones
#              with the project venv (scripts/install-python-deps.sh makes it)
# Both install what a fresh Debian 12 machine lacks (scripts/install-deps.sh).

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps python-deps configure build run test install bench clean sanitize tsan

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/example01_super_kernel_base

# The project venv for the Python tests (.venv, or $SK_VENV): made or
# completed when needed. Without network it warns, and the Python tests are
# skipped while the C tests still run.
python-deps:
	@scripts/install-python-deps.sh

test: build python-deps
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Header, libraries, pkg-config file, CMake package and sk under PREFIX
# (default: CMAKE_INSTALL_PREFIX, /usr/local).
install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# Every benchmark in turn: medians and ratios measured in one run each.
bench: build
	$(BUILD)/bin/bench_grouped_matmul
	$(BUILD)/bin/bench_quant_matmul
	$(BUILD)/bin/bench_qgemm_kernel
	$(BUILD)/bin/bench_barrier
	$(BUILD)/bin/bench_superkernel
	$(BUILD)/bin/bench_run_overhead
	$(BUILD)/bin/bench_constants
	$(BUILD)/bin/bench_gemm_large

# The same suite under AddressSanitizer + UBSan, and under ThreadSanitizer
# (which skips what has no threads to check: the lower-ISA repeats and the
# single-threaded exhaustive numeric sweeps). Debug builds (asserts on) at
# -O1, as the sanitizers' documentation advises: at -O0 the ASan suite's
# ctest took 9.3 min on a 2-core Xeon, at -O1 6.4 min, checking the same.
SANITIZE_FLAGS = -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DSK_BUILD_BENCH=OFF
sanitize: deps
	cmake -S . -B build-asan $(SANITIZE_FLAGS) -DSK_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

tsan: deps
	cmake -S . -B build-tsan $(SANITIZE_FLAGS) -DSK_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -LE 'lower_isa|single_thread'

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz

# libFuzzer targets (fuzz/README.md): builds build-fuzz with clang-14 and runs
# each target FUZZ_SECONDS seconds (installs clang-14 when missing).
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz:
	scripts/run_fuzz.sh $(FUZZ_SECONDS)

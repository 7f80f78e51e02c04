# Quick start: `make demo` and `make check` (see README.md). Both set up what is missing.
.PHONY: all setup build build-asan demo check check-unit check-lit check-python clean bench-cpu \
	fuzz check-fuzz check-valgrind check-tsan

BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PYTHON ?= /usr/bin/python3
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

build-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCUK_SANITIZE=ON -DCMAKE_C_COMPILER=clang-14 >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

demo: build
	@echo "== examples/saxpy.cuk =="
	@cat examples/saxpy.cuk
	@echo "== cukc run examples/saxpy.cuk =="
	@$(BUILD)/bin/cukc run examples/saxpy.cuk

check: build build-asan
	@bash scripts/check.sh $(BUILD) $(ASAN_BUILD)

# libFuzzer targets (tests/fuzz/), all at once; crashes land in $(FUZZ_BUILD)/crashes/.
# fuzz explores: FUZZ_SECONDS each from random seeds, the corpus growing between runs.
# check-fuzz is the run `make check` does: fixed inputs (seed, count, fresh corpus), so
# it passes or fails the same way on every run.
fuzz: build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(BUILD) $(FUZZ_BUILD)
# ThreadSanitizer: its own build (build-tsan), the threaded paths (scripts/tsan.sh).
check-tsan: setup
	@bash scripts/tsan.sh build-tsan

check-fuzz: build
	@FUZZ_MODE=check bash tests/fuzz/run.sh $(BUILD) $(FUZZ_BUILD)

# valgrind memcheck over the CPU backend running the examples (also part of `make check`).
check-valgrind: build
	@bash scripts/valgrind.sh $(BUILD)

bench-cpu: build
	@$(PYTHON) bench/cpu_bench.py $(BUILD)/bin/cukc

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

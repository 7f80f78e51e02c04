# Quick start: `make demo` and `make check` (see README.md). Both set up what is missing.
.PHONY: all setup build build-asan demo check check-unit check-lit check-python clean bench-cpu

BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PYTHON ?= /usr/bin/python3

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

bench-cpu: build
	@$(PYTHON) bench/cpu_bench.py $(BUILD)/bin/cukc

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

#!/usr/bin/env bash
# Runs every test suite CI runs (C units, lit with the release and the ASan+UBSan cukc,
# pytest with the release and the ASan+UBSan extension, the examples) and ends with one
# line "N passed, N failed" summed over all.
# Usage: scripts/check.sh BUILD_DIR ASAN_BUILD_DIR   (normally via `make check`)
set -uo pipefail

BUILD=${1:-build}
ASAN_BUILD=${2:-build-asan}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=$(cd "$BUILD" 2>/dev/null && pwd || echo "$ROOT/$BUILD")
ASAN_BUILD=$(cd "$ASAN_BUILD" 2>/dev/null && pwd || echo "$ROOT/$ASAN_BUILD")

PY=/usr/bin/python3
LIT=/usr/lib/llvm-14/build/utils/lit/lit.py
LOGS=$BUILD/check-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
# A kernel cache of this run's own, empty at the start: every stage sees the same cold
# cache whatever ran before, and neither ~/.cache/cuk nor another run of this script at
# the same time shares it (lit passes CUK_CACHE_DIR on; tests that need a cache of their
# own still set theirs).
export CUK_CACHE_DIR=$LOGS/kernel-cache

total_pass=0
total_fail=0
summary=()
failed_stages=()

# record STAGE PASSED FAILED [SKIPPED]: adds a stage's counts to the totals, with the
# seconds since the last banner.
record() {
    local stage=$1 p=$2 f=$3 s=${4:-0} extra=""
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    [ "$s" -gt 0 ] && extra=", $s skipped"
    summary+=("$(printf '  %-24s %5d passed, %d failed%s (%d s)' "$stage" "$p" "$f" "$extra" $((SECONDS - stage_start)))")
    [ "$f" -gt 0 ] && failed_stages+=("$stage")
}

stage_start=$SECONDS
banner() {
    stage_start=$SECONDS
    printf '\n== %s ==\n' "$*"
}

# record_ctest STAGE LOG: records the counts of ctest's "N% tests passed, F tests failed
# out of T" line in LOG (one failure when the line is missing).
record_ctest() {
    local line nfail ntot
    line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$2" | tail -1)
    if [ -n "$line" ]; then
        nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
        ntot=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
        record "$1" $((ntot - nfail)) "$nfail"
    else
        echo "check: could not read ctest's summary"
        record "$1" 0 1
    fi
}

# junit_counts FILE: prints "passed failed skipped" from a JUnit/xUnit XML report
# (lit's --xunit-xml-output and pytest's --junitxml both write this format).
junit_counts() {
    "$PY" - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 0 0"); sys.exit()
p = f = s = 0
for tc in root.iter("testcase"):
    kids = {c.tag for c in tc}
    if kids & {"failure", "error"}: f += 1
    elif "skipped" in kids: s += 1
    else: p += 1
print(p, f, s)
EOF
}

# --- (0) layers: includes point down only (docs/internals.md, "Layers") ----------------
banner "layers (scripts/layers.py)"
if "$PY" scripts/layers.py; then record "layers" 1 0; else record "layers" 0 1; fi

# --- (a) C unit tests ----------------------------------------------------------------
banner "unit tests (ctest, $BUILD)"
if [ -f "$BUILD/CTestTestfile.cmake" ]; then
    ctest --test-dir "$BUILD" --output-on-failure --timeout 300 -j"$(nproc)" 2>&1 | tee "$LOGS/ctest.log"
    if grep -q "No tests were found" "$LOGS/ctest.log"; then
        record "unit (ctest)" 0 0
    else
        record_ctest "unit (ctest)" "$LOGS/ctest.log"
    fi
else
    echo "check: $BUILD is not a configured build directory"
    record "unit (ctest)" 0 1
fi

# --- (b, c) lit, with the release cukc and with the ASan+UBSan cukc --------------------
run_lit() { # run_lit STAGE BUILD_DIR: lit on tests/lit with BUILD_DIR/bin/cukc
    local stage=$1 dir=$2 tag=$3
    banner "$stage ($dir/bin/cukc)"
    if [ ! -x "$dir/bin/cukc" ]; then
        echo "check: $dir/bin/cukc was not built"
        record "$stage" 0 1
        return
    fi
    rm -f "$LOGS/lit-$tag.xml"
    "$PY" "$LIT" -v --xunit-xml-output="$LOGS/lit-$tag.xml" \
        -Dcukc="$dir/bin/cukc" -Dbuild="$dir" tests/lit 2>&1 | tee "$LOGS/lit-$tag.log" |
        grep -v -E '^(PASS|UNSUPPORTED|XFAIL): ' || true
    read -r p f s < <(junit_counts "$LOGS/lit-$tag.xml")
    if [ "$((p + f + s))" -eq 0 ]; then
        echo "check: lit wrote no results (see $LOGS/lit-$tag.log)"
        f=1
    fi
    record "$stage" "$p" "$f" "$s"
}
run_lit "lit" "$BUILD" release
# abort_on_error turns every sanitizer report (leaks included) into SIGABRT, so that a
# `not %cukc ...` test cannot pass by accident when the sanitizer exits nonzero.
# intercept_tls_get_addr=0 wherever LSan runs: clang-14's LSan tracks the dynamic TLS of
# dlopen'd libraries (NVRTC's) through __tls_get_addr and, with Debian 12's glibc, now and
# then records a bogus range ("DTLS 3 at 0x000000000d42-0x002000001e44"); its
# stop-the-world tracer then faults reading it ("Tracer caught signal 11 ...
# LeakSanitizer has encountered a fatal error"), which failed emit-ptx runs in the lit
# and random-program stages on 2026-11-27, the same way each time for a given
# command line. Static TLS and every stack and global are still scanned.
LSAN_SAFE=intercept_tls_get_addr=0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:$LSAN_SAFE \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
    run_lit "lit (ASan+UBSan)" "$ASAN_BUILD" asan

# --- (d) pytest ----------------------------------------------------------------------
banner "pytest (tests/python, $PY)"
if compgen -G "tests/python/test_*.py" >/dev/null || compgen -G "tests/python/*_test.py" >/dev/null; then
    CUKC="$BUILD/bin/cukc" CUK_BUILD_DIR="$BUILD" CUK_SOURCE_DIR="$ROOT" \
        PYTHONDONTWRITEBYTECODE=1 \
        "$PY" -m pytest -q --tb=short -p no:cacheprovider --basetemp="$LOGS/pytest-tmp" --durations=5 \
        --junitxml="$LOGS/pytest.xml" tests/python 2>&1 |
        tee "$LOGS/pytest.log"
    rc=${PIPESTATUS[0]}
    read -r p f s < <(junit_counts "$LOGS/pytest.xml")
    if [ "$rc" -eq 5 ]; then # pytest: no tests collected
        record "pytest" 0 0
    else
        [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1 # e.g. a collection error
        record "pytest" "$p" "$f" "$s"
    fi
else
    echo "(no tests)"
    record "pytest" 0 0
fi

# --- (d') pytest again, with the ASan+UBSan extension ----------------------------------
# $ASAN_BUILD/python/cuk/_cuk.abi3.so is built with -fsanitize=address,undefined but, as
# a shared object, without the runtime (its __asan_*/__ubsan_* symbols are undefined): the
# interpreter gets clang-14's shared ASan runtime, which holds the UBSan handlers too, in
# LD_PRELOAD. detect_leaks=0 for the interpreter only: CPython does not free everything
# at exit, and LSan would report those blocks, which are not ours. Reports go to files
# under $SAN_LOGS (log_path): pytest captures fd 2, and a report printed there would be
# lost when abort_on_error kills the interpreter; a report in a child whose nonzero exit a
# test expects would be lost too. Any file there fails the stage. tests/python/conftest.py
# gives the children (the ASan+UBSan cukc and C examples, which carry their own runtime
# and abort if a second one is preloaded) the environment without LD_PRELOAD and with
# $CHILD_ASAN_OPTIONS: ASan and UBSan on, leak checking off. The lit ASan+UBSan stage
# checks the same cukc for leaks; here, where ~200 children load NVRTC, LSan's
# stop-the-world tracer crashed once ("Tracer caught signal 11 ... LeakSanitizer has
# encountered a fatal error", a fresh-clone CI run, 2026-11-22; 0 in 40 runs when
# repeated alone), which fails the stage without any leak.
banner "pytest (ASan+UBSan, $ASAN_BUILD/python)"
ASAN_RT=$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null)
SAN_LOGS=$LOGS/pytest-asan-reports
rm -rf "$SAN_LOGS"
mkdir -p "$SAN_LOGS"
if [ ! -f "$ASAN_BUILD/python/cuk/_cuk.abi3.so" ]; then
    echo "check: $ASAN_BUILD/python/cuk/_cuk.abi3.so was not built"
    record "pytest (ASan+UBSan)" 0 1
elif [ ! -f "$ASAN_RT" ]; then
    echo "check: clang-14's ASan runtime (libclang_rt.asan-x86_64.so) was not found"
    record "pytest (ASan+UBSan)" 0 1
else
    CHILD_ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$SAN_LOGS/report"
    run_asan_py() {
        LD_PRELOAD="$ASAN_RT" \
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$SAN_LOGS/report" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:log_path=$SAN_LOGS/report" \
        CUK_CHILD_ASAN_OPTIONS="$CHILD_ASAN_OPTIONS" \
        PYTHONPATH="$ASAN_BUILD/python:$ROOT/python" \
        CUKC="$ASAN_BUILD/bin/cukc" CUK_BUILD_DIR="$ASAN_BUILD" CUK_SOURCE_DIR="$ROOT" \
        PYTHONDONTWRITEBYTECODE=1 "$PY" "$@"
    }
    # The tests must import the sanitized extension, not the release one.
    ext=$(run_asan_py -c 'import cuk._cuk as m; print(m.__file__)' 2>&1)
    if [ "$ext" != "$ASAN_BUILD/python/cuk/_cuk.abi3.so" ]; then
        echo "check: the interpreter did not import $ASAN_BUILD's extension: $ext"
        record "pytest (ASan+UBSan)" 0 1
    else
        run_asan_py -m pytest -q --tb=short -p no:cacheprovider --basetemp="$LOGS/pytest-asan-tmp" --durations=5 \
            --junitxml="$LOGS/pytest-asan.xml" tests/python 2>&1 |
            tee "$LOGS/pytest-asan.log"
        rc=${PIPESTATUS[0]}
        read -r p f s < <(junit_counts "$LOGS/pytest-asan.xml")
        if [ "$rc" -eq 5 ]; then # pytest: no tests collected
            p=0 f=0 s=0
        fi
        [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$f" -eq 0 ] && f=1 # e.g. a sanitizer abort before the report was written
        nrep=$(find "$SAN_LOGS" -type f | wc -l)
        if [ "$nrep" -gt 0 ]; then
            echo "check: $nrep sanitizer report(s) in $SAN_LOGS:"
            find "$SAN_LOGS" -type f -print -exec head -n 200 {} \;
            [ "$f" -eq 0 ] && f=1
        else
            echo "(no sanitizer reports)"
        fi
        record "pytest (ASan+UBSan)" "$p" "$f" "$s"
    fi
fi

# --- (e) examples --------------------------------------------------------------------
# A .cuk example with a lit test in tests/lit/examples/ already ran above; the rest run
# here, on the CPU backend (CI has no GPU).
banner "examples"
p=0
f=0
for ex in examples/*.cuk; do
    [ -e "$ex" ] || continue
    name=$(basename "$ex")
    if grep -rqs -- "examples/$name" tests/lit/examples/; then
        echo "($ex: run by its lit test in tests/lit/examples)"
        continue
    fi
    if (cd "$LOGS" && timeout 600 "$BUILD/bin/cukc" run "$ROOT/$ex" --device cpu) >"$LOGS/ex-$name.log" 2>&1; then
        p=$((p + 1))
        echo "PASS: $ex"
    else
        f=$((f + 1))
        echo "FAIL: $ex"
        tail -n 40 "$LOGS/ex-$name.log"
    fi
done
for ex in "$BUILD"/examples/*; do
    [ -f "$ex" ] && [ -x "$ex" ] || continue
    name=$(basename "$ex")
    if (cd "$LOGS" && timeout 600 "$ex") >"$LOGS/cex-$name.log" 2>&1; then
        p=$((p + 1))
        echo "PASS: $ex"
    else
        f=$((f + 1))
        echo "FAIL: $ex"
        tail -n 40 "$LOGS/cex-$name.log"
    fi
done
for ex in examples/*.py examples/python/*.py; do
    [ -f "$ex" ] || continue
    if (cd "$LOGS" && PYTHONPATH="$BUILD/python:$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
        CUK_BUILD_DIR="$BUILD" timeout 600 "$PY" "$ROOT/$ex") >"$LOGS/pyex-$(basename "$ex").log" 2>&1; then
        p=$((p + 1))
        echo "PASS: $ex"
    else
        f=$((f + 1))
        echo "FAIL: $ex"
        tail -n 40 "$LOGS/pyex-$(basename "$ex").log"
    fi
done
record "examples" "$p" "$f"

# --- (f) fuzzing and valgrind (tests/fuzz/run.sh, scripts/valgrind.sh) ------------------
# Each fuzz target counts as one test: in check mode it runs a fixed number of inputs from
# a fixed seed and a fresh corpus, so a run fails on a bug only, the same way on every
# machine (`make fuzz` explores with random seeds instead). Each valgrind run (an example
# under memcheck) counts as one. CUK_CHECK_FUZZ=0 / CUK_CHECK_VALGRIND=0 skip them for a
# quick local run.
run_counted() { # run_counted STAGE LOG CMD...: a script that ends with "N passed, N failed"
    local stage=$1 log=$2
    shift 2
    banner "$stage"
    "$@" 2>&1 | tee "$log"
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
    if [ -n "$line" ]; then
        record "$stage" "$(cut -d' ' -f1 <<<"$line")" "$(cut -d' ' -f3 <<<"$line")"
    else
        echo "check: $stage printed no summary"
        record "$stage" 0 1
    fi
}
# The C units again, built with ASan+UBSan (leaks included): test_fault and test_limits
# drive failure paths whose "leaks nothing" only the sanitizers can show.
banner "unit tests (ctest, ASan+UBSan, $ASAN_BUILD)"
if [ -f "$ASAN_BUILD/CTestTestfile.cmake" ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:$LSAN_SAFE UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
        ctest --test-dir "$ASAN_BUILD" --output-on-failure --timeout 600 -j"$(nproc)" 2>&1 | tee "$LOGS/ctest-asan.log"
    record_ctest "unit (ASan+UBSan)" "$LOGS/ctest-asan.log"
else
    echo "check: $ASAN_BUILD is not a configured build directory"
    record "unit (ASan+UBSan)" 0 1
fi

# Random programs (tests/fuzz/gen_programs.py crash): GEN_PROGRAMS programs from a fixed
# seed, each through `cukc run --device cpu`, emit-ir, emit-cuda and emit-ptx with the
# ASan+UBSan cukc; one test per program. The same seed gives the same programs, so the
# stage passes or fails the same way on every run. CUK_CHECK_GEN=0 skips it.
if [ "${CUK_CHECK_GEN:-1}" != 0 ]; then
    rm -rf "$LOGS/gen-programs"
    mkdir -p "$LOGS/gen-programs"
    run_counted "random programs (seed ${GEN_SEED:-1})" "$LOGS/gen-programs.log" \
        "$PY" tests/fuzz/gen_programs.py crash "$ASAN_BUILD/bin/cukc" "${GEN_SEED:-1}" "${GEN_PROGRAMS:-24}" \
        "$LOGS/gen-programs"
fi

# The same generator on the GPU executor's host side (gen_programs.py fakegpu): each
# program with --device gpu through the driver-less libcuda (bench/fake_libcuda.c:
# copies are real, kernels do not run) with the ASan+UBSan cukc, against --device cpu: a
# crash, a sanitizer report or a compile error on one side only fails it (the values are
# not compared). The GPU differential run's crash of 2026-12-07 (seed 11110) shows here.
# CUK_CHECK_GEN=0 skips it too.
if [ "${CUK_CHECK_GEN:-1}" != 0 ]; then
    rm -rf "$LOGS/gen-fakegpu"
    mkdir -p "$LOGS/gen-fakegpu"
    if cc -std=c11 -shared -fPIC -o "$LOGS/gen-fakegpu/libfakecuda.so" bench/fake_libcuda.c; then
        run_counted "random programs, driver-less GPU path (seed ${GEN_FAKE_SEED:-2})" "$LOGS/gen-fakegpu.log" \
            env CUK_LIBCUDA="$LOGS/gen-fakegpu/libfakecuda.so" "$PY" tests/fuzz/gen_programs.py fakegpu \
            "$ASAN_BUILD/bin/cukc" "${GEN_FAKE_SEED:-2}" "${GEN_FAKE_PROGRAMS:-24}" "$LOGS/gen-fakegpu"
    else
        echo "check: bench/fake_libcuda.c did not build"
        record "random programs, driver-less GPU path" 0 1
    fi
fi

# Differential testing against NumPy (tests/fuzz/diff_numpy.py): DIFF_PROGRAMS random
# programs from a fixed seed, each written as cuk source and as an independent NumPy
# evaluation, on the CPU backend; one test per program. CUK_CHECK_DIFF=0 skips it.
if [ "${CUK_CHECK_DIFF:-1}" != 0 ]; then
    run_counted "NumPy differential (seed ${DIFF_SEED:-1})" "$LOGS/diff-numpy.log" \
        env CUK_BUILD_DIR="$BUILD" "$PY" tests/fuzz/diff_numpy.py "${DIFF_SEED:-1}" "${DIFF_PROGRAMS:-5000}"
fi

# ThreadSanitizer (scripts/tsan.sh): its own build, the threaded C program, the C unit
# tests and the examples on two threads. CUK_CHECK_TSAN=0 skips it.
if [ "${CUK_CHECK_TSAN:-1}" != 0 ]; then
    run_counted "ThreadSanitizer" "$LOGS/tsan.log" bash scripts/tsan.sh "${TSAN_BUILD:-$ROOT/build-tsan}"
fi

# Installing (scripts/install_check.sh): cmake --install into a prefix and pip into a
# fresh venv, each used from elsewhere (cukc, import cuk, python -m cuk, a C program
# built with pkg-config and with find_package). CUK_CHECK_INSTALL=0 skips it.
if [ "${CUK_CHECK_INSTALL:-1}" != 0 ]; then
    run_counted "install (CMake, pip)" "$LOGS/install.log" bash scripts/install_check.sh "$BUILD"
fi

if [ "${CUK_CHECK_FUZZ:-1}" != 0 ]; then
    FUZZ_MODE=check run_counted "fuzz (fixed inputs)" "$LOGS/fuzz.log" \
        bash tests/fuzz/run.sh "$BUILD" "${FUZZ_BUILD:-$ROOT/build-fuzz}"
fi
if [ "${CUK_CHECK_VALGRIND:-1}" != 0 ]; then
    run_counted "valgrind (memcheck)" "$LOGS/valgrind.log" bash scripts/valgrind.sh "$BUILD"
fi

# --- summary ---------------------------------------------------------------------------
banner "summary (logs in $LOGS)"
printf '%s\n' "${summary[@]}"
if [ ${#failed_stages[@]} -gt 0 ]; then
    echo "failures in: ${failed_stages[*]}"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]

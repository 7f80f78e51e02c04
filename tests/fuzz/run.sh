#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for FUZZ_SECONDS (default 60), all at once,
# from the seed corpora (make_seeds.py) plus what earlier runs found (OUT/corpus/). Prints
# one line per target (executions, seconds, result) and ends with "N passed, N failed"
# (one test per target). Crashes are saved under OUT/crashes/; reproduce one with
# `OUT/fuzz_compile OUT/crashes/fuzz_compile-crash-...`.
# Usage: tests/fuzz/run.sh BUILD_DIR [OUT_DIR]   (normally via `make fuzz`)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
OUT=${2:-$ROOT/build-fuzz}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SECS=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-$(nproc)}

echo "fuzz: building the targets in $OUT"
if ! make -s -C "$ROOT/tests/fuzz" GEN="$BUILD/gen" OUT="$OUT" -j"$JOBS" >"$OUT/build.log" 2>&1; then
    tail -n 40 "$OUT/build.log"
    echo "fuzz: the build failed (log: $OUT/build.log)"
    echo "0 passed, 1 failed"
    exit 1
fi
rm -rf "$OUT/seeds"
/usr/bin/python3 "$ROOT/tests/fuzz/make_seeds.py" "$OUT/seeds" || exit 1
# fuzz_X reads seeds/X-less names: compile -> seeds/compile, npy -> seeds/npy, ...
mkdir -p "$OUT/crashes"

# The sanitizers: leaks are bugs; a huge malloc returns NULL (the code under test must
# cope) instead of aborting.
export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=0}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export CUK_CACHE_DIR="$OUT/cache"

targets=()
for t in "$OUT"/fuzz_*; do
    [ -x "$t" ] && [ -f "$t" ] && targets+=("$(basename "$t")")
done
pids=()
for t in "${targets[@]}"; do
    kind=${t#fuzz_}
    mkdir -p "$OUT/corpus/$kind"
    seeds="$OUT/seeds/$kind"
    [ -d "$seeds" ] || seeds=""
    dict=()
    [ -f "$ROOT/tests/fuzz/$kind.dict" ] && dict=(-dict="$ROOT/tests/fuzz/$kind.dict")
    (cd "$OUT" && exec "./$t" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=4096 \
        -max_len=16384 -print_final_stats=1 "${dict[@]}" -artifact_prefix="$OUT/crashes/$t-" \
        "$OUT/corpus/$kind" $seeds) >"$OUT/$t.log" 2>&1 &
    pids+=($!)
done
pass=0
fail=0
for i in "${!targets[@]}"; do
    t=${targets[$i]}
    wait "${pids[$i]}"
    rc=$?
    execs=$(grep -a '^stat::number_of_executed_units' "$OUT/$t.log" | awk '{print $2}')
    rate=$(grep -a '^stat::average_exec_per_sec' "$OUT/$t.log" | awk '{print $2}')
    secs=$(grep -a '^Done [0-9]* runs in' "$OUT/$t.log" | sed -E 's/.* in ([0-9]+) second.*/\1/')
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1))
        printf 'PASS: %-14s %10s executions in %s s (%s/s), corpus %s files\n' "$t" "${execs:-?}" \
            "${secs:-?}" "${rate:-?}" "$(ls "$OUT/corpus/${t#fuzz_}" | wc -l)"
    else
        fail=$((fail + 1))
        printf 'FAIL: %-14s exit %d after %s executions (log: %s)\n' "$t" "$rc" "${execs:-?}" "$OUT/$t.log"
        grep -a -m1 -E 'ERROR: |runtime error|Test unit written' "$OUT/$t.log"
        grep -a -A12 -m1 -E 'ERROR: |runtime error' "$OUT/$t.log" | grep -a -E '^ +#[0-9]' | head -8
        grep -a 'Test unit written' "$OUT/$t.log"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

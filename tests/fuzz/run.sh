#!/usr/bin/env bash
# Builds the libFuzzer targets and runs them all at once, in one of two modes:
#
#   explore (default; `make fuzz`): each target runs FUZZ_SECONDS (default 60) from a
#     random libFuzzer seed, starting from the seed corpora (make_seeds.py) plus what
#     earlier runs found (OUT/corpus/, which grows from run to run).
#   check (FUZZ_MODE=check; `make check`): the same inputs on every run and machine, so
#     that the stage can only fail on a bug, never by chance: -seed=FUZZ_SEED (default
#     1), a fixed number of inputs per target (FUZZ_RUNS_<target>, below), a fresh corpus
#     from the seed corpora alone, no corpus reload, and address-space randomisation off
#     (setarch -R) where the system allows it: the compiler's hash tables see pointers,
#     which would otherwise steer the mutations. How long it takes depends on the
#     machine; what it runs does not.
#
# Each target's inputs finish far inside -timeout (FUZZ_TIMEOUT, default 120 s per
# input): fuzz_compile bounds the run of a program (WORK_LIMIT there); the slowest input
# the check mode meets takes well under a second here (docs/reliability.md). Prints one
# line per target (executions, seconds, result) and ends with "N passed, N failed" (one
# test per target). Crashes are saved under OUT/crashes/; reproduce one with
# `OUT/fuzz_compile OUT/crashes/fuzz_compile-crash-...`.
# Usage: [FUZZ_MODE=check] tests/fuzz/run.sh BUILD_DIR [OUT_DIR]
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
OUT=${2:-$ROOT/build-fuzz}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
MODE=${FUZZ_MODE:-explore}
SECS=${FUZZ_SECONDS:-60}
TIMEOUT=${FUZZ_TIMEOUT:-120}
JOBS=${JOBS:-$(nproc)}
# check mode: inputs per target, about a minute each on the 2-core CI machine.
FUZZ_RUNS_compile=${FUZZ_RUNS_compile:-25000}
FUZZ_RUNS_npy=${FUZZ_RUNS_npy:-1000000}
FUZZ_RUNS_bundle=${FUZZ_RUNS_bundle:-800000}

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
export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export CUK_CACHE_DIR="$OUT/cache"

norand=()
if [ "$MODE" = check ]; then
    if setarch "$(uname -m)" -R true 2>/dev/null; then
        norand=(setarch "$(uname -m)" -R)
    else
        echo "fuzz: setarch -R is not allowed here: address randomisation stays on, and the runs may differ slightly"
    fi
    echo "fuzz: check mode, seed ${FUZZ_SEED:-1}, inputs: compile $FUZZ_RUNS_compile, npy $FUZZ_RUNS_npy, bundle $FUZZ_RUNS_bundle"
fi

targets=()
for t in "$OUT"/fuzz_*; do
    [ -x "$t" ] && [ -f "$t" ] && targets+=("$(basename "$t")")
done

# First the inputs that once crashed or timed out (tests/fuzz/corpus/<target>/), each
# once, with a tight timeout: the slow ones (fib(37), a host loop to 10^8, recursion
# through a 6 KB body) take 0.1 to 0.5 s here and must stay far from the real timeout.
REPLAY_TIMEOUT=${FUZZ_REPLAY_TIMEOUT:-15}
replay_fail=()
for t in "${targets[@]}"; do
    kind=${t#fuzz_}
    inputs=("$ROOT/tests/fuzz/corpus/$kind"/*)
    [ -e "${inputs[0]}" ] || continue
    if (cd "$OUT" && "./$t" -timeout="$REPLAY_TIMEOUT" -rss_limit_mb=4096 -runs=1 \
        -artifact_prefix="$OUT/crashes/$t-replay-" "${inputs[@]}") >"$OUT/$t-replay.log" 2>&1; then
        slowest=$(grep -a -E '^Executed .* in [0-9]+ ms' "$OUT/$t-replay.log" |
            sed -E 's/^Executed (.*) in ([0-9]+) ms.*/\2 \1/' | sort -n | tail -1 |
            awk '{n = split($2, p, "/"); print p[n] ", " $1 " ms"}')
        echo "fuzz: $t: ${#inputs[@]} regression inputs pass (slowest: ${slowest:-?}; limit ${REPLAY_TIMEOUT} s)"
    else
        echo "fuzz: $t: a regression input fails or takes over ${REPLAY_TIMEOUT} s (log: $OUT/$t-replay.log)"
        grep -a -m2 -E 'ERROR: |ALARM|runtime error|Running: ' "$OUT/$t-replay.log" | tail -2
        replay_fail+=("$t")
    fi
done
pids=()
for t in "${targets[@]}"; do
    kind=${t#fuzz_}
    seeds="$OUT/seeds/$kind"
    [ -d "$seeds" ] || seeds=""
    dict=()
    [ -f "$ROOT/tests/fuzz/$kind.dict" ] && dict=(-dict="$ROOT/tests/fuzz/$kind.dict")
    if [ "$MODE" = check ]; then
        corpus="$OUT/check-corpus/$kind"
        rm -rf "$corpus"
        runs_var=FUZZ_RUNS_$kind
        how=(-seed="${FUZZ_SEED:-1}" -runs="${!runs_var:-100000}" -reload=0)
    else
        corpus="$OUT/corpus/$kind"
        how=(-max_total_time="$SECS")
    fi
    mkdir -p "$corpus"
    (cd "$OUT" && exec "${norand[@]}" "./$t" "${how[@]}" -timeout="$TIMEOUT" -report_slow_units=5 \
        -rss_limit_mb=4096 -max_len=16384 -print_final_stats=1 "${dict[@]}" \
        -artifact_prefix="$OUT/crashes/$t-" "$corpus" $seeds) >"$OUT/$t.log" 2>&1 &
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
    corpus=$OUT/corpus/${t#fuzz_}
    [ "$MODE" = check ] && corpus=$OUT/check-corpus/${t#fuzz_}
    [[ " ${replay_fail[*]} " == *" $t "* ]] && rc=1
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1))
        printf 'PASS: %-14s %10s executions in %s s (%s/s), corpus %s files\n' "$t" "${execs:-?}" \
            "${secs:-?}" "${rate:-?}" "$(ls "$corpus" | wc -l)"
    else
        fail=$((fail + 1))
        printf 'FAIL: %-14s exit %d after %s executions (log: %s)\n' "$t" "$rc" "${execs:-?}" "$OUT/$t.log"
        grep -a -m1 -E 'ERROR: |runtime error|Test unit written|ALARM' "$OUT/$t.log"
        grep -a -A12 -m1 -E 'ERROR: |runtime error' "$OUT/$t.log" | grep -a -E '^ +#[0-9]' | head -8
        grep -a 'Test unit written' "$OUT/$t.log"
    fi
    # Inputs slower than -report_slow_units (5 s), which the timeout must stay far above.
    grep -a -h -E '^Slowest unit' "$OUT/$t.log" | tail -1 | sed "s/^/  $t: /"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

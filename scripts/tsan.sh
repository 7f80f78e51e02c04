#!/usr/bin/env bash
# ThreadSanitizer over the threaded code (issue 19): builds build-tsan (clang-14,
# -fsanitize=thread) and runs tests/tsan/threads.c (threads calling one program's
# functions at once, each call on the CPU backend's pool; threads compiling; an
# interrupt), the C unit tests, and the examples with CUK_THREADS=2. A data race, a
# lock-order inversion or a thread leak is a failure. Last line: "N passed, N failed".
# (The Python extension is not run under TSan: clang 14's runtime preloaded into the
# interpreter crashes at start on this kernel; the C program makes the same calls.)
#   bash scripts/tsan.sh [BUILD_DIR]         (make check-tsan)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-tsan}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Debug -DCUK_TSAN=ON -DCMAKE_C_COMPILER=clang-14 >/dev/null || exit 1
cmake --build "$B" -j"$(nproc)" >/dev/null || exit 1
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 report_signal_unsafe=0"
export CUK_QUIET=1 CUK_CACHE_DIR=$(mktemp -d)
pass=0 fail=0
one() { # one NAME CMD...
    local name=$1
    shift
    if "$@" >/tmp/tsan-$$.log 2>&1 && ! grep -q "ThreadSanitizer" /tmp/tsan-$$.log; then
        pass=$((pass + 1)); echo "PASS $name"
    else
        fail=$((fail + 1)); echo "FAIL $name"; tail -40 /tmp/tsan-$$.log
    fi
}
clang-14 -std=c11 -D_GNU_SOURCE -Wall -Wextra -fsanitize=thread -g -O1 -I. -Iruntime -Ilang -o "$B/tsan_threads" \
    tests/tsan/threads.c "$B/lib/libcuk_static.a" -lm -ldl -lpthread || exit 1
one "threads calling and compiling, the CPU pool, an interrupt" env CUK_THREADS=3 "$B/tsan_threads"
for t in "$B"/tests/test_*; do
    [[ -x $t ]] || continue
    one "$(basename "$t")" "$t"
done
for f in examples/*.cuk; do
    one "$f (CUK_THREADS=2)" env CUK_THREADS=2 "$B/bin/cukc" run --device cpu "$f"
done
rm -f /tmp/tsan-$$.log
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]

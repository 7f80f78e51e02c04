#!/usr/bin/env bash
# Runs valgrind memcheck over the CPU backend: `cukc run --device cpu` on every
# examples/*.cuk and every built C example. A test passes when valgrind reports no
# errors and no definitely, indirectly or possibly lost blocks (still-reachable blocks
# are the CPU backend's cache of freed large arrays, by design). Ends with one line
# "N passed, N failed". Usage: scripts/valgrind.sh BUILD_DIR   (normally `make check-valgrind`)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
LOGS=$BUILD/valgrind-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
if ! command -v valgrind >/dev/null; then
    echo "valgrind: not installed (scripts/setup.sh installs it)"
    echo "0 passed, 1 failed"
    exit 1
fi
VG=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes)

pass=0
fail=0
# run NAME CMD...: one test, in the log folder (examples may save files).
run() {
    local name=$1 start end
    shift
    start=$(date +%s)
    (cd "$LOGS" && CUK_CACHE_DIR="$LOGS/cache" timeout 600 "${VG[@]}" --log-file="$LOGS/$name.vg" "$@") \
        >"$LOGS/$name.out" 2>&1
    local rc=$?
    end=$(date +%s)
    if [ "$rc" -eq 0 ] && [ ! -s "$LOGS/$name.vg" ]; then
        pass=$((pass + 1))
        echo "PASS: $name ($((end - start)) s)"
    else
        fail=$((fail + 1))
        echo "FAIL: $name (exit $rc)"
        head -n 40 "$LOGS/$name.vg" "$LOGS/$name.out"
    fi
}
for ex in "$ROOT"/examples/*.cuk; do
    [ -e "$ex" ] && run "$(basename "$ex")" "$BUILD/bin/cukc" run "$ex" --device cpu
done
for ex in "$BUILD"/examples/*; do
    [ -f "$ex" ] && [ -x "$ex" ] && run "$(basename "$ex")" "$ex"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

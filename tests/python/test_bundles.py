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


def test_paths_that_are_not_programs_say_why(tmp_path):
    """Issue 19: a missing path, a directory or an endless device is reported as such,
    never parsed as source text, and a read has a bound."""
    import cuk

    with pytest.raises(cuk.Error, match="cannot read '.*missing.cukb': No such file"):
        cuk.load(str(tmp_path / "missing.cukb"))
    with pytest.raises(cuk.Error, match="cannot read 'missing.cuk': No such file"):
        cuk.load("missing.cuk")
    with pytest.raises(cuk.Error, match="is a directory, not a cuk bundle"):
        cuk.load(str(tmp_path))
    with pytest.raises(cuk.Error, match="cannot read '.*missing.cukb': No such file"):
        cuk.compile(str(tmp_path / "missing.cukb"))
    with pytest.raises(cuk.Error, match="cannot read '.*nothere': No such file"):
        cuk.compile("./nothere")
    with pytest.raises(cuk.Error, match="Is a directory"):
        cuk.compile(str(tmp_path))
    with pytest.raises(cuk.Error, match="larger than 64 MiB .*no end"):
        cuk.compile("/dev/zero")
    assert cuk.compile("fn f(x: f32) -> f32 = x + 1.0;", device="cpu").f(1.0) == 2.0  # text is still text


@needs_cukc
def test_cukc_check_of_a_device_is_bounded():
    r = run("check", "/dev/zero", timeout=60)
    assert r.returncode == 1 and "larger than 64 MiB" in r.stderr, r.stderr


@needs_cukc
def test_a_library_that_is_not_nvrtc(tmp_path):
    src = tmp_path / "p.cuk"
    src.write_text("fn main() {\n    print(sum(iota(4)));\n}\n")
    r = run("emit-ptx", str(src), env=dict(os.environ, CUK_NVRTC="libc.so.6"))
    assert r.returncode != 0 and "CUK_NVRTC=libc.so.6 is not NVRTC" in r.stderr, r.stderr

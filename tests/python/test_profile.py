"""`cukc run --profile` on the GPU backend's path, without a GPU: the fake driver
(bench/fake_libcuda.c) takes the launches, so the times mean nothing, but every statement
that ran is listed once with its runs, after the sync the profile adds per statement
(tests/lit/run/profile.cuk checks the CPU backend's table and values)."""
import os
import re
import shutil
import subprocess

import pytest

import cukpath

CUKC = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
PROG = os.path.join(cukpath.ROOT, "tests", "lit", "run", "profile.cuk")


def test_profile_on_the_gpu_path(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc or not os.path.exists(CUKC):
        pytest.skip("needs a C compiler and cukc")
    lib = str(tmp_path / "libfakecuda.so")
    subprocess.run([cc, "-std=c11", "-shared", "-fPIC", "-o", lib, os.path.join(cukpath.ROOT, "bench", "fake_libcuda.c")],
                   check=True)
    r = subprocess.run([CUKC, "run", PROG, "--device", "gpu", "--profile"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, CUK_LIBCUDA=lib, CUK_QUIET="1", CUK_CACHE_DIR=str(tmp_path / "cache")))
    if r.returncode != 0 and "NVRTC" in r.stderr:
        pytest.skip("needs NVRTC")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.startswith("profile (GPU backend): 1 call, "), r.stderr
    assert "each statement waited for: its kernels' time" in r.stderr
    rows = [ln for ln in r.stderr.splitlines() if "profile.cuk:" in ln and ln.endswith("(fn main)")]
    runs = {re.search(r"profile\.cuk:\d+:\d+  (.*)  \(fn main\)$", ln).group(1): int(ln.split()[1]) for ln in rows}
    assert runs == {"x = step(x);": 7, "print(sum(x));": 1, "var x = zeros(1000);": 1}, runs
    # per kernel: launches, bytes per launch (the arrays read and written: 1000 f32 in and
    # out for step, 1000 in and one f32 out for the sum), GB/s and % of the copy bandwidth
    # the session measured (the fake driver's times are fixed: 1 us a launch)
    assert "per kernel: " in r.stderr and "% copy: of this device's copy bandwidth" in r.stderr, r.stderr
    krows = {}
    for ln in r.stderr.splitlines():
        m = re.match(r"\s*([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+%)\s+(cuk_main_k\d+) "
                     r"\((\w+)\)\s+\S*profile\.cuk:(\d+):\d+$", ln)
        if m:
            krows[(m.group(8), int(m.group(9)))] = (int(m.group(2)), float(m.group(4)))
    assert krows == {("map", 8): (7, 0.008), ("map", 10): (1, 0.004), ("reduce", 14): (1, 0.004)}, r.stderr


def test_python_profile():
    """cuk.compile(..., profile=True): Module.profile() is the table of the calls so far
    (runs add up over calls, a loop's statement counts each time round); without
    profile=True it says how to get one."""
    import numpy as np
    import cuk
    m = cuk.compile("fn step(x: f32[n]) -> f32[n] {\n    var y = x * 2.0;\n    for i in 0..3 {\n"
                    "        y = y + 1.0;\n    }\n    return y;\n}\n", device="cpu", profile=True, name="p.cuk")
    for _ in range(4):
        np.testing.assert_array_equal(m.step(np.ones(10, np.float32)), np.full(10, 5, np.float32))
    t = m.profile()
    assert t.startswith("profile (CPU backend): 4 calls, "), t
    runs = {re.search(r"p\.cuk:\d+:\d+  (.*)  \(fn step\)$", ln).group(1): int(ln.split()[1])
            for ln in t.splitlines() if "p.cuk:" in ln}
    assert runs == {"var y = x * 2.0;": 4, "y = y + 1.0;": 12, "return y;": 4}, runs
    plain = cuk.compile("fn f(x: f32[n]) -> f32[n] = x;", device="cpu")
    with pytest.raises(cuk.Error, match=r"profile=True"):
        plain.profile()


def test_function_profile():
    """m.f.profile(args): one call profiled on its own, the table returned, whether or not
    the module was compiled with profile=True; a profile=True module's own table is left
    as it was."""
    import numpy as np
    import cuk
    src = "fn f(x: f32[n]) -> f32[n] {\n    var y = x * 2.0;\n    for i in 0..3 {\n        y = y + 1.0;\n    }\n    return y;\n}\n"
    for prof in (False, True):
        m = cuk.compile(src, device="cpu", profile=prof, name="fp.cuk")
        if prof:
            m.f(np.ones(10, np.float32))
        t = m.f.profile(np.ones(10, np.float32))
        assert t.startswith("profile (CPU backend): 1 call, "), t
        runs = {re.search(r"fp\.cuk:\d+:\d+  (.*)  \(fn f\)$", ln).group(1): int(ln.split()[1])
                for ln in t.splitlines() if "fp.cuk:" in ln}
        assert runs == {"var y = x * 2.0;": 1, "y = y + 1.0;": 3, "return y;": 1}, runs
        if prof:
            assert m.profile().startswith("profile (CPU backend): 1 call, ")  # its own: the first call only
        else:
            with pytest.raises(cuk.Error, match=r"profile=True"):
                m.profile()
        with pytest.raises(TypeError):
            m.f.profile()  # a bad call raises as the call does; the next profile still works
        assert m.f.profile(np.ones(3, np.float32)).startswith("profile (CPU backend): 1 call, ")

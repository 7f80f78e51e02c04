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
    rows = [ln for ln in r.stderr.splitlines() if "profile.cuk:" in ln]
    runs = {re.search(r"profile\.cuk:\d+:\d+  (.*)  \(fn main\)$", ln).group(1): int(ln.split()[1]) for ln in rows}
    assert runs == {"x = step(x);": 7, "print(sum(x));": 1, "var x = zeros(1000);": 1}, runs

"""Every valid program in the repository compiles to sm_90 PTX through NVRTC, which needs
no GPU: CI checks each kernel the emitter writes for them, not just the ones the
lit/cuda tests pin. Programs that are meant not to compile (tests/lit/types, syntax,
...) are found by `cukc check` failing and are left out."""
import glob
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build")
CUKC = os.path.join(BUILD, "bin", "cukc")

FILES = sorted(
    glob.glob(os.path.join(ROOT, "examples", "*.cuk"))
    + glob.glob(os.path.join(ROOT, "stdlib", "*.cuk"))
    + [f for d in ("run", "fusion", "cuda", "examples", "aot", "regress")
       for f in glob.glob(os.path.join(ROOT, "tests", "lit", d, "*.cuk"))])


@pytest.mark.skipif(not os.path.exists(CUKC), reason="cukc is not built")
@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_emit_ptx_sm90(path, tmp_path):
    if subprocess.run([CUKC, "check", path], capture_output=True).returncode != 0:
        pytest.skip("not a valid program (a negative test)")
    env = dict(os.environ, CUK_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([CUKC, "emit-ptx", path, "--arch", "sm_90"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert ".target sm_90" in r.stdout
    ir = subprocess.run([CUKC, "emit-ir", path], capture_output=True, text=True).stdout
    # an f32/f64 matrix product is a cuBLASLt call, with no entry of its own
    kernels = sum(1 for line in ir.splitlines() if line.startswith("kernel k") and "(cublasLt)" not in line)
    entries = re.findall(r"\.visible \.entry (\w+)\(", r.stdout)
    # an update's map kernel has a second entry over its region, <kernel>_rg (in place);
    # a segmented reduction has a prepass and a fix-up, <kernel>_sp and <kernel>_sf; a
    # row kernel entries for short rows, long rows and rows a cluster holds, <kernel>_gr,
    # <kernel>_lg and <kernel>_cl
    extra = [e for e in entries if e.endswith(("_rg", "_sp", "_sf", "_gr", "_lg", "_cl"))]
    assert len(entries) - len(extra) == kernels
    assert all(e[:-3] in entries for e in extra)
    segred = [e for e in entries if e.endswith("_sp")]
    assert all(e[:-3] + "_sf" in entries for e in segred)
    rows = [e for e in entries if e.endswith("_gr")]
    assert all(e[:-3] + "_lg" in entries and e[:-3] + "_cl" in entries for e in rows)

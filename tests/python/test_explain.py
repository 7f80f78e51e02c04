"""cuk.explain (cuk_program_explain): what the compiler makes of a program, as cukc's
emit-ir, emit-ir --dot and emit-cuda print it, without a GPU; and a lazy gpuarray
expression's explain(): its cuk function and the one kernel it fuses into."""
import os
import subprocess

import numpy as np
import pytest

import cukpath
import cuk
import cuk.gpuarray as ga

SRC = "fn f(x: f32[n], y: f32[n]) -> f32 = sum(x * y);\nfn g(x: f32[n]) -> f32[n] = exp(x) * 2.0;\n"
CUKC = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")


def test_explain_is_what_cukc_prints(tmp_path):
    src = tmp_path / "p.cuk"
    src.write_text(SRC)
    for what, args in (("ir", ["emit-ir"]), ("dot", ["emit-ir", "--dot"]), ("cuda", ["emit-cuda"])):
        r = subprocess.run([CUKC] + args + [str(src)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert cuk.explain(str(src), what) == r.stdout, what
    ir = cuk.explain(SRC)
    assert "plan f: 1 kernel" in ir and "kernel k0 reduce: mul red.sum" in ir, ir
    assert "plan g: 1 kernel" in ir and "kernel k0 map: exp mul" in ir, ir
    assert 'extern "C" __global__' in cuk.explain(SRC, "cuda")


def test_explain_errors():
    with pytest.raises(cuk.CompileError, match=r"p\.cuk:1:7: error"):
        cuk.explain("fn f( {", name="p.cuk")
    with pytest.raises(ValueError, match="what must be 'ir', 'cuda' or 'dot'"):
        cuk.explain(SRC, "ptx")


def test_lazy_gpuarray_expression_shows_its_kernel():
    a = ga.to_gpu(np.arange(10, dtype=np.float32))
    b = ga.to_gpu(np.ones(10, np.float32))
    e = a * 2 + b
    t = e.explain()
    first = t.splitlines()[0]
    assert first.startswith("fn k(") and "*" in first and "+" in first, t
    assert "plan k: 1 kernel" in t and "kernel k0 map: mul add" in t, t
    assert 'extern "C" __global__' in e.explain("cuda")
    np.testing.assert_array_equal(e.get(), np.arange(10) * 2 + 1)
    with pytest.raises(ValueError, match="in memory, not a lazy expression"):
        e.explain()

"""In-place updates on the GPU backend: tests/gpu/inplace_prog.cuk gives the CPU
backend's output on the GPU, and writes into the array's own buffer exactly where
tests/gpu/inplace_expect.txt says (CUK_TRACE_INPLACE=1: a shared array, a parameter's
array and a right side that reads the array get a new one). The values of every update
form at sizes 0 to 2^20 + 7 are tests/lit/run/update_inplace.cuk's, which
test_programs.py runs on both backends; arguments passed from Python that stay intact
are in tests/python/test_updates.py.

Run on a GPU machine: python3 -m pytest -q tests/gpu/test_inplace.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucommon as gc  # noqa: E402

pytestmark = gc.require_gpu()

PROG = os.path.join(gc.REPO, "tests", "gpu", "inplace_prog.cuk")


def test_inplace_decisions_and_values():
    cpu = gc.run(PROG, "cpu", [])
    gpu = gc.run(PROG, "gpu", [], env={"CUK_TRACE_INPLACE": "1"})
    assert cpu.rc == 0 and gpu.rc == 0, gpu.err[-3000:]
    assert gpu.out == cpu.out
    got = [ln[len("cuk-inplace: "):] for ln in gpu.err.splitlines() if ln.startswith("cuk-inplace: ")]
    want = open(os.path.join(gc.REPO, "tests", "gpu", "inplace_expect.txt")).read().splitlines()
    assert got == want

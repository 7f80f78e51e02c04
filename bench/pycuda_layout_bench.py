#!/usr/bin/env python3
"""The PyCUDA-layout API on the GPU (issue 13): InclusiveScanKernel and
ExclusiveScanKernel ("a+b" runs on the language's one-pass scan), curandom.rand and
PhiloxGenerator.fill_uniform, ElementwiseKernel, ReductionKernel (a dot product) and
gpuarray.sum, on 2^24 float32 (--n), against CuPy and PyTorch doing the same job in the
same run. CUDA events on the legacy default stream (where cuk and both peers run here),
median of --iters calls after 3 warm-ups; each cuk result is checked against NumPy
first. PyCUDA itself is not installed on the GPU machine (no network, no wheel); the
issue's figure for its InclusiveScanKernel (156 us on an H200, 2026-11-24) is the bar.

usage: pycuda_layout_bench.py [--n 16777216] [--iters 20]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import import_peers, torch_median_ms  # noqa: E402  (bench/timing.py)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    n = a.n
    torch, cp = import_peers()
    import cuk.autoinit  # noqa: F401
    import cuk.curandom as curandom
    import cuk.gpuarray as ga
    from cuk.elementwise import ElementwiseKernel
    from cuk.reduction import ReductionKernel
    from cuk.scan import ExclusiveScanKernel, InclusiveScanKernel

    rng = np.random.default_rng(1)
    h = rng.random(n, dtype=np.float32)
    hy = rng.random(n, dtype=np.float32)
    x, y, out = ga.to_gpu(h), ga.to_gpu(hy), ga.empty(n, np.float32)
    tx, ty = torch.from_numpy(h).cuda(), torch.from_numpy(hy).cuda()
    cx, cy = (cp.asarray(h), cp.asarray(hy)) if cp is not None else (None, None)
    rows = []

    def timed(name, who, fn, nbytes):
        rows.append((name, who, torch_median_ms(fn, a.iters), nbytes))

    inc = InclusiveScanKernel(np.float32, "a+b")
    exc = ExclusiveScanKernel(np.float32, "a+b", "0")
    want = np.cumsum(h.astype(np.float64))
    got = inc(x, out).get()
    assert np.allclose(got, want, rtol=1e-3), "inclusive scan differs from NumPy"
    assert np.allclose(exc(x, out).get()[1:], want[:-1], rtol=1e-3), "exclusive scan differs from NumPy"
    print("scan on the language's kernel:", inc._lang is not None)
    nb = 8 * n
    timed("InclusiveScanKernel a+b", "cuk (out of place)", lambda: inc(x, out), nb)
    z = ga.to_gpu(h)
    timed("InclusiveScanKernel a+b", "cuk (in place)", lambda: inc(z), nb)
    timed("InclusiveScanKernel a+b", "torch.cumsum", lambda: torch.cumsum(tx, 0), nb)
    if cp is not None:
        timed("InclusiveScanKernel a+b", "cupy.cumsum", lambda: cp.cumsum(cx), nb)
    timed("ExclusiveScanKernel a+b", "cuk", lambda: exc(x, out), nb)

    r = curandom.rand(n, seed=3).get()
    assert r.min() >= 0 and r.max() < 1 and abs(r.mean() - 0.5) < 1e-3, "curandom.rand is off"
    timed("curandom.rand", "cuk", lambda: curandom.rand(n), 4 * n)
    g = curandom.PhiloxGenerator(5)
    timed("curandom.rand", "cuk fill_uniform", lambda: g.fill_uniform(out), 4 * n)
    timed("curandom.rand", "torch.rand", lambda: torch.rand(n, device="cuda"), 4 * n)
    if cp is not None:
        timed("curandom.rand", "cupy.random.random", lambda: cp.random.random(n, dtype=cp.float32), 4 * n)

    axpy = ElementwiseKernel("float a, float *x, float *y, float *z", "z[i] = a * x[i] + y[i]", "axpy")
    axpy(np.float32(2), x, y, out)
    assert np.allclose(out.get(), 2 * h + hy, rtol=1e-6), "ElementwiseKernel differs"
    timed("ElementwiseKernel axpy", "cuk", lambda: axpy(np.float32(2), x, y, out), 12 * n)
    timed("ElementwiseKernel axpy", "torch (2 kernels)", lambda: torch.add(ty, tx, alpha=2), 12 * n)
    if cp is not None:
        ck = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "axpy")
        timed("ElementwiseKernel axpy", "cupy ElementwiseKernel", lambda: ck(np.float32(2), cx, cy), 12 * n)

    dot = ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                          arguments="const float *x, const float *y")
    assert abs(float(dot(x, y).get()) - float(h.astype(np.float64) @ hy)) < 1e-3 * n, "ReductionKernel differs"
    timed("ReductionKernel dot", "cuk", lambda: dot(x, y), 8 * n)
    timed("ReductionKernel dot", "torch.dot", lambda: torch.dot(tx, ty), 8 * n)
    if cp is not None:
        timed("ReductionKernel dot", "cupy.dot", lambda: cp.dot(cx, cy), 8 * n)
    timed("gpuarray.sum", "cuk", lambda: ga.sum(x), 4 * n)
    timed("gpuarray.sum", "torch.sum", lambda: torch.sum(tx), 4 * n)
    if cp is not None:
        timed("gpuarray.sum", "cupy.sum", lambda: cp.sum(cx), 4 * n)

    print("\n| job (%d float32) | who | us | GB/s |" % n)
    print("| --- | --- | ---: | ---: |")
    for name, who, ms, nbytes in rows:
        print("| %s | %s | %.1f | %.0f |" % (name, who, ms * 1e3, nbytes / ms / 1e6))


if __name__ == "__main__":
    sys.exit(main())

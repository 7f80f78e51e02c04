"""Copies between the GPU and pageable host memory, as users write them, against CuPy
and PyTorch in the same run: GB/s of
  - device to host into a new array (cuk's DeviceArray.get(), gpuarray's .get(),
    cupy.asnumpy, torch's .cpu()),
  - device to host into an existing array (get(out=), gpuarray get(ary), CuPy's
    get(out=), torch's copy_ into a NumPy-backed tensor),
  - host to device from an existing array (cuk.to_device, cupy.asarray, torch's .cuda()),
for sizes in MiB given on the command line (default 256 1024 4096). Each row is the
best of 3 runs after one warm-up; the first touch of a new host array is part of what
"into a new array" measures, as it is of every user's get().

Usage: PYTHONPATH=build/python:python python3 bench/host_copy_bench.py [MiB ...]"""
import sys
import time

import numpy as np

import cuk
import cuk.autoinit  # noqa: F401
import cuk.gpuarray as ga

SIZES = [int(a) for a in sys.argv[1:]] or [256, 1024, 4096]


def best(fn, sync, runs=3):
    fn()
    sync()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main():
    try:
        import cupy as cp
    except ImportError:
        cp = None
    try:
        import torch
    except ImportError:
        torch = None
    nosync = lambda: None  # noqa: E731
    print("| MiB | copy | who | s | GB/s |")
    print("| ---: | --- | --- | ---: | ---: |")
    for mib in SIZES:
        n = mib << 18  # f32 elements
        h = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
        d = cuk.to_device(h)
        g = ga.to_gpu(h)
        out = np.empty_like(h)
        out.fill(0)
        assert np.array_equal(d.get(), h) and np.array_equal(g.get(out), h), "cuk's copy differs"
        rows = [("d2h new", "cuk DeviceArray.get()", lambda: d.get(), nosync),
                ("d2h new", "cuk gpuarray .get()", lambda: g.get(), nosync),
                ("d2h existing", "cuk get(out=)", lambda: d.get(out=out), nosync),
                ("d2h existing", "cuk gpuarray .get(ary)", lambda: g.get(out), nosync),
                ("h2d", "cuk.to_device", lambda: cuk.to_device(h), nosync)]
        if cp is not None:
            c = cp.asarray(h)
            rows += [("d2h new", "cupy.asnumpy", lambda: cp.asnumpy(c), nosync),
                     ("d2h existing", "cupy get(out=)", lambda: c.get(out=out), nosync),
                     ("h2d", "cupy.asarray", lambda: cp.asarray(h), cp.cuda.runtime.deviceSynchronize)]
        if torch is not None:
            t = torch.from_numpy(h).cuda()
            tout = torch.from_numpy(out)
            rows += [("d2h new", "torch .cpu()", lambda: t.cpu(), nosync),
                     ("d2h existing", "torch copy_ into host", lambda: tout.copy_(t), nosync),
                     ("h2d", "torch .cuda()", lambda: torch.from_numpy(h).cuda(), torch.cuda.synchronize)]
        for what, who, fn, sync in rows:
            s = best(fn, sync)
            print("| %d | %s | %s | %.3f | %.2f |" % (mib, what, who, s, (n * 4) / s / 1e9), flush=True)
        del d, g, out
        if cp is not None:
            del c
            cp.get_default_memory_pool().free_all_blocks()
        if torch is not None:
            del t, tout
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

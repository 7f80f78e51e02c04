"""Python call overhead on a GPU: microseconds per call of a tiny kernel (n = 1024
floats, so launch cost dominates) issued from Python, for
  - a cuk.compile function on cuk device arrays (allocates its result each call),
  - a cuk SourceModule kernel called PyCUDA-style on a device array,
  - the same kernel as a prepared call,
  - CuPy RawKernel, CuPy ElementwiseKernel, PyTorch (x.add_(1)),
and, if built, the bare cuLaunchKernel loop in C (build/bench/bench_runtime).
Usage: PYTHONPATH=build/python:python python3 bench/python_overhead.py [calls]"""
import os
import subprocess
import sys
import time

import numpy as np

import cuk

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
N = 1024
SRC = 'extern "C" __global__ void inc(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }'


def timeit(name, fn, sync, results):
    for _ in range(200):
        fn()
    sync()
    best = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / CALLS)
    results.append((name, best * 1e6))
    print(f"| {name:<52} | {best * 1e6:8.2f} |", flush=True)


def main():
    if not cuk.gpu_available():
        print("needs a GPU")
        return 0
    from cuk import autoinit  # noqa: F401
    from cuk import driver as drv
    from cuk.compiler import SourceModule

    print(f"device: {drv.Device(0).name()}, {CALLS} calls per loop, best of 3\n")
    print(f"| {'call from Python':<52} | {'us/call':>8} |")
    print(f"|{'-' * 54}|{'-' * 10}|")
    res = []
    sync = drv.Context.synchronize
    x = cuk.to_device(np.zeros(N, np.float32))
    m = cuk.compile("fn inc(x: f32[n]) -> f32[n] = x + 1.0;\nfn inc_scalar(x: f32[n], a: f32) -> f32[n] = x + a;",
                    device="gpu")
    f = m.inc
    timeit("cuk.compile function, DeviceArray in and out", lambda: f(x), sync, res)
    g = m.inc_scalar
    timeit("cuk.compile function, DeviceArray + Python float", lambda: g(x, 1.0), sync, res)
    k = SourceModule(SRC, no_extern_c=True).get_function("inc")
    n32 = np.int32(N)
    timeit("cuk SourceModule kernel, PyCUDA-style call", lambda: k(x, n32, block=(256, 1, 1), grid=(4, 1)), sync, res)
    k.prepare("Pi")
    timeit("cuk SourceModule kernel, prepared_call", lambda: k.prepared_call((4, 1), (256, 1, 1), x, N), sync, res)
    try:
        import cupy as cp

        cx = cp.zeros(N, cp.float32)
        rk = cp.RawKernel(SRC, "inc")
        csync = cp.cuda.runtime.deviceSynchronize
        timeit("CuPy RawKernel", lambda: rk((4,), (256,), (cx, n32)), csync, res)
        ek = cp.ElementwiseKernel("", "float32 x", "x += 1.0f", "inc_ew")
        timeit("CuPy ElementwiseKernel", lambda: ek(cx), csync, res)
        timeit("cuk.compile function on a CuPy array (CuPy out)", lambda: f(cx), csync, res)
    except ImportError:
        print("(no CuPy)")
    try:
        import torch

        tx = torch.zeros(N, device="cuda")
        timeit("PyTorch x.add_(1)", lambda: tx.add_(1), torch.cuda.synchronize, res)
    except ImportError:
        print("(no PyTorch)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for b in (os.environ.get("CUK_BUILD_DIR", "build"), "build"):
        exe = os.path.join(root, b, "bench", "bench_runtime")
        if os.path.exists(exe):
            out = subprocess.run([exe], capture_output=True, text=True).stdout
            for line in out.splitlines():
                if "bare cuLaunchKernel" in line or "cuk_launch" in line:
                    print("C:", line)
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())

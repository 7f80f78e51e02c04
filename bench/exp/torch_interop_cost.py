"""What each step of taking a torch tensor costs, in us per call (GPU machine):
the protocol calls cuk could make for an argument, and the result's path. Decides how
cuk.compile functions read torch tensors (docs/python.md, Call overhead).

Usage: PYTHONPATH=build/python:python python3 bench/exp/torch_interop_cost.py"""
import time

import torch

import cuk


def per_call(fn, n=20000):
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = (time.perf_counter() - t0) / n * 1e6
        best = dt if best is None else min(best, dt)
    return best


t = torch.ones(1024, device="cuda")
raw = torch._C._cuda_getCurrentRawStream
f = cuk.compile("fn f(x: f32[n]) -> f32[n] = x + 1.0;").f
r = f(t)
da = cuk.to_device(__import__("numpy").ones(1024, "float32"))
torch.cuda.synchronize()
to_dlpack = torch.utils.dlpack.to_dlpack
o = torch.empty_like(t)


def meta():
    return (t.is_cuda, t.layout, t.dtype, t.shape, t.stride(), t.data_ptr(), t.get_device())


rows = [
    ("t.__dlpack_device__()", lambda: t.__dlpack_device__()),
    ("t.__dlpack__(stream=1)", lambda: t.__dlpack__(stream=1)),
    ("t.__dlpack__()", lambda: t.__dlpack__()),
    ("t.__cuda_array_interface__", lambda: t.__cuda_array_interface__),
    ("torch._C._cuda_getCurrentRawStream(0)", lambda: raw(0)),
    ("t.get_device()", lambda: t.get_device()),
    ("t.data_ptr()", lambda: t.data_ptr()),
    ("torch.utils.dlpack.from_dlpack(capsule)", lambda: torch.utils.dlpack.from_dlpack(da.__dlpack__())),
    ("torch.cuda.current_stream()", lambda: torch.cuda.current_stream()),
    ("torch.utils.dlpack.to_dlpack(t)", lambda: to_dlpack(t)),
    ("t.shape", lambda: t.shape),
    ("t.stride()", lambda: t.stride()),
    ("t.dtype", lambda: t.dtype),
    ("t.layout", lambda: t.layout),
    ("t.is_cuda", lambda: t.is_cuda),
    ("t.requires_grad", lambda: t.requires_grad),
    ("the 7 attributes a metadata path would read", meta),
    ("cuk f(t) (torch out)", lambda: f(t)),
    ("cuk f(t, out=o)", lambda: f(t, out=o)),
    ("cuk f(da) (DeviceArray out)", lambda: f(da)),
]
for name, fn in rows:
    print(f"{name:45s} {per_call(fn):8.2f} us")
    torch.cuda.synchronize()

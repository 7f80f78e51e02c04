"""Stream ordering between cuk and PyTorch/CuPy on a GPU (run on a GPU machine:
PYTHONPATH=build/python:python python3 -m pytest tests/gpu/python/test_gpu_interop_streams.py,
or scripts/gpu-check.sh python with the carried build).

cuk queues its work on the legacy default stream; PyTorch's side streams and CuPy's
non_blocking streams do not synchronise with it. Each test delays the producer's work
with a spin kernel, so that a missing wait shows as a wrong sum, and repeats a few times:

- a tensor written on a PyTorch side stream, then summed by cuk inside
  `with torch.cuda.stream(s)` (cuk takes it through DLPack with stream=1, and PyTorch
  makes the legacy stream wait for s);
- a CuPy array written on a non-blocking stream (its __cuda_array_interface__ names the
  stream; cuk records an event there and waits for it);
- the other way: cuk's result (delayed on the legacy stream) read on the side stream,
  as a result handed back to PyTorch/CuPy, through torch.from_dlpack(DeviceArray) and
  through cupy.asarray(DeviceArray) (__cuda_array_interface__'s stream 1).

Values are powers of two, so that every float32 partial sum is exact."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build")
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(ROOT, "python")]

import cuk  # noqa: E402

if not cuk.gpu_available():
    pytest.skip("needs a GPU", allow_module_level=True)

SRC = "fn total(x: f32[n]) -> f32 = sum(x);\nfn scale(x: f32[n], a: f32) -> f32[n] = x * a;\n"
N = 1 << 24
REPEATS = 5
SPIN = 100_000_000  # GPU clock cycles: tens of milliseconds


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="gpu")


def need_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def need_cupy():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy sees no GPU")
    except cp.cuda.runtime.CUDARuntimeError:
        pytest.skip("CuPy cannot use the GPU")
    return cp


def cupy_spin(cp):
    return cp.RawKernel(r"""extern "C" __global__ void spin(long long cycles) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
    }""", "spin")


# ---- into cuk --------------------------------------------------------------------------------


def test_torch_side_stream_write_is_seen_by_cuk(m):
    torch = need_torch()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.empty(N, device="cuda")
    for i in range(REPEATS):
        x.zero_()  # on the default stream, finished before the side stream starts
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            torch.cuda._sleep(SPIN)
            x.fill_(1.0)
            r = m.total(x)  # read on cuk's stream: must come after the fill on s
            assert isinstance(r, torch.Tensor)
            assert float(r) == N, f"round {i}: cuk read x before the side stream's write landed"
        torch.cuda.synchronize()


def test_cupy_stream_write_is_seen_by_cuk(m):
    cp = need_cupy()
    spin = cupy_spin(cp)
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(N, cp.float32)
    for i in range(REPEATS):
        x.fill(0)
        cp.cuda.Device().synchronize()
        with s:
            spin((1,), (1,), (np.int64(SPIN),))
            x.fill(1.0)
            r = m.total(x)  # x's __cuda_array_interface__ names s
            assert isinstance(r, cp.ndarray)
            assert float(r) == N, f"round {i}: cuk read x before the CuPy stream's write landed"
        s.synchronize()


# ---- out of cuk --------------------------------------------------------------------------------


def test_cuk_result_is_seen_on_a_torch_side_stream(m):
    torch = need_torch()
    s = torch.cuda.Stream()
    x = torch.ones(N, device="cuda")
    xd = cuk.to_device(np.ones(N, np.float32))
    for i in range(REPEATS):
        a = 2.0 ** (i + 1)
        torch.cuda._sleep(SPIN)  # on the default (legacy) stream: cuk's next kernel waits behind it
        with torch.cuda.stream(s):
            y = m.scale(x, a)  # a torch tensor; s must wait for cuk's kernel
            assert float(y.sum()) == N * a, f"round {i}: the side stream read cuk's result too early"
        torch.cuda._sleep(SPIN)
        d = m.scale(xd, a)  # a DeviceArray
        with torch.cuda.stream(s):
            t = torch.from_dlpack(d)  # __dlpack__(stream=s): s waits for cuk's kernel
            assert float(t.sum()) == N * a, f"round {i}: from_dlpack gave a tensor before cuk wrote it"
        torch.cuda.synchronize()


def test_cuk_result_is_seen_on_a_cupy_stream(m):
    cp = need_cupy()
    spin = cupy_spin(cp)
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(N, cp.float32)
    xd = cuk.to_device(np.ones(N, np.float32))
    for i in range(REPEATS):
        a = 2.0 ** (i + 1)
        spin((1,), (1,), (np.int64(SPIN),))  # on CuPy's null stream, the legacy one
        with s:
            y = m.scale(x, a)  # a CuPy array; s must wait for cuk's kernel
            assert float(y.sum()) == N * a, f"round {i}: the CuPy stream read cuk's result too early"
        spin((1,), (1,), (np.int64(SPIN),))
        d = m.scale(xd, a)
        with s:
            c = cp.asarray(d)  # __cuda_array_interface__ names stream 1
            assert float(c.sum()) == N * a, f"round {i}: cupy.asarray gave an array before cuk wrote it"
        cp.cuda.Device().synchronize()

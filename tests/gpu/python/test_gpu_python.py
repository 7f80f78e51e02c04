"""GPU tests of the Python package (run on a GPU machine:
PYTHONPATH=build/python:python python3 -m pytest tests/gpu/python). They port PyCUDA's
test behaviours: compiled functions on device arrays, ElementwiseKernel with range= and
slice=, ReductionKernel dot at 17 sizes, scans up to 2**24, cumath, pool, streams with
pinned memory, prepared calls, constant memory, CuPy and PyTorch arrays without copies."""
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

import cuk.autoinit  # noqa: E402,F401
import cuk.cumath as cumath  # noqa: E402
import cuk.driver as drv  # noqa: E402
import cuk.gpuarray as ga  # noqa: E402
from cuk.compiler import SourceModule  # noqa: E402
from cuk.elementwise import ElementwiseKernel  # noqa: E402
from cuk.reduction import ReductionKernel  # noqa: E402
from cuk.scan import ExclusiveScanKernel, InclusiveScanKernel  # noqa: E402

SAXPY = "fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;\nfn total(x: f32[n]) -> f32 = sum(x);\n"


def test_device_info():
    d = drv.Device(0)
    assert d.name() and d.compute_capability()[0] >= 7 and d.total_memory() > 1 << 30
    free, total = drv.mem_get_info()
    assert 0 < free <= total


def test_compile_gpu_numpy_and_device_arrays():
    m = cuk.compile(SAXPY, device="gpu")
    assert m.backend == "gpu"
    x = np.arange(1 << 20, dtype=np.float32)
    y = np.ones(1 << 20, np.float32)
    np.testing.assert_allclose(m.saxpy(2.0, x, y), 2 * x + y)
    dx, dy = cuk.to_device(x), cuk.to_device(y)
    z = m.saxpy(2.0, dx, dy)
    assert isinstance(z, cuk.DeviceArray) and z.shape == x.shape
    np.testing.assert_allclose(z.get(), 2 * x + y)
    t = m.total(dx)
    assert abs(float(np.asarray(t.get())) - x.sum()) / x.sum() < 1e-5


def test_device_array_scalars():
    """float(), bool() and .item() of a one-element DeviceArray are its value (as NumPy);
    int() stays the device pointer (PyCUDA's convention); other sizes refuse."""
    m = cuk.compile("fn total(x: f32[n]) -> f32 = sum(x);\nfn any_pos(x: f32[n]) -> bool = any(x > 0.0);",
                    device="gpu")
    x = cuk.to_device(np.arange(10, dtype=np.float32))
    t = m.total(x)
    assert isinstance(t, cuk.DeviceArray) and t.shape == ()
    assert float(t) == 45.0 and t.item() == 45.0
    assert int(t) == t.ptr
    assert bool(m.any_pos(x)) is True
    assert bool(m.any_pos(cuk.to_device(-np.ones(3, np.float32)))) is False
    assert float(cuk.to_device(np.array([2.5], np.float32))) == 2.5
    with pytest.raises(TypeError, match="one element"):
        float(x)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)


def test_gpu_matches_cpu_backend():
    g = cuk.compile(SAXPY, device="gpu")
    c = cuk.compile(SAXPY, device="cpu")
    for n in (0, 1, 31, 32, 33, 1023, 1025, (1 << 20) + 7):
        x = np.random.rand(n).astype(np.float32)
        y = np.random.rand(n).astype(np.float32)
        np.testing.assert_allclose(g.saxpy(1.5, x, y), c.saxpy(1.5, x, y), rtol=1e-6)


MANDEL = """
fn escape(cr: f32, ci: f32) -> i32 {
    var zr = 0.0;
    var zi = 0.0;
    var k: i32 = 0;
    while k < 100 && zr * zr + zi * zi < 4.0 {
        let t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        k = k + 1;
    }
    return k;
}
fn mandel(h: i64, w: i64) -> i32[h, w] {
    let cr = f32(iota(h * w) % w) / f32(w) * 3.0 - 2.0;
    let ci = f32(iota(h * w) / w) / f32(h) * 2.0 - 1.0;
    return reshape(escape(cr, ci), h, w);
}
"""


def test_gpu_arithmetic_is_the_cpu_backends():
    """Issue 19: without fast_math the GPU does not contract a * b + c into FMAs, so an
    iteration as sensitive as Mandelbrot's gives the CPU backend's pixels exactly (with
    contraction 246 of 1024 x 768 differed on an H200); fast_math=True allows it."""
    want = cuk.compile(MANDEL, device="cpu").mandel(768, 1024)
    got = cuk.compile(MANDEL, device="gpu").mandel(768, 1024)
    assert np.array_equal(got, want), int((got != want).sum())
    fast = cuk.compile(MANDEL, device="gpu", fast_math=True).mandel(768, 1024)
    assert fast.shape == want.shape and (fast == want).mean() > 0.99


def test_cupy_arrays_without_copies():
    cp = pytest.importorskip("cupy")
    m = cuk.compile(SAXPY, device="gpu")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, dtype=cp.float32)
    z = m.saxpy(3.0, x, y)
    assert isinstance(z, cp.ndarray)
    cp.testing.assert_allclose(z, 3 * x + y)
    # no copy: a compiled function sees writes to the CuPy buffer
    d = ga.GPUArray((1000,), np.float32, gpudata=x.data.ptr, base=x)
    x[0] = 42
    assert d[0:1].get()[0] == 42


def test_torch_tensors_without_copies():
    torch = pytest.importorskip("torch")
    m = cuk.compile(SAXPY, device="gpu")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    z = m.saxpy(3.0, x, y)
    assert isinstance(z, torch.Tensor) and z.is_cuda
    assert torch.allclose(z, 3 * x + y)


def test_torch_tensor_edges():
    """Tensors through DLPack (python/array.c torch_arg): views with offsets, ranks,
    dtypes, empty and host tensors, tensors requiring grad, and the errors."""
    torch = pytest.importorskip("torch")
    m = cuk.compile("""
fn shift(x: f32[n]) -> f32[n] = x + 1.0;
fn rows(x: i64[a, b]) -> i64[a] = sum(x, axis=1);
fn flip(x: bool[n]) -> bool[n] = !x;
""", device="gpu")
    base = torch.arange(100, dtype=torch.float32, device="cuda")
    r = m.shift(base[37:])  # a view with a storage offset
    assert torch.equal(r, base[37:] + 1)
    o = torch.zeros(80, device="cuda")
    m.shift(base[20:], out=o)
    assert torch.equal(o, base[20:] + 1)
    x = torch.arange(12, dtype=torch.int64, device="cuda").reshape(3, 4)
    assert torch.equal(m.rows(x), x.sum(1))
    assert torch.equal(m.rows(x[1:]), x[1:].sum(1))
    b = torch.tensor([True, False, True], device="cuda")
    assert torch.equal(m.flip(b), ~b)
    assert m.shift(torch.empty(0, device="cuda")).shape == (0,)
    np.testing.assert_array_equal(m.shift(torch.ones(5)), np.full(5, 2.0, np.float32))  # a host tensor
    with pytest.raises(cuk.ArgumentError, match="not C-contiguous"):
        m.rows(x.t())
    with pytest.raises(cuk.ArgumentError, match="float64"):
        m.shift(torch.ones(5, device="cuda", dtype=torch.float64))
    g = torch.ones(5, device="cuda", requires_grad=True)  # read as data
    assert torch.equal(m.shift(g), torch.full((5,), 2.0, device="cuda"))
    with pytest.raises(cuk.ArgumentError, match="not C-contiguous"):
        m.shift(torch.ones(4, 3, device="cuda")[:, 0])


def test_hello_gpu_sourcemodule():
    mod = SourceModule("""
    __global__ void multiply_them(float *dest, float *a, float *b) {
      const int i = threadIdx.x;
      dest[i] = a[i] * b[i];
    }""")
    multiply_them = mod.get_function("multiply_them")
    a = np.random.randn(400).astype(np.float32)
    b = np.random.randn(400).astype(np.float32)
    dest = np.zeros_like(a)
    multiply_them(drv.Out(dest), drv.In(a), drv.In(b), block=(400, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(dest, a * b)
    t = multiply_them(drv.Out(dest), drv.In(a), drv.In(b), block=(400, 1, 1), time_kernel=True)
    assert t > 0


def test_prepared_call_and_inout():
    mod = SourceModule("""
    __global__ void scale(float *a, float f, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) a[i] *= f;
    }""")
    f = mod.get_function("scale")
    f.prepare("Pfi")
    a = ga.to_gpu(np.arange(1000, dtype=np.float32))
    f.prepared_call((4, 1), (256, 1, 1), a.gpudata, 2.0, 1000)
    np.testing.assert_array_equal(a.get(), np.arange(1000) * 2)
    f.prepare([np.intp, np.float32, np.int32])
    s = drv.Stream()
    f.prepared_async_call((4, 1), (256, 1, 1), s, a.gpudata, 0.5, 1000)
    s.synchronize()
    np.testing.assert_array_equal(a.get(), np.arange(1000))
    h = np.ones(10, np.float32)
    f(drv.InOut(h), np.float32(3), np.int32(10), block=(32, 1, 1))
    np.testing.assert_array_equal(h, 3)
    assert f.num_regs > 0


def test_constant_memory_get_global():
    mod = SourceModule("""
    __constant__ float coef[4];
    __global__ void apply(float *out) { out[threadIdx.x] = coef[threadIdx.x] * 2.0f; }""")
    ptr, size = mod.get_global("coef")
    assert size == 16
    drv.memcpy_htod(ptr, np.array([1, 2, 3, 4], np.float32))
    out = ga.empty(4, np.float32)
    mod.get_function("apply")(out, block=(4, 1, 1))
    np.testing.assert_array_equal(out.get(), [2, 4, 6, 8])


def test_streams_pinned_events():
    n = 1 << 22
    h = drv.pagelocked_empty(n, np.float32)
    h[:] = np.arange(n, dtype=np.float32)
    back = drv.pagelocked_zeros_like(h)
    d = drv.mem_alloc(h.nbytes)
    s = drv.Stream()
    e0, e1 = drv.Event(), drv.Event()
    e0.record(s)
    drv.memcpy_htod_async(d, h, s)
    drv.memcpy_dtoh_async(back, d, s)
    e1.record(s)
    e1.synchronize()
    assert s.is_done() and e1.query()
    np.testing.assert_array_equal(back, h)
    assert e1.time_since(e0) > 0
    d2 = drv.mem_alloc(h.nbytes)
    drv.memcpy_dtod(d2, d, h.nbytes)
    out = np.empty_like(h)
    drv.memcpy_dtoh(out, d2)
    np.testing.assert_array_equal(out, h)


def test_elementwise_range_and_slice():
    lin = ElementwiseKernel("float a, float *x, float b, float *y, float *z", "z[i] = a*x[i] + b*y[i]", "linear")
    n = 10000
    x = ga.to_gpu(np.random.rand(n).astype(np.float32))
    y = ga.to_gpu(np.random.rand(n).astype(np.float32))
    z = ga.zeros(n, np.float32)
    lin(2, x, 3, y, z)
    np.testing.assert_allclose(z.get(), 2 * x.get() + 3 * y.get(), rtol=1e-6)
    z.fill(0)
    lin(2, x, 3, y, z, range=slice(100, 5000, 3))
    want = np.zeros(n, np.float32)
    want[100:5000:3] = (2 * x.get() + 3 * y.get())[100:5000:3]
    np.testing.assert_allclose(z.get(), want, rtol=1e-6)
    z.fill(0)
    lin(2, x, 3, y, z, slice=slice(-200, None, 1))
    want = np.zeros(n, np.float32)
    want[-200:] = (2 * x.get() + 3 * y.get())[-200:]
    np.testing.assert_allclose(z.get(), want, rtol=1e-6)


def test_reduction_range_and_slice():
    dot = ReductionKernel(np.float64, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                          arguments="const double *x, const double *y")
    n = 10000
    a, b = np.random.rand(n), np.random.rand(n)
    x, y = ga.to_gpu(a), ga.to_gpu(b)
    np.testing.assert_allclose(dot(x, y, range=slice(100, 5000, 3)).get(), np.dot(a[100:5000:3], b[100:5000:3]),
                               rtol=1e-12)
    np.testing.assert_allclose(dot(x, y, slice=slice(-200, None)).get(), np.dot(a[-200:], b[-200:]), rtol=1e-12)
    np.testing.assert_allclose(dot(x, y, slice=slice(None, None, -7)).get(), np.dot(a[::-7], b[::-7]), rtol=1e-12)
    assert dot(x, y, range=slice(5, 5)).get() == 0.0
    with pytest.raises(ValueError):
        dot(x, y, range=slice(0, 10, 0))


@pytest.mark.parametrize("n", [2, 3, 5, 31, 32, 33, 100, 511, 512, 513, 1000, 2047, 2049, 5000, 10000, 16384, 20000])
def test_reduction_dot(n):
    dot = ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                          arguments="const float *x, const float *y")
    a = np.random.rand(n).astype(np.float32)
    b = np.random.rand(n).astype(np.float32)
    got = dot(ga.to_gpu(a), ga.to_gpu(b)).get()
    assert abs(got - np.dot(a.astype(np.float64), b)) / max(1, abs(np.dot(a, b))) < 1e-5


@pytest.mark.parametrize("n", [1, 10, 2047, 2048, 2049, 100000, 1 << 20, (1 << 24)])
def test_scans(n):
    x = (np.random.rand(n) * 10).astype(np.int64)
    inc = InclusiveScanKernel(np.int64, "a+b")
    exc = ExclusiveScanKernel(np.int64, "a+b", "0")
    g = ga.to_gpu(x)
    np.testing.assert_array_equal(inc(g, ga.empty_like(g)).get(), np.cumsum(x))
    ex = np.concatenate([[0], np.cumsum(x)[:-1]])
    np.testing.assert_array_equal(exc(g, ga.empty_like(g)).get(), ex)
    mx = InclusiveScanKernel(np.int64, "a > b ? a : b")
    np.testing.assert_array_equal(mx(g).get(), np.maximum.accumulate(x))  # in place


FUNCS = ["fabs", "ceil", "floor", "exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "tanh"]


@pytest.mark.parametrize("name", FUNCS)
def test_cumath(name):
    x = np.linspace(0.05, 0.95, 1000).astype(np.float32)
    npf = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan}.get(name, getattr(np, name, None))
    np.testing.assert_allclose(getattr(cumath, name)(ga.to_gpu(x)).get(), npf(x), rtol=4e-6, atol=1e-7)


def test_gpuarray_fused_and_reductions():
    a = np.random.rand(100000).astype(np.float32)
    A = ga.to_gpu(a)
    r = (A * 2 + 1) ** 2
    assert ga.is_lazy(r)
    np.testing.assert_allclose(r.get(), (a * 2 + 1) ** 2, rtol=1e-6)
    assert abs(float(ga.sum(A).get()) - a.sum()) / a.sum() < 1e-5
    assert float(ga.max(A).get()) == a.max()


def test_pool_allocations():
    from cuk.tools import DeviceMemoryPool

    pool = DeviceMemoryPool()
    a = pool.allocate(1 << 20)
    int(a)
    a.free()
    x = ga.to_gpu(np.arange(10, dtype=np.float32), allocator=pool.allocate)
    np.testing.assert_array_equal(x.get(), np.arange(10))
    assert pool.stats()["allocs"] > 0


def test_curandom_same_on_gpu_and_cpu():
    import cuk.curandom as cr

    m = cuk.compile("fn r(s: i64, n: i64) -> f32[n] = rand(n, seed=s);", device="cpu")
    np.testing.assert_array_equal(cr.rand(100000, seed=11).get(), m.r(11, 100000))


def test_threads_share_device():
    import threading

    m = cuk.compile(SAXPY, device="gpu")
    x = cuk.to_device(np.ones(1000, np.float32))
    errs = []

    def work():
        try:
            for _ in range(50):
                assert float(np.asarray(m.total(x).get())) == 1000
        except Exception as e:
            errs.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errs


# ---- the fast call paths (issue 5's call-overhead work) ----------------------------------------


def test_results_share_memory_with_cupy_and_torch():
    """Results come back as the caller's kind over cuk's own memory (no copies), and stay
    valid after cuk's DeviceArray is gone (the foreign array keeps it alive)."""
    m = cuk.compile(SAXPY, device="gpu")
    cp = pytest.importorskip("cupy") if _has("cupy") else None
    if cp is not None:
        x = cp.arange(4096, dtype=cp.float32)
        zs = [m.saxpy(2.0, x, x) for _ in range(50)]  # pool blocks are reused only after release
        for z in zs:
            assert isinstance(z, cp.ndarray) and z.dtype == cp.float32 and z.shape == (4096,)
            cp.testing.assert_allclose(z, 3 * x)
        assert zs[0].data.ptr != zs[1].data.ptr
        assert float(m.total(x)) == pytest.approx(float(x.sum()))
    if _has("torch"):
        import torch

        t = torch.arange(4096, dtype=torch.float32, device="cuda")
        zs = [m.saxpy(2.0, t, t) for _ in range(50)]
        for z in zs:
            assert isinstance(z, torch.Tensor) and z.is_cuda and z.dtype == torch.float32
            assert torch.allclose(z, 3 * t)


def _has(mod):
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def test_device_array_dlpack_export():
    torch = pytest.importorskip("torch")
    a = cuk.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.shape == (3, 4)
    assert torch.equal(t.cpu(), torch.arange(12, dtype=torch.float32).reshape(3, 4))
    t += 1  # shares memory
    np.testing.assert_array_equal(a.get(), np.arange(12).reshape(3, 4) + 1)
    del a
    assert float(t.sum()) == 66.0 + 12  # sum(arange(12) + 1): the capsule keeps the memory alive


def test_compiled_function_device_paths():
    m = cuk.compile("fn inc(x: f32[n]) -> f32[n] = x + 1.0;\n"
                    "fn axpb(x: f64[n], a: f64, b: i32, c: bool) -> f64[n] = c ? x * a + f64(b) : x;\n"
                    "fn s(x: f32[n]) -> f32 = sum(x);\n"
                    "fn nothing(x: f32[n]) { }\n", device="gpu")
    x = cuk.to_device(np.arange(1000, dtype=np.float32))
    y = m.inc(x)
    assert isinstance(y, cuk.DeviceArray) and y.ptr != x.ptr
    np.testing.assert_array_equal(y.get(), np.arange(1000) + 1)
    for _ in range(1000):  # a result per call, freed to the pool as it goes
        y = m.inc(y)
    np.testing.assert_array_equal(y.get(), np.arange(1000) + 1001)
    d = cuk.to_device(np.ones(5))
    np.testing.assert_array_equal(m.axpb(d, 2.0, 3, True).get(), np.full(5, 5.0))
    np.testing.assert_array_equal(m.axpb(d, np.float64(2), np.int32(3), np.bool_(False)).get(), np.ones(5))
    r = m.s(x)
    assert isinstance(r, cuk.DeviceArray) and r.shape == () and r.get() == np.float32(499500)
    assert m.nothing(x) is None
    e = cuk.to_device(np.zeros(0, np.float32))
    assert m.inc(e).shape == (0,)
    with pytest.raises(cuk.ArgumentError, match="dtype"):
        m.inc(cuk.to_device(np.ones(3)))
    with pytest.raises(TypeError):
        m.inc(x, x)
    with pytest.raises(TypeError):
        m.inc(x=x)


def test_quick_path_sizes_and_errors():
    # after the first call (which compiles), one-kernel functions on device arrays take
    # cuk_fn_call_quick with the GIL held: results at chunk edges, errors as before
    m = cuk.compile("fn axpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;", device="gpu")
    for n in (1, 7, 2047, 2048, 2049, 4096 * 3 + 5, (1 << 20) + 3):
        x = np.random.rand(n).astype(np.float32)
        y = np.random.rand(n).astype(np.float32)
        dx, dy = cuk.to_device(x), cuk.to_device(y)
        for _ in range(3):
            r = m.axpy(2.0, dx, dy)
        np.testing.assert_allclose(r.get(), np.float32(2) * x + y, rtol=1e-6)
    with pytest.raises(cuk.ArgumentError, match="'y'"):
        m.axpy(2.0, cuk.to_device(np.ones(4, np.float32)), cuk.to_device(np.ones(5, np.float32)))
    with pytest.raises(cuk.ArgumentError, match="dtype"):
        m.axpy(2.0, cuk.to_device(np.ones(4, np.float32)), cuk.to_device(np.ones(4)))
    np.testing.assert_array_equal(m.axpy(1.0, cuk.to_device(np.ones(4, np.float32)),
                                         cuk.to_device(np.ones(4, np.float32))).get(), 2)


def test_kernel_call_forms():
    mod = SourceModule("""
    __global__ void add(float *a, float v, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) a[i] += v;
    }""")
    f = mod.get_function("add")
    assert isinstance(f, drv.Function)
    a = cuk.to_device(np.zeros(1000, np.float32))
    block, grid = (256, 1, 1), (4, 1)
    for _ in range(10):  # the same block/grid tuples: parsed once
        f(a, np.float32(1), np.int32(1000), block=block, grid=grid)
    f(a, np.float32(1), np.int32(1000), grid=(8, 1), block=(128, 1, 1))
    np.testing.assert_array_equal(a.get(), 11)
    with pytest.raises(TypeError):
        f(a, np.float32(1), np.int32(1000), block=block, grdi=grid)
    with pytest.raises(ValueError):
        f(a, np.float32(1), np.int32(1000))
    f.prepare("Pfi")
    f.prepared_call(grid, block, a, 1.0, 1000)
    f.prepared_call(grid, block, a, 1.0, 1000, shared_size=0)
    t = f.prepared_timed_call(grid, block, a, 1.0, 1000)
    assert t() > 0
    np.testing.assert_array_equal(a.get(), 14)
    with pytest.raises(TypeError):
        f.prepared_call(grid, block, a, 1.0)
    assert f.get_attribute(drv.function_attribute.NUM_REGS) == f.num_regs > 0
    assert f.max_threads_per_block > 0 and f.local_size_bytes == 0
    f.set_cache_config(drv.func_cache.PREFER_L1)


def test_empty_is_uninitialised_zeros_is_zero():
    assert cuk.empty((3, 4)).shape == (3, 4)
    np.testing.assert_array_equal(cuk.zeros(1000).get(), 0)


@pytest.mark.parametrize("point", ["sema", "fuse", "emit"])
def test_internal_error_in_compile_is_compile_error(point, monkeypatch):
    # compiling for the GPU runs every pass; a broken invariant in one is a CompileError
    monkeypatch.setenv("CUK_DIE_AT", point)
    with pytest.raises(cuk.CompileError, match=r"internal error at compiler/pipeline.c:\d+: injected \(CUK_DIE_AT=%s\)" % point):
        cuk.compile(SAXPY, device="gpu")


def test_internal_error_in_gpu_call_is_run_error(monkeypatch):
    # gpu_call's guard: the session stays usable, its lock released
    m = cuk.compile("fn f(x: f32[n]) -> f32 = sum(x * 2.0);", device="gpu")
    x = np.ones(1000, np.float32)
    monkeypatch.setenv("CUK_DIE_AT", "gpu")
    with pytest.raises(cuk.RunError, match=r"internal error at exec/gpu/exec.c:\d+: injected"):
        m.f(x)
    monkeypatch.delenv("CUK_DIE_AT")
    assert float(m.f(x)) == 2000.0


OUT_SRC = """
fn f(x: f32[n], y: f32[n]) -> f32[n] = x * 2.0 + y;
fn g(n: i64) -> f32[n] = rand(n, seed=1);
fn sm(x: f32[r, c]) -> f32[r, c] {
    let e = exp(x - max(x, axis=1, keepdims=true));
    return e / sum(e, axis=1, keepdims=true);
}
fn mm(a: f32[m, k], b: f32[k, n], c: f32[n]) -> f32[m, n] = relu(a @ b + c);
fn shift(x: f32[n]) -> f32[n] = concat(x[1:], x[:1]);
fn total(x: f32[n]) -> f32 = sum(x);
"""


def test_out_writes_into_the_callers_array():
    """out= on the GPU: torch, CuPy and cuk arrays get the result, without a result
    allocation when the last kernel can write there; an argument that overlaps out= (a
    shift in place) gets a copy at the end; bad out= arguments are clear errors."""
    torch = pytest.importorskip("torch")
    m = cuk.compile(OUT_SRC, device="gpu")
    cpu = cuk.compile(OUT_SRC, device="cpu")
    x = torch.rand(1000, device="cuda")
    y = torch.rand(1000, device="cuda")
    o = torch.empty(1000, device="cuda")
    assert m.f(x, y, out=o) is o
    torch.testing.assert_close(o, x * 2 + y)
    before = cuk._cuk.mem_stats()
    for _ in range(5):
        m.f(x, y, out=o)
    after = cuk._cuk.mem_stats()
    assert after["allocs"] == before["allocs"], (before, after)
    # in place over an argument
    x2 = x.clone()
    m.f(x2, y, out=x2)
    torch.testing.assert_close(x2, x * 2 + y)
    # generators, row kernels and cuBLASLt write into out= too
    r = torch.empty(4099, device="cuda")
    m.g(4099, out=r)
    np.testing.assert_array_equal(r.cpu().numpy(), cpu.g(4099))
    a = torch.rand(33, 1025, device="cuda")
    s = torch.empty(33, 1025, device="cuda")
    m.sm(a, out=s)
    torch.testing.assert_close(s, torch.softmax(a, 1))
    A, B, c = torch.rand(65, 17, device="cuda"), torch.rand(17, 31, device="cuda"), torch.rand(31, device="cuda")
    d = torch.empty(65, 31, device="cuda")
    m.mm(A, B, c, out=d)
    torch.testing.assert_close(d, torch.relu(A @ B + c))
    # out= is the argument itself, read at other positions: copied at the end
    z = torch.arange(10, dtype=torch.float32, device="cuda")
    m.shift(z, out=z)
    assert z.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]
    # CuPy and cuk arrays, and a NumPy out= from the GPU
    cp = pytest.importorskip("cupy")
    cx, cy, co = cp.asarray(x), cp.asarray(y), cp.empty(1000, dtype=cp.float32)
    assert m.f(cx, cy, out=co) is co
    np.testing.assert_allclose(cp.asnumpy(co), (x * 2 + y).cpu().numpy(), rtol=1e-6)
    dx, dy, do = cuk.to_device(x.cpu().numpy()), cuk.to_device(y.cpu().numpy()), cuk.empty(1000)
    m.f(dx, dy, out=do)
    np.testing.assert_allclose(cuk.asnumpy(do), (x * 2 + y).cpu().numpy(), rtol=1e-6)
    h = np.empty(1000, np.float32)
    m.f(x, y, out=h)
    np.testing.assert_allclose(h, (x * 2 + y).cpu().numpy(), rtol=1e-6)
    with pytest.raises(cuk.RunError, match=r"out= is f32 \(999\), but the result is f32 \(1000\)"):
        m.f(x, y, out=torch.empty(999, device="cuda"))
    with pytest.raises(cuk.ArgumentError, match="returns a scalar, so it takes no out="):
        m.total(x, out=o)
    with pytest.raises(cuk.ArgumentError, match="float64"):
        m.f(x, y, out=torch.empty(1000, device="cuda", dtype=torch.float64))
    with pytest.raises(cuk.ArgumentError, match="not C-contiguous"):
        m.f(x, y, out=torch.empty(2000, device="cuda")[::2])


def test_gpuarray_get_into_an_existing_array():
    """get(ary) fills ary (straight from the device where the layouts agree) and returns it."""
    h = np.arange(3 * 5 * 7, dtype=np.float32).reshape(3, 5, 7)
    a = ga.to_gpu(h)
    out = np.full_like(h, -1)
    assert a.get(out) is out
    np.testing.assert_array_equal(out, h)
    big = np.random.default_rng(1).standard_normal((1 << 22) + 3).astype(np.float32)  # staged
    into = np.zeros_like(big)
    assert ga.to_gpu(big).get(into) is into
    np.testing.assert_array_equal(into, big)
    # an F-ordered array, a strided view, another dtype's target: copied the general way
    f = ga.to_gpu(np.asfortranarray(h))
    out_f = np.zeros((3, 5, 7), np.float32)
    np.testing.assert_array_equal(f.get(out_f), h)
    v = a[:, 1:4]
    np.testing.assert_array_equal(v.get(np.zeros((3, 3, 7), np.float32)), h[:, 1:4])
    out64 = np.zeros((3, 5, 7), np.float64)
    np.testing.assert_array_equal(a.get(out64), h.astype(np.float64))
    with pytest.raises(ValueError, match="ary has shape"):
        a.get(np.zeros((3, 5), np.float32))


def test_function_profile_per_kernel():
    """m.f.profile(args) on the GPU: the statement table and one row per kernel with its
    launches, the bytes it reads and writes, GB/s and the share of the copy bandwidth the
    session measured (values checked for their form and bytes, not for speed)."""
    import re
    m = cuk.compile("fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;\n"
                    "fn norm(x: f32[n]) -> f32 = sqrt(sum(x * x));\n", device="gpu", name="pk.cuk")
    x, y = cuk.to_device(np.ones(1 << 22, np.float32)), cuk.to_device(np.ones(1 << 22, np.float32))
    t = m.saxpy.profile(2.0, x, y)
    assert t.startswith("profile (GPU backend): 1 call, "), t
    head = re.search(r"% copy: of this device's copy bandwidth, (\d+) GB/s", t)
    assert head and int(head.group(1)) > 0, t
    rows = [ln.split() for ln in t.splitlines() if ln.strip().startswith(tuple("0123456789")) and "cuk_saxpy_k" in ln]
    assert len(rows) == 1, t
    ms, launches, _, mb, gbs, pct = rows[0][:6]
    assert int(launches) == 1 and abs(float(mb) - 3 * 4 * (1 << 22) / 1e6) < 1e-3, t  # x and y read, one written
    assert float(ms) > 0 and float(gbs) > 0 and pct.endswith("%"), t
    t = m.norm.profile(x)
    assert re.search(r"cuk_norm_k\d+ \(reduce\)", t), t
    # a matrix product is one cuBLASLt call: its own row, the three matrices' bytes
    mm = cuk.compile("fn lin(a: f32[m, k], w: f32[k, n]) -> f32[m, n] = a @ w;\n", device="gpu", name="mm.cuk")
    a, w = np.ones((512, 256), np.float32), np.ones((256, 128), np.float32)
    t = mm.lin.profile(a, w)
    rows = [ln.split() for ln in t.splitlines() if "(cublasLt)" in ln]
    assert len(rows) == 1, t
    ms, launches, _, mb = rows[0][:4]
    assert int(launches) == 1 and abs(float(mb) - 4 * (512 * 256 + 256 * 128 + 512 * 128) / 1e6) < 1e-3, t
    assert float(ms) > 0, t


def test_row_kernel_over_empty_rows():
    """Rows of length 0 through a row kernel ending in a reduction over the rows: each
    row's empty value (the init; 0 for a sum), as on the CPU backend (the kernel once
    took 0 rows from n / len and wrote nothing; found by the GPU differential run)."""
    src = ("fn lam(q: f32[r, c]) -> f32[r] = reduce(|a, b| a + b, 0.0 / 0.0, layer_norm(q, 0.00001), axis=1);\n"
           "fn five(q: f32[r, c]) -> f32[r] = reduce(|a, b| a + b, 5.0, layer_norm(q, 0.00001), axis=1);\n"
           "fn total(q: f32[r, c]) -> f32[r] = sum(layer_norm(q, 0.00001), axis=1);\n")
    g, c = cuk.compile(src, device="gpu"), cuk.compile(src, device="cpu")
    q = np.zeros((3, 0), np.float32)
    for name in ("lam", "five", "total"):
        got, want = getattr(g, name)(q), getattr(c, name)(q)
        assert got.tobytes() == want.tobytes(), (name, got, want)
    assert np.isnan(g.lam(q)).all() and (g.five(q) == 5).all()
    assert (g.total(q) == 0).all() and not np.signbit(g.total(q)).any()
    m = np.random.default_rng(0).standard_normal((700, 300)).astype(np.float32)
    np.testing.assert_allclose(g.five(m), c.five(m), atol=1e-4)


def test_empty_gather_checks_its_indices():
    """x of shape (1, 0) indexed by [1]: an error, as on the CPU backend and in NumPy,
    though the launch has no element to check it (found by the GPU differential run)."""
    m = cuk.compile("fn f(x: f32[a, b], i: i64[k]) -> f32[k, b] = x[i];\n"
                    "fn g(x: f32[a, b]) -> f32[3] = mean(x[full(1, 3)], axis=1);\n", device="gpu")
    assert m.f(np.zeros((1, 0), np.float32), np.array([0, 0])).shape == (2, 0)
    with pytest.raises(cuk.RunError, match="index 1 is out of bounds for axis 0 with size 1"):
        m.f(np.zeros((1, 0), np.float32), np.array([0, 1]))
    with pytest.raises(cuk.RunError, match="index 1 is out of bounds for axis 0 with size 1"):
        m.g(np.zeros((1, 0), np.float32))


def test_broadcast_transpose_in_a_tiled_map():
    """A transpose broadcast against a larger operand ((2, 1) + (2, 2)) in a map kernel
    with the tiled transpose: the tiles are only the output's when the transpose has the
    output's shape (KFLAT_TILED); broadcast, the kernel takes its general path (the tiled
    path read x as if it had the output's shape: element (1, 1) came out 0, found by the
    GPU differential run, seed 4012)."""
    src = "fn f(t: f32[a, b], y: f32[b, c]) -> f32[b, c] = transpose(t) + y;\n"
    g, c = cuk.compile(src, device="gpu"), cuk.compile(src, device="cpu")
    rng = np.random.default_rng(0)
    for a, b, cc in ((1, 2, 2), (1, 70, 33), (1, 1, 5), (3, 40, 3), (64, 64, 64), (200, 300, 200)):
        t = rng.standard_normal((a, b)).astype(np.float32)
        y = rng.standard_normal((b, cc)).astype(np.float32)
        got, want = g.f(t, y), c.f(t, y)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, t.T + y)


DEAD_LEAVES = {
    "call_prints": "fn g(x: f32[n]) -> f32 {\n    print(123);\n    return sum(x);\n}\n"
                   "fn main() {\n    let x = rand(5, seed=1);\n    print(len(x * g(x)));\n    print(7);\n}\n",
    "scalar_index": "fn main() {\n    let x = rand(5, seed=1);\n    print(len(x * x[9]));\n}\n",
    "reduce_by_index": "fn main() {\n    let x = rand(5, seed=1);\n"
                       "    print(len(x * sum(reduce_by_index(iota(5, dtype=f32), add, iota(2), x))));\n}\n",
    "gather_in_a_sum": "fn main() {\n    let x = rand(5, seed=1);\n    print(len(x * sum(x[iota(7)])));\n}\n",
    # the seventh and eighth differential runs (seeds 7008, 8004): a reduction's own check
    # where only its shape is asked for, and an empty scatter destination's errors
    "empty_min_axis": "fn main() {\n    let m = reshape(iota(4, dtype=f32), 2, 2);\n"
                      "    print(len(min(m[1::-3, 1:1:-1], axis=1, keepdims=true)));\n}\n",
    "empty_scatter_dest": "fn main() {\n    let x = rand(0, seed=1);\n"
                          "    print(scatter(x * max(x), iota(3) * 0, 1.0));\n}\n",
    "empty_scatter_fine": "fn main() {\n    let x = rand(0, seed=1);\n"
                          "    print(scatter(x * 2.0, iota(3) * 0, 1.0));\n    print(9);\n}\n",
}


@pytest.mark.parametrize("name", sorted(DEAD_LEAVES))
def test_length_alone_still_evaluates_scalar_leaves(name, tmp_path):
    """`len(x * g(x))`: the scalar leaves are evaluated as the CPU backend evaluates them
    (a call's prints, index and shape errors), though the length needs none of them (the
    differential run, seed 6002); tests/python/test_gpu_dead_leaves.py on the driver-less
    path."""
    import subprocess
    src = tmp_path / (name + ".cuk")
    src.write_text(DEAD_LEAVES[name])
    cukc = os.environ.get("CUKC") or os.path.join(os.environ.get("CUK_BUILD_DIR", "build"), "bin", "cukc")
    runs = []
    for dev in ("cpu", "gpu"):
        r = subprocess.run([cukc, "run", "--device", dev, str(src)], capture_output=True, text=True, timeout=300)
        runs.append((r.returncode, r.stdout, r.stderr.split("\n")[0]))
    assert runs[0] == runs[1], "cpu %r, gpu %r" % (runs[0], runs[1])

"""Program calls on streams and CUDA graphs of calls (issue 17), on a GPU: stream=, `with
stream:`, the stream-ordered pool across streams, other libraries' streams, and captured
graphs replayed with new data. Each ordering test delays the stream with a spin kernel,
so that a missing wait shows as a wrong value."""
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

import cuk.driver as drv  # noqa: E402
from cuk.compiler import SourceModule  # noqa: E402

SRC = r"""
fn total(x: f32[n]) -> f32 = sum(x);
fn scale(x: f32[n], a: f32) -> f32[n] = x * a;
fn pick(x: f32[n], i: i64[k]) -> f32[k] = x[i];
fn keep(x: f32[n]) -> f32[?] = x[x > 0.5];
fn jstep(u: f32[n, m]) -> f32[n, m] {
    let inner = 0.25 * (u[0:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, 0:-2] + u[1:-1, 2:]);
    let mid = concat(u[1:-1, 0:1], inner, u[1:-1, -1:], axis=1);
    return concat(u[0:1, :], mid, u[-1:, :], axis=0);
}
fn jacobi(u: f32[n, m], iters: i64) -> f32[n, m] {
    var x = u;
    for it in 0..iters {
        x = jstep(x);
    }
    return x;
}
fn stats(x: f32[n]) -> (f32, f32[n]) {
    let t = sum(x);
    return (t, x * 2.0);
}
fn mean_centred(x: f32[n]) -> f32[n] {
    let m = sum(x) / f32(n);
    return x - m;
}
"""
N = 1 << 22
SPIN = 50_000_000


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="gpu")


@pytest.fixture(scope="module")
def spin():
    mod = SourceModule(r"""extern "C" __global__ void spin(long long cycles) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
    }""", no_extern_c=True)
    f = mod.get_function("spin")
    return lambda stream: f(np.int64(SPIN), block=(1, 1, 1), grid=(1, 1), stream=stream)


def test_stream_keyword_orders_after_the_streams_work(m, spin):
    s = drv.Stream()
    x = cuk.to_device(np.ones(N, np.float32))
    for i in range(3):
        spin(s)
        y = m.scale(x, 2.0 ** i, stream=s)  # after the spin, on s
        assert y.__cuda_array_interface__["stream"] == s.handle
        assert float(m.total(y, stream=s)) == N * 2.0 ** i


def test_with_stream_is_the_current_stream(m, spin):
    s = drv.Stream()
    assert cuk.get_current_stream() == 1
    x = cuk.to_device(np.ones(N, np.float32))
    with s:
        assert cuk.get_current_stream() == s.handle
        spin(s)
        y = m.scale(x, 3.0)
        with drv.Stream() as inner:
            assert cuk.get_current_stream() == inner.handle
        assert cuk.get_current_stream() == s.handle
        assert float(m.total(y)) == 3.0 * N
    assert cuk.get_current_stream() == 1


def test_upload_and_get_on_a_stream(spin):
    s = drv.Stream()
    h = np.arange(N, dtype=np.float32)
    with s:
        spin(s)
        d = cuk.to_device(h)  # queued after the spin on s
        d2 = cuk.to_device(np.zeros(N, np.float32))
        d2.set(h[::-1].copy())
        assert np.array_equal(d.get(), h)
        assert np.array_equal(d2.get(), h[::-1])


def test_pool_blocks_cross_streams_safely(m, spin):
    """A block freed on one stream and reused on another: the second stream waits."""
    s1, s2 = drv.Stream(), drv.Stream()
    x = cuk.to_device(np.ones(N, np.float32))
    for i in range(4):
        spin(s1)
        y = m.scale(x, 5.0, stream=s1)  # a block of s1, written after the spin
        t = m.total(y, stream=s1)
        del y  # freed in s1's order: its kernel has not run yet
        z = m.scale(x, 7.0, stream=s2)  # may get the same block: must wait for s1
        assert float(m.total(z, stream=s2)) == 7.0 * N
        assert float(t) == 5.0 * N


def test_calls_on_many_streams_agree(m):
    streams = [drv.Stream() for _ in range(20)]  # more than a session keeps state for
    h = np.random.default_rng(0).random(1 << 16, dtype=np.float32)
    x = cuk.to_device(h)
    idx = cuk.to_device(np.arange(0, 1 << 16, 7, dtype=np.int64))
    outs = [(m.pick(x, idx, stream=s), m.keep(x, stream=s)) for s in streams]
    for s, (p, k) in zip(streams, outs):
        s.synchronize()
        assert np.array_equal(p.get(), h[::7])
        assert np.array_equal(k.get(), h[h > 0.5])


def test_torch_side_stream_as_the_call_stream(m):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.empty(N, device="cuda")
    for i in range(3):
        with torch.cuda.stream(s):
            torch.cuda._sleep(SPIN)
            x.fill_(float(i + 1))
        # the producer is on s; cuk runs on s itself: no event needed, order kept
        r = m.total(x, stream=s)
        assert float(r) == (i + 1) * N
        # and on the legacy stream: an event wait on s
        assert float(m.total(x)) == (i + 1) * N
    torch.cuda.synchronize()


def test_cupy_stream_object_is_accepted(m):
    cp = pytest.importorskip("cupy")
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(N, cp.float32)
    r = m.total(x, stream=s)
    s.synchronize()
    assert float(r) == N


CHILD = r"""
import sys
sys.path[:0] = sys.argv[1:3]
import numpy as np, cupy as cp, cuk
m = cuk.compile("fn total(x: f32[n]) -> f32 = sum(x);\nfn twice(x: f32[n]) -> f32[n] = x * 2.0;", device="gpu")
for order in range(3):
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(1 << 20, cp.float32)
    r = m.total(x, stream=s)          # cuk's blocks and results on CuPy's stream
    y = m.twice(x, stream=s)
    keep = cuk.to_device(np.ones(5, np.float32))
    z = m.twice(keep, stream=s)       # a DeviceArray made on CuPy's stream
    if order == 0:
        del s                         # the stream goes first: cuk must not name it again
        want = float(r)
    else:
        s.synchronize()
        want = float(r)
        del s
    assert want == float(1 << 20), want
    assert float(y.sum()) == float(1 << 21)
    assert z.get().tolist() == [2.0] * 5   # waits for its work without the gone stream
    del r, y, x, z
    # the freed blocks are reused on the legacy stream and on a new one
    for _ in range(3):
        assert float(m.total(cp.ones(1 << 20, cp.float32))) == float(1 << 20)
        t = cp.cuda.Stream(non_blocking=True)
        assert float(m.total(cp.ones(1 << 20, cp.float32), stream=t)) == float(1 << 20)
        del t
print("ok")
"""


def test_foreign_stream_destroyed_before_its_arrays():
    """A CuPy stream destroyed while cuk's arrays and pool blocks made on it live: freeing
    and reading them later names no dead stream (a crash, in a child process)."""
    pytest.importorskip("cupy")
    import subprocess
    p = subprocess.run([sys.executable, "-c", CHILD,
                        os.path.join(BUILD, "python"), os.path.join(ROOT, "python")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.returncode, p.stdout[-2000:], p.stderr[-3000:])


def test_bad_stream_argument(m):
    x = cuk.to_device(np.ones(4, np.float32))
    with pytest.raises(TypeError, match="stream must be"):
        m.total(x, stream="fast")
    assert float(m.total(x)) == 4.0  # usable after


# ---- graphs ------------------------------------------------------------------------------------


def test_capture_replays_with_new_data(m):
    rng = np.random.default_rng(2)
    a, b = (rng.random((64, 96), dtype=np.float32) for _ in range(2))
    ua = cuk.to_device(a)
    g = m.jacobi.capture(ua, 5)
    assert g.nodes >= 5
    want_a = m.jacobi(ua, 5).get()
    assert np.array_equal(g().get(), want_a)
    ub = cuk.to_device(b)
    assert np.array_equal(g(ub, 5).get(), m.jacobi(ub, 5).get())
    assert np.array_equal(g(a, 5).get(), want_a)  # a host array: copied in
    assert np.array_equal(g().get(), want_a)  # the inputs as the last replay left them


def test_capture_several_results_and_streams(m):
    h = np.arange(1000, dtype=np.float32)
    g = m.stats.capture(cuk.to_device(h))
    s = drv.Stream()
    total, doubled = g(cuk.to_device(h * 2), stream=s)  # a scalar kept on the device, an array
    s.synchronize()
    assert float(total.get()) == float((h * 2).sum())
    assert np.array_equal(doubled.get(), h * 4)


def test_capture_refuses_what_it_cannot_record(m):
    x = cuk.to_device(np.ones(100, np.float32))
    with pytest.raises(cuk.Error, match="graph cannot record"):
        m.keep.capture(x)  # the size of the result depends on the data
    with pytest.raises(cuk.Error, match="graph cannot record"):
        m.mean_centred.capture(x)  # sum(x) / n is host arithmetic on the device's sum
    g = m.jacobi.capture(cuk.to_device(np.ones((8, 8), np.float32)), 3)
    with pytest.raises(cuk.Error, match="captured with"):
        g(cuk.to_device(np.ones((8, 9), np.float32)), 3)
    with pytest.raises(cuk.Error, match="scalar"):
        g(None, 4)
    assert np.array_equal(g().get(), m.jacobi(cuk.to_device(np.ones((8, 8), np.float32)), 3).get())
    assert float(m.total(x)) == 100.0  # the session is usable after a refused capture


def test_graph_results_outlive_the_graph_object(m):
    x = cuk.to_device(np.ones((16, 16), np.float32))
    r = m.jacobi.capture(x, 2)()
    import gc

    gc.collect()
    assert np.array_equal(r.get(), m.jacobi(x, 2).get())

"""Updates of a var array (DESIGN.md part 2, "Updates") against NumPy's indexed
assignment: elements, slices with any bounds and steps (given at run time), values
broadcast to the slice, the shift a[1:] = a[:-1], scatter with an index array and
masks, over dtypes and sizes past many blocks. On the CPU backend, and on the GPU where
there is one."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = """
fn elem(x: f32[n], i: i64, v: f32) -> f32[n] { var a = x; a[i] = v; return a; }
fn elem2(x: f64[r, c], i: i64, j: i64, v: f64) -> f64[r, c] { var a = x; a[i, j] = v; return a; }
fn sl(x: i32[n], lo: i64, hi: i64, st: i64, v: i32) -> i32[n] { var a = x; a[lo:hi:st] = v; return a; }
fn slarr(x: f32[n], lo: i64, hi: i64, st: i64, e: f32[k]) -> f32[n] { var a = x; a[lo:hi:st] = e; return a; }
fn inner(x: f32[r, c], e: f32[p, q]) -> f32[r, c] { var a = x; a[1:-1, 1:-1] = e; return a; }
fn col(x: f64[r, c], j: i64, e: f64[r]) -> f64[r, c] { var a = x; a[:, j] = e; return a; }
fn rowbc(x: f32[r, c], e: f32[c]) -> f32[r, c] { var a = x; a[::2] = e; return a; }
fn shift(x: f32[n]) -> f32[n] { var a = x; a[1:] = a[:-1]; return a; }
fn scat(x: i64[n], idx: i64[k], v: i64[k]) -> i64[n] { var a = x; a[idx] = v; return a; }
fn scat1(x: f32[n], idx: i32[k]) -> f32[n] { var a = x; a[idx] = 7.0; return a; }
fn masked(x: f32[n], t: f32) -> f32[n] { var a = x; a[a > t] = t; return a; }
fn masked2(x: f64[r, c], e: f64[r, c]) -> f64[r, c] { var a = x; a[x < 0.0] = e; return a; }
fn keep(x: f32[n]) -> f32 { var a = x; let b = a; a[0] = 100.0; return sum(b) - sum(a); }
"""

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


@pytest.mark.parametrize("n", [1, 7, 1000, 100003])
def test_elements(m, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    for i in (0, n - 1, -1, -n, n // 2):
        want = x.copy()
        want[i] = 2.5
        np.testing.assert_array_equal(m.elem(x, i, np.float32(2.5)), want)
    y = rng.standard_normal((3, n))
    for i, j in ((0, 0), (-1, -1), (1, n // 3)):
        want = y.copy()
        want[i, j] = -4.0
        np.testing.assert_array_equal(m.elem2(y, i, j, -4.0), want)


@pytest.mark.parametrize("n", [0, 5, 1000, 4097])
def test_slices(m, n):
    x = np.arange(n, dtype=np.int32)
    e32 = np.float32
    bounds = [(0, n, 1), (1, -1, 1), (-3, n, 2), (n, 0, -1), (-1, -n - 5, -3), (2, 2, 1), (n + 5, -n - 5, -7),
              (0, 10**12, 10**9)]
    for lo, hi, st in bounds:
        want = x.copy()
        want[lo:hi:st] = -9
        np.testing.assert_array_equal(m.sl(x, lo, hi, st, -9), want)
        xf = x.astype(e32)
        k = len(range(*slice(lo, hi, st).indices(n)))
        e = np.arange(k, dtype=e32) * 0.5
        want = xf.copy()
        want[lo:hi:st] = e
        np.testing.assert_array_equal(m.slarr(xf, lo, hi, st, e), want)


def test_slices_2d_and_broadcast(m):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 129)).astype(np.float32)
    e = rng.standard_normal((35, 127)).astype(np.float32)
    want = x.copy()
    want[1:-1, 1:-1] = e
    np.testing.assert_array_equal(m.inner(x, e), want)
    want = x.copy()
    want[1:-1, 1:-1] = e[:1]
    np.testing.assert_array_equal(m.inner(x, e[:1].copy()), want)
    y = rng.standard_normal((64, 5))
    c = rng.standard_normal(64)
    want = y.copy()
    want[:, -2] = c
    np.testing.assert_array_equal(m.col(y, -2, c), want)
    r = np.arange(129, dtype=np.float32)
    want = x.copy()
    want[::2] = r
    np.testing.assert_array_equal(m.rowbc(x, r), want)
    with pytest.raises(cuk.Error, match="could not broadcast"):
        m.inner(x, e[:, :3].copy())


def test_shift_and_value_semantics(m):
    x = np.arange(100003, dtype=np.float32)
    want = x.copy()
    want[1:] = x[:-1]
    np.testing.assert_array_equal(m.shift(x), want)
    assert m.keep(np.ones(10, np.float32)) == 1.0 - 100.0


@pytest.mark.parametrize("n", [1, 1000, 100003])
def test_scatter(m, n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 100, n)
    idx = rng.permutation(n)[: max(1, n // 3)] - n // 2   # distinct, some negative
    v = rng.integers(-50, 0, len(idx))
    want = x.copy()
    want[idx] = v
    np.testing.assert_array_equal(m.scat(x, idx, v), want)
    xf = x.astype(np.float32)
    want = xf.copy()
    want[idx.astype(np.int32)] = 7.0
    np.testing.assert_array_equal(m.scat1(xf, idx.astype(np.int32)), want)
    # duplicates: one of the values wins
    got = m.scat(x, np.zeros(5, np.int64), np.arange(5))
    assert got[0] in range(5) and (got[1:] == x[1:]).all()
    with pytest.raises(cuk.Error, match="out of bounds for axis 0"):
        m.scat(x, np.array([n]), np.array([1]))


@pytest.mark.parametrize("n", [0, 7, 100003])
def test_masks(m, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    want = x.copy()
    want[want > 0.5] = 0.5
    np.testing.assert_array_equal(m.masked(x, np.float32(0.5)), want)
    y = rng.standard_normal((3, n))
    e = rng.standard_normal((3, n))
    np.testing.assert_array_equal(m.masked2(y, e), np.where(y < 0, e, y))


# ---- in place: the GPU backend writes into an array nothing else holds ----------------------

INPLACE = """
fn loop(x: f32[n], k: i64) -> f32[n] {
    var a = x;
    for i in 0..k {
        a[i] = f32(i) * 2.0;
        a[i + 1:] = a[i + 1:] + 1.0;
    }
    a[a > 100.0] = -1.0;
    a[iota(k) * 2] = 5.0;
    return a;
}
fn twice(x: f32[n], y: f32[n]) -> f32[n] { var a = x; a[1:] = y[:-1]; var b = a; b[0] = 9.0; return a + b; }
fn grid(x: f64[r, c]) -> f64[r, c] {
    var g = x;
    for it in 0..3 { g[1:-1, 1:-1] = g[:-2, 1:-1] + g[2:, 1:-1]; g[0] = g[1]; g[:, -1] = 0.5; }
    return g;
}
"""


def np_loop(x, k):
    a = x.copy()
    for i in range(k):
        a[i] = np.float32(i) * 2
        a[i + 1:] = a[i + 1:] + np.float32(1)
    a[a > 100] = -1
    a[np.arange(k) * 2] = 5
    return a


def np_grid(x):
    g = x.copy()
    for _ in range(3):
        g[1:-1, 1:-1] = g[:-2, 1:-1] + g[2:, 1:-1]
        g[0] = g[1]
        g[:, -1] = 0.5
    return g


@pytest.fixture(scope="module", params=DEVICES)
def mi(request):
    return request.param, cuk.compile(INPLACE, device=request.param)


@pytest.mark.parametrize("n", [1, 33, 1025, (1 << 20) + 7])
def test_inplace_values_and_arguments(mi, n):
    """Updates in loops, after copies and of 2-D blocks give NumPy's values, and never
    modify an argument (a device array passed in stays as it was)."""
    device, mi = mi
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    k = min(n // 2, 20)
    dev = device == "gpu"
    xa = cuk.to_device(x) if dev else x
    got = mi.loop(xa, k)
    np.testing.assert_allclose(np.asarray(got.get() if dev else got), np_loop(x, k), rtol=1e-6)
    np.testing.assert_array_equal(xa.get() if dev else xa, x)
    y = rng.standard_normal(n).astype(np.float32)
    a = x.copy()
    a[1:] = y[:-1]
    b = a.copy()
    b[0] = 9
    np.testing.assert_allclose(np.asarray(mi.twice(x, y)), a + b, rtol=1e-6)
    g = rng.standard_normal((n // 64 + 3, 5))
    ga = cuk.to_device(g) if dev else g
    gg = mi.grid(ga)  # a device array in gives a device array out
    np.testing.assert_allclose(np.asarray(gg.get() if dev else gg), np_grid(g), rtol=1e-12)
    np.testing.assert_array_equal(ga.get() if dev else ga, g)


def trace_inplace(cukc, env):
    """The in-place decisions of tests/gpu/inplace_prog.cuk (CUK_TRACE_INPLACE=1)."""
    import os
    import subprocess
    prog = os.path.join(cukpath.ROOT, "tests", "gpu", "inplace_prog.cuk")
    r = subprocess.run([cukc, "run", prog, "--device", "gpu"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, CUK_TRACE_INPLACE="1", CUK_QUIET="1", **env))
    assert r.returncode == 0, r.stderr[-3000:]
    got = [ln[len("cuk-inplace: "):] for ln in r.stderr.splitlines() if ln.startswith("cuk-inplace: ")]
    want = open(os.path.join(cukpath.ROOT, "tests", "gpu", "inplace_expect.txt")).read().splitlines()
    return got, want, r.stdout


def test_inplace_decisions_fake_driver(tmp_path):
    """Which updates the GPU executor runs in place, without a GPU: against
    bench/fake_libcuda.c (kernels do not run, so the values are not checked here; the
    same program's values are, on a GPU, in tests/gpu/test_inplace.py): a shared array,
    a parameter's array and a right side that reads the array get a new array; the rest
    (element, slice, scatter, mask) write into the array's own buffer."""
    import os
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    base = os.path.join(cukpath.ROOT, "bench", "fake_libcuda.c")
    cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
    if not cc or not os.path.exists(cukc):
        pytest.skip("needs a C compiler and cukc")
    lib = str(tmp_path / "libfakecuda.so")
    subprocess.run([cc, "-std=c11", "-shared", "-fPIC", "-o", lib, base], check=True)
    try:
        got, want, _ = trace_inplace(cukc, {"CUK_LIBCUDA": lib, "CUK_CACHE_DIR": str(tmp_path / "cache")})
    except AssertionError as e:
        if "NVRTC" in str(e) or "nvrtc" in str(e):
            pytest.skip("needs NVRTC")
        raise
    assert got == want

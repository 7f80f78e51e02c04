"""cuk.gpuarray, cuk.cumath and cuk.curandom on whatever backend this machine has
(the CPU backend in CI): NumPy semantics, lazy fusion, reductions, slicing, the
Philox stream shared with the language."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk
import cuk.cumath as cm
import cuk.curandom as cr
import cuk.gpuarray as ga
from cuk.tools import DeviceMemoryPool


def test_basic_usage_pattern():
    a = np.random.RandomState(0).randn(4, 4).astype(np.float32)
    a_gpu = ga.to_gpu(a)
    a_doubled = (2 * a_gpu).get()
    np.testing.assert_allclose(a_doubled, 2 * a)
    assert a_doubled.dtype == np.float32


def test_chain_is_lazy_and_one_function():
    x = ga.to_gpu(np.arange(100, dtype=np.float32))
    y = ga.to_gpu(np.ones(100, np.float32))
    before = len(ga._cache)
    z = ((x * 2 + y) - 1) ** 2 / 4
    assert ga.is_lazy(z)
    got = z.get()
    assert not ga.is_lazy(z)
    assert len(ga._cache) <= before + 1  # the whole chain compiled as one function
    np.testing.assert_allclose(got, ((np.arange(100) * 2 + 1) - 1) ** 2 / 4, rtol=1e-6)
    # the same chain on other data reuses the compiled function
    n = len(ga._cache)
    (((y * 2 + x) - 1) ** 2 / 4).get()
    assert len(ga._cache) == n


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint32, np.float32, np.float64])
def test_arithmetic_matches_numpy(dt):
    a = (np.arange(1, 13) % 7 + 1).astype(dt)
    b = (np.arange(12) % 5 + 1).astype(dt)
    A, B = ga.to_gpu(a), ga.to_gpu(b)
    for op in ("__add__", "__sub__", "__mul__", "__truediv__"):
        want = getattr(a, op)(b)
        got = getattr(A, op)(B).get()
        assert got.dtype == want.dtype, op
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        np.testing.assert_array_equal(getattr(A, op)(B).get(), getattr(a, op)(b))
    np.testing.assert_allclose((A * 3).get(), a * 3)
    np.testing.assert_allclose((3 - A).get(), 3 - a)


def test_broadcasting():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    r = np.array([1.0, 2, 3, 4])
    c = np.array([[10.0], [20], [30]])
    A, R, C = ga.to_gpu(a), ga.to_gpu(r), ga.to_gpu(c)
    np.testing.assert_array_equal((A + R).get(), a + r)
    np.testing.assert_array_equal((A * C - R).get(), a * c - r)
    np.testing.assert_array_equal((C + R).get(), c + r)
    with pytest.raises(ValueError, match="broadcast"):
        A + ga.to_gpu(np.ones(3))


def test_reductions():
    a = np.random.RandomState(0).rand(1000).astype(np.float32)
    A = ga.to_gpu(a)
    assert abs(float(ga.sum(A).get()) - a.sum()) < 1e-3
    assert ga.max(A).get() == a.max() and ga.min(A).get() == a.min()
    b = np.random.RandomState(1).rand(1000).astype(np.float32)
    assert abs(float(ga.dot(A, ga.to_gpu(b)).get()) - np.dot(a, b)) < 1e-2
    assert A.sum().get().shape == ()
    i = ga.to_gpu(np.arange(10, dtype=np.int32))
    s = ga.sum(i).get()
    assert s == 45 and s.dtype == np.sum(np.arange(10, dtype=np.int32)).dtype
    assert abs(float(A.mean().get()) - a.mean()) < 1e-5


def test_astype_and_dtypes():
    a = np.array([1.7, -2.2, 3.5])
    A = ga.to_gpu(a)
    np.testing.assert_array_equal(A.astype(np.int32).get(), a.astype(np.int32))
    assert A.astype(np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="not supported"):
        ga.to_gpu(np.ones(3, np.longdouble))
    # float16 and the 8/16-bit integers are cuk dtypes: kept, not widened
    h = ga.to_gpu(np.array([1.5, 2.25], np.float16))
    assert h.dtype == np.float16 and (h * h).dtype == np.float16
    np.testing.assert_array_equal((h * h).get(), np.array([2.25, 5.0625], np.float16))
    assert A.astype(np.int8).get().dtype == np.int8


def test_slicing_reshape_views():
    a = np.arange(24, dtype=np.float32)
    A = ga.to_gpu(a)
    np.testing.assert_array_equal(A[3:9].get(), a[3:9])
    np.testing.assert_array_equal(A[::3].get(), a[::3])
    M = A.reshape(4, 6)
    np.testing.assert_array_equal(M[2].get(), a.reshape(4, 6)[2])
    np.testing.assert_array_equal(M[1:3].get(), a.reshape(4, 6)[1:3])
    np.testing.assert_array_equal(A.reshape(2, -1).get(), a.reshape(2, -1))
    A[2:4] = 0
    a[2:4] = 0
    np.testing.assert_array_equal(A.get(), a)
    M = A.reshape(4, 6)
    np.testing.assert_array_equal(M.T.get(), a.reshape(4, 6).T)
    assert len(A) == 24 and A.ndim == 1 and A.nbytes == 96 and A.strides == (4,)


def test_get_set_fill_copy():
    A = ga.zeros((2, 3), np.float64)
    np.testing.assert_array_equal(A.get(), np.zeros((2, 3)))
    A.set(np.arange(6.0).reshape(2, 3))
    B = A.copy()
    A.fill(7)
    np.testing.assert_array_equal(A.get(), np.full((2, 3), 7.0))
    np.testing.assert_array_equal(B.get(), np.arange(6.0).reshape(2, 3))
    out = np.empty((2, 3))
    B.get(out)
    np.testing.assert_array_equal(out, B.get())
    A += 1
    np.testing.assert_array_equal(A.get(), np.full((2, 3), 8.0))
    e = ga.empty(5, np.int64)
    assert e.shape == (5,) and e.dtype == np.int64
    np.testing.assert_array_equal(ga.ones_like(e).get(), np.ones(5, np.int64))


def test_if_positive_maximum():
    a = np.array([-1.0, 2, -3, 4])
    b = np.array([10.0, 20, 30, 40])
    A, B = ga.to_gpu(a), ga.to_gpu(b)
    np.testing.assert_array_equal(ga.if_positive(A, A, B).get(), np.where(a > 0, a, b))
    np.testing.assert_array_equal(ga.maximum(A, 0).get(), np.maximum(a, 0))
    np.testing.assert_array_equal(ga.minimum(A, B).get(), np.minimum(a, b))


FUNCS = ["fabs", "ceil", "floor", "exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "tanh"]


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_cumath_against_numpy(name, dt):
    x = np.linspace(0.05, 0.95, 50).astype(dt)
    if name in ("exp", "sinh", "cosh"):
        x = x * 5
    npf = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan}.get(name, getattr(np, name, None))
    got = getattr(cm, name)(ga.to_gpu(x)).get()
    assert got.dtype == dt
    np.testing.assert_allclose(got, npf(x), rtol=2e-6 if dt == np.float32 else 1e-13)


def test_cumath_two_result_and_fmod():
    x = np.array([-3.5, -0.25, 0.0, 0.75, 1.0, 3.0, 1000.5, 1e-3])
    X = ga.to_gpu(x)
    np.testing.assert_allclose(cm.fmod(X, 0.7).get(), np.fmod(x, 0.7))
    f, i = cm.modf(X)
    nf, ni = np.modf(x)
    np.testing.assert_array_equal(f.get(), nf)
    np.testing.assert_array_equal(i.get(), ni)
    m, e = cm.frexp(X)
    nm, ne = np.frexp(x)
    np.testing.assert_array_equal(m.get(), nm)
    np.testing.assert_array_equal(e.get(), ne)
    np.testing.assert_array_equal(cm.ldexp(ga.to_gpu(nm), ga.to_gpu(ne.astype(np.float64))).get(), x)


def test_cumath_fuses():
    x = ga.to_gpu(np.linspace(0, 1, 10))
    y = cm.exp(x * 2) + cm.sin(x)
    assert ga.is_lazy(y)
    np.testing.assert_allclose(y.get(), np.exp(np.linspace(0, 1, 10) * 2) + np.sin(np.linspace(0, 1, 10)))


def test_curandom_matches_language_rand():
    m = cuk.compile("fn r(s: i64, n: i64) -> f32[n] = rand(n, seed=s);\n"
                    "fn g(s: i64, n: i64) -> f64[n] = randn(n, seed=s, dtype=f64);", device="cpu")
    np.testing.assert_array_equal(cr.rand(1000, seed=7).get(), m.r(7, 1000))
    # normals go through log/cos: the GPU's libdevice may differ from the host's libm by an ulp
    np.testing.assert_allclose(cr.randn(1000, np.float64, seed=3).get(), m.g(3, 1000), rtol=1e-14, atol=1e-15)
    u = cr.rand((100, 100)).get()
    assert u.shape == (100, 100) and 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert not np.array_equal(cr.rand(10).get(), cr.rand(10).get())  # the seed advances
    n = cr.PhiloxGenerator(5).gen_normal(100000).get()
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02


def test_pool_bins_round_trip():
    import random

    rng = random.Random(0)
    for _ in range(5000):
        s = rng.randrange(1 << 31) >> rng.randrange(32)
        b = DeviceMemoryPool.bin_number(s)
        a = DeviceMemoryPool.alloc_size(b)
        assert a >= s and DeviceMemoryPool.bin_number(a) == b
        assert b == 0 or DeviceMemoryPool.alloc_size(b - 1) < s
        assert a <= max(512, s * 1.25 + 1) or s <= 1 << 20


def test_gpuarray_into_compiled_function():
    m = cuk.compile("fn f(x: f32[n]) -> f32 = sum(x * x);")
    x = ga.to_gpu(np.arange(4, dtype=np.float32))
    if ga.backend() == "cpu":
        assert m.f(x.get()) == 14
    else:
        assert float(np.asarray(m.f(x.gpudata).get())) == 14


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.uint32, np.bool_])
def test_sort_argsort_like_cupy(dt):
    rng = np.random.default_rng(3)
    x = (rng.integers(-20, 20, (5, 700)) * 0.5).astype(dt)
    if x.dtype.kind == "f":
        x[rng.random(x.shape) < 0.1] = np.nan
    g = ga.to_gpu(x)
    for axis in (-1, 0, None):
        np.testing.assert_array_equal(ga.sort(g, axis=axis).get(), np.sort(x, axis=axis, kind="stable"))
        np.testing.assert_array_equal(ga.argsort(g, axis=axis).get(), np.argsort(x, axis=axis, kind="stable"))
    np.testing.assert_array_equal(g.argsort().get(), np.argsort(x, kind="stable"))
    g.sort(axis=0)  # in place, as cupy.ndarray.sort
    np.testing.assert_array_equal(g.get(), np.sort(x, axis=0))
    np.testing.assert_array_equal(ga.unique(ga.to_gpu(x)).get(), np.unique(x))
    with pytest.raises(np.AxisError if hasattr(np, "AxisError") else ValueError):
        ga.sort(g, axis=2)
    with pytest.raises(ValueError, match="unknown kind"):
        ga.sort(g, kind="bogo")


def test_searchsorted_like_cupy():
    a = np.sort(np.random.default_rng(4).standard_normal(10000).astype(np.float32))
    v = np.random.default_rng(5).standard_normal((30, 40)).astype(np.float32)
    ag, vg = ga.to_gpu(a), ga.to_gpu(v)
    for side in ("left", "right"):
        np.testing.assert_array_equal(ga.searchsorted(ag, vg, side=side).get(), np.searchsorted(a, v, side=side))
    assert int(ga.searchsorted(ag, a[77]).get()) == 77
    assert int(ga.searchsorted(ag, ga.to_gpu(np.float32(a[77])), side="right").get()) == 78
    assert ga.searchsorted(ag, 0.25).shape == ()
    np.testing.assert_array_equal(ga.searchsorted(ag, v[0].astype(np.float64)).get(), np.searchsorted(a, v[0]))
    with pytest.raises(ValueError, match="side"):
        ga.searchsorted(ag, vg, side="middle")

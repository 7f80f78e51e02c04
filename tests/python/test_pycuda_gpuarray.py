"""cuk.gpuarray and cuk.cumath where PyCUDA's test_gpuarray.py and test_cumath.py need
them (issue 16): each test pins one behaviour against NumPy's answer, on whatever
backend this machine has (the CPU backend in CI)."""
import math

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk.cumath as cm
import cuk.gpuarray as ga
import cuk.tools


def _host_forbidden(monkeypatch):
    """Makes every host round trip of gpuarray (a download or an upload) fail."""
    def no(*a, **k):
        raise AssertionError("a host round trip")
    monkeypatch.setattr(ga.GPUArray, "get", no)
    monkeypatch.setattr(ga, "_upload", no)


# ---- any, all, mul_add, reverse, squeeze --------------------------------------------------------

@pytest.mark.parametrize("dt", [np.int32, np.bool_, np.float32, np.float64, np.complex64])
def test_any_all_match_numpy(dt):
    for a in [np.array([0, 0, 3]), np.zeros(4), np.ones(1), np.array([1, 0]), np.zeros((2, 3)), np.zeros(0),
              np.array(0), np.array(5)]:
        a = a.astype(dt)
        A = ga.to_gpu(a)
        for name in ("any", "all"):
            got = getattr(A, name)().get()
            want = getattr(np, name)(a)
            assert got.shape == () and got.dtype == np.bool_, name
            assert bool(got) == bool(want), (name, a)


def test_any_all_fuse_their_expression():
    x = ga.to_gpu(np.array([1.0, 2.0, 3.0]))
    assert bool((x > 2.5).any().get()) and not bool((x > 3.5).any().get())
    assert bool((x - 1).all().get()) is False and bool((x + 1).all().get()) is True


def test_mul_add():
    a = np.arange(1, 11, dtype=np.float32)
    b = a * 10
    A, B = ga.to_gpu(a), ga.to_gpu(b)
    np.testing.assert_array_equal(A.mul_add(2, B, 3).get(), 2 * a + 3 * b)
    out = ga.empty_like(A)
    assert A.mul_add(-1.5, B, 0.25, out=out) is out
    np.testing.assert_array_equal(out.get(), -1.5 * a + 0.25 * b)


def test_reverse():
    a = np.arange(7, dtype=np.int64) * 3
    np.testing.assert_array_equal(ga.to_gpu(a).reverse().get(), a[::-1])
    m = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal((ga.to_gpu(m) + 1).reverse().get(), (m + 1)[::-1])
    with pytest.raises(ValueError, match="0-d"):
        ga.to_gpu(np.array(1.0)).reverse()


def test_squeeze_keeps_views_and_contiguity():
    a = np.random.RandomState(0).random_sample((4, 2, 5, 6))
    A = ga.to_gpu(a)
    s = A[0:1, 1:2, :, :]
    assert s.shape == (1, 1, 5, 6) and s.flags.c_contiguous
    q = s.squeeze()
    assert q.shape == (5, 6) and q.flags.c_contiguous
    np.testing.assert_array_equal(q.get(), a[0:1, 1:2].squeeze())
    np.testing.assert_array_equal(A[:, :, 2:3, :].squeeze().get(), a[:, :, 2:3, :].squeeze())
    assert A[:, 1:2].squeeze(axis=1).shape == (4, 5, 6)
    with pytest.raises(ValueError, match="size not equal to one"):
        A.squeeze(axis=0)
    if ga.backend() == "cpu":  # a strided view without a GPU: NumPy's flags
        assert not A[:, :, 2:3, :].flags.c_contiguous
        assert not A[:, :, 2:3, :].squeeze().flags.c_contiguous


# ---- subsets and logical functions --------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32])
def test_subset_sum_min_max(dt):
    rs = np.random.RandomState(1)
    a = rs.uniform(-10, 10, 500).astype(dt)
    idx = np.array([i for i in range(500) if i % 5 != 4], np.int32)
    A, I = ga.to_gpu(a), ga.to_gpu(idx)
    np.testing.assert_allclose(ga.subset_sum(I, A).get(), a[idx].sum(), rtol=1e-5)
    assert ga.subset_min(I, A).get() == a[idx].min()
    assert ga.subset_max(I, A).get() == a[idx].max()
    np.testing.assert_allclose(ga.subset_dot(I, A, A).get(), np.dot(a[idx], a[idx]), rtol=1e-5)


def test_subset_sum_is_one_fused_program(monkeypatch):
    A = ga.to_gpu(np.arange(10.0))
    I = ga.to_gpu(np.array([9, 0, 3], np.int64))
    before = len(ga._cache)
    _host_forbidden(monkeypatch)
    r = ga.subset_sum(I, A * 2)
    assert len(ga._cache) <= before + 1
    monkeypatch.undo()
    assert r.get() == 24.0


def test_logical_and_or_not():
    rs = np.random.RandomState(2)
    x = rs.random_sample((5, 4)) * (rs.random_sample((5, 4)) > 0.5)
    y = rs.random_sample((5, 4)) * (rs.random_sample((5, 4)) > 0.5)
    X, Y = ga.to_gpu(x), ga.to_gpu(y)
    for name in ("logical_and", "logical_or"):
        f, g = getattr(ga, name), getattr(np, name)
        for got, want in [(f(X, Y), g(x, y)), (f(X, 1.0), g(x, 1.0)), (f(X, 0.0), g(x, 0.0)),
                          (f(X, ga.zeros((5, 4))), g(x, np.zeros((5, 4)))), (f(X > 0.5, Y), g(x > 0.5, y))]:
            assert got.dtype == np.bool_
            np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(ga.logical_not(X).get(), np.logical_not(x))
    np.testing.assert_array_equal(ga.logical_not(ga.ones(3)).get(), [False] * 3)
    out = ga.empty((5, 4), np.bool_)
    assert ga.logical_or(X, Y, out=out) is out
    np.testing.assert_array_equal(out.get(), np.logical_or(x, y))


# ---- creation: dtypes, shapes, orders -----------------------------------------------------------

def test_defaults_are_float64():
    for a in (ga.zeros(3), ga.ones(3), ga.empty(3)):
        assert a.dtype == np.float64
    np.testing.assert_array_equal(ga.ones(3).get(), np.ones(3))
    np.testing.assert_array_equal(ga.zeros((2, 2)).get(), np.zeros((2, 2)))


def test_numpy_integer_shapes():
    assert ga.empty(np.array(3), np.float32).shape == (3,)
    assert ga.empty(np.array([3]), np.float32).shape == (3,)
    assert ga.zeros(np.array([2, 3]), np.int32).shape == (2, 3)
    assert ga.ones(np.int64(4)).shape == (4,)
    with pytest.raises(TypeError, match="sequence of integers"):
        ga.empty(np.array([2.5]))


def test_fortran_order_round_trip_and_strides():
    a = np.random.RandomState(3).randn(5, 7).copy(order="F")
    A = ga.to_gpu(a)
    assert A.strides == a.strides and A.flags.f_contiguous and not A.flags.c_contiguous
    B = A.copy()
    assert B.strides == a.strides
    b = B.get()
    assert b.strides == a.strides and b.flags.f_contiguous
    np.testing.assert_array_equal(b, a)
    C = A.copy(order="C")
    assert C.strides == np.ascontiguousarray(a).strides
    np.testing.assert_array_equal(C.get(), a)


def test_fortran_order_elementwise_keeps_layout():
    a = np.arange(12.0).reshape(3, 4, order="F")
    c = np.arange(12.0).reshape(3, 4)
    A, Cg = ga.to_gpu(a), ga.to_gpu(c)
    r = A * 2 + 1
    assert r.flags.f_contiguous and not r.flags.c_contiguous
    np.testing.assert_array_equal(r.get(), a * 2 + 1)
    m = A + Cg  # mixed orders: C order, as NumPy's
    assert m.flags.c_contiguous
    np.testing.assert_array_equal(m.get(), a + c)
    np.testing.assert_array_equal((A + np.float64(1) * ga.to_gpu(np.arange(4.0))).get(), a + np.arange(4.0))
    z = ga.to_gpu((a + 1j * a).astype(np.complex64).copy(order="F"))
    for part in (z.real, z.imag, z.conj(), abs(z), z.astype(np.complex128)):
        assert part.flags.f_contiguous
    np.testing.assert_array_equal(z.conj().get(), np.conj((a + 1j * a).astype(np.complex64)))
    assert float(ga.sum(A).get()) == a.sum() and float(ga.max(A).get()) == a.max()


def test_fortran_order_inplace_and_fill():
    a = np.arange(6.0).reshape(2, 3, order="F")
    A = ga.to_gpu(a)
    A += ga.to_gpu(np.ones((2, 3)))
    np.testing.assert_array_equal(A.get(), a + 1)
    assert A.flags.f_contiguous
    A.fill(7)
    np.testing.assert_array_equal(A.get(), np.full((2, 3), 7.0))
    A.set(a)
    np.testing.assert_array_equal(A.get(), a)


def test_reshape_orders():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    A = ga.to_gpu(a)
    for shape in [(6, 4), (2, 3, 4), (-1, 8)]:
        for order in "CF":
            r = A.reshape(shape, order=order)
            want = a.reshape(shape, order=order)
            np.testing.assert_array_equal(r.get(), want)
            assert r.flags.c_contiguous == want.flags.c_contiguous
            assert r.flags.f_contiguous == want.flags.f_contiguous
    F = A.reshape(4, 6, order="F")
    assert F.flags.f_contiguous
    np.testing.assert_array_equal(F.get(), a)
    np.testing.assert_array_equal(F.reshape(24, order="A").get(), np.asfortranarray(a).reshape(24, order="A"))
    np.testing.assert_array_equal(F.reshape(3, 8).get(), a.reshape(3, 8))
    with pytest.raises(ValueError, match="one unknown dimension"):
        A.reshape(-1, -1, 4)
    with pytest.raises(ValueError, match="order"):
        A.reshape(24, order="X")


def test_like_functions_take_order():
    c = ga.to_gpu(np.ones((3, 4), np.float32))
    f = ga.to_gpu(np.ones((3, 4), np.float32, order="F"))
    for fn in (ga.empty_like, ga.zeros_like, ga.ones_like):
        for arr in (c, f):
            for order, want_f in [("A", arr.flags.f_contiguous), ("K", arr.flags.f_contiguous), ("C", False),
                                  ("F", True)]:
                r = fn(arr, order=order)
                assert (r.flags.f_contiguous, r.flags.c_contiguous) == (want_f, not want_f), (fn, order)
                assert r.shape == arr.shape and r.dtype == arr.dtype
        assert fn(f, dtype=np.complex64).dtype == np.complex64
    np.testing.assert_array_equal(ga.ones_like(f, order="F").get(), np.ones((3, 4)))
    np.testing.assert_array_equal(ga.zeros((2, 3), order="F").get(), np.zeros((2, 3)))
    assert ga.zeros((2, 3), order="F").strides == np.zeros((2, 3), order="F").strides


def test_fortran_slicing():
    a = np.arange(30.0, dtype=np.float32).reshape(5, 6).copy(order="F")
    A = ga.to_gpu(a)
    for idx in [(slice(None), slice(2, 5)), (1,), (slice(1, 3), 2), (Ellipsis, 4), (slice(None), None, 3),
                (slice(None, None, 2),)]:
        np.testing.assert_array_equal(A[idx].get(), a[idx])
    A[:, 1:3] = 0
    a[:, 1:3] = 0
    np.testing.assert_array_equal(A.get(), a)


def test_gpudata_views_fortran_order():
    a = np.arange(12, dtype=np.float32)
    A = ga.to_gpu(a)
    F = ga.GPUArray((3, 4), np.float32, gpudata=A.gpudata, order="F")
    np.testing.assert_array_equal(F.get(), a.reshape(3, 4, order="F"))
    np.testing.assert_array_equal(F[:, 1:3].get(), a.reshape(3, 4, order="F")[:, 1:3])
    with pytest.raises(ValueError, match="neither C nor Fortran"):
        ga.GPUArray((3, 4), np.float32, strides=(4, 4))


def test_newaxis_shape_and_strides():
    a = np.arange(60.0, dtype=np.float32).reshape(3, 4, 5)
    A = ga.to_gpu(a)
    for idx in [(slice(None), None), (None,), (1, None), (Ellipsis, None)]:
        np.testing.assert_array_equal(A[idx].get(), a[idx])
        assert A[idx].shape == a[idx].shape
    if ga.backend() == "cpu":
        assert A[:, None].strides == a[:, None].strides


def test_element_view_for_out():
    """A[i] is a 0-d view, so a result written into it lands in A (out=max_gpu[i])."""
    A = ga.zeros(3, np.float32)
    v = A[1]
    v.fill(5)
    np.testing.assert_array_equal(A.get(), [0, 5, 0])
    from cuk.reduction import ReductionKernel
    red = ReductionKernel(np.float32, neutral=0, reduce_expr="a+b", arguments="float *in")
    red(ga.to_gpu(np.ones(4, np.float32)), out=A[2])
    np.testing.assert_array_equal(A.get(), [0, 5, 4])


# ---- vector types -------------------------------------------------------------------------------

def test_vector_types():
    assert ga.vec.float3 == np.dtype([("x", np.float32), ("y", np.float32), ("z", np.float32)])
    assert ga.vec.int2.itemsize == 8 and ga.vec.double2.names == ("x", "y")
    assert cuk.tools.dtype_to_ctype(ga.vec.float4) == "float4"
    v = ga.vec.make_float3(1.0, 2.0, 3.0)
    assert v.dtype == ga.vec.float3 and tuple(v.tolist()) == (1.0, 2.0, 3.0)
    A = ga.GPUArray(10, dtype=ga.vec.float3)
    A.fill(v)
    got = A.get()
    assert got.dtype == ga.vec.float3 and got.shape == (10,)
    np.testing.assert_array_equal(got["y"], np.full(10, 2.0, np.float32))
    host = np.zeros(4, ga.vec.int2)
    host["x"] = [1, 2, 3, 4]
    B = ga.to_gpu(host).copy()
    np.testing.assert_array_equal(B.get()["x"], [1, 2, 3, 4])
    with pytest.raises(TypeError, match="struct dtype"):
        B + 1
    with pytest.raises(TypeError, match="takes 3 values"):
        ga.vec.make_float3(1.0, 2.0)


# ---- long lazy chains ---------------------------------------------------------------------------

def test_long_chain_does_not_recurse_without_bound():
    a = ga.to_gpu(np.zeros(16, np.float32))
    for _ in range(2000):
        a = a + 1
    np.testing.assert_array_equal(a.get(), np.full(16, 2000.0, np.float32))
    b = ga.to_gpu(np.full(4, 2.0))
    for _ in range(60):  # a DAG whose tree doubles at each step
        b = b * b / b
    np.testing.assert_array_equal(b.get(), np.full(4, 2.0))


def test_chain_below_the_bound_stays_lazy():
    a = ga.to_gpu(np.zeros(4))
    for _ in range(10):
        a = a + 1
    assert ga.is_lazy(a)
    np.testing.assert_array_equal(a.get(), np.full(4, 10.0))


# ---- joins, gathers, arange, transposes on the device --------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate(axis, monkeypatch):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.int32).reshape(2, 6) if axis else np.arange(9, dtype=np.int32).reshape(3, 3)
    if axis == 0:
        b = b.copy(order="F")
    A, B = ga.to_gpu(a), ga.to_gpu(b)
    _host_forbidden(monkeypatch)
    r = ga.concatenate((A, B * 2), axis=axis)
    r._storage()
    monkeypatch.undo()
    want = np.concatenate((a, b * 2), axis=axis)
    assert r.dtype == want.dtype
    np.testing.assert_array_equal(r.get(), want)


def test_concatenate_errors_and_one_array():
    A = ga.to_gpu(np.ones((2, 3)))
    with pytest.raises(ValueError, match="must match except along axis 0"):
        ga.concatenate((A, ga.to_gpu(np.ones((2, 2)))))
    with pytest.raises(ValueError, match="zero-dimensional"):
        ga.concatenate((ga.to_gpu(np.array(1.0)), ga.to_gpu(np.array(2.0))))
    np.testing.assert_array_equal(ga.concatenate([A]).get(), np.ones((2, 3)))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("ndim", [0, 1, 2, 3])
def test_stack(order, ndim, monkeypatch):
    shape = (2, 3, 4)[:ndim]
    rs = np.random.RandomState(ndim)
    x = rs.random_sample(shape)
    y = rs.random_sample(shape)
    if order == "F":
        x, y = np.asfortranarray(x), np.asfortranarray(y)
    X, Y = ga.to_gpu(x), ga.to_gpu(y)
    for axis in range(-ndim - 1, ndim + 1):
        monkeypatch.setattr(ga, "_upload", lambda *a, **k: (_ for _ in ()).throw(AssertionError("upload")))
        r = ga.stack((X, Y, X), axis=axis)
        monkeypatch.undo()
        want = np.stack((x, y, x), axis=axis)
        assert r.shape == want.shape
        np.testing.assert_array_equal(r.get(), want)
    with pytest.raises(ValueError, match="same shape"):
        ga.stack((ga.zeros(2), ga.zeros(3)))


def test_take_and_integer_array_index(monkeypatch):
    a = np.arange(20.0).reshape(5, 4)
    idx = np.array([4, 0, 2, 2], np.int64)
    A, I = ga.to_gpu(a), ga.to_gpu(idx)
    _host_forbidden(monkeypatch)
    r1 = ga.take(A, I)
    r2 = A[I]
    r3 = ga.take(A + 1, I.astype(np.int32), axis=0)
    for r in (r1, r2, r3):
        r._storage()
    monkeypatch.undo()
    np.testing.assert_array_equal(r1.get(), np.take(a, idx))
    np.testing.assert_array_equal(r2.get(), a[idx])
    np.testing.assert_array_equal(r3.get(), (a + 1)[idx])
    out = ga.empty(4)
    assert ga.take(A, I, out=out) is out
    np.testing.assert_array_equal(out.get(), np.take(a, idx))
    with pytest.raises(TypeError, match="integer array"):
        ga.take(A, ga.to_gpu(np.array([1.0])))


@pytest.mark.parametrize("args,dt", [((10,), None), ((2, 11, 3), None), ((5,), np.float32), ((1.0, 2.0, 0.1), None),
                                     ((-3, 3, 0.25), np.float32), ((7, 0, -2), np.int32), ((3, 1), None),
                                     ((0.5, 8.3, 1.7), np.float64)])
def test_arange(args, dt, monkeypatch):
    _host_forbidden(monkeypatch)
    r = ga.arange(*args, dtype=dt)
    r._storage()
    monkeypatch.undo()
    want = np.arange(*args, dtype=dt)
    assert r.dtype == want.dtype and r.shape == want.shape
    np.testing.assert_array_equal(r.get(), want)


def test_arange_errors():
    with pytest.raises(ValueError, match="step must not be zero"):
        ga.arange(0, 3, 0)
    with pytest.raises(TypeError, match="needs stop"):
        ga.arange(start=1)


def test_transpose_axes(monkeypatch):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    A = ga.to_gpu(a)
    _host_forbidden(monkeypatch)
    rs = [A.transpose((1, 0, 2)), ga.transpose(A * 2, (2, 0, 1)), A.T, A.transpose((0, 1, 2))]
    for r in rs:
        r._storage()
    monkeypatch.undo()
    np.testing.assert_array_equal(rs[0].get(), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(rs[1].get(), (a * 2).transpose(2, 0, 1))
    np.testing.assert_array_equal(rs[2].get(), a.T)
    assert rs[2].strides == a.T.strides  # .T is a view, as NumPy's
    np.testing.assert_array_equal(rs[3].get(), a)
    F = ga.to_gpu(np.asfortranarray(a))
    np.testing.assert_array_equal(F.transpose((2, 0, 1)).get(), a.transpose(2, 0, 1))
    with pytest.raises(ValueError, match="not a permutation"):
        A.transpose((0, 0, 1))


# ---- cumath ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt,rtol", [(np.complex64, 2e-6), (np.complex128, 1e-14)])
def test_cumath_complex_log10_log2_exp2(dt, rtol):
    rs = np.random.RandomState(4)
    z = (rs.random_sample((6, 3)) - 0.5 + 1j * (rs.random_sample((6, 3)) - 0.5)).astype(dt) * 4
    Z = ga.to_gpu(z)
    for name in ("log10", "log2", "exp2"):
        got = getattr(cm, name)(Z).get()
        assert got.dtype == dt, name
        np.testing.assert_allclose(got, getattr(np, name)(z), rtol=rtol, err_msg=name)
    with pytest.raises(TypeError, match="complex"):
        cm.asin(Z)


def test_cumath_ldexp_truncates_float_exponents():
    s = np.arange(1, 9, dtype=np.float32)
    e = np.array([0.001, 1.9, -1.9, 2.5, -3.0, 0.0, 10.7, -0.5], np.float32)
    got = cm.ldexp(ga.to_gpu(s), ga.to_gpu(e)).get()
    assert got.dtype == np.float32
    for i in range(len(s)):
        assert got[i] == math.ldexp(float(s[i]), int(e[i]))
    # the power in two halves: 2**1100 alone overflows, the result does not
    np.testing.assert_array_equal(cm.ldexp(ga.to_gpu(np.array([2.0 ** -1000])), ga.to_gpu(np.array([1100.0]))).get(),
                                  [2.0 ** 100])
    np.testing.assert_array_equal(cm.ldexp(ga.to_gpu(np.array([2.0 ** -1000])), 1100).get(), [2.0 ** 100])
    np.testing.assert_array_equal(cm.ldexp(ga.to_gpu(s), -2).get(), s / 4)


# ---- strided views of device memory ---------------------------------------------------------------
# On a GPU every basic selection of device memory is a view (PyCUDA's); one that is not
# C-contiguous is read by a gather program and written by a scatter program over the
# memory it spans. The device is not here: the index arithmetic is checked against
# NumPy's own views, the programs run on the CPU backend over host memory, and
# ga._HOST_VIEWS runs the GPUArray code of the device's views on host memory.

def _random_index(rng, ndim):
    idx = []
    for n in range(ndim):
        r = rng.random()
        if r < 0.25:
            idx.append(int(rng.integers(-5, 5)))
        elif r < 0.4:
            idx.append(slice(None))
        else:
            lo = None if rng.random() < 0.3 else int(rng.integers(-6, 7))
            hi = None if rng.random() < 0.3 else int(rng.integers(-6, 7))
            step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            idx.append(slice(lo, hi, step))
        if rng.random() < 0.15:
            idx.append(None)
    if idx and rng.random() < 0.3:  # a run of whole axes as an Ellipsis
        k = int(rng.integers(0, len(idx)))
        j = int(rng.integers(k, len(idx) + 1))
        idx[k:j] = [Ellipsis]
    elif rng.random() < 0.3:
        idx = idx[:int(rng.integers(0, len(idx) + 1))]  # trailing axes left out
    return tuple(idx)


_KINDS = {"C": lambda x: x, "T": lambda x: x.T, "R": lambda x: x[..., ::-1]}


def _random_views(rng, count):
    """(base, kind, src, view, idx): src a view of base (kind: "C" itself, "T" its
    transpose, an F-ordered array's layout, "R" its last axis reversed), view src[idx]."""
    out = []
    while len(out) < count:
        shape = tuple(int(s) for s in rng.integers(1, 6, size=int(rng.integers(1, 5))))
        base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        kind = "C" if rng.random() < 0.6 else str(rng.choice(["T", "R"]))
        src = _KINDS[kind](base)
        idx = _random_index(rng, src.ndim)
        try:
            v = src[idx]
        except IndexError:
            continue
        if isinstance(v, np.ndarray):
            out.append((base, kind, src, v, idx))
    return out


def _offset(v, base):
    return v.__array_interface__["data"][0] - base.__array_interface__["data"][0]


def test_select_gives_numpys_offset_shape_and_strides():
    rng = np.random.default_rng(1)
    for base, kind, src, v, idx in _random_views(rng, 3000):
        off, shape, st = ga._select(src.shape, src.strides, idx)
        assert shape == v.shape, idx
        if v.size:
            assert (_offset(src, base) + off, st) == (_offset(v, base), v.strides), (src.strides, idx)


def test_select_raises_numpys_index_errors():
    for idx in [(3,), (-4,), (0, 0, 0), (Ellipsis, Ellipsis), (0, 5)]:
        with pytest.raises(IndexError):
            np.zeros((3, 4))[idx]
        with pytest.raises(IndexError):
            ga._select((3, 4), (32, 8), idx)


def test_reshape_strides_view_exactly_where_numpy_does():
    rng = np.random.default_rng(2)
    for base, kind, src, v, idx in _random_views(rng, 1500):
        if v.size == 0:
            continue
        n = v.size
        for new in [(n,), (1, n), (n, 1)] + [(d, n // d) for d in range(2, n) if n % d == 0][:3] + [v.shape[::-1]]:
            if int(np.prod(new)) != n:
                continue
            st = ga._reshape_strides(v.shape, v.strides, new, v.itemsize)
            r = v.reshape(new)
            assert (st is not None) == np.shares_memory(r, v), (v.shape, v.strides, new)
            if st is not None:
                got = np.lib.stride_tricks.as_strided(v, new, st)
                assert np.array_equal(got, r), (v.shape, v.strides, new)


def _cpu_fn(src):
    from cuk import _cuk
    return _cuk.compile(src, _cuk.BACKEND_CPU, "<test>").function("k")


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int8, np.bool_, np.float16, np.complex64, np.uint64])
def test_gather_and_scatter_programs_read_and_write_numpys_view(dt):
    """The programs a strided device view runs, on the CPU backend, over the span of a
    flat host array its view touches."""
    rng = np.random.default_rng(3)
    checked = 0
    for base, kind, src, v, idx in _random_views(rng, 400):
        if v.size == 0 or v.flags.c_contiguous:
            continue  # those are plain storage (ga._view_at)
        flat = (np.arange(base.size) % 120).astype(dt)
        b = flat.reshape(base.shape)
        first = _offset(v, base) // 8 * b.itemsize
        view = np.ndarray(v.shape, dt, buffer=flat, offset=first, strides=[s // 8 * b.itemsize for s in v.strides])
        lo, n = ga._span(view.shape, view.strides, b.itemsize)
        span = flat[(first + lo) // b.itemsize:][:n]
        st = [s // b.itemsize for s in view.strides]
        got = _cpu_fn(ga._gather_src(np.dtype(dt), view.ndim))(span, -lo // b.itemsize,
                                                              *[a for p in zip(view.shape, st) for a in p])
        assert got.shape == view.shape and np.array_equal(got, view), (v.shape, v.strides)
        vals = (np.arange(view.size).reshape(view.shape) % 7 + 1).astype(dt)
        new = _cpu_fn(ga._scatter_src(np.dtype(dt), view.ndim))(span, vals, -lo // b.itemsize, *st)
        want = flat.copy()
        np.ndarray(v.shape, dt, buffer=want, offset=first, strides=view.strides)[...] = vals
        assert np.array_equal(new, want[(first + lo) // b.itemsize:][:n]), (v.shape, v.strides)
        checked += 1
    assert checked > 50


@pytest.fixture
def device_views(monkeypatch):
    """gpuarray's device-view code (strided views, gathers, scatters) over host memory."""
    monkeypatch.setattr(ga, "_HOST_VIEWS", True)


def test_strided_view_squeezes_as_pycudas(device_views):
    # PyCUDA's test_squeeze
    h = np.random.default_rng(4).random((2, 3, 4, 5))
    a = ga.to_gpu(h)
    v = a[:, :, 2:3, :]
    assert v._sv is not None and v.base is a
    assert not v.flags.c_contiguous and v.strides == h[:, :, 2:3, :].strides
    s = v.squeeze()
    assert s._sv is not None and s.shape == (2, 3, 5) and not s.flags.c_contiguous
    assert s.strides == h[:, :, 2:3, :].squeeze().strides
    assert np.array_equal(s.get(), h[:, :, 2:3, :].squeeze())
    assert np.array_equal(v.squeeze(2).get(), h[:, :, 2, :])


def test_device_views_of_random_selections_match_numpy(device_views):
    rng = np.random.default_rng(5)
    for base, kind, src, w, idx in _random_views(rng, 600):
        a = _KINDS[kind](ga.to_gpu(base))
        g = a[idx]
        assert g.shape == w.shape, (kind, idx)
        assert np.array_equal(g.get(), w), (kind, idx)
        assert g.base is not None, (kind, idx)
        if w.size:
            assert g.strides == w.strides, (kind, idx)
            assert (g.flags.c_contiguous, g.flags.f_contiguous) == (w.flags.c_contiguous, w.flags.f_contiguous)


def test_views_of_views_and_their_writes_reach_the_base(device_views):
    h = np.arange(6 * 7 * 4, dtype=np.float32).reshape(6, 7, 4)
    a = ga.to_gpu(h)
    v = a[::-2, 1:, 1::2]
    hv = h[::-2, 1:, 1::2]
    w = v[1:, ::3]
    hw = hv[1:, ::3]
    assert w._sv is not None and np.array_equal(w.get(), hw) and w.strides == hw.strides
    w[...] = -1
    hw[...] = -1
    assert np.array_equal(a.get(), h)
    v[0] = 5  # a row of a strided view
    hv[0] = 5
    v[:, ::2, 0] = np.arange(9, dtype=np.float32).reshape(3, 3)
    hv[:, ::2, 0] = np.arange(9).reshape(3, 3)
    assert np.array_equal(a.get(), h)
    a[1:, ::2] = a[:-1, ::-2] * 2  # the right side is read before anything is written
    h[1:, ::2] = h[:-1, ::-2] * 2
    assert np.array_equal(a.get(), h)
    v.fill(3)
    hv.fill(3)
    w.set(np.full(hw.shape, 9, np.float32))
    hw[...] = 9
    assert np.array_equal(a.get(), h)
    t = v.T
    ht = hv.T
    t[0, 1] = 11
    ht[0, 1] = 11
    t += 1
    ht += 1
    assert t._sv is not None and t.strides == ht.strides and np.array_equal(a.get(), h)


def test_other_uses_of_a_strided_view_read_a_copy(device_views):
    h = np.arange(5 * 6, dtype=np.float64).reshape(5, 6)
    a = ga.to_gpu(h)
    v = a[1:, ::-2]
    hv = h[1:, ::-2]
    assert np.array_equal((v * 2 + 1).get(), hv * 2 + 1)
    assert float(v.sum().get()) == hv.sum() and float(ga.max(v).get()) == hv.max()
    c = v.copy()
    assert c._sv is None and c.flags.c_contiguous and np.array_equal(c.get(), hv)
    assert np.array_equal(v.astype(np.int32).get(), hv.astype(np.int32))
    assert np.array_equal(v.transpose((1, 0)).get(), hv.T) and v.transpose((1, 0))._sv is not None
    assert np.array_equal(ga.concatenate((v, v)).get(), np.concatenate((hv, hv)))
    assert np.array_equal(v.reshape(-1).get(), hv.reshape(-1))  # a copy, as NumPy's
    r = a[:, ::2].reshape(5, 3, 1)
    assert r._sv is not None and np.array_equal(r.get(), h[:, ::2].reshape(5, 3, 1))
    assert np.array_equal(v.reshape(3, 4, order="F").get(), hv.reshape(3, 4, order="F"))
    assert np.array_equal(v.view().get(), hv) and v.view()._sv is not None
    with pytest.raises(ValueError, match="copy"):
        v.view(np.int64)
    with pytest.raises(ga.Error, match="copy"):
        v.ptr
    a[1, 1] = 100  # a view reads the base's memory when used
    h[1, 1] = 100
    assert np.array_equal(v.get(), hv) and np.array_equal(v[:, 2].get(), hv[:, 2])
    assert np.array_equal(v[[0, 2]].get(), hv[[0, 2]])  # fancy: a copy


def test_strided_views_of_fortran_arrays(device_views):
    h = np.asfortranarray(np.arange(4 * 5 * 3, dtype=np.int32).reshape(4, 5, 3))
    a = ga.to_gpu(h)
    for idx in [(slice(None), 1, slice(None, None, 2)), (slice(1, 3), slice(None, None, -1)), (Ellipsis, 0),
                (0,), (None, slice(None, None, 2), 1)]:
        g, w = a[idx], h[idx]
        assert np.array_equal(g.get(), w) and g.strides == w.strides, idx
        assert (g.flags.c_contiguous, g.flags.f_contiguous) == (w.flags.c_contiguous, w.flags.f_contiguous), idx
    a[:, ::2, 1] = 0
    h[:, ::2, 1] = 0
    assert np.array_equal(a.get(), h)


def test_writers_into_strided_views_write_through(device_views):
    """curandom's fills, a ReductionKernel's out= and a scan's output write into a strided
    view's base memory, not into the copy a view's storage is."""
    import cuk.curandom as cr
    from cuk.reduction import ReductionKernel
    from cuk.scan import InclusiveScanKernel

    a = ga.zeros((6, 8), np.float32)
    v = a[:, 1::3]
    assert v._sv is not None
    cr.PhiloxGenerator(seed=3).fill_uniform(v)
    h = a.get()
    assert np.all(h[:, 1::3] > 0) and np.all(h[:, 1::3] < 1)
    h[:, 1::3] = 0
    assert not h.any()  # nothing written outside the view

    x = ga.to_gpu(np.arange(1, 11, dtype=np.float32))
    b = ga.zeros(10, np.float32)
    InclusiveScanKernel(np.float32, "a + b")(x[::2], b[1::2])
    assert np.array_equal(b.get(), [0, 1, 0, 4, 0, 9, 0, 16, 0, 25])

    r = ga.zeros(4, np.float32)
    krn = ReductionKernel(np.float32, neutral="0", reduce_expr="a + b", map_expr="x[i]", arguments="float *x")
    krn(x, out=r[2])
    assert np.array_equal(r.get(), [0, 0, 55, 0])


@pytest.mark.skipif(not cuk.gpu_available(), reason="__cuda_array_interface__ describes device memory")
def test_cuda_array_interface_spells_out_strides():
    # PyCUDA's test_gpuarray_cai: C order's strides too, not None
    for h in (np.zeros(10, np.float32), np.zeros((3, 4), np.int16), np.zeros((3, 4), np.float64, order="F")):
        cai = ga.to_gpu(h).__cuda_array_interface__
        assert cai["shape"] == h.shape and cai["strides"] == h.strides and cai["typestr"] == h.dtype.str
        assert cai["version"] == 3 and cai["stream"] is None and cai["data"][0] != 0 and not cai["data"][1]


def test_cumath_positional_stream_or_out():
    # PyCUDA's stream_or_out: an array in the stream's place is the output; an array is
    # never taken for a stream (its .ptr is a device address)
    a = np.linspace(-1, 1, 7).astype(np.float32)
    A = ga.to_gpu(a)
    O = ga.empty_like(A)
    assert cm.exp(A, O) is O
    np.testing.assert_allclose(O.get(), np.exp(a), rtol=1e-6)
    with pytest.raises(TypeError, match="stream"):
        cm.exp(A, stream=A)

"""out= (issue 13): a compiled function writes its result into the caller's array and
returns that array, as NumPy's ufuncs do. On the CPU backend (and any host out=) the
result is copied in; the GPU tests (tests/gpu/python) cover device arrays and the
kernel writing there directly. Bad out= arguments are clear errors, never a silent
write into a copy."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = """fn f(x: f32[n], y: f32[n]) -> f32[n] = x * 2.0 + y;
fn g(n: i64) -> f32[n] = rand(n, seed=1);
fn t(x: f32[a, b]) -> f32[b, a] = transpose(x);
fn total(x: f32[n]) -> f32 = sum(x);
fn both(x: f32[n]) -> (f32, f32) = (min(x), max(x));
fn show(x: f32[n]) { print(x); }
fn grow(x: f32[n]) -> f32[?] = x[x > 0.5];
"""


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="cpu")


def test_out_gets_the_result_and_is_returned(m):
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    o = np.full(5, -1, np.float32)
    assert m.f(x, y, out=o) is o
    np.testing.assert_array_equal(o, 2 * x + y)
    assert m.f(x, y, out=None) is not o  # out=None: a new array, as NumPy
    r = np.zeros(9, np.float32)
    m.g(9, out=r)
    np.testing.assert_array_equal(r, m.g(9))
    q = np.zeros((3, 2), np.float32)
    m.t(np.arange(6, dtype=np.float32).reshape(2, 3), out=q)
    np.testing.assert_array_equal(q, np.arange(6).reshape(2, 3).T)
    k = np.zeros(3, np.float32)
    m.grow(np.array([0.1, 0.9, 0.7, 0.6], np.float32), out=k)  # a ? size that matches
    np.testing.assert_array_equal(k, np.array([0.9, 0.7, 0.6], np.float32))


def test_out_may_be_an_argument(m):
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    m.f(x, y, out=x)
    np.testing.assert_array_equal(x, [1, 3, 5, 7, 9])


@pytest.mark.parametrize("call,err,msg", [
    (lambda m, x: m.total(x, out=x), cuk.ArgumentError, "total\\(\\) returns a scalar, so it takes no out="),
    (lambda m, x: m.both(x, out=x), cuk.ArgumentError, "both\\(\\) returns several results, so it takes no out="),
    (lambda m, x: m.show(x, out=x), cuk.ArgumentError, "show\\(\\) returns nothing, so it takes no out="),
    (lambda m, x: m.f(x, x, out=np.zeros(4, np.float32)), cuk.RunError,
     "f\\(\\): out= is f32 \\(4\\), but the result is f32 \\(5\\)"),
    (lambda m, x: m.grow(x, out=np.zeros(5, np.float32)), cuk.RunError, "out= is f32 \\(5\\), but the result is f32 \\(2\\)"),
    (lambda m, x: m.f(x, x, out=np.zeros(5)), cuk.ArgumentError, "float64"),
    (lambda m, x: m.f(x, x, out=np.zeros((5, 1), np.float32)), cuk.ArgumentError, "out"),
    (lambda m, x: m.f(x, x, out=np.zeros(10, np.float32)[::2]), cuk.ArgumentError, "writable C-contiguous"),
    (lambda m, x: m.f(x, x, out=[0.0] * 5), cuk.ArgumentError, "writable C-contiguous"),
    (lambda m, x: m.f(x, x, oops=x), TypeError, "takes positional arguments, out= and stream= only, not oops="),
])
def test_bad_out(m, call, err, msg):
    x = np.linspace(0, 1, 5, dtype=np.float32)
    with pytest.raises(err, match=msg):
        call(m, x)


def test_read_only_out(m):
    x = np.arange(5, dtype=np.float32)
    o = np.zeros(5, np.float32)
    o.setflags(write=False)
    with pytest.raises(cuk.ArgumentError, match="writable C-contiguous"):
        m.f(x, x, out=o)
    np.testing.assert_array_equal(o, 0)


@pytest.mark.parametrize("expr,neutral,exclusive,ref", [
    ("a+b", None, False, lambda x: np.cumsum(x)),
    ("a + b", "0", True, lambda x: np.concatenate([[0], np.cumsum(x)[:-1]])),
    ("max(a, b)", None, False, lambda x: np.maximum.accumulate(x)),
    ("a*b", None, False, lambda x: np.cumprod(x)),
    ("fminf(a,b)", "1e9f", True, lambda x: np.concatenate([[1e9], np.minimum.accumulate(x)[:-1]])),
])
def test_pycuda_scan_on_the_language(expr, neutral, exclusive, ref):
    """PyCUDA's scan kernels with an expression the language can say run on its scan (and
    so on the CPU backend too), written into the output array through out=, or in place."""
    import cuk.gpuarray as ga
    from cuk import scan
    if ga.backend() != "cpu":
        pytest.skip("the GPU path is tests/gpu/python's")
    cls = scan.ExclusiveScanKernel if exclusive else scan.InclusiveScanKernel
    k = cls(np.float64, expr, neutral) if neutral is not None else cls(np.float64, expr)
    assert k._lang is not None
    h = np.linspace(0.5, 2.0, 37)
    x = ga.to_gpu(h)
    o = ga.empty(37, np.float64)
    assert k(x, o) is o
    np.testing.assert_allclose(o.get(), ref(h), rtol=1e-12)
    k(x)  # in place
    np.testing.assert_allclose(x.get(), ref(h), rtol=1e-12)


def test_pycuda_scan_keeps_c_expressions_for_the_raw_kernels():
    from cuk import scan
    assert scan.InclusiveScanKernel(np.float32, "my_op(a, b)", preamble="")._lang is None
    assert scan.InclusiveScanKernel(np.float32, "a+b", preamble="#define X 1")._lang is None

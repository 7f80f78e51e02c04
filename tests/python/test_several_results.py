"""Several results (DESIGN.md part 2, "Several results"): a function declared
-> (T1, T2) returns a Python tuple with one object per result, each as a single
result would be (a NumPy scalar for a rank-0 result, an array otherwise), from inlined
and host (control-flow) functions; each result's declared size is checked. On the CPU
backend, and on the GPU where there is one (device arrays then come back as device
arrays, as single results do)."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = """fn minmax(x: f32[n]) -> (f32, f32) = (min(x), max(x));
fn parts(x: f32[n]) -> (f32[n], i64[?]) {
    let (lo, hi) = minmax(x);
    return ((x - lo) / (hi - lo), iota(len(x) - 1));
}
fn host(x: f32[n], k: i64) -> (f32[?], i64) {
    if k > 0 { return (x[k:], k); }
    return (x, 0 - k);
}
fn bad(x: f32[n]) -> (f32, f32[n + 1]) = (sum(x), x);
"""

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


def host_array(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def test_tuple_of_scalars(m):
    x = np.array([3, -1, 4, 1.5], dtype=np.float32)
    r = m.minmax(x)
    assert isinstance(r, tuple) and len(r) == 2
    assert float(r[0]) == -1.0 and float(r[1]) == 4.0


def test_tuple_of_arrays(m):
    x = np.array([1, 3, 2, 5], dtype=np.float32)
    a, b = m.parts(x)
    np.testing.assert_allclose(host_array(a), (x - 1) / 4, rtol=1e-6)
    np.testing.assert_array_equal(host_array(b), [0, 1, 2])
    assert host_array(b).dtype == np.int64


def test_host_function(m):
    x = np.arange(5, dtype=np.float32)
    v, k = m.host(x, 2)
    np.testing.assert_array_equal(host_array(v), [2, 3, 4])
    assert int(k) == 2
    v, k = m.host(x, -3)
    np.testing.assert_array_equal(host_array(v), x)
    assert int(k) == 3


def test_sizes_checked(m):
    with pytest.raises(cuk.RunError, match=r"bad\(\): the result has size 3 on axis 0, but its declared size 'n \+ 1' is 4"):
        m.bad(np.zeros(3, dtype=np.float32))


def test_tuple_misuse_is_a_compile_error():
    with pytest.raises(cuk.CompileError, match=r"returns 2 results, which cannot be used as one value"):
        cuk.compile(SRC + "fn f(x: f32[n]) -> f32 = minmax(x) + 1.0;\n", device="cpu")

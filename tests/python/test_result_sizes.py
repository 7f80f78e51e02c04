"""Declared result sizes (DESIGN.md part 2, "Sizes"): size expressions over the
parameters' sizes and '?' in result types, from Python. A result of another size than
declared is a cuk.RunError with the function, the axis, the size as written, both
values and the return's file:line:col; a '?' result's size is the returned array's
shape. On the CPU backend, and on the GPU where there is one."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = """fn grow(x: f32[n]) -> f32[n + 2] = concat(x, zeros(2));
fn flat(m: f32[r, c]) -> f32[r * c] = reshape(m, r * c);
fn inner(x: f32[n]) -> f32[n - 1] = x[1:];
fn head(x: f32[n], k: i64) -> f32[?] = x[:k];
fn bad(x: f32[n]) -> f32[2 * n] = concat(x, x[1:]);
fn drop(x: f32[n], k: i64) -> f32[n - k] {
    if k > 0 { return x[k:]; }
    return x;
}
"""

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


def test_size_expressions(m):
    x = np.arange(1, 5, dtype=np.float32)
    np.testing.assert_array_equal(m.grow(x), [1, 2, 3, 4, 0, 0])
    np.testing.assert_array_equal(m.flat(x.reshape(2, 2)), [1, 2, 3, 4])
    np.testing.assert_array_equal(m.inner(x), [2, 3, 4])
    np.testing.assert_array_equal(m.drop(x, 3), [4])


def test_any_size_is_the_shape(m):
    x = np.arange(1, 6, dtype=np.float32)
    for k in (0, 2, 5):
        r = m.head(x, k)
        assert r.shape == (k,)
        np.testing.assert_array_equal(r, x[:k])


def test_mismatch_is_run_error(m):
    with pytest.raises(cuk.RunError) as e:
        m.bad(np.ones(3, np.float32))
    assert (e.value.file, e.value.line, e.value.column) == ("<string>", 5, 35)
    assert e.value.message == "bad(): the result has size 5 on axis 0, but its declared size '2 * n' is 6"


def test_mismatch_in_host_function(m):
    with pytest.raises(cuk.RunError) as e:
        m.drop(np.ones(4, np.float32), -1)
    assert (e.value.line, e.value.column) == (8, 5)
    assert e.value.message == "drop(): the result has size 4 on axis 0, but its declared size 'n - k' is 5"


def test_negative_declared_size(m):
    with pytest.raises(cuk.RunError, match=r"inner\(\): the result has size 0 on axis 0, but its declared size 'n - 1' is -1"):
        m.inner(np.zeros(0, np.float32))


def test_compile_errors():
    with pytest.raises(cuk.CompileError, match="allowed in result types only"):
        cuk.compile("fn f(x: f32[n], y: f32[n + 1]) -> f32[n] = x;", device="cpu")
    with pytest.raises(cuk.CompileError, match="'/' in a size"):
        cuk.compile("fn f(x: f32[n]) -> f32[n / 2] = x;", device="cpu")

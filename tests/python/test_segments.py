"""segments=offs (DESIGN.md part 2, "Segments") against a Python loop over the
segments with NumPy (not np.add.reduceat, whose rule for empty segments differs: cuk
gives the identity). Random offsets with many empty segments; on the CPU backend, and
on the GPU where there is one."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = """
fn s(x: f64[n], o: i64[k]) -> f64[?] = sum(x, segments=o);
fn p(x: f64[n], o: i64[k]) -> f64[?] = prod(x, segments=o);
fn lo(x: f64[n], o: i64[k]) -> f64[?] = min(x, segments=o);
fn hi(x: i32[n], o: i64[k]) -> i32[?] = max(x, segments=o);
fn am(x: f64[n], o: i64[k]) -> i64[?] = argmin(x, segments=o);
fn mn(x: f64[n], o: i64[k]) -> f64[?] = mean(x, segments=o);
fn cs(x: f64[n], o: i64[k]) -> f64[n] = cumsum(x * 2.0, segments=o);
fn ce(x: i32[n], o: i64[k]) -> i32[n] = cumsum(x, segments=o, exclusive=true);
fn cm(x: f64[n], o: i64[k]) -> f64[n] = cummax(x, segments=o);
fn lam(x: f64[n], o: i64[k]) -> f64[?] = reduce(|a, b| a + b * b, 1.0, x, segments=o);
"""

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


def offsets(rng, n, k):
    cuts = np.sort(rng.integers(0, n + 1, size=k - 1)) if k > 1 else np.zeros(0, np.int64)
    return np.concatenate([[0], cuts, [n]]).astype(np.int64)


def segs(x, o):
    return [x[o[i]:o[i + 1]] for i in range(len(o) - 1)]


@pytest.mark.parametrize("n,k", [(0, 1), (0, 4), (1, 1), (17, 5), (1000, 300), (5000, 7), (70000, 70)])
def test_against_loop(m, n, k):
    rng = np.random.default_rng(n * 31 + k)
    x = rng.standard_normal(n)
    xi = rng.integers(-50, 50, size=n).astype(np.int32)
    o = offsets(rng, n, k)
    S = segs(x, o)
    np.testing.assert_allclose(m.s(x, o), [v.sum() for v in S], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m.p(x, o), [v.prod() for v in S], rtol=1e-9)
    np.testing.assert_array_equal(m.lo(x, o), [v.min() if len(v) else np.inf for v in S])
    np.testing.assert_array_equal(m.hi(xi, o), [v.max() if len(v) else np.iinfo(np.int32).min for v in segs(xi, o)])
    np.testing.assert_array_equal(m.am(x, o), [v.argmin() if len(v) else -1 for v in S])
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(m.mn(x, o), [v.mean() if len(v) else np.nan for v in S], rtol=1e-12)
    np.testing.assert_allclose(m.lam(x, o), [1.0 + (v * v).sum() for v in S], rtol=1e-12)
    cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)
    np.testing.assert_allclose(m.cs(x, o), cat([np.cumsum(v * 2.0) for v in S], np.float64), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(m.ce(xi, o), cat([np.cumsum(v) - v for v in segs(xi, o)], np.int32))
    np.testing.assert_array_equal(m.cm(x, o), cat([np.maximum.accumulate(v) for v in S], np.float64))


def test_bad_offsets(m):
    x = np.arange(6.0)
    with pytest.raises(cuk.RunError, match=r"offs\[2\] = 1 is less than offs\[1\] = 4"):
        m.s(x, np.array([0, 4, 1, 6], np.int64))
    with pytest.raises(cuk.RunError, match=r"must be the length of the array \(6\)"):
        m.cs(x, np.array([0, 3, 5], np.int64))

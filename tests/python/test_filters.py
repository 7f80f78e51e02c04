"""Filters and index arrays (DESIGN.md part 2, "Data-dependent sizes" and "Indexing")
against NumPy: x[mask] (np: x[mask]), filter, nonzero (np.nonzero(mask.ravel())[0]),
partition (np: (x[m], x[~m])) and x[rows, cols], over dtypes, sizes past many tiles,
none and all kept, size 0. On the CPU backend, and on the GPU where there is one."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = "".join("fn sel_%s(x: %s[n], m: bool[n]) -> %s[?] = x[m];\n" % (t, t, t)
              for t in ("f32", "f64", "i32", "i64", "u64")) + """
fn selk(x: f32[n], m: bool[k]) -> f32[?] = x[m];
fn sel2(x: f32[r, c], m: bool[r, c]) -> f32[?] = x[m];
fn pos(x: f64[n]) -> f64[?] = filter(|v| v > 0.0, x);
fn nz(m: bool[r, c]) -> i64[?] = nonzero(m);
fn possum(a: f32[n], b: f32[n]) -> f32 = sum(filter(|v| v > 0.0, a * b));
fn count(x: f32[n]) -> i64 = len(x[x > 0.5]);
fn pick(x: f32[r, c], i: i64[k], j: i32[k]) -> f32[k] = x[i, j];
fn pick2(x: i64[r, c], i: i64[p, 1], j: i64[q]) -> i64[p, q] = x[i, j];
"""

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])
SIZES = [0, 1, 7, 1000, 4097, 100003]


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.uint64])
def test_mask(m, n, dt):
    rng = np.random.default_rng(n)
    x = (rng.random(n) * 100).astype(dt)
    for keep in (0.0, 0.5, 1.0):
        mask = rng.random(n) < keep
        got = getattr(m, "sel_" + {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64",
                                     np.uint64: "u64"}[dt])(x, mask)
        np.testing.assert_array_equal(got, x[mask])


def test_mask_2d_and_filter(m):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 129)).astype(np.float32)
    np.testing.assert_array_equal(m.sel2(x, x > 0.3), x[x > 0.3])
    y = rng.standard_normal(5001)
    np.testing.assert_array_equal(m.pos(y), y[y > 0])
    b = rng.random((33, 65)) < 0.2
    np.testing.assert_array_equal(m.nz(b), np.nonzero(b.ravel())[0])
    np.testing.assert_array_equal(m.nz(np.zeros((0, 3), bool)), np.zeros(0, np.int64))


def test_fused_reductions(m):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(100003).astype(np.float32)
    b = rng.standard_normal(100003).astype(np.float32)
    p = a * b
    assert abs(m.possum(a, b) - p[p > 0].sum(dtype=np.float64)) < 1e-2
    assert m.count(a) == int((a > 0.5).sum())


def test_index_arrays(m):
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    i = np.array([0, 4, -1, 2], np.int64)
    j = np.array([6, 0, 3, -7], np.int32)
    np.testing.assert_array_equal(m.pick(x, i, j), x[i, j])
    xi = np.arange(35, dtype=np.int64).reshape(5, 7)
    r = np.array([[1], [3]], np.int64)
    c = np.array([0, 2, 6], np.int64)
    np.testing.assert_array_equal(m.pick2(xi, r, c), xi[r, c])
    with pytest.raises(cuk.RunError, match="out of bounds for axis 1"):
        m.pick(x, i, np.array([0, 0, 7, 0], np.int32))


def test_mask_shape_mismatch(m):
    with pytest.raises(cuk.RunError, match="boolean index did not match"):
        m.selk(np.zeros(3, np.float32), np.ones(4, bool))


PART = "".join("fn part_%s(x: %s[n], t: %s) -> (%s[?], %s[?]) = partition(|v| v > t, x);\n" % ((t,) * 5)
               for t in ("f32", "f64", "i32", "i64", "u64")) + """
fn part_sum(a: f32[n], b: f32[n]) -> (f32[?], f32[?]) = partition(|v| v > 0.0, a * b);
"""


@pytest.fixture(scope="module", params=DEVICES)
def mp(request):
    return cuk.compile(PART, device=request.param)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.uint64])
def test_partition(mp, n, dt):
    """partition(f, x) -> (x[m], x[~m]) as Futhark defines it, order kept in both."""
    rng = np.random.default_rng(n + 5)
    x = (rng.random(n) * 100).astype(dt)
    f = getattr(mp, "part_" + np.dtype(dt).name.replace("float", "f").replace("uint", "u").replace("int", "i"))
    # all true (-1; 0 for u64, which keeps the zeros out), about half, none true
    for t in (0 if dt == np.uint64 else -1, 50, 101):
        yes, no = f(x, dt(t))
        np.testing.assert_array_equal(yes, x[x > dt(t)])
        np.testing.assert_array_equal(no, x[~(x > dt(t))])
        assert yes.dtype == dt and no.dtype == dt


def test_partition_fused_producer(mp):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(100003).astype(np.float32)
    b = rng.standard_normal(100003).astype(np.float32)
    p = a * b
    yes, no = mp.part_sum(a, b)
    np.testing.assert_array_equal(yes, p[p > 0])
    np.testing.assert_array_equal(no, p[~(p > 0)])

"""scatter, reduce_by_index, bincount and histogram on the CPU backend against NumPy
(np.add.at, np.minimum.at, np.maximum.at, np.multiply.at, fancy assignment,
np.bincount, np.histogram): the values must be equal, bit for bit, on random inputs
with duplicates, indices outside the destination and values on bin edges. The inputs
are .npy files bound to main's parameters. Run: /usr/bin/python3 -m pytest
tests/python (cukc from $CUKC, else build/bin/cukc)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_numpy_match import run  # noqa: E402

SIZES = [0, 1, 33, 1025, 70001]


def inputs(tmp_path, n, dt_idx, dt_val, m):
    rng = np.random.default_rng(n * 7 + m)
    idx = rng.integers(-3, m + 3, n).astype(dt_idx)
    vals = (rng.standard_normal(n) * 10).astype(dt_val)
    if np.dtype(dt_val).kind == "i":
        vals = rng.integers(-50, 50, n).astype(dt_val)
    np.save(tmp_path / "idx.npy", idx)
    np.save(tmp_path / "vals.npy", vals)
    dest = (rng.standard_normal(m) * 5).astype(dt_val)
    np.save(tmp_path / "dest.npy", dest)
    return idx, vals, dest


def at(ufunc, dest, idx, vals):
    out = dest.copy()
    keep = (idx >= 0) & (idx < len(dest))
    with np.errstate(over="ignore"):  # products of many values overflow, in both
        ufunc.at(out, idx[keep], vals[keep])
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt_idx,dt_val", [("int32", "float32"), ("int64", "float64"),
                                           ("int64", "int32"), ("int32", "int64")])
def test_reduce_by_index(tmp_path, n, dt_idx, dt_val):
    m = 17
    idx, vals, dest = inputs(tmp_path, n, dt_idx, dt_val, m)
    ti, tv = {"int32": "i32", "int64": "i64"}[dt_idx], {"float32": "f32", "float64": "f64",
                                                       "int32": "i32", "int64": "i64"}[dt_val]
    lam_one = "1.0" if tv[0] == "f" else "1"
    _, s = run("""
fn main(dest: %(v)s[m], idx: %(i)s[n], vals: %(v)s[n]) {
    save("add.npy", reduce_by_index(dest, add, idx, vals));
    save("add_det.npy", reduce_by_index(dest, add, idx, vals, deterministic=true));
    save("min.npy", reduce_by_index(dest, min, idx, vals));
    save("max.npy", reduce_by_index(dest, max, idx, vals));
    save("mul.npy", reduce_by_index(dest, mul, idx, vals * %(one)s));
    save("lam.npy", reduce_by_index(dest, |a, b| maximum(a, b) - %(one)s, idx, vals));
    save("scatter.npy", scatter(dest, idx, vals));
    save("count.npy", reduce_by_index(dest, add, idx, %(one)s));
}
""" % dict(v=tv, i=ti, one=lam_one), tmp_path, "dest=dest.npy", "idx=idx.npy", "vals=vals.npy")
    eq = np.testing.assert_array_equal
    eq(s["add"], at(np.add, dest, idx, vals))
    eq(s["add_det"], at(np.add, dest, idx, vals))
    eq(s["min"], at(np.minimum, dest, idx, vals))
    eq(s["max"], at(np.maximum, dest, idx, vals))
    eq(s["mul"], at(np.multiply, dest, idx, vals))
    want = dest.copy()
    one = vals.dtype.type(1)
    for i, v in zip(idx, vals):
        if 0 <= i < m:
            want[i] = np.maximum(want[i], v) - one
    eq(s["lam"], want)
    want = dest.copy()
    keep = (idx >= 0) & (idx < m)
    want[idx[keep]] = vals[keep]  # NumPy: the last write of a duplicate wins, as on the CPU
    eq(s["scatter"], want)
    eq(s["count"], at(np.add, dest, idx, np.full(n, one, vals.dtype)))
    for k in ("add", "add_det", "min", "max", "mul", "lam", "scatter", "count"):
        assert s[k].dtype == dest.dtype and s[k].shape == (m,), k


@pytest.mark.parametrize("n", SIZES)
def test_bincount(tmp_path, n):
    rng = np.random.default_rng(n)
    idx = rng.integers(-2, 1100, n)
    np.save(tmp_path / "idx.npy", idx)
    np.save(tmp_path / "idx32.npy", idx.astype(np.int32))
    _, s = run("""
fn main(idx: i64[n], idx32: i32[n]) {
    save("b.npy", bincount(idx, 1000));
    save("b32.npy", bincount(idx32 % 7, 7));
    save("b1.npy", bincount(idx, 1));
}
""", tmp_path, "idx=idx.npy", "idx32=idx32.npy")
    keep = (idx >= 0) & (idx < 1000)
    np.testing.assert_array_equal(s["b"], np.bincount(idx[keep], minlength=1000))
    i7 = np.fmod(idx.astype(np.int32), 7)  # cuk's % keeps the dividend's sign, as C does
    np.testing.assert_array_equal(s["b32"], np.bincount(i7[i7 >= 0], minlength=7))
    np.testing.assert_array_equal(s["b1"], np.array([np.count_nonzero(idx == 0)]))
    assert s["b"].dtype == np.int64


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("bins,lo,hi", [(256, 0.0, 3.0), (1024, -1.5, 2.5), (7, 0.1, 0.7), (1, 0.0, 1.0),
                                        (10, 0.5, 0.5), (3, -2.0, 2.0)])
def test_histogram(tmp_path, n, dt, bins, lo, hi):
    rng = np.random.default_rng(n + bins)
    x = (rng.standard_normal(n) * 1.5).astype(dt)
    # values exactly on the edges, at the ends, outside and NaN
    edges = np.linspace(lo, hi, bins + 1).astype(dt)
    k = min(n, len(edges))
    x[:k] = edges[:k]
    if n > 40:
        x[-3:] = [np.nan, np.inf, -np.inf]
    np.save(tmp_path / "x.npy", x)
    t = "f32" if dt == "float32" else "f64"
    _, s = run("""
fn main(x: %s[n]) {
    save("h.npy", histogram(x, %d, %r, %r));
}
""" % (t, bins, lo, hi), tmp_path, "x=x.npy")
    finite = x[~np.isnan(x)]
    want = np.histogram(finite, bins, (lo, hi))[0]
    np.testing.assert_array_equal(s["h"], want)
    assert s["h"].dtype == np.int64


def edge_rule(x, bins, lo, hi, dt):
    """The bins by the edges themselves: the last edge <= x (the last bin closed)."""
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1).astype(dt)
    x = x[(x >= edges[0]) & (x <= edges[-1])]
    b = np.minimum(np.searchsorted(edges[:bins], x, "right") - 1, bins - 1)
    return np.bincount(b, minlength=bins)


# (bins, lo, hi): ranges exactly representable in f32. The last ones are past the bound
# in kernels/ops.h (n * 2^-22 * (1 + max|end| / width) >= 1), where the f32 guess can be
# more than one bin off and the bisection finds the bin.
ADVERSARIAL = [(1, -2.0, 3.0), (256, 0.0, 1.0), (1024, -1.5, 2.5), (4097, 0.125, 0.875), (100000, 0.0, 1.0),
               (100000, -3.0, 1000.0), (1000, 1000.0, 1000.5), (100000, 1000.0, 1000.5), (65536, 16.0, 16.25),
               (5, 7.0, 7.0)]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("bins,lo,hi", ADVERSARIAL)
def test_histogram_adversarial(tmp_path, dt, bins, lo, hi):
    """Random values and every edge, the values just below and above each, lo, hi, NaN
    and infinities: equal to the edge rule, and to np.histogram within the bound."""
    rng = np.random.default_rng(bins)
    l2, h2 = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    edges = np.linspace(l2, h2, bins + 1).astype(dt)
    inf = np.array([np.inf], dt)
    x = np.concatenate([rng.uniform(l2 - 0.1, h2 + 0.1, 50000).astype(dt), edges, np.nextafter(edges, -inf),
                        np.nextafter(edges, inf), np.array([lo, hi, np.nan, np.inf, -np.inf], dt)])
    rng.shuffle(x)
    np.save(tmp_path / "x.npy", x)
    t = "f32" if dt == "float32" else "f64"
    _, s = run("""
fn main(x: %s[n]) {
    save("h.npy", histogram(x, %d, %r, %r));
}
""" % (t, bins, lo, hi), tmp_path, "x=x.npy")
    want = edge_rule(x, bins, lo, hi, dt)
    np.testing.assert_array_equal(s["h"], want)
    if bins * 2.0**-22 * (1 + max(abs(l2), abs(h2)) / (h2 - l2)) < 1:
        # within the bound NumPy's own guess is at most one bin off too; past it, bins
        # narrower than a unit in the last place make NumPy disagree with its own edges
        np.testing.assert_array_equal(s["h"], np.histogram(x[~np.isnan(x)], bins, (lo, hi))[0])

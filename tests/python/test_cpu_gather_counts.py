"""What the CPU backend does faster for issue 18's examples bench (exec/cpu/eval.c:
gather_block, hist_par, prog_add_cat; kernels/philox.h's exponent by clz): x[idx] with
i64 and i32 indices is NumPy's x[idx], negative indices counted from the end and the
first index out of bounds reported; bincount, histogram and integer reduce_by_index
with add are NumPy's counts, indices outside skipped; randn's values are
tests/python/philox.py's bit for bit; a 1-D concat of slices read in place in a fused
map is np.concatenate's (steps other than 1, clamped and empty slices, generators,
broadcasting against 2-D, the concat also used whole); and all of them the same with
1, 2 and 3 threads."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk
import philox

SRC = """
fn g32(x: f32[n], i: i64[k]) -> f32[k] = x[i];
fn g64(x: f64[n], i: i32[k]) -> f64[k] = x[i];
fn g8(x: i8[n], i: i64[k]) -> i8[k] = x[i];
fn grow(x: f32[r, c], i: i64[k]) -> f32[k, c] = x[i];
fn spmv(rowptr: i64[r1], cols: i64[z], vals: f32[z], x: f32[c]) -> f32[?] = sum(vals * x[cols], segments=rowptr);
fn counts(i: i64[n]) -> i64[13] = bincount(i, 13);
fn counts32(i: i32[n]) -> i64[300] = bincount(i, 300);
fn hist(x: f32[n]) -> i64[12] = histogram(x, 12, -3.0, 3.0);
fn hist64(x: f64[n]) -> i64[1000] = histogram(x, 1000, -2.0, 2.0);
fn hist_randn(n: i64) -> i64[12] = histogram(randn(n, seed=11), 12, -3.0, 3.0);
fn pips(d1: i64[n], d2: i64[n]) -> i64[13] = reduce_by_index(zeros(13, dtype=i64), add, d1 + d2, d1);
fn pips32(i: i64[n], w: i32[n]) -> i32[7] = reduce_by_index(full(5, 7, dtype=i32), add, i, w);
fn rn(n: i64) -> f32[n] = randn(n, seed=7);
fn rn64(n: i64) -> f64[n] = randn(n, seed=9, dtype=f64);

fn step(x: f64[n], b: f64[n]) -> f64[n] {
    let z = zeros(1, dtype=f64);
    return (b + concat(z, x[0:n - 1]) + concat(x[1:n], z)) / 4.0;
}
fn cat_mix(x: f32[n], a: i64, e: i64) -> f32[?] = concat(x[a:e], x[::2], f32(iota(3)), x[::-1], x[-5:n + 9]) * 2.0;
fn cat_i64(x: i64[n]) -> i64[?] = concat(x[1:], x[:1]) - x;
fn cat_2d(x: f32[n], y: f32[r, c]) -> f32[r, c] = y + concat(x[1:], x[:1]);
fn cat_both(x: f32[n]) -> (f32[?], f32[?]) {
    let c = concat(x[2:], x[:2]);
    return (c * 3.0, c);
}
"""

N = 300007  # several blocks of indices and of chunks, and an odd tail


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="cpu", name="test_cpu_gather_counts.py")


def test_gather_matches_numpy(m):
    g = np.random.default_rng(5)
    x = g.standard_normal(1 << 16).astype(np.float32)
    i = g.integers(-(1 << 16), 1 << 16, N)  # negatives counted from the end, as NumPy
    assert np.array_equal(m.g32(x, i), x[i])
    xd = g.standard_normal(999)
    i32 = g.integers(-999, 999, N).astype(np.int32)
    assert np.array_equal(m.g64(xd, i32), xd[i32])
    x8 = g.integers(-128, 128, 1000).astype(np.int8)
    i8 = g.integers(0, 1000, N)
    assert np.array_equal(m.g8(x8, i8), x8[i8])
    x2 = g.standard_normal((500, 3)).astype(np.float32)
    i2 = g.integers(-500, 500, N)
    assert np.array_equal(m.grow(x2, i2), x2[i2])
    assert m.g32(x, np.zeros(0, np.int64)).shape == (0,)


@pytest.mark.parametrize("bad", [5, N - 1])
def test_gather_reports_the_first_index_out_of_bounds(m, bad):
    x = np.arange(10, dtype=np.float32)
    i = np.zeros(N, np.int64)
    i[bad] = 10
    i[N - 1 if bad != N - 1 else 7] = -11  # a later block's (or earlier) bad index too
    first = min(bad, N - 1 if bad != N - 1 else 7)
    with pytest.raises(cuk.Error) as e:
        m.g32(x, i)
    want = i[first]
    assert "index %d is out of bounds for axis 0 with size 10" % want in str(e.value)


def test_spmv_matches_numpy(m):
    g = np.random.default_rng(8)
    lens = g.integers(0, 9, 40000)
    rowptr = np.concatenate(([0], np.cumsum(lens)))
    cols = g.integers(0, 5000, rowptr[-1])
    vals = g.standard_normal(rowptr[-1]).astype(np.float32)
    x = g.standard_normal(5000).astype(np.float32)
    y = np.zeros(len(lens), np.float32)  # reduceat over the rows that are not empty
    y[lens > 0] = np.add.reduceat(vals * x[cols], rowptr[:-1][lens > 0])
    assert np.allclose(m.spmv(rowptr, cols, vals, x), y, rtol=1e-5, atol=1e-5)


def test_counts_match_numpy(m):
    g = np.random.default_rng(9)
    i = g.integers(-3, 16, N)  # outside 0 .. 12 skipped
    ok = i[(i >= 0) & (i < 13)]
    assert np.array_equal(m.counts(i), np.bincount(ok, minlength=13))
    i32 = g.integers(0, 300, N).astype(np.int32)
    assert np.array_equal(m.counts32(i32), np.bincount(i32, minlength=300))
    x = g.standard_normal(N).astype(np.float32)
    x[::1000] = np.nan
    x[1::997] = 3.0  # the last bin takes hi
    assert np.array_equal(m.hist(x), np.histogram(x[~np.isnan(x)], 12, (-3.0, 3.0))[0])
    xd = g.standard_normal(N)
    assert np.array_equal(m.hist64(xd), np.histogram(xd, 1000, (-2.0, 2.0))[0])
    n = 1 << 20
    r = philox.randn(n, 11)
    assert np.array_equal(m.hist_randn(n), np.histogram(r, 12, (-3.0, 3.0))[0])
    d1, d2 = g.integers(1, 7, N), g.integers(1, 7, N)
    want = np.zeros(13, np.int64)
    np.add.at(want, d1 + d2, d1)
    assert np.array_equal(m.pips(d1, d2), want)
    iw = g.integers(-1, 8, N)
    w = g.integers(-(1 << 31), 1 << 31, N).astype(np.int32)
    want32 = np.full(7, 5, np.int32)
    keep = (iw >= 0) & (iw < 7)
    with np.errstate(over="ignore"):
        np.add.at(want32, iw[keep], w[keep])  # wraps, as cuk's i32 adds do
    assert np.array_equal(m.pips32(iw, w), want32)


def test_randn_bits(m):
    n = (1 << 18) + 3
    assert np.array_equal(m.rn(n).view(np.uint32), philox.randn(n, 7).view(np.uint32))
    assert np.array_equal(m.rn64(n).view(np.uint64), philox.randn(n, 9, np.float64).view(np.uint64))


def test_concat_of_slices_matches_numpy(m):
    g = np.random.default_rng(6)
    for n in (1, 2, 7, N):
        x, b = g.standard_normal(n), g.standard_normal(n)
        xp = np.pad(x, 1)
        assert np.array_equal(m.step(x, b), (b + xp[:-2] + xp[2:]) / 4.0), n
        xf = x.astype(np.float32)
        for a, e in ((0, n), (3, 2), (-4, n - 1), (n + 5, n + 9)):
            want = np.concatenate((xf[a:e], xf[::2], np.arange(3, dtype=np.float32), xf[::-1], xf[-5:n + 9]))
            assert np.array_equal(m.cat_mix(xf, a, e), want * np.float32(2)), (n, a, e)
        xi = g.integers(-9, 9, n)
        assert np.array_equal(m.cat_i64(xi), np.roll(xi, -1) - xi)
        y = g.standard_normal((3, n)).astype(np.float32)
        assert np.array_equal(m.cat_2d(xf, y), y + np.roll(xf, -1))
        c3, c = m.cat_both(xf)
        assert np.array_equal(c, np.roll(xf, -2)) and np.array_equal(c3, np.roll(xf, -2) * np.float32(3))


CHILD = r"""
import sys
import numpy as np
import cukpath, cuk
m = cuk.compile(open(sys.argv[1]).read(), device="cpu")
g = np.random.default_rng(4)
x = g.standard_normal(1 << 16).astype(np.float32)
i = g.integers(-(1 << 16), 1 << 16, 1 << 20)
d1, d2 = g.integers(1, 7, 1 << 20), g.integers(1, 7, 1 << 20)
xd = g.standard_normal(1 << 20)
out = [m.g32(x, i), m.counts(g.integers(-3, 16, 1 << 20)), m.hist(x[i]), m.hist_randn(1 << 20), m.pips(d1, d2),
       m.rn(1 << 20), m.step(xd, xd[::-1].copy()), m.cat_mix(x, 5, 60000)]
np.savez(sys.argv[2], *out)
"""


def test_same_results_with_any_thread_count(tmp_path):
    src = tmp_path / "p.cuk"
    src.write_text(SRC)
    outs = []
    for t in ("1", "2", "3"):
        f = tmp_path / ("t%s.npz" % t)
        r = subprocess.run([sys.executable, "-c", CHILD, str(src), str(f)], capture_output=True, text=True,
                           cwd=os.path.dirname(os.path.abspath(__file__)),
                           env=cukpath.python_child_env(CUK_THREADS=t), timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append(np.load(f))
    for o in outs[1:]:
        for k in outs[0].files:
            assert np.array_equal(outs[0][k], o[k]), k

"""sort, argsort, searchsorted and top_k (DESIGN.md part 2, "Sorting") on the CPU backend
against NumPy's stable sort: every dtype, NaN (last, in either direction), -0.0 (equal to
0.0, kept in its place), duplicates, all-equal, sorted and reverse-sorted input, rows and
other axes, sizes 0, 1, 48/49 (the insertion sort's edge), 64-97 (the merge sort's: runs of
16, a last partial one, its edge with the radix sort) and 2^20 + 7, on the CPU backend
and, where a GPU is usable, on the GPU (kernels/sort.cuh): there also rows at the edges
of the GPU's tiles (2048 keys of 8 bytes, 4096 of 4 bytes: one block per row below,
onesweep passes above) and rows of more than 2^30 keys (the passes' portions)."""
import os

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

TYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u32": np.uint32,
         "u64": np.uint64, "bool": np.bool_}
UN = {"f32": "-", "f64": "-", "i32": "-", "i64": "-", "u32": "~", "u64": "~", "bool": "!"}  # a bitwise map
SRC = "".join("""
fn s_{t}(x: {t}[r, c]) -> {t}[r, c] = sort(x);
fn a_{t}(x: {t}[r, c]) -> i64[r, c] = argsort(x);
fn sd_{t}(x: {t}[r, c]) -> {t}[r, c] = sort(x, descending=true);
fn ad_{t}(x: {t}[r, c]) -> i64[r, c] = argsort(x, descending=true);
fn a0_{t}(x: {t}[r, c]) -> i64[r, c] = argsort(x, axis=0);
fn sr_{t}(x: {t}[r, c]) -> {t}[r, c] = sort({u}x);
fn sdr_{t}(x: {t}[r, c]) -> {t}[r, c] = sort({u}x, descending=true);
fn ss_{t}(a: {t}[n], v: {t}[k]) -> i64[k] = searchsorted(a, v);
fn ssr_{t}(a: {t}[n], v: {t}[k]) -> i64[k] = searchsorted(a, v, right=true);
fn ss1_{t}(a: {t}[n], v: {t}) -> i64 = searchsorted(a, v);
fn tk_{t}(x: {t}[r, c], k: i64) -> ({t}[r, k], i64[r, k]) = top_k(x, k);
""".format(t=t, u=UN[t]) for t in TYPES)


DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


def ref_argsort(x, desc):
    """NumPy's stable argsort along the last axis; descending: the stable order of an
    order-reversing key (~x for integers and bools, -x for floats), NaN last."""
    if not desc:
        return np.argsort(x, axis=-1, kind="stable")
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        return np.lexsort((np.where(nan, 0, -x), nan), axis=-1)
    return np.argsort(~x, axis=-1, kind="stable")


def data(t, r, c, seed):
    rng = np.random.default_rng(seed)
    dt = TYPES[t]
    if t == "bool":
        return rng.random((r, c)) < 0.5
    if t in ("f32", "f64"):
        x = (rng.integers(-20, 20, (r, c)) * 0.5).astype(dt)
        x[rng.random((r, c)) < 0.1] = np.nan
        x[rng.random((r, c)) < 0.1] = -0.0
        x[rng.random((r, c)) < 0.05] = np.inf
        x[rng.random((r, c)) < 0.05] = -np.inf
        x[rng.random((r, c)) < 0.02] = -np.nan  # a NaN of another sign bit: kept bit for bit
        return x
    info = np.iinfo(dt)
    x = rng.integers(-50 if info.min < 0 else 0, 50, (r, c)).astype(dt)
    x.flat[:min(x.size, 3)] = [info.min, info.max, 0][:min(x.size, 3)]
    return x


@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("shape", [(1, 0), (1, 1), (3, 48), (2, 49), (4, 64), (3, 81), (2, 96), (2, 97), (5, 1000), (1, (1 << 20) + 7), (3, 2048),
                                   (2, 2049), (2, 4096), (3, 4097), (1000, 5), (2, 70001)])
def test_sort_argsort(m, t, shape):
    x = data(t, *shape, seed=shape[1])
    for desc, sf, af in ((False, "s_", "a_"), (True, "sd_", "ad_")):
        want = ref_argsort(x, desc)
        got = getattr(m, af + t)(x)
        np.testing.assert_array_equal(got, want, err_msg="%s desc=%s" % (t, desc))
        vals = getattr(m, sf + t)(x)
        exp = np.take_along_axis(x, want, axis=-1)
        # the same bits: -0.0 stays -0.0 in its place, NaN stays NaN
        np.testing.assert_array_equal(vals.view(np.uint8), exp.view(np.uint8))
    # a fused input (-x, stored nowhere): the CPU backend sorts it in its output, its
    # zeros' and NaNs' bits kept aside
    xr = ~x if UN[t] != "-" else -x
    for desc, sf in ((False, "sr_"), (True, "sdr_")):
        exp = np.take_along_axis(xr, ref_argsort(xr, desc), axis=-1)
        np.testing.assert_array_equal(getattr(m, sf + t)(x).view(np.uint8), exp.view(np.uint8),
                                      err_msg="%s fused desc=%s" % (t, desc))
    if t in ("f32", "f64"):
        # no -0.0 and one NaN: the GPU decodes the keys instead of gathering by positions
        x = np.where(x == 0, 0, np.where(np.isnan(x), np.nan, x)).astype(x.dtype)
        for desc, sf in ((False, "s_"), (True, "sd_")):
            exp = np.take_along_axis(x, ref_argsort(x, desc), axis=-1)
            np.testing.assert_array_equal(getattr(m, sf + t)(x).view(np.uint8), exp.view(np.uint8))


@pytest.mark.parametrize("t", ["f32", "i64", "u32", "bool"])
def test_other_axis_and_edges(m, t):
    x = data(t, 300, 7, seed=9)
    np.testing.assert_array_equal(getattr(m, "a0_" + t)(x), np.argsort(x, axis=0, kind="stable"))
    for shape in ((0, 7), (7, 0)):
        e = np.zeros(shape, TYPES[t])
        np.testing.assert_array_equal(getattr(m, "a0_" + t)(e), np.argsort(e, axis=0, kind="stable"))
    same = np.repeat(data(t, 1, 1, seed=1), 100, axis=1)
    np.testing.assert_array_equal(getattr(m, "a_" + t)(same), np.arange(100)[None])
    srt = np.sort(data(t, 1, 200, seed=2), axis=-1, kind="stable")
    np.testing.assert_array_equal(getattr(m, "a_" + t)(srt), ref_argsort(srt, False))
    np.testing.assert_array_equal(getattr(m, "a_" + t)(srt[:, ::-1].copy()), ref_argsort(srt[:, ::-1], False))


@pytest.mark.parametrize("t", ["f32", "i32", "u64", "f64"])
@pytest.mark.parametrize("kind", ["full", "few"])
def test_long_rows(m, t, kind):
    """Rows of 2^21 keys and more: the CPU backend scatters them through write-combining
    buffers (exec/sort.c), a bucket's first and last lines partial; the second row starts
    off a 16-byte boundary (its lines then go out without non-temporal stores). Keys of
    the full range, and few distinct ones (most buckets empty, long runs in the rest)."""
    n = (1 << 21) + 13
    if kind == "few":
        x = data(t, 2, n, seed=21)
    else:
        rng = np.random.default_rng(22)
        bits = rng.integers(0, 1 << 63, (2, n), dtype=np.uint64)
        x = bits.astype(np.uint32).view(np.float32) if t == "f32" else \
            bits.astype(np.uint32).view(np.int32) if t == "i32" else bits.view(TYPES[t])
        if t in ("f32", "f64"):
            x = np.where(np.isnan(x), 1.5, x).astype(x.dtype)
    for desc, sf, af in ((False, "s_", "a_"), (True, "sd_", "ad_")):
        want = ref_argsort(x, desc)
        np.testing.assert_array_equal(getattr(m, af + t)(x), want, err_msg="%s desc=%s" % (t, desc))
        exp = np.take_along_axis(x, want, axis=-1)
        np.testing.assert_array_equal(getattr(m, sf + t)(x).view(np.uint8), exp.view(np.uint8))


@pytest.mark.parametrize("t", list(TYPES))
def test_passes_that_move_nothing(m, t):
    """Keys that share digits (all equal; values that differ in their lowest byte only):
    the GPU skips the passes that would move nothing, on rows long enough for it."""
    x = np.full((2, 300001), data(t, 1, 1, seed=3)[0, 0])
    np.testing.assert_array_equal(getattr(m, "a_" + t)(x), np.broadcast_to(np.arange(x.shape[1]), x.shape))
    np.testing.assert_array_equal(getattr(m, "s_" + t)(x).view(np.uint8), x.view(np.uint8))
    if t != "bool":
        y = (np.arange(300001) * 7919 % 200).astype(TYPES[t]).reshape(1, -1)
        for desc, sf, af in ((False, "s_", "a_"), (True, "sd_", "ad_")):
            want = ref_argsort(y, desc)
            np.testing.assert_array_equal(getattr(m, af + t)(y), want)
            np.testing.assert_array_equal(getattr(m, sf + t)(y), np.take_along_axis(y, want, axis=-1))


@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("shape", [(3, 1), (4, 100), (3, 256), (2, 4097), (1, 70001)])
def test_top_k(m, t, shape):
    """top_k: each row's k largest in the descending sort's order (ties by position,
    NaN last) and their positions; k = 0, 1, a few, a quarter of the row (the CPU's
    selection up to there, from rows of 256), half and the whole row; k past the row is
    an error that says so."""
    x = data(t, *shape, seed=shape[1] + 11)
    want = ref_argsort(x, True)
    c = shape[1]
    for k in sorted({0, 1, min(c, 5), c // 4, c // 4 + 1, c // 2, c}):
        v, i = getattr(m, "tk_" + t)(x, k)
        np.testing.assert_array_equal(i, want[:, :k])
        np.testing.assert_array_equal(v.view(np.uint8), np.take_along_axis(x, want[:, :k], axis=-1).view(np.uint8))
    with pytest.raises(cuk.Error, match="fewer than k"):
        getattr(m, "tk_" + t)(x, c + 1)


@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("shape", [(1, (1 << 20) + 7), (4, 100003)])
def test_top_k_selection(m, t, shape):
    """top_k of rows long beside k, which the GPU selects (samples, filters, one block
    sorting what is left) rather than sorts: heavy ties (the k-th value shared by many
    elements, all elements equal), sorted and reverse-sorted rows, NaN and -0.0; k up
    to the most one block sorts (1024 keys of 4 bytes, 512 of 8) and one past it."""
    x = data(t, *shape, seed=shape[0])
    if shape[0] > 1:
        x[1] = x[1, 0]
        x[2] = np.sort(x[2])
        x[3] = x[2, ::-1]
    want = ref_argsort(x, True)
    big = 512 if x.dtype.itemsize == 8 else 1024
    for k in (1, 100, big, big + 1):
        v, i = getattr(m, "tk_" + t)(x, k)
        np.testing.assert_array_equal(i, want[:, :k])
        np.testing.assert_array_equal(v.view(np.uint8), np.take_along_axis(x, want[:, :k], axis=-1).view(np.uint8))


@pytest.mark.parametrize("t", ["f32", "f64", "i32", "i64", "u64"])
def test_searchsorted(m, t):
    a = np.sort(data(t, 1, 1001, seed=4)[0], kind="stable")
    v = data(t, 1, 500, seed=5)[0]
    if t in ("f32", "f64"):
        v[:4] = [np.nan, -0.0, 0.0, np.inf]
    np.testing.assert_array_equal(getattr(m, "ss_" + t)(a, v), np.searchsorted(a, v))
    np.testing.assert_array_equal(getattr(m, "ssr_" + t)(a, v), np.searchsorted(a, v, side="right"))
    np.testing.assert_array_equal(getattr(m, "ss_" + t)(a[:0], v), np.zeros(v.size, np.int64))
    assert getattr(m, "ss1_" + t)(a, v[7]) == np.searchsorted(a, v[7])
    # longer than the GPU's samples of a (4096 or 2048): the search ends in global memory
    a = np.sort(data(t, 1, 100003, seed=6)[0], kind="stable")
    v = np.concatenate([data(t, 1, 5000, seed=7)[0], a[::97], a[-3:]])
    np.testing.assert_array_equal(getattr(m, "ss_" + t)(a, v), np.searchsorted(a, v))
    np.testing.assert_array_equal(getattr(m, "ssr_" + t)(a, v), np.searchsorted(a, v, side="right"))


@pytest.mark.parametrize("t", ["f32", "i64", "bool"])
@pytest.mark.parametrize("na,nv", [(3000, 10), (60000, 20000), (100003, 500), ((1 << 20) + 7, 1 << 18)])
def test_searchsorted_plans(m, t, na, nv):
    """The GPU's plans (exec/gpu/sort.c, search_plan): all of a in shared memory; every
    r-th element there and a sector of a after; levels built over a (many values); a
    binary search in a (few values)."""
    a = np.sort(data(t, 1, na, seed=na)[0], kind="stable")
    v = np.concatenate([data(t, 1, nv, seed=nv)[0], a[:: max(1, na // 50)], a[-2:], a[:2]])
    np.testing.assert_array_equal(getattr(m, "ss_" + t)(a, v), np.searchsorted(a, v))
    np.testing.assert_array_equal(getattr(m, "ssr_" + t)(a, v), np.searchsorted(a, v, side="right"))


SRC2 = """
fn sbk(k: f64[n], v: i64[n]) -> (f64[n], i64[n]) = sort_by_key(k, v);
fn sbkd(k: i32[n], v: f32[n]) -> (i32[n], f32[n]) = sort_by_key(k, v, descending=true);
fn uf(x: f32[n, m]) -> f32[?] = unique(x);
fn ui(x: i64[n]) -> i64[?] = unique(x);
fn ub(x: bool[n]) -> bool[?] = unique(x);
"""


@pytest.fixture(scope="module", params=DEVICES)
def m2(request):
    return cuk.compile(SRC2, device=request.param)


@pytest.mark.parametrize("n", [0, 1, 47, 1000, (1 << 20) + 7])
def test_sort_by_key_unique(m2, n):
    rng = np.random.default_rng(n)
    k = rng.integers(-5, 5, n).astype(np.float64)
    k[rng.random(n) < 0.1] = np.nan
    v = np.arange(n, dtype=np.int64)
    ks, vs = m2.sbk(k, v)
    p = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(ks, k[p])
    np.testing.assert_array_equal(vs, v[p])
    ki = rng.integers(-50, 50, n).astype(np.int32)
    vf = rng.random(n).astype(np.float32)
    kd, vd = m2.sbkd(ki, vf)
    p = np.argsort(~ki, kind="stable")
    np.testing.assert_array_equal(kd, ki[p])
    np.testing.assert_array_equal(vd, vf[p])
    x = rng.integers(-20, 20, (3, n)).astype(np.float32) * 0.5
    x[rng.random((3, n)) < 0.1] = np.nan
    np.testing.assert_array_equal(m2.uf(x), np.unique(x))  # NaNs as one (equal_nan)
    xi = rng.integers(-2**62, 2**62, n) // (1 << 55)
    np.testing.assert_array_equal(m2.ui(xi), np.unique(xi))
    xb = rng.random(n) < 0.5
    np.testing.assert_array_equal(m2.ub(xb), np.unique(xb))


SRC3 = """
fn fd(k: f32[n], v: f64[n]) -> (f32[n], f64[n]) = sort_by_key(k, v);
fn lf(k: i64[n], v: f32[n]) -> (i64[n], f32[n]) = sort_by_key(k, v, descending=true);
fn ub(k: u32[n], v: bool[n]) -> (u32[n], bool[n]) = sort_by_key(k, v);
fn fi(k: f32[n], v: i32[n]) -> (f32[n], i32[n]) = sort_by_key(k, v);
fn keys(k: i32[n], v: f32[n]) -> i32[n] { let (a, b) = sort_by_key(k, v); return a; }
fn vals(k: i32[n], v: f32[n]) -> f32[n] { let (a, b) = sort_by_key(k, v); return b; }
"""


@pytest.mark.parametrize("n", [3, 2049, 5000, (1 << 20) + 7])
def test_sort_by_key_payloads(n):
    """Each way the GPU moves the values (exec/gpu/sort.c, gpu_sort_kv): through the passes
    (4 bytes with any key, 8 with 8-byte keys), gathered by the keys' argsort (8-byte
    values with 4-byte keys, bools, rows of one tile, floats whose -0.0 or NaN bits the
    keys alone would not give back); keys or values alone."""
    rng = np.random.default_rng(n)
    for dev in DEVICES:
        g = cuk.compile(SRC3, device=dev)
        kf = (rng.integers(-30, 30, n) * 0.25).astype(np.float32)
        v8 = rng.random(n)
        ks, vs = g.fd(kf, v8)
        p = np.argsort(kf, kind="stable")
        np.testing.assert_array_equal(ks, kf[p])
        np.testing.assert_array_equal(vs, v8[p])
        kl = rng.integers(-2**40, 2**40, n) // 3**20
        v4 = rng.random(n).astype(np.float32)
        ks, vs = g.lf(kl, v4)
        p = np.argsort(~kl, kind="stable")
        np.testing.assert_array_equal(ks, kl[p])
        np.testing.assert_array_equal(vs, v4[p])
        ku = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) >> 20
        vb = rng.random(n) < 0.3
        ks, vs = g.ub(ku, vb)
        p = np.argsort(ku, kind="stable")
        np.testing.assert_array_equal(ks, ku[p])
        np.testing.assert_array_equal(vs, vb[p])
        kf[rng.random(n) < 0.1] = -0.0
        kf[rng.random(n) < 0.05] = -np.nan
        vi = np.arange(n, dtype=np.int32)
        ks, vs = g.fi(kf, vi)
        key = np.where(kf == 0, 0, kf)  # -0.0 sorts as 0.0, in its place
        p = np.argsort(key, kind="stable")
        np.testing.assert_array_equal(ks.view(np.uint32), kf[p].view(np.uint32))
        np.testing.assert_array_equal(vs, vi[p])
        ki = rng.integers(-50, 50, n).astype(np.int32)
        p = np.argsort(ki, kind="stable")
        np.testing.assert_array_equal(g.keys(ki, v4), ki[p])
        np.testing.assert_array_equal(g.vals(ki, v4), v4[p])


def ref_unique(x):
    """np.unique's values, each group (-0.0 with 0.0, every NaN) as its first element in x
    (the stable sort's first): compared bit for bit."""
    x = x.ravel()
    s = x[np.argsort(np.where(x == 0, 0, x), kind="stable")]
    if s.size == 0:
        return s
    same = s[1:] == s[:-1]
    if s.dtype.kind == "f":
        same |= np.isnan(s[1:]) & np.isnan(s[:-1])
    return s[np.concatenate([[True], ~same])]


@pytest.mark.parametrize("n", [20000, (1 << 20) + 7])
def test_unique_groups(n):
    """unique() by the GPU's hash table (exec/gpu/sort.c, gpu_unique) and by the sort
    where the distinct values are too many for it (2^22 distinct 8-byte keys): -0.0 before
    0.0 and a NaN with its sign bit set before others (each group keeps its first), the
    largest key (the table's empty slot: NaN, 2^63 - 1, 2^64 - 1), bools."""
    rng = np.random.default_rng(n)
    src = "".join("fn u_%s(x: %s[n]) -> %s[?] = unique(x);\n" % (t, t, t) for t in ("f32", "f64", "i64", "u64", "i32", "bool"))
    for dev in DEVICES:
        g = cuk.compile(src, device=dev)
        for t in ("f32", "f64"):
            x = (rng.integers(-300, 300, n) * 0.25).astype(TYPES[t])
            x[rng.random(n) < 0.01] = np.nan
            x[:40] = 1.0
            x[5], x[9], x[20], x[33] = -0.0, 0.0, -np.nan, np.nan
            want = ref_unique(x)
            got = getattr(g, "u_" + t)(x)
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
            assert np.signbit(got[got == 0][0]) and np.signbit(got[-1])
        xi = rng.integers(-2**62, 2**62, n) // 2**50
        xi[7] = np.iinfo(np.int64).max
        np.testing.assert_array_equal(g.u_i64(xi), np.unique(xi))
        xu = rng.integers(0, 2**40, n, dtype=np.uint64)
        xu[3] = np.iinfo(np.uint64).max
        np.testing.assert_array_equal(g.u_u64(xu), np.unique(xu))
        x32 = rng.integers(-1000, 1000, n).astype(np.int32)
        np.testing.assert_array_equal(g.u_i32(x32), np.unique(x32))
        xb = np.zeros(n, bool)
        np.testing.assert_array_equal(g.u_bool(xb), [False])
        xb[-1] = True
        np.testing.assert_array_equal(g.u_bool(xb), [False, True])
        if n > 1 << 20:
            many = rng.permutation(1 << 22).astype(np.int64) * 3
            many = np.concatenate([many, many[:1000]])
            np.testing.assert_array_equal(g.u_i64(many), np.arange(1 << 22, dtype=np.int64) * 3)


@pytest.mark.skipif("gpu" not in DEVICES, reason="needs a GPU")
@pytest.mark.parametrize("n", [(1 << 30) + 4099, (1 << 31) + 7])
def test_gpu_portions(n):
    """Rows of more than 2^30 keys (several portions of the onesweep passes) and of more
    than 2^31: a bijection of u32 (an odd multiplier) sorted and argsorted; checked as
    sorted, with the same sum and sum of squares (mod 2^64), and x[argsort(x)] sorted.
    Below 2^31 also sort_by_key (its values through the portions) and unique (too many
    distinct keys for the hash table: the sort and compaction)."""
    g = cuk.compile("fn s(x: u32[n]) -> u32[n] = sort(x);\n"
                    "fn a(x: u32[n]) -> i64[n] = argsort(x);\n"
                    "fn kv(x: u32[n], v: u32[n]) -> (u32[n], u32[n]) = sort_by_key(x, v);\n"
                    "fn u(x: u32[n]) -> u32[?] = unique(x);\n", device="gpu")
    x = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761) % np.uint64(1 << 32)).astype(np.uint32)
    y = g.s(x)
    assert np.all(y[1:] > y[:-1])
    for f in (lambda v: v.astype(np.uint64), lambda v: v.astype(np.uint64) * v.astype(np.uint64)):
        assert f(x).sum(dtype=np.uint64) == f(y).sum(dtype=np.uint64)
    del y
    if n < (1 << 31):
        # x's values are distinct: x[i] strictly increasing over n positions says i is
        # the argsort (a repeated position would repeat a value)
        xi = x[g.a(x)]
        assert np.all(xi[1:] > xi[:-1])
        del xi
        ks, vs = g.kv(x, np.arange(n, dtype=np.uint32))
        assert np.all(ks[1:] > ks[:-1])
        np.testing.assert_array_equal(x[vs], ks)  # distinct keys: the values are their positions
        del vs
        np.testing.assert_array_equal(g.u(x), ks)


PEAK_CHILD = """
import resource, sys
n = %d
sys.path[:0] = sys.argv[1:]
import cuk
m = cuk.compile('fn f(n: i64) -> f32 = sum(sort(rand(n, seed=2) * 2.0)[0:n:n / 8]);', device='cpu')
assert 0.0 <= float(m.f(n)) <= 16.0
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


# under scripts/check.sh's ASan+UBSan stage (conftest.py) the child carries ASan's shadow memory
@pytest.mark.skipif(bool(os.environ.get("CUK_PYTHON_CHILD_PRELOAD")), reason="ASan's shadow memory inflates the peak")
def test_sort_of_a_fused_value_stores_no_input():
    # 2^24 f32: 64 MB of output and 64 MB of keys; the input (rand(n) * 2.0) is
    # computed into the output and sorted there, not stored besides (that was 192 MB)
    base, peak = cukpath.child_peak_mb(PEAK_CHILD % 64), cukpath.child_peak_mb(PEAK_CHILD % (1 << 24))
    assert peak - base < 160, (base, peak)

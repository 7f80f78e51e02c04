"""f32 exp and log on the CPU backend (its four-lane SSE2 kernels, exec/cpu/eval.c, issue
18): within 2 ulp of the correctly rounded result (NumPy's float64 exp and log, against
the real number they round) over a dense sweep of the f32 bit patterns and every one
near the edges, specials exact (infinities, NaN quiet, overflow, gradual underflow,
exp(+-0) = 1, log(0) = -inf, log(1) = 0), and the same bits for an element wherever it
sits in a block and on one thread or two.

CUK_EXP_EXHAUSTIVE=1 sweeps every one of the 2^32 bit patterns (minutes) instead of
one in STRIDE in the finite domain."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

SRC = """
fn e(x: f32[n]) -> f32[n] = exp(x);
fn l(x: f32[n]) -> f32[n] = log(x);
fn es(x: f32) -> f32 = exp(x);
fn ls(x: f32) -> f32 = log(x);
fn smax(x: f32[r, c]) -> f32[r, c] {
    let e = exp(x - max(x, axis=1, keepdims=true));
    return e / sum(e, axis=1, keepdims=true);
}
fn lse(x: f32[r, c]) -> f32[r] = log(sum(exp(x), axis=1));
"""

EXHAUSTIVE = os.environ.get("CUK_EXP_EXHAUSTIVE") == "1"
STRIDE = 1 if EXHAUSTIVE else 21  # about 10^8 patterns of each function's finite domain
MAX_ULP = 2.0
BLOCK = 1 << 22
F32_TOP = 2.0**128  # where f32 overflows: inf stands for it in an error


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="cpu")


def f32(bits):
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


def ulp_err(y, ref):
    """|y - ref| in units of the f32 ulp at ref (float64: the true value to within 2^-29
    of an f32 ulp), subnormal spacing below 2^-126; a y that is the correctly rounded
    infinity counts 0."""
    with np.errstate(over="ignore", invalid="ignore"):
        yd = np.where(np.isinf(y), np.copysign(F32_TOP, y), y).astype(np.float64)
        ex = np.frexp(ref)[1]
        ue = np.where(ref == 0, -149, np.maximum(ex - 24, -149))
        err = np.abs(yd - ref) / np.ldexp(1.0, ue)
        r32 = ref.astype(np.float32)
    both_nan = np.isnan(y) & np.isnan(ref)
    return np.where((np.isinf(y) & (y == r32)) | both_nan, 0.0, np.where(np.isnan(err), np.inf, err))


def check_bits(fn, npfn, bits, stats):
    """fn over the f32 with these bit patterns, in blocks; worst ulp error into stats."""
    for i in range(0, len(bits), BLOCK):
        x = f32(bits[i:i + BLOCK])
        y = np.asarray(fn(x))
        with np.errstate(all="ignore"):
            ref = npfn(x.astype(np.float64))
        err = ulp_err(y, ref)
        k = int(np.argmax(err))
        if err[k] > stats["max"]:
            stats.update(max=float(err[k]), at=float(x[k]), got=float(y[k]), ref=float(ref[k]))
        stats["n"] += len(x)
        with np.errstate(over="ignore"):
            stats["exact"] += int(np.count_nonzero((y == ref.astype(np.float32)) | (np.isnan(y) & np.isnan(ref))))


def sweep(fn, npfn, ranges, windows):
    """One in STRIDE of the patterns in each [lo, hi) of ranges, one in 4099 elsewhere
    (NaN payloads, infinities, far outside the domain), and every pattern within 2^16
    of each window's centre."""
    stats = {"max": 0.0, "n": 0, "exact": 0}
    edges = [0] + [b for r in ranges for b in r] + [1 << 32]
    for k in range(0, len(edges) - 1):
        lo, hi = edges[k], edges[k + 1]
        step = STRIDE if k % 2 else (1 if EXHAUSTIVE else 4099)
        for s in range(lo, hi, BLOCK * step):
            check_bits(fn, npfn, np.arange(s, min(hi, s + BLOCK * step), step, dtype=np.uint64), stats)
    if not EXHAUSTIVE:
        for c in windows:
            b = bits_of(c)
            check_bits(fn, npfn, np.arange(max(b - (1 << 16), 0), min(b + (1 << 16), 1 << 32), dtype=np.uint64),
                       stats)
    print("%s: %d patterns, max %.4f ulp at x=%r (got %r, exact %r), %.4f%% correctly rounded" %
          (npfn.__name__, stats["n"], stats["max"], stats.get("at"), stats.get("got"), stats.get("ref"),
           100.0 * stats["exact"] / stats["n"]))
    assert stats["max"] <= MAX_ULP, stats


def bits_of(v):
    return int(np.float32(v).view(np.uint32))


def test_exp_within_2_ulp(m):
    # finite results: [-0, -104] and [0, 89.5] (beyond, 0 and inf)
    ranges = [(0, bits_of(89.5)), (bits_of(-0.0), bits_of(-104.0))]
    windows = [88.72283, -87.33654, -103.97208, -103.2789, 87.0, -87.0, 0.34657359, -0.34657359, 1.0, -1.0,
               2.0**-25, -2.0**-25]
    sweep(lambda x: m.e(x), np.exp, ranges, windows)


def test_log_within_2_ulp(m):
    # every positive finite f32 (negatives, infinities and NaN: the coarse sweep)
    ranges = [(0, bits_of(np.inf))]
    windows = [1.0, 0.70710677, 1.4142135, 2.0**-126, 2.0**-149 * 65536, 3.4028235e38, 0.5, 2.0]
    sweep(lambda x: m.l(x), np.log, ranges, windows)


def quiet_nan(v):
    return np.isnan(v) and bool(np.float32(v).view(np.uint32) & 0x00400000)


def test_exp_specials(m):
    snan = f32([0x7F800001, 0xFF800123])
    qnan = f32([0x7FC00000, 0xFFC00000])
    x = np.concatenate([np.array([-np.inf, np.inf, 0.0, -0.0, 88.72283172607421875, 88.72284, 88.8, 89.0, 100.0,
                                  1e30, -87.5, -100.0, -103.27893, -103.97207, -103.972084, -104.0, -150.0,
                                  -1e30, 2.0**-149, -2.0**-149], np.float32), snan, qnan])
    y = np.asarray(m.e(x))
    assert y[0] == 0 and not np.signbit(y[0])  # exp(-inf) = +0
    assert y[1] == np.inf
    assert y[2] == 1 and y[3] == 1  # exactly, from +0 and -0
    assert y[4] == np.float32(3.40279852e38)  # the last finite: correctly rounded
    assert np.all(y[5:10] == np.inf)  # past log(FLT_MAX) ~ 88.7228392
    assert y[10] > 0 and y[10] < np.finfo(np.float32).tiny  # the first subnormal results
    assert y[11] == np.float32(np.exp(np.float64(-100.0)))  # subnormal, correctly rounded
    assert y[12] == np.float32(2.0**-149) and y[13] == np.float32(2.0**-149)  # the last nonzero
    assert np.all(y[14:18] == 0) and not np.any(np.signbit(y[14:18]))
    assert y[18] == 1 and y[19] == 1
    for v in y[20:]:
        assert quiet_nan(v)
    # a lane's special never disturbs its neighbours in the same four
    mixed = np.array([np.nan, 1.0, np.inf, -1.0, -200.0, 0.5, 200.0, 2.0], np.float32)
    ym = np.asarray(m.e(mixed))
    plain = np.asarray(m.e(mixed[[1, 3, 5, 7]]))
    assert ym[[1, 3, 5, 7]].tobytes() == plain.tobytes()
    assert np.isnan(ym[0]) and ym[2] == np.inf and ym[4] == 0 and ym[6] == np.inf


def test_log_specials(m):
    snan = f32([0x7F800001, 0xFF800123])
    x = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, -1.0, -1e-45, 1.0, np.nan, 2.0**-149, 2.0**-126,
                                  3.4028235e38], np.float32), snan])
    y = np.asarray(m.l(x))
    assert y[0] == -np.inf and y[1] == -np.inf
    assert y[2] == np.inf
    assert np.all(np.isnan(y[3:6]))
    assert y[6] == 0 and not np.signbit(y[6])  # log(1) = +0 exactly
    assert np.isnan(y[7])
    assert y[8] == np.float32(np.log(2.0**-149))
    assert y[9] == np.float32(np.log(2.0**-126))
    assert y[10] == np.float32(np.log(np.float64(np.float32(3.4028235e38))))
    for v in y[11:]:
        assert quiet_nan(v)


def test_same_bits_wherever_an_element_sits(m):
    # every offset into a four-lane block and a chunk, tails of every length, one-element
    # calls and the scalar functions (the interpreter's one-element path) agree bitwise
    rng = np.random.default_rng(3)
    x = np.concatenate([(rng.standard_normal(5003) * 30).astype(np.float32),
                        np.array([np.nan, np.inf, -np.inf, -95.0, 88.7, 0.0], np.float32)])
    xl = np.abs(x)
    ye, yl = np.asarray(m.e(x)).tobytes(), np.asarray(m.l(xl)).tobytes()
    for k in range(1, 9):
        assert np.asarray(m.e(x[k:])).tobytes() == ye[4 * k:]
        assert np.asarray(m.l(xl[k:])).tobytes() == yl[4 * k:]
        assert np.asarray(m.e(x[:-k])).tobytes() == ye[:-4 * k]
    ye_a = np.frombuffer(ye, np.float32)
    yl_a = np.frombuffer(yl, np.float32)
    for i in list(range(0, 12)) + list(range(len(x) - 8, len(x))):
        assert np.asarray(m.e(x[i:i + 1])).tobytes() == ye_a[i:i + 1].tobytes()
        assert np.float32(m.es(x[i])).tobytes() == ye_a[i].tobytes(), (x[i], m.es(x[i]), ye_a[i])
        assert np.float32(m.ls(xl[i])).tobytes() == yl_a[i].tobytes(), (xl[i], m.ls(xl[i]), yl_a[i])


def test_softmax_and_logsumexp_match_numpy(m):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((300, 257)) * 10).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(m.smax(x)), e / e.sum(axis=1, keepdims=True), rtol=3e-6, atol=1e-30)
    xs = x / 10
    np.testing.assert_allclose(np.asarray(m.lse(xs)), np.log(np.exp(xs.astype(np.float64)).sum(axis=1)), rtol=3e-6)


CHILD = """
import hashlib, sys
sys.path.insert(0, %r)
import numpy as np
import test_cpu_exp as t
m = t.cuk.compile(t.SRC, device="cpu")
rng = np.random.default_rng(7)
x = (rng.standard_normal((1 << 21) + 3) * 40).astype(np.float32)
x[rng.integers(0, len(x), 1000)] = np.nan
x[rng.integers(0, len(x), 1000)] = -np.inf
h = hashlib.sha256()
x2 = x[:1 << 21] / 40
for y in (m.e(x), m.e(x[1:]), m.l(np.abs(x)), m.smax(x2.reshape(-1, 256)), m.lse(x2.reshape(-1, 64))):
    h.update(np.asarray(y).tobytes())
print(h.hexdigest())
""" % os.path.dirname(os.path.abspath(__file__))


def test_same_bits_on_one_thread_and_two():
    # the thread pool is sized once per process: each count in a child of its own
    outs = []
    for threads in ("1", "2"):
        r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                           env=cukpath.python_child_env(CUK_THREADS=threads))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        outs.append(r.stdout.strip().splitlines()[-1])
    assert outs[0] == outs[1]

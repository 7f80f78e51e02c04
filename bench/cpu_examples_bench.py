#!/usr/bin/env python3
"""Every example in examples/ on the CPU backend against NumPy (issue 18), in one run.

    python3 bench/cpu_examples_bench.py [--runs 5] [--only saxpy,softmax]

Each row calls an example's computational function through the Python API
(cuk.compile("examples/X.cuk", device="cpu"), CUK_THREADS=2 unless set) and the same
computation written the way a NumPy user would (np.histogram, np.bincount,
np.add.reduceat, boolean indexing, np.cumsum, ...), on the same inputs; checks that the
two agree (integers exactly, floats with allclose; the random-number examples, whose
generators differ, within six standard deviations of the expected value); then times
them interleaved (cuk, NumPy, cuk, NumPy, ...: this machine's memory bandwidth moves
between runs) and prints the medians of `runs` calls after one warm-up each, as one
markdown table. Where an example has only main() with small fixed sizes, or its work
is not in a function one can call with arrays, the row's function is written in
SRC below (marked "bench source" in the table), as a user of the example would write
it; where it adds one wrapper to the example's own text, it says "example + wrapper"."""
import argparse
import datetime
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("CUK_THREADS", "2")  # read once, when cuk first runs a function

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import cukpath  # noqa: E402,F401
import cuk  # noqa: E402

EX = os.path.join(ROOT, "examples")

# The examples whose work is only in main(), as functions a user would write.
SRC = """
fn hist(x: f32[n]) -> i64[12] = histogram(x, 12, -3.0, 3.0);
fn hist_randn(n: i64) -> i64[12] = histogram(randn(n, seed=11), 12, -3.0, 3.0);
fn dice(d1: i64[n], d2: i64[n]) -> i64[13] = bincount(d1 + d2, 13);
fn pips(d1: i64[n], d2: i64[n]) -> i64[13] = reduce_by_index(zeros(13, dtype=i64), add, d1 + d2, d1);

fn csum(x: i64[n]) -> i64[n] = cumsum(x);
fn csum_ex(x: i64[n]) -> i64[n] = cumsum(x, exclusive=true);
fn cmax(x: i64[n]) -> i64[n] = cummax(x);
fn odd_count(x: i64[n]) -> i64[n] = scan(|a, b| a + b, 0, x % 2);

fn seg_sum(v: f32[n], offs: i64[k]) -> f32[?] = sum(v, segments=offs);
fn seg_mean(v: f32[n], offs: i64[k]) -> f32[?] = mean(v, segments=offs);
fn seg_max(v: f32[n], offs: i64[k]) -> f32[?] = max(v, segments=offs);
fn seg_run(v: f32[n], offs: i64[k]) -> i64 = max(cumsum(i64(v > 0.5), segments=offs));

fn extremes(x: f32[n]) -> (f32, f32, i64) = (min(x), max(x), argmax(x));
"""

# Added to an example's own text: a function main() computes inline.
WRAP = {
    "mandelbrot": "\nfn image(xs: f32[w], ys: f32[h]) -> i32[h, w] = mandel(reshape(xs, 1, w), reshape(ys, h, 1));\n",
    "kmeans": """
fn lloyd(px: f32[n], py: f32[n], cx: f32[k], cy: f32[k]) -> (f32[k], f32[k]) {
    let a = nearest(px, py, cx, cy);
    let cnt = bincount(a, k);
    return (reduce_by_index(zeros(k), add, a, px) / f32(cnt), reduce_by_index(zeros(k), add, a, py) / f32(cnt));
}
""",
}

_mods = {}


def example(name):
    if name not in _mods:
        path = os.path.join(EX, name + ".cuk")
        if name in WRAP:
            with open(path) as f:
                _mods[name] = cuk.compile(f.read() + WRAP[name], device="cpu", name=path)
        else:
            _mods[name] = cuk.compile(path, device="cpu")
    return _mods[name]


def bench():
    if "bench" not in _mods:
        _mods["bench"] = cuk.compile(SRC, device="cpu", name="cpu_examples_bench.py")
    return _mods["bench"]


def exact(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.array_equal(a, b), (a.shape, b.shape, a.ravel()[:8], b.ravel()[:8])


def close(rtol=1e-4, atol=1e-6):
    def check(a, b):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True), np.max(np.abs(a - b))
    return check


def rng():
    return np.random.default_rng(2026)


# Each case: (example, row label, size, source, setup) with setup() -> (cuk call, NumPy
# call, check(cuk result, NumPy result)). Inputs are made in setup, so only one case's
# arrays live at a time.

def c_compaction():
    x = rng().integers(0, 50, 1 << 24)
    m = example("compaction")
    return lambda: m.above(x, 25), lambda: x[x > 25], exact


def c_spmv():
    g = rng()
    nrows = ncols = 1 << 20
    lens = g.integers(0, 33, nrows)  # 16 a row on average, some rows empty
    rowptr = np.concatenate(([0], np.cumsum(lens)))
    cols = g.integers(0, ncols, rowptr[-1])
    vals = g.standard_normal(rowptr[-1], np.float32)
    x = g.standard_normal(ncols, np.float32)
    m = example("csr_spmv")

    def npy():
        # reduceat over the rows that are not empty (it repeats an element for an empty
        # one, and refuses a start at the end)
        y = np.zeros(nrows, np.float32)
        y[lens > 0] = np.add.reduceat(vals * x[cols], rowptr[:-1][lens > 0])
        return y
    return lambda: m.spmv(rowptr, cols, vals, x), npy, close(1e-4, 1e-4)


def saxpy_case(name):
    """a * x + y on 2^25 f32, by the saxpy of examples/<name>.cuk."""
    g = rng()
    x, y = g.random(1 << 25, np.float32), g.random(1 << 25, np.float32)
    m = example(name)
    return lambda: m.saxpy(np.float32(2), x, y), lambda: np.float32(2) * x + y, exact


def c_design_saxpy():
    return saxpy_case("design_example")


def c_design_rms():
    x = rng().random(1 << 26, np.float32)
    m = example("design_example")
    return lambda: m.rms(x), lambda: np.sqrt(np.mean(x * x)), close(1e-5)


def np_softmax(x):
    """Softmax along rows, as NumPy users write it."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def c_design_softmax():
    x = rng().random((16384, 1024), np.float32) * 10
    m = example("design_example")
    return lambda: m.softmax(x), lambda: np_softmax(x), close(1e-5, 1e-8)


def c_hist():
    x = rng().standard_normal(1 << 24, np.float32)
    m = bench()
    return lambda: m.hist(x), lambda: np.histogram(x, 12, (-3.0, 3.0))[0], exact


def normal_counts(n):
    """The expected counts of histogram(randn(n), 12, -3, 3) and their standard deviations."""
    from math import erf, sqrt
    edges = np.linspace(-3, 3, 13)
    p = np.diff([0.5 * (1 + erf(e / sqrt(2))) for e in edges])
    return n * p, np.sqrt(n * p * (1 - p))


def c_hist_randn():
    n = 1 << 24
    m = bench()

    def npy():
        return np.histogram(np.random.default_rng(11).standard_normal(n, np.float32), 12, (-3.0, 3.0))[0]

    def check(a, b):
        mu, sd = normal_counts(n)
        for h in (a, b):
            assert np.all(np.abs(h - mu) < 6 * sd), (h, mu)
    return lambda: m.hist_randn(n), npy, check


def dice():
    g = rng()
    n = 1 << 24
    return g.integers(1, 7, n), g.integers(1, 7, n)


def c_dice():
    d1, d2 = dice()
    m = bench()
    return lambda: m.dice(d1, d2), lambda: np.bincount(d1 + d2, minlength=13), exact


def c_pips():
    d1, d2 = dice()
    m = bench()
    # np.bincount's weights are float64: exact for these sums (< 2^53)
    return lambda: m.pips(d1, d2), lambda: np.bincount(d1 + d2, weights=d1, minlength=13).astype(np.int64), exact


def jacobi_in():
    g = rng()
    n = 1 << 24
    return g.random(n), g.random(n)


def c_jacobi_step():
    x, b = jacobi_in()
    m = example("jacobi")

    def npy():
        xp = np.pad(x, 1)
        return (b + xp[:-2] + xp[2:]) / 4.0
    return lambda: m.step(x, b), npy, exact


def c_jacobi_residual():
    x, b = jacobi_in()
    m = example("jacobi")

    def npy():
        xp = np.pad(x, 1)
        return np.abs(4.0 * x - xp[:-2] - xp[2:] - b).max()
    return lambda: m.residual(x, b), npy, exact


def kmeans_in():
    g = rng()
    n, k = 1 << 22, 3
    label = np.arange(n) % k
    tx, ty = np.float32([0, 5, 0]), np.float32([0, 5, 5])
    px = tx[label] + g.standard_normal(n, np.float32)
    py = ty[label] + g.standard_normal(n, np.float32)
    return px, py, px[[0, 2, 4]].copy(), py[[0, 2, 4]].copy()


def nearest_np(px, py, cx, cy):
    dx = px[:, None] - cx
    dy = py[:, None] - cy
    return np.argmin(dx * dx + dy * dy, axis=1)


def c_kmeans_nearest():
    px, py, cx, cy = kmeans_in()
    m = example("kmeans")
    return lambda: m.nearest(px, py, cx, cy), lambda: nearest_np(px, py, cx, cy), exact


def c_kmeans_lloyd():
    px, py, cx, cy = kmeans_in()
    m = example("kmeans")

    def npy():
        a = nearest_np(px, py, cx, cy)
        cnt = np.bincount(a, minlength=3)
        return np.bincount(a, px, 3) / cnt, np.bincount(a, py, 3) / cnt

    def check(a, b):
        for u, v in zip(a, b):  # f32 sums of 1.4M points against bincount's f64
            close(1e-4, 1e-4)(u, v)
    return lambda: m.lloyd(px, py, cx, cy), npy, check


def c_mandelbrot():
    w, h = 512, 256
    xs = np.linspace(-2.0, 1.0, w, dtype=np.float32)
    ys = np.linspace(-1.0, 1.0, h, dtype=np.float32)
    m = example("mandelbrot")

    def npy():
        cr = np.broadcast_to(xs, (h, w)).copy()
        ci = np.broadcast_to(ys[:, None], (h, w)).copy()
        zr = np.zeros((h, w), np.float32)
        zi = np.zeros((h, w), np.float32)
        k = np.zeros((h, w), np.int32)
        for _ in range(100):
            live = zr * zr + zi * zi < 4
            if not live.any():
                break
            t = zr[live] * zr[live] - zi[live] * zi[live] + cr[live]
            zi[live] = 2 * zr[live] * zi[live] + ci[live]
            zr[live] = t
            k += live
        return k
    return lambda: m.image(xs, ys), npy, exact


def c_monte_carlo():
    n = 1 << 24
    m = example("monte_carlo_pi")

    def npy():
        g = np.random.default_rng(1)
        x, y = g.random(n, np.float32), g.random(n, np.float32)
        return 4.0 * np.count_nonzero(x * x + y * y <= 1.0) / n

    def check(a, b):
        sd = 4 * np.sqrt(np.pi / 4 * (1 - np.pi / 4) / n)
        assert abs(a - np.pi) < 6 * sd and abs(b - np.pi) < 6 * sd, (a, b)
    return lambda: m.estimate(n, 1), npy, check


def scan_in():
    return rng().integers(0, 10, 1 << 24)


def c_csum():
    x = scan_in()
    return lambda: bench().csum(x), lambda: np.cumsum(x), exact


def c_csum_ex():
    x = scan_in()

    def npy():
        c = np.cumsum(x)
        return np.concatenate(([0], c[:-1]))
    return lambda: bench().csum_ex(x), npy, exact


def c_cmax():
    x = scan_in()
    return lambda: bench().cmax(x), lambda: np.maximum.accumulate(x), exact


def c_odd():
    x = scan_in()
    return lambda: bench().odd_count(x), lambda: np.cumsum(x % 2), exact


def c_saxpy():
    return saxpy_case("saxpy")


def seg_in():
    k = 65536  # the example's segment lengths (7 i) % 2091, 65536 of them
    lens = (np.arange(k) * 7) % 2091
    offs = np.concatenate(([0], np.cumsum(lens)))
    return rng().random(offs[-1], np.float32), offs, lens


def c_seg_sum():
    v, offs, lens = seg_in()

    def npy():
        s = np.add.reduceat(v, offs[:-1])
        s[lens == 0] = 0
        return s
    return lambda: bench().seg_sum(v, offs), npy, close(1e-5)


def c_seg_mean():
    v, offs, lens = seg_in()

    def npy():
        s = np.add.reduceat(v, offs[:-1])
        s[lens == 0] = 0
        with np.errstate(invalid="ignore"):
            return s / lens.astype(np.float32)
    return lambda: bench().seg_mean(v, offs), npy, close(1e-5)


def c_seg_max():
    v, offs, lens = seg_in()

    def npy():
        s = np.maximum.reduceat(v, offs[:-1])
        s[lens == 0] = -np.inf
        return s
    return lambda: bench().seg_max(v, offs), npy, exact


def c_seg_run():
    v, offs, lens = seg_in()

    def npy():
        c = np.cumsum(v > 0.5)
        start = np.concatenate(([0], c))[offs[:-1]]
        return (c - np.repeat(start, lens)).max()
    return lambda: bench().seg_run(v, offs), npy, exact


def softmax_in():
    return rng().random((16384, 1000), np.float32) * 10


def c_softmax():
    x = softmax_in()
    m = example("softmax")
    return lambda: m.softmax_rows(x), lambda: np_softmax(x), close(1e-5, 1e-8)


def c_logsumexp():
    x = softmax_in()
    m = example("softmax")

    def npy():
        mx = x.max(axis=1)
        return np.log(np.exp(x - mx[:, None]).sum(axis=1)) + mx
    return lambda: m.logsumexp_rows(x), npy, close(1e-5)


def stats_in():
    return rng().standard_normal(1 << 26, np.float32) * 2 + 5


def c_moments():
    x = stats_in()
    m = example("statistics")
    return lambda: m.moments(x), lambda: x.mean(), close(1e-5)


def c_variance():
    x = stats_in()
    m = example("statistics")
    return lambda: m.variance(x), lambda: x.var(ddof=1), close(1e-4)


def c_extremes():
    x = stats_in()
    return lambda: bench().extremes(x), lambda: (x.min(), x.max(), x.argmax()), lambda a, b: exact(list(a), list(b))


# (example, row, size, source, setup)
CASES = [
    ("compaction", "`above`: `x[x > t]`", "2^24 i64", "example", c_compaction),
    ("csr_spmv", "`spmv`", "2^20 rows, 2^24 nonzeros, f32", "example", c_spmv),
    ("design_example", "`saxpy`", "2^25 f32", "example", c_design_saxpy),
    ("design_example", "`rms`", "2^26 f32", "example", c_design_rms),
    ("design_example", "`softmax`", "16384 x 1024 f32", "example", c_design_softmax),
    ("histogram", "`histogram(x, 12, -3, 3)`", "2^24 f32", "bench source", c_hist),
    ("histogram", "`histogram(randn(n), ...)` (generated)", "2^24", "bench source", c_hist_randn),
    ("histogram", "`bincount(d1 + d2, 13)`", "2^24 i64", "bench source", c_dice),
    ("histogram", "`reduce_by_index(..., add, d1 + d2, d1)`", "2^24 i64", "bench source", c_pips),
    ("jacobi", "`step`", "2^24 f64", "example", c_jacobi_step),
    ("jacobi", "`residual`", "2^24 f64", "example", c_jacobi_residual),
    ("kmeans", "`nearest`", "2^22 points, k = 3", "example", c_kmeans_nearest),
    ("kmeans", "one Lloyd step (`lloyd`)", "2^22 points, k = 3", "example + wrapper", c_kmeans_lloyd),
    ("mandelbrot", "`mandel` over a grid (`image`)", "256 x 512", "example + wrapper", c_mandelbrot),
    ("monte_carlo_pi", "`estimate` (generated)", "2^24 points", "example", c_monte_carlo),
    ("prefix_sums", "`cumsum(x)`", "2^24 i64", "bench source", c_csum),
    ("prefix_sums", "`cumsum(x, exclusive=true)`", "2^24 i64", "bench source", c_csum_ex),
    ("prefix_sums", "`cummax(x)`", "2^24 i64", "bench source", c_cmax),
    ("prefix_sums", "`scan(\\|a, b\\| a + b, 0, x % 2)`", "2^24 i64", "bench source", c_odd),
    ("saxpy", "`saxpy`", "2^25 f32", "example", c_saxpy),
    ("segmented_sums", "`sum(v, segments=offs)`", "65536 segments, 68.5M f32", "bench source", c_seg_sum),
    ("segmented_sums", "`mean(v, segments=offs)`", "65536 segments, 68.5M f32", "bench source", c_seg_mean),
    ("segmented_sums", "`max(v, segments=offs)`", "65536 segments, 68.5M f32", "bench source", c_seg_max),
    ("segmented_sums", "`max(cumsum(i64(v > 0.5), segments=offs))`", "65536 segments, 68.5M f32", "bench source",
     c_seg_run),
    ("softmax", "`softmax_rows`", "16384 x 1000 f32", "example", c_softmax),
    ("softmax", "`logsumexp_rows`", "16384 x 1000 f32", "example", c_logsumexp),
    ("statistics", "`moments` (the mean)", "2^26 f32", "example", c_moments),
    ("statistics", "`variance`", "2^26 f32", "example", c_variance),
    ("statistics", "`(min(x), max(x), argmax(x))`", "2^26 f32", "bench source", c_extremes),
]


def interleaved(f, g, runs):
    """Medians (ms) of f and g, called alternately runs times after one warm-up each."""
    f()
    g()
    tf, tg = [], []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        tf.append(time.perf_counter() - t)
        t = time.perf_counter()
        g()
        tg.append(time.perf_counter() - t)
    return statistics.median(tf) * 1e3, statistics.median(tg) * 1e3


def machine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "%s, %s, %d cores" % (platform.node(), cpu, os.cpu_count() or 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated example names (e.g. saxpy,softmax)")
    a = ap.parse_args()
    only = [s for s in a.only.split(",") if s]
    unknown = set(only) - {c[0] for c in CASES}
    if unknown:
        ap.error("no such example: %s" % ", ".join(sorted(unknown)))
    print("CPU backend examples against NumPy: %s; %s; NumPy %s; CUK_THREADS=%s; median of %d interleaved calls (ms)\n"
          % (datetime.date.today().isoformat(), machine(), np.__version__, os.environ["CUK_THREADS"], a.runs))
    print("| example | size | cuk %s threads ms | NumPy ms | cuk/NumPy speedup |" % os.environ["CUK_THREADS"])
    print("| --- | --- | ---: | ---: | ---: |")
    wrong = 0
    for ex, row, size, source, setup in CASES:
        if only and ex not in only:
            continue
        label = "%s: %s%s" % (ex, row, "" if source == "example" else " (%s)" % source)
        f, g, check = setup()
        try:
            check(f(), g())
        except AssertionError as e:
            print("| %s | %s | WRONG: %s | | |" % (label, size, str(e)[:200].replace("\n", " ")))
            wrong += 1
            continue
        tc, tn = interleaved(f, g, a.runs)
        print("| %s | %s | %.2f | %.2f | %.2fx |" % (label, size, tc, tn, tn / tc), flush=True)
    if wrong:
        sys.exit("%d rows disagree with NumPy" % wrong)


if __name__ == "__main__":
    main()

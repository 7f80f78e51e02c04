#!/usr/bin/env python3
"""The issue-12 GPU benchmark: the language's part 2 (histograms, bincount,
reduce_by_index, compaction, filters feeding reductions, segmented sums, the stencil
over pad) written the way users write them, called through the Python API on PyTorch
tensors, against PyTorch (eager, and torch.compile where it applies) and CuPy in the
same run. CUDA events, median of --iters runs after 3 warm-ups. Each cuk result is
compared with the peer's before it is timed.

GB/s counts the bytes each job must move (the issue's convention): a histogram or a
bincount reads its input once (4 bytes an element); compaction at 50% kept reads 4
bytes and writes 2 per element; sum(filter(p, a * b)) reads 8; reduce_by_index reads
an i64 index and an f32 value (12 bytes a value); a segmented sum reads 4; the stencil
reads and writes 4 each (8).

usage: part2_bench.py [--logn 28] [--iters 20] [--no-compile] [--only a,b]
       part2_bench.py --check-cpu     (no GPU: the programs on the CPU backend at small
                                       sizes against NumPy; what CI can run)
"""
import os
import sys

import numpy as np

import cuk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import gbs_cases, job_args, job_setup, print_gbs_table  # noqa: E402  (bench/timing.py)

SRC = """
fn hist256(x: f32[n]) -> i64[256] = histogram(x, 256, 0.0, 1.0);
fn hist1024(x: f32[n]) -> i64[1024] = histogram(x, 1024, 0.0, 1.0);
fn binc(i: i64[n]) -> i64[1024] = bincount(i, 1024);
fn rbi(d: f32[m], i: i64[n], v: f32[n]) -> f32[m] = reduce_by_index(d, add, i, v);
fn compact(x: f32[n]) -> f32[?] = x[x > 0.5];
fn sumfilter(a: f32[n], b: f32[n]) -> f32 = sum(filter(|v| v > 0.0, a * b));
fn sumprod(a: f32[n], b: f32[n]) -> f32 = sum(a * b);
fn segsum(x: f32[n], o: i64[k]) -> f32[?] = sum(x, segments=o);
fn stencil(x: f32[r, c]) -> f32[r, c] {
    let p = pad(x, 1);
    return 0.25 * (p[0:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, 0:-2] + p[1:-1, 2:]);
}
"""

CASES = ["copy", "hist256", "hist1024", "bincount", "rbi", "compact", "sumfilter", "sumprod",
         "segsum_1000", "segsum_irregular", "stencil"]


def offsets_regular(n, seg):
    return np.arange(0, n + 1, seg, dtype=np.int64) if n % seg == 0 else \
        np.append(np.arange(0, n, seg, dtype=np.int64), n)


def offsets_irregular(rng, n, mean):
    """Segment lengths drawn from an exponential of the given mean (many short, a few
    long ones, some empty)."""
    lens = np.floor(rng.exponential(mean, size=2 * n // mean + 16)).astype(np.int64)
    o = np.concatenate([[0], np.cumsum(lens)])
    o = o[o < n]
    return np.append(o, n).astype(np.int64)


def check_cpu():
    """The programs on the CPU backend against NumPy at small sizes (no GPU needed)."""
    m = cuk.compile(SRC, device="cpu", name="part2_bench.py")
    rng = np.random.default_rng(1)
    n = 10007
    x = rng.random(n, dtype=np.float32)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    i = rng.integers(0, 1024, n)
    np.testing.assert_array_equal(m.hist256(x), np.histogram(x, 256, (0.0, 1.0))[0])
    np.testing.assert_array_equal(m.hist1024(x), np.histogram(x, 1024, (0.0, 1.0))[0])
    np.testing.assert_array_equal(m.binc(i), np.bincount(i, minlength=1024))
    d = np.zeros(1000, np.float32)
    want = d.copy()
    np.add.at(want, i % 1000, a)
    np.testing.assert_allclose(m.rbi(d, i % 1000, a), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(m.compact(x), x[x > 0.5])
    p = a * b
    np.testing.assert_allclose(m.sumfilter(a, b), p[p > 0].sum(dtype=np.float64), rtol=1e-4)
    np.testing.assert_allclose(m.sumprod(a, b), p.sum(dtype=np.float64), rtol=1e-3, atol=1e-3)
    for o in (offsets_regular(n, 1000), offsets_irregular(rng, n, 1000)):
        want = [x[o[s]:o[s + 1]].sum(dtype=np.float64) for s in range(len(o) - 1)]
        np.testing.assert_allclose(m.segsum(x, o), want, rtol=1e-4, atol=1e-4)
    g = rng.random((37, 53), dtype=np.float32)
    q = np.pad(g, 1)
    np.testing.assert_allclose(m.stencil(g), 0.25 * (q[:-2, 1:-1] + q[2:, 1:-1] + q[1:-1, :-2] + q[1:-1, 2:]),
                               rtol=1e-6)
    print("part2_bench --check-cpu: every program matches NumPy")


def main():
    a = job_args(20, no_compile=True)
    if a.check_cpu:
        return check_cpu()
    only, torch, cp, m, dev, n, g = job_setup(a, SRC, "part2_bench.py", CASES)
    x = torch.rand(n, device=dev, generator=g)
    print("n = 2^%d" % a.logn)

    rows = []
    compiled, case = gbs_cases(a, only, rows)

    cx = cp.from_dlpack(x) if cp is not None else None
    case("copy", 8 * n, lambda: torch.empty_like(x).copy_(x), [], lambda: None)

    def chk_hist(fn, bins):
        want = torch.histc(x, bins, 0.0, 1.0).to(torch.int64)
        got = fn(x)
        # histc and NumPy's rule agree except possibly at bin edges (float rounding of
        # the bin of a value): allow a handful of elements to move between bins
        diff = (got - want).abs().sum().item()
        assert got.sum().item() == n and diff <= n // 10**6 + 8, "sum %d, moved %d" % (got.sum().item(), diff)

    for bins, fn in ((256, m.hist256), (1024, m.hist1024)):
        peers = [("torch.histc", lambda b=bins: torch.histc(x, b, 0.0, 1.0))]
        if cp is not None:
            peers.append(("cupy.histogram", lambda b=bins: cp.histogram(cx, b, (0.0, 1.0))))
        case("hist%d" % bins, 4 * n, lambda f=fn: f(x), peers, lambda f=fn, b=bins: chk_hist(f, b))

    idx = torch.randint(0, 1024, (n,), device=dev, generator=g)
    peers = [("torch.bincount", lambda: torch.bincount(idx, minlength=1024))]
    if cp is not None:
        cidx = cp.from_dlpack(idx)
        peers.append(("cupy.bincount", lambda: cp.bincount(cidx, minlength=1024)))

    def chk_binc():
        assert torch.equal(m.binc(idx), torch.bincount(idx, minlength=1024))
    case("bincount", 8 * n, lambda: m.binc(idx), peers, chk_binc)
    del idx

    nv = n // 4  # 2^26 values into 2^20 bins
    ridx = torch.randint(0, 1 << 20, (nv,), device=dev, generator=g)
    vals = torch.rand(nv, device=dev, generator=g)
    dest = torch.zeros(1 << 20, device=dev)

    def chk_rbi():
        want = torch.zeros(1 << 20, device=dev).index_add_(0, ridx, vals)
        torch.testing.assert_close(m.rbi(dest, ridx, vals), want, rtol=1e-4, atol=1e-3)
    case("rbi", 12 * nv, lambda: m.rbi(dest, ridx, vals),
         [("torch index_add_", lambda: torch.zeros(1 << 20, device=dev).index_add_(0, ridx, vals))], chk_rbi)
    del ridx, vals

    def chk_compact():
        assert torch.equal(m.compact(x), x[x > 0.5])
    peers = [("torch x[x > 0.5]", lambda: x[x > 0.5])]
    if cp is not None:
        peers.append(("cupy x[x > 0.5]", lambda: cx[cx > 0.5]))
    case("compact", 6 * n, lambda: m.compact(x), peers, chk_compact)

    y = torch.randn(n, device=dev, generator=g)
    z = torch.randn(n, device=dev, generator=g)

    def sf(u, w):
        p = u * w
        return torch.where(p > 0, p, 0).sum()
    sfc = compiled(sf)

    def chk_sf():
        torch.testing.assert_close(m.sumfilter(y, z), sf(y, z), rtol=1e-3, atol=1e-1)
    case("sumfilter", 8 * n, lambda: m.sumfilter(y, z),
         [("torch eager", lambda: sf(y, z)), ("torch.compile", sfc and (lambda: sfc(y, z)))], chk_sf)

    def chk_sp():
        torch.testing.assert_close(m.sumprod(y, z), (y * z).sum(), rtol=1e-3, atol=1e-1)
    case("sumprod", 8 * n, lambda: m.sumprod(y, z), [("torch eager", lambda: (y * z).sum())], chk_sp)
    del y, z

    rng = np.random.default_rng(2)
    for name, o in (("segsum_1000", offsets_regular(n, 1000)), ("segsum_irregular", offsets_irregular(rng, n, 1000))):
        ot = torch.from_numpy(o).to(dev)
        lengths = ot[1:] - ot[:-1]

        def chk_seg(ot=ot, lengths=lengths):
            want = torch.segment_reduce(x, "sum", lengths=lengths, unsafe=True)
            torch.testing.assert_close(m.segsum(x, ot), want, rtol=1e-4, atol=1e-2)
        case(name, 4 * n, lambda ot=ot: m.segsum(x, ot),
             [("torch.segment_reduce", lambda lengths=lengths: torch.segment_reduce(x, "sum", lengths=lengths,
                                                                                 unsafe=True))], chk_seg)

    side = 1 << (a.logn // 2)
    s = torch.rand(side, side, device=dev, generator=g)

    def st(u):
        p = torch.nn.functional.pad(u, (1, 1, 1, 1))
        return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
    stc = compiled(st)

    def chk_st():
        torch.testing.assert_close(m.stencil(s), st(s), rtol=1e-6, atol=1e-6)
    case("stencil", 8 * side * side, lambda: m.stencil(s),
         [("torch eager", lambda: st(s)), ("torch.compile", stc and (lambda: stc(s)))], chk_st)

    print_gbs_table(rows, 8 * n)


if __name__ == "__main__":
    sys.exit(main())

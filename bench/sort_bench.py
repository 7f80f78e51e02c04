#!/usr/bin/env python3
"""The issue-14 GPU benchmark: sort, argsort, sort_by_key, unique and searchsorted as
users write them, called through the Python API on PyTorch tensors, against CuPy (CUB's
radix sort) and PyTorch in the same run. CUDA events, median of --iters runs after 3
warm-ups (bench/timing.py); each cuk result is compared with the peer's before it is
timed. GKey/s = keys (queries for searchsorted) / time (top_k: 4 bytes a key read,
so GB/s = 4 x GKey/s).

usage: sort_bench.py [--logn 28] [--iters 10] [--only a,b]
       sort_bench.py --check-cpu   (no GPU: the programs on the CPU backend against NumPy)
"""
import os
import sys

import numpy as np

import cuk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import job_args, job_setup, time_case, torch_median_ms  # noqa: E402  (bench/timing.py)

SRC = """
fn sort_f32(x: f32[n]) -> f32[n] = sort(x);
fn sort_i32(x: i32[n]) -> i32[n] = sort(x);
fn sort_u64(x: u64[n]) -> u64[n] = sort(x);
fn sort_f64(x: f64[n]) -> f64[n] = sort(x);
fn sortd_f32(x: f32[n]) -> f32[n] = sort(x, descending=true);
fn argsort_f32(x: f32[n]) -> i64[n] = argsort(x);
fn argsort_i32(x: i32[n]) -> i64[n] = argsort(x);
fn sbk(k: i32[n], v: f32[n]) -> (i32[n], f32[n]) = sort_by_key(k, v);
fn uniq(x: i64[n]) -> i64[?] = unique(x);
fn ss(a: f32[m], v: f32[n]) -> i64[n] = searchsorted(a, v);
fn rows_f32(x: f32[r, c]) -> f32[r, c] = sort(x);
fn topk(x: f32[n], k: i64) -> (f32[k], i64[k]) = top_k(x, k);
fn topk2(x: f32[r, c], k: i64) -> (f32[r, k], i64[r, k]) = top_k(x, k);
"""

CASES = ["sort_f32", "sort_i32", "sort_u64", "sort_f64", "sortd_f32", "argsort_f32", "argsort_i32", "sbk",
         "rows_1024", "rows_100", "rows_65536", "unique", "unique_many", "searchsorted", "searchsorted24", "topk100", "topk1024",
         "topk_rows"]


def check_cpu():
    m = cuk.compile(SRC, device="cpu", name="sort_bench.py")
    rng = np.random.default_rng(1)
    x = rng.standard_normal(10007).astype(np.float32)
    np.testing.assert_array_equal(m.sort_f32(x), np.sort(x))
    np.testing.assert_array_equal(m.argsort_f32(x), np.argsort(x, kind="stable"))
    r = x[:10000].reshape(100, 100)
    np.testing.assert_array_equal(m.rows_f32(r), np.sort(r, axis=1))
    i = rng.integers(0, 100, 10007)
    np.testing.assert_array_equal(m.uniq(i), np.unique(i))
    a = np.sort(x[:1000])
    np.testing.assert_array_equal(m.ss(a, x), np.searchsorted(a, x))
    v, ix = m.topk(x, 10)
    np.testing.assert_array_equal(ix, np.argsort(-x, kind="stable")[:10])
    np.testing.assert_array_equal(v, x[ix])
    print("sort_bench --check-cpu: every program matches NumPy")


def main():
    a = job_args(10)
    if a.check_cpu:
        return check_cpu()
    only, torch, cp, m, dev, n, g = job_setup(a, SRC, "sort_bench.py", CASES)
    print("n = 2^%d" % a.logn)
    rows = []

    def case(name, keys, cuk_fn, peers, check):
        if name in only:
            time_case(rows, lambda fn: torch_median_ms(fn, a.iters), name, keys, cuk_fn, peers, check)
            sys.stdout.flush()

    def peers_sort(t, stable=True):
        p = [("torch.sort", lambda: torch.sort(t, stable=stable))]
        if cp is not None:
            ct = cp.from_dlpack(t)
            p.append(("cupy.sort", lambda: cp.sort(ct)))
        return p

    def eq(u, w):
        assert torch.equal(u, w), "first difference at %s" % (u != w).nonzero()[:1].tolist()

    f = torch.randn(n, device=dev, generator=g)
    case("sort_f32", n, lambda: m.sort_f32(f), peers_sort(f), lambda: eq(m.sort_f32(f), torch.sort(f)[0]))
    case("sortd_f32", n, lambda: m.sortd_f32(f), [("torch.sort desc", lambda: torch.sort(f, descending=True,
                                                                                           stable=True))],
         lambda: eq(m.sortd_f32(f), torch.sort(f, descending=True, stable=True)[0]))
    p = [("torch.argsort", lambda: torch.argsort(f, stable=True))]
    if cp is not None:
        cf = cp.from_dlpack(f)
        p.append(("cupy.argsort", lambda: cp.argsort(cf)))
    case("argsort_f32", n, lambda: m.argsort_f32(f), p, lambda: eq(m.argsort_f32(f), torch.argsort(f, stable=True)))
    i = torch.randint(-2**31, 2**31 - 1, (n,), device=dev, generator=g, dtype=torch.int32)
    case("sort_i32", n, lambda: m.sort_i32(i), peers_sort(i), lambda: eq(m.sort_i32(i), torch.sort(i)[0]))
    case("argsort_i32", n, lambda: m.argsort_i32(i), [("torch.argsort", lambda: torch.argsort(i, stable=True))],
         lambda: eq(m.argsort_i32(i), torch.argsort(i, stable=True)))

    def sbk_torch():
        s, p = torch.sort(i, stable=True)
        return s, f[p]

    def chk_sbk():
        ks, vs = m.sbk(i, f)
        s, v = sbk_torch()
        eq(ks, s)
        eq(vs, v)
    case("sbk", n, lambda: m.sbk(i, f), [("torch.sort + gather", sbk_torch)], chk_sbk)
    def chk_topk_k(x, k, fn):
        v, ix = fn(x, k)
        tv, ti = torch.topk(x, k)
        eq(v, tv)
        eq(ix, ti)
    case("topk100", n, lambda: m.topk(f, 100), [("torch.topk", lambda: torch.topk(f, 100))],
         lambda: chk_topk_k(f, 100, m.topk))
    case("topk1024", n, lambda: m.topk(f, 1024), [("torch.topk", lambda: torch.topk(f, 1024))],
         lambda: chk_topk_k(f, 1024, m.topk))
    fr = f.view(-1, 1 << 16)
    case("topk_rows", n, lambda: m.topk2(fr, 10), [("torch.topk", lambda: torch.topk(fr, 10))],
         lambda: chk_topk_k(fr, 10, m.topk2))
    del f, i
    h = n // 2
    u = torch.randint(0, 2**63 - 1, (h,), device=dev, generator=g, dtype=torch.int64)
    uu = u.view(torch.uint64) if hasattr(torch, "uint64") else None
    if "sort_u64" in only and uu is not None:
        p = []
        if cp is not None:
            cu = cp.from_dlpack(u).view(cp.uint64)
            p.append(("cupy.sort", lambda: cp.sort(cu)))
        p.append(("torch.sort (i64)", lambda: torch.sort(u)))
        case("sort_u64", h, lambda: m.sort_u64(uu), p,
             lambda: eq(m.sort_u64(uu).view(torch.int64), torch.sort(u)[0]))
    d = torch.randn(h, device=dev, generator=g, dtype=torch.float64)
    case("sort_f64", h, lambda: m.sort_f64(d), peers_sort(d), lambda: eq(m.sort_f64(d), torch.sort(d)[0]))
    del u, uu, d
    for c in (1024, 100, 65536):
        r = torch.randn(n // c, c, device=dev, generator=g)
        case("rows_%d" % c, n, lambda r=r: m.rows_f32(r), peers_sort(r),
             lambda r=r: eq(m.rows_f32(r), torch.sort(r, dim=1)[0]))
        del r
    # unique: 2^26 i64 with 2^20 distinct values (the case)
    q = 1 << 26
    x = torch.randint(0, 1 << 20, (q,), device=dev, generator=g) * 7919
    p = [("torch.unique", lambda: torch.unique(x))]
    if cp is not None:
        cx = cp.from_dlpack(x)
        p.append(("cupy.unique", lambda: cp.unique(cx)))
    case("unique", q, lambda: m.uniq(x), p, lambda: eq(m.uniq(x), torch.unique(x)))
    # nearly every value distinct: more than the hash table takes, so cuk sorts
    x = torch.randint(0, 1 << 62, (q,), device=dev, generator=g)
    p = [("torch.unique", lambda: torch.unique(x))]
    if cp is not None:
        cx = cp.from_dlpack(x)
        p.append(("cupy.unique", lambda: cp.unique(cx)))
    case("unique_many", q, lambda: m.uniq(x), p, lambda: eq(m.uniq(x), torch.unique(x)))
    del x
    srt = torch.sort(torch.randn(1 << 20, device=dev, generator=g))[0]
    v = torch.randn(q, device=dev, generator=g)
    p = [("torch.searchsorted", lambda: torch.searchsorted(srt, v))]
    if cp is not None:
        cs, cv = cp.from_dlpack(srt), cp.from_dlpack(v)
        p.append(("cupy.searchsorted", lambda: cp.searchsorted(cs, cv)))
    case("searchsorted", q, lambda: m.ss(srt, v), p, lambda: eq(m.ss(srt, v), torch.searchsorted(srt, v)))
    # the same queries into 2^24 sorted elements (64 MB: more than the L2 holds)
    srt = torch.sort(torch.randn(1 << 24, device=dev, generator=g))[0]
    p = [("torch.searchsorted", lambda: torch.searchsorted(srt, v))]
    if cp is not None:
        cs = cp.from_dlpack(srt)
        p.append(("cupy.searchsorted", lambda: cp.searchsorted(cs, cv)))
    case("searchsorted24", q, lambda: m.ss(srt, v), p, lambda: eq(m.ss(srt, v), torch.searchsorted(srt, v)))

    print("\n| case | who | ms | GKey/s |")
    print("| --- | --- | ---: | ---: |")
    for c, who, t, k in rows:
        print("| %s | %s | %.3f | %.1f |" % (c, who, t, k / t / 1e6))


if __name__ == "__main__":
    sys.exit(main())

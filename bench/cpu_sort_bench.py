#!/usr/bin/env python3
"""Sorting on the CPU backend against NumPy in the same process (issue 14's CPU target).

usage: CUK_THREADS=1 python3 bench/cpu_sort_bench.py [--logn 24] [--runs 5] [--only a,b]

Each job runs cuk (device="cpu") and NumPy interleaved, medians of --runs, ms; cuk's
result is compared with NumPy's first (the stable order for argsort). NumPy's default
np.sort is its quicksort (not stable; on a processor with AVX-512 its vectorised one),
so its stable sort is timed too: cuk's sort is stable.
"""
import argparse
import time

import numpy as np

import cuk

SRC = """
fn sort_f32(x: f32[n]) -> f32[n] = sort(x);
fn sort_f64(x: f64[n]) -> f64[n] = sort(x);
fn sort_i32(x: i32[n]) -> i32[n] = sort(x);
fn argsort_f32(x: f32[n]) -> i64[n] = argsort(x);
fn rows_f32(x: f32[r, c]) -> f32[r, c] = sort(x);
fn argrows_f32(x: f32[r, c]) -> i64[r, c] = argsort(x);
"""


def median_ms(f, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return sorted(ts)[runs // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logn", type=int, default=24)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    m = cuk.compile(SRC, device="cpu", name="cpu_sort_bench.py")
    rng = np.random.default_rng(1)
    n = 1 << a.logn
    xr = rng.random(n, dtype=np.float32)
    xn = rng.standard_normal(n).astype(np.float32)
    xi = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    xd = xn.astype(np.float64)

    def st(x, **k):
        return np.sort(x, kind="stable", **k)
    jobs = [
        ("sort f32 rand", lambda: m.sort_f32(xr), lambda: np.sort(xr), lambda: st(xr)),
        ("sort f32 randn", lambda: m.sort_f32(xn), lambda: np.sort(xn), lambda: st(xn)),
        ("sort f64 randn", lambda: m.sort_f64(xd), lambda: np.sort(xd), lambda: st(xd)),
        ("sort i32", lambda: m.sort_i32(xi), lambda: np.sort(xi), lambda: st(xi)),
        ("argsort f32", lambda: m.argsort_f32(xn), None, lambda: np.argsort(xn, kind="stable")),
        ("sort rows of 64", lambda: m.rows_f32(xn.reshape(-1, 64)), lambda: np.sort(xn.reshape(-1, 64), axis=1),
         lambda: st(xn.reshape(-1, 64), axis=1)),
        ("sort rows of 1024", lambda: m.rows_f32(xn.reshape(-1, 1024)), lambda: np.sort(xn.reshape(-1, 1024), axis=1),
         lambda: st(xn.reshape(-1, 1024), axis=1)),
        ("argsort rows of 64", lambda: m.argrows_f32(xn.reshape(-1, 64)), None,
         lambda: np.argsort(xn.reshape(-1, 64), axis=1, kind="stable")),
    ]
    only = set(a.only.split(",")) if a.only else None
    print("n = 2^%d, NumPy %s, medians of %d, ms" % (a.logn, np.__version__, a.runs))
    print("%-20s %10s %14s %14s %10s" % ("job", "cuk", "np default", "np stable", "vs stable"))
    for name, c, npd, nps in jobs:
        if only and name not in only:
            continue
        assert np.array_equal(c(), nps()), name
        tc = median_ms(c, a.runs)
        td = median_ms(npd, a.runs) if npd else float("nan")
        ts = median_ms(nps, a.runs)
        print("%-20s %10.2f %14.2f %14.2f %9.2fx" % (name, tc, td, ts, ts / tc), flush=True)


if __name__ == "__main__":
    main()

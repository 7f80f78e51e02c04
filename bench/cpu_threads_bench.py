#!/usr/bin/env python3
"""The CPU backend against NumPy and numexpr (issue 18), in one run on this machine.

    python3 bench/cpu_threads_bench.py [--logn 24] [--runs 5]

Each job runs on 2^logn float32 elements through the Python API (cuk.compile(...,
device="cpu")), with CUK_THREADS=1 and with every core (each in a child process, since
the thread count is read once), against NumPy and numexpr (its default threads: the
machine's cores) in the same run; the median of `runs` timed calls after one warm-up.
The axis jobs (sum0, sum1, max0, smax: softmax along
rows, and lnorm: layer_norm of the rows) take x as (2^logn / 256, 256). Prints one markdown table: milliseconds and cuk's speed-up over the best peer. Also
times fib(27) through `cukc run` (host calls of a function of scalars)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SRC = """
fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;
fn chain(x: f32[n], y: f32[n]) -> f32[n] = sin(x) * cos(y) + exp(-x * x) * 0.5 - sqrt(abs(y));
fn total(x: f32[n]) -> f32 = sum(x);
fn dot(x: f32[n], y: f32[n]) -> f32 = sum(x * y);
fn top(x: f32[n]) -> f32 = max(x);
fn noise(x: f32[n]) -> f32[n] = x + rand(len(x), seed=7);
fn sum0(x: f32[r, c]) -> f32[c] = sum(x, axis=0);
fn sum1(x: f32[r, c]) -> f32[r] = sum(x, axis=1);
fn max0(x: f32[r, c]) -> f32[c] = max(x, axis=0);
fn csum(x: f32[n]) -> f32[n] = cumsum(x);
fn smax(x: f32[r, c]) -> f32[r, c] {
    let e = exp(x - max(x, axis=1, keepdims=true));
    return e / sum(e, axis=1, keepdims=true);
}
fn lnorm(x: f32[r, c]) -> f32[r, c] = layer_norm(x, 0.00001);
"""

JOBS = ["saxpy", "chain", "total", "dot", "top", "noise", "sum0", "sum1", "max0", "csum", "smax", "lnorm"]
COLS = 256  # the axis jobs: x as (n / 256, 256)


def timeit(f, runs):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def cuk_times(logn, runs):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    import cukpath  # noqa: F401
    import cuk

    m = cuk.compile(SRC, device="cpu", name="cpu_threads_bench.py")
    n = 1 << logn
    rng = np.random.default_rng(1)
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    a = np.float32(2.5)
    calls = {"saxpy": lambda: m.saxpy(a, x, y), "chain": lambda: m.chain(x, y), "total": lambda: m.total(x),
             "dot": lambda: m.dot(x, y), "top": lambda: m.top(x), "noise": lambda: m.noise(x)}
    x2 = x.reshape(-1, COLS)
    calls.update({"sum0": lambda: m.sum0(x2), "sum1": lambda: m.sum1(x2), "max0": lambda: m.max0(x2),
                  "csum": lambda: m.csum(x), "smax": lambda: m.smax(x2),
                  "lnorm": lambda: m.lnorm(x2)})
    return {j: timeit(calls[j], runs) for j in JOBS}


def peer_times(logn, runs):
    n = 1 << logn
    rng = np.random.default_rng(1)
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    a = np.float32(2.5)
    npy = {"saxpy": lambda: a * x + y,
           "chain": lambda: np.sin(x) * np.cos(y) + np.exp(-x * x) * np.float32(0.5) - np.sqrt(np.abs(y)),
           "total": lambda: x.sum(), "dot": lambda: np.dot(x, y), "top": lambda: x.max(),
           "noise": lambda: x + rng.random(n, np.float32)}
    x2 = x.reshape(-1, COLS)
    def smax():
        e = np.exp(x2 - x2.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    def lnorm():
        d = x2 - x2.mean(1, keepdims=True)
        return d / np.sqrt((d * d).mean(1, keepdims=True) + np.float32(1e-5))

    npy.update({"sum0": lambda: x2.sum(0), "sum1": lambda: x2.sum(1), "max0": lambda: x2.max(0),
                "csum": lambda: np.cumsum(x), "smax": smax, "lnorm": lnorm})
    out = {"numpy": {j: timeit(npy[j], runs) for j in JOBS}}
    try:
        import numexpr as ne
    except ImportError:
        return out
    d = {"a": a, "x": x, "y": y}
    nex = {"saxpy": lambda: ne.evaluate("a * x + y", d),
           "chain": lambda: ne.evaluate("sin(x) * cos(y) + exp(-x * x) * 0.5 - sqrt(abs(y))", d),
           "total": lambda: ne.evaluate("sum(x)", d), "dot": lambda: ne.evaluate("sum(x * y)", d),
           "top": lambda: ne.evaluate("max(x)", d)}
    out["numexpr"] = {j: timeit(nex[j], runs) for j in nex}
    out["numexpr_threads"] = ne.detect_number_of_cores()
    return out


def fib_time(runs):
    here = os.path.dirname(os.path.abspath(__file__))
    cukc = os.environ.get("CUKC") or os.path.join(os.environ.get("CUK_BUILD_DIR", os.path.join(here, "..", "build")),
                                                  "bin", "cukc")
    src = os.path.join(os.environ.get("TMPDIR", "/tmp"), "cuk_fib27.cuk")
    with open(src, "w") as f:
        f.write("fn fib(n: i64) -> i64 {\n    if n < 2 {\n        return n;\n    }\n"
                "    return fib(n - 1) + fib(n - 2);\n}\nfn main() {\n    print(fib(27));\n}\n")
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run([cukc, "run", "--device", "cpu", src], capture_output=True, text=True, check=True)
        ts.append(time.perf_counter() - t)
        assert r.stdout.strip() == "196418", r.stdout
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logn", type=int, default=24)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(cuk_times(a.logn, a.runs)))
        return
    cuk = {}
    for t in ("1", str(os.cpu_count() or 1)):
        env = dict(os.environ, CUK_THREADS=t)
        r = subprocess.run([sys.executable, __file__, "--child", "--logn", str(a.logn), "--runs", str(a.runs)],
                           capture_output=True, text=True, env=env, check=True)
        cuk[t] = json.loads(r.stdout.strip().splitlines()[-1])
    peers = peer_times(a.logn, a.runs)
    ncpu = str(os.cpu_count() or 1)
    print(f"CPU backend, 2^{a.logn} float32, {os.cpu_count()} cores; NumPy {np.__version__}; "
          f"numexpr {'%d threads' % peers['numexpr_threads'] if 'numexpr' in peers else 'not installed'}; "
          f"median of {a.runs} (ms)\n")
    print(f"| job | cuk 1 thread | cuk {ncpu} threads | NumPy | numexpr | cuk ({ncpu}) / best peer |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for j in JOBS:
        ne = peers.get("numexpr", {}).get(j)
        best = min(v for v in (peers["numpy"][j], ne) if v is not None)
        print(f"| {j} | {cuk['1'][j]:.2f} | {cuk[ncpu][j]:.2f} | {peers['numpy'][j]:.2f} | "
              f"{'%.2f' % ne if ne is not None else '-'} | {best / cuk[ncpu][j]:.2f}x |")
    print(f"\nfib(27) through `cukc run --device cpu` (process start included): {fib_time(a.runs):.3f} s")


if __name__ == "__main__":
    main()

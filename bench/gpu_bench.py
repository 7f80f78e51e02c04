#!/usr/bin/env python3
"""The issue-4 GPU benchmark: cuk's kernels (build/bench/bench_kernels, run as a
subprocess) against CuPy (eager, ElementwiseKernel/ReductionKernel, cupy.fuse) and
PyTorch (eager, torch.compile) on 2^28 f32 elements (softmax: 16384 x 16384), timed
with CUDA events, median of >= 20 runs after warm-up. Rule 6: histograms of 256 and
1024 bins, bincount and reduce_by_index (add) into 2^20 bins, against torch.histc,
torch.bincount, index_add_, cupy.histogram, cupy.bincount and cupyx.scatter_add. Prints GB/s (the bytes each
program must move), the ratio to a device-to-device copy measured in the same run and
the ratio to the best peer.

usage: gpu_bench.py BUILD_DIR [--logn 28] [--iters 20] [--no-compile] [--budget S]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from timing import torch_median_ms  # noqa: E402  (bench/timing.py)

# bytes each program must move, per element of the iteration space
BYTES = {
    "copy": 8, "saxpy": 12, "chain": 12, "sum": 4, "sumsq": 4, "maxmin": 4, "meanvar": 4,
    "cumsum_f32": 8, "cumsum_i32": 8, "mapscanmap": 12, "softmax": 8,
    "hist256": 4, "hist1024": 4, "bincount_i32": 4, "index_add": 8,
}
ORDER = ["copy", "saxpy", "chain", "sum", "sumsq", "maxmin", "meanvar", "cumsum_f32", "cumsum_i32",
         "mapscanmap", "softmax", "hist256", "hist1024", "bincount_i32", "index_add"]


def run_cuk(build, logn, iters, timeout):
    exe = os.path.join(build, "bench", "bench_kernels")
    out = {}
    try:
        p = subprocess.run([exe, ROOT, str(logn), str(iters)], capture_output=True, text=True, timeout=timeout)
        text = p.stdout
        if p.returncode:
            text += p.stderr[-3000:]
    except subprocess.TimeoutExpired as e:  # keep what finished, and the peers' numbers
        text = (e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")) + "\nbench_kernels timed out\n"
    except Exception as e:
        print("bench_kernels failed:", e)
        return out, {}
    sys.stdout.write(text)
    info = {}
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "CASE":
            out[f[1]] = float(f[2])
            info[f[1]] = {"ok": f[4], "det": f[5], "err": f[6]}
    return out, info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--logn", type=int, default=28)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--cuk-timeout", type=float, default=150.0)
    ap.add_argument("--budget", type=float, default=200.0, help="seconds for the peers (torch.compile skipped past it)")
    a = ap.parse_args()
    t_start = time.time()
    cuk_ms, cuk_info = run_cuk(a.build, a.logn, a.iters, a.cuk_timeout)

    import numpy as np
    import torch
    try:
        import cupy as cp
    except Exception as e:
        print("no cupy:", e)
        cp = None
    n = 1 << a.logn
    rows = 1 << (a.logn // 2)
    cols = n // rows
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), " torch", torch.__version__, " cupy",
          cp.__version__ if cp else "-")
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.rand(n, device=dev, generator=g) * 2 - 1
    y = torch.rand(n, device=dev, generator=g) * 2
    xi = torch.randint(-100, 101, (n,), device=dev, dtype=torch.int32, generator=g)
    xs = x.view(rows, cols) * 4
    # scatter and histograms (rule 6): bins of xi + 100 (0..200), 2^20 bins for index_add
    xb = (xi + 100).to(torch.int64)
    idx = torch.randint(0, 1 << 20, (n,), device=dev, dtype=torch.int32, generator=g)
    idx64 = idx.to(torch.int64)
    if cp is not None:
        cx, cy, cxi, cxs = (cp.from_dlpack(t) for t in (x, y, xi, xs))
        cxb, cidx = cp.from_dlpack(xb), cp.from_dlpack(idx)

    def time_torch(fn, iters=a.iters):
        return torch_median_ms(fn, iters)

    def time_cupy(fn, iters=a.iters):
        for _ in range(3):
            fn()
        cp.cuda.Device().synchronize()
        ts = []
        for _ in range(iters):
            e0 = cp.cuda.Event()
            e1 = cp.cuda.Event()
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(e0, e1))
        return statistics.median(ts)

    res = {k: {} for k in ORDER}
    res["copy"]["torch copy_"] = time_torch(lambda: torch.empty_like(x).copy_(x))
    if cp is not None:
        buf = cp.empty_like(cx)
        res["copy"]["cupy memcpy"] = time_cupy(lambda: cp.copyto(buf, cx))

    A = 2.5
    peers = {}
    # --- elementwise
    peers["saxpy"] = [
        ("torch eager", "t", lambda: A * x + y),
        ("torch.compile", "tc", lambda v, w: A * v + w, (x, y)),
    ]
    peers["chain"] = [
        ("torch eager", "t", lambda: torch.sin(x) * torch.cos(y) + torch.exp(-x * x) * 0.5 - torch.sqrt(torch.abs(y))),
        ("torch.compile", "tc",
         lambda v, w: torch.sin(v) * torch.cos(w) + torch.exp(-v * v) * 0.5 - torch.sqrt(torch.abs(w)), (x, y)),
    ]
    peers["sum"] = [("torch eager", "t", lambda: x.sum()), ("torch.compile", "tc", lambda v: v.sum(), (x,))]
    peers["sumsq"] = [("torch eager", "t", lambda: (x * x).sum()), ("torch.compile", "tc", lambda v: (v * v).sum(), (x,))]
    peers["maxmin"] = [("torch eager", "t", lambda: x.max() - x.min()),
                       ("torch aminmax", "t", lambda: torch.aminmax(x)),
                       ("torch.compile", "tc", lambda v: v.max() - v.min(), (x,))]
    peers["meanvar"] = [("torch var_mean", "t", lambda: torch.var_mean(x, correction=0)),
                        ("torch.compile", "tc", lambda v: (v.mean(), (v * v).mean() - v.mean() ** 2), (x,))]
    peers["cumsum_f32"] = [("torch eager", "t", lambda: torch.cumsum(x, 0)),
                           ("torch.compile", "tc", lambda v: torch.cumsum(v, 0), (x,))]
    peers["cumsum_i32"] = [("torch eager", "t", lambda: torch.cumsum(xi, 0, dtype=torch.int32)),
                           ("torch.compile", "tc", lambda v: torch.cumsum(v, 0, dtype=torch.int32), (xi,))]
    peers["mapscanmap"] = [("torch eager", "t", lambda: torch.cumsum(x * y + 1, 0) * 0.5 - y),
                           ("torch.compile", "tc", lambda v, w: torch.cumsum(v * w + 1, 0) * 0.5 - w, (x, y))]
    peers["softmax"] = [("torch.softmax", "t", lambda: torch.softmax(xs, dim=1)),
                        ("torch.compile", "tc", lambda v: torch.softmax(v, dim=1), (xs,))]
    # cuk computes xi + 100 inside its bincount kernel; the peers get it precomputed
    peers["hist256"] = [("torch.histc", "t", lambda: torch.histc(x, 256, -1.0, 1.0))]
    peers["hist1024"] = [("torch.histc", "t", lambda: torch.histc(x, 1024, -1.0, 1.0))]
    peers["bincount_i32"] = [("torch.bincount", "t", lambda: torch.bincount(xb, minlength=1024))]
    peers["index_add"] = [("torch index_add_", "t",
                           lambda: torch.zeros(1 << 20, device=dev).index_add_(0, idx, x)),
                          ("torch index_add_ (i64 idx)", "t",
                           lambda: torch.zeros(1 << 20, device=dev).index_add_(0, idx64, x))]
    if cp is not None:
        import cupyx
        peers["hist256"] += [("cupy histogram", "c", lambda: cp.histogram(cx, 256, (-1.0, 1.0)))]
        peers["hist1024"] += [("cupy histogram", "c", lambda: cp.histogram(cx, 1024, (-1.0, 1.0)))]
        peers["bincount_i32"] += [("cupy bincount", "c", lambda: cp.bincount(cxb, minlength=1024))]
        peers["index_add"] += [("cupyx.scatter_add", "c",
                                lambda: cupyx.scatter_add(cp.zeros(1 << 20, cp.float32), cidx, cx))]
    if cp is not None:
        saxpy_k = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "cuk_saxpy")
        chain_k = cp.ElementwiseKernel("float32 x, float32 y", "float32 z",
                                       "z = sinf(x) * cosf(y) + expf(-x * x) * 0.5f - sqrtf(fabsf(y))", "cuk_chain")
        sum_k = cp.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0", "cuk_sum")
        sumsq_k = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a", "0", "cuk_sumsq")
        fa = cp.float32(A)
        saxpy_f = cp.fuse(lambda a_, v, w: a_ * v + w)
        chain_f = cp.fuse(lambda v, w: cp.sin(v) * cp.cos(w) + cp.exp(-v * v) * 0.5 - cp.sqrt(cp.abs(w)))
        sumsq_f = cp.fuse(lambda v: cp.sum(v * v))
        peers["saxpy"] += [("cupy eager", "c", lambda: fa * cx + cy), ("cupy ElementwiseKernel", "c", lambda: saxpy_k(fa, cx, cy)),
                           ("cupy.fuse", "c", lambda: saxpy_f(fa, cx, cy))]
        peers["chain"] += [("cupy eager", "c", lambda: cp.sin(cx) * cp.cos(cy) + cp.exp(-cx * cx) * 0.5 - cp.sqrt(cp.abs(cy))),
                           ("cupy ElementwiseKernel", "c", lambda: chain_k(cx, cy)), ("cupy.fuse", "c", lambda: chain_f(cx, cy))]
        peers["sum"] += [("cupy sum (CUB)", "c", lambda: cx.sum()), ("cupy ReductionKernel", "c", lambda: sum_k(cx))]
        peers["sumsq"] += [("cupy eager", "c", lambda: (cx * cx).sum()), ("cupy ReductionKernel", "c", lambda: sumsq_k(cx)),
                           ("cupy.fuse", "c", lambda: sumsq_f(cx))]
        peers["maxmin"] += [("cupy eager", "c", lambda: cx.max() - cx.min())]
        peers["meanvar"] += [("cupy eager", "c", lambda: (cx.mean(), cx.var()))]
        peers["cumsum_f32"] += [("cupy cumsum", "c", lambda: cp.cumsum(cx))]
        peers["cumsum_i32"] += [("cupy cumsum", "c", lambda: cp.cumsum(cxi, dtype=cp.int32))]
        peers["mapscanmap"] += [("cupy eager", "c", lambda: cp.cumsum(cx * cy + 1) * 0.5 - cy)]
        peers["softmax"] += [("cupy eager", "c",
                              lambda: (lambda e: e / e.sum(axis=1, keepdims=True))(cp.exp(cxs - cxs.max(axis=1, keepdims=True))))]

    for case in ORDER[1:]:
        for p in peers.get(case, []):
            name, kind = p[0], p[1]
            try:
                if kind == "t":
                    res[case][name] = time_torch(p[2])
                elif kind == "c":
                    res[case][name] = time_cupy(p[2])
                elif kind == "tc":
                    if a.no_compile or time.time() - t_start > a.budget:
                        continue
                    f = torch.compile(p[2])
                    args = p[3]
                    res[case][name] = time_torch(lambda: f(*args))
            except Exception as e:  # one peer failing must not lose the table
                print(f"{case} / {name}: {type(e).__name__}: {str(e)[:200]}")
            torch.cuda.empty_cache()
        if cp is not None:
            cp.get_default_memory_pool().free_all_blocks()

    # --- the table
    copy_ms = min([v for v in res["copy"].values()] + ([cuk_ms["copy"]] if "copy" in cuk_ms else []))
    copy_gbs = BYTES["copy"] * n / copy_ms / 1e6
    print()
    print(f"copy (best of torch/cupy/cuk memcpy): {copy_gbs:.0f} GB/s; sizes: 2^{a.logn} elements, softmax {rows} x {cols}")
    print(f"| case | implementation | ms | GB/s | vs copy | vs best peer | check |")
    print(f"|---|---|---:|---:|---:|---:|---|")
    for case in ORDER:
        entries = dict(res[case])
        if case in cuk_ms:
            entries["cuk"] = cuk_ms[case]
        if not entries:
            continue
        peer = [v for k, v in entries.items() if k != "cuk"]
        best = min(peer) if peer else None
        for k, ms in sorted(entries.items(), key=lambda kv: kv[1]):
            gbs = BYTES[case] * n / ms / 1e6
            vs = f"{best / ms:.2f}x" if best else "-"
            chk = ""
            if k == "cuk" and case in cuk_info:
                ci = cuk_info[case]
                chk = f"ok={ci['ok']} same-bits={ci['det']} err={ci['err']}"
            print(f"| {case} | {k} | {ms:.4f} | {gbs:.0f} | {gbs / copy_gbs * 100:.1f}% | {vs} | {chk} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The matrix-product benchmark (issue 13): `a @ b` and `dot(a, b, tf32=true)` called
through the Python API on PyTorch tensors, against torch.matmul (cuBLAS, TF32 off or on
to match) and cupy.matmul in the same run. CUDA events, median of --iters runs after 3
warm-ups (bench/timing.py); each cuk result is compared with PyTorch's first.

Products: f32 4096^3 and 8192^3, f32 with TF32 8192^3, f64 4096^3, f16 and bf16 8192^3
(f32 products and sums, tensor cores), the non-square
8192 x 1024 @ 1024 x 8192 and 1024 x 8192 @ 8192 x 1024 (f32), and the matrix-vector
16384 x 16384 @ 16384 (f32, memory-bound: GB/s). Epilogues: `relu(a @ b + bias)` (f32
4096^3, one cuBLASLt call) against torch's relu(addmm).

usage: matmul_bench.py [--iters 20] [--only name,...] [--scale K]
       (--scale K halves every size K times, for a quick run)
"""
import argparse
import os
import sys

import cuk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import import_peers, torch_median_ms  # noqa: E402  (bench/timing.py)

SRC = """
fn mm(a: f32[m, k], b: f32[k, n]) -> f32[m, n] = a @ b;
fn mm_tf32(a: f32[m, k], b: f32[k, n]) -> f32[m, n] = dot(a, b, tf32=true);
fn mm64(a: f64[m, k], b: f64[k, n]) -> f64[m, n] = a @ b;
fn mm16(a: f16[m, k], b: f16[k, n]) -> f16[m, n] = a @ b;
fn mmbf(a: bf16[m, k], b: bf16[k, n]) -> bf16[m, n] = a @ b;
fn mv(a: f32[m, k], x: f32[k]) -> f32[m] = dot(a, x);
fn mm_bias_relu(a: f32[m, k], b: f32[k, n], c: f32[n]) -> f32[m, n] = maximum(a @ b + c, 0.0);
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--scale", type=int, default=0)
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    torch, cp = import_peers()
    m = cuk.compile(SRC, device="gpu", name="matmul_bench.py")
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    rows = []

    def tf32(on):
        torch.backends.cuda.matmul.allow_tf32 = on

    def case(name, unit, work, cuk_fn, want_fn, peers, tol, tf=False):
        if only is not None and name.split(" ")[0] not in only:
            return
        tf32(tf)
        try:
            torch.testing.assert_close(cuk_fn(), want_fn(), rtol=tol, atol=tol)
        except Exception as e:  # noqa: BLE001
            print("%s: cuk's result differs from torch's: %s" % (name, str(e)[:300]))
            rows.append((name, "cuk (WRONG)", float("nan"), unit, work))
            return
        rows.append((name, "cuk", torch_median_ms(cuk_fn, a.iters), unit, work))
        for pname, pfn in peers:
            try:
                rows.append((name, pname, torch_median_ms(pfn, a.iters), unit, work))
            except Exception as e:  # noqa: BLE001
                print("%s / %s failed: %s" % (name, pname, str(e).splitlines()[0][:200]))
        tf32(False)

    def rnd(*shape, dtype=torch.float32):
        return torch.rand(*shape, device=dev, generator=g, dtype=dtype) - 0.5

    def products(name, M, K, N, dtype, fn, tf=False):
        M, K, N = M >> a.scale, K >> a.scale, N >> a.scale
        x, y = rnd(M, K, dtype=dtype), rnd(K, N, dtype=dtype)
        peers = [("torch.matmul", lambda: torch.matmul(x, y))]
        if cp is not None:
            cx, cy = cp.from_dlpack(x), cp.from_dlpack(y)
            peers.append(("cupy.matmul", lambda: cp.matmul(cx, cy)))
        tol = 5e-2 if tf else 1e-3 if dtype == torch.float32 else 1e-9 if dtype == torch.float64 else 2e-2
        case("%s %dx%dx%d" % (name, M, K, N), "TFLOP/s", 2.0 * M * K * N, lambda: fn(x, y),
             lambda: torch.matmul(x, y), peers, tol, tf)

    products("f32", 4096, 4096, 4096, torch.float32, m.mm)
    products("f32", 8192, 8192, 8192, torch.float32, m.mm)
    products("f32", 8192, 1024, 8192, torch.float32, m.mm)
    products("f32", 1024, 8192, 1024, torch.float32, m.mm)
    products("tf32", 8192, 8192, 8192, torch.float32, m.mm_tf32, tf=True)
    products("f64", 4096, 4096, 4096, torch.float64, m.mm64)
    products("f16", 8192, 8192, 8192, torch.float16, m.mm16)
    products("bf16", 8192, 8192, 8192, torch.bfloat16, m.mmbf)

    M = K = 16384 >> a.scale
    x, v = rnd(M, K), rnd(K)
    peers = [("torch.mv", lambda: torch.mv(x, v))]
    if cp is not None:
        cx, cv = cp.from_dlpack(x), cp.from_dlpack(v)
        peers.append(("cupy.dot", lambda: cp.dot(cx, cv)))
    case("mv %dx%d" % (M, K), "GB/s", 4.0 * (M * K + K + M), lambda: m.mv(x, v), lambda: torch.mv(x, v), peers, 1e-3)

    M = K = N = 4096 >> a.scale
    x, y, c = rnd(M, K), rnd(K, N), rnd(N)
    peers = [("torch relu(addmm)", lambda: torch.relu(torch.addmm(c, x, y)))]
    if cp is not None:
        cx, cy, cc = cp.from_dlpack(x), cp.from_dlpack(y), cp.from_dlpack(c)
        peers.append(("cupy", lambda: cp.maximum(cp.matmul(cx, cy) + cc, 0)))
    case("bias_relu %dx%dx%d" % (M, K, N), "TFLOP/s", 2.0 * M * K * N, lambda: m.mm_bias_relu(x, y, c),
         lambda: torch.relu(torch.addmm(c, x, y)), peers, 1e-3)

    print("\n| case | who | ms | rate | vs torch |")
    print("| --- | --- | ---: | ---: | ---: |")
    base = {}
    for cname, who, t, unit, work in rows:
        if who.startswith("torch"):
            base.setdefault(cname, t)
    for cname, who, t, unit, work in rows:
        rate = work / t / 1e9 if unit == "TFLOP/s" else work / t / 1e6
        ratio = base[cname] / t if cname in base else float("nan")
        print("| %s | %s | %.4f | %.1f %s | %.3fx |" % (cname, who, t, rate, unit, ratio))


if __name__ == "__main__":
    sys.exit(main())

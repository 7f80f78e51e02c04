#!/usr/bin/env python3
"""The issue-13 GPU benchmark: jobs of every shape written the way users write them,
called through the Python API on PyTorch tensors, against PyTorch (eager, and
torch.compile with --compile) and CuPy in the same run. CUDA events, median of --iters
runs after 3 warm-ups (bench/timing.py); each cuk result is compared with PyTorch's
before it is timed.

Axis reductions: sum along each axis of 16384 x 16384, 4096 x 65536, 65536 x 4096 and
256 x 256 x 4096 f32 (2^28 elements each), max along the kept-axis form; layer norm over
rows (mean, then the variance of the centred rows, keepdims), softmax and logsumexp over rows at
the 2-D shapes; a Jacobi step written with slices, its border rebuilt with concat; transposes;
rand and randn (f32, and f64 rand) written into a torch tensor with out=, against
torch.rand/randn(out=), CuPy's generators and a fill_ of the same bytes (the write
bandwidth they are measured against). GB/s counts the bytes the job must move: the input read once and the
result written once.

usage: shapes_bench.py [--iters 20] [--compile] [--only name,...] [--scale K] [--fast-math]
       (--scale K divides every first axis by 2^K, for a quick run; --fast-math compiles
       cuk's kernels with fast_math=True, which lets NVRTC contract a * b + c into FMAs)
"""
import argparse
import os
import sys

import cuk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import import_peers, print_gbs_table, time_case, torch_compiled, torch_median_ms  # noqa: E402  (bench/timing.py)

SRC = """
fn sum0(x: f32[a, b]) -> f32[b] = sum(x, axis=0);
fn sum1(x: f32[a, b]) -> f32[a] = sum(x, axis=1);
fn max0(x: f32[a, b]) -> f32[b] = max(x, axis=0);
fn sum3_0(x: f32[a, b, c]) -> f32[b, c] = sum(x, axis=0);
fn sum3_1(x: f32[a, b, c]) -> f32[a, c] = sum(x, axis=1);
fn sum3_2(x: f32[a, b, c]) -> f32[a, b] = sum(x, axis=2);
fn layernorm(x: f32[r, c]) -> f32[r, c] {
    let m = mean(x, axis=1, keepdims=true);
    let d = x - m;
    let v = mean(d * d, axis=1, keepdims=true);
    return d / sqrt(v + 1e-5);
}
fn jacobi(u: f32[n, m]) -> f32[n, m] {
    let inner = 0.25 * (u[0:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, 0:-2] + u[1:-1, 2:]);
    let mid = concat(u[1:-1, 0:1], inner, u[1:-1, -1:], axis=1);
    return concat(u[0:1, :], mid, u[-1:, :], axis=0);
}
fn transp(x: f32[r, c]) -> f32[c, r] = transpose(x);
fn softmax(x: f32[r, c]) -> f32[r, c] {
    let e = exp(x - max(x, axis=1, keepdims=true));
    return e / sum(e, axis=1, keepdims=true);
}
fn rnd(n: i64) -> f32[n] = rand(n, seed=1);
fn rndn(n: i64) -> f32[n] = randn(n, seed=1);
fn rnd64(n: i64) -> f64[n] = rand(n, seed=1, dtype=f64);
fn logsumexp(x: f32[r, c]) -> f32[r] {
    let m = max(x, axis=1, keepdims=true);
    return log(sum(exp(x - m), axis=1)) + reshape(m, r);
}
"""

SHAPES2 = [(16384, 16384), (4096, 65536), (65536, 4096)]
SHAPE3 = (256, 256, 4096)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--scale", type=int, default=0)
    ap.add_argument("--fast-math", action="store_true")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None

    torch, cp = import_peers()
    m = cuk.compile(SRC, device="gpu", name="shapes_bench.py", fast_math=a.fast_math)
    print("cuk fast_math:", a.fast_math)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)

    rows = []

    def timed(fn):
        return torch_median_ms(fn, a.iters)

    def compiled(fn):
        return torch_compiled(fn, a.compile)

    def case(name, nbytes, cuk_fn, want_fn, peers, rtol=1e-4, atol=1e-2):
        if only is None or name.split(" ")[0] in only:
            time_case(rows, timed, name, nbytes, cuk_fn, peers,
                      lambda: torch.testing.assert_close(cuk_fn(), want_fn(), rtol=rtol, atol=atol))

    n = 1 << (28 - a.scale)
    x = torch.rand(n, device=dev, generator=g)
    case("copy", 8 * n, lambda: torch.empty_like(x).copy_(x), lambda: x, [])

    def peers_for(t, dim, op="sum"):
        tf = (lambda u: u.sum(dim)) if op == "sum" else (lambda u: u.amax(dim))
        tc = compiled(tf)
        ps = [("torch eager", lambda: tf(t)), ("torch.compile", tc and (lambda: tc(t)))]
        if cp is not None:
            ct = cp.from_dlpack(t)
            ps.append(("cupy", (lambda: ct.sum(axis=dim)) if op == "sum" else (lambda: ct.max(axis=dim))))
        return ps

    for r, c in SHAPES2:
        r >>= a.scale
        t = x[:r * c].view(r, c)
        nb = 4 * r * c
        case("sum0 %dx%d" % (r, c), nb + 4 * c, lambda t=t: m.sum0(t), lambda t=t: t.sum(0), peers_for(t, 0))
        case("sum1 %dx%d" % (r, c), nb + 4 * r, lambda t=t: m.sum1(t), lambda t=t: t.sum(1), peers_for(t, 1))
        case("max0 %dx%d" % (r, c), nb + 4 * c, lambda t=t: m.max0(t), lambda t=t: t.amax(0),
             peers_for(t, 0, "max"), rtol=0, atol=0)
    def ln_t(u):
        m = u.mean(1, keepdim=True)
        d = u - m
        return d / torch.sqrt((d * d).mean(1, keepdim=True) + 1e-5)

    def lse_t(u):
        return torch.logsumexp(u, 1)
    ln_c, lse_c, sm_c = compiled(ln_t), compiled(lse_t), compiled(lambda u: torch.softmax(u, 1))
    for r, c in SHAPES2:
        r >>= a.scale
        t = x[:r * c].view(r, c)
        ps = [("torch eager", lambda t=t: ln_t(t)), ("torch.compile", ln_c and (lambda t=t: ln_c(t)))]
        if cp is not None:
            ct = cp.from_dlpack(t)

            def ln_cp(u=ct):
                mm = u.mean(1, keepdims=True)
                dd = u - mm
                return dd / cp.sqrt((dd * dd).mean(1, keepdims=True) + 1e-5)
            ps.append(("cupy", ln_cp))
        case("layernorm %dx%d" % (r, c), 8 * r * c, lambda t=t: m.layernorm(t), lambda t=t: ln_t(t), ps,
             rtol=1e-3, atol=1e-3)
        ps = [("torch.softmax", lambda t=t: torch.softmax(t, 1)), ("torch.compile", sm_c and (lambda t=t: sm_c(t)))]
        case("softmax %dx%d" % (r, c), 8 * r * c, lambda t=t: m.softmax(t), lambda t=t: torch.softmax(t, 1), ps,
             rtol=1e-4, atol=1e-7)
        ps = [("torch.logsumexp", lambda t=t: lse_t(t)), ("torch.compile", lse_c and (lambda t=t: lse_c(t)))]
        case("logsumexp %dx%d" % (r, c), 4 * r * c + 4 * r, lambda t=t: m.logsumexp(t), lambda t=t: lse_t(t), ps,
             rtol=1e-5, atol=1e-4)
    def jac_t(u):
        inner = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        mid = torch.cat([u[1:-1, 0:1], inner, u[1:-1, -1:]], 1)
        return torch.cat([u[0:1, :], mid, u[-1:, :]], 0)
    jac_c = compiled(jac_t)
    for r, c in SHAPES2:
        r >>= a.scale
        t = x[:r * c].view(r, c)
        ps = [("torch eager", lambda t=t: jac_t(t)), ("torch.compile", jac_c and (lambda t=t: jac_c(t)))]
        case("jacobi %dx%d" % (r, c), 8 * r * c, lambda t=t: m.jacobi(t), lambda t=t: jac_t(t), ps,
             rtol=1e-6, atol=1e-6)
    for r, c in SHAPES2:
        r >>= a.scale
        t = x[:r * c].view(r, c)
        ps = [("torch .t().contiguous()", lambda t=t: t.t().contiguous())]
        if cp is not None:
            ct = cp.from_dlpack(t)
            ps.append(("cupy ascontiguousarray(x.T)", lambda ct=ct: cp.ascontiguousarray(ct.T)))
        case("transpose %dx%d" % (r, c), 8 * r * c, lambda t=t: m.transp(t), lambda t=t: t.t().contiguous(), ps,
             rtol=0, atol=0)
    d0, d1, d2 = SHAPE3
    d0 >>= a.scale
    t3 = x[:d0 * d1 * d2].view(d0, d1, d2)
    nb = 4 * d0 * d1 * d2
    for ax, fn, outn in ((0, m.sum3_0, d1 * d2), (1, m.sum3_1, d0 * d2), (2, m.sum3_2, d0 * d1)):
        case("sum3_%d %dx%dx%d" % (ax, d0, d1, d2), nb + 4 * outn, lambda fn=fn: fn(t3),
             lambda ax=ax: t3.sum(ax), peers_for(t3, ax))

    # random numbers, written into the caller's tensor (out=): the bar is the write
    # bandwidth (a fill_ of the same bytes)
    def stats_check(t, mean, var):
        m_, v_ = t.double().mean().item(), t.double().var().item()
        if abs(m_ - mean) > 1e-3 or abs(v_ - var) > 2e-3:
            raise AssertionError("mean %g var %g, want %g %g" % (m_, v_, mean, var))
    r32 = torch.empty(n, device=dev)
    rows.append(("write: fill_ of %d f32" % n, "torch", timed(lambda: r32.fill_(0.5)), 4 * n))
    ps = [("torch.rand(out=)", lambda: torch.rand(n, device=dev, out=r32))]
    if cp is not None:
        ps.append(("cupy.random.random", lambda: cp.random.random(n, dtype=cp.float32)))
    if only is None or "rand" in only:
        time_case(rows, timed, "rand f32 %d" % n, 4 * n, lambda: m.rnd(n, out=r32), ps,
                  lambda: (m.rnd(n, out=r32), stats_check(r32, 0.5, 1 / 12)))
    ps = [("torch.randn(out=)", lambda: torch.randn(n, device=dev, out=r32))]
    if cp is not None:
        ps.append(("cupy.random.standard_normal", lambda: cp.random.standard_normal(n, dtype=cp.float32)))
    if only is None or "randn" in only:
        time_case(rows, timed, "randn f32 %d" % n, 4 * n, lambda: m.rndn(n, out=r32), ps,
                  lambda: (m.rndn(n, out=r32), stats_check(r32, 0.0, 1.0)))
    r64 = torch.empty(n // 2, device=dev, dtype=torch.float64)
    ps = [("torch.rand(out=) f64", lambda: torch.rand(n // 2, device=dev, dtype=torch.float64, out=r64))]
    if only is None or "rand" in only:
        time_case(rows, timed, "rand f64 %d" % (n // 2), 4 * n, lambda: m.rnd64(n // 2, out=r64), ps,
                  lambda: (m.rnd64(n // 2, out=r64), stats_check(r64, 0.5, 1 / 12)))

    print_gbs_table(rows, 8 * n)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The issue-15 GPU benchmark: the narrow types as users use them, cuk's programs called
through the Python API on PyTorch tensors (bf16 through DLPack), against PyTorch eager,
torch.compile and CuPy (f16 only: CuPy has no bfloat16) in the same run. CUDA events,
median of --iters runs after 3 warm-ups; each cuk result is compared with PyTorch's
before it is timed.

GB/s counts the bytes each job must move: saxpy and the 8-op chain read two arrays and
write one (3 x 2 bytes an element for f16 and bf16, 3 for u8), a sum (in f32: 2^28
values overflow f16) reads one (2 bytes), the f32 copy 8. The issue's targets: f16 and bf16 saxpy and chain >= 95% of copy
bandwidth, f16/bf16 sums as fast per byte as f32 sums (sum_f32 is in the table),
complex64 elementwise (z * w + z, 24 bytes an element) >= 95%.

usage: types_bench.py [--logn 28] [--iters 20] [--no-compile] [--only a,b]
       types_bench.py --check-cpu   (no GPU: the programs on the CPU backend against NumPy)
"""
import os
import sys

import numpy as np

import cuk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import gbs_cases, job_args, job_setup, print_gbs_table  # noqa: E402

TYPES = ("f16", "bf16")
SRC = "".join("""
fn saxpy_{t}(a: {t}, x: {t}[n], y: {t}[n]) -> {t}[n] = a * x + y;
fn chain_{t}(x: {t}[n], y: {t}[n]) -> {t}[n] = sin(x) * cos(y) + exp(-x * x) * {t}(0.5) - sqrt(abs(y));
fn sum_{t}(x: {t}[n]) -> f32 = sum(f32(x));
""".format(t=t) for t in TYPES) + """
fn sum_f32(x: f32[n]) -> f32 = sum(x);
fn cmad_c64(z: c64[n], w: c64[n]) -> c64[n] = z * w + z;
fn csum_c64(z: c64[n]) -> c64 = sum(z);
fn bright_u8(x: u8[n], y: u8[n]) -> u8[n] = u8(clamp(f32(x) * 1.25 + f32(y) * 0.5, 0.0, 255.0));
"""

CASES = ["copy"] + ["%s_%s" % (j, t) for t in TYPES for j in ("saxpy", "chain", "sum")] + ["sum_f32", "bright_u8", "cmad_c64", "csum_c64"]


def check_cpu():
    m = cuk.compile(SRC, device="cpu", name="types_bench.py")
    rng = np.random.default_rng(1)
    n = 10007
    x = rng.random(n).astype(np.float16)
    y = rng.random(n).astype(np.float16)
    # one rounding, at the end of the expression (docs/language.md, Types)
    np.testing.assert_array_equal(m.saxpy_f16(np.float16(2.5), x, y), (np.float32(2.5) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16))
    want = np.sin(x) * np.cos(y) + np.exp(-x * x) * np.float16(0.5) - np.sqrt(np.abs(y))
    np.testing.assert_allclose(m.chain_f16(x, y).astype(np.float32), want.astype(np.float32), atol=2e-3)
    np.testing.assert_allclose(float(m.sum_f16(x)), float(x.astype(np.float32).sum()), rtol=1e-5)
    u, v = (rng.integers(0, 256, n).astype(np.uint8) for _ in range(2))
    np.testing.assert_array_equal(m.bright_u8(u, v), np.clip(u * np.float32(1.25) + v * np.float32(0.5), 0, 255).astype(np.uint8))
    z = (rng.random(n) + 1j * rng.random(n)).astype(np.complex64)
    w = (rng.random(n) + 1j * rng.random(n)).astype(np.complex64)
    np.testing.assert_allclose(m.cmad_c64(z, w), z * w + z, rtol=1e-6)
    np.testing.assert_allclose(m.csum_c64(z), z.astype(np.complex128).sum(), rtol=1e-5)
    print("types_bench --check-cpu: every program matches NumPy")


def main():
    a = job_args(20, no_compile=True)
    if a.check_cpu:
        return check_cpu()
    only, torch, cp, m, dev, n, g = job_setup(a, SRC, "types_bench.py", CASES)
    print("n = 2^%d" % a.logn)

    rows = []
    compiled, case = gbs_cases(a, only, rows)

    xf = torch.rand(n, device=dev, generator=g)
    case("copy", 8 * n, lambda: torch.empty_like(xf).copy_(xf), [], lambda: None)
    case("sum_f32", 4 * n, lambda: m.sum_f32(xf), [("torch", lambda: xf.sum())],
         lambda: np.testing.assert_allclose(float(m.sum_f32(xf)), float(xf.sum()), rtol=1e-4))
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}
    for t in TYPES:
        x = xf.to(tdt[t])
        y = torch.rand(n, device=dev, generator=g).to(tdt[t])
        av = 2.5
        cx = cy = None
        if cp is not None and t == "f16":
            cx, cy = cp.from_dlpack(x), cp.from_dlpack(y)
        saxpy, chain, total = getattr(m, "saxpy_" + t), getattr(m, "chain_" + t), getattr(m, "sum_" + t)

        def t_saxpy(x=x, y=y):
            return av * x + y

        def t_chain(x=x, y=y):
            return torch.sin(x) * torch.cos(y) + torch.exp(-x * x) * 0.5 - torch.sqrt(torch.abs(y))

        def chk(got, want, tol):
            d = (got.float() - want.float()).abs().max().item()
            assert d <= tol, "max |cuk - torch| = %g" % d

        peers = [("torch eager", t_saxpy), ("torch.compile", compiled(t_saxpy))]
        if cx is not None:
            peers.append(("cupy eager", lambda: cp.float16(av) * cx + cy))
        # one rounding, at the end of the expression: as torch.compile, not eager
        case("saxpy_" + t, 6 * n, lambda s=saxpy, x=x, y=y: s(av, x, y), peers,
             lambda s=saxpy, x=x, y=y: chk(s(av, x, y), (av * x.float() + y.float()).to(x.dtype), 0.0))
        peers = [("torch eager", t_chain), ("torch.compile", compiled(t_chain))]
        if cx is not None:
            peers.append(("cupy eager", lambda: cp.sin(cx) * cp.cos(cy) + cp.exp(-cx * cx) * 0.5 - cp.sqrt(cp.abs(cy))))
        case("chain_" + t, 6 * n, lambda c=chain, x=x, y=y: c(x, y), peers,
             lambda c=chain, x=x, y=y, f=t_chain: chk(c(x, y), f(), 0.02))
        peers = [("torch", lambda x=x: x.sum(dtype=torch.float32))]
        if cx is not None:
            peers.append(("cupy", lambda: cx.sum()))
        case("sum_" + t, 2 * n, lambda s=total, x=x: s(x), peers,
             lambda s=total, x=x: np.testing.assert_allclose(float(s(x)), float(x.float().sum()), rtol=1e-4))
        del x, y, cx, cy
    u = (torch.rand(n, device=dev, generator=g) * 256).to(torch.uint8)
    v = (torch.rand(n, device=dev, generator=g) * 256).to(torch.uint8)

    def t_bright():
        return torch.clamp(u.float() * 1.25 + v.float() * 0.5, 0.0, 255.0).to(torch.uint8)
    case("bright_u8", 3 * n, lambda: m.bright_u8(u, v), [("torch eager", t_bright), ("torch.compile", compiled(t_bright))],
         lambda: np.testing.assert_array_equal(m.bright_u8(u, v).cpu().numpy(), t_bright().cpu().numpy()))
    del u, v
    # complex64: z * w + z reads two and writes one (24 bytes an element), a sum reads 8
    nz = n // 2
    zc = torch.complex(torch.rand(nz, device=dev, generator=g), torch.rand(nz, device=dev, generator=g))
    wc = torch.complex(torch.rand(nz, device=dev, generator=g), torch.rand(nz, device=dev, generator=g))

    def t_cmad():
        return zc * wc + zc
    peers = [("torch eager", t_cmad), ("torch.compile", compiled(t_cmad))]
    if cp is not None:
        czc, cwc = cp.from_dlpack(zc), cp.from_dlpack(wc)
        peers.append(("cupy eager", lambda: czc * cwc + czc))
    case("cmad_c64", 24 * nz, lambda: m.cmad_c64(zc, wc), peers,
         lambda: np.testing.assert_allclose(m.cmad_c64(zc, wc).cpu().numpy(), t_cmad().cpu().numpy(), rtol=1e-5, atol=1e-6))
    peers = [("torch", lambda: zc.sum())]
    if cp is not None:
        peers.append(("cupy", lambda: czc.sum()))
    case("csum_c64", 8 * nz, lambda: m.csum_c64(zc), peers,
         lambda: np.testing.assert_allclose(complex(m.csum_c64(zc).cpu().numpy()), complex(zc.sum().cpu().numpy()), rtol=1e-4))
    print_gbs_table(rows, 8 * n)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs a few of the issue-13/15 jobs once each on torch tensors, for ncu to profile
(instructions executed per element, pipe use): the f16/f32 8-op chain, randn, the Jacobi
step. usage: ncu ... python3 bench/exp/ncu_probe.py [name,...]"""
import sys

import cuk
import torch

SRC = """
fn chain16(x: f16[n], y: f16[n]) -> f16[n] = sin(x) * cos(y) + exp(-x * x) * f16(0.5) - sqrt(abs(y));
fn chain32(x: f32[n], y: f32[n]) -> f32[n] = sin(x) * cos(y) + exp(-x * x) * 0.5 - sqrt(abs(y));
fn rndn(n: i64) -> f32[n] = randn(n, seed=1);
fn jacobi(u: f32[n, m]) -> f32[n, m] {
    let inner = 0.25 * (u[0:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, 0:-2] + u[1:-1, 2:]);
    let mid = concat(u[1:-1, 0:1], inner, u[1:-1, -1:], axis=1);
    return concat(u[0:1, :], mid, u[-1:, :], axis=0);
}
"""
only = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
m = cuk.compile(SRC, device="gpu", name="ncu_probe.py")
n = 1 << 26
dev = torch.device("cuda")
x16 = torch.rand(n, device=dev).half()
x32 = torch.rand(n, device=dev)
u = torch.rand(8192, 8192, device=dev)
out = torch.empty(n, device=dev)
jobs = {"chain16": lambda: m.chain16(x16, x16), "chain32": lambda: m.chain32(x32, x32),
        "rndn": lambda: m.rndn(n, out=out), "jacobi": lambda: m.jacobi(u)}
for k, f in jobs.items():
    if only is None or k in only:
        f()
        torch.cuda.synchronize()
        print(k, "ran")

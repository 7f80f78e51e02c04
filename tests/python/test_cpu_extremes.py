"""Minima and maxima on the CPU backend (its SIMD folds, issue 18): the result is the
sequential fold's element (the first NaN wins; otherwise a value replaces the running
extreme only when strictly beyond it, so the sign of a zero extreme is the first
zero's), over chunk boundaries, whole arrays and axes, float32 and float64, on one
thread and on every core."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

SRC = """
fn mx(x: f32[n]) -> f32 = max(x);
fn mn(x: f32[n]) -> f32 = min(x);
fn amx(x: f32[n]) -> i64 = argmax(x);
fn amn(x: f32[n]) -> i64 = argmin(x);
fn mxd(x: f64[n]) -> f64 = max(x);
fn amnd(x: f64[n]) -> i64 = argmin(x);
fn m0(x: f32[a, b]) -> f32[b] = max(x, axis=0);
fn n0(x: f32[a, b]) -> f32[b] = min(x, axis=0);
fn d1(x: f64[a, b, c]) -> f64[a, c] = max(x, axis=1);
"""


def compiled():
    return cuk.compile(SRC, device="cpu")


def seq(x, ax, mx):
    """The sequential rule along axis ax, in NumPy."""
    x = np.moveaxis(x, ax, 0)
    a = x[0].copy()
    nan = np.isnan(a)
    for i in range(1, x.shape[0]):
        y = x[i]
        rep = ~nan & (np.isnan(y) | ((y > a) if mx else (y < a)))
        a = np.where(rep, y, a)
        nan |= np.isnan(y) & rep
    return a


def seq_arg(x, mx):
    a, k = x[0], 0
    for i in range(1, len(x)):
        if np.isnan(a):
            break
        if np.isnan(x[i]) or (x[i] > a if mx else x[i] < a):
            a, k = x[i], i
    return k


def data(rng, shape, kind, dt=np.float32):
    x = rng.standard_normal(shape).astype(dt)
    if kind == "nan":
        x[rng.random(shape) < 0.01] = np.nan
        x.flat[rng.integers(0, x.size)] = np.nan
    elif kind == "zeros":
        x = np.where(rng.random(shape) < 0.5, dt(0.0), dt(-0.0)).astype(dt)
    elif kind == "ties":
        x = np.round(x).astype(dt)
    elif kind == "inf":
        x[:] = -np.inf
    return x


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


def check_whole_arrays(m, kind):
    rng = np.random.default_rng(1)
    for n in [1, 5, 63, 64, 65, 100, 2047, 2048, 2049, 5000, 70001]:
        x = data(rng, n, kind)
        assert bits_equal(m.mx(x), seq(x, 0, True)), (n, "max")
        assert bits_equal(m.mn(x), seq(x, 0, False)), (n, "min")
        assert m.amx(x) == seq_arg(x, True) and m.amn(x) == seq_arg(x, False), n
        xd = x.astype(np.float64)
        assert bits_equal(m.mxd(xd), seq(xd, 0, True)) and m.amnd(xd) == seq_arg(xd, False), n


def check_axes(m, kind):
    rng = np.random.default_rng(3)
    for shape in [(3, 5), (300, 7), (1000, 260), (513, 17), (2, 1030)]:
        x = data(rng, shape, kind)
        assert bits_equal(m.m0(x), seq(x, 0, True)), shape
        assert bits_equal(m.n0(x), seq(x, 0, False)), shape
        x3 = np.ascontiguousarray(x.astype(np.float64)[:, None, :].repeat(3, axis=1).transpose(2, 0, 1))
        assert bits_equal(m.d1(x3), seq(x3, 1, True)), shape


CHILD = """
import sys
sys.path.insert(0, %r)
import test_cpu_extremes as t
m = t.compiled()
for kind in ["plain", "nan", "zeros", "ties", "inf"]:
    t.check_whole_arrays(m, kind)
for kind in ["plain", "nan", "zeros"]:
    t.check_axes(m, kind)
print("ok")
""" % os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_extremes_follow_the_sequential_rule(threads):
    # the thread pool is sized once per process: each count in a child of its own
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                       env=cukpath.python_child_env(CUK_THREADS=threads))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-3000:]

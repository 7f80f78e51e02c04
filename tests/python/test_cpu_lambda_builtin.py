"""A scan whose lambda is exactly `a + b` (or `b + a`) or `a * b` runs as the builtin
cumsum or cumprod on the CPU backend (exec/cpu/eval.c, sprog_as_red), with the same
operations in the same order as the lambda: the values must be the sequential fold's,
bit for bit, for every type, with init, exclusive and along an axis."""
import numpy as np

import cukpath  # noqa: F401
import cuk

SRC = """
fn a(x: i64[n]) -> i64[n] = scan(|a, b| a + b, 0, x);
fn b(x: f32[n]) -> f32[n] = scan(|a, b| b + a, 1.5, x);
fn c(x: f32[n]) -> f32[n] = scan(|a, b| a * b, 1.0, x, exclusive=true);
fn d(x: i32[n]) -> i32[n] = scan(|a, b| a + b, 7, x, exclusive=true);
fn e(x: f64[r, c]) -> f64[r, c] = scan(|a, b| a + b, 0.25, x, axis=0);
fn g(x: f32[n]) -> f32[n] = scan(|a, b| a + b * 2.0, 0.0, x);
"""


def fold(x, init, op, exclusive=False):
    out, acc = np.empty_like(x), x.dtype.type(init)
    for i, v in enumerate(x):
        if exclusive:
            out[i] = acc
        acc = x.dtype.type(op(acc, v))
        if not exclusive:
            out[i] = acc
    return out


def test_add_and_mul_lambdas_fold_as_the_lambda():
    m = cuk.compile(SRC, device="cpu")
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 5, 1000)
    np.testing.assert_array_equal(m.a(x), np.cumsum(x))
    xf = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(m.b(xf), fold(xf, 1.5, lambda a, v: v + a))
    xc = (1 + rng.standard_normal(50) * 0.1).astype(np.float32)
    np.testing.assert_array_equal(m.c(xc), fold(xc, 1.0, lambda a, v: a * v, exclusive=True))
    xi = rng.integers(-2**31, 2**31 - 1, 300).astype(np.int32)  # wraps, as the lambda's adds
    wrap = lambda a, v: (int(a) + int(v) + 2**31) % 2**32 - 2**31  # noqa: E731
    np.testing.assert_array_equal(m.d(xi), fold(xi, 7, wrap, exclusive=True))
    x2 = rng.standard_normal((40, 7))
    want = np.stack([fold(x2[:, k], 0.25, lambda a, v: a + v) for k in range(7)], axis=1)
    np.testing.assert_array_equal(m.e(x2), want)
    # not a builtin: still the lambda
    np.testing.assert_array_equal(m.g(xf), fold(xf, 0.0, lambda a, v: a + v * np.float32(2)))

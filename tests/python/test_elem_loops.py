"""Per-element loops (DESIGN.md part 2): a function of scalars with var, if, for, while
and return, applied to arrays, runs once per element inside the fused kernel. Compared
here with the same functions written in Python over NumPy scalars (f32 arithmetic
rounded per operation as cuk does), on the CPU backend and on the GPU where there is one."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

SRC = """
fn mandel(cr: f32, ci: f32) -> i32 {
    var zr: f32 = 0.0;
    var zi: f32 = 0.0;
    var k: i32 = 0;
    while k < 60 && zr * zr + zi * zi < 4.0 {
        let t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        k = k + 1;
    }
    return k;
}
fn digits(n: i64) -> i64 {
    var s = 0;
    var m = n;
    while m > 0 {
        s = s + m % 10;
        m = m / 10;
    }
    return s;
}
fn collatz(n: i64) -> i64 {
    var m = n;
    var steps = 0;
    while m > 1 {
        if m % 2 == 0 { m = m / 2; } else { m = 3 * m + 1; }
        steps = steps + 1;
    }
    return steps;
}
fn clip_steps(x: f64, lo: f64, hi: f64) -> f64 {
    if x < lo { return lo; }
    var y = x;
    for i in 0..8 {
        if y > hi { return hi + f64(i); }
        y = y * 1.5;
    }
    return y;
}
fn both(n: i64) -> i64 {
    var t = 0;
    for k in 1..n + 1 { t = t + collatz(k); }
    return t + digits(n);
}
fn mandel_a(cr: f32[n], ci: f32[m]) -> i32[m, n] = mandel(cr, reshape(ci, m, 1));
fn mandel_sum(cr: f32[n], ci: f32[m]) -> i64 = sum(i64(mandel(cr, reshape(ci, m, 1))));
fn digits_a(x: i64[n]) -> i64[n] = digits(x);
fn collatz_a(x: i64[n]) -> i64[n] = map(collatz, x);
fn clip_a(x: f64[n], lo: f64, hi: f64) -> f64[n] = clip_steps(x, lo, hi);
fn both_a(x: i64[n]) -> i64[n] = both(x);
"""


def mandel(cr, ci):
    cr, ci = np.float32(cr), np.float32(ci)
    zr = zi = np.float32(0)
    k = 0
    while k < 60 and zr * zr + zi * zi < np.float32(4):
        t = zr * zr - zi * zi + cr
        zi = np.float32(2) * zr * zi + ci
        zr = t
        k += 1
    return k


def digits(n):
    s = 0
    while n > 0:
        s += n % 10
        n //= 10
    return s


def collatz(n):
    s = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        s += 1
    return s


def clip_steps(x, lo, hi):
    if x < lo:
        return lo
    y = x
    for i in range(8):
        if y > hi:
            return hi + i
        y = y * 1.5
    return y


DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC, device=request.param)


def test_mandelbrot(m):
    xs = np.linspace(-2.0, 1.0, 48).astype(np.float32)
    ys = np.linspace(-1.2, 1.2, 20).astype(np.float32)
    want = np.array([[mandel(x, y) for x in xs] for y in ys], dtype=np.int32)
    np.testing.assert_array_equal(m.mandel_a(xs, ys), want)
    assert int(m.mandel_sum(xs, ys)) == int(want.sum())


def test_integer_loops(m):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 10**12, 500).astype(np.int64)
    np.testing.assert_array_equal(m.digits_a(x), [digits(int(v)) for v in x])
    c = np.arange(1, 300, dtype=np.int64)
    np.testing.assert_array_equal(m.collatz_a(c), [collatz(int(v)) for v in c])
    b = np.arange(0, 40, dtype=np.int64)
    np.testing.assert_array_equal(m.both_a(b), [sum(collatz(k) for k in range(1, v + 1)) + digits(v) for v in b])


def test_early_returns_and_scalar_broadcast(m):
    x = np.linspace(-1.0, 3.0, 101)
    np.testing.assert_array_equal(m.clip_a(x, 0.0, 2.0), [clip_steps(v, 0.0, 2.0) for v in x])


def test_empty(m):
    assert m.digits_a(np.zeros(0, dtype=np.int64)).shape == (0,)


LANES_SRC = """
fn spin(n: i64) -> i64 { var k = n; var s = 0; while k != 0 { k = k - 1; s = s + 2; } return s; }
fn guarded(n: i64) -> i64 {
    var t = 0;
    if n >= 0 { t = spin(n % 300) + 1; } else { t = -1; }
    for i in 0..(n % 7) { if i == 3 { return t * 10; } t = t + i; }
    return t;
}
fn cm(c: c64) -> i32 {
    var z: c64 = c;
    var k: i32 = 0;
    while k < 50 && abs(z) < 2.0 { z = z * z + c; k = k + 1; }
    return k;
}
fn guarded_a(x: i64[n]) -> i64[n] = guarded(x);
fn cm_a(x: c64[n]) -> i32[n] = cm(x);
"""


@pytest.mark.parametrize("n", [1, 127, 128, 129, 1000, 5000])
def test_lanes_give_each_elements_own_result(n):
    """The CPU backend runs an array's per-element calls on blocks of lanes that part at
    branches (exec/cpu/eval.c, vexec); each element must get what a call on it alone gives
    (host calls run the scalar interpreter). spin() never ends for a negative n: guarded()
    calls it only on its lanes with n >= 0, so running it on the others would hang."""
    m = cuk.compile(LANES_SRC, device="cpu")
    rng = np.random.default_rng(n)
    x = rng.integers(-1000, 1000, n)
    got = m.guarded_a(x)
    np.testing.assert_array_equal(got, [int(m.guarded(np.int64(v))) for v in x])
    assert (got[x < 0] < 0).all() and (got[x >= 0] > 0).all()
    z = (rng.standard_normal(n) * 0.8 + 1j * rng.standard_normal(n) * 0.8).astype(np.complex64)
    got = m.cm_a(z)
    np.testing.assert_array_equal(got, [int(m.cm(v)) for v in z])
    assert len(set(got.tolist())) > (3 if n > 100 else 0)  # the lanes do part

"""Sibling reductions on the CPU backend (issue 18): the whole-array reductions of one
statement over the same input fold in one pass over it (exec/cpu/eval.c, red_siblings),
as the GPU's plan puts them in one kernel. Each result must be the bits of the
reduction computed alone, whatever the type, NaNs, ties, signed zeros, conversions
(sum of i32 is i64, any/all of numbers), the input being a fused expression, and on one
thread or on every core."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk

TYPES = ["f32", "f64", "i32", "i64", "u8", "i16"]

ALONE = """
fn s_{t}(x: {t}[n]) -> {t} = sum(x);
fn mn_{t}(x: {t}[n]) -> {t} = min(x);
fn mx_{t}(x: {t}[n]) -> {t} = max(x);
fn amn_{t}(x: {t}[n]) -> i64 = argmin(x);
fn amx_{t}(x: {t}[n]) -> i64 = argmax(x);
fn an_{t}(x: {t}[n]) -> bool = any(x != {t}(0));
fn al_{t}(x: {t}[n]) -> bool = all(x != {t}(0));
fn all_{t}(x: {t}[n]) -> ({t}, {t}, {t}, i64, i64, bool, bool) =
    (sum(x), min(x), max(x), argmin(x), argmax(x), any(x != {t}(0)), all(x != {t}(0)));
"""

FUSED = """
fn f_alone(x: f32[n]) -> (f32, f32, i64) {
    let a = min(x * 2.0 - 1.0);
    let b = max(x * 2.0 - 1.0);
    let c = argmax(x * 2.0 - 1.0);
    return (a, b, c);
}
fn f_sib(x: f32[n]) -> (f32, f32, i64) = (min(x * 2.0 - 1.0), max(x * 2.0 - 1.0), argmax(x * 2.0 - 1.0));
fn mixed(x: f32[n], y: f32[n]) -> f32 = max(x) - min(y) + f32(argmin(x)) + sum(y) * max(y);
fn nested(x: f32[n]) -> f32 = max(x - min(x)) + min(x);
fn inits(x: i32[n]) -> i32 = max(x) + reduce(|a, b| maximum(a, b), 0, x) + reduce(|a, b| a + b, 5, x);
fn rows(x: f32[r, c]) -> f32[r] = max(x, axis=1) + min(x) + max(x);
"""


@pytest.fixture(scope="module")
def mod():
    return cuk.compile("".join(ALONE.format(t=t) for t in TYPES) + FUSED, device="cpu")


def inputs(t, n, rng):
    dt = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
          "i16": np.int16}[t]
    if t[0] == "f":
        x = rng.standard_normal(n).astype(dt)
        yield x
        y = x.copy()
        y[n // 2] = y.max()  # a tie for the maximum: the first one is the arg
        y[n - 3] = y.min()
        yield y
        z = np.zeros(n, dt)
        z[n // 3] = -0.0  # the sign of a zero extreme is the first zero's
        z[5] = -0.0
        yield z
        w = x.copy()
        w[n - 100] = np.nan  # a NaN in the last chunks wins min, max and their args
        yield w
        yield np.ones(n, dt)
    else:
        info = np.iinfo(dt)
        yield rng.integers(info.min, info.max, n, endpoint=True).astype(dt)
        yield rng.integers(0, 2, n).astype(dt)  # any/all of zeros and ones, many ties


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("n", [32768, 50001, 300007])
def test_siblings_are_the_bits_of_each_alone(mod, t, n):
    rng = np.random.default_rng(n)
    for x in inputs(t, n, rng):
        got = getattr(mod, "all_" + t)(x)
        alone = [getattr(mod, f + "_" + t)(x) for f in ("s", "mn", "mx", "amn", "amx", "an", "al")]
        for g, a in zip(got, alone):
            same(g, a)
        with np.errstate(invalid="ignore"):
            assert int(got[3]) == int(np.argmin(x)) and int(got[4]) == int(np.argmax(x))
            assert bool(got[5]) == bool(np.any(x)) and bool(got[6]) == bool(np.all(x))
            if t[0] == "f":
                np.testing.assert_array_equal(got[1], np.min(x))
                np.testing.assert_array_equal(got[2], np.max(x))
            else:
                assert int(got[1]) == int(x.min()) and int(got[2]) == int(x.max())


def test_fused_input_and_other_statements(mod):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100003).astype(np.float32)
    y = rng.standard_normal(100003).astype(np.float32)
    for g, a in zip(mod.f_sib(x), mod.f_alone(x)):
        same(g, a)
    xe = x * np.float32(2) - np.float32(1)
    assert mod.f_sib(x)[0] == xe.min() and mod.f_sib(x)[2] == xe.argmax()
    want = np.float32(x.max() - y.min() + np.float32(x.argmin())) + mod.s_f32(y) * y.max()
    assert mod.mixed(x, y) == want
    # max(x - min(x)) needs min(x) first: the two reductions are of different inputs
    assert mod.nested(x) == np.float32(x - x.min()).max() + x.min()
    xi = rng.integers(-1000, 1000, 100003).astype(np.int32)
    assert int(mod.inits(xi)) == int(xi.max()) + max(int(xi.max()), 0) + int(xi.sum()) + 5
    m = rng.standard_normal((300, 200)).astype(np.float32)
    np.testing.assert_array_equal(mod.rows(m), m.max(axis=1) + m.min() + m.max())


def test_empty_and_small_inputs(mod):
    # below the sibling size and empty: unchanged, min of an empty array is an error
    assert tuple(mod.all_i32(np.array([3, -1, 2], np.int32)))[:5] == (4, -1, 3, 1, 0)
    with pytest.raises(cuk.Error, match="empty|identity"):
        mod.all_f32(np.zeros(0, np.float32))


PROG = """
fn main() {
    let x = randn(300007, seed=5);
    let w = where(iota(300007) % 99991 == 12345, nan, x);
    print(min(x) + max(x) + f32(argmax(x)) + f32(argmin(x)) + sum(x));
    print(min(w) + max(x * 3.0) + f32(argmax(w)) + min(x * 3.0) + f32(argmin(x * 3.0)));
    print(i64(any(x > 4.0)) + i64(all(x < 9.0)) + sum(i64(x > 0.0)) + max(i64(x > 0.0)));
}
"""


def test_same_bits_on_any_thread_count(tmp_path):
    src = tmp_path / "p.cuk"
    src.write_text(PROG)
    outs = []
    for t in ("1", "2", "3"):
        env = dict(os.environ, CUK_THREADS=t)
        cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
        r = subprocess.run([cukc, "run", "--device", "cpu", str(src)],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].count("\n") == 3 and "nan" in outs[0].splitlines()[1]

"""Axis reductions and scans of a fused input on the CPU backend (issue 18): an input
that only the reduction uses is computed a window at a time on each worker, never stored
whole (exec/cpu/eval.c, axis_win); a scan's is computed into its result and scanned in
place, tiles of lines on every core. The results must be the bits of the same reduction over the
stored input (a `let` stores it), for every axis and shape class (short and long
contiguous lines, few and many columns, a tile boundary), integers, bools (any/all), arg reductions and lambdas; an error inside the input is still reported; and
the peak memory is of the order of the output, not of the input."""
import os

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk
from cukpath import fused_and_stored

SRC = """
fn fused_sum(x: f32[a, b, c]) -> (f32[b, c], f32[a, c], f32[a, b]) =
    (sum(x * 2.0 + 1.0, axis=0), sum(x * 2.0 + 1.0, axis=1), sum(x * 2.0 + 1.0, axis=2));
fn stored_sum(x: f32[a, b, c]) -> (f32[b, c], f32[a, c], f32[a, b]) {
    let y = x * 2.0 + 1.0;
    return (sum(y, axis=0), sum(y, axis=1), sum(y, axis=2));
}
fn fused_max(x: f64[a, b]) -> (f64[b], f64[a], i64[b], i64[a]) =
    (max(exp(x) - 1.0, axis=0), min(exp(x) - 1.0, axis=1), argmax(sin(x), axis=0), argmin(sin(x), axis=1));
fn stored_max(x: f64[a, b]) -> (f64[b], f64[a], i64[b], i64[a]) {
    let e = exp(x) - 1.0;
    let s = sin(x);
    return (max(e, axis=0), min(e, axis=1), argmax(s, axis=0), argmin(s, axis=1));
}
fn fused_int(x: i32[a, b]) -> (i32[b], i32[a], bool[b], bool[a], i32[a]) =
    (sum(x * 3 - 1, axis=0), sum(x * 3 - 1, axis=1), any(x % 7 == 3, axis=0), all(x % 5 != 4, axis=1),
     reduce(|p, q| p ^ q, 0, x + 1, axis=1));
fn stored_int(x: i32[a, b]) -> (i32[b], i32[a], bool[b], bool[a], i32[a]) {
    let y = x * 3 - 1;
    let u = x % 7 == 3;
    let w = x % 5 != 4;
    let z = x + 1;
    return (sum(y, axis=0), sum(y, axis=1), any(u, axis=0), all(w, axis=1), reduce(|p, q| p ^ q, 0, z, axis=1));
}
fn fused_scan(x: f32[a, b, c]) -> (f32[a, b, c], f32[a, b, c], f32[a, b, c], f32[a, b, c]) =
    (cumsum(x * 2.0 + 1.0, axis=0), cumsum(x * 2.0 + 1.0, axis=1), cummax(x * 2.0 + 1.0, axis=2),
     scan(|p, q| p * 0.5 + q, 0.0, x - 1.0, axis=1));
fn stored_scan(x: f32[a, b, c]) -> (f32[a, b, c], f32[a, b, c], f32[a, b, c], f32[a, b, c]) {
    let y = x * 2.0 + 1.0;
    let z = x - 1.0;
    return (cumsum(y, axis=0), cumsum(y, axis=1), cummax(y, axis=2), scan(|p, q| p * 0.5 + q, 0.0, z, axis=1));
}
fn scan_twice(x: i32[a, b]) -> i32[a, b] = cumsum(x * 2, axis=0, exclusive=true) + (x * 2);
fn gen_rows(n: i64, m: i64) -> f32[n] = sum(rand(n, m, seed=3) * 2.0, axis=1);
fn gen_cols(n: i64, m: i64) -> f32[m] = max(rand(n, m, seed=3) - 0.5, axis=0);
fn gathered(x: f32[n, m], i: i64[k]) -> f32[m] = sum(x[i] * 2.0, axis=0);
"""

SHAPES3 = [(3, 5, 7), (2, 3000, 3), (4, 2, 5000), (1, 70000, 1), (3, 257, 300), (40, 1, 513)]
SHAPES2 = [(1, 1), (7, 3), (3, 70000), (70000, 3), (300, 700), (513, 257)]


@pytest.fixture(scope="module")
def mod():
    return cuk.compile(SRC, device="cpu")


@pytest.mark.parametrize("shape", SHAPES3)
def test_float_sums_every_axis(mod, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = fused_and_stored(mod, "sum", x)
    y = x * np.float32(2) + np.float32(1)
    for k in range(3):
        np.testing.assert_allclose(got[k], y.astype(np.float64).sum(axis=k), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("shape", SHAPES2)
def test_extremes_and_args(mod, shape):
    x = np.random.default_rng(2).standard_normal(shape)
    got = fused_and_stored(mod, "max", x)
    np.testing.assert_array_equal(got[2], np.argmax(np.sin(x), axis=0))
    np.testing.assert_array_equal(got[3], np.argmin(np.sin(x), axis=1))


@pytest.mark.parametrize("shape", SHAPES2)
def test_integers_bools_lambdas(mod, shape):
    x = np.random.default_rng(3).integers(-1000, 1000, shape).astype(np.int32)
    got = fused_and_stored(mod, "int", x)
    y = x * np.int32(3) - np.int32(1)
    np.testing.assert_array_equal(got[0], y.sum(axis=0))
    np.testing.assert_array_equal(got[2], (np.fmod(x, 7) == 3).any(axis=0))  # C remainder
    np.testing.assert_array_equal(got[4], np.bitwise_xor.reduce(x + 1, axis=1))


@pytest.mark.parametrize("shape", SHAPES3)
def test_scans_every_axis(mod, shape):
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    got = fused_and_stored(mod, "scan", x)
    y = x * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(got[2], np.maximum.accumulate(y, axis=2))
    np.testing.assert_allclose(got[0], np.cumsum(y, axis=0), rtol=1e-4, atol=1e-3)
    xi = np.random.default_rng(5).integers(-100, 100, shape[:2]).astype(np.int32)
    np.testing.assert_array_equal(mod.scan_twice(xi), np.cumsum(xi * 2, axis=0))


def test_generators_on_any_thread_count(tmp_path):
    prog = tmp_path / "p.cuk"
    prog.write_text(SRC + """
fn main() {
    print(sum(gen_rows(1000, 3000)));
    print(sum(gen_cols(3000, 1000)));
    print(gen_rows(3, 5));
    print(sum(cumsum(rand(3000, 1000, seed=4) - 0.5, axis=0)[2999]));
    print(sum(cumsum(rand(1000, 3000, seed=4) - 0.5, axis=1)[:, 2999]));
}
""")
    outs = cukpath.cpu_outputs_by_threads(prog)
    assert outs[0] == outs[1] == outs[2] and outs[0].count("\n") == 5


def test_an_error_inside_the_input_is_reported(mod):
    x = np.ones((5, 4), np.float32)
    np.testing.assert_array_equal(mod.gathered(x, np.array([0, 4, 4], np.int64)), np.full(4, 6, np.float32))
    with pytest.raises(cuk.Error, match="out of bounds"):
        mod.gathered(x, np.array([0, 9, 1], np.int64))


CHILD = """
import resource, sys
sys.path[:0] = sys.argv[1:]
import cuk
m = cuk.compile('fn f(n: i64) -> f32[n] = sum(rand(n, 4096, seed=1) * 2.0, axis=1);'
                'fn g(n: i64) -> f32[4096] = sum(rand(n, 4096, seed=1) + 1.0, axis=0);'
                'fn h(n: i64) -> f32 = sum(cumsum(rand(n, 4096, seed=1) * 2.0, axis=0)[n - 1]);', device='cpu')
a, b = m.f(50000), m.g(50000)
assert abs(float(a.mean()) / 4096 - 1.0) < 0.01 and abs(float(b.mean()) / 50000 - 1.5) < 0.01
assert abs(float(m.h(20000)) / (20000 * 4096) - 1.0) < 0.01
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


# under scripts/check.sh's ASan+UBSan stage (conftest.py) the child carries ASan's shadow memory
@pytest.mark.skipif(bool(os.environ.get("CUK_PYTHON_CHILD_PRELOAD")), reason="ASan's shadow memory inflates the peak")
def test_peak_memory_is_not_the_input():
    # the reductions' input is 50000 x 4096 f32: 800 MB; stored whole, the peak would
    # pass it. The scan's (20000 x 4096, 320 MB) is computed into its result: 320 MB,
    # not 640
    peak_mb = cukpath.child_peak_mb(CHILD)
    assert peak_mb < 480, peak_mb

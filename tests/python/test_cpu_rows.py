"""Reductions along the last axis fused with what they feed, on the CPU backend (issue 18):
softmax_rows, layer_norm and their kind run a tile of rows at a time on each worker
(exec/cpu/eval.c, rows_eval), so nothing of the output's size is stored but the output.
Each result must be the bits of the same steps over stored values (every `let` stores its
value), for every shape class (one row, one column, rows longer than a tile, many short
rows, rank 3), with generators, per-element functions, integers, bools and arg reductions
inside; a statement's other uses of a reduction see its whole result; an error inside is
still reported; the bits do not depend on the thread count; and the peak memory is of the
order of the output."""
import os

import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk
from cukpath import fused_and_stored, same_bits

SRC = """
fn sq(v: f32) -> f32 = v * v;
fn fused_softmax(x: f32[a, b]) -> f32[a, b] = softmax_rows(x * 2.0);
fn stored_softmax(x: f32[a, b]) -> f32[a, b] {
    let y = x * 2.0;
    let m = max(y, axis=1, keepdims=true);
    let e = exp(y - m);
    let s = sum(e, axis=1, keepdims=true);
    return e / s;
}
fn fused_ln(x: f64[a, b]) -> f64[a, b] = layer_norm(x * 2.0 + 1.0, 0.00001);
fn stored_ln(x: f64[a, b]) -> f64[a, b] {
    let y = x * 2.0 + 1.0;
    let m = mean(y, axis=1, keepdims=true);
    let d = y - m;
    let q = d * d;
    let v = mean(q, axis=1, keepdims=true);
    return d * rsqrt(v + 0.00001);
}
fn fused_rank3(x: f32[a, b, c]) -> f32[a, b, c] = x / sum(map(sq, x) + 1.0, axis=-1, keepdims=true);
fn stored_rank3(x: f32[a, b, c]) -> f32[a, b, c] {
    let q = map(sq, x) + 1.0;
    let s = sum(q, axis=2, keepdims=true);
    return x / s;
}
fn fused_mixed(x: f32[a, b]) -> f32[a, b] =
    where(any(x * 2.0 > 1.9, axis=1, keepdims=true), x, -x) + f32(argmax(sin(x) + 0.5, axis=1, keepdims=true))
    - min(rand(a, b, seed=3) * x, axis=1, keepdims=true);
fn stored_mixed(x: f32[a, b]) -> f32[a, b] {
    let u = x * 2.0 > 1.9;
    let p = any(u, axis=1, keepdims=true);
    let w = sin(x) + 0.5;
    let k = argmax(w, axis=1, keepdims=true);
    let r = rand(a, b, seed=3) * x;
    let m = min(r, axis=1, keepdims=true);
    return where(p, x, -x) + f32(k) - m;
}
fn fused_int(x: i32[a, b]) -> i64[a, b] = i64(x * 3 - sum(x * 3, axis=1, keepdims=true)) + argmin(x % 7, axis=1, keepdims=true);
fn stored_int(x: i32[a, b]) -> i64[a, b] {
    let y = x * 3;
    let s = sum(y, axis=1, keepdims=true);
    let z = x % 7;
    let k = argmin(z, axis=1, keepdims=true);
    return i64(y - s) + k;
}
fn fused_pair(x: f32[a, b]) -> (f32[a, b], f32[a, 1], f32) =
    (softmax_rows(x * 2.0), max(x * 2.0, axis=1, keepdims=true), sum(max(x * 2.0, axis=1, keepdims=true)));
fn stored_pair(x: f32[a, b]) -> (f32[a, b], f32[a, 1], f32) {
    let y = x * 2.0;
    let m = max(y, axis=1, keepdims=true);
    let t = sum(m);
    let e = exp(y - m);
    let s = sum(e, axis=1, keepdims=true);
    return (e / s, m, t);
}
fn fused_leafdep(x: f32[a, b]) -> f32[a, b] = softmax_rows(x * 2.0) + sum(max(x * 2.0, axis=1, keepdims=true));
fn stored_leafdep(x: f32[a, b]) -> f32[a, b] {
    let y = x * 2.0;
    let m = max(y, axis=1, keepdims=true);
    let t = sum(m);
    let e = exp(y - m);
    let s = sum(e, axis=1, keepdims=true);
    return e / s + t;
}
fn gathered(x: f32[n, m], i: i64[k]) -> f32[k, m] = softmax_rows(x[i] * 2.0);
"""

SHAPES = [(1, 1), (1, 33), (33, 1), (7, 3), (3, 70000), (70000, 3), (300, 700), (513, 257), (2, 40000)]


@pytest.fixture(scope="module")
def mod():
    return cuk.compile(SRC, device="cpu")


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_rows(mod, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = fused_and_stored(mod, "softmax", x)
    y = x.astype(np.float64) * 2
    e = np.exp(y - y.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm(mod, shape):
    x = np.random.default_rng(2).standard_normal(shape)
    got = fused_and_stored(mod, "ln", x)
    y = x * 2 + 1
    d = y - y.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(got, d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 5), (4, 100, 3), (3, 2, 33000), (20, 30, 40)])
def test_rank3_with_a_function(mod, shape):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    got = fused_and_stored(mod, "rank3", x)
    np.testing.assert_allclose(got, x / ((x.astype(np.float64) ** 2 + 1).sum(axis=-1, keepdims=True)), rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_bools_args_generators_integers(mod, shape):
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    got = fused_and_stored(mod, "mixed", x)
    assert got.shape == shape and np.isfinite(got).all()
    xi = np.random.default_rng(5).integers(-1000, 1000, shape).astype(np.int32)
    got = fused_and_stored(mod, "int", xi)
    y = xi.astype(np.int64) * 3
    want = (y - y.sum(axis=1, keepdims=True)) + np.argmin(np.fmod(xi, 7), axis=1)[:, None]  # C remainder
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(1, 5), (7, 3), (300, 700)])
def test_other_uses_of_a_reduction(mod, shape):
    # the statement reads max(x * 2, axis=1) again, as a result and inside a whole sum
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    soft, m, t = fused_and_stored(mod, "pair", x)
    np.testing.assert_array_equal(m, (x * np.float32(2)).max(axis=1, keepdims=True))
    np.testing.assert_allclose(t, m.astype(np.float64).sum(), rtol=1e-5)
    fused_and_stored(mod, "leafdep", x)


def test_empty_arrays(mod):
    same_bits(mod.fused_softmax(np.zeros((0, 4), np.float32)), np.zeros((0, 4), np.float32))
    same_bits(mod.fused_ln(np.zeros((0, 3))), np.zeros((0, 3)))
    with pytest.raises(cuk.Error, match="max"):
        mod.fused_softmax(np.zeros((3, 0), np.float32))
    with pytest.raises(cuk.Error, match="max"):
        mod.stored_softmax(np.zeros((3, 0), np.float32))


def test_an_error_inside_is_reported(mod):
    x = np.ones((5, 4), np.float32)
    np.testing.assert_array_equal(mod.gathered(x, np.array([0, 4], np.int64)), np.full((2, 4), 0.25, np.float32))
    with pytest.raises(cuk.Error, match="out of bounds"):
        mod.gathered(x, np.array([0, 9, 1], np.int64))


def test_any_thread_count(tmp_path):
    prog = tmp_path / "p.cuk"
    prog.write_text(SRC + """
fn main() {
    let x = rand(3000, 700, seed=4) - 0.5;
    print(sum(fused_softmax(x) * iota(700, dtype=f32)));
    print(sum(fused_ln(f64(x)) * iota(700, dtype=f64)));
    print(sum(fused_mixed(x)));
    print(fused_softmax(x)[2999, 690:]);
    print(sum(fused_rank3(reshape(x, 3, 1000, 700))));
}
""")
    outs = cukpath.cpu_outputs_by_threads(prog)
    assert outs[0] == outs[1] == outs[2] and outs[0].count("\n") == 5


CHILD = """
import resource, sys
sys.path[:0] = sys.argv[1:]
import cuk
m = cuk.compile('fn f(n: i64) -> f32 { let s = softmax_rows(rand(n, 4096, seed=1) * 2.0); return sum(s); }'
                'fn g(n: i64) -> f32 { let s = layer_norm(rand(n, 4096, seed=1) * 2.0, 0.00001); return sum(s * s); }',
                device='cpu')
a, b = float(m.f(20000)), float(m.g(20000))
assert abs(a / 20000 - 1.0) < 1e-3 and abs(b / (20000 * 4096) - 1.0) < 1e-2, (a, b)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


# under scripts/check.sh's ASan+UBSan stage (conftest.py) the child carries ASan's shadow memory
@pytest.mark.skipif(bool(os.environ.get("CUK_PYTHON_CHILD_PRELOAD")), reason="ASan's shadow memory inflates the peak")
def test_peak_memory_is_the_output():
    # each output is 20000 x 4096 f32, 328 MB (the child's peak with Python and NumPy:
    # about 350 MB); the input and exp(x - m) stored as well made it 3x that (984 MB),
    # one of them 2x (656 MB)
    peak_mb = cukpath.child_peak_mb(CHILD)
    assert peak_mb < 600, peak_mb

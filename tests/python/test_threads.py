"""The CPU backend on every core (exec/cpu/pool.c): the same bits with CUK_THREADS=1, 2
and 3, for the parallel paths (materialised fused maps, reductions that split into
chunks, axis reductions by tiles of outputs) and the ones that stay on one thread (float products, lambdas, scalar calls)."""
import os
import subprocess

import numpy as np

import cukpath

PROG = """
fn pick(x: f32) -> f32 {
    var y = x;
    while y > 0.25 {
        y = y * 0.5;
    }
    return y;
}
fn main() {
    let n = 300006;
    let x = rand(n, seed=3);
    let y = randn(n, seed=4);
    let w = where(iota(n) % 40961 == 77, nan, y);
    let z = sin(x) * 2.0 + y * y;
    save("OUT/z.npy", z);
    save("OUT/h.npy", f16(z) * f16(3.0));
    save("OUT/b.npy", reshape(x, 7, 42858)[:, 1:] + reshape(y, 7, 42858)[:, :42857]);
    save("OUT/p.npy", pick(x * 3.0));
    save("OUT/a0.npy", sum(reshape(z, 6, 50001), axis=0));
    save("OUT/a1.npy", max(reshape(y, 3, 100002) * 2.0, axis=1));
    save("OUT/a2.npy", sum(reshape(f64(y), 6, 50001), axis=1, keepdims=true));
    print(sum(z));
    print(sum(f32(iota(n)) * 0.5));
    print(sum(i8(iota(n))));
    print(sum(u64(iota(n)) * u64(2654435761)));
    print(prod(i32(iota(n) % 5 + 1)));
    print(prod(x + 0.5));
    print(min(y));
    print(max(y));
    print(argmin(y));
    print(argmax(x));
    print(argmax(w));
    print(min(w));
    print(any(x > 0.99999));
    print(all(x >= 0.0));
    print(reduce(|a, b| a * 0.5 + b, 0.0, x));
    print(mean(z));
    print(sum(c64(complex(x, y))));
    print(sum(where(iota(n) == 0, 1e20, where(iota(n) == n - 1, -1e20, 1.0 / 2048.0))));
}
"""


def test_same_bits_with_any_thread_count(tmp_path):
    src = tmp_path / "p.cuk"
    outs = []
    for t in ("1", "2", "3"):
        d = tmp_path / ("t" + t)
        d.mkdir()
        src.write_text(PROG.replace("OUT", str(d)))
        env = dict(os.environ, CUK_THREADS=t)
        cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
        r = subprocess.run([cukc, "run", "--device", "cpu", str(src)], capture_output=True, text=True, env=env,
                           timeout=600)
        assert r.returncode == 0, r.stderr
        arrays = {k: np.load(d / (k + ".npy")) for k in ("z", "h", "b", "p", "a0", "a1", "a2")}
        outs.append((r.stdout, arrays))
    text, arrays = outs[0]
    lines = text.splitlines()
    assert len(lines) == 18
    assert lines[10] == "77" and lines[11] == "nan"  # argmax(w), min(w): the first NaN wins
    # chunk sums 1e20, then 145 chunks of 2048 / 2048 = 1, then -1e20: only the compensated
    # combination of the chunks' sums (in chunk order, on any thread) keeps the 145
    assert lines[17] == "145", lines[17]
    for other_text, other_arrays in outs[1:]:
        assert other_text == text
        for k in arrays:
            assert arrays[k].tobytes() == other_arrays[k].tobytes(), k


def _fold(x, largest):
    """min/max/argmin/argmax as one element after another: the first NaN wins, else the
    first extreme (strict comparison: equal values, -0.0 and 0.0 included, keep the
    earlier)."""
    a, arg = x[0], 0
    if a != a:
        return a, 0
    for i in range(1, len(x)):
        y = x[i]
        if y != y:
            return y, i
        if (y > a) if largest else (y < a):
            a, arg = y, i
    return a, arg


def test_min_max_are_the_sequential_fold():
    import cuk

    m = cuk.compile("fn mx(x: f32[n]) -> f32 = max(x);\nfn mn(x: f32[n]) -> f32 = min(x);\n"
                    "fn amx(x: f32[n]) -> i64 = argmax(x);\nfn amn(x: f32[n]) -> i64 = argmin(x);\n", device="cpu")
    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(1, 5000))
        kind = trial % 5
        if kind == 0:
            x = rng.integers(-3, 3, n).astype(np.float32)  # ties
        elif kind == 1:
            x = np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
        elif kind == 2:
            x = rng.random(n).astype(np.float32)
            x[rng.integers(0, n, 2)] = np.nan
        elif kind == 3:
            x = rng.standard_normal(n).astype(np.float32)
        else:
            x = np.full(n, 7, np.float32)
        for f, largest in ((m.mx, True), (m.mn, False)):
            want = _fold(x, largest)[0]
            got = np.float32(f(x))
            assert (np.isnan(got) and np.isnan(want)) or (got == want and np.signbit(got) == np.signbit(want)), (
                trial, kind, n)
        assert int(m.amx(x)) == _fold(x, True)[1], (trial, kind, n)
        assert int(m.amn(x)) == _fold(x, False)[1], (trial, kind, n)


def test_axis_reductions_by_columns_match_numpy():
    """Sums, minima and maxima along a non-last axis (folded for many columns at once):
    NumPy's values, NaN propagating per column, for f32 and f64."""
    import cuk

    m = cuk.compile("fn s(x: f32[n, k]) -> f32[k] = sum(x, axis=0);\n"
                    "fn mx(x: f64[a, n, k]) -> f64[a, k] = max(x, axis=1);\n"
                    "fn mn(x: f32[n, k]) -> f32[k] = min(x * 2.0, axis=0);\n", device="cpu")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1000, 300)).astype(np.float32)
    x[5, 3] = np.nan
    x[999, 299] = np.nan
    y = rng.standard_normal((3, 700, 260))
    y[1, 600, 7] = np.nan
    np.testing.assert_allclose(m.s(x), x.sum(0), rtol=1e-5, atol=1e-4)
    assert np.isnan(m.s(x)[3]) and np.isnan(m.s(x)[299])
    np.testing.assert_array_equal(m.mx(y), y.max(1))
    np.testing.assert_array_equal(m.mn(x), (x * 2).min(0))


SEG_CHILD = r"""
import sys
import numpy as np
import cukpath, cuk
m = cuk.compile('''
fn s32(x: f32[n], o: i64[k]) -> f32[?] = sum(x, segments=o);
fn s64(x: f64[n], o: i64[k]) -> f64[?] = sum(x * 3.0, segments=o);
fn si(x: i32[n], o: i64[k]) -> i32[?] = sum(x, segments=o);
fn mx(x: f32[n], o: i64[k]) -> f32[?] = max(x, segments=o);
fn mn(x: f64[n], o: i64[k]) -> f64[?] = min(x, segments=o);
fn am(x: f32[n], o: i64[k]) -> i64[?] = argmin(x, segments=o);
fn ax(x: f32[n], o: i64[k]) -> i64[?] = argmax(x, segments=o);
fn an(x: f32[n], o: i64[k]) -> bool[?] = any(x > 2.5, segments=o);
fn me(x: f32[n], o: i64[k]) -> f32[?] = mean(x, segments=o);
''', device="cpu")
rng = np.random.default_rng(7)
n = 300000
x = rng.standard_normal(n).astype(np.float32)
x[rng.integers(0, n, 5)] = np.nan
x[1000:1100] = 1.5  # ties
xi = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
layouts = [
    [0, n],                                                      # one segment over every chunk
    [0, 2048, 4096, 4096, 4096, 10000, n],                       # at chunk ends, empty ones there
    sorted(set([0, n] + rng.integers(0, n, 3000).tolist())),     # short ones
    [0, 1, 2, 3] + list(range(2047, n, 2048)) + [n],             # one element each, then chunk-crossing
    [0] * 5 + [n] * 4,                                           # empty at both ends
]
out = []
for o in layouts:
    o = np.array(o, np.int64)
    for f in (m.s32, m.mx, m.am, m.ax, m.an, m.me):
        out.append(np.asarray(f(x, o)).tobytes().hex())
    out.append(np.asarray(m.s64(x.astype(np.float64), o)).tobytes().hex())
    out.append(np.asarray(m.mn(x.astype(np.float64), o)).tobytes().hex())
    out.append(np.asarray(m.si(xi, o)).tobytes().hex())
sys.stdout.write("\n".join(out))
"""


def test_segmented_reductions_same_bits_with_any_thread_count():
    """Segmented reductions that split run on every core (exec/cpu/eval.c, segred_par):
    the same bits as one thread, for segments across chunks, at chunk ends, empty,
    one element each, with NaN and ties."""
    import sys
    outs = []
    for t in ("1", "2", "3"):
        r = subprocess.run([sys.executable, "-c", SEG_CHILD], capture_output=True, text=True, timeout=300,
                           cwd=cukpath.ROOT + "/tests/python", env=cukpath.python_child_env(CUK_THREADS=t))
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append(r.stdout)
    assert len(outs[0].splitlines()) == 5 * 9
    assert outs[1] == outs[0] and outs[2] == outs[0]


AVX_CHILD = r"""
import sys
import numpy as np
import cukpath, cuk
m = cuk.compile('''
fn s0(x: f32[r, c]) -> f32[c] = sum(x, axis=0);
fn s1(x: f32[r, c]) -> f32[r] = sum(x, axis=1);
fn d0(x: f64[r, c]) -> f64[c] = sum(x, axis=0);
fn t(x: f32[n]) -> f32 = sum(x);
fn td(x: f64[n]) -> f64 = sum(x * 3.0);
''', device="cpu")
rng = np.random.default_rng(3)
out = []
for r, c in ((1000, 256), (333, 777), (7, 5000), (70000, 3)):
    x = (rng.standard_normal((r, c)) * 10.0 ** rng.integers(-8, 8, (r, c))).astype(np.float32)
    out += [m.s0(x).tobytes().hex(), m.s1(x).tobytes().hex(), m.d0(x.astype(np.float64)).tobytes().hex(),
            np.float32(m.t(x.reshape(-1))).tobytes().hex(), np.float64(m.td(x.reshape(-1).astype(np.float64))).tobytes().hex()]
sys.stdout.write("\n".join(out))
"""


def test_float_sums_same_bits_with_and_without_avx2():
    """The float sums' loops have an AVX2 copy (exec/cpu/eval.c, SIMD_PICK) that runs where
    the processor has AVX2; CUK_NO_AVX2=1 forces the baseline copy: the same bits."""
    import sys
    outs = []
    for off in ("1", "0"):
        r = subprocess.run([sys.executable, "-c", AVX_CHILD], capture_output=True, text=True, timeout=300,
                           cwd=cukpath.ROOT + "/tests/python", env=cukpath.python_child_env(CUK_NO_AVX2=off))
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append(r.stdout)
    assert len(outs[0].splitlines()) == 20 and outs[0] == outs[1]

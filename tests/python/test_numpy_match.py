"""Runs cuk programs with `cukc run --device cpu` and compares what they save (.npy) or
print with the same computation in NumPy. rand/randn are reproduced bit for bit with
philox.py. Run: /usr/bin/python3 -m pytest tests/python (cukc from $CUKC, else
build/bin/cukc)."""
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import philox  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUKC = os.path.abspath(os.environ.get("CUKC") or os.path.join(ROOT, "build", "bin", "cukc"))

if not os.path.exists(CUKC):
    pytest.skip("cukc is not built (%s); run `make build`" % CUKC, allow_module_level=True)

f32 = np.float32
F32_RTOL = 1e-5


def run(src_or_path, tmp_path, *args, is_path=False):
    """Runs a program in tmp_path; returns (stdout lines, {name: array} of saved .npy)."""
    if is_path:
        prog = src_or_path
    else:
        prog = str(tmp_path / "prog.cuk")
        with open(prog, "w") as f:
            f.write(src_or_path)
    p = subprocess.run([CUKC, "run", prog, "--device", "cpu", *args], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        pytest.fail("cukc exited with %d\n--- stderr:\n%s\n--- stdout:\n%s" % (p.returncode, p.stderr, p.stdout))
    saved = {}
    for name in os.listdir(tmp_path):
        if name.endswith(".npy"):
            saved[name[:-4]] = np.load(tmp_path / name)
    return p.stdout.splitlines(), saved


def close(got, want, rtol=F32_RTOL, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, "shape %s, expected %s" % (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


DESIGN_FNS = """
fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] {
    return a * x + y;
}

fn sq(v: f32) -> f32 = v * v;            // expression body

fn rms(x: f32[n]) -> f32 {
    return sqrt(sum(sq(x)) / f32(n));    // scalar fn applied elementwise
}

fn softmax(x: f32[r, c]) -> f32[r, c] {
    let e = exp(x - max(x, axis=1, keepdims=true));
    return e / sum(e, axis=1, keepdims=true);
}
"""


# --- the design example (examples/design_example.cuk), piece by piece ----------------

def test_design_saxpy_rms(tmp_path):
    n = 1 << 16
    _, s = run(DESIGN_FNS + """
fn main() {
    let n = 1 << 16;
    let x = linspace(0.0, 1.0, n);
    let y = rand(n, seed=7);
    let z = saxpy(2.0, x, y);
    save("x.npy", x);
    save("z.npy", z);
    save("sum.npy", sum(z));
    save("rms.npy", rms(z));
    save("last.npy", cumsum(x)[n - 1]);
}
""", tmp_path)
    x = np.linspace(0, 1, n, dtype=np.float32)
    close(s["x"], x, rtol=1e-6, atol=1e-7)
    assert s["x"].dtype == np.float32
    z = f32(2) * s["x"] + philox.rand(n, 7)
    close(s["z"], z, rtol=1e-6)
    close(s["sum"], z.astype(np.float64).sum(), rtol=1e-4)
    close(s["rms"], np.sqrt((z.astype(np.float64) ** 2).mean()), rtol=1e-4)
    close(s["last"], x.astype(np.float64).sum(), rtol=1e-3)


def test_design_softmax(tmp_path):
    _, s = run(DESIGN_FNS + """
fn main() {
    let x = rand(64, 100, seed=3) * 8.0 - 4.0;
    save("p.npy", softmax(x));
}
""", tmp_path)
    x = philox.rand((64, 100), 3) * f32(8) - f32(4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(s["p"], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-8)


def test_design_example_file(tmp_path):
    out, s = run(os.path.join(ROOT, "examples", "design_example.cuk"), tmp_path, is_path=True)
    n = 1 << 20
    x = np.linspace(0, 1, n)
    z = (2 * x + philox.rand(n, 7)).astype(np.float64)
    assert len(out) == 2
    close(float(out[0]), z.sum(), rtol=1e-3)   # f32 sums: the order is the implementation's
    close(float(out[1]), x.sum(), rtol=1e-3)
    acc = s["acc"]
    assert acc.dtype == np.float32 and acc.shape == (n,)
    ref = 45.0 * np.cumsum(z)
    close(acc, ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max())


# --- random numbers ------------------------------------------------------------------------

def test_rand_matches_philox(tmp_path):
    _, s = run("""
fn main() {
    save("r.npy", rand(1000, seed=7));
    save("r2.npy", rand(3, 5, seed=12345));
    save("rd.npy", rand(1000, seed=99, dtype=f64));
    save("big.npy", rand(10, seed=4294967297));
}
""", tmp_path)
    np.testing.assert_array_equal(s["r"], philox.rand(1000, 7))
    np.testing.assert_array_equal(s["r2"], philox.rand((3, 5), 12345))
    assert s["rd"].dtype == np.float64
    np.testing.assert_array_equal(s["rd"], philox.rand(1000, 99, np.float64))
    np.testing.assert_array_equal(s["big"], philox.rand(10, 4294967297))


def test_randn_matches_philox(tmp_path):
    _, s = run("""
fn main() {
    save("n.npy", randn(4096, seed=11));
    save("nd.npy", randn(2, 50, seed=5, dtype=f64));
}
""", tmp_path)
    close(s["n"], philox.randn(4096, 11), rtol=1e-6, atol=1e-7)
    close(s["nd"], philox.randn((2, 50), 5, np.float64), rtol=1e-12, atol=1e-14)
    assert abs(s["n"].mean()) < 0.1 and abs(s["n"].std() - 1) < 0.1


# --- elementwise, broadcasting ---------------------------------------------------------------

MATH = ["sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh", "cosh",
        "atan", "floor", "ceil", "trunc", "round", "abs"]


@pytest.mark.parametrize("fn", MATH)
def test_math_f32(fn, tmp_path):
    _, s = run("""
fn main() {
    let x = rand(2000, seed=21) * 4.0 + 0.01;
    save("y.npy", %s(x));
    save("yd.npy", %s(f64(x)));
}
""" % (fn, fn), tmp_path)
    x = philox.rand(2000, 21) * f32(4) + f32(0.01)
    npfn = {"round": np.round, "abs": np.abs, "atan": np.arctan}.get(fn, getattr(np, fn, None))
    close(s["y"], npfn(x), rtol=2e-6, atol=1e-7)
    close(s["yd"], npfn(x.astype(np.float64)), rtol=1e-14, atol=1e-15)


def test_arith_broadcast(tmp_path):
    _, s = run("""
fn main(a: f32[r, c], b: f32[c], k: i32[r]) {
    save("add.npy", a + b);
    save("mul.npy", a * reshape(f32(k), r, 1));
    save("div.npy", a / (b + 1.0));
    save("mod.npy", a % 0.3);
    save("pow.npy", a ** 1.5);
    save("cmp.npy", a > b);
    save("sel.npy", where(a > b, a, -b));
    save("mm.npy", maximum(minimum(a, 0.75), 0.25));
    save("atan2.npy", atan2(a - 0.5, b + 0.1));
}
""", tmp_path, *_npy_args(tmp_path, a=np.random.default_rng(1).random((7, 9), np.float32),
                            b=np.random.default_rng(2).random(9, np.float32),
                            k=np.arange(7, dtype=np.int32) - 3))
    a = np.load(tmp_path / "in_a.npy")
    b = np.load(tmp_path / "in_b.npy")
    k = np.load(tmp_path / "in_k.npy")
    close(s["add"], a + b)
    close(s["mul"], a * k.astype(np.float32)[:, None])
    close(s["div"], a / (b + f32(1)))
    close(s["mod"], np.fmod(a, f32(0.3)), atol=1e-6)
    close(s["pow"], a ** f32(1.5))
    np.testing.assert_array_equal(s["cmp"], a > b)
    close(s["sel"], np.where(a > b, a, -b))
    close(s["mm"], np.clip(a, 0.25, 0.75))
    close(s["atan2"], np.arctan2(a - f32(0.5), b + f32(0.1)))


def _npy_args(tmp_path, **arrays):
    args = []
    for name, arr in arrays.items():
        path = tmp_path / ("in_%s.npy" % name)
        np.save(path, arr)
        args.append("%s=%s" % (name, path))
    return args


def test_integer_semantics(tmp_path):
    a = np.array([7, -7, 7, -7, 5, 0, -2147483648, 2147483647], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 0, 3, -1, 1], dtype=np.int32)
    _, s = run("""
fn main(a: i32[n], b: i32[n]) {
    save("div.npy", a / b);
    save("mod.npy", a % b);
    save("add.npy", a + b);
    save("mul.npy", a * b);
    save("shl.npy", a << 3);
    save("shr.npy", a >> 1);
}
""", tmp_path, *_npy_args(tmp_path, a=a, b=b))
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        safe = np.where(b64 == 0, 1, b64)
        q = np.where(b64 == 0, 0, np.trunc(a64 / safe)).astype(np.int64)
        r = np.where(b64 == 0, 0, a64 - q * safe)
        np.testing.assert_array_equal(s["div"], q.astype(np.int32))
        np.testing.assert_array_equal(s["mod"], r.astype(np.int32))
        np.testing.assert_array_equal(s["add"], a + b)
        np.testing.assert_array_equal(s["mul"], a * b)
        np.testing.assert_array_equal(s["shl"], (a64 << 3).astype(np.int32))
        np.testing.assert_array_equal(s["shr"], a >> 1)
    assert s["div"].dtype == np.int32


# --- reductions and scans ----------------------------------------------------------------------

def test_reductions(tmp_path):
    _, s = run("""
fn main() {
    let x = rand(37, 53, seed=8) - 0.5;
    save("sum.npy", sum(x));
    save("sum0.npy", sum(x, axis=0));
    save("sum1k.npy", sum(x, axis=1, keepdims=true));
    save("max1.npy", max(x, axis=1));
    save("min0.npy", min(x, axis=0));
    save("prod1.npy", prod(x + 1.0, axis=1));
    save("mean.npy", mean(x));
    save("mean0.npy", mean(x, axis=0));
    save("amax.npy", argmax(x));
    save("amin1.npy", argmin(x, axis=1));
    save("amax0.npy", argmax(x, axis=0));
    save("any.npy", any(x > 0.49, axis=1));
    save("all.npy", all(x > -0.49, axis=0));
    save("var.npy", variance(reshape(x, 37 * 53)));
    save("std.npy", std(reshape(x, 37 * 53)));
    save("red.npy", reduce(|a, b| maximum(a, b), -1.0, x, axis=1));
}
""", tmp_path)
    x = philox.rand((37, 53), 8) - f32(0.5)
    xd = x.astype(np.float64)
    close(s["sum"], xd.sum(), rtol=1e-4, atol=1e-4)
    close(s["sum0"], xd.sum(0), rtol=1e-4, atol=1e-5)
    close(s["sum1k"], xd.sum(1, keepdims=True), rtol=1e-4, atol=1e-5)
    close(s["max1"], x.max(1))
    close(s["min0"], x.min(0))
    close(s["prod1"], (xd + 1).prod(1), rtol=1e-4)
    close(s["mean"], xd.mean(), rtol=1e-4, atol=1e-6)
    close(s["mean0"], xd.mean(0), rtol=1e-4, atol=1e-6)
    assert int(s["amax"]) == int(np.argmax(x))
    np.testing.assert_array_equal(s["amin1"], x.argmin(1))
    np.testing.assert_array_equal(s["amax0"], x.argmax(0))
    assert s["amin1"].dtype == np.int64
    np.testing.assert_array_equal(s["any"], (x > f32(0.49)).any(1))
    np.testing.assert_array_equal(s["all"], (x > f32(-0.49)).all(0))
    close(s["var"], xd.var(), rtol=1e-4)
    close(s["std"], xd.std(), rtol=1e-4)
    close(s["red"], np.maximum(x.max(1), -1))


def test_scans(tmp_path):
    _, s = run("""
fn main() {
    let x = rand(1000, seed=2);
    let k = (iota(1000) * 7919) % 1000;
    save("cs.npy", cumsum(x));
    save("csx.npy", cumsum(x, exclusive=true));
    save("ci.npy", cumsum(k));
    save("cix.npy", cumsum(k, exclusive=true));
    save("cmin.npy", cummin(k));
    save("cmax.npy", cummax(x));
    save("cp.npy", cumprod(x + 0.5));
    save("sc.npy", scan(|a, b| a + b, 0, k));
    save("m.npy", cumsum(reshape(k, 20, 50), axis=1));
    save("m0.npy", cumsum(reshape(k, 20, 50), axis=0));
    save("flat.npy", cumsum(reshape(k, 20, 50)));
}
""", tmp_path)
    x = philox.rand(1000, 2).astype(np.float64)
    k = (np.arange(1000) * 7919) % 1000
    close(s["cs"], np.cumsum(x), rtol=1e-4)
    close(s["csx"], np.concatenate([[0], np.cumsum(x)[:-1]]), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(s["ci"], np.cumsum(k))
    np.testing.assert_array_equal(s["cix"], np.concatenate([[0], np.cumsum(k)[:-1]]))
    np.testing.assert_array_equal(s["cmin"], np.minimum.accumulate(k))
    close(s["cmax"], np.maximum.accumulate(x))
    close(s["cp"], np.cumprod(x + 0.5), rtol=1e-3)
    np.testing.assert_array_equal(s["sc"], np.cumsum(k))
    np.testing.assert_array_equal(s["m"], np.cumsum(k.reshape(20, 50), axis=1))
    np.testing.assert_array_equal(s["m0"], np.cumsum(k.reshape(20, 50), axis=0))
    np.testing.assert_array_equal(s["flat"], np.cumsum(k))


# --- structure: slicing, gather, concat, reshape, transpose, dot ------------------------------

def test_structure(tmp_path):
    _, s = run("""
fn main() {
    let x = iota(100) * 3;
    let m = reshape(iota(60), 6, 10);
    save("s1.npy", x[5:50:7]);
    save("s2.npy", x[90:10:-9]);
    save("s3.npy", x[-20:]);
    save("s4.npy", m[1:5, ::3]);
    save("s5.npy", m[:, 7]);
    save("s6.npy", m[-2, :]);
    save("g.npy", x[(iota(30) * 37) % 100]);
    save("g2.npy", m[reverse(iota(3)) * 2]);
    save("c.npy", concat(m, m * 2, axis=1));
    save("c0.npy", concat(m, m[0:2, :]));
    save("r.npy", reshape(m, 5, -1));
    save("t.npy", transpose(m));
    save("rev.npy", reverse(m));
    let a = rand(8, 5, seed=1);
    let b = rand(5, 3, seed=2);
    save("mv.npy", dot(a, rand(5, seed=3)));
    save("mm.npy", dot(a, b));
    save("vv.npy", dot(rand(5, seed=3), rand(5, seed=4)));
}
""", tmp_path)
    x = np.arange(100) * 3
    m = np.arange(60).reshape(6, 10)
    eq = np.testing.assert_array_equal
    eq(s["s1"], x[5:50:7])
    eq(s["s2"], x[90:10:-9])
    eq(s["s3"], x[-20:])
    eq(s["s4"], m[1:5, ::3])
    eq(s["s5"], m[:, 7])
    eq(s["s6"], m[-2, :])
    eq(s["g"], x[(np.arange(30) * 37) % 100])
    eq(s["g2"], m[np.arange(3)[::-1] * 2])
    eq(s["c"], np.concatenate([m, m * 2], axis=1))
    eq(s["c0"], np.concatenate([m, m[0:2, :]]))
    eq(s["r"], m.reshape(5, -1))
    eq(s["t"], m.T)
    eq(s["rev"], m[::-1])
    a = philox.rand((8, 5), 1).astype(np.float64)
    b = philox.rand((5, 3), 2).astype(np.float64)
    v = philox.rand(5, 3).astype(np.float64)
    close(s["mv"], a @ v, rtol=1e-5)
    close(s["mm"], a @ b, rtol=1e-5)
    close(s["vv"], v @ philox.rand(5, 4).astype(np.float64), rtol=1e-5)


# --- pad, roll, stack (np.pad with constant_values, np.roll, np.stack) --------------------

def test_pad_roll_stack(tmp_path):
    _, s = run("""
fn step(x: f32[n, m]) -> f32[n, m] {
    let p = pad(x, 1);
    return 0.25 * (p[0:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, 0:-2] + p[1:-1, 2:]);
}
fn main() {
    let v = iota(7) * 3 - 5;
    let m = rand(5, 6, seed=4);
    let c = reshape(iota(60), 3, 4, 5);
    let d = reshape(linspace(-1.0, 1.0, 24, dtype=f64), 2, 3, 4);
    save("p1.npy", pad(v, 3));
    save("p2.npy", pad(m, 2, value=-0.5));
    save("p3.npy", pad(c, 1, value=7));
    save("p4.npy", pad(d, 0));
    save("p5.npy", pad(i32(v) > 0, 2, value=true));
    save("p6.npy", pad(reshape(zeros(0), 0, 2), 1, value=3.0));
    save("st.npy", step(m));
    save("stb.npy", step(rand(67, 129, seed=9)));
    save("pc.npy", pad(c, 2)[1:-1, ::2, 3:]);
    save("r1.npy", roll(v, 3));
    save("r2.npy", roll(v, -10));
    save("r3.npy", roll(m, 2, axis=0));
    save("r4.npy", roll(m, -7, axis=-1));
    save("r5.npy", roll(c, 5));
    save("r6.npy", roll(c, -2, axis=1));
    save("r7.npy", roll(d, 13, axis=2));
    save("r8.npy", roll(i32(v), 100));
    save("r9.npy", roll(i32(v) % 2 == 0, -1));
    save("r10.npy", roll(reshape(zeros(0), 3, 0), 2, axis=1));
    save("r11.npy", roll(roll(m, 1, axis=0), -1, axis=1)[1:4]);
    save("s1.npy", stack(v, v * 2));
    save("s2.npy", stack(m, m * 2.0, m * 3.0, axis=2));
    save("s3.npy", stack(c, c + 1, axis=-2));
    save("s4.npy", stack(d, d, axis=1));
    save("s5.npy", stack(i32(v) > 0, i32(v) < 3, axis=-1));
    save("s6.npy", stack(zeros(0), zeros(0), axis=1));
    save("s7.npy", stack(1, 2, 3, 4));
    save("s8.npy", reverse(stack(pad(v, 1), roll(pad(v, 1), 2)))[:, 1:]);
}
""", tmp_path)
    v = np.arange(7) * 3 - 5
    m = philox.rand((5, 6), 4)
    c = np.arange(60).reshape(3, 4, 5)
    d = np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)
    eq = np.testing.assert_array_equal

    def step(x):
        p = np.pad(x, 1)
        return f32(0.25) * (p[0:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, 0:-2] + p[1:-1, 2:])

    eq(s["p1"], np.pad(v, 3))
    eq(s["p2"], np.pad(m, 2, constant_values=f32(-0.5)))
    eq(s["p3"], np.pad(c, 1, constant_values=7))
    eq(s["p4"], d)
    eq(s["p5"], np.pad(v > 0, 2, constant_values=True))
    eq(s["p6"], np.pad(np.zeros((0, 2), f32), 1, constant_values=3))
    close(s["st"], step(m))
    close(s["stb"], step(philox.rand((67, 129), 9)))
    eq(s["pc"], np.pad(c, 2)[1:-1, ::2, 3:])
    eq(s["r1"], np.roll(v, 3))
    eq(s["r2"], np.roll(v, -10))
    eq(s["r3"], np.roll(m, 2, axis=0))
    eq(s["r4"], np.roll(m, -7, axis=-1))
    eq(s["r5"], np.roll(c, 5))
    eq(s["r6"], np.roll(c, -2, axis=1))
    eq(s["r7"], np.roll(d, 13, axis=2))
    eq(s["r8"], np.roll(v.astype(np.int32), 100))
    eq(s["r9"], np.roll(v % 2 == 0, -1))
    eq(s["r10"], np.zeros((3, 0), f32))
    eq(s["r11"], np.roll(np.roll(m, 1, axis=0), -1, axis=1)[1:4])
    eq(s["s1"], np.stack([v, v * 2]))
    eq(s["s2"], np.stack([m, m * 2, m * 3], axis=2))
    eq(s["s3"], np.stack([c, c + 1], axis=-2))
    eq(s["s4"], np.stack([d, d], axis=1))
    eq(s["s5"], np.stack([v > 0, v < 3], axis=-1))
    eq(s["s6"], np.stack([np.zeros(0, f32)] * 2, axis=1))
    eq(s["s7"], np.stack([1, 2, 3, 4]))
    eq(s["s8"], np.stack([np.pad(v, 1), np.roll(np.pad(v, 1), 2)])[::-1][:, 1:])
    for k in ("p2", "st", "r3", "s2"):
        assert s[k].dtype == np.float32, k
    assert s["r7"].dtype == np.float64 and s["r8"].dtype == np.int32 and s["s5"].dtype == np.bool_


def test_generators(tmp_path):
    _, s = run("""
fn main() {
    save("i.npy", iota(7));
    save("i32.npy", iota(7, dtype=i32));
    save("z.npy", zeros(2, 3));
    save("o.npy", ones(4, dtype=f64));
    save("f.npy", full(2.5, 3, 2));
    save("l.npy", linspace(-1.0, 3.0, 9));
    save("l1.npy", linspace(5.0, 6.0, 1));
    save("ld.npy", linspace(0.0, 1.0, 7, dtype=f64));
}
""", tmp_path)
    eq = np.testing.assert_array_equal
    eq(s["i"], np.arange(7))
    assert s["i"].dtype == np.int64 and s["i32"].dtype == np.int32
    eq(s["z"], np.zeros((2, 3), np.float32))
    assert s["z"].dtype == np.float32
    eq(s["o"], np.ones(4))
    assert s["o"].dtype == np.float64
    eq(s["f"], np.full((3, 2), 2.5, np.float32))
    close(s["l"], np.linspace(-1, 3, 9, dtype=np.float32), rtol=1e-6, atol=1e-7)
    eq(s["l1"], np.array([5.0], np.float32))
    close(s["ld"], np.linspace(0, 1, 7), rtol=1e-15, atol=1e-16)
    assert s["ld"][-1] == 1.0


def test_main_array_params_roundtrip(tmp_path):
    rng = np.random.default_rng(7)
    arrays = dict(a=rng.standard_normal((4, 6)).astype(np.float32),
                  d=rng.standard_normal(10),
                  i=rng.integers(-100, 100, 12).astype(np.int64),
                  u=rng.integers(0, 1000, 5).astype(np.uint32),
                  b=rng.random(6) > 0.5)
    _, s = run("""
fn main(a: f32[r, c], d: f64[n], i: i64[k], u: u32[m], b: bool[q]) {
    save("a.npy", a);
    save("d.npy", d);
    save("i.npy", i);
    save("u.npy", u);
    save("b.npy", b);
    save("shape.npy", concat(iota(1) * 0 + r, iota(1) * 0 + c, iota(1) * 0 + n));
}
""", tmp_path, *_npy_args(tmp_path, **arrays))
    for name, arr in arrays.items():
        assert s[name].dtype == arr.dtype, name
        np.testing.assert_array_equal(s[name], arr)
    np.testing.assert_array_equal(s["shape"], [4, 6, 10])


def test_print_matches_numpy_scalars(tmp_path):
    vals32 = [0.1, 1 / 3, 1e20, 1e-5, 123456.789, -2.5]
    out, _ = run("fn main() {\n" + "".join(
        "    let v%d: f32 = %s;\n    print(v%d);\n" % (k, np.format_float_positional(v, trim="0"), k) for k, v in enumerate(vals32)) +
        "    let d: f64 = 0.1;\n    print(d);\n}\n", tmp_path)
    assert out == ["%.9g" % float(np.float32(v)) for v in vals32] + ["%.17g" % 0.1]


# --- the examples ----------------------------------------------------------------------------------

def test_example_monte_carlo_pi(tmp_path):
    out, _ = run(os.path.join(ROOT, "examples", "monte_carlo_pi.cuk"), tmp_path, is_path=True)
    n = 1 << 20
    est = []
    for s in range(4):
        x, y = philox.rand(n, 2 * s + 1), philox.rand(n, 2 * s + 2)
        est.append(4.0 * np.sum(x * x + y * y <= f32(1)) / n)
    got = [float(v) for v in out]
    close(got, est + [sum(est) / 4], rtol=1e-6)


def test_example_statistics(tmp_path):
    out, _ = run(os.path.join(ROOT, "examples", "statistics.cuk"), tmp_path, is_path=True)
    n = 1 << 20
    x = philox.randn(n, 42) * f32(2) + f32(5)
    xd = x.astype(np.float64)
    assert len(out) == 7
    close(float(out[0]), xd.mean(), rtol=1e-4)
    close(float(out[1]), xd.std(ddof=1), rtol=1e-3)
    assert f32(float(out[2])) == x.min() and f32(float(out[3])) == x.max()
    assert int(out[4]) == int(np.argmax(x))
    counts = np.bincount(np.clip(np.floor(x).astype(np.int64), 0, 9), minlength=10)
    assert [int(v) for v in out[6].strip("[]").split()] == counts.tolist()


def test_example_jacobi(tmp_path):
    out, _ = run(os.path.join(ROOT, "examples", "jacobi.cuk"), tmp_path, is_path=True)
    n = 64
    A = 4 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    exact = np.linalg.solve(A, np.ones(n))
    assert out[1] == "true"
    close(float(out[2]), exact[0], rtol=1e-8)
    close(float(out[3]), exact[n // 2], rtol=1e-8)


@pytest.mark.parametrize("name", sorted(f[:-4] for f in os.listdir(os.path.join(ROOT, "examples"))
                                        if f.endswith(".cuk")))
def test_example_runs(name, tmp_path):
    out, _ = run(os.path.join(ROOT, "examples", name + ".cuk"), tmp_path, is_path=True)
    assert out, "no output"

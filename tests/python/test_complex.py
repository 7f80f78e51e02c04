"""The complex dtypes c64 and c128 through the Python package, against NumPy's complex64
and complex128: arithmetic (+ - * exact on small integer parts, / to an ulp: both use
Smith's division, NumPy multiplying by the reciprocal of the denominator), the functions
(exp log sqrt sin cos tan sinh cosh tanh, pow) to a relative tolerance, abs arg real imag
conj, sum/mean/cumsum (axis=, segments=), @, casts both ways (complex -> real keeps the
real part, as NumPy's astype), where, == and !=, compaction, reduce_by_index, .npy files,
printing; scalar arguments (Python and NumPy complex numbers; NumPy's same_kind rule: a
real number may become complex, a complex one never real) and results (NumPy complex
scalars); DLPack (kDLComplex) and the CUDA array interface (<c8, <c16); gpuarray and
cumath with NumPy's promotion. Orderings are compile errors (and TypeError in gpuarray).
Sizes 0, 1, 33 and 1025; the CPU backend and, where a GPU is usable, the GPU; the
GPU-only tests (DeviceArray, PyTorch, CuPy, raw kernels) at the end."""
import warnings

import numpy as np
import pytest

import cukpath
import cuk
import cuk.cumath as cm
import cuk.gpuarray as ga

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])
SIZES = [0, 1, 33, 1025]
CT = {"c64": np.complex64, "c128": np.complex128}
PART = {"c64": "f32", "c128": "f64"}
RTOL = {"c64": 1e-5, "c128": 1e-12}  # the functions
DIV_RTOL = {"c64": 1e-6, "c128": 1e-14}
needs_gpu = pytest.mark.skipif("gpu" not in DEVICES, reason="needs a GPU")
ComplexWarning = getattr(np, "exceptions", np).ComplexWarning  # NumPy 2 moved it
FUNCS = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh"]

SRC = "".join(f"""
fn add_{t}(a: {t}[n], b: {t}[n]) -> {t}[n] = a + b;
fn sub_{t}(a: {t}[n], b: {t}[n]) -> {t}[n] = a - b;
fn mul_{t}(a: {t}[n], b: {t}[n]) -> {t}[n] = a * b;
fn div_{t}(a: {t}[n], b: {t}[n]) -> {t}[n] = a / b;
fn neg_{t}(a: {t}[n]) -> {t}[n] = -a;
fn lit_{t}(a: {t}[n]) -> {t}[n] = a * 2.0 + 1.0 - 3 * a;
fn pow_{t}(a: {t}[n], b: {t}[n]) -> {t}[n] = a ** b;
fn powlit_{t}(a: {t}[n]) -> {t}[n] = a ** 2.0;
fn scal_{t}(a: {t}[n], s: {t}) -> {t}[n] = a * s;
fn one_{t}(s: {t}) -> {t} = s;
fn parts_{t}(a: {t}[n]) -> ({p}[n], {p}[n], {t}[n], {p}[n], {p}[n]) = (real(a), imag(a), conj(a), abs(a), arg(a));
fn make_{t}(re: {p}[n], im: {p}[n]) -> {t}[n] = complex(re, im);
fn eq_{t}(a: {t}[n], b: {t}[n]) -> bool[n] = a == b;
fn ne_{t}(a: {t}[n], b: {t}[n]) -> bool[n] = a != b;
fn where_{t}(a: {t}[n], t: {p}) -> {t}[n] = where(abs(a) > t, a, conj(a));
fn big_{t}(a: {t}[n], t: {p}) -> {t}[?] = a[abs(a) > t];
fn sum_{t}(a: {t}[n]) -> {t} = sum(a);
fn mean_{t}(a: {t}[n]) -> {t} = mean(a);
fn cumsum_{t}(a: {t}[n]) -> {t}[n] = cumsum(a);
fn sum0_{t}(a: {t}[r, c]) -> {t}[c] = sum(a, axis=0);
fn sum1_{t}(a: {t}[r, c]) -> {t}[r] = sum(a, axis=1);
fn mean1_{t}(a: {t}[r, c]) -> {t}[r] = mean(a, axis=1);
fn cumsum0_{t}(a: {t}[r, c]) -> {t}[r, c] = cumsum(a, axis=0);
fn segsum_{t}(a: {t}[n], offs: i64[k]) -> {t}[?] = sum(a, segments=offs);
fn segcumsum_{t}(a: {t}[n], offs: i64[k]) -> {t}[n] = cumsum(a, segments=offs);
fn matmul_{t}(a: {t}[r, k], b: {t}[k, c]) -> {t}[r, c] = a @ b;
fn dot_{t}(a: {t}[n], b: {t}[n]) -> {t} = dot(a, b);
fn rbi_{t}(dest: {t}[m], idx: i64[n], vals: {t}[n]) -> {t}[m] = reduce_by_index(dest, add, idx, vals);
fn show_{t}(a: {t}[n], s: {t}) {{ print(a); print(s); }}
""" + "".join(f"fn {f}_{t}(a: {t}[n]) -> {t}[n] = {f}(a);\n" for f in FUNCS)
    for t, p in PART.items()) + """
fn c64_c128(a: c64[n]) -> c128[n] = c128(a);
fn c128_c64(a: c128[n]) -> c64[n] = c64(a);
"""
# real <-> complex casts, every real dtype NumPy has a name for
REALS = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
         "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64}
CASTS = "".join(f"fn {r}_to_{t}(a: {r}[n]) -> {t}[n] = {t}(a);\nfn {t}_to_{r}(a: {t}[n]) -> {r}[n] = {r}(a);\n"
                for r in REALS for t in CT)


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(SRC + CASTS, device=request.param)


def ints(n, ct, seed, lo=-8, hi=9):
    """Complex numbers with small integer parts (every sum and product exact)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(lo, hi, n) + 1j * rng.integers(lo, hi, n)).astype(ct)


def smooth(n, ct, seed, r=2.0):
    """Complex numbers with parts in [-r, r], none near 0 (where log and the relative
    error of small results need care) and none on the negative real axis."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(-r, r, n) + 1j * rng.uniform(-r, r, n)
    z[np.abs(z) < 0.25] += 0.5 + 0.5j
    return z.astype(ct)


def close(got, want, rtol):
    """|got - want| <= rtol * (|want| + 1), elementwise (complex magnitudes)."""
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def err(f, *args):
    with pytest.raises(cuk.Error) as e:
        f(*args)
    return str(e.value)


# ---- arithmetic ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_arithmetic_matches_numpy(m, t, n):
    ct = CT[t]
    a, b = ints(n, ct, 1), ints(n, ct, 2)
    b[b == 0] = 3 - 2j
    for op, want in [("add", a + b), ("sub", a - b), ("mul", a * b)]:
        got = m[f"{op}_{t}"](a, b)
        assert got.dtype == ct and got.shape == (n,)
        np.testing.assert_array_equal(got, want, err_msg=op)
    np.testing.assert_array_equal(m[f"neg_{t}"](a), -a)
    np.testing.assert_array_equal(m[f"lit_{t}"](a), a * 2 + 1 - 3 * a)
    q = m[f"div_{t}"](a, b)
    assert q.dtype == ct
    np.testing.assert_allclose(q, a / b, rtol=DIV_RTOL[t], atol=0)


@pytest.mark.parametrize("t", list(CT))
def test_division_exact_cases(m, t):
    ct = CT[t]
    a = np.array([1 + 2j, -3 + 4j, 5 - 6j, 7j, 0, 8, 1e30 + 1e30j, 2 + 2j], ct)
    b = np.array([2, 0.25j, -4, 1j, 3 - 4j, 2 - 2j, 1e30 + 1e30j, 1 + 1j], ct)
    want = np.array([0.5 + 1j, 16 + 12j, -1.25 + 1.5j, 7, 0, 2 + 2j, 1, 2], ct)
    np.testing.assert_allclose(a / b, want, rtol=DIV_RTOL[t])  # NumPy: to an ulp (it multiplies by 1 / d)
    got = m[f"div_{t}"](a, b)
    np.testing.assert_allclose(got, want, rtol=DIV_RTOL[t])
    if m.backend == "cpu":  # NumPy's loop, step for step (the GPU may contract a * b + c into an fma)
        np.testing.assert_array_equal(got.view(np.uint8), (a / b).view(np.uint8))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_comparisons_and_where(m, t, n):
    ct = CT[t]
    a, b = ints(n, ct, 3, -2, 3), ints(n, ct, 4, -2, 3)
    b[: n // 2] = a[: n // 2]
    b[n // 2: n // 2 + 3] = a[n // 2: n // 2 + 3].real  # equal real parts, different imaginary
    for op, f in [("eq", np.equal), ("ne", np.not_equal)]:
        got = m[f"{op}_{t}"](a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, f(a, b), err_msg=op)
    if n > 5:
        assert m[f"eq_{t}"](a, b).any() and not m[f"eq_{t}"](a, b).all()
    np.testing.assert_array_equal(m[f"where_{t}"](a, 1.5), np.where(np.abs(a) > 1.5, a, np.conj(a)))
    big = m[f"big_{t}"](a, 1.5)
    assert big.dtype == ct
    np.testing.assert_array_equal(big, a[np.abs(a) > 1.5])
    np.testing.assert_array_equal(m[f"big_{t}"](a, 100.0), np.zeros(0, ct))


def test_nan_compares_unequal(m):
    a = np.array([complex(np.nan, 0), complex(0, np.nan), 1 + 1j], np.complex64)
    np.testing.assert_array_equal(m.eq_c64(a, a), [False, False, True])
    np.testing.assert_array_equal(m.ne_c64(a, a), [True, True, False])


# ---- functions ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
@pytest.mark.parametrize("f", FUNCS)
def test_functions_match_numpy(m, t, f, n):
    ct = CT[t]
    z = smooth(n, ct, 5)
    got = m[f"{f}_{t}"](z)
    assert got.dtype == ct and got.shape == (n,)
    # the reference in double precision, from the same inputs
    close(got, getattr(np, f)(z.astype(np.complex128)), RTOL[t])


@pytest.mark.parametrize("t", list(CT))
def test_functions_on_the_axes(m, t):
    # NumPy's principal branches: sqrt(-4) is 2j, log(-1) is pi j, on the real axis sin and
    # exp are real
    ct = CT[t]
    np.testing.assert_allclose(m[f"sqrt_{t}"](np.array([-4, 4, 2j, 0], ct)), np.array([2j, 2, 1 + 1j, 0], ct),
                               rtol=RTOL[t], atol=0)
    np.testing.assert_allclose(m[f"log_{t}"](np.array([-1, 1, 1j, np.e], ct)),
                               np.array([np.pi * 1j, 0, np.pi / 2 * 1j, 1], ct), rtol=RTOL[t], atol=RTOL[t])
    x = np.linspace(-3, 3, 13).astype(ct)
    for f in ["exp", "sin", "cos", "sinh", "cosh", "tanh"]:
        got = m[f"{f}_{t}"](x)
        close(got, getattr(np, f)(x.real.astype(np.float64)), RTOL[t])
        assert np.all(got.imag == 0), f


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_pow_matches_numpy(m, t, n):
    ct = CT[t]
    a, b = smooth(n, ct, 6, 1.5), smooth(n, ct, 7, 1.0)
    close(m[f"pow_{t}"](a, b), a.astype(np.complex128) ** b.astype(np.complex128), RTOL[t] * 10)
    # NumPy squares by multiplying, the language by exp(2 log z): equal to rounding
    close(m[f"powlit_{t}"](a), a.astype(np.complex128) ** 2, RTOL[t] * 10)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_parts_abs_arg_conj(m, t, n):
    ct = CT[t]
    a = smooth(n, ct, 8)
    a[: min(n, 1)] = -3 + 4j
    re, im, cj, ab, ar = m[f"parts_{t}"](a)
    pt = np.empty(0, ct).real.dtype
    for x in (re, im, ab, ar):
        assert x.dtype == pt and x.shape == (n,)
    np.testing.assert_array_equal(re, a.real)
    np.testing.assert_array_equal(im, a.imag)
    np.testing.assert_array_equal(cj, np.conj(a))
    assert cj.dtype == ct
    np.testing.assert_allclose(ab, np.abs(a), rtol=DIV_RTOL[t] * 2)
    np.testing.assert_allclose(ar, np.angle(a), rtol=DIV_RTOL[t] * 4)
    if n:
        assert ab[0] == 5  # hypot(3, 4), exact
    np.testing.assert_array_equal(m[f"make_{t}"](re, im), a)


def test_conj_flips_the_sign_of_a_zero_imaginary_part(m):
    _, _, cj, _, _ = m.parts_c128(np.array([2 + 0j, complex(1, -0.0)]))
    assert np.signbit(cj.imag).tolist() == list(np.signbit(np.conj(np.array([2 + 0j, complex(1, -0.0)])).imag))


# ---- reductions and scans -------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_reductions_and_scans(m, t, n):
    ct = CT[t]
    a = ints(n, ct, 9)
    s = m[f"sum_{t}"](a)
    assert type(s) is ct and s == a.sum()  # small integers: exact in any order
    np.testing.assert_array_equal(m[f"cumsum_{t}"](a), np.cumsum(a))
    if n:
        mu = m[f"mean_{t}"](a)
        assert type(mu) is ct
        np.testing.assert_allclose(mu, a.mean(), rtol=DIV_RTOL[t])
    else:
        assert np.isnan(m[f"mean_{t}"](a).real)  # 0 / 0
    a2 = ints(n * 3, ct, 10).reshape(n, 3)
    np.testing.assert_array_equal(m[f"sum0_{t}"](a2), a2.sum(axis=0))
    np.testing.assert_array_equal(m[f"sum1_{t}"](a2), a2.sum(axis=1))
    np.testing.assert_array_equal(m[f"cumsum0_{t}"](a2), np.cumsum(a2, axis=0))
    np.testing.assert_allclose(m[f"mean1_{t}"](a2), a2.mean(axis=1) if n else np.zeros(0, ct), rtol=DIV_RTOL[t])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_segmented_sums(m, t, n):
    ct = CT[t]
    a = ints(n, ct, 11)
    offs = np.array([0, n // 3, n // 3, n // 2, n], np.int64)  # the second segment is empty
    want = np.array([a[offs[s]:offs[s + 1]].sum() for s in range(len(offs) - 1)], ct)
    np.testing.assert_array_equal(m[f"segsum_{t}"](a, offs), want)
    wantc = np.concatenate([np.cumsum(a[offs[s]:offs[s + 1]]) for s in range(len(offs) - 1)] + [np.zeros(0, ct)])
    np.testing.assert_array_equal(m[f"segcumsum_{t}"](a, offs), wantc)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_matmul_and_dot(m, t, n):
    ct = CT[t]
    a, b = smooth(n * 7, ct, 12).reshape(n, 7), smooth(7 * 5, ct, 13).reshape(7, 5)
    got = m[f"matmul_{t}"](a, b)
    assert got.dtype == ct and got.shape == (n, 5)
    close(got, a.astype(np.complex128) @ b.astype(np.complex128), RTOL[t])
    x, y = ints(n, ct, 14), ints(n, ct, 15)
    assert m[f"dot_{t}"](x, y) == np.dot(x, y)  # no conjugation, as numpy.dot; exact here
    # wide: k = 1025
    a, b = ints(3 * 1025, ct, 16).reshape(3, 1025), ints(1025 * 2, ct, 17).reshape(1025, 2)
    np.testing.assert_array_equal(m[f"matmul_{t}"](a, b), a @ b)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_reduce_by_index_add(m, t, n):
    ct = CT[t]
    vals = ints(n, ct, 18)
    idx = (np.arange(n) * 7 % 5).astype(np.int64)
    dest = ints(5, ct, 19)
    want = dest.copy()
    np.add.at(want, idx, vals)
    np.testing.assert_array_equal(m[f"rbi_{t}"](dest, idx, vals), want)


# ---- casts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("r", list(REALS))
def test_casts_real_and_complex(m, r, n):
    rt = REALS[r]
    # values every dtype holds: 0..100 for the unsigned ones, -50..50 (and halves) else
    base = np.arange(n) % 101 if np.dtype(rt).kind in "ub" else np.arange(n) % 101 - 50
    x = (base % 2 if rt is np.bool_ else base).astype(rt)
    if np.dtype(rt).kind == "f":
        x = (x / 2).astype(rt)
    for t, ct in CT.items():
        got = m[f"{r}_to_{t}"](x)
        assert got.dtype == ct
        np.testing.assert_array_equal(got, x.astype(ct))
        assert not np.any(np.signbit(got.imag))
        z = (x.astype(np.float64) + 1j * np.where(np.arange(n) % 3 == 0, 0.0, 7.0)).astype(ct)
        back = m[f"{t}_to_{r}"](z)
        assert back.dtype == rt
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ComplexWarning)
            # NumPy's astype: the real part (bool: z != 0, imaginary part included)
            want = z != 0 if rt is np.bool_ else z.astype(rt)
        np.testing.assert_array_equal(back, want, err_msg=f"{t} -> {r}")


@pytest.mark.parametrize("n", SIZES)
def test_casts_between_complex_types(m, n):
    z = smooth(n, np.complex128, 20) * 1e3 + 1e-3
    down = m.c128_c64(z)
    assert down.dtype == np.complex64
    np.testing.assert_array_equal(down, z.astype(np.complex64))  # each part rounded once
    up = m.c64_c128(down)
    assert up.dtype == np.complex128
    np.testing.assert_array_equal(up, down.astype(np.complex128))


# ---- scalar arguments and results ----------------------------------------------------------------

@pytest.mark.parametrize("t", list(CT))
def test_scalar_arguments(m, t):
    ct = CT[t]
    a = np.array([1 + 2j, -3], ct)
    for s in [2j, 1.5 - 0.5j, np.complex64(1 - 1j), np.complex128(0.25j), np.array(3 + 1j), 3, -2.5, True,
              np.float32(0.5), np.int8(-4), np.uint64(7), np.float16(1.5)]:
        got = m[f"scal_{t}"](a, s)
        assert got.dtype == ct
        np.testing.assert_array_equal(got, a * ct(s), err_msg=repr(s))
    r = m[f"one_{t}"](1 / 3 + 0.1j)
    assert type(r) is ct and r == ct(1 / 3 + 0.1j)  # each part rounded once
    assert m[f"one_{t}"](2**60 + 1) == ct(2**60 + 1)


def test_complex_does_not_become_real(m):
    for s in [1j, np.complex64(2), np.complex128(1 + 0j), np.array(1j)]:
        msg = err(m.where_c64, np.ones(2, np.complex64), s)
        assert "parameter 't' is float32" in msg and "same_kind" in msg and "abs(z)" in msg, msg
    msg = err(m.c64_to_i32, np.ones(2, np.complex128))  # wrong complex type: a dtype error
    assert "is an array of complex64, but the argument has dtype complex128" in msg
    msg = err(m.i32_to_c64, np.ones(2, np.complex64))
    assert "is an array of int32, but the argument has dtype complex64" in msg and "abs(x)" in msg
    # lists: complex numbers for a complex parameter, never for a real one
    np.testing.assert_array_equal(m.add_c64([1j, 2], [1, 1 + 1j]), np.complex64([1 + 1j, 3 + 1j]))
    np.testing.assert_array_equal(m.add_c128([1, 2], [0.5, True]), [1.5, 3])
    msg = err(m.f32_to_c64, [1.0, 2j])
    assert "holds complex values" in msg and "numpy.real" in msg, msg


# ---- files and printing ----------------------------------------------------------------------

@pytest.mark.parametrize("t", list(CT))
@pytest.mark.parametrize("n", SIZES)
def test_npy_round_trip(t, n, tmp_path):
    ct = CT[t]
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    z = ints(n, ct, 21)
    np.save(src, z)
    for dev in DEVICES:
        p = cuk.compile(f"""fn main() {{
            let z: {t}[n] = load("{src}");
            save("{dst}", conj(z) * 2.0);
        }}""", device=dev)
        p.main()
        back = np.load(dst)
        assert back.dtype == ct and back.dtype.str == ("<c8" if t == "c64" else "<c16")
        np.testing.assert_array_equal(back, np.conj(z) * 2)


def test_load_checks_the_complex_type(tmp_path):
    f = tmp_path / "z.npy"
    np.save(f, np.ones(3, np.complex128))
    p = cuk.compile(f'fn main() {{ let z: c64[n] = load("{f}"); print(z); }}', device="cpu")
    with pytest.raises(cuk.RunError, match="c128|complex128|<c16"):
        p.main()


@pytest.mark.parametrize("dev", DEVICES)
def test_print(dev, capfd):
    p = cuk.compile(SRC, device=dev)
    p.show_c64(np.array([1 + 2j, 3 - 1j, -0.5j], np.complex64), 2j)
    p.show_c128(np.zeros(0, np.complex128), 1.5 - 2j)
    p.show_c64(np.array([-1.5], np.complex64), complex(-0.0, 1))
    assert capfd.readouterr().out == "[1+2j 3-1j -0-0.5j]\n2j\n[]\n(1.5-2j)\n[-1.5+0j]\n(-0+1j)\n"


# ---- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("expr", ["sort(z)", "min(z)", "max(z)", "argmax(z)", "unique(z)", "top_k(z, 2)",
                                  "searchsorted(z, z)", "z < z", "maximum(z, z)"])
def test_orderings_are_compile_errors(expr):
    with pytest.raises(cuk.CompileError, match="order") as e:
        cuk.compile(f"fn f(z: c64[n]) {{ print({expr}); }}\n", device="cpu")
    assert "complex" in str(e.value) and ("no order" in str(e.value) or "have none" in str(e.value))
    assert e.value.line == 1


@pytest.mark.parametrize("expr", ["prod(z)", "cumprod(z)", "reduce(|a, b| a + b, complex(0.0, 0.0), z)", "z % z"])
def test_missing_operations_are_compile_errors(expr):
    with pytest.raises(cuk.CompileError, match="complex"):
        cuk.compile(f"fn f(z: c64[n]) {{ print({expr}); }}\n", device="cpu")


def test_real_arrays_do_not_mix_implicitly():
    with pytest.raises(cuk.CompileError, match="no implicit conversions"):
        cuk.compile("fn f(z: c64[n], x: f32[n]) -> c64[n] = z * x;\n", device="cpu")
    # c64(x) converts, and so NumPy's c64 * f32 is c64(x) * z
    p = cuk.compile("fn f(z: c64[n], x: f32[n]) -> c64[n] = z * c64(x);\n", device="cpu")
    z, x = ints(33, np.complex64, 22), np.arange(33, dtype=np.float32)
    np.testing.assert_array_equal(p.f(z, x), z * x)


# ---- DLPack and the CUDA array interface ---------------------------------------------------------

@pytest.mark.skipif(not hasattr(np.ndarray, "__dlpack__"), reason="NumPy without __dlpack__")
@pytest.mark.parametrize("t", list(CT))
def test_dlpack_host_tensors(m, t):
    a, b = ints(33, CT[t], 23), ints(33, CT[t], 24)
    np.testing.assert_array_equal(m[f"mul_{t}"](cukpath.HostDL(a), cukpath.HostDL(b)), a * b)
    other = "c128" if t == "c64" else "c64"
    assert f"has dtype {np.dtype(CT[t]).name}" in err(m[f"mul_{other}"], cukpath.HostDL(a), cukpath.HostDL(b))
    assert "has dtype complex" in err(m.f32_to_c64, cukpath.HostDL(np.zeros(2, np.complex64)))


def test_dtype_names_and_typestrs():
    # device_wrap of no memory needs no GPU: the dtype tables and the CUDA array interface
    for names, np_name, ts in [(("complex64", "c64", np.complex64, np.dtype("complex64"), 13), "complex64", "<c8"),
                               (("complex128", "c128", np.complex128, complex, "complex", 14), "complex128", "<c16")]:
        for name in names:
            d = cuk._cuk.device_wrap(0, (0,), name, None)
            assert d.dtype == np_name, name
            assert d.__cuda_array_interface__["typestr"] == ts
            assert d.nbytes == 0 and np_name in repr(d)
    assert cuk.empty((0, 2), np.complex64).dtype == "complex64"
    with pytest.raises(cuk.ArgumentError, match="not supported by cuk"):
        cuk._cuk.device_wrap(0, (0,), np.clongdouble, None)


cai_error = cukpath.cai_error


def test_cuda_array_interface_typestrs(m):
    assert "dtype" not in cai_error(m.c64_c128, "<c8")
    assert "dtype" not in cai_error(m.c128_c64, "<c16")
    assert "but the argument has dtype complex128" in cai_error(m.c64_c128, "<c16")
    assert "but the argument has dtype complex64" in cai_error(m.f64_to_c64, "<c8")
    assert "not supported" in cai_error(m.c64_c128, ">c8")
    assert "not supported" in cai_error(m.c64_c128, "<c32")


# ---- gpuarray and cumath ------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_gpuarray_round_trip_and_arithmetic(t, n):
    ct = CT[t]
    a, b = ints(n, ct, 25), ints(n, ct, 26)
    b[b == 0] = 1 + 1j
    A, B = ga.to_gpu(a), ga.to_gpu(b)
    assert A.dtype == ct and A.nbytes == a.nbytes
    np.testing.assert_array_equal(A.get(), a)
    for got, want in [(A + B, a + b), (A - B, a - b), (A * B, a * b), (-A, -a), (A * 2, a * 2), (1j - A, 1j - a),
                      (A * (2 - 1j), a * (2 - 1j)), (A.conj(), np.conj(a)), (A.conjugate(), np.conj(a)),
                      (ga.conj(A), np.conj(a))]:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_allclose((A / B).get(), a / b, rtol=DIV_RTOL[t])
    p, q = smooth(n, ct, 35, 1.5), smooth(n, ct, 36, 1.0)
    P, Q = ga.to_gpu(p), ga.to_gpu(q)
    for got, want in [(P ** Q, p.astype(complex) ** q), (P ** 2, p.astype(complex) ** 2),
                      (2 ** Q, 2 ** q.astype(complex))]:
        assert got.dtype == ct
        close(got.get(), want, RTOL[t] * 10)
    for got, want in [(A == B, a == b), (A != A.conj(), a != np.conj(a)), (A == 1j, a == 1j)]:
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.get(), want)
    pt = np.empty(0, ct).real.dtype
    for got, want in [(A.real, a.real), (A.imag, a.imag), (ga.real(A), a.real), (ga.imag(A), a.imag)]:
        assert got.dtype == pt
        np.testing.assert_array_equal(got.get(), want)
    r = abs(A)
    assert r.dtype == pt
    np.testing.assert_allclose(r.get(), np.abs(a), rtol=DIV_RTOL[t])
    s = ga.sum(A)
    assert s.dtype == ct and s.get() == a.sum()
    assert ga.sum(A, np.complex128).dtype == np.complex128 and ga.sum(A, np.complex128).get() == a.sum()
    assert ga.dot(A, B).get() == np.dot(a, b) and ga.vdot(A, B).get() == np.vdot(a, b)
    if n:
        np.testing.assert_allclose(A.mean().get(), a.mean(), rtol=DIV_RTOL[t])
        assert complex(A[0]) == complex(a[0])
    assert str(A) == str(a)
    C = A.copy()
    C *= 2
    C += B
    np.testing.assert_array_equal(C.get(), a * 2 + b)
    W = ga.if_positive(A.real, A, B)
    np.testing.assert_array_equal(W.get(), np.where(a.real > 0, a, b))


@pytest.mark.parametrize("n", SIZES)
def test_gpuarray_promotion_is_numpys(n):
    x32 = np.linspace(-2, 2, n).astype(np.float32)
    z64 = ints(n, np.complex64, 27)
    z64[z64 == 0] = 1j
    Z, X = ga.to_gpu(z64), ga.to_gpu(x32)
    cases = [
        (Z * X, z64 * x32),                                     # complex64
        (Z * X.astype(np.float64), z64 * x32.astype(np.float64)),  # complex128
        (Z + ga.to_gpu(np.arange(n, dtype=np.int32)), z64 + np.arange(n, dtype=np.int32)),  # complex128
        (Z + ga.to_gpu(np.arange(n, dtype=np.int8)), z64 + np.arange(n, dtype=np.int8)),   # complex64
        (Z * 2.5, z64 * 2.5), (X + 1j, x32 + 1j), (X.astype(np.float64) * 1j, x32.astype(np.float64) * 1j),
        (ga.to_gpu(np.arange(n, dtype=np.int64)) * (1 + 1j), np.arange(n, dtype=np.int64) * (1 + 1j)),
        (Z * np.complex128(1 + 1j), z64 * np.complex128(1 + 1j)),
        (X / Z.astype(np.complex128), x32 / z64.astype(np.complex128)),
    ]
    for k, (got, want) in enumerate(cases):
        assert got.dtype == want.dtype, (k, got.dtype, want.dtype)
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(got.get(), want, rtol=1e-6, err_msg=str(k))


@pytest.mark.parametrize("n", SIZES)
def test_gpuarray_astype_both_ways(n):
    z = smooth(n, np.complex128, 28) * 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComplexWarning)
        for dt in [np.complex64, np.float64, np.float32, np.int32, np.int64, np.uint8, np.float16, np.bool_]:
            # (NumPy leaves a negative real part cast to an unsigned type undefined)
            src = z if np.dtype(dt).kind != "u" else np.abs(z.real) + 1j * z.imag
            got = ga.to_gpu(src).astype(dt)
            assert got.dtype == dt
            np.testing.assert_array_equal(got.get(), src.astype(dt), err_msg=str(dt))
    x = np.arange(n, dtype=np.int16) - 7
    for dt in [np.complex64, np.complex128]:
        got = ga.to_gpu(x).astype(dt)
        assert got.dtype == dt
        np.testing.assert_array_equal(got.get(), x.astype(dt))
    R = ga.to_gpu(np.arange(n, dtype=np.float32))
    assert R.real is R and R.conj() is R
    np.testing.assert_array_equal(R.imag.get(), np.zeros(n, np.float32))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(CT))
def test_cumath_on_complex(t, n):
    ct = CT[t]
    z = smooth(n, ct, 29)
    Z = ga.to_gpu(z)
    for f in FUNCS:
        got = getattr(cm, f)(Z)
        assert got.dtype == ct, f
        close(got.get(), getattr(np, f)(z.astype(np.complex128)), RTOL[t])
    # fused: one expression
    close((cm.exp(Z * 1j) * 2 + Z.conj()).get(), np.exp(z.astype(complex) * 1j) * 2 + np.conj(z), RTOL[t])
    out = ga.empty(Z.shape, ct)
    assert cm.sqrt(Z, out=out) is out
    close(out.get(), np.sqrt(z.astype(complex)), RTOL[t])


def test_gpuarray_orderings_are_type_errors():
    Z = ga.to_gpu(ints(33, np.complex64, 30))
    for f in [lambda: ga.max(Z), lambda: Z.min(), lambda: ga.sort(Z), lambda: Z.sort(), lambda: ga.argsort(Z),
              lambda: ga.unique(Z), lambda: ga.searchsorted(Z, Z), lambda: Z < Z, lambda: Z >= 1,
              lambda: ga.maximum(Z, Z), lambda: ga.minimum(Z, 1)]:
        with pytest.raises(TypeError, match="no order"):
            f()
    for f in [lambda: Z % 2, lambda: cm.floor(Z), lambda: cm.fabs(Z), lambda: cm.fmod(Z, 2),
              lambda: Z & Z]:
        with pytest.raises(TypeError, match="complex"):
            f()
    with pytest.raises(TypeError, match="same_kind"):
        ga.sum(Z, np.float64)
    X = ga.to_gpu(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="in place"):
        X += 1j
    np.testing.assert_array_equal(X.get(), np.ones(3, np.float32))  # untouched


def test_gpuarray_full_zeros_and_views():
    F = ga.full((2, 3), 1 - 2j, np.complex64)
    assert F.dtype == np.complex64
    np.testing.assert_array_equal(F.get(), np.full((2, 3), 1 - 2j, np.complex64))
    assert ga.full(2, 1j).dtype == np.complex128
    Zr = ga.zeros(4, np.complex128)
    np.testing.assert_array_equal(Zr.get(), np.zeros(4, np.complex128))
    z = ints(12, np.complex128, 31).reshape(3, 4)
    A = ga.to_gpu(z)
    np.testing.assert_array_equal(A.T.get(), z.T)
    np.testing.assert_array_equal(A[1].get(), z[1])
    np.testing.assert_array_equal(A.reshape(4, 3).get(), z.reshape(4, 3))
    np.testing.assert_array_equal(A.view(np.float64).get(), z.view(np.float64))  # re, im interleaved
    A[2] = 5j
    z[2] = 5j
    np.testing.assert_array_equal(A.get(), z)
    np.testing.assert_array_equal(ga.sum(A.reshape(12) * 1j).get(), (z * 1j).sum())


# ---- the GPU: DeviceArrays, PyTorch and CuPy --------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("t", list(CT))
def test_device_arrays_of_complex(t):
    p = cuk.compile(SRC, device="gpu")
    ct = CT[t]
    a, b = ints(1025, ct, 32), ints(1025, ct, 33)
    A, B = cuk.to_device(a), cuk.to_device(b)
    assert A.dtype == np.dtype(ct).name and A.nbytes == a.nbytes
    assert A.__cuda_array_interface__["typestr"] == np.dtype(ct).str
    r = p[f"mul_{t}"](A, B)
    assert isinstance(r, cuk.DeviceArray) and r.dtype == np.dtype(ct).name
    np.testing.assert_array_equal(r.get(), a * b)
    s = p[f"sum_{t}"](A)
    assert isinstance(s, cuk.DeviceArray) and s.shape == ()
    assert s.get()[()] == a.sum()
    close(p[f"exp_{t}"](cuk.to_device(smooth(1025, ct, 34))).get(), np.exp(smooth(1025, ct, 34).astype(complex)),
          RTOL[t])
    v = p[f"scal_{t}"](A, 1j)
    np.testing.assert_array_equal(v.get(), a * 1j)


@needs_gpu
def test_torch_complex_round_trip():
    torch = cukpath.torch_cuda()
    p = cuk.compile(SRC, device="gpu")
    for t, tt in [("c64", torch.complex64), ("c128", torch.complex128)]:
        x = torch.complex(torch.linspace(-3, 3, 1025, device="cuda"), torch.linspace(1, 2, 1025, device="cuda")).to(tt)
        r = p[f"mul_{t}"](x, x)
        assert isinstance(r, torch.Tensor) and r.dtype == tt and r.device.type == "cuda"
        assert torch.allclose(r, x * x)
        re, im, cj, ab, ar = p[f"parts_{t}"](x)
        assert isinstance(re, torch.Tensor) and torch.equal(re, x.real) and torch.equal(cj, x.conj().resolve_conj())
        assert "has dtype" in err(p[f"mul_{'c128' if t == 'c64' else 'c64'}"], x, x)
    d = cuk.to_device(np.complex64([1 + 2j, 3]))
    assert torch.from_dlpack(d).dtype == torch.complex64
    assert torch.from_dlpack(d).cpu().tolist() == [1 + 2j, 3]


@needs_gpu
def test_cupy_complex():
    cp = pytest.importorskip("cupy")
    p = cuk.compile(SRC, device="gpu")
    x = (cp.arange(1025) + 1j * cp.arange(1025)[::-1]).astype(cp.complex64)
    r = p.mul_c64(x, x)
    assert isinstance(r, cp.ndarray) and r.dtype == cp.complex64 and bool((r == x * x).all())
    s = p.sum_c128(x.astype(cp.complex128))
    assert complex(s) == complex(x.astype(cp.complex128).sum())


@needs_gpu
def test_raw_kernels_take_complex_scalars():
    import cuk.autoinit  # noqa: F401
    from cuk.compiler import SourceModule

    mod = SourceModule("""
    __global__ void put(float2 *a, float2 s, double2 *b, double2 t, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) { a[i].x = s.x * i; a[i].y = s.y; b[i].x = t.x; b[i].y = t.y * i; }
    }""")
    f = mod.get_function("put")
    a, b = ga.zeros(100, np.complex64), ga.zeros(100, np.complex128)
    i = np.arange(100)
    want_a, want_b = (1.5 * i + 2j).astype(np.complex64), (-1 + 0.25j * i).astype(np.complex128)
    f.prepare([np.intp, np.complex64, np.intp, np.complex128, np.int32])  # "PFPDi"
    f.prepared_call((1, 1), (128, 1, 1), a.gpudata, 1.5 + 2j, b.gpudata, np.complex128(-1 + 0.25j), 100)
    np.testing.assert_array_equal(a.get(), want_a)
    np.testing.assert_array_equal(b.get(), want_b)
    a.fill(0)
    b.fill(0)
    # NumPy scalars by value
    f(a, np.complex64(1.5 + 2j), b, np.complex128(-1 + 0.25j), np.int32(100), block=(128, 1, 1))
    np.testing.assert_array_equal(a.get(), want_a)
    np.testing.assert_array_equal(b.get(), want_b)

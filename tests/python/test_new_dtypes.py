"""The narrow dtypes i8, i16, u8, u16, f16 and bf16 through the Python package, against
NumPy: arithmetic (integers wrap as NumPy's do; f16 and bf16 compute in f32 and round
once, which for + - * / is NumPy's correctly rounded float16 result), comparisons,
reductions and scans, sorting, the casts between every pair of dtypes (float to integer
truncates and saturates, NaN gives 0: the language's rule, where NumPy's values are
undefined), scalar arguments (rounded to half as numpy.float16 rounds; integers that do
not fit are errors, as for i32), .npy files, DLPack and the CUDA array interface, bf16
results (ml_dtypes.bfloat16 arrays where ml_dtypes is installed, else an ArgumentError
before the call) and gpuarray. Sizes 0, 1, 33 and 1025; the CPU backend and, where a
GPU is usable, the GPU; the GPU-only tests (DeviceArray, PyTorch, CuPy) at the end."""
import ctypes
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukpath
import cuk
import cuk.cumath as cm
import cuk.gpuarray as ga

DEVICES = ["cpu"] + (["gpu"] if cuk.gpu_available() else [])
SIZES = [0, 1, 33, 1025]
INTS = {"i8": np.int8, "i16": np.int16, "u8": np.uint8, "u16": np.uint16}
NARROW = dict(INTS, f16=np.float16)  # the new dtypes NumPy has
# every dtype, by cuk name; bf16 has no NumPy dtype without ml_dtypes (None here)
ALL = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
       "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": None, "f32": np.float32,
       "f64": np.float64}
F16 = (10, -14, 65504.0)  # (mantissa bits, least normal exponent, largest finite)
BF16 = (7, -126, (2 - 2.0**-7) * 2.0**127)

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes (NumPy's bfloat16)")
needs_gpu = pytest.mark.skipif("gpu" not in DEVICES, reason="needs a GPU")


# ---- references -----------------------------------------------------------------------

def round_float(x, fmt):
    """x (a double, or a Python int, exactly) rounded once, to nearest even, to the float
    format fmt (F16, BF16), as a double; beyond the largest finite value, infinity."""
    mant, emin, largest = fmt
    if isinstance(x, int):
        e = abs(x).bit_length()  # |x| < 2**e: the leading bit is 2**(e - 1)
        ulp = max(e - 1, emin) - mant
        if ulp <= 0:
            v = float(x)
        else:
            q, r = divmod(abs(x), 2**ulp)
            q += r > 2**(ulp - 1) or (r == 2**(ulp - 1) and q & 1)
            v = math.copysign(float(q * 2**ulp), x)
        return math.copysign(math.inf, x) if abs(v) > largest else v
    if not math.isfinite(x) or x == 0:
        return x
    _, e = math.frexp(x)  # x = m * 2**e, 0.5 <= |m| < 1: the leading bit is 2**(e - 1)
    ulp = max(e - 1, emin) - mant
    v = math.ldexp(round(math.ldexp(x, -ulp)), ulp)  # round() is half-even on exact halves
    return math.copysign(math.inf, x) if abs(v) > largest else v


def round_array(a, fmt):
    return np.array([round_float(float(v), fmt) for v in np.asarray(a, np.float64).ravel()]).reshape(np.shape(a))


def bf16_bits(values):
    """The bits of values that are bfloat16 numbers already (the top half of the f32)."""
    f = np.asarray(values, np.float32)
    assert np.array_equal(round_array(f, BF16), f.astype(np.float64), equal_nan=True), "not bf16 values"
    return (f.view(np.uint32) >> 16).astype(np.uint16)


def wrap(values, dt):
    """Python ints wrapped into the integer dtype dt, as NumPy's astype wraps."""
    info = np.iinfo(dt)
    span = int(info.max) - int(info.min) + 1
    return np.array([(int(v) - int(info.min)) % span + int(info.min) for v in values], dt)


def saturate(values, dt):
    """The language's float-to-integer rule: truncate toward zero, saturate at the
    range's ends, NaN gives 0."""
    info = np.iinfo(dt)
    out = []
    for v in values:
        v = float(v)
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(int(info.max) if v > 0 else int(info.min))
        else:
            out.append(min(max(math.trunc(v), int(info.min)), int(info.max)))
    return np.array(out, dt)


def c_div(a, b, dt):
    """C's integer division as the language defines it: truncation, x / 0 = 0, wrapping."""
    q = [0 if int(y) == 0 else abs(int(x)) // abs(int(y)) * (1 if (int(x) < 0) == (int(y) < 0) else -1)
         for x, y in zip(a, b)]
    return wrap(q, dt)


def int_values(dt, n, seed):
    """n values of the integer dtype dt: the range's ends, -1, 0, 1 first, then random."""
    info = np.iinfo(dt)
    edges = [int(info.min), int(info.max), 0, 1, int(info.max) - 1] + ([-1] if info.min < 0 else [])
    rng = np.random.default_rng(seed)
    x = rng.integers(int(info.min), int(info.max), n, dtype=dt, endpoint=True)
    x[:min(n, len(edges))] = np.array(edges[:n], dt)
    return x


def f16_values(n, seed, special=True):
    """n float16 values: NaN, the infinities, -0.0, the largest and a subnormal first."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-8, 12, n))).astype(np.float16)
    if special:
        edges = np.array([np.nan, np.inf, -np.inf, -0.0, 65504.0, 6e-8, -1.5, 0.1], np.float16)
        x[:min(n, len(edges))] = edges[:n]
    return x


def bf16_values(n, seed):
    """n bfloat16 values as float32 (exactly representable), NaN and infinities first."""
    rng = np.random.default_rng(seed)
    x = round_array(rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n)), BF16).astype(np.float32)
    edges = np.array([np.nan, np.inf, -np.inf, -0.0, 3.3895313892515355e38, 1.5, -2.0], np.float32)
    x[:min(n, len(edges))] = edges[:n]
    return x


# ---- bf16 on the host without ml_dtypes: a DLPack producer of bfloat16 bits ------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLHost:
    """A host tensor offered through DLPack with the type code and bits given: kDLBfloat
    (4) and 16 for bfloat16, whose bits `data` (a uint16 array) holds. No deleter: the
    object keeps the memory alive, as the tests keep the object."""

    def __init__(self, data, code, bits):
        self.data = np.ascontiguousarray(data)
        self.shape = (ctypes.c_int64 * max(self.data.ndim, 1))(*self.data.shape)
        self.t = _DLManagedTensor()
        self.t.dl_tensor.data = self.data.ctypes.data
        self.t.dl_tensor.device = _DLDevice(1, 0)  # kDLCPU
        self.t.dl_tensor.ndim = self.data.ndim
        self.t.dl_tensor.dtype = _DLDataType(code, bits, 1)
        self.t.dl_tensor.shape = self.shape
        self.calls = 0

    def __dlpack__(self, stream=None):
        self.calls += 1
        return _capsule_new(ctypes.addressof(self.t), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)


def bf16_arg(values_f32):
    return DLHost(bf16_bits(values_f32), 4, 16)


# ---- elementwise arithmetic and comparisons ----------------------------------------------

ARITH = "".join(f"""
fn add_{t}(x: {t}[n], y: {t}[n]) -> {t}[n] = x + y;
fn sub_{t}(x: {t}[n], y: {t}[n]) -> {t}[n] = x - y;
fn mul_{t}(x: {t}[n], y: {t}[n]) -> {t}[n] = x * y;
fn div_{t}(x: {t}[n], y: {t}[n]) -> {t}[n] = x / y;
fn lit_{t}(x: {t}[n]) -> {t}[n] = x * 3 + 1;
fn lt_{t}(x: {t}[n], y: {t}[n]) -> bool[n] = x < y;
fn le_{t}(x: {t}[n], y: {t}[n]) -> bool[n] = x <= y;
fn eq_{t}(x: {t}[n], y: {t}[n]) -> bool[n] = x == y;
fn ne_{t}(x: {t}[n], y: {t}[n]) -> bool[n] = x != y;
fn sum_{t}(x: {t}[n]) -> {t} = sum(x);
fn max_{t}(x: {t}[n]) -> {t} = max(x);
fn min_{t}(x: {t}[n]) -> {t} = min(x);
fn cumsum_{t}(x: {t}[n]) -> {t}[n] = cumsum(x);
fn sort_{t}(x: {t}[n]) -> {t}[n] = sort(x);
fn argsort_{t}(x: {t}[n]) -> i64[n] = argsort(x);
fn sortd_{t}(x: {t}[n]) -> {t}[n] = sort(x, descending=true);
fn scal_{t}(x: {t}[n], s: {t}) -> {t}[n] = x * s;
fn one_{t}(s: {t}) -> {t} = s;
""" for t in list(NARROW) + ["bf16"]) + """
fn sqrt_f16(x: f16[n]) -> f16[n] = sqrt(x);
fn exp_f16(x: f16[n]) -> f16[n] = exp(x);
""" + "".join(f"""
fn {op}w_bf16(x: bf16[n], y: bf16[n]) -> f32[n] = f32(x {sym} y);
""" for op, sym in [("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")]) + """
fn ltw_bf16(x: bf16[n], y: bf16[n]) -> bool[n] = x < y;
fn sumw_bf16(x: bf16[n]) -> f32 = f32(sum(x));
fn maxw_bf16(x: bf16[n]) -> f32 = f32(max(x));
fn sortw_bf16(x: bf16[n]) -> f32[n] = f32(sort(x));
fn argsortw_bf16(x: bf16[n]) -> i64[n] = argsort(x);
fn onew_bf16(s: bf16) -> f32 = f32(s);
fn fromf_bf16(x: f32[n]) -> f32[n] = f32(bf16(x));
"""


@pytest.fixture(scope="module", params=DEVICES)
def m(request):
    return cuk.compile(ARITH, device=request.param)


def pair(t, n, seed=0):
    if t == "f16":
        return f16_values(n, seed), f16_values(n, seed + 1)
    return int_values(NARROW[t], n, seed), int_values(NARROW[t], n, seed + 1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(NARROW))
def test_arithmetic_matches_numpy(m, t, n):
    x, y = pair(t, n)
    with np.errstate(all="ignore"):
        want = {"add": x + y, "sub": x - y, "mul": x * y, "lit": x * NARROW[t](3) + NARROW[t](1)}
        if t == "f16":  # an f16 expression is computed in f32 and rounded once, at its end
            want["lit"] = (x.astype(np.float32) * 3 + 1).astype(np.float16)
        if t == "f16":
            want["div"] = x / y
    for op, w in want.items():
        got = getattr(m, f"{op}_{t}")(x, y) if op != "lit" else m[f"lit_{t}"](x)
        assert got.dtype == NARROW[t], (op, got.dtype)
        np.testing.assert_array_equal(got, w, err_msg=f"{op} {t}")
    if t != "f16":
        np.testing.assert_array_equal(m[f"div_{t}"](x, y), c_div(x, y, NARROW[t]))


def test_integer_arithmetic_wraps():
    m = cuk.compile(ARITH, device="cpu")
    np.testing.assert_array_equal(m.add_i8(np.int8([127, -128]), np.int8([1, -1])), np.int8([-128, 127]))
    np.testing.assert_array_equal(m.mul_u8(np.uint8([16, 255]), np.uint8([16, 255])), np.uint8([0, 1]))
    np.testing.assert_array_equal(m.sub_u16(np.uint16([0]), np.uint16([1])), np.uint16([65535]))
    np.testing.assert_array_equal(m.div_i16(np.int16([-32768, 7, 5]), np.int16([-1, -2, 0])), np.int16([-32768, -3, 0]))


def test_f16_rounds_once_from_f32():
    m = cuk.compile(ARITH, device="cpu")
    # 2049 is a tie between 2048 and 2050 (spacing 2): to even, 2048; 65520 overflows
    np.testing.assert_array_equal(m.add_f16(np.float16([2048, 65504, 0.1]), np.float16([1, 16, 0.2])),
                                  np.float16([2048, np.inf, 0.2998]))
    x = f16_values(1025, 5)
    np.testing.assert_array_equal(m.sqrt_f16(np.abs(x)), np.sqrt(np.abs(x)))
    small = np.linspace(-8, 8, 1025).astype(np.float16)
    np.testing.assert_array_equal(m.exp_f16(small), np.exp(small))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(NARROW))
def test_comparisons_match_numpy(m, t, n):
    x, y = pair(t, n, 3)
    y[: n // 3] = x[: n // 3]  # some equal pairs
    for op, f in [("lt", np.less), ("le", np.less_equal), ("eq", np.equal), ("ne", np.not_equal)]:
        got = m[f"{op}_{t}"](x, y)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, f(x, y), err_msg=f"{op} {t}")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(INTS))
def test_integer_reductions_keep_the_type_and_wrap(m, t, n):
    dt = INTS[t]
    x = int_values(dt, n, 7)
    s = m[f"sum_{t}"](x)
    # the language's sum has the element type: it wraps as NumPy's sum with dtype= does
    assert s.dtype == dt and s == np.sum(x, dtype=dt)
    np.testing.assert_array_equal(m[f"cumsum_{t}"](x), np.cumsum(x, dtype=dt))
    if n:
        assert m[f"max_{t}"](x) == x.max() and m[f"min_{t}"](x) == x.min()
        assert m[f"max_{t}"](x).dtype == dt


@pytest.mark.parametrize("n", SIZES)
def test_f16_reductions_accumulate_in_f32(m, n):
    # small integers: every f32 partial sum is exact, whatever the order
    x = ((np.arange(n) * 7) % 11 - 5).astype(np.float16)
    x[: min(n, 1)] = 2048  # 2048 + 1 + 1 is 2048 in f16 steps, 2050 in f32
    s = m.sum_f16(x)
    assert s.dtype == np.float16
    assert s == np.sum(x.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(m.cumsum_f16(x), np.cumsum(x.astype(np.float32)).astype(np.float16))
    if n:
        assert m.max_f16(x) == x.max() and m.min_f16(x) == x.min()


def test_f16_sum_differs_from_f16_steps():
    m = cuk.compile(ARITH, device="cpu")
    x = np.float16([2048, 1, 1, 1, 1])
    assert m.sum_f16(x) == 2052  # f16 steps would stay at 2048
    np.testing.assert_array_equal(m.cumsum_f16(x), np.float16([2048, 2048, 2050, 2052, 2052]))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(NARROW))
def test_sort_and_argsort_match_numpy(m, t, n):
    x = pair(t, n, 11)[0]
    if n > 4:
        x[n // 2:] = x[: n - n // 2]  # duplicates, for stability
    got = m[f"sort_{t}"](x)
    np.testing.assert_array_equal(got.view(np.uint8), np.sort(x, kind="stable").view(np.uint8))  # -0.0 kept in place
    np.testing.assert_array_equal(m[f"argsort_{t}"](x), np.argsort(x, kind="stable"))
    desc = m[f"sortd_{t}"](x)
    if t == "f16":  # NaN last in either direction
        nan = np.isnan(x)
        np.testing.assert_array_equal(desc[: n - nan.sum()], np.sort(x[~nan])[::-1])
        assert np.isnan(desc[n - nan.sum():]).all()
    else:
        np.testing.assert_array_equal(desc, np.sort(x)[::-1])


# ---- bf16 without ml_dtypes: in through DLPack, out as f32 ------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_bf16_arithmetic_rounds_once_from_f32(m, n):
    x, y = bf16_values(n, 1), bf16_values(n, 2)
    with np.errstate(all="ignore"):
        ref = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y}  # f32, rounded to bf16 below
    for op, w in ref.items():
        got = m[f"{op}w_bf16"](bf16_arg(x), bf16_arg(y))
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, round_array(w, BF16).astype(np.float32), err_msg=op)
    np.testing.assert_array_equal(m.ltw_bf16(bf16_arg(x), bf16_arg(y)), x < y)
    np.testing.assert_array_equal(m.sortw_bf16(bf16_arg(x)), np.sort(x))
    np.testing.assert_array_equal(m.argsortw_bf16(bf16_arg(x)), np.argsort(x, kind="stable"))
    ints = ((np.arange(n) % 9) - 4).astype(np.float32)  # exact partial sums
    assert m.sumw_bf16(bf16_arg(ints)) == round_float(float(ints.sum()), BF16)
    if n:
        top = m.maxw_bf16(bf16_arg(x))
        assert np.isnan(top) if np.isnan(x).any() else top == x.max()
        finite = x[np.isfinite(x)]
        if finite.size:
            assert m.maxw_bf16(bf16_arg(finite)) == finite.max()


def test_bf16_rounding_from_f32():
    m = cuk.compile(ARITH, device="cpu")
    bits = np.array([0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F7FFFFF, 0x00000001, 0x7FC00001], np.uint32)
    x = bits.view(np.float32)  # ties to even (down, up), just below a tie, overflow, a subnormal, NaN
    got = m.fromf_bf16(x)
    np.testing.assert_array_equal(got[:5], np.float32([1.0, 1.015625, 1.0078125, np.inf, 0.0]))
    assert np.isnan(got[5])


# ---- scalar arguments ----------------------------------------------------------------------

def err(f, *a):
    with pytest.raises(cuk.ArgumentError) as e:
        f(*a)
    return str(e.value)


def test_float_scalars_round_to_half(m):
    for v in [0.1, 1 / 3, 65519.0, 65520.0, 1e-8, 3e-8, -2.5, 1e300, 7]:
        got = m.one_f16(v)
        assert isinstance(got, np.float16)
        with np.errstate(over="ignore"):
            assert got.view(np.uint16) == np.float16(v).view(np.uint16), v
    assert m.one_f16(np.float32(0.1)) == np.float16(np.float32(0.1))
    assert m.one_f16(np.int8(-7)) == -7 and m.one_f16(True) == 1
    np.testing.assert_array_equal(m.scal_f16(np.float16([1, 2]), 0.1), np.float16([1, 2]) * np.float16(0.1))
    for v in [0.1, 1 / 3, 3.0e38, 3.4e38, 2.0**-130, -7.0, 2**62 + 1]:
        assert m.onew_bf16(v) == np.float32(round_float(float(v), BF16)), v


def test_integer_scalars_must_fit(m):
    assert m.one_i8(-128) == -128 and m.one_i8(127) == 127 and m.one_i8(np.int64(5)).dtype == np.int8
    assert m.one_u8(255) == 255 and m.one_u16(65535) == 65535 and m.one_i16(-32768) == -32768
    assert m.one_u8(np.uint32(200)) == 200
    np.testing.assert_array_equal(m.scal_i8(np.int8([1, -2]), 100), np.int8([100, 56]))  # the array op wraps
    assert "does not fit" in err(m.one_i8, 128)
    assert "does not fit" in err(m.one_i8, np.int16(-129))
    assert "does not fit" in err(m.one_u8, 256)
    assert "does not fit" in err(m.one_u8, -1)
    assert "does not fit" in err(m.one_u16, 2**16)
    assert "does not fit" in err(m.one_i16, 2**15)
    assert "does not fit" in err(m.one_i16, 2**70)
    assert "pass an integer" in err(m.one_i8, 1.0)
    assert "numpy.uint8(x)" in err(m.one_u8, np.int8(3))  # a typed signed integer is not same_kind
    assert "pass an integer" in err(m.one_u16, np.float16(2))


def test_array_dtype_must_match(m):
    msg = err(m.add_f16, np.ones(2, np.float32), np.ones(2, np.float16))
    assert "parameter 'x' is an array of float16, but the argument has dtype float32" in msg and "astype('float16')" in msg
    assert "has dtype uint8" in err(m.add_i8, np.ones(2, np.uint8), np.ones(2, np.int8))
    assert "has dtype int16" in err(m.add_u16, np.ones(2, np.int16), np.ones(2, np.uint16))
    msg = err(m.sortw_bf16, np.ones(2, np.float32))
    assert "is an array of bfloat16, but the argument has dtype float32" in msg and "ml_dtypes.bfloat16" in msg
    np.testing.assert_array_equal(m.add_i16([1, -2], [3, 4]), np.int16([4, 2]))  # lists convert
    assert "does not fit" in err(m.add_i8, [1, 200], [0, 0])


def test_strided_and_multi_dim_arrays():
    m = cuk.compile("fn f(x: f16[r, c]) -> f16[r, c] = x * 2;\nfn g(x: u8[r, c]) -> u8[r, c] = x + 1;", device="cpu")
    x = np.arange(24, dtype=np.float16).reshape(4, 6)[:, ::2]
    np.testing.assert_array_equal(m.f(x), x * 2)
    y = np.arange(12, dtype=np.uint8).reshape(3, 4).T
    np.testing.assert_array_equal(m.g(y), y + 1)


# ---- casts between every pair -----------------------------------------------------------------

CASTS = "".join(
    f"fn c_{s}_{t}(x: {'f32' if s == 'bf16' else s}[n]) -> {'f32' if t == 'bf16' else t}[n] = "
    + ("f32(" if t == "bf16" else "") + f"{t}({'bf16(x)' if s == 'bf16' else 'x'})" + (")" if t == "bf16" else "") + ";\n"
    for s in ALL for t in ALL)


@pytest.fixture(scope="module", params=DEVICES)
def casts(request):
    return cuk.compile(CASTS, device=request.param)


def source_values(s):
    """Values of dtype s that probe its range, as the function's argument (bf16: their
    f32, exact in bf16)."""
    if s == "bool":
        return np.array([True, False, True])
    if s in ("f16", "f32", "f64"):
        v = [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.7, 1.5, 2.5, -1.5, 127.9, 128.0, -128.9, -129.0, 255.9, 256.0,
             300.5, -300.5, 32767.5, -32769.0, 65504.0, 2.0**31, -2.0**31 - 4096, 2.0**32, 2.0**63, -2.0**63, 2.0**64,
             1e30, 0.1, 3e-8]
        with np.errstate(all="ignore"):
            return np.array(v, np.float64).astype(ALL[s])  # past f16's range: inf, as wanted
    if s == "bf16":
        return round_array([np.nan, np.inf, -np.inf, -0.0, 0.5, -0.7, 1.5, 2.5, 127.9, 128.0, -129.0, 255.9, 256.0,
                            300.5, -32769.0, 65504.0, 65536.0, 2.0**31, 2.0**63, -2.0**63, 2.0**64, 1e30, 0.1,
                            3.0e38], BF16).astype(np.float32)
    dt = ALL[s]
    info = np.iinfo(dt)
    v = {int(info.min), int(info.max), 0, 1, 2, 127, 128, 255, 256, 2049, 65535, 65536, 2**24 + 1, 2**31, 2**53 + 1}
    v |= {-1, -2, -129, -32769, -2**31 - 1} if info.min < 0 else set()
    return np.array(sorted(x for x in v if info.min <= x <= info.max), dt)


FLOATS = ("f16", "bf16", "f32", "f64")


def expected_cast(x, s, t):
    """What t(x) gives, x of dtype s (bf16's values as f32), by the language's rules."""
    if t == "bool":
        return x != 0  # NaN is not 0
    if t == "bf16":  # one rounding from the exact value, as f32
        exact = [float(v) if s in FLOATS else int(v) for v in x]
        return np.array([round_float(v, BF16) for v in exact]).astype(np.float32)
    if s == "bool" or t in FLOATS:
        with np.errstate(all="ignore"):
            return x.astype(ALL[t])  # NumPy rounds once to nearest, also from 64-bit integers
    if s in FLOATS:
        return saturate(x, ALL[t])
    return wrap([int(v) for v in x], ALL[t])  # integer narrowing wraps, as astype


@pytest.mark.parametrize("t", list(ALL))
@pytest.mark.parametrize("s", list(ALL))
def test_cast(casts, s, t):
    x = source_values(s)
    got = casts[f"c_{s}_{t}"](x)
    want = expected_cast(x, s, t)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=f"{s} -> {t}: {x!r}")


def test_cast_rules_spelled_out():
    c = cuk.compile(CASTS, device="cpu")
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 200.9, -200.9, -0.5], np.float64)
    np.testing.assert_array_equal(c.c_f64_i8(x), np.int8([0, 127, -128, 127, -128, 127, -128, 0]))
    np.testing.assert_array_equal(c.c_f64_u8(x), np.uint8([0, 255, 0, 255, 0, 200, 0, 0]))
    np.testing.assert_array_equal(c.c_f16_i16(np.float16([np.nan, 65504, -65504, -1.9])), np.int16([0, 32767, -32768, -1]))
    np.testing.assert_array_equal(c.c_f32_u16(np.float32([np.nan, 1e9, -1, 65535.9])), np.uint16([0, 65535, 0, 65535]))
    np.testing.assert_array_equal(c.c_i32_i8(np.int32([300, -129, 255])), np.int8([44, 127, -1]))
    np.testing.assert_array_equal(c.c_i8_u16(np.int8([-1, -128])), np.uint16([65535, 65408]))
    np.testing.assert_array_equal(c.c_u16_i16(np.uint16([65535, 32768])), np.int16([-1, -32768]))


# ---- DLPack and the CUDA array interface --------------------------------------------------

@pytest.mark.skipif(not hasattr(np.ndarray, "__dlpack__"), reason="NumPy without __dlpack__")
@pytest.mark.parametrize("t", list(NARROW))
def test_narrow_dtypes_through_dlpack(m, t):
    x, y = pair(t, 33, 21)
    got = m[f"add_{t}"](cukpath.HostDL(x), cukpath.HostDL(y))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, x + y)
    assert "has dtype" in err(m.add_f16 if t != "f16" else m.add_i8, cukpath.HostDL(x), cukpath.HostDL(y))


def test_bf16_dlpack_code_is_kdlbfloat(m):
    x = bf16_values(5, 3)
    d = bf16_arg(x)
    np.testing.assert_array_equal(m.sortw_bf16(d), np.sort(x))
    assert d.calls == 1
    # kDLBfloat 16 is no other type, and a uint16 tensor is not bf16
    assert "has dtype bfloat16" in err(m.add_u16, bf16_arg(x), np.zeros(5, np.uint16))
    assert "has dtype uint16" in err(m.sortw_bf16, DLHost(bf16_bits(x), 1, 16))
    assert "not supported" in err(m.sortw_bf16, DLHost(bf16_bits(x), 4, 8))


def test_dtype_names_and_device_array_typestrs():
    # device_wrap of no memory needs no GPU: the dtype tables and the CUDA array interface
    want = {"int8": "|i1", "int16": "<i2", "uint8": "|u1", "uint16": "<u2", "float16": "<f2", "bfloat16": "<V2"}
    for names, np_name in [(("int8", "i8", np.int8, np.dtype("int8")), "int8"), (("int16", "i16", np.int16), "int16"),
                           (("uint8", "u8", np.uint8), "uint8"), (("uint16", "u16", np.uint16), "uint16"),
                           (("float16", "f16", "half", np.float16), "float16"), (("bfloat16", "bf16", 12), "bfloat16")]:
        for name in names:
            d = cuk._cuk.device_wrap(0, (0,), name, None)
            assert d.dtype == np_name, name
            assert d.__cuda_array_interface__["typestr"] == want[np_name]
            assert d.nbytes == 0 and np_name in repr(d)
    assert cuk.empty(0, np.float16).dtype == "float16" and cuk.zeros((0, 2), "bfloat16").dtype == "bfloat16"
    with pytest.raises(cuk.ArgumentError, match="not supported by cuk"):
        cuk._cuk.device_wrap(0, (0,), np.longdouble, None)


cai_error = cukpath.cai_error


def test_cuda_array_interface_typestrs(m):
    # the typestrs of the new dtypes are read (the call may then fail for want of a GPU)
    for f, ts in [(m.cumsum_i8, "|i1"), (m.cumsum_i8, "<i1"), (m.cumsum_u8, "|u1"), (m.cumsum_i16, "<i2"),
                  (m.cumsum_u16, "<u2"), (m.cumsum_f16, "<f2"), (m.sortw_bf16, "<V2")]:
        assert "dtype" not in cai_error(f, ts), (f, ts)
    # "<V2" is any two bytes: bf16 only where the parameter is bf16
    assert "dtype <V2 is not supported" in cai_error(m.cumsum_u16, "<V2")
    assert "dtype <V2 is not supported" in cai_error(m.cumsum_f16, "<V2")
    assert "but the argument has dtype int8" in cai_error(m.cumsum_u8, "|i1")
    assert "but the argument has dtype float16" in cai_error(m.sortw_bf16, "<f2")
    assert "not supported" in cai_error(m.cumsum_f16, ">f2")


# ---- bf16 results to NumPy -----------------------------------------------------------------------

@needs_ml_dtypes
@pytest.mark.parametrize("n", SIZES)
def test_bf16_numpy_arrays_with_ml_dtypes(m, n):
    bf = np.dtype(ml_dtypes.bfloat16)
    x, y = bf16_values(n, 4).astype(bf), bf16_values(n, 5).astype(bf)
    got = m.add_bf16(x, y)
    assert got.dtype == bf
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got.astype(np.float32),
                                      round_array(x.astype(np.float32) + y.astype(np.float32), BF16).astype(np.float32))
    np.testing.assert_array_equal(m.sort_bf16(x).astype(np.float32), np.sort(x.astype(np.float32)))
    s = m.one_bf16(0.1)
    assert type(s) is ml_dtypes.bfloat16 and float(s) == round_float(0.1, BF16)
    assert float(m.one_bf16(ml_dtypes.bfloat16(2.5))) == 2.5
    assert float(m.one_bf16(np.array(2.5, bf))) == 2.5
    np.testing.assert_array_equal(m.add_bf16([1.5, 2], [0.25, 0]).astype(np.float32), [1.75, 2])  # lists
    o = np.zeros(n, bf)
    assert m.add_bf16(x, y, out=o) is o
    np.testing.assert_array_equal(o.view(np.uint16), got.view(np.uint16))
    assert "has dtype float16" in err(m.add_bf16, np.zeros(n, np.float16), y)


def test_bf16_result_without_ml_dtypes_is_a_clear_error(tmp_path):
    # ml_dtypes hidden: the error comes before the function runs (it would save a file)
    out = tmp_path / "ran.npy"
    code = textwrap.dedent(f"""
        import sys
        sys.modules["ml_dtypes"] = None
        import numpy as np, cuk
        m = cuk.compile('fn f(x: f32[n]) -> bf16[n] {{ save("{out}", x); return bf16(x); }}', device="cpu")
        try:
            m.f(np.ones(3, np.float32))
        except cuk.ArgumentError as e:
            print("ERR", e)
        g = cuk.compile("fn g(x: f32[n]) -> f32[n] = f32(bf16(x));", device="cpu")
        print("OK", g.g(np.float32([0.1])).tolist())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cukpath.python_child_env(
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ERR f()'s result is bf16, and NumPy has no bfloat16" in r.stdout and "pip install ml_dtypes" in r.stdout
    assert "f32(x)" in r.stdout
    assert "OK [0.10009765625]" in r.stdout
    assert not out.exists()


# ---- .npy files -------------------------------------------------------------------------------

@pytest.mark.parametrize("t", list(NARROW) + ["bf16"])
def test_npy_round_trip(tmp_path, t):
    src, dst = tmp_path / f"in_{t}.npy", tmp_path / f"out_{t}.npy"
    x = pair(t, 33, 9)[0] if t != "bf16" else bf16_bits(bf16_values(33, 9)).view("V2")
    np.save(src, x)
    m = cuk.compile(f'fn f() {{ let y: {t}[n] = load("{src}"); save("{dst}", y); }}', device="cpu")
    m.f()
    back = np.load(dst)
    assert back.dtype == x.dtype and back.dtype.str == {"bf16": "|V2"}.get(t, x.dtype.str)
    np.testing.assert_array_equal(back.view(np.uint8), x.view(np.uint8))


def test_npy_bf16_descr_is_v2(tmp_path):
    dst = tmp_path / "b.npy"
    m = cuk.compile(f'fn f(x: f32[n]) {{ save("{dst}", bf16(x)); }}', device="cpu")
    m.f(np.float32([1.5, 0.1]))
    assert b"'descr': '<V2'" in dst.read_bytes()[:128] or b"'descr': '|V2'" in dst.read_bytes()[:128]
    np.testing.assert_array_equal(np.load(dst).view(np.uint16), bf16_bits([1.5, round_float(0.1, BF16)]))


# ---- gpuarray ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(NARROW))
def test_gpuarray_round_trip_and_arithmetic(t, n):
    x, y = pair(t, n, 13)
    X, Y = ga.to_gpu(x), ga.to_gpu(y)
    assert X.dtype == x.dtype and X.get().dtype == x.dtype
    np.testing.assert_array_equal(X.get(), x)
    with np.errstate(all="ignore"):
        cases = [(X + Y, x + y), (X - Y, x - y), (X * Y, x * y), (X * 3 + 1, x * 3 + 1), (X < Y, x < y),
                 (X == Y, x == y), (-X, -x), (X / Y, x / y), (ga.maximum(X, Y), np.maximum(x, y))]
        if t != "f16":
            cases += [(~X, ~x), (X & Y, x & y)]
    for got, want in cases:
        g = got.get()
        assert g.dtype == want.dtype, (g.dtype, want.dtype)
        np.testing.assert_array_equal(g, want)
    for dt in (np.float32, np.int64, np.float16, np.uint8):
        with np.errstate(all="ignore"):
            want = x.astype(dt) if not (x.dtype.kind == "f" and np.dtype(dt).kind in "iu") else saturate(x, dt)
        np.testing.assert_array_equal(X.astype(dt).get(), want)


@pytest.mark.parametrize("n", SIZES[1:])
@pytest.mark.parametrize("t", list(NARROW))
def test_gpuarray_reductions(t, n):
    x = pair(t, n, 17)[0] if t != "f16" else ((np.arange(n) * 5) % 13 - 6).astype(np.float16)
    X = ga.to_gpu(x)
    s = ga.sum(X).get()
    if t == "f16":  # float16's sum is float16, computed in f32
        assert s.dtype == np.float16 and s == np.sum(x.astype(np.float32)).astype(np.float16)
        assert X.mean().get().dtype == np.float16
        assert X.mean().get() == np.float16(np.mean(x.astype(np.float32)))
    else:  # NumPy's: int64 or uint64
        assert s.dtype == np.sum(x).dtype and s == np.sum(x)
    assert ga.max(X).get() == x.max() and ga.min(X).get() == x.min()
    assert ga.max(X).get().dtype == x.dtype
    np.testing.assert_array_equal(ga.sort(X).get(), np.sort(x))
    np.testing.assert_array_equal(ga.argsort(X).get(), np.argsort(x, kind="stable"))


def test_gpuarray_promotion_follows_numpy():
    a8, a16, f = ga.to_gpu(np.int8([1, -2])), ga.to_gpu(np.int16([3, 4])), ga.to_gpu(np.float16([0.5, 2]))
    u8 = ga.to_gpu(np.uint8([250, 1]))
    for got, want in [(a8 + a16, np.int8([1, -2]) + np.int16([3, 4])), (a8 * f, np.int8([1, -2]) * np.float16([0.5, 2])),
                      (a16 + f, np.int16([3, 4]) + np.float16([0.5, 2])), (u8 + a8, np.uint8([250, 1]) + np.int8([1, -2])),
                      (f * 2.5, np.float16([0.5, 2]) * 2.5), (u8 + 10, np.uint8([250, 1]) + 10)]:
        g = got.get()
        assert g.dtype == want.dtype, (g.dtype, want.dtype)
        np.testing.assert_array_equal(g, want)


def test_cumath_on_float16_and_small_integers():
    x = np.linspace(0.1, 4, 33).astype(np.float16)
    X = ga.to_gpu(x)
    for name, f in [("sqrt", np.sqrt), ("exp", np.exp), ("log", np.log), ("sin", np.sin), ("floor", np.floor)]:
        got = getattr(cm, name)(X).get()
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, f(x), err_msg=name)
    # integers: NumPy's loops give float16 for 8-bit and float32 for 16-bit integers
    assert cm.sqrt(ga.to_gpu(np.uint8([4, 9]))).get().dtype == np.sqrt(np.uint8([4])).dtype == np.float16
    assert cm.sqrt(ga.to_gpu(np.int16([4, 9]))).get().dtype == np.float32
    np.testing.assert_array_equal(cm.sqrt(ga.to_gpu(np.uint8([4, 200]))).get(), np.sqrt(np.uint8([4, 200])))


def test_gpuarray_fill_zeros_and_full():
    for dt in (np.int8, np.uint16, np.float16):
        z = ga.zeros(5, dt)
        assert z.dtype == dt and not z.get().any()
        f = ga.full(4, 3, dt)
        np.testing.assert_array_equal(f.get(), np.full(4, 3, dt))
        assert f.get().dtype == dt
        z.fill(7)
        np.testing.assert_array_equal(z.get(), np.full(5, 7, dt))
    np.testing.assert_array_equal(ga.full(2, 0.1, np.float16).get(), np.float16([0.1, 0.1]))


@needs_ml_dtypes
def test_gpuarray_bfloat16():
    bf = np.dtype(ml_dtypes.bfloat16)
    x = bf16_values(33, 8)
    X = ga.to_gpu(x.astype(bf))
    assert X.dtype == bf and X.get().dtype == bf
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((X * 2.0).get().astype(np.float32), round_array(x * 2, BF16).astype(np.float32))
    np.testing.assert_array_equal(X.astype(np.float32).get(), x)


# ---- the GPU: DeviceArrays, PyTorch and CuPy --------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("t", list(NARROW))
def test_device_arrays_of_narrow_dtypes(t):
    m = cuk.compile(ARITH, device="gpu")
    x, y = pair(t, 1025, 31)
    X, Y = cuk.to_device(x), cuk.to_device(y)
    assert X.dtype == x.dtype.name and X.nbytes == x.nbytes
    assert X.__cuda_array_interface__["typestr"] == x.dtype.str
    r = m[f"add_{t}"](X, Y)
    assert isinstance(r, cuk.DeviceArray) and r.dtype == x.dtype.name
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(r.get(), x + y)
    s = m[f"sum_{t}"](X)
    assert isinstance(s, cuk.DeviceArray) and s.shape == ()


@needs_gpu
def test_device_bf16_array():
    m = cuk.compile(ARITH, device="gpu")
    x = bf16_values(1025, 33)
    d = m.fromf_bf16(cuk.to_device(x))  # f32 -> bf16 -> f32 on the device
    np.testing.assert_array_equal(d.get(), round_array(x, BF16).astype(np.float32))
    b = cuk.compile("fn f(x: f32[n]) -> bf16[n] = bf16(x);", device="gpu").f(cuk.to_device(x))
    assert b.dtype == "bfloat16" and b.__cuda_array_interface__["typestr"] == "<V2"
    if ml_dtypes is not None:
        np.testing.assert_array_equal(b.get().astype(np.float32), round_array(x, BF16).astype(np.float32))


@needs_gpu
def test_torch_bfloat16_and_float16_round_trip():
    torch = cukpath.torch_cuda()
    m = cuk.compile(ARITH, device="gpu")
    x = torch.linspace(-3, 3, 1025, device="cuda").to(torch.bfloat16)
    y = torch.linspace(1, 2, 1025, device="cuda").to(torch.bfloat16)
    r = m.add_bf16(x, y)
    assert isinstance(r, torch.Tensor) and r.dtype == torch.bfloat16 and r.device.type == "cuda"
    assert torch.equal(r, x + y)  # PyTorch also adds in f32 and rounds once
    assert torch.equal(m.sort_bf16(x), torch.sort(x).values)
    h = x.to(torch.float16)
    assert torch.equal(m.mul_f16(h, h), h * h) and m.mul_f16(h, h).dtype == torch.float16
    i = torch.arange(-100, 100, device="cuda", dtype=torch.int8)
    assert torch.equal(m.mul_i8(i, i), i * i)
    u = torch.arange(0, 200, device="cuda", dtype=torch.uint8)
    assert torch.equal(m.add_u8(u, u), u + u)
    assert "has dtype bfloat16" in err(m.add_f16, x, x)
    d = cuk.to_device(np.float16([1, 2]))
    assert torch.from_dlpack(d).dtype == torch.float16
    b = cuk.compile("fn f(x: f32[n]) -> bf16[n] = bf16(x);", device="gpu").f(cuk.to_device(np.float32([1.5, 0.1])))
    t = torch.from_dlpack(b)
    assert t.dtype == torch.bfloat16 and t.tolist() == [1.5, float(torch.tensor(0.1, dtype=torch.bfloat16))]


@needs_gpu
def test_cupy_narrow_dtypes_and_bf16_results():
    cp = pytest.importorskip("cupy")
    m = cuk.compile(ARITH + "fn tobf(x: f16[n]) -> bf16[n] = bf16(x);", device="gpu")
    x = cp.arange(-64, 64, dtype=cp.int8)
    r = m.mul_i8(x, x)
    assert isinstance(r, cp.ndarray) and r.dtype == cp.int8
    assert bool((r == x * x).all())
    h = cp.linspace(-2, 2, 1025).astype(cp.float16)
    r = m.add_f16(h, h)
    assert isinstance(r, cp.ndarray) and r.dtype == cp.float16 and bool((r == h + h).all())
    # CuPy has no bfloat16: the DeviceArray comes back
    b = m.tobf(h)
    assert isinstance(b, cuk.DeviceArray) and b.dtype == "bfloat16"

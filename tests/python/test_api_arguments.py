"""How Python arguments become the arguments of a compiled function (docs/python.md,
"Arguments"): NumPy arrays and device arrays must have the parameter's dtype and rank
(strided arrays are copied without a dtype change); lists, tuples and numbers convert
only where NumPy's same_kind casting allows and the values fit; None, numbers for
arrays and arrays for scalars are errors that name the function, the parameter, what
it is, what was given and what to do."""
import decimal
import fractions

import numpy as np
import pytest

import cukpath
import cuk

SRC = """
fn ints(x: i32[n]) -> i32[n] = x;
fn uints(x: u32[n]) -> u32[n] = x;
fn bigs(x: u64[n]) -> u64[n] = x;
fn flts(x: f32[n]) -> f32[n] = x;
fn bools(x: bool[n]) -> bool[n] = x;
fn total(x: f32[n]) -> f32 = sum(x);
fn grid(m: f64[r, c]) -> f64 = sum(m);
fn si(a: i32) -> i32 = a;
fn su(a: u32) -> u32 = a;
fn sl(a: i64) -> i64 = a;
fn sU(a: u64) -> u64 = a;
fn sf(a: f32) -> f32 = a;
fn sd(a: f64) -> f64 = a;
fn sb(a: bool) -> bool = a;
"""


@pytest.fixture(scope="module")
def m():
    return cuk.compile(SRC, device="cpu")


def err(fn, *args):
    """The ArgumentError message of fn(*args)."""
    with pytest.raises(cuk.ArgumentError) as e:
        fn(*args)
    assert isinstance(e.value, ValueError)
    return str(e.value)


# ---- NumPy arrays: the parameter's dtype, strided or not ---------------------------------------


def test_strided_array_keeps_its_dtype(m):
    # was: np.ascontiguousarray(x, dtype=int32) turned the float64 values into ints
    x = np.arange(10.0)[::2]
    msg = err(m.ints, x)
    assert msg.startswith("ints(): parameter 'x' is an array of int32, but the argument has dtype float64")
    assert ".astype('int32')" in msg


def test_strided_array_of_the_right_dtype_is_copied(m):
    big = np.arange(20, dtype=np.int32)
    np.testing.assert_array_equal(m.ints(big[::3]), big[::3])
    r = m.grid(np.arange(24.0).reshape(4, 6)[:, ::2])
    assert r == np.arange(24.0).reshape(4, 6)[:, ::2].sum()
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    assert m.grid(f) == 15.0


def test_strided_array_gets_the_rank_check(m):
    msg = err(m.ints, np.arange(16, dtype=np.int32).reshape(4, 4)[:, ::2])
    assert "ints(): parameter 'x' is a 1-D array of int32, but the argument is a 2-D array of shape (4, 2)" in msg
    assert "reshape" in msg


def test_object_arrays_are_not_converted(m):
    # was: np.ascontiguousarray(x, dtype=float32) turned the objects into floats
    x = np.array([1.0, 2.0, 3.0], dtype=object)
    assert "flts(): parameter 'x': arrays of format 'O'" in err(m.flts, x)
    assert "format 'O'" in err(m.flts, x[::2])
    t = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]")  # exports no buffer at all
    msg = err(m.flts, t)
    assert msg.startswith("flts(): parameter 'x' is an array of float32, but the argument's elements are no numbers")


def test_contiguous_dtype_and_rank_errors(m):
    assert "has dtype float64" in err(m.flts, np.ones(3))
    msg = err(m.total, np.ones((2, 2), np.float32))
    assert "total(): parameter 'x' is a 1-D array of float32, but the argument is a 2-D array of shape (2, 2)" in msg


# ---- lists and tuples: NumPy's same_kind casting, values that fit -----------------------------


def test_float_list_is_not_truncated_to_ints(m):
    # was: [1.5, 2.7] became [1, 2]
    msg = err(m.ints, [1.5, 2.7])
    assert "ints(): parameter 'x' is an array of int32" in msg and "float" in msg and "same_kind" in msg
    assert "astype('int32')" in msg
    assert "int32" in err(m.ints, (1.0, 2.0))  # floats, even whole ones


def test_negative_int_does_not_wrap_to_unsigned(m):
    # was: [-1] became 4294967295
    msg = err(m.uints, [-1])
    assert "uints(): parameter 'x' is an array of uint32, and -1 does not fit in it" in msg
    assert "does not fit" in err(m.uints, [2**32])
    assert "does not fit" in err(m.ints, [2**40])
    assert "does not fit" in err(m.ints, [-2**31 - 1])
    assert "does not fit" in err(m.bigs, [2**64])


def test_lists_that_convert(m):
    r = m.uints([0, 1, 2**32 - 1])
    assert r.dtype == np.uint32 and list(r) == [0, 1, 2**32 - 1]
    assert list(m.ints((-2**31, 2**31 - 1))) == [-2**31, 2**31 - 1]
    assert list(m.bigs([2**64 - 1])) == [2**64 - 1]
    np.testing.assert_array_equal(m.flts([1, 2.5]), np.array([1, 2.5], np.float32))  # int and float -> f32
    np.testing.assert_array_equal(m.ints([True, False]), [1, 0])  # bool -> int
    assert m.total([[1.0], [2.0]][0]) == 1.0
    assert m.ints([]).shape == (0,)  # empty: nothing to convert
    assert m.grid([[1, 2], [3, 4]]) == 10.0


def test_lists_that_do_not_convert(m):
    assert "bool" in err(m.bools, [1, 0])  # int -> bool is not same_kind
    assert "str" in err(m.flts, ["a"]) or "<U" in err(m.flts, ["a"])
    assert "parameter 'x'" in err(m.flts, [[1.0], [2.0, 3.0]])  # ragged
    assert "1-D array of float32, but the argument is a 2-D array" in err(m.flts, [[1.0, 2.0]])


# ---- None and numbers where an array is declared ---------------------------------------------


def test_none_is_an_error(m):
    # was: None became [nan]
    msg = err(m.total, None)
    assert msg.startswith("total(): parameter 'x' is a 1-D array of float32; got None")
    assert "si(): parameter 'a' is an int32 scalar; got None" in err(m.si, None)


def test_number_is_not_an_array(m):
    # was: 3.0 became a 1-element array
    msg = err(m.total, 3.0)
    assert "total(): parameter 'x' is a 1-D array of float32, but the argument is a number (float)" in msg
    assert "numpy.full" in msg
    assert "number (int)" in err(m.total, 3)
    assert "0-d array" in err(m.total, np.float32(3.0))
    assert "0-d array" in err(m.total, np.array(3.0, np.float32))


def test_other_objects_are_errors(m):
    assert "got a dict" in err(m.total, {"a": 1})
    assert "got a str" in err(m.total, "1.0")
    assert "got a set" in err(m.total, {1.0})


# ---- scalars -----------------------------------------------------------------------------------


def test_array_is_not_a_scalar(m):
    # was: a 1-element array was taken as its element. A function of scalars now applies
    # to each element of an array (cuk.ScalarFunction); the compiled function alone still
    # refuses one, saying so
    msg = err(m.sf._fn, np.array([1.5]))
    assert "sf(): parameter 'a' is a float32 scalar, but the argument is a 1-D array of shape (1,)" in msg
    assert "x.item()" in msg
    assert "1-D array" in err(m.si._fn, np.array([3], np.int32))
    assert "int32 scalar; got a list" in err(m.si._fn, [3])
    r = m.si(np.array([3], np.int32))
    assert r.dtype == np.int32 and r.shape == (1,) and r[0] == 3
    assert m.si([3, 4]).tolist() == [3, 4]
    assert "sf(): parameter 'a' is an array of float32, but the argument has dtype float64" in err(m.sf, np.array([1.5]))


def test_zero_d_arrays_and_numpy_scalars_are_scalars(m):
    assert m.si(np.array(3, np.int32)) == 3
    assert m.sf(np.array(1.5)) == 1.5  # float64 -> float32: same kind
    assert m.si(np.int64(7)) == 7 and m.si(np.uint8(200)) == 200 and m.si(np.int8(-5)) == -5
    assert m.sf(np.float16(1.5)) == 1.5
    assert m.sd(np.float32(0.25)) == 0.25
    assert m.sb(np.bool_(True)) == True  # noqa: E712
    assert m.su(np.uint64(7)) == 7


def test_scalars_follow_same_kind(m):
    assert m.si(True) == 1 and m.sf(2) == 2.0 and m.sd(2**53) == 2.0**53
    assert "pass an integer" in err(m.si, 1.5)
    assert "pass an integer" in err(m.si, np.float64(2.0))
    assert "True or False" in err(m.sb, 2)
    assert "True or False" in err(m.sb, 1)
    assert "True or False" in err(m.sb, np.int32(1))
    # a typed signed integer is not cast to an unsigned one (a Python int is, if it fits)
    assert "numpy.uint32" in err(m.su, np.int64(5))
    assert m.su(5) == 5


def test_scalar_values_must_fit(m):
    assert "su(): parameter 'a' is uint32, and -1 does not fit in it" in err(m.su, -1)
    assert "does not fit" in err(m.su, 2**32)
    assert "si(): parameter 'a' is int32, and 1099511627776 does not fit" in err(m.si, 2**40)
    assert "does not fit" in err(m.si, np.int64(2**40))
    assert "does not fit" in err(m.si, np.uint32(2**31))
    assert "does not fit" in err(m.sl, 2**63)
    assert "does not fit" in err(m.sU, 2**64)
    assert "does not fit" in err(m.sU, -1)
    assert m.sU(2**64 - 1) == 2**64 - 1 and m.sl(-2**63) == -2**63


def test_non_numbers_are_not_scalars(m):
    assert "got a str" in err(m.sb, "yes")  # was True
    assert "got a Fraction" in err(m.sf, fractions.Fraction(1, 2))
    assert "got a Decimal" in err(m.sd, decimal.Decimal("0.5"))
    assert "complex" in err(m.sd, np.complex128(1))


# ---- other libraries' arrays: the same dtype and rank checks -----------------------------------


class CAI:
    """An object with a __cuda_array_interface__ (checked before any device access)."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0x1000, False), "version": 3}


def test_foreign_arrays_get_dtype_and_rank_checks(m):
    assert "but the argument has dtype float64" in err(m.flts, CAI((3,), "<f8"))
    assert "is a 1-D array of float32, but the argument is a 2-D array of shape (1, 3)" in err(m.flts, CAI((1, 3), "<f4"))
    assert "is a float32 scalar, but the argument is a 1-D array" in err(m.sf, CAI((1,), "<f4"))
    if hasattr(np.ndarray, "__dlpack__"):
        assert "but the argument has dtype float64" in err(m.flts, cukpath.HostDL(np.ones(3)))
        assert "2-D array of shape (1, 3)" in err(m.flts, cukpath.HostDL(np.ones((1, 3), np.float32)))
        np.testing.assert_array_equal(m.flts(cukpath.HostDL(np.arange(3, dtype=np.float32))), [0, 1, 2])
        # a 0-d host tensor of exactly the dtype is a scalar
        assert m.sf(cukpath.HostDL(np.array(2.5, np.float32))) == 2.5
        assert "has dtype float64" in err(m.sf, cukpath.HostDL(np.array(2.5)))


def test_device_array_dtype_and_rank_checked_before_the_call(m):
    # the hot path's check; without a GPU, a wrapped pointer that is never read
    d = cuk._cuk.device_wrap(0x1000, (2, 2), "float32", None)
    assert "total(): parameter 'x' is a 1-D array of float32, but the argument is a 2-D array of shape (2, 2)" in err(m.total, d)
    d = cuk._cuk.device_wrap(0, (0,), "float64", None)
    assert "parameter 'x' is an array of float32, but the argument has dtype float64" in err(m.total, d)

"""``pycuda.cumath`` on cuk: elementwise math on GPUArrays. Each function is lazy like
GPUArray arithmetic, so ``cumath.exp(a * 2) + 1`` is one fused kernel. Integer inputs
give float64, as in NumPy. complex64 and complex128 arrays take exp, exp2, log, log2,
log10, sqrt, sin, cos, tan, sinh, cosh and tanh (NumPy's complex loops, principal
branches); the others raise TypeError."""
import numpy as np

from .gpuarray import GPUArray, _binary, _out, _stream_all, _unary


def _f(op):
    def fn(a, stream=None, out=None):
        r = _unary(op, a, float_only=True)
        if out is not None:
            out._assign(r)
            return out
        return r

    fn.__name__ = op
    fn.__doc__ = f"Elementwise {op}, like numpy.{op}."
    return fn


_abs = _f("abs")


def fabs(a, stream=None, out=None):
    """Elementwise |a| of a real array, like numpy.fabs (which has no complex loop: abs(z)
    is the magnitude of a complex array)."""
    if isinstance(a, GPUArray) and a.dtype.kind == "c":
        raise TypeError(f"fabs is not defined for {a.dtype} arrays (as numpy.fabs); abs(z) is the magnitude")
    return _abs(a, stream, out)

ceil = _f("ceil")
floor = _f("floor")
exp = _f("exp")
log = _f("log")
sqrt = _f("sqrt")
sin = _f("sin")
cos = _f("cos")
tan = _f("tan")
asin = _f("asin")
acos = _f("acos")
atan = _f("atan")
sinh = _f("sinh")
cosh = _f("cosh")
tanh = _f("tanh")
_real_log10, _real_log2, _real_exp2 = _f("log10"), _f("log2"), _f("exp2")


def _complex(a):
    return isinstance(a, GPUArray) and a.dtype.kind == "c"


# NumPy's complex log10, log2 and exp2 (nc_log10, nc_log2, nc_exp2) scale log(z) by
# log10(e) or log2(e), and z by ln(2) before exp: the same here (the language's log and
# exp are those of complex numbers; its log10, log2 and exp2 are real).
def log10(a, stream=None, out=None):
    """Elementwise log10, like numpy.log10 (complex z: log(z) * log10(e), as NumPy)."""
    if _complex(a):
        return _out(_unary("log", a) * float(np.log10(np.e)), out)
    return _real_log10(a, stream, out)


def log2(a, stream=None, out=None):
    """Elementwise log2, like numpy.log2 (complex z: log(z) * log2(e), as NumPy)."""
    if _complex(a):
        return _out(_unary("log", a) * float(np.log2(np.e)), out)
    return _real_log2(a, stream, out)


def exp2(a, stream=None, out=None):
    """Elementwise 2**a, like numpy.exp2 (complex z: exp(z * ln 2), as NumPy)."""
    if _complex(a):
        return _out(_unary("exp", a * float(np.log(2.0))), out)
    return _real_exp2(a, stream, out)


# beyond PyCUDA's list
trunc = _f("trunc")
erf = _f("erf")
rint = _f("round")


def _float(a):
    if isinstance(a, GPUArray):
        if a.dtype.kind == "c":
            raise TypeError(f"this function takes real arrays, not {a.dtype}; take z.real and z.imag apart")
        return a if a.dtype.kind == "f" else a.astype(np.float64)
    return float(a)


def fmod(arg, mod, stream=None):
    """The remainder with the sign of arg (C's fmod)."""
    return _binary("fmod", _float(arg), _float(mod))


def ldexp(significand, exponent, stream=None, out=None):
    """significand * 2**exponent with the exponent truncated to an integer, as C's
    ldexp(x, int) that PyCUDA's kernel calls with a float exponent array (1.9 counts as
    1, -1.9 as -1). The power is applied in two halves, so a result that is finite (or
    subnormal) is not lost to 2**e overflowing (or underflowing) first."""
    s = _float(significand)
    if isinstance(exponent, GPUArray):
        if exponent.dtype.kind == "c":
            raise TypeError(f"ldexp(): the exponent must be real, not {exponent.dtype}")
        t = trunc(exponent.astype(s.dtype) if isinstance(s, GPUArray) else exponent)
        h = trunc(t * 0.5)
        return _out(s * exp2(h) * exp2(t - h), out)
    # a scalar exponent: powers of two the type holds, enough of them to reach every
    # finite result
    fi = np.finfo(s.dtype if isinstance(s, GPUArray) else np.float64)
    step, reach = fi.maxexp - 8, 3 * fi.maxexp
    t = max(min(int(exponent), reach), -reach)
    r = s
    while t:
        p = max(min(t, step), -step)
        r = r * float(2.0 ** p)
        t -= p
    return _out(r if r is not s else s * 1.0, out)


def modf(arg, stream=None):
    """(fractional part, integral part), both with arg's sign."""
    a = _float(arg)
    i = trunc(a)
    return a - i, i


def frexp(arg, stream=None):
    """(mantissa, exponent) with arg = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    (mantissa 0 and exponent 0 for 0)."""
    a = _float(arg).copy()
    mag = fabs(a)
    nz = mag > 0
    e = (floor(log2(mag + (~nz).astype(a.dtype))) + 1).copy()  # log2(1) = 0 where a == 0
    m = (a / exp2(e)).copy()
    # log2 rounds near powers of two: fix the mantissa into [0.5, 1)
    lo = fabs(m) < 0.5
    hi = fabs(m) >= 1
    from .gpuarray import if_positive

    m2 = if_positive(lo.astype(np.int32), m * 2, if_positive(hi.astype(np.int32), m / 2, m))
    e2 = if_positive(lo.astype(np.int32), e - 1, if_positive(hi.astype(np.int32), e + 1, e))
    m2 = if_positive(nz.astype(np.int32), m2, 0.0)
    e2 = if_positive(nz.astype(np.int32), e2, 0.0)
    return m2.copy(), e2.copy()


_stream_all(globals(), [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
                        and not n.startswith("_")])

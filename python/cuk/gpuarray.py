"""``pycuda.gpuarray`` on cuk: GPUArray with NumPy semantics, evaluated lazily.

Arithmetic, comparisons, casts and cumath functions build an expression; when a value
is needed (``get()``, a reduction, a kernel argument, printing) the whole expression is
written as one cuk function, compiled by the cuk compiler (cached by its text) and run,
so a chain such as ``(a * 2 + b).astype(np.float64) ** 2`` is one fused kernel where
PyCUDA runs one per operation. ``sum``/``dot``/``max``/``min`` fuse their producers too.

complex64 and complex128 arrays have PyCUDA's ``.real``, ``.imag``, ``.conj()``,
``abs()`` (real), arithmetic, ``==``/``!=``, ``sum``/``dot``/``vdot`` and the cumath
functions NumPy's complex loops have (exp, log, sqrt, sin, cos, tan, sinh, cosh, tanh;
``**``). They have no order: ``<``, ``max``, ``min``, ``sort`` and their kin raise
TypeError, as the language refuses them (compare ``abs(z)`` or ``z.real``).

Storage: device memory (a :class:`cuk.DeviceArray`) when a GPU is usable; without one
a GPUArray keeps a host NumPy array and the same expressions run on cuk's CPU backend,
so code written for the GPU runs (slowly) anywhere. ``cuk.gpuarray.BACKEND`` says which.
"""
import numbers
import os

import numpy as np

from . import _cuk
from ._cuk import ArgumentError, Error

_SUPPORTED = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
# NumPy has no bfloat16 of its own: ml_dtypes.bfloat16 (JAX's) is cuk's bf16 where it is
# installed; its dtype is named "bfloat16".
_DTYPE_LIST = ("bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64, "
               "complex64, complex128, bfloat16 (ml_dtypes)")


def _np_dtype(dtype):
    """np.dtype(dtype), with "bfloat16" (a cuk.DeviceArray's dtype name) as
    ml_dtypes.bfloat16."""
    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        try:
            import ml_dtypes
        except ImportError:
            raise ArgumentError("bfloat16 arrays need ml_dtypes (pip install ml_dtypes): NumPy has no bfloat16 of "
                                "its own") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def _backend():
    want = os.environ.get("CUK_BACKEND", "auto")
    if want == "cpu":
        return "cpu"
    ok, why = _cuk.gpu_available()
    if want == "gpu" and not ok:
        raise Error(f"CUK_BACKEND=gpu but no GPU is usable: {why}")
    return "gpu" if ok else "cpu"


_BACKEND = None


def backend():
    """'gpu' or 'cpu': where GPUArrays live in this process (decided on first use)."""
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = _backend()
    return _BACKEND


def __getattr__(name):
    if name == "BACKEND":
        return backend()
    raise AttributeError(name)


def _ty(dtype):
    dtype = _np_dtype(dtype)
    try:
        return _SUPPORTED[dtype]
    except KeyError:
        if dtype.name == "bfloat16" and dtype.itemsize == 2:
            return "bf16"
        raise ArgumentError(f"dtype {dtype} is not supported by cuk ({_DTYPE_LIST})") from None


def _canon(dtype):
    """NumPy's dtype, checked to be one cuk has (float128, complex256, strings are not)."""
    dtype = _np_dtype(dtype)
    _ty(dtype)
    return dtype


# ---- expressions -----------------------------------------------------------------------

class _Leaf:
    """A materialised array (storage: DeviceArray or ndarray) or a scalar."""

    __slots__ = ("value", "shape", "dtype", "scalar")

    def __init__(self, value, shape, dtype, scalar=False):
        self.value, self.shape, self.dtype, self.scalar = value, shape, dtype, scalar


class _Node:
    __slots__ = ("op", "args", "shape", "dtype", "extra")

    def __init__(self, op, args, shape, dtype, extra=None):
        self.op, self.args, self.shape, self.dtype, self.extra = op, args, shape, dtype, extra


_BINOPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "pow": "**", "eq": "==", "ne": "!=", "lt": "<",
           "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|", "xor": "^"}
_CMP = {"eq", "ne", "lt", "le", "gt", "ge"}
_FUNCS1 = {"abs", "sqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
           "cosh", "tanh", "floor", "ceil", "round", "trunc", "erf", "rsqrt"}
_FUNCS2 = {"minimum", "maximum", "fmod", "atan2", "pow"}
# what the language has for complex numbers: the rest (orderings, %, bit operations,
# floor, erf, ...) raise TypeError here, before any source is written
_COMPLEX_OPS = {"add", "sub", "mul", "div", "pow", "eq", "ne", "neg", "abs", "sqrt", "exp", "log", "sin", "cos", "tan",
                "sinh", "cosh", "tanh", "real", "imag", "conj", "isnan", "isinf", "where", "cast"}
_PARTS = {"real", "imag", "conj"}


def _part_dtype(dtype):
    """The dtype of a complex dtype's parts (complex64: float32)."""
    return np.empty(0, dtype).real.dtype


def _no_complex(what, dtype):
    if dtype is not None and dtype.kind == "c":
        raise TypeError(f"{what} is not defined for {dtype} arrays: complex numbers have no order; "
                        "compare abs(z) or z.real")

_cache = {}


def _module(src):
    m = _cache.get(src)
    if m is None:
        m = _cache[src] = _cuk.compile(src, _cuk.BACKEND_GPU if backend() == "gpu" else _cuk.BACKEND_CPU,
                                       "<gpuarray>").function("k")
    return m


class _Gen:
    """Writes an expression tree as one cuk function `k`."""

    def __init__(self, out_shape):
        self.params = []  # (name, text)
        self.args = []
        self.leaf_ids = {}
        self.out_shape = out_shape
        self.rank = len(out_shape)

    def dims_of(self, shape):
        # trailing alignment with the output; size-1 axes that broadcast are literal 1
        off = self.rank - len(shape)
        out = []
        for k, s in enumerate(shape):
            j = k + off
            out.append("1" if (s == 1 and self.out_shape[j] != 1) else f"d{j}")
        return out

    def leaf(self, lf):
        key = id(lf.value) if not lf.scalar else None
        if key is not None and key in self.leaf_ids:
            return self.leaf_ids[key]
        name = f"a{len(self.params)}"
        if lf.scalar:
            self.params.append((name, _ty(lf.dtype)))
            self.args.append(lf.value)
        else:
            dims = self.dims_of(lf.shape)
            self.params.append((name, f"{_ty(lf.dtype)}[{', '.join(dims)}]" if dims else _ty(lf.dtype)))
            self.args.append(lf.value)
            self.leaf_ids[key] = name
        return name

    def expr(self, e):
        if isinstance(e, _Leaf):
            return self.leaf(e)
        t = _ty(e.dtype)
        if t in ("f16", "bf16") and e.op != "cast":
            # PyCUDA rounds each operation's result to the array's type; the language
            # rounds a 16-bit float expression once, at its end, unless a cast says so
            return f"{t}({self._expr(e)})"
        return self._expr(e)

    def _expr(self, e):
        t = _ty(e.dtype)
        if e.op == "cast":
            return f"{t}({self.expr(e.args[0])})"
        if e.op == "neg":  # NumPy's -x of unsigned x wraps; the language spells that 0 - x
            return f"(0 - {self.expr(e.args[0])})" if e.dtype.kind == "u" else f"(-{self.expr(e.args[0])})"
        if e.op == "not":
            return f"(!{self.expr(e.args[0])})"
        if e.op in _BINOPS:
            return f"({self.expr(e.args[0])} {_BINOPS[e.op]} {self.expr(e.args[1])})"
        if e.op == "where":
            return f"where({', '.join(self.expr(a) for a in e.args)})"
        if e.op in _FUNCS1 or e.op in _FUNCS2 or e.op in _PARTS or e.op in ("isnan", "isinf", "clamp"):
            return f"{e.op}({', '.join(self.expr(a) for a in e.args)})"
        raise AssertionError(e.op)


def _run(expr, reduce=None):
    """Evaluates an expression (optionally reduced: 'sum', 'max', 'min') to storage."""
    shape = () if reduce else expr.shape
    g = _Gen(expr.shape)
    body = g.expr(expr)
    if reduce:
        # keepdims: a result of one element stays in device memory (a scalar result
        # would come to the host, and back for the 0-d GPUArray: a synchronisation)
        body = f"{reduce}({body}, keepdims=true)"
        ret = f"{_ty(expr.dtype)}[{', '.join('1' for _ in expr.shape)}]"
    else:
        dims = [("1" if s == 1 and not _bound(g, k) else f"d{k}") for k, s in enumerate(expr.shape)]
        ret = f"{_ty(expr.dtype)}[{', '.join(dims)}]" if dims else _ty(expr.dtype)
    params = ", ".join(f"{n}: {t}" for n, t in g.params)
    src = f"fn k({params}) -> {ret} = {body};\n"
    out = _module(src)(*g.args)
    if isinstance(out, np.generic):
        out = np.asarray(out)
    return out, shape


def _bound(g, k):
    """Is output axis k's size variable bound by some parameter?"""
    return any(f"d{k}" in t.replace("[", ",").replace("]", ",").replace(" ", "").split(",") for _, t in g.params)


def _leaf_of(x):
    if isinstance(x, GPUArray):
        return x._node()
    if isinstance(x, (bool, np.bool_)):
        return _Leaf(bool(x), (), np.dtype(np.bool_), True)
    if isinstance(x, numbers.Number):
        return _Leaf(x, (), None, True)  # weakly typed: takes the array's type
    raise TypeError(f"cannot combine a GPUArray with {type(x).__name__}")


def _result_dtype(op, a, b):
    if a.dtype is None and b.dtype is not None and b.dtype.name == "bfloat16" and isinstance(a.value, (int, float)):
        dt = b.dtype  # a Python number takes bfloat16's type (ml_dtypes has no promotion for floats)
    elif b.dtype is None and a.dtype is not None and a.dtype.name == "bfloat16" and isinstance(b.value, (int, float)):
        dt = a.dtype
    elif a.dtype is None:
        dt = np.result_type(a.value, np.empty(0, b.dtype))
    elif b.dtype is None:
        dt = np.result_type(np.empty(0, a.dtype), b.value)
    else:
        dt = np.result_type(a.dtype, b.dtype)
    if op == "div" and dt.kind in "iub":
        dt = np.dtype(np.float64)
    return _canon(dt)


def _bshape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with shapes {a} {b}") from None


def _cast(e, dtype):
    if isinstance(e, _Leaf) and e.scalar:
        v = e.value
        return _Leaf(np.dtype(dtype).type(v).item() if dtype != np.bool_ else bool(v), (), np.dtype(dtype), True)
    if e.dtype == dtype:
        return e
    return _Node("cast", [e], e.shape, np.dtype(dtype))


def _binary(op, x, y, reflected=False):
    a, b = _leaf_of(x), _leaf_of(y)
    if reflected:
        a, b = b, a
    dt = _result_dtype(op, a, b)
    if dt.kind == "c" and op not in _COMPLEX_OPS:
        spelled = _BINOPS.get(op, op)
        if op in _CMP or op in ("minimum", "maximum"):
            _no_complex(f"'{spelled}'", dt)
        raise TypeError(f"'{spelled}' is not defined for {dt} arrays; take z.real and z.imag apart")
    a, b = _cast(a, dt), _cast(b, dt)
    shape = _bshape(a.shape, b.shape)
    out_dt = np.dtype(np.bool_) if op in _CMP else dt
    return GPUArray._lazy(_Node(op, [a, b], shape, out_dt))


def _unary(op, x, float_only=False):
    e = _leaf_of(x)
    dt = e.dtype
    if dt.kind == "c":
        if op not in _COMPLEX_OPS:
            raise TypeError(f"{op} is not defined for {dt} arrays (cuk's complex functions: abs, exp, log, sqrt, "
                            "sin, cos, tan, sinh, cosh, tanh); take z.real and z.imag apart")
        if op in ("abs", "real", "imag"):
            dt = _part_dtype(dt)  # |z| and the parts are real
        elif op in ("isnan", "isinf"):
            dt = np.dtype(np.bool_)
        return GPUArray._lazy(_Node(op, [e], e.shape, dt))
    if float_only and dt.kind != "f" and dt.name != "bfloat16":
        # NumPy's ufunc loops: bool, int8 and uint8 give float16, 16-bit integers float32,
        # the rest float64 (numpy.sqrt(numpy.int8(4)) is a float16)
        dt = np.result_type(dt, np.float16)
        e = _cast(e, dt)
    return GPUArray._lazy(_Node(op, [e], e.shape, dt))


# ---- storage helpers ---------------------------------------------------------------------

def _alloc(shape, dtype, zero=False, allocator=None):
    if backend() == "cpu":
        return (np.zeros if zero else np.empty)(shape, dtype)
    if allocator is not None:
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        mem = allocator(max(nbytes, 1))
        d = _cuk.device_wrap(int(mem), shape, dtype.name, mem)
        if zero and nbytes:
            _cuk.memset_d8(d, 0, nbytes)
        return d
    return _cuk.device_empty(shape, dtype.name, zero)


def _upload(ary, allocator=None):
    ary = np.asarray(ary, order="C")  # (np.ascontiguousarray would make a 0-d array 1-D)
    dt = _canon(ary.dtype)
    if backend() == "cpu":
        return ary.copy()
    if allocator is not None:
        d = _alloc(ary.shape, dt, allocator=allocator)
        if ary.nbytes:
            d.set(ary)
        return d
    return _cuk.to_device(ary)


# ---- GPUArray ------------------------------------------------------------------------------

class GPUArray:
    """A dense array on the device (or, without a GPU, on the host; see the module doc)."""

    __array_priority__ = 100  # numpy scalars defer to our operators

    def __init__(self, shape, dtype, allocator=None, base=None, gpudata=None, strides=None, order="C"):
        shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(s) for s in shape)
        self._dtype = _canon(dtype)
        self._shape = shape
        self._expr = None
        self.allocator = allocator
        if gpudata is not None:
            if backend() == "cpu":
                raise Error("GPUArray(gpudata=...) needs a GPU")
            self._data = _cuk.device_wrap(int(gpudata), shape, self._dtype.name, gpudata if base is None else base)
        else:
            self._data = _alloc(shape, self._dtype, allocator=allocator)
        self.base = base

    @classmethod
    def _wrap(cls, data, base=None):
        a = cls.__new__(cls)
        a._data = data
        a._expr = None
        a._shape = tuple(data.shape)
        a._dtype = _np_dtype(data.dtype)
        a.allocator = None
        a.base = base
        return a

    @classmethod
    def _lazy(cls, expr):
        a = cls.__new__(cls)
        a._data = None
        a._expr = expr
        a._shape = tuple(expr.shape)
        a._dtype = expr.dtype
        a.allocator = None
        a.base = None
        return a

    # the expression node standing for this array
    def _node(self):
        if self._expr is not None:
            return self._expr
        return _Leaf(self._data, self._shape, self._dtype)

    def _storage(self):
        if self._data is None:
            out, _ = _run(self._expr)
            self._data = out
            self._expr = None
        return self._data

    # -- properties
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    ndim = property(lambda self: len(self._shape))
    nbytes = property(lambda self: self.size * self._dtype.itemsize)
    mem_size = size
    itemsize = property(lambda self: self._dtype.itemsize)

    @property
    def strides(self):
        st, acc = [], self._dtype.itemsize
        for s in reversed(self._shape):
            st.append(acc)
            acc *= s
        return tuple(reversed(st))

    @property
    def flags(self):
        class _F:
            c_contiguous = True
            f_contiguous = self.ndim <= 1
            forc = True
        return _F()

    @property
    def gpudata(self):
        d = self._storage()
        if isinstance(d, np.ndarray):
            raise Error("gpudata: this GPUArray lives on the host (no GPU is usable)")
        return d

    ptr = property(lambda self: int(self.gpudata))

    @property
    def __cuda_array_interface__(self):
        return self.gpudata.__cuda_array_interface__

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d GPUArray")
        return self._shape[0]

    # -- host transfers
    def get(self, ary=None, pagelocked=False, async_=False, stream=None):
        d = self._storage()
        if isinstance(d, np.ndarray):
            out = np.array(d, copy=True) if ary is None else ary
            if ary is not None:
                ary[...] = d
            return out
        if ary is None:
            return d.get()
        d.get(out=ary)
        return ary

    def get_async(self, stream=None, ary=None):
        return self.get(ary=ary)

    def set(self, ary, async_=False, stream=None):
        ary = np.asarray(ary)
        if ary.size != self.size:
            raise ValueError(f"set(): the array has {self.size} elements, the source {ary.size}")
        ary = np.ascontiguousarray(ary, dtype=self._dtype)
        d = self._storage()
        if isinstance(d, np.ndarray):
            d[...] = ary.reshape(self._shape)
        elif ary.nbytes:
            d.set(ary)

    def set_async(self, ary, stream=None):
        self.set(ary)

    def __array__(self, dtype=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    def __str__(self):
        return str(self.get())

    def __repr__(self):
        return repr(self.get()).replace("array(", "GPUArray(", 1)

    def __bool__(self):
        if self.size != 1:
            raise ValueError("the truth value of a GPUArray with more than one element is ambiguous")
        return bool(self.get())

    def __float__(self):
        return float(self.get())

    def __complex__(self):
        return complex(self.get())

    def __int__(self):
        return int(self.get())

    def __index__(self):
        return int(self.get())

    # -- arithmetic (lazy)
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", self, o, True)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", self, o, True)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", self, o, True)
    def __truediv__(self, o): return _binary("div", self, o)
    def __rtruediv__(self, o): return _binary("div", self, o, True)
    __div__, __rdiv__ = __truediv__, __rtruediv__
    def __mod__(self, o): return _binary("mod", self, o)
    def __rmod__(self, o): return _binary("mod", self, o, True)
    def __pow__(self, o): return _binary("pow", self, o)
    def __rpow__(self, o): return _binary("pow", self, o, True)
    def __and__(self, o): return _binary("and", self, o)
    def __or__(self, o): return _binary("or", self, o)
    def __xor__(self, o): return _binary("xor", self, o)
    def __eq__(self, o): return _binary("eq", self, o)
    def __ne__(self, o): return _binary("ne", self, o)
    def __lt__(self, o): return _binary("lt", self, o)
    def __le__(self, o): return _binary("le", self, o)
    def __gt__(self, o): return _binary("gt", self, o)
    def __ge__(self, o): return _binary("ge", self, o)
    def __neg__(self): return _unary("neg", self)
    def __pos__(self): return self
    def __abs__(self): return _unary("abs", self)
    def __invert__(self):
        if self._dtype == np.bool_:
            return _unary("not", self)
        # all ones: -1, or the unsigned maximum (a -1 would make NumPy widen the type)
        return _binary("xor", self, int(np.iinfo(self._dtype).max) if self._dtype.kind == "u" else -1)
    __hash__ = None

    def _inplace(self, op, o):
        r = _binary(op, self, o)
        if r.dtype.kind == "c" and self._dtype.kind != "c":
            raise TypeError(f"cannot write a {r.dtype} result into a {self._dtype} array in place (NumPy's same_kind "
                            "casting): take .real or abs() of the operand, or make the array complex first")
        if r.dtype != self._dtype:
            r = r.astype(self._dtype)
        self._assign(r)
        return self

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("sub", o)
    def __imul__(self, o): return self._inplace("mul", o)
    def __itruediv__(self, o): return self._inplace("div", o)
    __idiv__ = __itruediv__

    def _assign(self, value):
        """Writes value (GPUArray or scalar, broadcast) into this array's memory."""
        if not isinstance(value, GPUArray):
            value = full(self._shape, value, self._dtype)
        elif value.shape != self._shape:
            # broadcast against zeros of the target shape (a leaf that binds every axis)
            value = value + zeros(self._shape, value.dtype)
            if value.shape != self._shape:
                raise ValueError(f"could not broadcast {value.shape} into {self._shape}")
        if value.dtype != self._dtype:
            value = value.astype(self._dtype)
        src = value._storage()
        dst = self._storage()
        if isinstance(dst, np.ndarray):
            dst[...] = src
        elif self.nbytes:
            _cuk.memcpy_dtod(dst, src, self.nbytes)

    # -- methods
    def astype(self, dtype, stream=None):
        dtype = _canon(dtype)
        return GPUArray._lazy(_cast(self._node(), dtype)) if dtype != self._dtype else self.copy()

    def copy(self):
        out = GPUArray._wrap(_alloc(self._shape, self._dtype))
        out._assign(self)
        return out

    def fill(self, value, stream=None):
        self._assign(value)
        return self

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        shape = list(shape)
        if -1 in shape:
            i = shape.index(-1)
            rest = int(np.prod([s for j, s in enumerate(shape) if j != i], dtype=np.int64))
            shape[i] = self.size // rest if rest else 0
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
        if order != "C":
            raise ValueError("cuk arrays are C-ordered")
        d = self._storage()
        if isinstance(d, np.ndarray):
            return GPUArray._wrap(d.reshape(shape), base=self)
        return GPUArray._wrap(_cuk.device_wrap(int(d), shape, self._dtype.name, d), base=self)

    def ravel(self):
        return self.reshape(self.size)

    def view(self, dtype=None):
        if dtype is None or _np_dtype(dtype) == self._dtype:
            return self.reshape(self._shape)
        dtype = _canon(dtype)
        if self.nbytes % dtype.itemsize:
            raise ValueError("view: sizes do not divide")
        d = self._storage()
        shape = self._shape[:-1] + (self._shape[-1] * self._dtype.itemsize // dtype.itemsize,) if self._shape else ()
        if isinstance(d, np.ndarray):
            return GPUArray._wrap(d.view(dtype), base=self)
        return GPUArray._wrap(_cuk.device_wrap(int(d), shape, dtype.name, d), base=self)

    @property
    def T(self):
        return self.transpose()

    def transpose(self, axes=None):
        if axes is not None and tuple(axes) != tuple(reversed(range(self.ndim))):
            return to_gpu(np.transpose(self.get(), axes))
        if self.ndim < 2:
            return self
        shape = tuple(reversed(self._shape))
        x = self._storage()
        n = self.ndim
        dims_in = ", ".join(f"d{k}" for k in range(n))
        dims_out = ", ".join(f"d{k}" for k in reversed(range(n)))
        t = _ty(self._dtype)
        src = f"fn k(x: {t}[{dims_in}]) -> {t}[{dims_out}] = transpose(x);\n"
        return GPUArray._wrap(_module(src)(x))

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        d = self._storage()
        if isinstance(d, np.ndarray):
            v = d[idx]
            if not isinstance(v, np.ndarray):
                v = np.asarray(v)
            return GPUArray._wrap(v, base=self)
        # Views for what stays contiguous: leading integer indices, then one step-1 range.
        shape = list(self._shape)
        strides = list(self.strides)
        off = 0
        k = 0
        rest = list(idx)
        while rest and isinstance(rest[0], numbers.Integral) and k < len(shape):
            i = int(rest.pop(0))
            if i < 0:
                i += shape[k]
            if not 0 <= i < shape[k]:
                raise IndexError(f"index {i} is out of bounds for axis {k} with size {shape[k]}")
            off += i * strides[k]
            k += 1
        new_shape = shape[k:]
        if rest and isinstance(rest[0], slice) and k < len(shape):
            start, stop, step = rest[0].indices(shape[k])
            if step == 1 and all(r == slice(None) for r in rest[1:]):
                rest = []
                off += start * strides[k]
                new_shape = [max(stop - start, 0)] + shape[k + 1:]
        if all(r == slice(None) or r is Ellipsis for r in rest):
            return GPUArray._wrap(_cuk.device_wrap(int(d) + off, tuple(new_shape), self._dtype.name, d), base=self)
        # Strided or fancy selections: a copy (PyCUDA gives a strided view).
        return to_gpu(np.ascontiguousarray(self.get()[idx]))

    def __setitem__(self, idx, value):
        view = self[idx]
        if view.base is not self:
            raise ValueError("assignment needs a contiguous selection (integers and one step-1 range)")
        view._assign(value)

    # -- reductions and friends
    def sum(self, dtype=None, stream=None):
        return sum(self, dtype)

    def max(self, stream=None):
        return max(self)

    def min(self, stream=None):
        return min(self)

    def mean(self):
        if self._dtype.kind == "c":
            return sum(self) / self.size
        if self._dtype.kind != "f" and self._dtype.name != "bfloat16":
            return sum(self.astype(np.float64)) / self.size
        if self._dtype.itemsize == 2:
            # as NumPy does for float16: summed and divided in float32, rounded once
            return (sum(self, np.float32) / self.size).astype(self._dtype)
        return sum(self) / self.size

    def dot(self, other):
        return dot(self, other)

    def sort(self, axis=-1, kind=None):
        """Sorts in place along axis (cupy.ndarray.sort)."""
        self._assign(sort(self, axis, kind))

    def argsort(self, axis=-1, kind=None):
        return argsort(self, axis, kind)

    # -- complex numbers (PyCUDA's names; lazy, as arithmetic is)
    @property
    def real(self):
        """The real parts (a float32 array of a complex64 one); a real array itself."""
        return _unary("real", self) if self._dtype.kind == "c" else self

    @property
    def imag(self):
        """The imaginary parts; zeros for a real array."""
        return _unary("imag", self) if self._dtype.kind == "c" else zeros_like(self)

    def conj(self, out=None):
        """The complex conjugates (out=: written there); a real array itself."""
        r = _unary("conj", self) if self._dtype.kind == "c" else self
        if out is not None:
            out._assign(r)
            return out
        return r

    conjugate = conj

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def get_device_alloc(self):
        return self.gpudata


# ---- module functions ------------------------------------------------------------------------

def to_gpu(ary, allocator=None):
    """A GPUArray copy of a NumPy array."""
    return GPUArray._wrap(_upload(np.asarray(ary), allocator))


def to_gpu_async(ary, allocator=None, stream=None):
    return to_gpu(ary, allocator)


def empty(shape, dtype=np.float32, allocator=None, order="C"):
    return GPUArray(shape, dtype, allocator)


def zeros(shape, dtype=np.float32, allocator=None, order="C"):
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
    return GPUArray._wrap(_alloc(shape, _canon(dtype), zero=True, allocator=allocator))


def full(shape, fill_value, dtype=None, allocator=None):
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
    dtype = _canon(dtype if dtype is not None else np.asarray(fill_value).dtype)
    t = _ty(dtype)
    n = len(shape)
    dims = ", ".join(f"d{k}" for k in range(n))
    params = ", ".join([f"v: {t}"] + [f"d{k}: i64" for k in range(n)])
    src = f"fn k({params}) -> {t}[{dims}] = full(v, {dims});\n" if n else f"fn k(v: {t}) -> {t} = v;\n"
    v = bool(fill_value) if dtype == np.bool_ else dtype.type(fill_value).item()
    if not n:
        out = np.asarray(dtype.type(v))
        return GPUArray._wrap(_cuk.to_device(out) if backend() == "gpu" else out)
    out = _alloc(shape, dtype, allocator=allocator)
    _module(src)(v, *shape, out=out)  # written in place: no result block, no copy
    return GPUArray._wrap(out)


def ones(shape, dtype=np.float32, allocator=None):
    return full(shape, 1, dtype)


def empty_like(other, dtype=None):
    return empty(other.shape, dtype or other.dtype)


def zeros_like(other, dtype=None):
    return zeros(other.shape, dtype or other.dtype)


def ones_like(other, dtype=None):
    return ones(other.shape, dtype or other.dtype)


def arange(*args, dtype=None, allocator=None):
    """Like numpy.arange, computed on the host and copied (it is small next to any kernel)."""
    return to_gpu(np.arange(*args, dtype=dtype))


def _reduce(kind, a, dtype=None):
    if not isinstance(a, GPUArray):
        a = to_gpu(np.asarray(a))
    e = a._node()
    dt = a.dtype
    if kind == "sum":
        dt = np.dtype(dtype) if dtype is not None else np.sum(np.zeros(0, a.dtype)).dtype
        dt = _canon(dt)
        if a.dtype.kind == "c" and dt.kind != "c":
            raise TypeError(f"sum() of a {a.dtype} array into {dt}: NumPy's same_kind casting does not make complex "
                            "numbers real; sum z.real or abs(z)")
        e = _cast(e, dt)
    if kind != "sum":
        _no_complex(f"{kind}()", a.dtype)
    if a.size == 0 and kind != "sum":
        raise ValueError(f"{kind}() of an empty array")
    if not a.shape:  # a 0-d array is its own reduction
        return GPUArray._lazy(e).copy() if isinstance(e, _Node) else GPUArray._wrap(a._storage()).copy()
    out, _ = _run(e, kind)
    return _wrap_0d(out)


def _wrap_0d(out):
    """A one-element result as a 0-d GPUArray: a host array moved to the device where the
    backend is the GPU, a device result viewed as 0-d (int() of a device array is its
    address, as PyCUDA's, not its value)."""
    if isinstance(out, np.ndarray):
        out = out.reshape(())
        if backend() == "gpu":
            out = _cuk.to_device(np.ascontiguousarray(out))
    else:
        out = _cuk.device_wrap(out.__cuda_array_interface__["data"][0], (), _np_dtype(out.dtype).name, out)
    return GPUArray._wrap(out)


def sum(a, dtype=None, stream=None):  # noqa: A001
    """The sum as a 0-d GPUArray (``.get()`` reads it), fused with a's expression."""
    return _reduce("sum", a, dtype)


def max(a, stream=None):  # noqa: A001
    return _reduce("max", a)


def min(a, stream=None):  # noqa: A001
    return _reduce("min", a)


def dot(a, b, dtype=None, stream=None):
    """sum(a * b), one fused kernel."""
    return sum(a * b, dtype)


def vdot(a, b, dtype=None, stream=None):
    """sum(conj(a) * b), as numpy.vdot and PyCUDA's vdot."""
    return dot(a.conj() if isinstance(a, GPUArray) else np.conj(a), b, dtype)


def real(a):
    return a.real


def imag(a):
    return a.imag


def conj(a, out=None):
    return a.conj(out)


def subset_dot(subset, a, b, dtype=None, stream=None):
    return dot(a[subset], b[subset], dtype)


def maximum(a, b, out=None, stream=None):
    return _binary("maximum", a, b)


def minimum(a, b, out=None, stream=None):
    return _binary("minimum", a, b)


def if_positive(criterion, then_, else_, out=None, stream=None):
    c = criterion > 0
    t, e = _leaf_of(then_), _leaf_of(else_)
    dt = _result_dtype("add", t, e)
    t, e = _cast(t, dt), _cast(e, dt)
    shape = _bshape(_bshape(c.shape, t.shape), e.shape)
    return GPUArray._lazy(_Node("where", [c._node(), t, e], shape, dt))


def where(cond, a, b):
    return if_positive(cond.astype(np.bool_) if isinstance(cond, GPUArray) else cond, a, b)


def concatenate(arrays, axis=0, allocator=None):
    return to_gpu(np.concatenate([x.get() for x in arrays], axis=axis))


def stack(arrays, axis=0, allocator=None):
    return to_gpu(np.stack([x.get() for x in arrays], axis=axis))


def reshape(a, shape):
    return a.reshape(shape)


def transpose(a, axes=None):
    return a.transpose(axes)


def take(a, indices, out=None, stream=None):
    return to_gpu(np.take(a.get(), indices.get() if isinstance(indices, GPUArray) else indices))


# ---- sorting (the language's sort, argsort, searchsorted and unique; CuPy's names) ----

_AxisError = getattr(np, "exceptions", np).AxisError  # NumPy 2 moved it


def _sort_fn(a, fn, axis, kind):
    """sort or argsort of a along axis (None: of a flattened), stable whatever kind
    says (NumPy's kinds name algorithms; every one of them gives the stable order here)."""
    if kind not in (None, "stable", "quicksort", "mergesort", "heapsort"):
        raise ValueError(f"{fn}(): unknown kind {kind!r}")
    _no_complex(f"{fn}()", a.dtype)
    if axis is None:
        a = a.ravel()
        axis = 0
    n = a.ndim
    if not -n <= axis < n:
        raise _AxisError(f"{fn}(): axis {axis} is out of bounds for an array of {n} dimensions"
                         + (" (a 0-d array has no axis to sort along; sort a 1-D array)" if n == 0 else ""))
    axis %= n
    t = _ty(a.dtype)
    dims = ", ".join(f"d{k}" for k in range(n))
    rt = "i64" if fn == "argsort" else t
    src = f"fn k(x: {t}[{dims}]) -> {rt}[{dims}] = {fn}(x, axis={axis});\n"
    return GPUArray._wrap(_module(src)(a._storage()))


def sort(a, axis=-1, kind=None):
    """A sorted copy of a along axis (cupy.sort): stable, NaN last, on the device."""
    return _sort_fn(a, "sort", axis, kind)


def argsort(a, axis=-1, kind=None):
    """The int64 positions that sort a along axis (cupy.argsort), stable."""
    return _sort_fn(a, "argsort", axis, kind)


def searchsorted(a, v, side="left"):
    """Where each value of v goes in the sorted 1-D a (cupy.searchsorted): the first
    position whose element is at least v (side="right": greater), int64."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted(): side must be 'left' or 'right', not {side!r}")
    if a.ndim != 1:
        raise ValueError(f"searchsorted(): a must be 1-D, not {a.ndim}-D")
    _no_complex("searchsorted()", a.dtype)
    t = _ty(a.dtype)
    right = "true" if side == "right" else "false"
    if np.ndim(v) == 0:
        # one value: a host scalar in, a 0-d array out (as CuPy gives)
        one = np.asarray(v.get() if isinstance(v, GPUArray) else v).astype(a.dtype)[()]
        src = f"fn k(a: {t}[n], v: {t}) -> i64 = searchsorted(a, v, right={right});\n"
        r = _module(src)(a._storage(), one)
        return _wrap_0d(r if hasattr(r, "__cuda_array_interface__") else np.asarray(r, dtype=np.int64))
    v = v if isinstance(v, GPUArray) else to_gpu(np.asarray(v, dtype=a.dtype))
    if v.dtype != a.dtype:
        v = v.astype(a.dtype)
    dims = ", ".join(f"e{k}" for k in range(v.ndim))
    src = f"fn k(a: {t}[n], v: {t}[{dims}]) -> i64[{dims}] = searchsorted(a, v, right={right});\n"
    return GPUArray._wrap(_module(src)(a._storage(), v._storage()))


def unique(a):
    """a's distinct values, sorted, 1-D (cupy.unique without its options; NaNs as one)."""
    _no_complex("unique()", a.dtype)
    t = _ty(a.dtype)
    dims = ", ".join(f"d{k}" for k in range(a.ndim))
    src = f"fn k(x: {t}[{dims}]) -> {t}[?] = unique(x);\n"
    return GPUArray._wrap(_module(src)(a._storage()))


def is_lazy(a):
    """True if a is an unevaluated expression (for tests and the curious)."""
    return a._expr is not None


def _unary_public(op, x, float_only=True):
    return _unary(op, x, float_only)

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
import builtins
import numbers
import os

import numpy as np

from . import _cuk
from ._layout import _reshape_strides as _layout_reshape_strides
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


def _is_struct(dtype):
    return dtype.fields is not None


def _canon_storage(dtype):
    """_canon, also letting through NumPy struct dtypes (vec.float3, register_dtype's):
    arrays of them are stored, copied, filled and read back, but have no arithmetic."""
    dtype = _np_dtype(dtype)
    return dtype if _is_struct(dtype) else _canon(dtype)


def _no_struct(what, dtype):
    if _is_struct(dtype):
        raise TypeError(f"{what} is not defined for arrays of the struct dtype {dtype}: cuk stores, copies, fills and "
                        "reads them back only; compute on the fields with a SourceModule kernel")


def _shape_of(shape, what="shape"):
    """A shape as a tuple of ints: an int, a sequence of ints, or a NumPy integer array
    (0-d: one dimension), as PyCUDA takes."""
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    try:
        a = np.asarray(shape)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "iu" and not (a.size == 0 and a.ndim == 1):
        raise TypeError(f"{what} must be an integer or a sequence of integers, not {shape!r}")
    return (int(a),) if a.ndim == 0 else tuple(int(s) for s in a.ravel())


def _order_of(order, what):
    o = str(order).upper()
    if o not in ("C", "F", "A", "K"):
        raise ValueError(f"{what}: order must be 'C', 'F', 'A' or 'K', not {order!r}")
    return o


# ---- expressions -----------------------------------------------------------------------

# An expression deeper than this (or with more nodes) is evaluated when it is built: a
# loop of `a = a + 1` would otherwise grow one expression, and the recursion writing it
# out, without bound (2000 steps pass Python's recursion limit); shared subexpressions
# (`a = a * a`) would be written out once per use.
_MAX_DEPTH = 64
_MAX_SIZE = 1024


class _Leaf:
    """A materialised array (storage: DeviceArray or ndarray) or a scalar."""

    __slots__ = ("value", "shape", "dtype", "scalar")
    depth = 0
    size = 1

    def __init__(self, value, shape, dtype, scalar=False):
        self.value, self.shape, self.dtype, self.scalar = value, shape, dtype, scalar


class _Node:
    """An operation on expressions. Besides the elementwise ones: "flip" (all axes
    reversed: an F-ordered array's storage read in its logical order), "perm" (extra:
    the axes, numpy.transpose's), "reverse" (axis 0 backwards), "take" (args[0] gathered
    at the integer array args[1] along axis 0)."""

    __slots__ = ("op", "args", "shape", "dtype", "extra", "depth", "size")

    def __init__(self, op, args, shape, dtype, extra=None):
        self.op, self.args, self.shape, self.dtype, self.extra = op, args, tuple(shape), dtype, extra
        self.depth = 1 + builtins.max(a.depth for a in args)
        self.size = 1 + builtins.sum(a.size for a in args)


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
    """Writes an expression tree as one cuk function `k`.

    Every subexpression is written knowing the size names of its axes (``d0`` ... for
    the output's, ``1`` for an axis that broadcasts, ``g0`` ... for a gathered array's
    own axis 0); a leaf declares its parameter with them, so a transposed or gathered
    leaf names its sizes right."""

    def __init__(self, out_shape):
        self.params = []  # (name, text)
        self.args = []
        self.leaf_ids = {}
        self.out_shape = out_shape
        self.rank = len(out_shape)
        self.fresh = 0

    def leaf(self, lf, names):
        if lf.scalar:
            name = f"a{len(self.params)}"
            self.params.append((name, _ty(lf.dtype)))
            self.args.append(lf.value)
            return name
        key = (id(lf.value), tuple(names))
        if key in self.leaf_ids:
            return self.leaf_ids[key]
        name = f"a{len(self.params)}"
        self.params.append((name, f"{_ty(lf.dtype)}[{', '.join(names)}]" if names else _ty(lf.dtype)))
        self.args.append(lf.value)
        self.leaf_ids[key] = name
        return name

    def expr(self, e, names=None):
        if names is None:
            names = [f"d{k}" for k in range(self.rank)]
        if isinstance(e, _Leaf):
            return self.leaf(e, names)
        t = _ty(e.dtype)
        if t in ("f16", "bf16") and e.op != "cast":
            # PyCUDA rounds each operation's result to the array's type; the language
            # rounds a 16-bit float expression once, at its end, unless a cast says so
            return f"{t}({self._expr(e, names)})"
        return self._expr(e, names)

    def sub(self, e, c, names):
        """c, an operand of e (broadcast to e's shape), written."""
        off = len(e.shape) - len(c.shape)
        return self.expr(c, ["1" if (s == 1 and e.shape[off + i] != 1) else names[off + i]
                             for i, s in enumerate(c.shape)])

    def _expr(self, e, names):
        t = _ty(e.dtype)
        a = e.args
        if e.op == "flip":
            return f"transpose({self.expr(a[0], names[::-1])})"
        if e.op == "perm":
            inner = [None] * len(names)
            for i, p in enumerate(e.extra):
                inner[p] = names[i]
            return f"transpose({self.expr(a[0], inner)}, {', '.join(str(p) for p in e.extra)})"
        if e.op == "reverse":
            return f"reverse({self.expr(a[0], names)})"
        if e.op == "take":
            k = len(a[1].shape)
            g = f"g{self.fresh}"
            self.fresh += 1
            return f"{self.expr(a[0], [g] + names[k:])}[{self.expr(a[1], names[:k])}]"
        if e.op == "cast":
            return f"{t}({self.sub(e, a[0], names)})"
        if e.op == "neg":  # NumPy's -x of unsigned x wraps; the language spells that 0 - x
            x = self.sub(e, a[0], names)
            return f"(0 - {x})" if e.dtype.kind == "u" else f"(-{x})"
        if e.op == "not":
            return f"(!{self.sub(e, a[0], names)})"
        if e.op in _BINOPS:
            return f"({self.sub(e, a[0], names)} {_BINOPS[e.op]} {self.sub(e, a[1], names)})"
        if e.op in _FUNCS1 or e.op in _FUNCS2 or e.op in _PARTS or e.op in ("where", "isnan", "isinf", "clamp"):
            return f"{e.op}({', '.join(self.sub(e, x, names) for x in a)})"
        raise AssertionError(e.op)


def _run(expr, reduce=None, out=None):
    """Evaluates an expression (optionally reduced: 'sum', 'max', 'min', 'any', 'all')
    to storage (written into out when given)."""
    src, args, shape = _source(expr, reduce)
    if out is not None:
        _module(src)(*args, out=out)
        return out, shape
    out = _module(src)(*args)
    if isinstance(out, np.generic):
        out = np.asarray(out)
    return out, shape


def _source(expr, reduce=None):
    """The cuk function `k` that computes an expression (reduced as _run says), its
    arguments and the result's shape."""
    shape = () if reduce else expr.shape
    g = _Gen(expr.shape)
    body = g.expr(expr)
    if reduce:
        # keepdims: a result of one element stays in device memory (a scalar result
        # would come to the host, and back for the 0-d GPUArray: a synchronisation)
        rt = "bool" if reduce in ("any", "all") else _ty(expr.dtype)
        if reduce in ("any", "all") and expr.dtype != np.bool_:
            body = f"({body} != {_ty(expr.dtype)}(0))"  # numpy.any: nonzero is true
        body = f"{reduce}({body}, keepdims=true)"
        ret = f"{rt}[{', '.join('1' for _ in expr.shape)}]"
    else:
        dims = [("1" if s == 1 and not _bound(g, k) else f"d{k}") for k, s in enumerate(expr.shape)]
        ret = f"{_ty(expr.dtype)}[{', '.join(dims)}]" if dims else _ty(expr.dtype)
    params = ", ".join(f"{n}: {t}" for n, t in g.params)
    return f"fn k({params}) -> {ret} = {body};\n", g.args, shape


def _bound(g, k):
    """Is output axis k's size variable bound by some parameter?"""
    return any(f"d{k}" in t.replace("[", ",").replace("]", ",").replace(" ", "").split(",") for _, t in g.params)


def _basic(idx):
    """Is idx (a tuple) NumPy basic indexing: integers, slices, np.newaxis, Ellipsis?"""
    return all(i is None or i is Ellipsis or isinstance(i, slice)
               or (isinstance(i, numbers.Integral) and not isinstance(i, (bool, np.bool_))) for i in idx)


def _leaf_of(x, f=False):
    """x's expression: a GPUArray's in its logical shape (f: in its F-ordered storage
    shape, axes reversed), a Python number a weakly typed scalar."""
    if isinstance(x, GPUArray):
        _no_struct("arithmetic", x.dtype)
        return x._in(f)
    if isinstance(x, (bool, np.bool_)):
        return _Leaf(bool(x), (), np.dtype(np.bool_), True)
    if isinstance(x, numbers.Number):
        return _Leaf(x, (), None, True)  # weakly typed: takes the array's type
    raise TypeError(f"cannot combine a GPUArray with {type(x).__name__}")


def _layout(*xs):
    """True when an elementwise result of xs keeps the F order, as NumPy's does: every
    array operand (0-d ones aside) is F-ordered, and all have one shape (a mix of
    orders, or broadcasting, gives C order)."""
    arrays = [x for x in xs if isinstance(x, GPUArray) and x.ndim > 0]
    return bool(arrays) and all(x._f for x in arrays) and len({x.shape for x in arrays}) == 1


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
    f = _layout(x, y)
    a, b = _leaf_of(x, f), _leaf_of(y, f)
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
    return GPUArray._lazy(_Node(op, [a, b], shape, out_dt), f)


def _unary(op, x, float_only=False):
    f = _layout(x)
    e = _leaf_of(x, f)
    dt = e.dtype
    if dt.kind == "c":
        if op not in _COMPLEX_OPS:
            raise TypeError(f"{op} is not defined for {dt} arrays (cuk's complex functions: abs, exp, exp2, log, "
                            "log2, log10, sqrt, sin, cos, tan, sinh, cosh, tanh); take z.real and z.imag apart")
        if op in ("abs", "real", "imag"):
            dt = _part_dtype(dt)  # |z| and the parts are real
        elif op in ("isnan", "isinf"):
            dt = np.dtype(np.bool_)
        return GPUArray._lazy(_Node(op, [e], e.shape, dt), f)
    if float_only and dt.kind != "f" and dt.name != "bfloat16":
        # NumPy's ufunc loops: bool, int8 and uint8 give float16, 16-bit integers float32,
        # the rest float64 (numpy.sqrt(numpy.int8(4)) is a float16)
        dt = np.result_type(dt, np.float16)
        e = _cast(e, dt)
    return GPUArray._lazy(_Node(op, [e], e.shape, dt), f)


# ---- storage helpers ---------------------------------------------------------------------

def _alloc(shape, dtype, zero=False, allocator=None):
    """Storage of shape and dtype. A struct dtype's array is, on the device, bytes with
    one more axis of its itemsize (DeviceArray has the language's types only)."""
    if backend() == "cpu":
        return (np.zeros if zero else np.empty)(shape, dtype)
    if _is_struct(dtype):
        shape, dtype = tuple(shape) + (dtype.itemsize,), np.dtype(np.uint8)
    if allocator is not None:
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        mem = allocator(builtins.max(nbytes, 1))
        d = _cuk.device_wrap(int(mem), shape, dtype.name, mem)
        if zero and nbytes:
            _cuk.memset_d8(d, 0, nbytes)
        return d
    return _cuk.device_empty(shape, dtype.name, zero)


def _write_through(a, write):
    """write(storage) fills a's memory: a's own storage, or, for a strided view, a new
    contiguous block that is then written through to the base (a view's _storage() is a
    copy, and what a writer put there would be lost)."""
    if a._sv is None:
        write(a._storage())
        return
    tmp = _alloc(a._shape, a._dtype)
    write(tmp)
    a._assign(GPUArray._wrap(tmp))


def _upload(ary, allocator=None):
    """Storage holding a copy of ary, in C order."""
    ary = np.asarray(ary, order="C")  # (np.ascontiguousarray would make a 0-d array 1-D)
    dt = _canon_storage(ary.dtype)
    if backend() == "cpu":
        return ary.copy()
    if _is_struct(dt):
        ary = ary.reshape(-1).view(np.uint8).reshape(ary.shape + (dt.itemsize,))
    if allocator is not None:
        d = _alloc(ary.shape, ary.dtype, allocator=allocator)
        if ary.nbytes:
            d.set(ary)
        return d
    return _cuk.to_device(ary)


class _HostMemory:
    """What ``gpudata`` is without a GPU: the host memory of an array, which
    ``GPUArray(shape, dtype, gpudata=...)`` views (as PyCUDA's views device memory)."""

    def __init__(self, ary):
        self.ary = ary

    def __int__(self):
        return self.ary.__array_interface__["data"][0]

    __index__ = __int__

    def __repr__(self):
        return f"<host memory of {self.ary.nbytes} bytes at {int(self):#x}>"


def _strides_of(shape, itemsize, f):
    st, acc = [0] * len(shape), itemsize
    for k in (range(len(shape)) if f else reversed(range(len(shape)))):
        st[k] = acc
        acc *= shape[k]
    return tuple(st)


def _contiguous(shape, strides, itemsize, f):
    """NumPy's C (f: Fortran) contiguity: sizes-1 axes' strides do not matter."""
    if 0 in shape:
        return True
    acc = itemsize
    for k in (range(len(shape)) if f else reversed(range(len(shape)))):
        if shape[k] != 1:
            if strides[k] != acc:
                return False
            acc *= shape[k]
    return True


class _Flags:
    def __init__(self, c, f):
        self.c_contiguous, self.f_contiguous, self.forc = c, f, c or f

    def __repr__(self):
        return f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}"


# ---- strided views of device memory ----------------------------------------------------------
# A basic selection of device memory that is not C-contiguous (a[:, ::2], a[:, :, 2:3, :])
# is a view: its memory's owner, the byte address of its first element and NumPy's
# strides. Reading it gathers its elements with one cuk program over the span of memory
# it touches, viewed as a flat 1-D array; writing it scatters into that span. Without a
# GPU the same code runs on host memory when _HOST_VIEWS is set (the tests' stand-in for
# device memory; host arrays otherwise keep NumPy's own views).
_HOST_VIEWS = False


def _select(shape, strides, idx):
    """NumPy's basic indexing as arithmetic: (byte offset, shape, strides) of x[idx] for x
    of shape and strides (bytes); idx a tuple of integers, slices, None and Ellipsis."""
    if builtins.sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    real = builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
    if real > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {real} were indexed")
    rest = (slice(None),) * (len(shape) - real)
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        idx = idx[:k] + rest + idx[k + 1:]
    else:
        idx = tuple(idx) + rest
    off, k, out_shape, out_st = 0, 0, [], []
    for i in idx:
        if i is None:
            out_shape.append(1)
            out_st.append(0)  # NumPy's stride of a new axis
            continue
        n, st = shape[k], strides[k]
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            m = len(range(start, stop, step))
            if m:
                off += start * st
            out_shape.append(m)
            out_st.append(st * step)
        else:
            j = int(i) + n if i < 0 else int(i)
            if not 0 <= j < n:
                raise IndexError(f"index {int(i)} is out of bounds for axis {k} with size {n}")
            off += j * st
        k += 1
    return off, tuple(out_shape), tuple(out_st)


def _reshape_strides(shape, strides, newshape, itemsize):
    """The byte strides of a reshape (C order) of an array of shape and byte strides that
    is a view without a copy, or None where NumPy would copy (the layouts' rule,
    _layout._reshape_strides, in items)."""
    if 0 in shape or 0 in newshape:
        return _strides_of(newshape, itemsize, False)
    if any(s % itemsize for s in strides):  # not a whole number of items: copy
        return None
    st = _layout_reshape_strides(tuple(shape), tuple(s // itemsize for s in strides), tuple(newshape))
    return None if st is None else tuple(s * itemsize for s in st)


def _span(shape, strides, itemsize):
    """(lo, n): the memory a non-empty strided view touches is n elements from byte lo
    (relative to its first element's address; lo <= 0 where a stride is negative)."""
    lo = builtins.sum((s - 1) * st for s, st in zip(shape, strides) if st < 0)
    hi = builtins.sum((s - 1) * st for s, st in zip(shape, strides) if st > 0)
    assert lo % itemsize == 0 and hi % itemsize == 0, (strides, itemsize)
    return lo, (hi - lo) // itemsize + 1


def _flat_index_src(rank):
    """The flat index (into the span) of each element of a rank-`rank` strided view: o is
    its first element's, s0... its sizes, t0... its strides in elements."""
    terms = ["o"]
    for k in range(rank):
        dims = ", ".join(f"s{k}" if j == k else "1" for j in range(rank))
        terms.append(f"reshape(iota(s{k}), {dims}) * t{k}")
    return " + ".join(terms)


def _gather_src(dtype, rank):
    """k(span, o, s0, t0, s1, t1, ...): the view's elements, a C-ordered array."""
    t = _ty(dtype)
    params = ", ".join([f"a: {t}[n]", "o: i64"] + [f"s{k}: i64, t{k}: i64" for k in range(rank)])
    sizes = ", ".join(f"s{k}" for k in range(rank))
    return f"fn k({params}) -> {t}[{sizes}] = a[{_flat_index_src(rank)}];\n"


def _scatter_src(dtype, rank):
    """k(span, v, o, t0, t1, ...): the span with the view's elements replaced by v's (a
    new array: a function never writes its arguments)."""
    t = _ty(dtype)
    sizes = ", ".join(f"s{k}" for k in range(rank))
    params = ", ".join([f"a: {t}[n]", f"v: {t}[{sizes}]", "o: i64"] + [f"t{k}: i64" for k in range(rank)])
    return (f"fn k({params}) -> {t}[n] {{\n    var b = a;\n"
            f"    b[reshape({_flat_index_src(rank)}, -1)] = reshape(v, -1);\n    return b;\n}}\n")


def _addr(d):
    return d.__array_interface__["data"][0] if isinstance(d, np.ndarray) else int(d)


def _wrap_at(owner, addr, shape, dtype):
    """Storage of shape and dtype at byte address addr of owner's memory (kept alive): a
    DeviceArray, or a host ndarray where owner is one (a C-contiguous one; _HOST_VIEWS)."""
    if isinstance(owner, np.ndarray):
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        start = addr - _addr(owner)
        return owner.reshape(-1).view(np.uint8)[start:start + n].view(dtype).reshape(shape)
    return _cuk.device_wrap(addr, tuple(shape), dtype.name, owner)


def _view_at(owner, addr, shape, strides, dtype, base):
    """The GPUArray of shape and strides (bytes) whose first element is at addr in owner's
    memory: plain storage where that is C-contiguous, else a strided view."""
    shape, strides = tuple(shape), tuple(strides)
    if _contiguous(shape, strides, dtype.itemsize, False):
        out = GPUArray._wrap(_wrap_at(owner, addr, shape, dtype), base=base, dtype=dtype)
        out._st = strides
        return out
    a = GPUArray.__new__(GPUArray)
    a._data = a._expr = None
    a._sv = (owner, addr)
    a._st = strides
    a._shape = shape
    a._dtype = dtype
    a._f = False
    a.allocator = None
    a.base = base
    return a


# ---- GPUArray ------------------------------------------------------------------------------

class GPUArray:
    """A dense array on the device (or, without a GPU, on the host; see the module doc).

    Its storage holds the elements in C order, of shape ``shape``; an F-ordered array
    (``order="F"``, ``flags.f_contiguous``) keeps them in Fortran order: its storage is
    the C-ordered array of the reversed shape, and its expression reads that storage
    transposed ("flip"). Elementwise operations on F-ordered arrays of one shape stay F
    ordered without a transpose, as NumPy's do."""

    __array_priority__ = 100  # numpy scalars defer to our operators
    _sv = None  # a strided view's (owner, address of its first element); see _view_at

    def __init__(self, shape, dtype=np.float64, allocator=None, base=None, gpudata=None, strides=None, order="C"):
        shape = _shape_of(shape)
        order = _order_of(order, "GPUArray()")
        self._dtype = _canon_storage(dtype)
        self._shape = shape
        self._f = order == "F" and len(shape) > 1
        if strides is not None and tuple(strides) != _strides_of(shape, self._dtype.itemsize, self._f):
            if tuple(strides) == _strides_of(shape, self._dtype.itemsize, True) and len(shape) > 1:
                self._f = True
            else:
                raise ValueError(f"GPUArray(): strides {tuple(strides)} are neither C nor Fortran order for shape "
                                 f"{shape}; cuk arrays are dense: pass strides=None and order='C' or 'F'")
        self._expr = None
        self.allocator = allocator
        sshape = self._sshape
        if gpudata is not None:
            if isinstance(gpudata, _HostMemory):
                n = int(np.prod(sshape, dtype=np.int64))
                flat = gpudata.ary.reshape(-1).view(np.uint8)
                if flat.base is None or n * self._dtype.itemsize > flat.size:
                    raise ValueError(f"GPUArray(gpudata=...): the memory holds {flat.size} bytes, "
                                     f"{n * self._dtype.itemsize} are needed for shape {shape}")
                self._data = flat[:n * self._dtype.itemsize].view(self._dtype).reshape(sshape)
                base = gpudata if base is None else base
            elif backend() == "cpu":
                raise Error("GPUArray(gpudata=...) without a GPU takes another GPUArray's .gpudata only")
            else:
                self._data = _cuk.device_wrap(int(gpudata), sshape, self._dtype.name,
                                              gpudata if base is None else base)
        else:
            self._data = _alloc(sshape, self._dtype, allocator=allocator)
        self.base = base

    @classmethod
    def _wrap(cls, data, base=None, f=False, dtype=None):
        """A GPUArray over storage data (f: data is an F-ordered array's storage, whose
        shape is the array's reversed)."""
        a = cls.__new__(cls)
        a._data = data
        a._expr = None
        a._dtype = _np_dtype(data.dtype) if dtype is None else dtype
        sshape = tuple(data.shape)
        if a._dtype != _np_dtype(data.dtype):  # a struct array's bytes on the device
            sshape = sshape[:-1]
        a._f = bool(f) and len(sshape) > 1
        a._shape = sshape[::-1] if a._f else sshape
        a.allocator = None
        a.base = base
        return a

    @classmethod
    def _lazy(cls, expr, f=False):
        """A GPUArray standing for expr (f: expr is in the F-ordered storage shape)."""
        a = cls.__new__(cls)
        a._data = None
        a._expr = expr
        a._f = bool(f) and len(expr.shape) > 1
        a._shape = tuple(expr.shape)[::-1] if a._f else tuple(expr.shape)
        a._dtype = expr.dtype
        a.allocator = None
        a.base = None
        if isinstance(expr, _Node) and (expr.depth >= _MAX_DEPTH or expr.size >= _MAX_SIZE):
            a._storage()  # see _MAX_DEPTH
        return a

    @property
    def _sshape(self):
        return self._shape[::-1] if self._f else self._shape

    # the expression of the storage (its shape is _sshape)
    def _snode(self):
        if self._expr is not None:
            return self._expr
        return _Leaf(self._storage(), self._sshape, self._dtype)

    # the expression standing for this array in order f (its shape: the storage's of
    # an array of that order); _in(False) is the array's logical value
    def _in(self, f):
        e = self._snode()
        if self._f == bool(f) or self.ndim < 2:
            return e
        return _Node("flip", [e], e.shape[::-1], self._dtype)

    def _node(self):
        return self._in(False)

    def _storage(self):
        if self._sv is not None:
            return self._gather()  # a new contiguous copy every time: the view sees later writes
        if self._data is None:
            out, _ = _run(self._expr)
            self._data = out
            self._expr = None
        return self._data

    def _flip(self):
        """The reversed-axes view (numpy's .T): the same storage, the other order."""
        if self.ndim < 2:
            return self
        if self._sv is not None:
            return _view_at(*self._sv, self._shape[::-1], self._st[::-1], self._dtype, base=self)
        return GPUArray._wrap(self._storage(), base=self, f=not self._f, dtype=self._dtype)

    def _as_order(self, f):
        """self, or a copy in order f (C: False, F: True)."""
        if self._f == bool(f) or self.ndim < 2:
            return self
        out = GPUArray._wrap(_alloc(self._shape[::-1] if f else self._shape, self._dtype), f=f, dtype=self._dtype)
        out._assign(self)
        return out

    def _span_storage(self):
        """A strided view's span of memory (see _span), flat, and its first element's index."""
        owner, addr = self._sv
        isz = self._dtype.itemsize
        lo, n = _span(self._shape, self._st, isz)
        return _wrap_at(owner, addr + lo, (n,), self._dtype), -lo // isz, n

    def _gather(self):
        """A strided view's elements: new C-ordered storage (one cuk program)."""
        flat, o, _ = self._span_storage()
        isz = self._dtype.itemsize
        args = [a for s, st in zip(self._shape, self._st) for a in (s, st // isz)]
        return _module(_gather_src(self._dtype, self.ndim))(flat, o, *args)

    def _scatter(self, src):
        """Writes src (C-ordered storage of this strided view's shape and dtype) into the
        view's memory: one cuk program gives the span with them in, copied back over it."""
        flat, o, n = self._span_storage()
        isz = self._dtype.itemsize
        res = _module(_scatter_src(self._dtype, self.ndim))(flat, src, o, *[st // isz for st in self._st])
        if isinstance(flat, np.ndarray):
            flat[...] = res
        else:
            _cuk.memcpy_dtod(flat, res, n * isz)

    def _strided(self, idx):
        """self[idx] (basic idx) as a view of its memory, strided where it must be."""
        if self._sv is not None:
            owner, addr = self._sv
        else:
            owner = self._storage()
            addr = _addr(owner)
        off, shape, st = _select(self._shape, self.strides, idx)
        return _view_at(owner, addr + off, shape, st, self._dtype, base=self)

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
        """NumPy's strides: C or Fortran order's, or, without a GPU, those of the host
        view a selection gave."""
        st = getattr(self, "_st", None)  # a device view's own (np.newaxis: 0; a strided view's)
        if st is not None:
            return st
        if isinstance(self._data, np.ndarray):
            return (self._data.T if self._f else self._data).strides
        return _strides_of(self._shape, self._dtype.itemsize, self._f)

    @property
    def flags(self):
        st = self.strides
        return _Flags(_contiguous(self._shape, st, self.itemsize, False),
                      _contiguous(self._shape, st, self.itemsize, True))

    @property
    def gpudata(self):
        """The device memory (a DeviceArray, int() its address); without a GPU the host
        memory, which GPUArray(..., gpudata=) takes to view it."""
        d = self._storage()
        if isinstance(d, np.ndarray):
            if not (d.flags.c_contiguous or d.size == 0):
                raise Error("gpudata: this GPUArray is a strided view of host memory (no GPU is usable); take "
                            ".copy() first")
            return _HostMemory(d)
        return d

    @property
    def ptr(self):
        if self._sv is not None:
            # gpudata is a copy, freed once ptr returns: its address would dangle
            raise Error("ptr: this GPUArray is a non-contiguous view of device memory; take .copy() first (or "
                        "pass the array itself, or its gpudata, which is a contiguous copy)")
        d = self.gpudata
        if isinstance(d, _HostMemory):
            raise Error("ptr: this GPUArray lives on the host (no GPU is usable): there is no device address")
        return int(d)

    @property
    def __cuda_array_interface__(self):
        if self._sv is not None:  # the view itself, with its strides (no copy)
            cai = dict(self._span_storage()[0].__cuda_array_interface__)
            cai.update(shape=self._shape, strides=self._st, data=(self._sv[1], False))
            return cai
        d = self.gpudata
        if isinstance(d, _HostMemory):
            raise AttributeError("__cuda_array_interface__: this GPUArray lives on the host (no GPU is usable)")
        cai = dict(d.__cuda_array_interface__)
        if not _is_struct(self._dtype):  # (a struct array's storage is bytes: described as such)
            # explicit strides, C order's too, as PyCUDA gives them
            cai["shape"] = self._shape
            cai["strides"] = self.strides
        if cai.get("stream") == 1:
            # as PyCUDA's GPUArray: work on the legacy default stream names no stream (every
            # blocking stream is ordered after it)
            cai["stream"] = None
        return cai

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d GPUArray")
        return self._shape[0]

    # -- host transfers
    def _host(self):
        """A host ndarray of the storage (a copy from the device; on the CPU backend the
        storage itself)."""
        d = self._storage()
        if isinstance(d, np.ndarray):
            return d
        h = d.get()
        if _is_struct(self._dtype):
            h = np.ascontiguousarray(h).view(self._dtype).reshape(self._sshape)
        return h

    def explain(self, what="ir"):
        """The cuk function this lazy expression runs as, and what the compiler makes of
        it (:func:`cuk.explain`: ``"ir"``, the kernels and what fused into each, by
        default; ``"cuda"``, their CUDA C; ``"dot"``), as a str. An array already in
        memory has no kernel to show: ValueError."""
        if self._expr is None or self._data is not None:
            raise ValueError("explain(): this GPUArray is in memory, not a lazy expression: explain the "
                             "expression before anything reads its values")
        import cuk
        src = _source(self._expr)[0]
        return src + cuk.explain(src, what, name="<gpuarray>")

    def get(self, ary=None, pagelocked=False, async_=False, stream=None):
        """The array on the host: an F-ordered ndarray for an F-ordered GPUArray."""
        if ary is not None and not self._f and not _is_struct(self._dtype) and isinstance(ary, np.ndarray) \
                and ary.shape == self._shape and ary.dtype == self._dtype and ary.flags.c_contiguous \
                and ary.flags.writeable:
            d = self._storage()
            if not isinstance(d, np.ndarray):  # straight into ary: one copy, not two
                d.get(out=ary)
                return ary
        h = self._host()
        if isinstance(self._data, np.ndarray):
            h = np.array(h, copy=True, order="K")
        if self._f:
            h = h.T
        if ary is None:
            return h
        if ary.shape != self._shape:
            raise ValueError(f"get(ary=): ary has shape {ary.shape}, the GPUArray {self._shape}; pass an array of "
                             "that shape")
        ary[...] = h
        return ary

    def get_async(self, stream=None, ary=None):
        return self.get(ary=ary)

    def set(self, ary, async_=False, stream=None):
        """Copies the host array ary in: of the GPUArray's shape (or, flat, of its size:
        then read in C order)."""
        ary = np.asarray(ary)
        if ary.size != self.size:
            raise ValueError(f"set(): the array has {self.size} elements, the source {ary.size}")
        ary = np.asarray(ary, dtype=self._dtype)
        if ary.shape != self._shape:
            ary = np.ascontiguousarray(ary).reshape(self._shape)
        src = ary.T if self._f else ary  # the storage's order
        if self._sv is not None:
            if ary.size:
                self._scatter(_upload(src))
            return
        d = self._storage()
        if isinstance(d, np.ndarray):
            d[...] = src
        elif ary.nbytes:
            src = np.ascontiguousarray(src)
            if _is_struct(self._dtype):
                src = src.reshape(-1).view(np.uint8).reshape(tuple(d.shape))
            d.set(src)

    def set_async(self, ary, stream=None):
        self.set(ary)

    def __array__(self, dtype=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    def __str__(self):
        return str(self.get())

    def __repr__(self):
        from . import _named_repr

        return _named_repr(self.get(), "GPUArray")

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
        if _is_struct(self._dtype):
            # no arithmetic on struct types: the value comes from the host
            v = value.get() if isinstance(value, GPUArray) else value
            self.set(np.broadcast_to(np.asarray(v, dtype=self._dtype), self._shape))
            return
        if isinstance(value, np.ndarray) and value.ndim:  # a host array (a[...] = ndarray): uploaded
            value = to_gpu(np.ascontiguousarray(value, dtype=self._dtype))
        if not isinstance(value, GPUArray):
            src = full(self._sshape, value, self._dtype)._storage()
        else:
            if value.shape != self._shape:
                # broadcast against zeros of the target shape (a leaf that binds every axis)
                value = value + zeros(self._shape, value.dtype, order="F" if self._f else "C")
                if value.shape != self._shape:
                    raise ValueError(f"could not broadcast {value.shape} into {self._shape}")
            if value.dtype != self._dtype:
                value = value.astype(self._dtype)
            e = value._in(self._f)
            src = e.value if isinstance(e, _Leaf) else _run(e)[0]
        if self._sv is not None:
            self._scatter(src)
            return
        dst = self._storage()
        if isinstance(dst, np.ndarray):
            dst[...] = src
        elif self.nbytes and int(dst) != int(src):
            _cuk.memcpy_dtod(dst, src, self.nbytes)

    # -- methods
    def astype(self, dtype, stream=None):
        dtype = _canon(dtype)
        _no_struct("astype()", self._dtype)
        if dtype == self._dtype:
            return self.copy()
        return GPUArray._lazy(_cast(self._snode(), dtype), self._f)

    def copy(self, order="K"):
        """A copy: of the same order (order="K" or "A"), or C or F order."""
        o = _order_of(order, "copy()")
        f = self._f if o in ("K", "A") else o == "F"
        out = GPUArray._wrap(_alloc(self._shape[::-1] if f and self.ndim > 1 else self._shape, self._dtype),
                             f=f, dtype=self._dtype)
        out._assign(self)
        return out

    def fill(self, value, stream=None):
        self._assign(value)
        return self

    def _restore(self, data, sshape, f):
        """A view of storage data with the storage shape sshape, of order f."""
        if isinstance(data, np.ndarray):
            return GPUArray._wrap(data.reshape(sshape), base=self, f=f, dtype=self._dtype)
        if _is_struct(self._dtype):
            sshape = tuple(sshape) + (self._dtype.itemsize,)
        return GPUArray._wrap(_cuk.device_wrap(int(data), tuple(sshape), _np_dtype(data.dtype).name, data),
                              base=self, f=f, dtype=self._dtype)

    def reshape(self, *shape, order="C"):
        """numpy.reshape: the elements read in C order (order="F": in Fortran order,
        giving an F-ordered array; "A": the array's own order). A view where the order
        read is the storage's, else a copy."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        shape = list(_shape_of(shape))
        o = _order_of(order, "reshape()")
        if o == "K":
            raise ValueError("reshape(): order='K' is not allowed (as in NumPy); use 'C', 'F' or 'A'")
        f = self._f if o == "A" else o == "F"
        if shape.count(-1) > 1:
            raise ValueError(f"reshape(): can only specify one unknown dimension (-1), got shape {tuple(shape)}")
        if -1 in shape:
            i = shape.index(-1)
            rest = int(np.prod([s for j, s in enumerate(shape) if j != i], dtype=np.int64))
            if rest == 0 or self.size % rest:
                raise ValueError(f"cannot reshape array of size {self.size} into shape {tuple(shape)}")
            shape[i] = self.size // rest
        shape = tuple(shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
        if self._sv is not None:
            # NumPy's view where the elements read in that order have strides (an F-order
            # read is a C-order read of the axes reversed), else a C- or F-ordered copy
            if o == "A" and self.flags.f_contiguous:
                o = "F"  # NumPy's "A": Fortran order for a Fortran-contiguous array
            if o == "F":
                st = _reshape_strides(self._shape[::-1], self._st[::-1], shape[::-1], self.itemsize)
                st = st[::-1] if st is not None else None
            else:
                st = _reshape_strides(self._shape, self._st, shape, self.itemsize)
            if st is not None:
                return _view_at(*self._sv, shape, st, self._dtype, base=self)
            return self.copy(order="F" if o == "F" else "C").reshape(shape, order=order)
        src = self._as_order(f)
        f = f and len(shape) > 1
        return src._restore(src._storage(), shape[::-1] if f else shape, f)

    def ravel(self, order="C"):
        return self.reshape(self.size, order=order)

    def squeeze(self, axis=None):
        """The array without its size-1 axes (or those in axis): a view."""
        if axis is None:
            axes = [k for k, s in enumerate(self._shape) if s == 1]
        else:
            axes = [int(a) for a in ((axis,) if isinstance(axis, numbers.Integral) else axis)]
            for a in axes:
                if not -self.ndim <= a < self.ndim:
                    raise _AxisError(f"squeeze(): axis {a} is out of bounds for an array of {self.ndim} dimensions")
                if self._shape[a] != 1:
                    raise ValueError(f"squeeze(): cannot select an axis to squeeze out which has size not equal to "
                                     f"one (axis {a} has size {self._shape[a]})")
            axes = [a % self.ndim for a in axes]
        if self._sv is not None:
            keep = [k for k in range(self.ndim) if k not in axes]
            return _view_at(*self._sv, [self._shape[k] for k in keep], [self._st[k] for k in keep], self._dtype,
                            base=self)
        d = self._storage()
        n = self.ndim
        saxes = tuple(n - 1 - a for a in axes) if self._f else tuple(axes)
        if isinstance(d, np.ndarray):
            return GPUArray._wrap(d.squeeze(saxes), base=self, f=self._f, dtype=self._dtype)
        shape = tuple(s for k, s in enumerate(self._sshape) if k not in saxes)
        return self._restore(d, shape, self._f)

    def view(self, dtype=None):
        if dtype is None or _np_dtype(dtype) == self._dtype:
            return self.reshape(self._shape, order="A")
        dtype = _canon(dtype)
        if self._sv is not None:
            raise ValueError(f"view(): this GPUArray is a non-contiguous view of device memory, which cannot be "
                             f"viewed as {dtype}; take .copy() first")
        if self._sshape and self._sshape[-1] * self._dtype.itemsize % dtype.itemsize:
            raise ValueError(f"view(): the last axis of {self._sshape[-1]} {self._dtype} elements does not divide "
                             f"into {dtype} elements")
        if not self._sshape and self._dtype.itemsize != dtype.itemsize:
            raise ValueError(f"view(): a 0-d {self._dtype} array cannot be viewed as {dtype}")
        d = self._storage()
        # NumPy changes the last axis of a C-ordered array, the first of an F-ordered one:
        # both are the storage's last
        sshape = self._sshape[:-1] + (self._sshape[-1] * self._dtype.itemsize // dtype.itemsize,) \
            if self._sshape else ()
        if isinstance(d, np.ndarray):
            return GPUArray._wrap(d.view(dtype), base=self, f=self._f)
        return GPUArray._wrap(_cuk.device_wrap(int(d), sshape, dtype.name, d), base=self, f=self._f)

    @property
    def T(self):
        return self.transpose()

    def transpose(self, axes=None):
        """numpy.transpose: with no axes the reversed-axes view (an F-ordered array of a
        C-ordered one, as NumPy's .T); other permutations are written by a cuk program,
        a C-ordered copy."""
        n = self.ndim
        if axes is None or tuple(axes) == tuple(reversed(range(n))):
            return self._flip()
        axes = tuple(int(a) for a in axes)
        if sorted(a % n if -n <= a < n else a for a in axes) != list(range(n)):
            raise ValueError(f"transpose(): axes {axes} are not a permutation of the {n} axes 0..{n - 1}")
        axes = tuple(a % n for a in axes)
        if axes == tuple(range(n)):
            return self.reshape(self._shape, order="A")
        if self._sv is not None:  # a strided view's axes permuted: a view too
            return _view_at(*self._sv, [self._shape[a] for a in axes], [self._st[a] for a in axes], self._dtype,
                            base=self)
        _no_struct("transpose(axes)", self._dtype)
        shape = tuple(self._shape[a] for a in axes)
        return GPUArray._lazy(_Node("perm", [self._node()], shape, self._dtype, axes))

    def reverse(self, stream=None):
        """The array with axis 0 backwards (PyCUDA's reverse of a 1-D array)."""
        if self.ndim == 0:
            raise ValueError("reverse(): a 0-d array has no axis to reverse")
        _no_struct("reverse()", self._dtype)
        return GPUArray._lazy(_Node("reverse", [self._node()], self._shape, self._dtype))

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        if self._f and _basic(idx):
            # the transposed (C-ordered) view, indexed with the indices reversed
            if not any(i is Ellipsis for i in idx):
                idx = idx + (Ellipsis,)  # so that the reversed indices start at the last axis
            inner = self._flip()[tuple(reversed(idx))]
            out = inner._flip()
            if inner.base is None:  # a copy, not a view
                out.base = None
            elif out._sv is None and getattr(inner, "_st", None) is not None:
                out._st = inner._st[::-1]  # NumPy's strides (size-1 and new axes' too)
            return out
        if len(idx) == 1 and isinstance(idx[0], GPUArray) and idx[0].dtype.kind in "iu" and self.ndim > 0:
            return take(self, idx[0], axis=0)
        if self._sv is not None and _basic(idx):
            return self._strided(idx)
        d = self._storage()
        # device memory, or host memory standing for it (_HOST_VIEWS)
        dev = not isinstance(d, np.ndarray) or (_HOST_VIEWS and d.flags.c_contiguous)
        if isinstance(d, np.ndarray) and not dev and (not self._f or _basic(idx)):
            v = d[idx]
            if not isinstance(v, np.ndarray):  # an element: a 0-d view of it instead
                v = d[idx + (Ellipsis,)]
            return GPUArray._wrap(v, base=self, dtype=self._dtype)
        if dev and self._sv is None and not self._f and not _is_struct(self._dtype):
            v = self._device_view(d, idx)
            if v is not None:
                return v
            if _basic(idx):
                return self._strided(idx)  # PyCUDA's strided view
        # Fancy selections (and struct arrays' strided ones): a copy.
        return to_gpu(np.ascontiguousarray(self.get()[idx]))

    def _device_view(self, d, idx):
        """A view of device memory for what stays contiguous: leading integer indices,
        then one step-1 range, then whole axes (np.newaxis anywhere); None for other
        selections."""
        if any(i is Ellipsis for i in idx):
            k = idx.index(Ellipsis)
            fill = self.ndim - builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
            idx = idx[:k] + (slice(None),) * builtins.max(fill, 0) + idx[k + 1:]
        real = [i for i in idx if i is not None]
        if len(real) > self.ndim:
            raise IndexError(f"too many indices for array: array is {self.ndim}-dimensional, but {len(real)} were "
                             "indexed")
        idx = tuple(idx) + (slice(None),) * (self.ndim - len(real))
        strides = self.strides
        off, k, sliced, shape, st = 0, 0, False, [], []
        for i in idx:
            if i is None:
                shape.append(1)
                st.append(0)  # NumPy's stride of a new axis
                continue
            n = self._shape[k]
            if isinstance(i, numbers.Integral) and not isinstance(i, bool):
                if sliced:
                    return None
                j = int(i) + n if i < 0 else int(i)
                if not 0 <= j < n:
                    raise IndexError(f"index {int(i)} is out of bounds for axis {k} with size {n}")
                off += j * strides[k]
            elif isinstance(i, slice):
                start, stop, step = i.indices(n)
                m = len(range(start, stop, step))
                if (start, m) != (0, n) or (step != 1 and m > 1):
                    if sliced or (step != 1 and m > 1):
                        return None
                    off += start * strides[k] if m else 0
                sliced = True
                shape.append(m)
                st.append(strides[k] * step)
            else:
                return None
            k += 1
        out = GPUArray._wrap(_wrap_at(d, _addr(d) + off, tuple(shape), self._dtype), base=self)
        out._st = tuple(st)
        return out

    def __setitem__(self, idx, value):
        view = self[idx]
        if view.base is None:
            raise ValueError("assignment needs a basic selection (integers, slices, np.newaxis, Ellipsis), "
                             "which is a view; a fancy one is a copy")
        view._assign(value)

    # -- reductions and friends
    def sum(self, dtype=None, stream=None, allocator=None):
        return sum(self, dtype, allocator=allocator)

    def max(self, stream=None):
        return max(self)

    def min(self, stream=None):
        return min(self)

    def any(self, stream=None, allocator=None):
        """Whether some element is nonzero, as a 0-d bool GPUArray (numpy.any)."""
        return _reduce("any", self, allocator=allocator)

    def all(self, stream=None, allocator=None):
        """Whether every element is nonzero, as a 0-d bool GPUArray (numpy.all)."""
        return _reduce("all", self, allocator=allocator)

    def mul_add(self, selffac, other, otherfac, add_timer=None, stream=None, out=None):
        """selffac * self + otherfac * other (PyCUDA's; out=: written there), one fused
        kernel."""
        return _out(self * selffac + other * otherfac, out)

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
    """A GPUArray copy of a NumPy array; a Fortran-ordered array stays F ordered (its
    strides and flags.f_contiguous are NumPy's)."""
    ary = np.asarray(ary)
    if ary.ndim > 1 and ary.flags.f_contiguous and not ary.flags.c_contiguous:
        return GPUArray._wrap(_upload(ary.T, allocator), f=True, dtype=_canon_storage(ary.dtype))
    return GPUArray._wrap(_upload(ary, allocator), dtype=_canon_storage(ary.dtype))


def to_gpu_async(ary, allocator=None, stream=None):
    return to_gpu(ary, allocator)


def empty(shape, dtype=np.float64, allocator=None, order="C"):
    """An uninitialised array (float64 unless dtype says, as PyCUDA's)."""
    return GPUArray(shape, dtype, allocator, order=order)


def zeros(shape, dtype=np.float64, allocator=None, order="C"):
    """An array of zeros (float64 unless dtype says, as PyCUDA's)."""
    shape = _shape_of(shape)
    f = _order_of(order, "zeros()") == "F" and len(shape) > 1
    dtype = _canon_storage(dtype)
    return GPUArray._wrap(_alloc(shape[::-1] if f else shape, dtype, zero=True, allocator=allocator), f=f,
                          dtype=dtype)


def full(shape, fill_value, dtype=None, allocator=None, order="C"):
    shape = _shape_of(shape)
    f = _order_of(order, "full()") == "F" and len(shape) > 1
    if f:
        shape = shape[::-1]  # the storage's
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
    return GPUArray._wrap(out, f=f)


def ones(shape, dtype=np.float64, allocator=None, order="C"):
    """An array of ones (float64 unless dtype says, as PyCUDA's)."""
    return full(shape, 1, dtype, allocator, order)


def _like_order(other, order):
    """The order of an array like other: order "A" and "K" keep other's (PyCUDA keeps it
    for "K" only when other is contiguous; cuk arrays always are)."""
    o = _order_of(order, "*_like()")
    if o in ("A", "K"):
        return "F" if getattr(other, "_f", False) or (isinstance(other, np.ndarray) and other.ndim > 1
                                                          and other.flags.f_contiguous
                                                          and not other.flags.c_contiguous) else "C"
    return o


def empty_like(other, dtype=None, order="K"):
    return empty(other.shape, dtype or other.dtype, order=_like_order(other, order))


def zeros_like(other, dtype=None, order="K"):
    return zeros(other.shape, dtype or other.dtype, order=_like_order(other, order))


def ones_like(other, dtype=None, order="K"):
    return ones(other.shape, dtype or other.dtype, order=_like_order(other, order))


def arange(*args, dtype=None, allocator=None, **kwargs):
    """numpy.arange on the device: start + i * delta, delta taken as NumPy takes it (the
    second value minus the first, both in dtype), written by one cuk program."""
    names = ("start", "stop", "step")
    if len(args) > 3:
        raise TypeError(f"arange() takes at most 3 positional arguments (start, stop, step), {len(args)} given")
    given = dict(zip(names if len(args) > 1 else ("stop",), args))
    for k in list(kwargs):
        if k not in names or k in given:
            raise TypeError(f"arange() got an unexpected or repeated argument {k!r}")
        given[k] = kwargs.pop(k)
    if "stop" not in given:
        raise TypeError("arange() needs stop: arange(stop), arange(start, stop) or arange(start, stop, step)")
    start, stop, step = given.get("start", 0), given["stop"], given.get("step", 1)
    if any(isinstance(v, complex) for v in (start, stop, step)):
        raise TypeError("arange(): complex start, stop or step is not supported; build the parts with real arange")
    if step == 0:
        raise ValueError("arange(): step must not be zero")
    dtype = _canon(dtype if dtype is not None else np.result_type(start, stop, step))
    if dtype == np.bool_:
        raise TypeError("arange() of bool: NumPy has no arange for bool; use arange(...).astype(bool)")
    n = int(builtins.max(0, np.ceil((stop - start) / step)))
    t = _ty(dtype)
    first = dtype.type(start)
    delta = (np.asarray(first + dtype.type(step) if n > 1 else step).astype(dtype) - first).item() \
        if dtype.kind == "f" else dtype.type(step).item()
    out = _alloc((n,), dtype, allocator=allocator)
    if n:
        src = f"fn k(n: i64, s: {t}, d: {t}) -> {t}[n] = s + {t}(iota(n)) * d;\n"
        _module(src)(n, first.item(), delta, out=out)
    return GPUArray._wrap(out)


def _reduce(kind, a, dtype=None, allocator=None):
    """sum, max, min, any or all of a (its expression fused in) as a 0-d GPUArray; the
    result's memory from allocator when given."""
    if not isinstance(a, GPUArray):
        a = to_gpu(np.asarray(a))
    _no_struct(f"{kind}()", a.dtype)
    if not a.shape:  # a 0-d array: reduced as one element
        a = a.reshape(1)
    e = a._snode()  # the storage's order: a reduction of all elements does not mind it
    dt = a.dtype
    if kind == "sum":
        dt = np.dtype(dtype) if dtype is not None else np.sum(np.zeros(0, a.dtype)).dtype
        dt = _canon(dt)
        if a.dtype.kind == "c" and dt.kind != "c":
            raise TypeError(f"sum() of a {a.dtype} array into {dt}: NumPy's same_kind casting does not make complex "
                            "numbers real; sum z.real or abs(z)")
        e = _cast(e, dt)
    elif kind in ("any", "all"):
        dt = np.dtype(np.bool_)
    else:
        _no_complex(f"{kind}()", a.dtype)
        if a.size == 0:
            raise ValueError(f"{kind}() of an empty array: it has no identity; check a.size first")
    out = _alloc((1,) * a.ndim, dt, allocator=allocator) if allocator is not None else None
    out, _ = _run(e, kind, out)
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


def sum(a, dtype=None, stream=None, allocator=None):  # noqa: A001
    """The sum as a 0-d GPUArray (``.get()`` reads it), fused with a's expression."""
    return _reduce("sum", a, dtype, allocator)


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


def _out(r, out):
    """r, or r written into the GPUArray out (PyCUDA's out=)."""
    if out is None:
        return r
    out._assign(r)
    return out


def _gpu(x, what):
    if isinstance(x, GPUArray):
        return x
    if isinstance(x, (np.ndarray, list, tuple)):
        return to_gpu(np.asarray(x))
    raise TypeError(f"{what} takes GPUArrays (or NumPy arrays), not {type(x).__name__}")


def take(a, indices, out=None, stream=None, axis=None):
    """a's elements at the integer array indices (numpy.take: of a flattened, or along
    axis 0 with axis=0): a gather in a cuk program, fused with what reads it."""
    a = _gpu(a, "take()")
    indices = _gpu(indices, "take()")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"take(): indices must be an integer array, not {indices.dtype}; convert them with "
                        ".astype(np.int64)")
    _no_struct("take()", a.dtype)
    if axis is None:
        if a.ndim != 1:
            a = a.ravel()
    elif axis not in (0, -a.ndim):
        raise ValueError(f"take(): axis={axis} is not supported; cuk gathers along axis 0 (or of the flattened "
                         "array, axis=None): move the axis first with transpose")
    if a.ndim == 0:
        raise ValueError("take(): a 0-d array has no axis to take along")
    r = GPUArray._lazy(_Node("take", [a._node(), indices._node()], indices.shape + a.shape[1:], a.dtype))
    return _out(r, out)


def subset_dot(subset, a, b, dtype=None, stream=None, allocator=None):
    """dot(a[subset], b[subset]), the gathers fused into the reduction."""
    return sum(take(a, subset) * take(b, subset), dtype, allocator=allocator)


def subset_sum(subset, a, dtype=None, stream=None, allocator=None):
    """sum(a[subset]) (PyCUDA's), the gather fused into the reduction."""
    return sum(take(a, subset), dtype, allocator=allocator)


def subset_max(subset, a, stream=None):
    """max(a[subset]) (PyCUDA's), the gather fused into the reduction."""
    return max(take(a, subset))


def subset_min(subset, a, stream=None):
    """min(a[subset]) (PyCUDA's), the gather fused into the reduction."""
    return min(take(a, subset))


def maximum(a, b, out=None, stream=None):
    return _out(_binary("maximum", a, b), out)


def minimum(a, b, out=None, stream=None):
    return _out(_binary("minimum", a, b), out)


def _truth(x):
    """x as bool, as NumPy's logical functions read it: nonzero is true."""
    if isinstance(x, GPUArray):
        return x if x.dtype == np.bool_ else x != 0
    if isinstance(x, numbers.Number):
        return bool(x)
    raise TypeError(f"logical functions take GPUArrays and numbers, not {type(x).__name__}")


def logical_and(x1, x2, out=None, stream=None):
    """numpy.logical_and: a bool array, true where both are nonzero."""
    return _out(_binary("and", _truth(x1), _truth(x2)), out)


def logical_or(x1, x2, out=None, stream=None):
    """numpy.logical_or: a bool array, true where either is nonzero."""
    return _out(_binary("or", _truth(x1), _truth(x2)), out)


def logical_not(x, out=None, stream=None):
    """numpy.logical_not: a bool array, true where x is zero."""
    t = _truth(x)
    if not isinstance(t, GPUArray):
        raise TypeError("logical_not() takes a GPUArray; for a number use `not x`")
    return _out(_unary("not", t), out)


def if_positive(criterion, then_, else_, out=None, stream=None):
    c = criterion > 0
    t, e = _leaf_of(then_), _leaf_of(else_)
    dt = _result_dtype("add", t, e)
    t, e = _cast(t, dt), _cast(e, dt)
    shape = _bshape(_bshape(c.shape, t.shape), e.shape)
    return _out(GPUArray._lazy(_Node("where", [c._node(), t, e], shape, dt)), out)


def where(cond, a, b):
    return if_positive(cond.astype(np.bool_) if isinstance(cond, GPUArray) else cond, a, b)


def _join(fn, arrays, axis, shape, dt, names_of, ret_dims, allocator):
    """One cuk program applying fn (concat or stack) to arrays, each cast to dt and, if
    F-ordered, read transposed; names_of(j) names array j's sizes."""
    t = _ty(dt)
    params, body, args = [], [], []
    for j, x in enumerate(arrays):
        names = names_of(j)
        if x._f:
            params.append(f"x{j}: {_ty(x.dtype)}[{', '.join(names[::-1])}]")
            e = f"transpose(x{j})"
        else:
            params.append(f"x{j}: {_ty(x.dtype)}[{', '.join(names)}]")
            e = f"x{j}"
        body.append(e if x.dtype == dt else f"{t}({e})")
        args.append(x._storage())
    src = f"fn k({', '.join(params)}) -> {t}[{', '.join(ret_dims)}] = {fn}({', '.join(body)}, axis={axis});\n"
    out = _alloc(shape, dt, allocator=allocator)
    if builtins.min(shape) > 0:
        _module(src)(*args, out=out)
    return GPUArray._wrap(out)


def _join_inputs(arrays, what):
    arrays = [_gpu(x, what) for x in arrays]
    if not arrays:
        raise ValueError(f"{what} needs at least one array to join")
    for x in arrays:
        _no_struct(what, x.dtype)
    return arrays, _canon(np.result_type(*[x.dtype for x in arrays]))


def concatenate(arrays, axis=0, allocator=None):
    """numpy.concatenate, by the language's concat on the device (the inputs cast to
    NumPy's common type)."""
    arrays, dt = _join_inputs(arrays, "concatenate()")
    n = arrays[0].ndim
    if n == 0:
        raise ValueError("concatenate(): zero-dimensional arrays cannot be concatenated; stack them, or reshape "
                         "them to 1-D")
    if not -n <= axis < n:
        raise _AxisError(f"concatenate(): axis {axis} is out of bounds for arrays of {n} dimensions")
    axis %= n
    for x in arrays:
        if x.ndim != n or x.shape[:axis] + x.shape[axis + 1:] != arrays[0].shape[:axis] + arrays[0].shape[axis + 1:]:
            raise ValueError(f"concatenate(): all shapes must match except along axis {axis}; got "
                             f"{[y.shape for y in arrays]}")
    shape = list(arrays[0].shape)
    shape[axis] = builtins.sum(x.shape[axis] for x in arrays)
    if len(arrays) == 1:
        return arrays[0].astype(dt) if arrays[0].dtype != dt else arrays[0].copy(order="C")

    def names_of(j):
        return [f"e{j}" if m == axis else f"d{m}" for m in range(n)]

    ret = [" + ".join(f"e{j}" for j in range(len(arrays))) if m == axis else f"d{m}" for m in range(n)]
    return _join("concat", arrays, axis, tuple(shape), dt, names_of, ret, allocator)


def stack(arrays, axis=0, allocator=None):
    """numpy.stack, by the language's stack (or, for 0-d arrays, concat) on the device."""
    arrays, dt = _join_inputs(arrays, "stack()")
    shape0 = arrays[0].shape
    if any(x.shape != shape0 for x in arrays):
        raise ValueError(f"stack(): all input arrays must have the same shape; got {[x.shape for x in arrays]}")
    n = len(shape0) + 1
    if not -n <= axis < n:
        raise _AxisError(f"stack(): axis {axis} is out of bounds for a result of {n} dimensions")
    axis %= n
    if n == 1:  # 0-d arrays: joined as one-element ones
        return concatenate([x.reshape(1) for x in arrays], 0, allocator)
    if len(arrays) == 1:
        return arrays[0].astype(dt).reshape(shape0[:axis] + (1,) + shape0[axis:])
    shape = shape0[:axis] + (len(arrays),) + shape0[axis:]
    ret = [f"d{m}" for m in range(n - 1)]
    ret.insert(axis, str(len(arrays)))
    return _join("stack", arrays, axis, shape, dt, lambda j: [f"d{m}" for m in range(n - 1)], ret, allocator)


def reshape(a, shape, order="C"):
    return a.reshape(shape, order=order)


def transpose(a, axes=None):
    return a.transpose(axes)


# ---- sorting (the language's sort, argsort, searchsorted and unique; CuPy's names) ----

_AxisError = getattr(np, "exceptions", np).AxisError  # NumPy 2 moved it


def _sort_fn(a, fn, axis, kind):
    """sort or argsort of a along axis (None: of a flattened), stable whatever kind
    says (NumPy's kinds name algorithms; every one of them gives the stable order here)."""
    if kind not in (None, "stable", "quicksort", "mergesort", "heapsort"):
        raise ValueError(f"{fn}(): unknown kind {kind!r}")
    _no_complex(f"{fn}()", a.dtype)
    if axis is None and a.ndim != 1:
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
    return GPUArray._wrap(_module(src)(a._as_order(False)._storage()))


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
    return GPUArray._wrap(_module(src)(a._storage(), v._as_order(False)._storage()))


def unique(a):
    """a's distinct values, sorted, 1-D (cupy.unique without its options; NaNs as one)."""
    _no_complex("unique()", a.dtype)
    t = _ty(a.dtype)
    dims = ", ".join(f"d{k}" for k in range(a.ndim))
    src = f"fn k(x: {t}[{dims}]) -> {t}[?] = unique(x);\n"
    return GPUArray._wrap(_module(src)(a._as_order(False)._storage()))


def is_lazy(a):
    """True if a is an unevaluated expression (for tests and the curious)."""
    return a._expr is not None


def _unary_public(op, x, float_only=True):
    return _unary(op, x, float_only)


# ---- CUDA's vector types (PyCUDA's gpuarray.vec) ----------------------------------------------

class vec:
    """CUDA's vector types as NumPy struct dtypes, as PyCUDA's ``gpuarray.vec``:
    ``vec.float3`` is ``dtype([('x', '<f4'), ('y', '<f4'), ('z', '<f4')])`` and
    ``vec.make_float3(x, y, z)`` a 0-d array of it. GPUArrays of them are stored,
    filled, copied and read back; arithmetic on them is a TypeError."""


def _vector_types():
    fields = "xyzw"
    # CUDA's long is 64 bits where this Python's C long is (Linux), 32 on Windows
    long_t = np.dtype(np.int_) if np.dtype(np.int_).itemsize == 8 else np.dtype(np.int32)
    ulong_t = np.dtype(long_t.str.replace("i", "u"))
    bases = [("char", np.int8, 4), ("uchar", np.uint8, 4), ("short", np.int16, 4), ("ushort", np.uint16, 4),
             ("int", np.int32, 4), ("uint", np.uint32, 4), ("long", long_t, 4), ("ulong", ulong_t, 4),
             ("longlong", np.int64, 2), ("ulonglong", np.uint64, 2), ("float", np.float32, 4),
             ("double", np.float64, 2)]
    made = []
    for base, t, most in bases:
        for n in range(1, most + 1):
            name = f"{base}{n}"
            dt = np.dtype([(fields[i], t) for i in range(n)])

            def make(*parts, _dt=dt, _n=n, _name=name):
                if len(parts) != _n:
                    raise TypeError(f"make_{_name}() takes {_n} values ({', '.join(fields[:_n])}), {len(parts)} given")
                return np.array(tuple(parts), dtype=_dt)

            make.__name__ = f"make_{name}"
            setattr(vec, name, dt)
            setattr(vec, f"make_{name}", staticmethod(make))
            made.append((name, dt))
    return made


_VECTOR_TYPES = _vector_types()


def _register_vector_types():
    """Names the vector dtypes for tools.dtype_to_ctype (vec.float3: "float3")."""
    from . import tools

    register = getattr(tools, "register_dtype", None)
    if register is not None:
        for name, dt in _VECTOR_TYPES:
            register(dt, [name], alias_ok=True)


_register_vector_types()


# ---- stream= ------------------------------------------------------------------------------

class _on:
    """``with _on(stream):`` queues the block's cuk work on ``stream`` (a cuk, CuPy or
    PyTorch stream, an object with ``__cuda_stream__`` or a raw handle; None leaves this
    thread's current stream as it is)."""

    __slots__ = ("_s", "_was")

    def __init__(self, stream):
        self._s = stream

    def __enter__(self):
        if self._s is not None:
            self._was = _cuk.get_current_stream()
            _cuk.set_current_stream(self._s)
        return self

    def __exit__(self, *exc):
        if self._s is not None:
            _cuk.set_current_stream(self._was)
        return False


def _streamed(fn):
    """fn with PyCUDA's ``stream=`` honoured: with a stream, the work runs there and a
    lazy GPUArray result is computed there at once (PyCUDA queues each kernel on the
    stream it is given when it is called); without one, fn itself, lazy as before."""
    import functools
    import inspect

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return fn
    if "stream" not in params:
        return fn
    pos = params.index("stream")

    takes_out = "out" in params

    @functools.wraps(fn)
    def call(*args, **kw):
        if takes_out and len(args) > pos and isinstance(args[pos], GPUArray) and "out" not in kw:
            # PyCUDA's positional stream_or_out: an array there is the output
            kw["out"] = args[pos]
            args = args[:pos] + (None,) + args[pos + 1:]
        stream = kw.get("stream", args[pos] if len(args) > pos else None)
        if stream is None:
            return fn(*args, **kw)
        with _on(stream):
            r = fn(*args, **kw)
            for x in r if isinstance(r, tuple) else (r,):
                if isinstance(x, GPUArray) and x._sv is None and x._data is None:
                    x._storage()
            return r

    return call


def _stream_all(namespace, names=None):
    """Wraps every function (and GPUArray method) of namespace taking ``stream=``."""
    for name in names if names is not None else list(namespace):
        f = namespace[name] if isinstance(namespace, dict) else getattr(namespace, name)
        if callable(f) and not isinstance(f, type) and not name.startswith("__"):
            w = _streamed(f)
            if w is not f:
                if isinstance(namespace, dict):
                    namespace[name] = w
                else:
                    setattr(namespace, name, w)


_stream_all(GPUArray, [n for n, v in vars(GPUArray).items() if callable(v) and not isinstance(v, (staticmethod, classmethod))])
_stream_all(globals(), [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
                        and not n.startswith("_")])

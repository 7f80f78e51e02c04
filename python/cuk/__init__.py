"""cuk: a GPU array language and runtime.

``cuk.compile(src_or_path)`` compiles a .cuk program; its functions take NumPy arrays,
cuk device arrays and CUDA arrays of other libraries (``__cuda_array_interface__`` or
DLPack) and give results back as the same kind. Beside it, PyCUDA's layout:
``cuk.driver``, ``cuk.autoinit``, ``cuk.compiler``, ``cuk.gpuarray``,
``cuk.elementwise``, ``cuk.reduction``, ``cuk.scan``, ``cuk.cumath``,
``cuk.curandom``, ``cuk.tools``.
"""
import os as _os
import pkgutil as _pkgutil

# The extension is built into <build>/python/cuk/ and the Python sources live in
# python/cuk/: with both directories on sys.path the package spans them.
__path__ = _pkgutil.extend_path(__path__, __name__)
if _os.environ.get("CUK_BUILD_DIR"):
    _d = _os.path.join(_os.environ["CUK_BUILD_DIR"], "python", "cuk")
    if _os.path.isdir(_d) and _d not in __path__:
        __path__.append(_d)

from . import _cuk  # noqa: E402
from ._cuk import (  # noqa: E402,F401
    ArgumentError,
    CompileError,
    DeviceArray,
    Error,
    Graph,
    LaunchError,
    LogicError,
    NoDeviceError,
    RunError,
    get_current_stream,
    set_current_stream,
)

__version__ = _cuk.version()

_BACKENDS = {"auto": _cuk.BACKEND_AUTO, "gpu": _cuk.BACKEND_GPU, "cpu": _cuk.BACKEND_CPU}


class Module:
    """A compiled program. Its functions are attributes (``m.saxpy(a, x, y)``) and
    ``m[name]``; ``m.backend`` is ``"gpu"`` or ``"cpu"``. A generic function, the
    program's (``fn g(x: T[n]) -> T[n]``) or the stdlib's (``m.softmax``,
    ``m.layer_norm``, ``m.relu``, ...), is a :class:`GenericFunction`: each call binds its
    type variables from the arguments' dtypes, as a call in cuk code does."""

    def __init__(self, program, source_name, source=None, options=None):
        self._program = program
        # What a GenericFunction recompiles with: the program's text (None for a bundle)
        # and (name, fast_math, profile); the GenericFunctions found so far, by name; and
        # the typed wrappers compiled for them, by (function, binding).
        self._source = source
        self._options = options or (None, False, False)
        self._bound = {}
        self._generics = {}
        self.backend = program.backend
        self.name = source_name
        self.functions = program.functions()
        for name in self.functions:
            setattr(self, name, _elementwise(self, program.function(name)))

    def _lookup(self, name, miss):
        """The function called name (a Function, or a GenericFunction, kept), else None;
        miss raised for a generic function that cannot be called on its own."""
        g = self._generics.get(name)
        if g is not None:
            return g
        try:
            return self._program.function(name)
        except LogicError:
            pass
        try:
            sig = self._program.generic(name)
        except ArgumentError as e:  # generic, but of a tuple result or none
            raise miss(str(e)) from None
        if sig is not None:
            g = self._generics[name] = GenericFunction(self, name, *sig)
        return g

    def __getitem__(self, name):
        f = getattr(self, name) if name in self.functions else self._lookup(name, KeyError)
        if f is None:
            raise KeyError(name)
        return f

    def __getattr__(self, name):
        # Only for names that are not attributes yet: a generic function (the program's,
        # or the stdlib's: softmax, variance, ...) or a stdlib function of concrete types,
        # kept once found. Builtins (mean, sum, ...) are no functions of the program.
        if name.startswith("_"):
            raise AttributeError(name)
        f = self._lookup(name, AttributeError)
        if f is None:
            raise AttributeError(f"the program has no function '{name}'")
        setattr(self, name, f)
        return f

    def __repr__(self):
        return f"<cuk.Module {self.name} ({self.backend}): {', '.join(self.functions)}>"

    def profile(self):
        """The time of each statement over the calls so far, heaviest first, as a table
        (a str; ``print(m.profile())``): for a module compiled with ``profile=True``.
        Calls of generic functions run in programs of their own and are not in it."""
        return self._program.profile()


# cuk's element type names by NumPy's dtype names (PyTorch's, "torch.float32", too).
_CUK_TYPES = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
              "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
              "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}


def _is_typevar(elem):
    # as the compiler's: one capital letter (no dtype is spelled so)
    return len(elem) == 1 and "A" <= elem <= "Z"


def _type_text(elem, dims):
    return f"{elem}[{', '.join(dims)}]" if dims else elem


def _elem_type(a):
    """cuk's name of the element type of an argument with a dtype (a NumPy array or
    scalar, a DeviceArray, a CuPy array, a PyTorch tensor); "" for a dtype cuk has no type
    for, None for a value without a dtype (a Python number, a list)."""
    dt = getattr(a, "dtype", None)
    if dt is None:
        return None
    name = dt if isinstance(dt, str) else getattr(dt, "name", None) or str(dt)
    return _CUK_TYPES.get(str(name).rsplit(".", 1)[-1], "")


def _rank(a):
    shape = getattr(a, "shape", None)
    if shape is not None:
        return len(shape)
    if isinstance(a, (list, tuple)):
        import numpy as np

        return np.ndim(a)
    return 0


class GenericFunction:
    """A generic function of a :class:`Module`: one whose element types are type
    variables (``fn g(x: T[n]) -> T[n]``, and the stdlib's softmax, variance, norm,
    layer_norm, relu, ...). cuk inlines such a function at each call, binding ``T`` from
    the arguments; so does a call of this object: each type variable is bound from the
    dtype of the first argument declared with it that has one (a NumPy array or scalar
    such as ``np.float32(2)``, a :class:`DeviceArray`, a CuPy array or a PyTorch tensor;
    a Python int or float has none), a typed wrapper
    (``fn <name>(x: f32[n]) -> f32[n] = g(x);``) is compiled with the module's source and
    options, once per binding (the module keeps it), and called with the arguments,
    ``out=`` and ``stream=``. A scalar parameter given an array applies the function
    elementwise, as in cuk (``m.relu(x)``). ``params`` and ``result`` hold the signature
    as written: ``(name, elemtype, dims)`` per parameter, ``(elemtype, dims)``."""

    def __init__(self, module, name, params, result):
        self.__name__ = name
        self._module = module
        self.params = params
        self.result = result
        self.typevars = tuple(dict.fromkeys(e for e in [p[1] for p in params] + [result[0]] if _is_typevar(e)))

    def __repr__(self):
        sig = ", ".join(f"{n}: {_type_text(e, d)}" for n, e, d in self.params)
        return f"<cuk generic function {self.__name__}({sig}) -> {_type_text(*self.result)}>"

    def __call__(self, *args, **kwargs):
        f = self.specialize(*args)
        try:
            return f(*args, **kwargs)
        except ArgumentError as e:  # about the arguments: named as the user's call
            wrapped = f.__name__ + "()"
            if wrapped not in str(e):
                raise
            raise ArgumentError(str(e).replace(wrapped, self.__name__ + "()")) from None

    def specialize(self, *args):
        """The compiled :class:`Function` a call with these arguments runs (for its
        ``params``, ``capture`` or ``profile``)."""
        name = self.__name__
        if len(args) != len(self.params):
            n = len(self.params)
            raise TypeError(f"{name}() takes {n} argument{'' if n == 1 else 's'} ({len(args)} given)")
        types = {}
        for (pname, elem, _), a in zip(self.params, args):
            if _is_typevar(elem) and elem not in types:
                t = _elem_type(a)
                if t == "":
                    raise ArgumentError(f"{name}(): argument '{pname}' has dtype {a.dtype}, which cuk has no type for; "
                                        f"it has {', '.join(_CUK_TYPES)}")
                if t:
                    types[elem] = t
        for v in self.typevars:
            if v not in types:
                given = [(p, type(a).__name__) for (p, e, _), a in zip(self.params, args) if e == v]
                if not given:
                    raise TypeError(f"{name}(): the type variable {v} of its result is the type of no parameter")
                which = " or ".join(f"'{p}'" for p, _ in given)
                what = " or ".join(sorted({t for _, t in given}))
                raise TypeError(f"{name}(): its element type {v} is bound from the dtype of argument {which}, and a "
                                f"Python {what} has none; pass an array (NumPy, cuk, CuPy, PyTorch) or a NumPy scalar, "
                                f"e.g. np.float32(x)")
        # scalar parameters given arrays: the function applies elementwise
        ranks = tuple(0 if dims else _rank(a) for (_, _, dims), a in zip(self.params, args))
        key = (name, tuple(types[v] for v in self.typevars), ranks)
        f = self._module._bound.get(key)
        if f is None:
            f = self._module._bound[key] = self._compile(types, ranks)
        return f

    def _compile(self, types, ranks):
        m, name = self._module, self.__name__
        source = m._source
        binding = ", ".join(f"{v} = {types[v]}" for v in self.typevars)
        how = f"with {binding}" if binding else "applied elementwise"
        if source is None:
            ex = self._wrapper(f"{name}_{'_'.join(types[v] for v in self.typevars)}", types, ranks)
            raise LogicError(f"{name}() is generic: a call with {binding} compiles a typed wrapper with the "
                             f"program's source, and {m.name} is a bundle, which has none; add the wrapper to the "
                             f"program before cukc build, e.g. {ex}")
        wname = "__cuk_" + "_".join((name,) + tuple(types[v] for v in self.typevars)) + \
            "".join(f"_m{r}" for r in ranks if r)
        while wname in source:  # a name the program never spells cannot collide with its own
            wname += "_"
        text = self._wrapper(wname, types, ranks)
        src_name, fast_math, profile = m._options
        try:
            prog = _cuk.compile(source + "\n" + text + "\n", _BACKENDS[m.backend], src_name, False, fast_math, profile)
        except CompileError as e:
            err = CompileError(f"{name}() {how}: {e}")
            for k in ("file", "line", "column"):
                setattr(err, k, getattr(e, k, None))
            err.message = f"{name}() {how}: {getattr(e, 'message', e)}"
            raise err from None
        return prog.function(wname)

    def _wrapper(self, wname, types, ranks):
        """fn wname(params, types bound) -> result = name(params);"""
        taken = {d for _, _, dims in self.params for d in dims}
        params = []
        for i, ((pname, elem, dims), r) in enumerate(zip(self.params, ranks)):
            if r:  # elementwise: fresh size variables
                dims = []
                for k in range(r):
                    d = f"__cuk_{i}_{k}"
                    while d in taken:
                        d += "_"
                    dims.append(d)
            params.append(f"{pname}: {_type_text(types.get(elem, elem), dims)}")
        relem, rdims = self.result
        mapped = max(ranks, default=0)  # the rank of an elementwise call's result: its sizes are the arguments'
        rdims = ("?",) * mapped if mapped else tuple("?" if d == "(expression)" else d for d in rdims)
        args = ", ".join(p[0] for p in self.params)
        return f"fn {wname}({', '.join(params)}) -> {_type_text(types.get(relem, relem), rdims)} = {self.__name__}({args});"


class ScalarFunction:
    """A function of the program whose parameters are all scalars and whose result is one
    (``fn f(x: f32, k: i32) -> f32``). Called with scalars it is the compiled
    :class:`Function` (``params``, ``capture``, ``profile`` are its); called with arrays for
    some parameters it applies elementwise over them, as a call in cuk code does
    (``m.f(x, 3)`` with ``x`` an f32 array gives ``f`` of each element): a wrapper
    ``fn <name>(x: f32[n], k: i32) -> f32[?] = f(x, k);`` compiled once per ranks of the
    arguments with the module's source and options, as :class:`GenericFunction` does."""

    def __init__(self, module, fn):
        self._fn = fn
        self.__name__ = fn.__name__
        (rdt, _), = fn.results
        self._each = GenericFunction(module, fn.__name__, tuple((n, _CUK_TYPES[d], ()) for n, d, _ in fn.params),
                                     (_CUK_TYPES[rdt], ()))

    def __call__(self, *args, **kwargs):
        for a in args:
            if getattr(a, "ndim", 0) or isinstance(a, (list, tuple)):
                return self._each(*args, **kwargs)
        return self._fn(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._fn, name)

    def __repr__(self):
        return repr(self._fn)


def _elementwise(module, fn):
    """fn, or a ScalarFunction over it where every parameter and its one result are
    scalars (of types Python has names for) and the module has source to compile with."""
    try:
        params, results = fn.params, fn.results
    except Error:
        return fn
    if (module._source is None or not params or len(results) != 1 or results[0][1] != 0
            or any(dims for _, _, dims in params)
            or not all(d in _CUK_TYPES for d in [d for _, d, _ in params] + [results[0][0]])):
        return fn
    return ScalarFunction(module, fn)


def compile(src_or_path, device=None, name=None, fast_math=False, profile=False):
    """Compiles a .cuk program (a path, or source text) and returns a :class:`Module`.

    ``device`` is ``"auto"`` (the GPU if one is usable, else the CPU backend), ``"gpu"``
    or ``"cpu"``; ``None`` reads ``$CUK_BACKEND`` and defaults to ``"auto"``. ``name``
    is the file name diagnostics show for source text. ``fast_math=True`` lets the GPU
    contract ``a * b + c`` into one FMA (faster compute-bound kernels; the last bits then
    differ from the CPU backend's, which the default keeps). ``profile=True`` times every
    statement of every call: :meth:`Module.profile` returns the table (as ``cukc run
    --profile`` prints it). Raises :class:`CompileError`
    (with ``file``, ``line``, ``column``, ``message``) for errors in the program.
    """
    if isinstance(src_or_path, _os.PathLike):
        src_or_path = _os.fspath(src_or_path)
    if device is None:
        backend = _cuk.BACKEND_DEFAULT
    else:
        try:
            backend = _BACKENDS[device]
        except KeyError:
            raise ValueError(f"device must be 'auto', 'gpu' or 'cpu', not {device!r}") from None
    prog = _cuk.compile(src_or_path, backend, name, False, bool(fast_math), bool(profile))
    shown = name or (src_or_path if "\n" not in src_or_path else "<string>")
    # the text generic functions recompile with: a path's file's (none for a bundle)
    source = src_or_path
    if "\n" not in src_or_path and _os.path.isfile(src_or_path):
        source = _source_of(src_or_path)
        name = name or src_or_path
    return Module(prog, shown, source, (name, bool(fast_math), bool(profile)))


def _source_of(path):
    """The text of the .cuk file at path, None for a bundle (.cukb) or an unreadable one."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if path.endswith(".cukb") or data[:4] == _BUNDLE_MAGIC:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


_BUNDLE_MAGIC = b"CUKB"  # compiler/bundle.h
_EXPLAIN = {"ir": 0, "cuda": 1, "dot": 2}


def explain(src_or_path, what="ir", name=None):
    """What the compiler makes of a program, as a str: ``"ir"`` (the default) the IR and
    the kernels each function fuses into, with what fused into each (``cukc emit-ir``);
    ``"cuda"`` the CUDA C of every kernel (``cukc emit-cuda``); ``"dot"`` the kernels as a
    Graphviz graph (``cukc emit-ir --dot``). Needs no GPU. A lazy gpuarray expression has
    its own: ``(a * 2 + b).explain()``."""
    try:
        w = _EXPLAIN[what]
    except KeyError:
        raise ValueError(f"what must be 'ir', 'cuda' or 'dot', not {what!r}") from None
    return _cuk.explain(_os.fspath(src_or_path), name, w)


def load(path, device=None):
    """Loads an ahead-of-time bundle written by ``cukc build`` (see docs/aot.md) and
    returns a :class:`Module`, as :func:`compile` does for source. On the GPU its kernels
    come from the bundle's cubin or PTX, without NVRTC. A damaged or stale bundle raises
    :class:`Error` with the reason."""
    path = _os.fspath(path)
    if device is None:
        backend = _cuk.BACKEND_DEFAULT
    else:
        try:
            backend = _BACKENDS[device]
        except KeyError:
            raise ValueError(f"device must be 'auto', 'gpu' or 'cpu', not {device!r}") from None
    return Module(_cuk.compile(path, backend, None, True), path)


def gpu_available():
    """True if a CUDA driver and a GPU are usable."""
    return _cuk.gpu_available()[0]


def to_device(a):
    """A :class:`DeviceArray` copy of a NumPy array."""
    return _cuk.to_device(a)


def empty(shape, dtype="float32"):
    return _cuk.device_empty(shape, _dtype_name(dtype), False)


def zeros(shape, dtype="float32"):
    return _cuk.device_empty(shape, _dtype_name(dtype), True)


def asnumpy(a):
    """A NumPy array from a DeviceArray, any object with ``.get()``, or array-like."""
    import numpy as np

    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return np.asarray(a)


def _dtype_name(dtype):
    import numpy as np

    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        return "bfloat16"  # NumPy knows it only through ml_dtypes
    return np.dtype(dtype).name


def _convert_result(template, result):
    """Gives a device result back as the kind of the foreign array the caller passed."""
    mod = type(template).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return cupy.asarray(result)
    if mod == "torch":
        import torch

        if result.dtype == "bfloat16":  # the CUDA array interface has no bfloat16: DLPack has
            return torch.from_dlpack(result)
        return torch.as_tensor(result, device=template.device)
    if mod == "numba":
        from numba import cuda

        return cuda.as_cuda_array(result)
    return result


# By cuk's dtype index (api/cuk_program.h's enum cuk_dtype).
_DTYPE_NAMES = ("bool", "int32", "int64", "uint32", "uint64", "float32", "float64", "int8", "int16", "uint8", "uint16",
                "float16", "bfloat16", "complex64", "complex128")
_BF16 = _DTYPE_NAMES.index("bfloat16")


def _result_maker(tp):
    """How a device result becomes an array of the foreign type ``tp`` the caller passed,
    without going through ``cupy.asarray``/``torch.as_tensor`` (which read
    ``__cuda_array_interface__`` and, for CuPy, ask the driver which device the pointer
    is on). The extension asks once per type and calls the maker with
    ``(owner, ptr, nbytes, shape, dtype_index, device_id)``; ``None`` means the general
    path (:func:`_convert_result`).

    cuk computed the result on the call's stream (``stream=``, else the current one, the
    legacy default stream unless a ``with stream:`` block says otherwise); the caller's
    library goes on using it on its own current stream, which may be another one (a
    ``torch.cuda.stream(s)`` or ``cupy.cuda.Stream(non_blocking=True)`` block): the maker
    makes that stream wait for cuk's work (an event wait on the device).

    CuPy has no bfloat16: a bf16 result of a call with CuPy arguments comes back as the
    :class:`DeviceArray` itself (``torch.from_dlpack`` takes it; or return ``f32(...)``).
    PyTorch's come back as ``torch.bfloat16`` tensors, through DLPack's kDLBfloat."""
    mod = tp.__module__.split(".")[0]
    try:
        if mod == "cupy":
            import cupy
            import numpy as np

            unowned, memptr, ndarray = cupy.cuda.UnownedMemory, cupy.cuda.MemoryPointer, cupy.ndarray
            current_stream, wait_cuk = cupy.cuda.get_current_stream, _cuk.stream_wait_cuk
            dts = [np.dtype(n) if k != _BF16 else None for k, n in enumerate(_DTYPE_NAMES)]

            def make_cupy(owner, ptr, nbytes, shape, dt, dev):
                if dt == _BF16:
                    return owner
                # 0 is CuPy's null stream, the legacy one (1); nothing is done when cuk's
                # call ran there too
                wait_cuk(current_stream().ptr or 1)
                # the memory stays owned by the DeviceArray `owner`, which CuPy keeps alive
                return ndarray(shape, dts[dt], memptr(unowned(ptr, nbytes, owner, dev), 0))

            return make_cupy
        if mod == "torch":
            import torch
            from torch.utils.dlpack import from_dlpack

            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)

            def current_stream(dev):
                # DLPack's convention: 1 for the legacy default stream (PyTorch's handle 0)
                s = raw(dev) if raw is not None else torch.cuda.current_stream(dev).cuda_stream
                return s or 1

            def make_torch(owner, ptr, nbytes, shape, dt, dev):
                return from_dlpack(owner.__dlpack__(stream=current_stream(dev)))

            return make_torch
    except (ImportError, AttributeError):
        pass
    return None


_KINDS = {"b": "bool", "i": "integer", "u": "unsigned integer", "f": "float", "c": "complex"}


def _sequence_arg(value, dtype, fn, param):
    """A list or tuple passed for an array parameter of ``dtype`` (a name), as the
    C-contiguous NumPy array of that dtype it becomes (the extension calls this).

    The values convert where NumPy's ``casting='same_kind'`` allows from the dtype NumPy
    gives them (``numpy.asarray(value).dtype``): bools to anything, integers to integers,
    floats and complex numbers, floats to floats and complex numbers, complex numbers to
    complex numbers. Python ints are weakly typed, as in NumPy 2 (NEP 50):
    they become any integer dtype, unsigned ones included, that holds every value. A
    value that does not fit is an error, never wrapped around."""
    import numpy as np

    where = f"{fn}(): parameter '{param}' is an array of {dtype}"
    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise ArgumentError(f"{where}, and NumPy has no bfloat16 of its own to convert the "
                                f"{type(value).__name__} to: install ml_dtypes (pip install ml_dtypes) or pass a "
                                "torch.bfloat16 tensor") from None
        target = np.dtype(ml_dtypes.bfloat16)
    else:
        target = np.dtype(dtype)
    try:
        a = np.asarray(value)
    except (ValueError, TypeError, OverflowError) as e:
        raise ArgumentError(f"{where}, but NumPy makes no array of the {type(value).__name__} given ({e})") from None
    if a.size == 0:
        return np.zeros(a.shape, target)  # nothing to convert
    if a.dtype.kind not in _KINDS:
        if a.dtype.kind == "O" and all(isinstance(x, int) for x in a.flat):
            raise ArgumentError(f"{where}, and {max(a.flat, key=abs)} does not fit in it; cuk does not wrap values around")
        raise ArgumentError(f"{where}, but the {type(value).__name__} holds {a.dtype} values, not numbers; pass numbers")
    if a.dtype.kind in "iu" and target.kind in "iu":
        info = np.iinfo(target)
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            bad = lo if lo < info.min else hi
            raise ArgumentError(f"{where}, and {bad} does not fit in it ({info.min} to {info.max}); "
                                "cuk does not wrap values around")
    elif not np.can_cast(a.dtype, target, "same_kind"):
        how = ("take the real part or the magnitude first (e.g. numpy.real(x) or numpy.abs(x))"
               if a.dtype.kind == "c" else f"convert them first (e.g. numpy.asarray(x).astype('{dtype}'))")
        raise ArgumentError(f"{where}, but the {type(value).__name__} holds {_KINDS[a.dtype.kind]} values, which NumPy's "
                            f"same_kind casting does not turn into {dtype}; {how}")
    return np.ascontiguousarray(a, dtype=target)


def load_ipython_extension(ipython):
    """``%load_ext cuk`` in IPython or Jupyter: registers the ``%%cuk`` cell magic, which
    compiles a cell and binds its functions in the notebook (docs/python.md, "Jupyter").
    Importing cuk does not import IPython."""
    from . import _jupyter

    _jupyter.load_ipython_extension(ipython)


def _named_repr(a, name):
    """NumPy's repr of the host array ``a`` with ``array(`` replaced by ``name(`` and the
    continuation lines moved to stay aligned under the first element."""
    import numpy as np

    r = repr(np.asarray(a))
    pad = " " * (len(name) - len("array"))
    return name + r[len("array"):].replace("\n      ", "\n      " + pad)


def _device_array_repr(self):
    # As CuPy's: the values, read back to the host, in NumPy's format (NumPy summarises
    # large arrays with "..."). An array that cannot be read (a bfloat16 one without
    # ml_dtypes, a failed device) keeps the extension's own repr.
    import numpy as np

    try:
        a = np.empty(self.shape, self.dtype) if self.size == 0 else self.get()
        return _named_repr(a, "DeviceArray")
    except Exception:
        return _c_device_array_repr(self)


def _device_array_str(self):
    try:
        return str(self.get())
    except Exception:
        return _c_device_array_repr(self)


# Set here rather than in the extension's C: NumPy's formatting (summaries, alignment,
# dtype suffixes) does the work.
_c_device_array_repr = DeviceArray.__repr__
DeviceArray.__repr__ = _device_array_repr
DeviceArray.__str__ = _device_array_str


def _install_hooks():
    from . import driver

    _cuk._set_hooks(_convert_result, (driver.In, driver.Out, driver.InOut), _result_maker, _sequence_arg)


_install_hooks()

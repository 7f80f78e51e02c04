"""``pycuda.tools`` on cuk: DeviceMemoryPool over the runtime's caching pool (size
classes: 512 bytes, powers of two up to 1 MiB, then quarter steps), PageLockedMemoryPool,
dtype helpers and make_default_context."""
import numpy as np

from . import _cuk
from . import driver as _drv


class DeviceMemoryPool:
    """Allocations come from cuk's process-wide pool; this object counts its own."""

    def __init__(self):
        self.active_blocks = 0
        self._held = False

    @staticmethod
    def bin_number(size):
        size = int(size)
        if size <= 512:
            return 0
        if size <= 1 << 20:
            return (size - 1).bit_length() - 9
        p = (size - 1).bit_length() - 1  # size in (2**p, 2**(p+1)]
        q = -(-(size - (1 << p)) // (1 << (p - 2))) - 1
        return 12 + (p - 20) * 4 + q

    @staticmethod
    def alloc_size(bin_nr):
        if bin_nr <= 11:
            return 512 << bin_nr
        k = bin_nr - 12
        p = 20 + k // 4
        return (1 << p) + (k % 4 + 1) * (1 << (p - 2))

    def allocate(self, size):
        a = _drv.mem_alloc(size)
        self.active_blocks += 1
        return _PooledAllocation(a, self)

    __call__ = allocate

    @property
    def held_blocks(self):
        return 1 if _cuk.mem_stats()["cached"] else 0

    def free_held(self):
        _cuk.mem_trim()

    def stop_holding(self):
        _cuk.mem_trim()

    def stats(self):
        return _cuk.mem_stats()


class _PooledAllocation:
    def __init__(self, alloc, pool):
        self._a = alloc
        self._pool = pool
        self.size = alloc.size

    def __int__(self):
        return int(self._a)

    __index__ = __int__

    def free(self):
        if self._a is not None:
            self._a.free()
            self._a = None
            self._pool.active_blocks -= 1

    def __del__(self):
        try:
            if self._a is not None:
                self._pool.active_blocks -= 1
        except Exception:
            pass


class PageLockedMemoryPool:
    def allocate(self, shape, dtype, order="C"):
        return _drv.pagelocked_empty(shape, dtype, order)


def make_default_context(ctx_maker=None):
    return _drv.Device(_cuk.device_current()).make_context()


def clear_context_caches():
    for cache in _MEMOIZED:
        cache.clear()


def dtype_to_ctype(dtype):
    dtype = np.dtype(dtype)
    if dtype in _REGISTERED:
        return _REGISTERED[dtype]
    return {
        "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
        "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int", "int64": "long long",
        "uint64": "unsigned long long", "float32": "float", "float64": "double",
        # <pycuda-complex.hpp>'s type (in cuk.compiler.INCLUDE_DIR), with NumPy's layout. No float16:
        # its __half needs cuda_fp16.h, which NVRTC does not have built in.
        "complex64": "pycuda::complex<float>", "complex128": "pycuda::complex<double>",
    }.get(dtype.name) or _no_ctype(dtype)


def _no_ctype(dtype):
    raise ValueError(f"no C type for dtype {dtype}: name one with cuk.tools.register_dtype(dtype, 'c_name')")


_CTYPES = {
    "float": np.float32, "double": np.float64, "int": np.int32, "signed int": np.int32, "unsigned": np.uint32,
    "unsigned int": np.uint32, "long": np.int64, "long int": np.int64, "unsigned long": np.uint64,
    "long long": np.int64, "unsigned long long": np.uint64, "short": np.int16, "unsigned short": np.uint16,
    "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8, "bool": np.bool_, "size_t": np.uint64,
    "ptrdiff_t": np.int64, "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "uint64_t": np.uint64,
    "int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16, "uint16_t": np.uint16,
    "pycuda::complex<float>": np.complex64, "pycuda::complex<double>": np.complex128
}


def ctype_to_dtype(ctype):
    return np.dtype(_CTYPES[" ".join(ctype.split())])


class VectorArg:
    def __init__(self, dtype, name):
        self.dtype, self.name = np.dtype(dtype), name

    def declarator(self):
        return f"{dtype_to_ctype(self.dtype)} *{self.name}"


class ScalarArg:
    def __init__(self, dtype, name):
        self.dtype, self.name = np.dtype(dtype), name

    def declarator(self):
        return f"{dtype_to_ctype(self.dtype)} {self.name}"


def parse_c_arg(c_arg):
    """'float *x' -> VectorArg, 'int n' -> ScalarArg (PyCUDA's helper)."""
    c_arg = c_arg.replace("const", " ").replace("__restrict__", " ").replace("__restrict", " ").strip()
    is_ptr = "*" in c_arg
    c_arg = c_arg.replace("*", " ")
    words = c_arg.split()
    name, tp = words[-1], " ".join(words[:-1])
    dtype = ctype_to_dtype(tp)
    return VectorArg(dtype, name) if is_ptr else ScalarArg(dtype, name)


def get_arg_type(c_arg):
    return parse_c_arg(c_arg)


def parse_args(arguments):
    if isinstance(arguments, str):
        return [parse_c_arg(a) for a in arguments.split(",") if a.strip()]
    return list(arguments)


def bitlog2(n):
    """Index of the highest set bit of n (PyCUDA's ``bitlog2``; 0 for n <= 1)."""
    n = int(n)
    return n.bit_length() - 1 if n > 0 else 0


_REGISTERED = {}


def register_dtype(dtype, c_names, alias_ok=False):
    """Names a NumPy dtype (a struct type, say) for ``dtype_to_ctype`` as PyCUDA's
    ``register_dtype`` does: the first of ``c_names`` is its C name."""
    if isinstance(c_names, str):
        c_names = [c_names]
    dtype = np.dtype(dtype)
    old = _REGISTERED.get(dtype)
    if old is not None and old != c_names[0] and not alias_ok:
        raise RuntimeError(f"dtype {dtype} is already registered as '{old}'; pass alias_ok=True to rename it")
    _REGISTERED[dtype] = c_names[0]
    for name in c_names:
        _CTYPES[" ".join(name.split())] = dtype


def context_dependent_memoize(func):
    """Caches ``func``'s results per argument tuple and per device (PyCUDA caches per
    context; cuk has one primary context per device)."""
    import functools

    cache = {}

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        key = (_current_device(), args, frozenset(kwargs.items()))
        try:
            return cache[key]
        except KeyError:
            result = cache[key] = func(*args, **kwargs)
            return result

    wrapper.clear_cache = cache.clear
    _MEMOIZED.append(cache)
    return wrapper


_MEMOIZED = []


def _current_device():
    try:
        return _cuk.device_current()
    except _cuk.Error:  # the CPU backend
        return -1


def _check_context():
    """What PyCUDA's test helpers assert about the current context; nothing to check
    where cuk runs on its CPU backend (no driver)."""
    try:
        _drv.init()
    except _cuk.NoDeviceError:
        return None
    ctx = make_default_context()
    dev = ctx.get_device()
    assert isinstance(dev.name(), str)
    assert isinstance(dev.compute_capability(), tuple)
    assert isinstance(dev.get_attributes(), dict)
    return ctx


def _release_context(ctx):
    import gc

    if ctx is not None:
        ctx.pop()
    clear_context_caches()
    gc.collect()


def mark_cuda_test(inner_f):
    """PyCUDA's test decorator: runs the test with a context pushed."""
    import functools

    @functools.wraps(inner_f)
    def f(*args, **kwargs):
        ctx = _check_context()
        try:
            return inner_f(*args, **kwargs)
        finally:
            _release_context(ctx)

    return f


def init_cuda_context_fixture():
    """PyCUDA's pytest fixture body: ``yield from init_cuda_context_fixture()``."""
    ctx = _check_context()
    yield
    _release_context(ctx)

"""PyCUDA's ``pycuda.driver`` on cuk's runtime: devices, the primary context, pooled
device memory, copies, pinned host memory, streams, events and kernel arguments.

Nothing here touches the GPU at import time; without a driver the first call raises
:class:`cuk.Error` (``NoDeviceError``) saying why.
"""
import numpy as np

from . import _cuk
from ._cuk import (  # noqa: F401
    ArgumentError,
    CompileError,
    DeviceAllocation,
    Error,
    Event as _Event,
    LaunchError,
    LogicError,
    NoDeviceError,
    Stream as _Stream,
)
from ._cuk import MemoryError as MemoryError  # noqa: A004  (PyCUDA has driver.MemoryError)

RuntimeError = Error  # noqa: A001  (PyCUDA's name for run-time failures)


def init(flags=0):
    """Loads the driver and initialises it (idempotent)."""
    _cuk.init()


def get_version():
    return (13, 0, 0)


def get_driver_version():
    return Device(0)._props["driver_version"]


class device_attribute:  # noqa: N801  (PyCUDA's spelling)
    MAX_THREADS_PER_BLOCK = "max_threads_per_block"
    MAX_SHARED_MEMORY_PER_BLOCK = "max_shared_memory_per_block"
    WARP_SIZE = "warp_size"
    MULTIPROCESSOR_COUNT = "multiprocessor_count"
    L2_CACHE_SIZE = "l2_cache_size"
    MAX_THREADS_PER_MULTIPROCESSOR = "max_threads_per_multiprocessor"
    COMPUTE_CAPABILITY_MAJOR = "compute_capability_major"
    COMPUTE_CAPABILITY_MINOR = "compute_capability_minor"
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "max_shared_memory_per_block_optin"


class Device:
    """A CUDA device by ordinal."""

    def __init__(self, ordinal):
        n = _cuk.device_count()
        if not 0 <= ordinal < n:
            raise LogicError(f"no device {ordinal}: this machine has {n}")
        self.ordinal = ordinal
        self._props = _cuk.device_props(ordinal)

    @staticmethod
    def count():
        return _cuk.device_count()

    def name(self):
        return self._props["name"]

    def compute_capability(self):
        return tuple(self._props["compute_capability"])

    def total_memory(self):
        return self._props["total_memory"]

    def pci_bus_id(self):
        return f"device {self.ordinal}"

    def get_attribute(self, attr):
        if attr == device_attribute.COMPUTE_CAPABILITY_MAJOR:
            return self._props["compute_capability"][0]
        if attr == device_attribute.COMPUTE_CAPABILITY_MINOR:
            return self._props["compute_capability"][1]
        return self._props[attr]

    def get_attributes(self):
        d = {k: v for k, v in self._props.items() if isinstance(v, int)}
        d["compute_capability_major"], d["compute_capability_minor"] = self._props["compute_capability"]
        return d

    def make_context(self, flags=0):
        """Selects this device and pushes its primary context (PyCUDA makes a new
        context; cuk shares the primary one with CuPy and PyTorch)."""
        _cuk.device_select(self.ordinal)
        ctx = Context(self)
        ctx.push()
        return ctx

    def retain_primary_context(self):
        _cuk.device_select(self.ordinal)
        return Context(self)

    def __eq__(self, other):
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self):
        return hash(self.ordinal)

    def __repr__(self):
        return f"<cuk.driver.Device {self.ordinal}: {self.name()}>"


class Context:
    """The primary context of a device. push/pop are kept for PyCUDA code; cuk makes
    the context current on every thread that needs it, so neither is required, and an
    unpopped push does not abort at exit."""

    def __init__(self, device):
        self._device = device

    def push(self):
        _cuk.device_select(self._device.ordinal)
        _cuk.ctx("push")

    @staticmethod
    def pop():
        _cuk.ctx("pop")

    def detach(self):
        pass

    @staticmethod
    def synchronize():
        _cuk.synchronize()

    @staticmethod
    def get_device():
        return Device(_cuk.device_current())

    @staticmethod
    def get_current():
        return Context(Device(_cuk.device_current()))

    def get_api_version(self):
        return 13000


# ---- memory ----------------------------------------------------------------------------


def mem_alloc(nbytes):
    """Device memory from cuk's pool; freed when the object is collected or on .free()."""
    return _cuk.mem_alloc(int(nbytes))


def mem_alloc_like(ary):
    return mem_alloc(ary.nbytes)


def mem_get_info():
    """(free, total) bytes of the current device."""
    return _cuk.mem_info()


def _host(buf):
    return buf if not isinstance(buf, np.ndarray) or buf.flags.c_contiguous else np.ascontiguousarray(buf)


def memcpy_htod(dest, src):
    _cuk.memcpy_htod(dest, _host(src))


def memcpy_dtoh(dest, src):
    _cuk.memcpy_dtoh(dest, src)


def memcpy_dtod(dest, src, size):
    _cuk.memcpy_dtod(dest, src, int(size))


def memcpy_htod_async(dest, src, stream=None):
    _cuk.memcpy_htod(dest, src, stream, True)


def memcpy_dtoh_async(dest, src, stream=None):
    _cuk.memcpy_dtoh(dest, src, stream, True)


def memcpy_dtod_async(dest, src, size, stream=None):
    _cuk.memcpy_dtod(dest, src, int(size), stream, True)


def memset_d8(dest, data, count):
    _cuk.memset_d8(dest, int(data), int(count))


def memset_d8_async(dest, data, count, stream=None):
    _cuk.memset_d8(dest, int(data), int(count), stream)


def _memset_wide(dest, data, count, dtype):
    memcpy_htod(dest, np.full(int(count), data, dtype=dtype))


def memset_d16(dest, data, count):
    _memset_wide(dest, data, count, np.uint16)


def memset_d32(dest, data, count):
    _memset_wide(dest, data, count, np.uint32)


def from_device(devptr, shape, dtype, order="C"):
    out = np.empty(shape, dtype)
    memcpy_dtoh(out, devptr)
    return out


def from_device_like(devptr, other_ary):
    return from_device(devptr, other_ary.shape, other_ary.dtype)


def to_device(ary):
    a = mem_alloc(ary.nbytes)
    memcpy_htod(a, ary)
    return a


# ---- pinned host memory -------------------------------------------------------------------


class host_alloc_flags:  # noqa: N801
    PORTABLE = 1
    DEVICEMAP = 2
    WRITECOMBINED = 4


def pagelocked_empty(shape, dtype, order="C", mem_flags=0):
    """A NumPy array in pinned (page-locked) host memory, freed when collected."""
    dtype = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    buf = _cuk.host_alloc(n * dtype.itemsize)
    a = np.frombuffer(buf, dtype=dtype, count=n)
    return a.reshape(shape, order=order)


def pagelocked_zeros(shape, dtype, order="C", mem_flags=0):
    a = pagelocked_empty(shape, dtype, order, mem_flags)
    a.fill(0)
    return a


def pagelocked_empty_like(array, mem_flags=0):
    return pagelocked_empty(array.shape, array.dtype, "C", mem_flags)


def pagelocked_zeros_like(array, mem_flags=0):
    return pagelocked_zeros(array.shape, array.dtype, "C", mem_flags)


# ---- streams and events -------------------------------------------------------------------


class Stream(_Stream):
    """A non-blocking stream."""

    def __new__(cls, flags=0):
        return _Stream.__new__(cls)

    def __init__(self, flags=0):
        pass


class event_flags:  # noqa: N801
    DEFAULT = 0
    BLOCKING_SYNC = 1
    DISABLE_TIMING = 2


class Event(_Event):
    """An event with timing: ``end.time_since(start)`` is milliseconds."""

    def __new__(cls, flags=0):
        return _Event.__new__(cls)

    def __init__(self, flags=0):
        pass


# ---- kernel arguments -----------------------------------------------------------------------


class ArgumentHandler:
    def __init__(self, array):
        self.array = array


class In(ArgumentHandler):
    """A host array copied to the device before the launch."""

    _which = 0


class Out(ArgumentHandler):
    """A host array filled from the device after the launch."""

    _which = 1


class InOut(ArgumentHandler):
    """A host array copied in before the launch and back after it."""

    _which = 2


class func_cache:  # noqa: N801
    PREFER_NONE = 0
    PREFER_SHARED = 1
    PREFER_L1 = 2
    PREFER_EQUAL = 3


class function_attribute:  # noqa: N801
    MAX_THREADS_PER_BLOCK = "max_threads_per_block"
    SHARED_SIZE_BYTES = "shared_size_bytes"
    NUM_REGS = "num_regs"


def _format_of(arg_types):
    if isinstance(arg_types, str):
        return arg_types
    out = []
    for t in arg_types:
        if isinstance(t, str):
            out.append(t)
        else:
            c = np.dtype(t).char
            out.append("P" if c in "pP" else c)
    return "".join(out)


# A kernel of a SourceModule, the extension's own type (called through vectorcall: no
# tuples, dicts or Python frames per launch). Call it with ``block=``, ``grid=``,
# ``stream=``, ``shared=`` (and ``time_kernel=True`` for its run time in seconds), or
# ``prepare`` it and use ``prepared_call``, ``prepared_async_call``,
# ``prepared_timed_call``; ``get_attribute``, ``num_regs``, ``shared_size_bytes``,
# ``max_threads_per_block``, ``local_size_bytes``, ``const_size_bytes``,
# ``set_cache_config`` and ``set_shared_size`` as in PyCUDA.
Function = _cuk.Kernel

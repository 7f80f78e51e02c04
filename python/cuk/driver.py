"""PyCUDA's ``pycuda.driver`` on cuk's runtime: devices, the primary context, pooled
device memory, copies, pinned host memory, streams, events and kernel arguments.

Nothing here touches the GPU at import time; without a driver the first call raises
:class:`cuk.Error` (``NoDeviceError``) saying why.
"""
import enum

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


# Every CUdevice_attribute of CUDA 13's cuda.h (CU_DEVICE_ATTRIBUTE_ left off), as PyCUDA
# names them; later names with an earlier one's number are CUDA's deprecated aliases.
_DEVICE_ATTRIBUTES = (
    ("MAX_THREADS_PER_BLOCK", 1), ("MAX_BLOCK_DIM_X", 2), ("MAX_BLOCK_DIM_Y", 3), ("MAX_BLOCK_DIM_Z", 4),
    ("MAX_GRID_DIM_X", 5), ("MAX_GRID_DIM_Y", 6), ("MAX_GRID_DIM_Z", 7), ("MAX_SHARED_MEMORY_PER_BLOCK", 8),
    ("SHARED_MEMORY_PER_BLOCK", 8), ("TOTAL_CONSTANT_MEMORY", 9), ("WARP_SIZE", 10), ("MAX_PITCH", 11),
    ("MAX_REGISTERS_PER_BLOCK", 12), ("REGISTERS_PER_BLOCK", 12), ("CLOCK_RATE", 13), ("TEXTURE_ALIGNMENT", 14),
    ("GPU_OVERLAP", 15), ("MULTIPROCESSOR_COUNT", 16), ("KERNEL_EXEC_TIMEOUT", 17), ("INTEGRATED", 18),
    ("CAN_MAP_HOST_MEMORY", 19), ("COMPUTE_MODE", 20), ("MAXIMUM_TEXTURE1D_WIDTH", 21),
    ("MAXIMUM_TEXTURE2D_WIDTH", 22), ("MAXIMUM_TEXTURE2D_HEIGHT", 23), ("MAXIMUM_TEXTURE3D_WIDTH", 24),
    ("MAXIMUM_TEXTURE3D_HEIGHT", 25), ("MAXIMUM_TEXTURE3D_DEPTH", 26), ("MAXIMUM_TEXTURE2D_LAYERED_WIDTH", 27),
    ("MAXIMUM_TEXTURE2D_LAYERED_HEIGHT", 28), ("MAXIMUM_TEXTURE2D_LAYERED_LAYERS", 29),
    ("MAXIMUM_TEXTURE2D_ARRAY_WIDTH", 27), ("MAXIMUM_TEXTURE2D_ARRAY_HEIGHT", 28),
    ("MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES", 29), ("SURFACE_ALIGNMENT", 30), ("CONCURRENT_KERNELS", 31),
    ("ECC_ENABLED", 32), ("PCI_BUS_ID", 33), ("PCI_DEVICE_ID", 34), ("TCC_DRIVER", 35), ("MEMORY_CLOCK_RATE", 36),
    ("GLOBAL_MEMORY_BUS_WIDTH", 37), ("L2_CACHE_SIZE", 38), ("MAX_THREADS_PER_MULTIPROCESSOR", 39),
    ("ASYNC_ENGINE_COUNT", 40), ("UNIFIED_ADDRESSING", 41), ("MAXIMUM_TEXTURE1D_LAYERED_WIDTH", 42),
    ("MAXIMUM_TEXTURE1D_LAYERED_LAYERS", 43), ("CAN_TEX2D_GATHER", 44), ("MAXIMUM_TEXTURE2D_GATHER_WIDTH", 45),
    ("MAXIMUM_TEXTURE2D_GATHER_HEIGHT", 46), ("MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE", 47),
    ("MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE", 48), ("MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE", 49), ("PCI_DOMAIN_ID", 50),
    ("TEXTURE_PITCH_ALIGNMENT", 51), ("MAXIMUM_TEXTURECUBEMAP_WIDTH", 52),
    ("MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH", 53), ("MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS", 54),
    ("MAXIMUM_SURFACE1D_WIDTH", 55), ("MAXIMUM_SURFACE2D_WIDTH", 56), ("MAXIMUM_SURFACE2D_HEIGHT", 57),
    ("MAXIMUM_SURFACE3D_WIDTH", 58), ("MAXIMUM_SURFACE3D_HEIGHT", 59), ("MAXIMUM_SURFACE3D_DEPTH", 60),
    ("MAXIMUM_SURFACE1D_LAYERED_WIDTH", 61), ("MAXIMUM_SURFACE1D_LAYERED_LAYERS", 62),
    ("MAXIMUM_SURFACE2D_LAYERED_WIDTH", 63), ("MAXIMUM_SURFACE2D_LAYERED_HEIGHT", 64),
    ("MAXIMUM_SURFACE2D_LAYERED_LAYERS", 65), ("MAXIMUM_SURFACECUBEMAP_WIDTH", 66),
    ("MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH", 67), ("MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS", 68),
    ("MAXIMUM_TEXTURE1D_LINEAR_WIDTH", 69), ("MAXIMUM_TEXTURE2D_LINEAR_WIDTH", 70),
    ("MAXIMUM_TEXTURE2D_LINEAR_HEIGHT", 71), ("MAXIMUM_TEXTURE2D_LINEAR_PITCH", 72),
    ("MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH", 73), ("MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT", 74),
    ("COMPUTE_CAPABILITY_MAJOR", 75), ("COMPUTE_CAPABILITY_MINOR", 76), ("MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH", 77),
    ("STREAM_PRIORITIES_SUPPORTED", 78), ("GLOBAL_L1_CACHE_SUPPORTED", 79), ("LOCAL_L1_CACHE_SUPPORTED", 80),
    ("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 81), ("MAX_REGISTERS_PER_MULTIPROCESSOR", 82), ("MANAGED_MEMORY", 83),
    ("MULTI_GPU_BOARD", 84), ("MULTI_GPU_BOARD_GROUP_ID", 85), ("HOST_NATIVE_ATOMIC_SUPPORTED", 86),
    ("SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO", 87), ("PAGEABLE_MEMORY_ACCESS", 88), ("CONCURRENT_MANAGED_ACCESS", 89),
    ("COMPUTE_PREEMPTION_SUPPORTED", 90), ("CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", 91),
    ("CAN_USE_STREAM_MEM_OPS_V1", 92), ("CAN_USE_64_BIT_STREAM_MEM_OPS_V1", 93),
    ("CAN_USE_STREAM_WAIT_VALUE_NOR_V1", 94), ("COOPERATIVE_LAUNCH", 95), ("COOPERATIVE_MULTI_DEVICE_LAUNCH", 96),
    ("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 97), ("CAN_FLUSH_REMOTE_WRITES", 98), ("HOST_REGISTER_SUPPORTED", 99),
    ("PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES", 100), ("DIRECT_MANAGED_MEM_ACCESS_FROM_HOST", 101),
    ("VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED", 102), ("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 102),
    ("HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", 103), ("HANDLE_TYPE_WIN32_HANDLE_SUPPORTED", 104),
    ("HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED", 105), ("MAX_BLOCKS_PER_MULTIPROCESSOR", 106),
    ("GENERIC_COMPRESSION_SUPPORTED", 107), ("MAX_PERSISTING_L2_CACHE_SIZE", 108),
    ("MAX_ACCESS_POLICY_WINDOW_SIZE", 109), ("GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED", 110),
    ("RESERVED_SHARED_MEMORY_PER_BLOCK", 111), ("SPARSE_CUDA_ARRAY_SUPPORTED", 112),
    ("READ_ONLY_HOST_REGISTER_SUPPORTED", 113), ("TIMELINE_SEMAPHORE_INTEROP_SUPPORTED", 114),
    ("MEMORY_POOLS_SUPPORTED", 115), ("GPU_DIRECT_RDMA_SUPPORTED", 116),
    ("GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS", 117), ("GPU_DIRECT_RDMA_WRITES_ORDERING", 118),
    ("MEMPOOL_SUPPORTED_HANDLE_TYPES", 119), ("CLUSTER_LAUNCH", 120), ("DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED", 121),
    ("CAN_USE_64_BIT_STREAM_MEM_OPS", 122), ("CAN_USE_STREAM_WAIT_VALUE_NOR", 123), ("DMA_BUF_SUPPORTED", 124),
    ("IPC_EVENT_SUPPORTED", 125), ("MEM_SYNC_DOMAIN_COUNT", 126), ("TENSOR_MAP_ACCESS_SUPPORTED", 127),
    ("HANDLE_TYPE_FABRIC_SUPPORTED", 128), ("UNIFIED_FUNCTION_POINTERS", 129), ("NUMA_CONFIG", 130),
    ("NUMA_ID", 131), ("MULTICAST_SUPPORTED", 132), ("MPS_ENABLED", 133), ("HOST_NUMA_ID", 134),
    ("D3D12_CIG_SUPPORTED", 135), ("MEM_DECOMPRESS_ALGORITHM_MASK", 136), ("MEM_DECOMPRESS_MAXIMUM_LENGTH", 137),
    ("VULKAN_CIG_SUPPORTED", 138), ("GPU_PCI_DEVICE_ID", 139), ("GPU_PCI_SUBSYSTEM_ID", 140),
    ("HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 141), ("HOST_NUMA_MEMORY_POOLS_SUPPORTED", 142),
    ("HOST_NUMA_MULTINODE_IPC_SUPPORTED", 143), ("HOST_MEMORY_POOLS_SUPPORTED", 144),
    ("HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 145), ("HOST_ALLOC_DMA_BUF_SUPPORTED", 146),
    ("ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED", 147),
)

device_attribute = enum.IntEnum("device_attribute", _DEVICE_ATTRIBUTES, module=__name__)
device_attribute.__doc__ = "CUdevice_attribute numbers by name: Device.get_attribute(device_attribute.WARP_SIZE)."
device_attribute.__str__ = lambda self: self.name  # PyCUDA's str(): "WARP_SIZE"


class compute_mode(enum.IntEnum):  # noqa: N801
    DEFAULT = 0
    PROHIBITED = 2
    EXCLUSIVE_PROCESS = 3


class limit(enum.IntEnum):  # noqa: N801
    """CUlimit: Context.set_limit(limit.PRINTF_FIFO_SIZE, bytes)."""

    STACK_SIZE = 0
    PRINTF_FIFO_SIZE = 1
    MALLOC_HEAP_SIZE = 2
    DEV_RUNTIME_SYNC_DEPTH = 3
    DEV_RUNTIME_PENDING_LAUNCH_COUNT = 4
    MAX_L2_FETCH_GRANULARITY = 5
    PERSISTING_L2_CACHE_SIZE = 6


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
        """The value of one CUdevice_attribute (a ``device_attribute`` or its name), read
        with cuDeviceGetAttribute."""
        if isinstance(attr, str):
            try:
                attr = device_attribute[attr.upper()]
            except KeyError:
                raise LogicError(f"no device attribute '{attr}': use a name of cuk.driver.device_attribute") from None
        return _cuk.device_attribute(self.ordinal, int(attr))

    def get_attributes(self):
        """{device_attribute: value} for every attribute this driver knows (those it
        rejects, newer than the driver, are left out)."""
        out = {}
        for att in device_attribute:  # aliases are skipped: one entry per number
            try:
                out[att] = _cuk.device_attribute(self.ordinal, int(att))
            except LogicError:
                pass
        return out

    def __getattr__(self, name):
        # PyCUDA's dev.max_threads_per_block, dev.compute_mode, ...
        if name.startswith("_") or name.upper() not in device_attribute.__members__:
            raise AttributeError(f"'Device' object has no attribute '{name}'")
        value = self.get_attribute(device_attribute[name.upper()])
        return compute_mode(value) if name == "compute_mode" and value in compute_mode._value2member_map_ else value

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

    @staticmethod
    def set_limit(which, value):
        """cuCtxSetLimit on the current device's primary context (``limit.*``)."""
        _cuk.ctx_limit(int(which), int(value))

    @staticmethod
    def get_limit(which):
        return _cuk.ctx_limit(int(which))


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
    """CUfunction_attribute numbers: Function.get_attribute(function_attribute.NUM_REGS)."""
    MAX_THREADS_PER_BLOCK = 0
    SHARED_SIZE_BYTES = 1
    CONST_SIZE_BYTES = 2
    LOCAL_SIZE_BYTES = 3
    NUM_REGS = 4
    PTX_VERSION = 5
    BINARY_VERSION = 6
    CACHE_MODE_CA = 7
    MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    PREFERRED_SHARED_MEMORY_CARVEOUT = 9


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


# ---- pointers held by other objects ----------------------------------------------------------


class PointerHolderBase:
    """Device memory owned elsewhere, as in PyCUDA: subclass it and define
    ``get_pointer()`` (the device address, an int). Instances go wherever a
    DeviceAllocation does: kernel arguments, ``memcpy_*``, ``int()``,
    ``GPUArray(gpudata=...)``."""

    def get_pointer(self):
        raise NotImplementedError(f"{type(self).__name__} must define get_pointer() (the device address, an int)")

    def __int__(self):
        return int(self.get_pointer())

    __index__ = __int__

    def __repr__(self):
        return f"<{type(self).__name__} at 0x{int(self):x}>"


# ---- modules from images, and linking ------------------------------------------------------------


class jit_input_type(enum.IntEnum):  # noqa: N801
    """What Linker.add_data/add_file are given (CUjitInputType's numbers, which nvJitLink
    shares)."""

    CUBIN = 1
    PTX = 2
    LTO_IR = 3
    FATBINARY = 4
    OBJECT = 5
    LIBRARY = 6


def _arch():
    """The real architecture of the current device ("sm_90")."""
    major, minor = Context.get_device().compute_capability()
    return f"sm_{major}{minor}"


class Module:
    """A module loaded from an image (``module_from_buffer``, ``Linker.link_module``)."""

    def __init__(self, mod):
        self._mod = mod

    def get_function(self, name):
        return Function(self._mod, name)

    def get_global(self, name):
        """(device pointer, size in bytes) of a __device__ or __constant__ variable."""
        return self._mod.get_global(name)

    def get_texref(self, name):
        raise LogicError("cuk has no texture references (CUDA 12 removed them): pass a pointer, or a "
                         "cudaTextureObject_t made elsewhere")


def module_from_buffer(buffer, options=None, message_handler=None):
    """Loads a cubin or PTX image (bytes) on the current device."""
    return Module(_cuk.module_load(bytes(buffer)))


def module_from_file(filename):
    with open(filename, "rb") as f:
        return module_from_buffer(f.read())


class Linker:
    """Links relocatable device code (PTX, cubins from ``-rdc=true``, libraries such as
    libcudadevrt.a) into one module with nvJitLink: PyCUDA's ``driver.Linker``. The link
    itself runs on the host; ``link_module`` loads the result on the current device."""

    def __init__(self, message_handler=None, options=None, log_verbose=False, arch=None):
        self._inputs = []
        self._options = [str(o) for o in (options or [])]
        self._arch = arch
        self._message_handler = message_handler

    def add_data(self, data, input_type, name="unknown"):
        self._inputs.append((int(input_type), bytes(data), str(name)))
        return self

    def add_file(self, filename, input_type):
        import os

        if not os.path.isfile(filename):
            raise LogicError(f"Linker.add_file: no file '{filename}'")
        self._inputs.append((int(input_type), str(filename), os.path.basename(filename)))
        return self

    def link(self):
        """The linked cubin (bytes); needs no GPU when the Linker was given ``arch``."""
        if not self._inputs:
            raise LogicError("Linker: nothing to link; add_data or add_file first")
        arch = self._arch or _arch()
        opts = [o for o in self._options if not o.startswith("-arch")] + [f"-arch={arch}"]
        cubin = _cuk.link(self._inputs, opts)
        if self._message_handler is not None:
            self._message_handler(True, "", "")
        return cubin

    def link_module(self):
        return module_from_buffer(self.link())

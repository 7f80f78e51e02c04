"""``cuda.core`` on cuk: NVIDIA's object model for CUDA from Python (devices, streams,
events, programs compiled by NVRTC, kernels, launch configurations, buffers and memory
resources, graphs), with cuda.core 1.x's names and semantics, over libcuk's runtime. Code
written for ``cuda.core`` ports by changing the import::

    from cuk.core import Device, LaunchConfig, Program, ProgramOptions, launch

What cuk does not have (yet) raises NotImplementedError naming it: IPC-shared and
virtual memory resources, texture and tensor-map objects, and conditional graph nodes
built by hand."""
import collections
import collections.abc
import dataclasses
import enum
import os
import threading
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from . import _cuk
from . import driver as _drv

# strided layouts and memory views (cuda.core's _StridedLayout, StridedMemoryView, cuda.core.utils)
from ._layout import _StridedLayout  # noqa: F401
from ._memview import (StridedMemoryView, _StridedMemoryViewProxy, args_viewable_as_strided_memory,  # noqa: F401
                       cast_to_3_tuple, view_as_array_interface, view_as_cai)

__all__ = [
    "Buffer", "CompilerBackendType", "ComputeCapability", "Context", "DLDeviceType", "Device", "DeviceMemoryResource", "DeviceMemoryResourceOptions", "Event",
    "EventOptions", "Graph", "GraphBuilder", "Kernel", "LaunchConfig", "Linker", "LinkerOptions", "MemoryResource",
    "LegacyPinnedMemoryResource", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Host", "ManagedBuffer", "ManagedMemoryResource", "ManagedMemoryResourceOptions", "ObjectCode", "PinnedMemoryResource", "PinnedMemoryResourceOptions", "Program", "ProgramOptions", "Stream", "StreamOptions", "StridedMemoryView", "args_viewable_as_strided_memory", "launch", "system",
]

ComputeCapability = collections.namedtuple("ComputeCapability", ("major", "minor"))


class CUDAError(RuntimeError):
    """A CUDA call failed (cuda.core's ``cuda.core.CUDAError``)."""


def _check_int(name, v, lo=0):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be at least {lo}, got {v}")
    return int(v)


# ---- system -------------------------------------------------------------------------------


class _System:
    """``cuda.core.system``: the machine's driver and devices."""

    @property
    def num_devices(self):
        return _cuk.device_count()

    @property
    def driver_version(self):
        v = _cuk.device_props(0)["driver_version"] if _cuk.device_count() else 0
        return (v // 1000, (v % 1000) // 10)

    @property
    def devices(self):
        return tuple(Device(i) for i in range(self.num_devices))

    def get_num_devices(self):
        return self.num_devices

    def get_driver_version(self):
        return self.driver_version


system = _System()


# ---- device ---------------------------------------------------------------------------------


class Context:
    """A device's primary context (cuda.core's ``Context``): what streams, events and
    buffers of that device live in. Equal for equal handles."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Context objects cannot be instantiated directly. Use Device.context or Stream.context")

    @classmethod
    def _of(cls, device_id):
        c = object.__new__(cls)
        c._dev = device_id
        c._handle = _cuk.device_context(device_id)
        return c

    @property
    def handle(self) -> int:
        return self._handle

    @property
    def device(self):
        return Device(self._dev)

    def __eq__(self, other):
        return isinstance(other, Context) and other._handle == self._handle

    def __hash__(self):
        return hash((Context, self._handle))

    def __repr__(self):
        return f"<Context handle={self._handle:#x} device={self._dev}>"


# The device attributes that are yes-or-no flags (cuda.core gives them as bools); the
# others are counts and sizes. HOST_NUMA_ID is a number, not a flag.
_FLAG_PREFIXES = ("CAN_", "SUPPORTS_", "UNIFIED_", "HOST_", "MANAGED_", "CONCURRENT_", "COOPERATIVE_", "ECC_",
                  "INTEGRATED", "GLOBAL_L1", "LOCAL_L1", "STREAM_PRIORITIES", "PAGEABLE", "DIRECT_", "GPU_DIRECT",
                  "MEMORY_POOLS", "VIRTUAL_", "HANDLE_", "TCC_", "KERNEL_EXEC", "IPC_", "DEFERRED_", "SPARSE_",
                  "TIMELINE_", "CLUSTER_LAUNCH", "READ_ONLY_HOST", "COMPUTE_PREEMPTION", "MPS_", "D3D12_", "VULKAN_",
                  "ONLY_PARTIAL", "GPU_OVERLAP", "MULTI_GPU_BOARD", "MULTICAST_", "DMA_BUF_", "TENSOR_MAP_",
                  "GENERIC_COMPRESSION_")


def _is_flag(key):
    return key != "HOST_NUMA_ID" and (key.startswith(_FLAG_PREFIXES) or key.endswith("_SUPPORTED"))


class DeviceProperties:
    """Every ``CUdevice_attribute`` of a device as a lower-case property
    (``dev.properties.max_threads_per_block``, ``.multiprocessor_count``, ...)."""

    def __init__(self, ordinal):
        self._ordinal = ordinal

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        key = name.upper()
        if key not in _drv.device_attribute.__members__:
            raise AttributeError(f"'DeviceProperties' has no attribute '{name}' (no such CUdevice_attribute)")
        v = _cuk.device_attribute(self._ordinal, int(_drv.device_attribute[key]))
        return bool(v) if _is_flag(key) and v in (0, 1) else v

    def __dir__(self):
        return [k.lower() for k in _drv.device_attribute.__members__]


_devices = {}
_tls = threading.local()


class Device:
    """A GPU (cuda.core's ``Device``): ``Device()`` is the current one (device 0 before any
    set_current), ``Device(i)`` the i-th. One object per device and thread is returned."""

    def __new__(cls, device_id: Optional[int] = None):
        n = _cuk.device_count()
        if device_id is None:
            device_id = getattr(_tls, "current", None)
            if device_id is None:
                device_id = _cuk.device_current() if n else 0
        device_id = _check_int("device_id", device_id)
        if device_id >= n:
            raise ValueError(f"device_id must be within [0, {n}), got {device_id}")
        d = _devices.get(device_id)
        if d is None:
            d = object.__new__(cls)
            d._id = device_id
            d._props = None
            d._mr = None
            _devices[device_id] = d
        return d

    @property
    def device_id(self) -> int:
        return self._id

    @classmethod
    def get_all_devices(cls):
        """Every device, in ordinal order."""
        return tuple(cls(i) for i in range(_cuk.device_count()))

    def __int__(self):
        return self._id

    def __index__(self):
        return self._id

    @property
    def _p(self):
        if self._props is None:
            self._props = _cuk.device_props(self._id)
        return self._props

    @property
    def name(self) -> str:
        return self._p["name"]

    @property
    def compute_capability(self) -> ComputeCapability:
        return ComputeCapability(*self._p["compute_capability"])

    @property
    def arch(self) -> str:
        """'90' for compute capability 9.0: what ``sm_`` and ``compute_`` take."""
        cc = self.compute_capability
        return f"{cc.major}{cc.minor}"

    @property
    def properties(self) -> DeviceProperties:
        return DeviceProperties(self._id)

    @property
    def pci_bus_id(self) -> str:
        p = self.properties
        return f"{p.pci_domain_id:08X}:{p.pci_bus_id:02X}:{p.pci_device_id:02X}.0"

    @property
    def uuid(self) -> str:
        """The device's UUID, as nvidia-smi prints it without its "GPU-" prefix."""
        h = _cuk.device_uuid(self._id).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    @property
    def context(self) -> "Context":
        return Context._of(self._id)

    def set_current(self, ctx=None):
        """Makes this device current on this thread (its primary context)."""
        if ctx is not None:
            raise NotImplementedError("set_current(ctx): cuk uses each device's primary context only")
        _cuk.device_select(self._id)
        _tls.current = self._id

    @property
    def memory_resource(self) -> "MemoryResource":
        if self._mr is None:
            self._mr = DeviceMemoryResource(self._id)
        return self._mr

    @memory_resource.setter
    def memory_resource(self, mr):
        if not isinstance(mr, MemoryResource):
            raise TypeError("memory_resource must be a MemoryResource")
        self._mr = mr

    @property
    def default_stream(self) -> "Stream":
        return Stream._legacy(self)

    def create_stream(self, obj=None, options: Optional["StreamOptions"] = None) -> "Stream":
        """A new stream (non-blocking by default), or a Stream over another library's
        (``obj`` with ``__cuda_stream__``)."""
        if obj is not None:
            return Stream._from_obj(obj, self)
        return Stream._new(self, options)

    def create_event(self, options: Optional["EventOptions"] = None) -> "Event":
        return Event._new(self, options)

    def allocate(self, size: int, stream: Optional["Stream"] = None) -> "Buffer":
        return self.memory_resource.allocate(size, stream)

    def sync(self):
        _cuk.device_select(self._id)
        _cuk.synchronize()

    def create_graph_builder(self) -> "GraphBuilder":
        return self.create_stream().create_graph_builder()

    def __repr__(self):
        return f"<Device {self._id} ({self.name})>"

    def __reduce__(self):
        return (Device, (self._id,))


# ---- streams and events ---------------------------------------------------------------------


@dataclasses.dataclass
class StreamOptions:
    nonblocking: bool = True
    priority: Optional[int] = None


class Stream:
    """A CUDA stream (cuda.core's ``Stream``). Make one with ``Device.create_stream``."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Stream objects cannot be instantiated directly. Use Device.create_stream()")

    @classmethod
    def _wrap(cls, device, handle, owner):
        s = object.__new__(cls)
        s._dev = device
        s._handle = handle
        s._owner = owner  # a cuk.driver.Stream we made, or the foreign object
        s._nonblocking = True
        s._priority = 0
        return s

    @classmethod
    def _new(cls, device, options):
        options = options or StreamOptions()
        prio = 0 if options.priority is None else _check_int("StreamOptions.priority", options.priority, lo=-(1 << 30))
        device.set_current()
        st = _cuk.Stream.__new__(_drv.Stream, 1 if options.nonblocking else 0, prio)
        s = cls._wrap(device, st.handle, st)
        s._nonblocking = bool(options.nonblocking)
        s._priority = st.priority
        return s

    @classmethod
    def _legacy(cls, device, handle=1):
        """The legacy (handle 1) or per-thread (2) default stream; device None: the
        current device's, whichever it is when the stream is used."""
        s = cls._wrap(device, handle, None)
        s._nonblocking = False
        return s

    @classmethod
    def from_handle(cls, handle: int) -> "Stream":
        """A Stream over a raw CUstream handle another library made (0: the legacy default
        stream); it does not own the stream."""
        h = _check_int("handle", handle)
        s = cls._wrap(None, h or 1, None)
        s._nonblocking = False  # not known for another library's stream
        return s

    @classmethod
    def _from_obj(cls, obj, device):
        if not hasattr(obj, "__cuda_stream__"):
            raise TypeError(f"{type(obj).__name__} has no __cuda_stream__: cannot make a Stream of it")
        info = obj.__cuda_stream__() if callable(obj.__cuda_stream__) else obj.__cuda_stream__
        if not (isinstance(info, tuple) and len(info) == 2):
            raise RuntimeError(f"__cuda_stream__ must give (version, handle), got {info!r}")
        return cls._wrap(device, int(info[1]) or 1, obj)

    @property
    def handle(self) -> int:
        return self._handle

    def __cuda_stream__(self):
        return (0, self._handle)

    @property
    def device(self) -> Device:
        return self._dev if self._dev is not None else Device()

    @property
    def context(self):
        return self.device.context

    @property
    def is_nonblocking(self) -> bool:
        return self._nonblocking

    @property
    def priority(self) -> int:
        return self._priority

    def _cuk(self):
        """What cuk's functions take as stream=."""
        return self._owner if isinstance(self._owner, _drv.Stream) else self._handle

    def sync(self):
        if isinstance(self._owner, _drv.Stream):
            self._owner.synchronize()
        else:
            e = self.record()
            e.sync()

    def record(self, event: Optional["Event"] = None, options: Optional["EventOptions"] = None) -> "Event":
        if event is None:
            event = Event._new(self.device, options)
        event._ev.record(self._cuk())
        event._recorded = True
        return event

    def wait(self, event_or_stream):
        if isinstance(event_or_stream, Event):
            ev = event_or_stream
        elif isinstance(event_or_stream, Stream):
            ev = event_or_stream.record()
        elif hasattr(event_or_stream, "__cuda_stream__"):
            ev = Stream._from_obj(event_or_stream, self.device).record()
        else:
            raise TypeError("wait() takes an Event or a Stream")
        _cuk.stream_wait_event_raw(self._handle, ev._ev)

    def create_graph_builder(self) -> "GraphBuilder":
        return GraphBuilder(self)

    def close(self):
        self._owner = None

    def __eq__(self, other):
        return isinstance(other, Stream) and other._handle == self._handle

    def __hash__(self):
        return hash((Stream, self._handle))

    def __repr__(self):
        return f"<Stream handle={self._handle:#x} context={self.context.handle:#x}>"


# cuda.core's default streams: the current device's legacy and per-thread default streams
LEGACY_DEFAULT_STREAM = Stream._legacy(None, 1)
PER_THREAD_DEFAULT_STREAM = Stream._legacy(None, 2)


@dataclasses.dataclass
class EventOptions:
    """cuda.core 1.x's event options (``timing_enabled``, ``blocking_sync``,
    ``ipc_enabled``); ``enable_timing`` and ``busy_waited_sync`` are cuda.core 0.x's names."""

    timing_enabled: bool = False
    blocking_sync: bool = False
    ipc_enabled: bool = False
    enable_timing: Optional[bool] = None
    busy_waited_sync: Optional[bool] = None


class Event:
    """A CUDA event (cuda.core's ``Event``): ``Stream.record()`` makes one; ``e2 - e1`` is
    the time between two timed events in milliseconds."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Event objects cannot be instantiated directly. Use Stream.record() or Device.create_event()")

    @classmethod
    def _new(cls, device, options):
        options = options or EventOptions()
        if options.ipc_enabled:
            raise NotImplementedError("EventOptions(ipc_enabled=True): cuk has no IPC events yet")
        e = object.__new__(cls)
        e._dev = device
        e._timing = bool(options.timing_enabled or options.enable_timing)
        e._blocking = bool(options.blocking_sync)
        e._recorded = False
        flags = (0 if e._timing else 2) | (1 if e._blocking else 0)  # CU_EVENT_DISABLE_TIMING, BLOCKING_SYNC
        e._ev = _cuk.Event.__new__(_drv.Event, flags)
        return e

    @property
    def context(self) -> Context:
        return self._dev.context

    @property
    def is_timing_enabled(self) -> bool:
        return self._timing

    @property
    def is_blocking_sync(self) -> bool:
        return self._blocking

    @property
    def ipc_descriptor(self):
        raise RuntimeError("this Event is not IPC-enabled (cuk has no IPC events yet)")

    @property
    def device(self):
        return self._dev

    @property
    def is_timing_disabled(self) -> bool:
        return not self._timing

    @property
    def is_sync_busy_waited(self) -> bool:
        return False

    @property
    def is_ipc_enabled(self) -> bool:
        return False

    @property
    def is_done(self) -> bool:
        return self._ev.query()

    def sync(self):
        self._ev.synchronize()

    def __sub__(self, other):
        """The milliseconds from ``other`` to this event, both recorded and complete."""
        if not isinstance(other, Event):
            return NotImplemented
        if not (self._timing and other._timing):
            raise RuntimeError("Both Events must be created with timing enabled: make them with "
                               "EventOptions(timing_enabled=True)")
        if not (self._recorded and other._recorded):
            raise RuntimeError("Both Events must be recorded on a stream (Stream.record) before their time is taken")
        if not (self.is_done and other.is_done):
            raise RuntimeError("One or both events have not completed: sync() the later one first")
        return float(self._ev.time_since(other._ev))

    def __rsub__(self, other):
        return NotImplemented

    def __isub__(self, other):
        return NotImplemented

    def __eq__(self, other):
        return isinstance(other, Event) and other._ev is self._ev

    def __hash__(self):
        return hash((Event, self._ev.handle))

    def close(self):
        pass

    @property
    def handle(self) -> int:
        return self._ev.handle

    def __repr__(self):
        return f"<Event handle={self._ev.handle:#x}>"


# ---- memory -----------------------------------------------------------------------------------


class MemoryResource:
    """Where Buffers come from (cuda.core's abstract ``MemoryResource``)."""

    def allocate(self, size, stream=None) -> "Buffer":
        raise NotImplementedError

    def deallocate(self, ptr, size, stream=None):
        raise NotImplementedError

    @property
    def is_device_accessible(self) -> bool:
        raise NotImplementedError

    @property
    def is_host_accessible(self) -> bool:
        raise NotImplementedError

    @property
    def device_id(self) -> int:
        raise NotImplementedError

    @property
    def is_ipc_enabled(self) -> bool:
        """Whether other processes can map this resource's memory: never in cuk yet."""
        return False


def _options(cls, options):
    """cuda.core takes an options dataclass or a dict of its fields."""
    if isinstance(options, dict):
        return cls(**options)
    if options is not None and not isinstance(options, cls):
        raise TypeError(f"options must be a {cls.__name__} or a dict, not {type(options).__name__}")
    return options


@dataclasses.dataclass
class DeviceMemoryResourceOptions:
    ipc_enabled: bool = False
    max_size: int = 0


class DeviceMemoryResource(MemoryResource):
    """Device memory from cuk's stream-ordered caching pool: a block allocated on a stream
    is reused by that stream at once and by another only after an event wait."""

    def __init__(self, device_id, options: Optional[DeviceMemoryResourceOptions] = None):
        options = _options(DeviceMemoryResourceOptions, options)
        self._dev = int(device_id)
        if options is not None and options.ipc_enabled:
            raise NotImplementedError("DeviceMemoryResourceOptions(ipc_enabled=True): cuk's pool has no IPC export yet")

    def allocate(self, size, stream=None) -> "Buffer":
        size = _check_int("size", size)
        Device(self._dev).set_current()
        st = stream._cuk() if isinstance(stream, Stream) else stream
        ptr = _cuk.mem_alloc_on(size, st)
        return Buffer._make(ptr, size, self, owned=True)

    def deallocate(self, ptr, size, stream=None):
        _cuk.mem_free(int(ptr))

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return False

    @property
    def device_id(self):
        return self._dev


@dataclasses.dataclass
class PinnedMemoryResourceOptions:
    """cuda.core's options of a pinned pool: cuk's pinned memory is not pooled, so only
    the defaults are taken (IPC and NUMA placement are not offered)."""

    ipc_enabled: bool = False
    max_size: int = 0
    numa_id: Optional[int] = None


class PinnedMemoryResource(MemoryResource):
    """Page-locked host memory (cuMemHostAlloc), reachable from every device."""

    def __init__(self, options: Optional[PinnedMemoryResourceOptions] = None):
        options = _options(PinnedMemoryResourceOptions, options)
        if options is not None and options.ipc_enabled:
            raise NotImplementedError("PinnedMemoryResourceOptions(ipc_enabled=True): cuk has no IPC-shared pinned memory")
        if options is not None and options.numa_id is not None:
            raise NotImplementedError("PinnedMemoryResourceOptions(numa_id=...): cuk does not place by NUMA node")
        self._held = {}

    def allocate(self, size, stream=None) -> "Buffer":
        size = _check_int("size", size)
        host = _cuk.host_alloc(max(size, 1))
        ptr = np.frombuffer(host, dtype=np.uint8).ctypes.data
        b = Buffer._make(ptr, size, self, owned=True)
        self._held[ptr] = host
        return b

    def deallocate(self, ptr, size, stream=None):
        self._held.pop(int(ptr), None)

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True

    @property
    def device_id(self):
        return -1


class LegacyPinnedMemoryResource(PinnedMemoryResource):
    """Pinned host memory from cuMemHostAlloc (cuda.core's LegacyPinnedMemoryResource)."""


class Host:
    """The host as a managed-memory location (cuda.core's ``Host``): ``Host()`` is host
    memory wherever the OS places it, ``Host(numa_id=n)`` that of NUMA node n,
    ``Host.numa_current()`` that of the calling thread's node. Immutable; one object per
    location."""

    _cache = {}

    def __new__(cls, numa_id: Optional[int] = None, *, is_numa_current: bool = False):
        if numa_id is not None and (isinstance(numa_id, bool) or not isinstance(numa_id, (int, np.integer))
                                    or numa_id < 0):
            raise ValueError(f"numa_id must be a non-negative int, got {numa_id!r}")
        if numa_id is not None and is_numa_current:
            raise ValueError("numa_id and is_numa_current are mutually exclusive")
        key = (None if numa_id is None else int(numa_id), bool(is_numa_current))
        h = cls._cache.get(key)
        if h is None:
            h = object.__new__(cls)
            object.__setattr__(h, "_key", key)
            cls._cache[key] = h
        return h

    @classmethod
    def numa_current(cls) -> "Host":
        return cls(is_numa_current=True)

    @property
    def numa_id(self) -> Optional[int]:
        return self._key[0]

    @property
    def is_numa_current(self) -> bool:
        return self._key[1]

    def __setattr__(self, name, value):
        raise AttributeError(f"Host is immutable: cannot set {name}")

    def __eq__(self, other):
        return isinstance(other, Host) and other._key == self._key

    def __hash__(self):
        return hash((Host, self._key))

    def __reduce__(self):
        return (_host_of, self._key)

    def __repr__(self):
        if self.is_numa_current:
            return "Host.numa_current()"
        return "Host()" if self.numa_id is None else f"Host(numa_id={self.numa_id})"


def _host_of(numa_id, is_numa_current):
    return Host(numa_id, is_numa_current=is_numa_current)


def _loc_id(location, what):
    """A Device, Host, device ordinal or -1 (the host) as cuk's location number (cuk.h:
    CUK_LOC_HOST -1, CUK_LOC_HOST_NUMA_CURRENT -3, CUK_LOC_HOST_NUMA(n) -16 - n)."""
    if isinstance(location, Host):
        return -3 if location.is_numa_current else -1 if location.numa_id is None else -16 - location.numa_id
    if isinstance(location, Device):
        return location.device_id
    if isinstance(location, bool) or not isinstance(location, (int, np.integer)):
        raise TypeError(f"{what}: a location is a Device, a Host, a device ordinal or -1 (the host), "
                        f"not {type(location).__name__}")
    loc = int(location)
    if loc == -1:
        return -1
    Device(loc)  # checks the ordinal
    return loc


def _loc_obj(loc):
    if loc == -2:
        return None
    if loc == -1:
        return Host()
    if loc == -3:
        return Host.numa_current()
    return Host(numa_id=-16 - loc) if loc <= -16 else Device(loc)


@dataclasses.dataclass
class ManagedMemoryResourceOptions:
    """Where managed memory prefers to live: ``preferred_location`` a device ordinal, -1
    for the host, or None (the driver decides); ``preferred_location_type`` "device",
    "host", "host_numa" (preferred_location a NUMA node, or None: the allocating thread's
    node) or None (read preferred_location as above)."""

    preferred_location: Optional[int] = None
    preferred_location_type: Optional[str] = None


class ManagedMemoryResource(MemoryResource):
    """Managed (unified) memory: one address valid on the host and every device, its pages
    moved by the driver to where they are used (cuMemAllocManaged). cuk never
    oversubscribes: a request larger than the device's free memory raises MemoryError
    rather than paging later. Allocations are not stream-ordered (``stream`` is accepted
    for cuda.core's signature); a buffer is freed when it is closed or collected."""

    def __init__(self, options: Optional[ManagedMemoryResourceOptions] = None):
        options = _options(ManagedMemoryResourceOptions, options)
        self._pref = None
        if options is not None:
            t, loc = options.preferred_location_type, options.preferred_location
            if t not in (None, "device", "host", "host_numa"):
                raise ValueError(f"preferred_location_type must be 'device', 'host', 'host_numa' or None, got {t!r}")
            if t == "host_numa":
                # a node, or (None) the allocating thread's node
                self._pref = _loc_id(Host.numa_current() if loc is None else Host(numa_id=loc), "ManagedMemoryResourceOptions")
            elif t == "host":
                if loc is not None:
                    raise ValueError("preferred_location_type='host' takes preferred_location=None")
                self._pref = -1
            elif t == "device":
                if loc is None or loc < 0:
                    raise ValueError(f"preferred_location_type='device' needs a device ordinal, got {loc!r}")
                self._pref = _loc_id(loc, "ManagedMemoryResourceOptions")
            elif loc is not None:
                self._pref = _loc_id(loc, "ManagedMemoryResourceOptions")

    def allocate(self, size, stream=None) -> "ManagedBuffer":
        size = _check_int("size", size)
        ptr = _cuk.managed_alloc(size)
        b = ManagedBuffer._make(ptr, size, self, owned=True)
        if self._pref is not None:
            try:
                _cuk.mem_advise(ptr, max(size, 1), 3, self._pref)
            except BaseException:
                b.close()
                raise
        return b

    def deallocate(self, ptr, size, stream=None):
        _cuk.managed_free(int(ptr))

    @property
    def preferred_location(self):
        return None if self._pref is None else _loc_obj(self._pref)

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True

    @property
    def device_id(self):
        return self._pref if self._pref is not None and self._pref >= 0 else Device().device_id

    def close(self):
        pass


class _AccessedBy(collections.abc.MutableSet):
    """A managed buffer's ``accessed_by``: the locations advised to map it, read from the
    driver each time; add() and discard() give the advice."""

    def __init__(self, buf):
        self._buf = buf

    def _now(self):
        return {_loc_obj(l) for l in self._buf._range()[3]}

    def __contains__(self, loc):
        return loc in self._now()

    def __iter__(self):
        return iter(self._now())

    def __len__(self):
        return len(self._now())

    def add(self, loc):
        self._buf._advise(5, loc)

    def discard(self, loc):
        self._buf._advise(6, loc)

    def __repr__(self):
        return f"accessed_by({sorted(map(repr, self._now()))})"


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (what ``__dlpack_device__`` gives first)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13


class Buffer:
    """A span of memory from a MemoryResource (cuda.core's ``Buffer``): ``handle`` is its
    address; close(stream) gives it back in that stream's order."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Buffer objects cannot be instantiated directly. Use MemoryResource.allocate() or "
                           "Buffer.from_handle()")

    @classmethod
    def _make(cls, ptr, size, mr, owned):
        b = object.__new__(cls)
        b._ptr = int(ptr)
        b._size = int(size)
        b._mr = mr
        b._owned = owned
        return b

    @classmethod
    def from_handle(cls, ptr, size, mr=None, owner=None):
        """A Buffer over memory cuk did not allocate; ``owner`` is kept alive with it."""
        b = cls._make(int(ptr), _check_int("size", size), mr, owned=False)
        b._owner = owner
        return b

    @property
    def handle(self) -> int:
        return self._ptr

    @property
    def size(self) -> int:
        return self._size

    @property
    def memory_resource(self):
        return self._mr

    @property
    def is_device_accessible(self):
        return self._mr.is_device_accessible if self._mr is not None else True

    @property
    def is_host_accessible(self):
        return self._mr.is_host_accessible if self._mr is not None else False

    @property
    def device_id(self):
        return self._mr.device_id if self._mr is not None else _cuk.device_current()

    def __int__(self):
        return self._ptr

    def close(self, stream=None):
        if self._owned and self._ptr:
            self._mr.deallocate(self._ptr, self._size, stream)
        self._ptr = 0
        self._size = 0
        self._owned = False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def copy_to(self, dst: Optional["Buffer"] = None, *, stream) -> "Buffer":
        if stream is None:
            raise ValueError("copy_to: stream must be given")
        if dst is None:
            dst = self._mr.allocate(self._size, stream) if self._mr is not None else Device().allocate(self._size, stream)
        if dst.size != self._size:
            raise ValueError(f"copy_to: the buffers' sizes differ ({self._size} and {dst.size} bytes)")
        _copy(dst, self, self._size, stream)
        return dst

    def copy_from(self, src: "Buffer", *, stream):
        if stream is None:
            raise ValueError("copy_from: stream must be given")
        if src.size != self._size:
            raise ValueError(f"copy_from: the buffers' sizes differ ({src.size} and {self._size} bytes)")
        _copy(self, src, self._size, stream)

    def fill(self, value, width=None, *, stream):
        """Fills the buffer with ``value``, ordered on ``stream``: an int 0-255 (a byte), or
        1, 2 or 4 bytes (bytes, or a NumPy scalar's) repeated; the size must be a multiple
        of the pattern. ``width`` (cuda.core 0.x): an int value written in that many bytes."""
        if isinstance(value, (bool, str)) or value is None:
            raise TypeError(f"Buffer.fill: value must be an int or 1, 2 or 4 bytes, not {type(value).__name__}")
        if isinstance(value, (int, np.integer)) and not isinstance(value, np.generic):
            w = 1 if width is None else int(width)
            if w not in (1, 2, 4):
                raise ValueError(f"Buffer.fill: width must be 1, 2 or 4, got {width!r}")
            if not 0 <= int(value) < 1 << (8 * w):
                raise OverflowError(f"Buffer.fill: {value} does not fit in {w} byte{'s' if w > 1 else ''}")
            pat = int(value).to_bytes(w, "little")
        else:
            try:
                pat = bytes(memoryview(value).cast("B"))
            except TypeError:
                raise TypeError(f"Buffer.fill: value must be an int or 1, 2 or 4 bytes, not {type(value).__name__}") from None
        if len(pat) not in (1, 2, 4):
            raise ValueError(f"Buffer.fill: a pattern is 1, 2 or 4 bytes, got {len(pat)}")
        if self._size % len(pat):
            raise ValueError(f"Buffer.fill: the buffer's {self._size} bytes are not a whole number of "
                             f"{len(pat)}-byte patterns")
        _cuk.memset_pattern(self._ptr, pat, self._size, _stream_arg(stream))

    def __dlpack_device__(self):
        # host-accessible memory as CPU memory (what NumPy takes), else CUDA memory
        return (DLDeviceType.kDLCPU, 0) if self.is_host_accessible else (DLDeviceType.kDLCUDA, self.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The bytes as a 1-D int8 tensor (cuda.core's convention)."""
        if self.is_host_accessible:
            import ctypes

            raw = (ctypes.c_int8 * self._size).from_address(self._ptr)
            host = np.frombuffer(raw, dtype=np.int8)
            if max_version is not None and np.lib.NumpyVersion(np.__version__) >= "2.1.0":
                # a versioned capsule: consumers keep it writable (NumPy imports the
                # unversioned kind read-only)
                return host.__dlpack__(max_version=max_version)
            return host.__dlpack__()
        d = _cuk.device_wrap(self._ptr, (self._size,), "int8", self)
        return d.__dlpack__(stream=stream)

    def __repr__(self):
        return f"<Buffer ptr={self._ptr:#x} size={self._size}>"


class ManagedBuffer(Buffer):
    """A Buffer of managed memory (from ManagedMemoryResource.allocate), with the driver's
    advice as properties: ``read_mostly``, ``preferred_location`` (a Device, a Host or
    None), ``accessed_by`` (a set of them), and ``prefetch(location, stream=)``."""

    @classmethod
    def from_handle(cls, ptr, size, mr=None, owner=None):
        """A Buffer over memory cuk did not allocate; ``owner`` is kept alive with it."""
        b = cls._make(int(ptr), _check_int("size", size), mr, owned=False)
        b._owner = owner
        return b

    def _live(self, what):
        if not self._ptr:
            raise RuntimeError(f"ManagedBuffer.{what}: the buffer is closed")
        return self._ptr, max(self._size, 1)

    def _range(self):
        p, n = self._live("advice")
        return _cuk.mem_range(p, n)

    def _advise(self, what, loc):
        p, n = self._live("advice")
        _cuk.mem_advise(p, n, what, _loc_id(loc, "ManagedBuffer") if loc is not None else -1)

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True

    @property
    def read_mostly(self) -> bool:
        return self._range()[0]

    @read_mostly.setter
    def read_mostly(self, on):
        self._advise(1 if on else 2, None)

    @property
    def preferred_location(self):
        return _loc_obj(self._range()[1])

    @preferred_location.setter
    def preferred_location(self, loc):
        if loc is None:
            self._advise(4, None)
        else:
            self._advise(3, loc)

    @property
    def accessed_by(self):
        return _AccessedBy(self)

    @accessed_by.setter
    def accessed_by(self, locs):
        want = {_loc_obj(_loc_id(l, "ManagedBuffer.accessed_by")) for l in locs}
        now = _AccessedBy(self)
        for l in set(now) - want:
            now.discard(l)
        for l in want:
            now.add(l)

    @property
    def last_prefetch_location(self):
        return _loc_obj(self._range()[2])

    def prefetch(self, location, *, stream):
        """Moves the pages to ``location`` (a Device, a Host, an ordinal or -1), ordered on
        ``stream``."""
        p, n = self._live("prefetch")
        if location is None:
            raise ValueError("ManagedBuffer.prefetch: a location is required (a Device, Host(), an ordinal or -1)")
        _cuk.mem_prefetch(p, n, _loc_id(location, "ManagedBuffer.prefetch"), _stream_arg(stream))

    def discard(self, *, stream):
        raise NotImplementedError("ManagedBuffer.discard: cuk does not call cuMemDiscardBatchAsync yet")

    def discard_prefetch(self, location, *, stream):
        raise NotImplementedError("ManagedBuffer.discard_prefetch: cuk does not call cuMemDiscardAndPrefetchBatchAsync yet")

    def __repr__(self):
        return f"<ManagedBuffer ptr={self._ptr:#x} size={self._size}>"


def _stream_arg(stream):
    if stream is None:
        return None
    if isinstance(stream, Stream):
        return stream._cuk()
    if isinstance(stream, GraphBuilder):
        return stream._stream._cuk()
    return stream


def _copy(dst, src, n, stream):
    if n:
        _cuk.memcpy_dtod(dst.handle, src.handle, n, _stream_arg(stream), True)


# ---- programs, object code, kernels -----------------------------------------------------------


def _formatted(opts, table):
    """Command-line options from (field, form) pairs: "-x" is given when the field is true,
    "-x={}" with the field's value when it is set, "-x=bool" as -x=true or -x=false when set."""
    out = []
    for field, form in table:
        v = getattr(opts, field)
        if v is None:
            continue
        if form.endswith("=bool"):
            out.append(f"{form[:-5]}={'true' if v else 'false'}")
        elif "{}" in form:
            out.append(form.format(int(v) if isinstance(v, (bool, int, np.integer)) else v))
        elif v:
            out.append(form)
    return out


@dataclasses.dataclass
class ProgramOptions:
    """NVRTC's options by name (cuda.core's ``ProgramOptions``); the ones cuk passes on."""

    name: Optional[str] = "default_program"
    arch: Optional[str] = None
    relocatable_device_code: Optional[bool] = None
    extensible_whole_program: Optional[bool] = None
    debug: Optional[bool] = None
    lineinfo: Optional[bool] = None
    device_code_optimize: Optional[bool] = None
    ptxas_options: Optional[Union[str, Sequence[str]]] = None
    max_register_count: Optional[int] = None
    ftz: Optional[bool] = None
    prec_sqrt: Optional[bool] = None
    prec_div: Optional[bool] = None
    fma: Optional[bool] = None
    use_fast_math: Optional[bool] = None
    extra_device_vectorization: Optional[bool] = None
    link_time_optimization: Optional[bool] = None
    gen_opt_lto: Optional[bool] = None
    define_macro: Optional[Union[str, Tuple[str, str], Sequence]] = None
    undefine_macro: Optional[Union[str, Sequence[str]]] = None
    include_path: Optional[Union[str, Sequence[str]]] = None
    pre_include: Optional[Union[str, Sequence[str]]] = None
    no_source_include: Optional[bool] = None
    std: Optional[str] = None
    builtin_move_forward: Optional[bool] = None
    builtin_initializer_list: Optional[bool] = None
    disable_warnings: Optional[bool] = None
    restrict: Optional[bool] = None
    device_as_default_execution_space: Optional[bool] = None
    device_int128: Optional[bool] = None
    optimization_info: Optional[str] = None
    no_display_error_number: Optional[bool] = None
    diag_error: Optional[Union[int, Sequence[int]]] = None
    diag_suppress: Optional[Union[int, Sequence[int]]] = None
    diag_warn: Optional[Union[int, Sequence[int]]] = None
    brief_diagnostics: Optional[bool] = None
    time: Optional[str] = None
    split_compile: Optional[int] = None
    fdevice_syntax_only: Optional[bool] = None
    minimal: Optional[bool] = None
    no_cache: Optional[bool] = None
    device_float128: Optional[bool] = None
    frandom_seed: Optional[str] = None
    ofast_compile: Optional[str] = None
    numba_debug: Optional[bool] = None
    pch: Optional[bool] = None
    create_pch: Optional[str] = None
    use_pch: Optional[str] = None
    pch_dir: Optional[str] = None
    pch_verbose: Optional[bool] = None
    pch_messages: Optional[bool] = None
    instantiate_templates_in_pch: Optional[bool] = None
    extra_sources: Optional[Sequence] = None

    def _as_nvrtc(self):
        o = []

        def many(v):
            return [v] if isinstance(v, (str, int)) else list(v)

        o += _formatted(self, (("relocatable_device_code", "-rdc=true"), ("extensible_whole_program", "-ewp"),
                               ("debug", "-G"), ("lineinfo", "-lineinfo")))
        if self.device_code_optimize is not None:
            o.append(f"-dopt={'on' if self.device_code_optimize else 'off'}")
        if self.ptxas_options is not None:
            o += [f"-Xptxas={x}" for x in many(self.ptxas_options)]
        o += _formatted(self, (("max_register_count", "-maxrregcount={}"), ("ftz", "-ftz=bool"),
                               ("prec_sqrt", "-prec-sqrt=bool"), ("prec_div", "-prec-div=bool"), ("fma", "-fmad=bool"),
                               ("use_fast_math", "-use_fast_math"),
                               ("extra_device_vectorization", "-extra-device-vectorization")))
        if self.link_time_optimization or self.gen_opt_lto:
            o.append("-dlto")
        if self.define_macro is not None:
            dm = self.define_macro
            for d in ([dm] if isinstance(dm, (str, tuple)) else dm):
                o.append(f"-D{d[0]}={d[1]}" if isinstance(d, tuple) else f"-D{d}")
        for form, v in (("-U{}", self.undefine_macro), ("-I{}", self.include_path), ("-include={}", self.pre_include)):
            if v is not None:
                o += [form.format(x) for x in many(v)]
        o += _formatted(self, (("no_source_include", "-no-source-include"), ("std", "-std={}"),
                               ("builtin_move_forward", "-builtin-move-forward=bool"),
                               ("builtin_initializer_list", "-builtin-initializer-list=bool"),
                               ("disable_warnings", "-w"), ("restrict", "-restrict"),
                               ("device_as_default_execution_space", "-default-device"),
                               ("device_int128", "-device-int128"), ("no_display_error_number", "-no-err-no")))
        for flag, v in (("-diag-error", self.diag_error), ("-diag-suppress", self.diag_suppress),
                        ("-diag-warn", self.diag_warn)):
            if v is not None:
                o.append(f"{flag}={','.join(str(x) for x in many(v))}")
        o += _formatted(self, (("brief_diagnostics", "-brief-diagnostics=true"), ("minimal", "-minimal")))
        o += _formatted(self, (("fdevice_syntax_only", "-fdevice-syntax-only"), ("no_cache", "-no-cache"),
                               ("device_float128", "-device-float128"), ("frandom_seed", "-frandom-seed={}"),
                               ("ofast_compile", "-Ofast-compile={}"), ("numba_debug", "-numba-debug"),
                               ("pch", "-pch"), ("create_pch", "--create-pch={}"), ("use_pch", "--use-pch={}"),
                               ("pch_dir", "--pch-dir={}"), ("pch_verbose", "--pch-verbose=bool"),
                               ("pch_messages", "--pch-messages=bool"),
                               ("instantiate_templates_in_pch", "--instantiate-templates-in-pch=bool")))
        if self.extra_sources:
            raise NotImplementedError("ProgramOptions(extra_sources=...): cuk compiles one C++ source per Program "
                                      "(extra sources are for NVVM, which cuk has no backend for)")
        return o


class CompilerBackendType(str, enum.Enum):
    """Which library compiles or links (cuda.core.typing's): a str, so it compares equal
    to "NVRTC" and "nvJitLink"."""

    NVRTC = "NVRTC"
    NVJITLINK = "nvJitLink"
    NVVM = "NVVM"
    DRIVER = "driver"

    def __str__(self):
        return self.value


_CODE_TYPES = ("c++", "ptx", "nvvm")
_TARGETS = ("ptx", "cubin", "ltoir")


class Program:
    """Source code and how to compile it (cuda.core's ``Program``): C++ through NVRTC, PTX
    through nvJitLink."""

    def __repr__(self):
        return f"<Program backend='{self.backend.value}'>"

    def __init__(self, code, code_type, options: Optional[ProgramOptions] = None):
        if not isinstance(code, (str, bytes)):
            raise TypeError("code must be a str (or bytes for PTX)")
        code_type = code_type.lower()
        if code_type not in _CODE_TYPES:
            raise RuntimeError(f"Unsupported code_type='{code_type}' (supported: {', '.join(_CODE_TYPES)})")
        if code_type == "nvvm":
            raise NotImplementedError("code_type='nvvm': cuk has no NVVM backend")
        self._code = code if isinstance(code, str) else code.decode()
        self._type = code_type
        self._opts = options if options is not None else ProgramOptions()
        if not isinstance(self._opts, ProgramOptions):
            raise TypeError("options must be a ProgramOptions")

    @property
    def backend(self) -> "CompilerBackendType":
        return CompilerBackendType.NVRTC if self._type == "c++" else CompilerBackendType.NVJITLINK

    @property
    def handle(self):
        return None

    def close(self):
        pass

    def _arch(self):
        a = self._opts.arch
        if a is None:
            return f"sm_{Device().arch}"
        return a if a.startswith(("sm_", "compute_")) else f"sm_{a}"

    def compile(self, target_type, name_expressions=(), logs=None) -> "ObjectCode":
        if target_type not in _TARGETS:
            raise ValueError(f"Unsupported target_type='{target_type}' (supported: {', '.join(_TARGETS)})")
        arch = self._arch()
        if self._type == "ptx":
            if target_type != "cubin":
                raise ValueError("a PTX program compiles to 'cubin' only")
            cubin = _cuk.link([(2, self._code.encode() + b"\0", self._opts.name or "program.ptx")], [f"-arch={arch}"])
            return ObjectCode._make(cubin, "cubin", {}, self._opts.name)
        opts = self._opts._as_nvrtc()
        if target_type == "ltoir" and "-dlto" not in opts:
            opts.append("-dlto")
        if target_type == "ptx" and arch.startswith("sm_"):
            arch = "compute_" + arch[3:]
        names = tuple(name_expressions)
        image, lowered, log = _cuk.nvrtc_compile_ex(self._code, opts, arch, target_type, names,
                                                    self._opts.name or "default_program")
        if logs is not None and log:
            logs.write(log)
        return ObjectCode._make(image, target_type, dict(zip(names, lowered)), self._opts.name)


class ObjectCode:
    """Compiled code (cuda.core's ``ObjectCode``): cubin, PTX or LTO-IR; ``get_kernel``
    loads it on the current device."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("ObjectCode objects cannot be instantiated directly. Use Program.compile() or "
                           "ObjectCode.from_cubin()/from_ptx()/from_ltoir()/from_fatbin()/from_object()/from_library()")

    @classmethod
    def _make(cls, code, code_type, names, name=None):
        o = object.__new__(cls)
        o._code = code
        o._type = code_type
        o._names = names
        o._name = name or ""
        o._mod = None
        return o

    @classmethod
    def _from(cls, module, code_type, name, symbol_mapping):
        if isinstance(module, (str, os.PathLike)) and not (isinstance(module, str) and "\n" in module):
            with open(module, "rb") as f:
                module = f.read()
        if isinstance(module, str):
            module = module.encode()
        return cls._make(bytes(module), code_type, dict(symbol_mapping or {}), name)

    def _loader(kind, doc):  # noqa: N805 (a helper of the class body, not a method)
        def load(cls, module, *, name="", symbol_mapping=None):
            return cls._from(module, kind, name, symbol_mapping)

        load.__name__ = load.__qualname__ = "from_" + kind
        load.__doc__ = doc + " (bytes, or a path)."
        return classmethod(load)

    from_cubin = _loader("cubin", "A cubin")
    from_ptx = _loader("ptx", "PTX text")
    from_ltoir = _loader("ltoir", "LTO-IR: input for a Linker")
    from_fatbin = _loader("fatbin", "A fat binary (cubins and PTX for several architectures): loaded as is, or linked")
    from_object = _loader("object", "Relocatable device code (nvcc -dc): input for a Linker")
    from_library = _loader("library", "An archive of relocatable device code (.a): input for a Linker")
    del _loader

    @property
    def code(self):
        return self._code

    @property
    def code_type(self):
        return self._type

    @property
    def symbol_mapping(self):
        """Name expressions to their lowered (mangled) names."""
        return dict(self._names)

    @property
    def name(self):
        return self._name

    @property
    def handle(self) -> int:
        """The loaded CUmodule (loading the code on the current device first)."""
        return self._module().handle

    def __repr__(self):
        h = self._mod.handle if self._mod is not None else 0
        return f"<ObjectCode handle={h:#x} code_type='{self._type}'>"

    def __reduce__(self):
        return (ObjectCode._make, (self._code, self._type, dict(self._names), self._name))

    def _module(self):
        if self._type in ("ltoir", "object", "library"):
            what = {"ltoir": "LTO-IR", "object": "relocatable device code", "library": "a library"}[self._type]
            raise RuntimeError(f"{what} cannot be loaded: link it with a Linker into a cubin first")
        if self._mod is None:
            code = self._code
            if self._type == "ptx" and not code.endswith(b"\0"):
                code = code + b"\0"
            self._mod = _cuk.module_load(code)
        return self._mod

    def get_kernel(self, name) -> "Kernel":
        if isinstance(name, bytes):
            name = name.decode()
        lowered = self._names.get(name, name)
        return Kernel._make(self._module().get_function(lowered), self)


class _KernelAttributes:
    _ATTRS = {"max_threads_per_block": 0, "shared_size_bytes": 1, "const_size_bytes": 2, "local_size_bytes": 3,
              "num_regs": 4, "ptx_version": 5, "binary_version": 6, "cache_mode_ca": 7,
              "max_dynamic_shared_size_bytes": 8, "preferred_shared_memory_carveout": 9}

    def __init__(self, k):
        self._k = k

    def __getitem__(self, device):
        """The attributes on a device (cuda.core's per-device view): a kernel of cuk is
        loaded on one device, so this checks the device and gives the same values."""
        Device(device.device_id if isinstance(device, Device) else device)
        return self

    def __getattr__(self, name):
        if name not in self._ATTRS:
            raise AttributeError(name)

        return _AttrInt(self._k._f.get_attribute(self._ATTRS[name]))


class _AttrInt(int):
    """A kernel attribute: an int (cuda.core 1.x reads ``attributes.num_regs``), also
    callable as cuda.core 0.x's ``attributes.num_regs(device_id=None)``."""

    def __call__(self, device_id=None):
        return int(self)


class _Occupancy:
    def __init__(self, k):
        self._k = k

    def available_dynamic_shared_memory_per_block(self, num_blocks_per_multiprocessor, block_size):
        """Bytes of dynamic shared memory each block may use with that many resident per SM."""
        return self._k._f.smem_available(int(num_blocks_per_multiprocessor), int(block_size))

    def max_active_blocks_per_multiprocessor(self, block_size, dynamic_shared_memory_size):
        return _cuk.occupancy(self._k._f, int(block_size), int(dynamic_shared_memory_size))[0]

    def max_potential_block_size(self, dynamic_shared_memory_needed, block_size_limit):
        """The block size (a multiple of the warp size, at most block_size_limit) that keeps
        the most threads resident, and the grid that fills the device with it.
        dynamic_shared_memory_needed: bytes, or a function of the block size giving them."""
        if callable(dynamic_shared_memory_needed):
            most = self._k.attributes.max_threads_per_block()
            limit = min(int(block_size_limit), most) if block_size_limit else most
            best = (0, 0, 0)  # (resident threads, block size, blocks per SM)
            for b in range(32, limit + 1, 32):
                n = self.max_active_blocks_per_multiprocessor(b, int(dynamic_shared_memory_needed(b)))
                if n * b >= best[0] and n > 0:
                    best = (n * b, b, n)
            sms = Device().properties.multiprocessor_count
            return collections.namedtuple("MaxPotentialBlockSizeOccupancyResult", ("min_grid_size", "max_block_size"))(
                best[2] * sms, best[1])
        per_sm, block = _cuk.occupancy(self._k._f, 0, int(dynamic_shared_memory_needed))
        block = min(block, int(block_size_limit)) if block_size_limit else block
        sms = Device().properties.multiprocessor_count
        return collections.namedtuple("MaxPotentialBlockSizeOccupancyResult", ("min_grid_size", "max_block_size"))(
            per_sm * sms, block)


class Kernel:
    """A kernel of loaded code (cuda.core's ``Kernel``)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Kernel objects cannot be instantiated directly. Use ObjectCode.get_kernel()")

    @classmethod
    def _make(cls, f, obj):
        k = object.__new__(cls)
        k._f = f
        k._obj = obj
        return k

    @property
    def attributes(self):
        return _KernelAttributes(self)

    @property
    def occupancy(self):
        return _Occupancy(self)

    @property
    def handle(self) -> int:
        """The CUfunction."""
        return self._f.handle

    def __eq__(self, other):
        return isinstance(other, Kernel) and other._f.handle == self._f.handle

    def __hash__(self):
        return hash((Kernel, self._f.handle))

    def __repr__(self):
        return f"<Kernel handle={self._f.handle:#x}>"

    @property
    def arguments_info(self):
        """Each parameter's (offset, size) in the kernel's parameter buffer."""
        out, i = [], 0
        while True:
            p = self._f.param_info(i)
            if p is None:
                return out
            out.append(ParamInfo(*p))
            i += 1

    @property
    def num_arguments(self) -> int:
        return len(self.arguments_info)


ParamInfo = collections.namedtuple("ParamInfo", ("offset", "size"))


# ---- launch ------------------------------------------------------------------------------------


def _dim3(name, v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if not isinstance(v, tuple) or not 1 <= len(v) <= 3:
        raise ValueError(f"{name} must be an int, or a tuple of 1 to 3 ints, got {v!r}")
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1:
            raise ValueError(f"{name} must be positive ints, got {v!r}")
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))


@dataclasses.dataclass
class LaunchConfig:
    """grid and block (an int or a 1-3 tuple), shmem_size (dynamic shared memory, bytes),
    cluster (blocks per thread-block cluster; compute capability 9.0), and
    cooperative_launch (grid-wide synchronisation)."""

    grid: Union[tuple, int] = None
    cluster: Union[tuple, int] = None
    block: Union[tuple, int] = None
    shmem_size: Optional[int] = None
    cooperative_launch: Optional[bool] = False

    def __post_init__(self):
        # with a cluster, grid counts clusters (cuda.core's convention): grid=4, cluster=2
        # launches 8 blocks
        self.grid = _dim3("grid", self.grid)
        self.block = _dim3("block", self.block)
        if self.cluster is not None:
            cc = Device().compute_capability
            if cc < (9, 0):
                raise RuntimeError(f"thread-block clusters need compute capability 9.0 (this device has "
                                   f"{cc.major}.{cc.minor})")
            self.cluster = _dim3("cluster", self.cluster)
        if self.shmem_size is None:
            self.shmem_size = 0
        self.shmem_size = _check_int("shmem_size", self.shmem_size)
        if self.cooperative_launch and not Device().properties.cooperative_launch:
            raise RuntimeError("this device does not support cooperative launches")


def _kernel_arg(a, i):
    """One kernel argument as the bytes cuk's launcher passes: a Buffer's address, NumPy
    scalars as they are, Python int as intptr_t, float as double, bool as bool, complex as
    complex<double>, ctypes scalars by value."""
    if isinstance(a, Buffer):
        return np.uint64(a.handle)
    if isinstance(a, np.generic):
        return a
    if isinstance(a, bool):
        return np.bool_(a)
    if isinstance(a, int):
        return np.intp(a)
    if isinstance(a, float):
        return np.float64(a)
    if isinstance(a, complex):
        return np.complex128(a)
    import ctypes

    if isinstance(a, ctypes._SimpleCData):
        return np.frombuffer(bytes(a), dtype=np.uint8).view(np.dtype(f"V{ctypes.sizeof(a)}"))[0]
    if hasattr(a, "__cuda_array_interface__"):
        return np.uint64(a.__cuda_array_interface__["data"][0])
    raise TypeError(f"kernel argument {i}: unsupported type {type(a).__name__} (pass a Buffer, a NumPy scalar, "
                    "an int, a float, a bool, a complex or a ctypes scalar)")


def launch(stream, config: LaunchConfig, kernel: Kernel, *kernel_args):
    """Queues kernel on stream (a Stream, a GraphBuilder, or an object with
    __cuda_stream__) with config's grid, block, shared memory, cluster and cooperation."""
    if isinstance(stream, GraphBuilder):
        stream = stream._stream
    if not isinstance(stream, Stream):
        if hasattr(stream, "__cuda_stream__"):
            stream = Stream._from_obj(stream, Device())
        else:
            raise ValueError(f"stream must be a Stream or have __cuda_stream__, got {type(stream).__name__}")
    if not isinstance(config, LaunchConfig):
        raise TypeError("config must be a LaunchConfig")
    if not isinstance(kernel, Kernel):
        raise TypeError("kernel must be a Kernel")
    args = tuple(_kernel_arg(a, i) for i, a in enumerate(kernel_args))
    grid = config.grid
    if config.cluster is not None:  # grid counts clusters: the driver takes blocks
        grid = tuple(g * c for g, c in zip(grid, config.cluster))
    _cuk.launch_ex(kernel._f, args, grid, config.block, config.shmem_size, stream._cuk(), config.cluster,
                   bool(config.cooperative_launch))


# ---- graphs ---------------------------------------------------------------------------------------


class Graph:
    """An executable graph (cuda.core's ``Graph``): ``launch(stream)`` replays it."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Graph objects cannot be instantiated directly. Use GraphBuilder.complete()")

    @classmethod
    def _make(cls, raw):
        g = object.__new__(cls)
        g._raw = raw
        return g

    def upload(self, stream):
        """Accepted: the first launch uploads the graph."""

    def launch(self, stream):
        self._raw.launch(_stream_arg(stream))

    def update(self, builder):
        raise NotImplementedError("Graph.update: capture the work again and complete a new graph")

    def close(self):
        self._raw.close()


class GraphBuilder:
    """Builds a graph by capturing the work queued on a stream between begin_building and
    end_building (cuda.core's ``GraphBuilder``); ``launch(builder, ...)`` records into it."""

    def __init__(self, stream):
        self._stream = stream
        self._raw = None
        self._building = False

    @property
    def stream(self):
        return self._stream

    @property
    def is_building(self):
        return self._building

    def __cuda_stream__(self):
        return self._stream.__cuda_stream__()

    def begin_building(self, mode="relaxed"):
        if mode not in ("global", "thread_local", "relaxed"):
            raise ValueError(f"Unsupported build mode: {mode}")
        if self._building:
            raise RuntimeError("the graph is being built already")
        _cuk.begin_capture(self._stream._cuk())
        self._building = True
        return self

    def end_building(self):
        if not self._building:
            raise RuntimeError("the graph is not being built: call begin_building() first")
        self._building = False
        self._raw = _cuk.end_capture(self._stream._cuk())
        return self

    def complete(self, options=None) -> Graph:
        if self._raw is None:
            raise RuntimeError("complete() needs a built graph: begin_building(), queue work, end_building()")
        g, self._raw = Graph._make(self._raw), None
        return g

    def split(self, count):
        raise NotImplementedError("GraphBuilder.split: cuk builds one stream's graph")

    def close(self):
        self._raw = None


# ---- linking ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class LinkerOptions:
    name: Optional[str] = "cuda_core_linker"
    arch: Optional[str] = None
    max_register_count: Optional[int] = None
    time: Optional[bool] = None
    verbose: Optional[bool] = None
    link_time_optimization: Optional[bool] = None
    ptx: Optional[bool] = None
    optimization_level: Optional[int] = None
    debug: Optional[bool] = None
    lineinfo: Optional[bool] = None
    ftz: Optional[bool] = None
    prec_div: Optional[bool] = None
    prec_sqrt: Optional[bool] = None
    fma: Optional[bool] = None
    kernels_used: Optional[Union[str, Sequence[str]]] = None
    variables_used: Optional[Union[str, Sequence[str]]] = None
    optimize_unused_variables: Optional[bool] = None
    ptxas_options: Optional[Union[str, Sequence[str]]] = None
    split_compile: Optional[int] = None
    split_compile_extended: Optional[int] = None
    no_cache: Optional[bool] = None

    def _as_nvjitlink(self):
        arch = self.arch or f"sm_{Device().arch}"
        o = [f"-arch={arch if arch.startswith(('sm_', 'compute_')) else 'sm_' + arch}"]
        o += _formatted(self, (("max_register_count", "-maxrregcount={}"), ("verbose", "-verbose"),
                               ("link_time_optimization", "-lto"), ("ptx", "-ptx"), ("optimization_level", "-O{}"),
                               ("debug", "-g"), ("lineinfo", "-lineinfo"), ("ftz", "-ftz=bool"),
                               ("prec_div", "-prec-div=bool"), ("prec_sqrt", "-prec-sqrt=bool"), ("fma", "-fma=bool")))
        if self.ptxas_options is not None:
            po = [self.ptxas_options] if isinstance(self.ptxas_options, str) else self.ptxas_options
            o += [f"-Xptxas={x}" for x in po]
        return o

    def as_bytes(self, backend: str = "nvjitlink"):
        """The options as nvJitLink takes them (a list of bytes). cuk links with nvJitLink
        only, so ``backend`` must be "nvjitlink"."""
        if str(backend).lower() != "nvjitlink":
            raise ValueError(f"as_bytes: cuk only supports 'nvjitlink' backend (it links with nvJitLink), got {backend!r}")
        return [x.encode() for x in self._as_nvjitlink()]


_KINDS = {"cubin": 1, "ptx": 2, "ltoir": 3, "fatbin": 4, "object": 5, "library": 6}


class Linker:
    """Links ObjectCodes (cubin, PTX, LTO-IR) into one with nvJitLink (cuda.core's
    ``Linker``)."""

    @classmethod
    def which_backend(cls) -> str:
        """The library that links: always "nvJitLink" in cuk (never the driver's cuLink)."""
        return "nvJitLink"

    def __init__(self, *object_codes, options: Optional[LinkerOptions] = None):
        if not object_codes:
            raise ValueError("At least one ObjectCode object must be provided")
        for o in object_codes:
            if not isinstance(o, ObjectCode):
                raise TypeError("Linker takes ObjectCode objects")
        self._objs = object_codes
        self._opts = options if options is not None else LinkerOptions()

    @property
    def backend(self) -> "CompilerBackendType":
        return CompilerBackendType.NVJITLINK

    def link(self, target_type) -> ObjectCode:
        if target_type not in ("cubin", "ptx"):
            raise ValueError(f"Unsupported target_type='{target_type}'")
        inputs = []
        names = {}
        for i, o in enumerate(self._objs):
            code = o.code if isinstance(o.code, bytes) else o.code.encode()
            if o.code_type == "ptx" and not code.endswith(b"\0"):
                code += b"\0"
            inputs.append((_KINDS[o.code_type], code, o.name or f"input{i}"))
            names.update(o._names)
        opts = self._opts._as_nvjitlink()
        if target_type == "ptx" and "-ptx" not in opts:
            opts.append("-ptx")
        out = _cuk.link(inputs, opts, target_type == "ptx")
        return ObjectCode._make(out, target_type, names, self._opts.name)

    def close(self):
        pass

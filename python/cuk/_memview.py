"""Strided memory views (cuda.core's ``StridedMemoryView`` and ``cuda.core.utils``): a
pointer, a _StridedLayout, a dtype and where the memory lives, taken from any object that
exports DLPack, the CUDA Array Interface or NumPy's array interface, or from a Buffer;
and exported again through DLPack. A view copies nothing: it keeps the exporting object
(or the DLPack tensor it took) alive for as long as it lives.

DLPack capsules are read and made with ctypes over the C structs of dlpack.h (v1.0)."""
import ctypes
import functools
import threading
import warnings

import numpy as np

from ._layout import _StridedLayout


@functools.lru_cache(maxsize=None)
def _bfloat16():
    """ml_dtypes' bfloat16 as a NumPy dtype, or None without ml_dtypes (bfloat16 views then
    have no dtype: .dtype says what to install). Imported when a view first needs it, not
    with cuk.core."""
    try:
        from ml_dtypes import bfloat16
    except ImportError:
        return None
    return np.dtype(bfloat16)

__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory", "cast_to_3_tuple",
           "view_as_cai", "view_as_array_interface", "view_as_dlpack"]


def _core():
    # cuk.core imports this module; Device and Buffer are looked up when used
    from . import core

    return core


def _dl():
    return _core().DLDeviceType


def _current_device_id():
    from . import _cuk

    try:
        return _cuk.device_current() if _cuk.device_count() else 0
    except Exception:  # no driver at all: host memory is still viewable
        return 0


# ---- dlpack.h ---------------------------------------------------------------------------------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_FLAG_READ_ONLY = 1
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_COMPLEX, _DL_BOOL = 0, 1, 2, 4, 5, 6


def _capi(name, restype, *argtypes):
    # a fresh function object per use: argtypes are per object, and a capsule is
    # passed as a PyObject here but as a raw pointer inside its destructor
    f = ctypes.pythonapi[name]
    f.restype, f.argtypes = restype, argtypes
    return f


_IsValid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_GetPointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_SetName = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_RawIsValid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_RawGetPointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_New = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _Destructor)

# capsule names live as long as the module (a capsule keeps a pointer to its name)
_NAME, _USED = b"dltensor", b"used_dltensor"
_NAME_V, _USED_V = b"dltensor_versioned", b"used_dltensor_versioned"


def _dtype_from_dl(code, bits, lanes):
    """A NumPy dtype for a DLPack type; None for bfloat16 without ml_dtypes (the view's
    dtype then raises)."""
    if lanes != 1:
        raise BufferError(f"DLPack tensors with {lanes}-lane vector types are not supported")
    if code == _DL_BFLOAT and bits == 16:
        return _bfloat16()
    kind = {_DL_INT: "i", _DL_UINT: "u", _DL_FLOAT: "f", _DL_COMPLEX: "c", _DL_BOOL: "b"}.get(code)
    if kind is None or bits % 8 or bits == 0:
        raise BufferError(f"Unsupported DLPack dtype (code {code}, {bits} bits)")
    try:
        return np.dtype("?" if kind == "b" else f"{kind}{bits // 8}")
    except TypeError:
        raise BufferError(f"Unsupported DLPack dtype (code {code}, {bits} bits): NumPy has no such type") from None


def _dtype_to_dl(dtype):
    if dtype is None:
        raise BufferError("Cannot export a StridedMemoryView without a dtype through DLPack; make the view with "
                          "a dtype (from_buffer(..., dtype=) or view(dtype=))")
    if dtype.fields is not None:
        raise BufferError(f"Structured dtypes ({dtype}) cannot be exported through DLPack")
    if not dtype.isnative:
        raise BufferError(f"Non-native-endian dtype {dtype} cannot be exported through DLPack; view it with the "
                          f"native byte order first")
    if dtype.kind == "V" and dtype == _bfloat16():  # ml_dtypes' bfloat16 is a NumPy "V" kind
        return _DL_BFLOAT, 16
    code = {"i": _DL_INT, "u": _DL_UINT, "f": _DL_FLOAT, "c": _DL_COMPLEX, "b": _DL_BOOL}.get(dtype.kind)
    if code is None:
        raise BufferError(f"Unsupported dtype for DLPack export: {dtype.str}")
    return code, dtype.itemsize * 8


class _DLOwner:
    """Owns a consumed DLPack tensor: calls its deleter when the last view goes."""

    __slots__ = ("_addr", "_deleter")

    def __init__(self, addr, deleter):
        self._addr, self._deleter = addr, deleter

    def __del__(self):
        if self._deleter:
            self._deleter(self._addr)
            self._deleter = None


# tensors this module exported and a consumer has not deleted yet: address -> what
# must stay alive (the structs, and the view and so its memory)
_exported = {}
_exported_lock = threading.Lock()


@_Deleter
def _delete_exported(addr):
    with _exported_lock:
        _exported.pop(addr, None)


@_Destructor
def _capsule_gone(raw):
    # A capsule nobody consumed still owns its tensor. (A Python-level destructor cannot
    # keep an exception that is propagating while the capsule dies, e.g. a consumer that
    # rejects the capsule: that error is reported as unraisable instead.)
    for name in (_NAME, _NAME_V):
        if _RawIsValid(raw, name):
            _delete_exported(_RawGetPointer(raw, name))
            return


# ---- the view -----------------------------------------------------------------------------


class StridedMemoryView:
    """A view of strided memory: ``ptr`` (of element (0, ..., 0)), ``shape``,
    ``strides`` (in items; None for C-contiguous), ``dtype``, ``device_id``,
    ``is_device_accessible``, ``readonly`` and ``exporting_obj``. Make one with
    from_dlpack, from_cuda_array_interface, from_array_interface, from_any_interface or
    from_buffer; ``view()`` re-slices or re-types it."""

    def __init__(self, obj=None, stream_ptr=None):
        # cuda.core's old constructor: still works, and says what replaces it
        if obj is None:
            warnings.warn("StridedMemoryView() is deprecated and views nothing; use StridedMemoryView.from_dlpack(), "
                          "from_any_interface() or from_buffer()", DeprecationWarning, stacklevel=2)
            self._init(0, None, None, -1, False, False, None)
            return
        proxy = _StridedMemoryViewProxy(obj)
        if proxy._protocol == "cai":
            warnings.warn("Constructing a StridedMemoryView from a CUDA-array-interface-supporting object is "
                          "deprecated; use StridedMemoryView.from_cuda_array_interface() or from_any_interface()",
                          DeprecationWarning, stacklevel=2)
        else:
            warnings.warn("StridedMemoryView(obj, stream_ptr) is deprecated; use StridedMemoryView.from_dlpack() "
                          "or from_any_interface()", DeprecationWarning, stacklevel=2)
        self._init_from(proxy.view(stream_ptr))

    def _init(self, ptr, layout, dtype, device_id, device_accessible, readonly, exporting_obj, *, owner=None,
              dl_device=None, dl_dtype=None):
        self._ptr = int(ptr)
        self._lay = layout
        self._dtype = dtype
        self._dl_dtype = dl_dtype  # (code, bits) of a type NumPy could not name
        self._device_id = device_id
        self._device_accessible = bool(device_accessible)
        self._readonly = bool(readonly)
        self._exporting_obj = exporting_obj
        self._owner = owner
        self._dl_device = dl_device

    def _init_from(self, other):
        self.__dict__.update(other.__dict__)

    @classmethod
    def _new(cls, *args, **kwargs):
        v = object.__new__(cls)
        v._init(*args, **kwargs)
        return v

    # ---- makers ---------------------------------------------------------------------------

    @classmethod
    def from_dlpack(cls, obj, stream_ptr=None):
        """A view of an object with ``__dlpack__``; ``stream_ptr``: the consumer's stream
        (-1: no ordering wanted) for device memory."""
        return view_as_dlpack(obj, stream_ptr)

    @classmethod
    def from_cuda_array_interface(cls, obj, stream_ptr=None):
        """A view of an object with ``__cuda_array_interface__`` (v3)."""
        return view_as_cai(obj, stream_ptr)

    @classmethod
    def from_array_interface(cls, obj):
        """A view of an object with NumPy's ``__array_interface__`` (v3): host memory."""
        return view_as_array_interface(obj)

    @classmethod
    def from_any_interface(cls, obj, stream_ptr=None):
        """A view through DLPack if ``obj`` has it, else the CUDA Array Interface, else
        NumPy's array interface."""
        return _StridedMemoryViewProxy(obj).view(stream_ptr)

    @classmethod
    def from_buffer(cls, buffer, shape, strides=None, *, itemsize=None, dtype=None, is_readonly=False):
        """A view of a Buffer's memory with this shape and strides (in items; None: C
        order); the item size from ``dtype`` or ``itemsize``."""
        if dtype is not None:
            dtype = np.dtype(dtype)
            if itemsize is not None and itemsize != dtype.itemsize:
                raise ValueError(f"itemsize {itemsize} does not match dtype.itemsize {dtype.itemsize}")
            itemsize = dtype.itemsize
        elif itemsize is None:
            raise ValueError("itemsize or dtype must be specified")
        layout = _StridedLayout(shape, strides, itemsize)
        lo, _ = layout.offset_bounds
        if lo < 0:
            raise ValueError(f"The layout reaches {-lo * layout.itemsize} bytes before the start of the buffer "
                             f"(shape {layout.shape}, strides {layout.strides}); a view of a buffer starts at its "
                             f"lowest address")
        need = layout.required_size_in_bytes()
        if need > buffer.size:
            raise ValueError(f"The buffer is too small for the layout (shape {layout.shape}, strides "
                             f"{layout.strides}, itemsize {itemsize}). Expected at least {need} bytes, got "
                             f"{buffer.size} bytes.")
        core = _core()
        DLDeviceType = core.DLDeviceType
        host, dev = bool(buffer.is_host_accessible), bool(buffer.is_device_accessible)
        if isinstance(buffer, core.ManagedBuffer):
            dl = DLDeviceType.kDLCUDAManaged
        else:
            dl = (DLDeviceType.kDLCUDAHost if host and dev else DLDeviceType.kDLCUDA if dev else DLDeviceType.kDLCPU)
        device_id = buffer.device_id
        return cls._new(int(buffer.handle) + layout.slice_offset_in_bytes, layout, dtype, device_id, dev,
                        is_readonly, buffer, dl_device=(int(dl), 0 if dl == DLDeviceType.kDLCPU else device_id))

    # ---- what it is ---------------------------------------------------------------------------

    @property
    def ptr(self) -> int:
        return self._ptr

    @property
    def _layout(self) -> _StridedLayout:
        if self._lay is None:
            raise ValueError("Cannot infer layout: this StridedMemoryView views nothing; make views with "
                             "StridedMemoryView.from_dlpack(), from_any_interface() or from_buffer()")
        return self._lay

    @property
    def shape(self):
        return self._layout.shape

    @property
    def strides(self):
        """Strides in items; None where the memory is C-contiguous and the exporter gave none."""
        return self._layout.strides

    @property
    def size(self) -> int:
        return self._layout.volume

    @property
    def dtype(self):
        if self._dtype is None and self._dl_dtype is not None:
            if _bfloat16() is None:
                raise NotImplementedError("This view holds bfloat16 data; its dtype requires `ml_dtypes` "
                                          "(pip install ml_dtypes)")
            self._dtype = _bfloat16()
        return self._dtype

    @property
    def device_id(self) -> int:
        return self._device_id

    @property
    def is_device_accessible(self) -> bool:
        return self._device_accessible

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def exporting_obj(self):
        return self._exporting_obj

    def __repr__(self):
        dt = self._dtype
        dts = type(dt).__name__ if dt is None else str(dt)
        shape = self._lay.shape if self._lay is not None else None
        strides = self._lay.strides if self._lay is not None else None
        return (f"StridedMemoryView(ptr={self._ptr:#x}, shape={shape}, strides={strides}, dtype={dts}, "
                f"device_id={self._device_id}, is_device_accessible={self._device_accessible}, "
                f"readonly={self._readonly}, exporting_obj={type(self._exporting_obj).__name__})")

    # ---- new views -------------------------------------------------------------------------------

    def view(self, layout=None, dtype=None):
        """The same memory under another layout (its slice_offset counts from this view's
        base, as a layout sliced from ``self._layout`` does) and/or dtype of the same item
        size; this view itself when neither is given."""
        if layout is None and dtype is None:
            return self
        base = self._layout
        if layout is None:
            layout = base
        elif not isinstance(layout, _StridedLayout):
            raise TypeError(f"layout must be a _StridedLayout, not {type(layout).__name__}")
        if dtype is None:
            dtype = self.dtype
        else:
            dtype = np.dtype(dtype)
        if dtype is not None and dtype.itemsize != layout.itemsize:
            raise ValueError(f"dtype {dtype} ({dtype.itemsize} bytes) does not match the layout's itemsize "
                             f"{layout.itemsize}; repack the layout (repacked) first")
        v = object.__new__(type(self))
        v.__dict__.update(self.__dict__)
        v._ptr = self._ptr - base.slice_offset_in_bytes + layout.slice_offset_in_bytes
        v._lay = layout
        v._dtype = dtype
        v._dl_dtype = None if dtype is not None else self._dl_dtype
        return v

    def copy_from(self, other, stream, **kwargs):
        raise NotImplementedError("StridedMemoryView.copy_from is not implemented in cuk; copy through "
                                  "Buffer.copy_from or an array library")

    def copy_to(self, other, stream, **kwargs):
        raise NotImplementedError("StridedMemoryView.copy_to is not implemented in cuk; copy through "
                                  "Buffer.copy_to or an array library")

    # ---- DLPack export ---------------------------------------------------------------------------

    def __dlpack_device__(self):
        DLDeviceType = _dl()
        if self._dl_device is not None:
            return (int(self._dl_device[0]), int(self._dl_device[1]))
        if self._device_accessible:
            return (int(DLDeviceType.kDLCUDA), self._device_id)
        return (int(DLDeviceType.kDLCPU), 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this view (versioned when ``max_version`` allows 1.x). No
        stream ordering is added: the view does not know the producer's stream."""
        if copy:
            raise BufferError("StridedMemoryView.__dlpack__ cannot copy (copy=True); export without copy")
        here = self.__dlpack_device__()
        if dl_device is not None and tuple(int(x) for x in dl_device) != here:
            raise BufferError(f"The view lives on DLPack device {here}, not {tuple(dl_device)}; copy it there first")
        layout = self._layout
        code, bits = _dtype_to_dl(self.dtype)
        versioned = max_version is not None and int(max_version[0]) >= 1
        if self._readonly and not versioned:
            raise BufferError("A read-only view can only be exported as a versioned DLPack tensor (max_version >= "
                              "(1, 0)): the unversioned kind has no read-only flag")
        nd = layout.ndim
        shape = (ctypes.c_int64 * max(nd, 1))(*layout.shape)
        strides = (ctypes.c_int64 * max(nd, 1))(*(layout.strides if layout.strides is not None
                                                  else _StridedLayout.dense(layout.shape, 1).strides))
        if versioned:
            mt = _DLManagedTensorVersioned(major=1, minor=0, flags=_FLAG_READ_ONLY if self._readonly else 0)
        else:
            mt = _DLManagedTensor()
        t = mt.dl_tensor
        t.data = self._ptr or None
        t.device = _DLDevice(*here)
        t.ndim = nd
        t.dtype = _DLDataType(code, bits, 1)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = 0
        mt.deleter = _delete_exported
        addr = ctypes.addressof(mt)
        with _exported_lock:
            _exported[addr] = (mt, shape, strides, self)
        return _New(addr, _NAME_V if versioned else _NAME, _capsule_gone)


# ---- the protocols --------------------------------------------------------------------------


def _layout_from(shape, strides_in_bytes, itemsize):
    return _StridedLayout(tuple(shape), None if strides_in_bytes is None else tuple(strides_in_bytes), itemsize,
                          divide_strides=True)


def view_as_dlpack(obj, stream_ptr, view=None):
    """A StridedMemoryView of ``obj.__dlpack__()`` (the versioned kind where offered)."""
    DLDeviceType = _dl()
    if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
        raise BufferError(f"{type(obj).__name__} does not support DLPack (no __dlpack__ / __dlpack_device__); "
                          f"try StridedMemoryView.from_any_interface()")
    dev_type, _ = obj.__dlpack_device__()
    on_cpu = int(dev_type) == DLDeviceType.kDLCPU
    if on_cpu or stream_ptr == -1:
        stream = None if on_cpu else -1
    elif stream_ptr is None:
        raise BufferError("stream=None is ambiguous for device memory: pass the consumer's stream handle, or -1 "
                          "for no stream ordering")
    else:
        stream = 1 if int(stream_ptr) == 0 else int(stream_ptr)  # 0 is not a DLPack stream: the legacy default
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0
        capsule = obj.__dlpack__(stream=stream)
    if _IsValid(capsule, _NAME_V):
        addr = _GetPointer(capsule, _NAME_V)
        mt = _DLManagedTensorVersioned.from_address(addr)
        if mt.major > 1:
            raise BufferError(f"DLPack {mt.major}.{mt.minor} tensors are not supported (1.x are)")
        readonly = bool(mt.flags & _FLAG_READ_ONLY)
        _SetName(capsule, _USED_V)
    elif _IsValid(capsule, _NAME):
        addr = _GetPointer(capsule, _NAME)
        mt = _DLManagedTensor.from_address(addr)
        readonly = False
        _SetName(capsule, _USED)
    else:
        raise BufferError(f"{type(obj).__name__}.__dlpack__ gave no DLPack tensor capsule")
    owner = _DLOwner(addr, mt.deleter if ctypes.cast(mt.deleter, ctypes.c_void_p).value else None)
    t = mt.dl_tensor
    nd = t.ndim
    shape = tuple(t.shape[i] for i in range(nd))
    strides = tuple(t.strides[i] for i in range(nd)) if nd and t.strides else None
    dtype = _dtype_from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    dl_dtype = (t.dtype.code, t.dtype.bits) if dtype is None else None
    itemsize = t.dtype.bits // 8
    layout = _StridedLayout(shape, strides, itemsize)
    dev = (int(t.device.device_type), int(t.device.device_id))
    ptr = (t.data or 0) + t.byte_offset
    on_device = dev[0] != DLDeviceType.kDLCPU
    v = view if view is not None else object.__new__(StridedMemoryView)
    v._init(ptr, layout, dtype, dev[1] if on_device else -1, on_device, readonly, obj, owner=owner,
            dl_device=dev, dl_dtype=dl_dtype)
    return v


def _interface(obj, attr, what):
    d = getattr(obj, attr)
    if int(d.get("version", 0)) < 3:
        raise BufferError(f"only {what} v3 or above is supported, got v{d.get('version')}")
    if d.get("mask") is not None:
        raise BufferError(f"{what}: mask is not supported")
    return d


def view_as_cai(obj, stream_ptr, view=None):
    """A StridedMemoryView of ``obj.__cuda_array_interface__``; the consumer stream
    ``stream_ptr`` waits for the producer's ``stream`` (-1: no ordering)."""
    cai = _interface(obj, "__cuda_array_interface__", "CUDA Array Interface")
    if stream_ptr is None:
        raise BufferError("stream=None is ambiguous: pass the consumer's stream handle, or -1 for no stream ordering")
    stream_ptr = int(stream_ptr)
    ptr, readonly = cai["data"]
    dtype = np.dtype(cai["typestr"])
    layout = _layout_from(cai["shape"], cai.get("strides"), dtype.itemsize)
    producer = cai.get("stream")
    if ptr and producer is not None and stream_ptr != -1 and int(producer) != stream_ptr:
        core = _core()
        core.Stream.from_handle(stream_ptr).wait(core.Stream.from_handle(int(producer)))
    device_id = _current_device_id()
    v = view if view is not None else object.__new__(StridedMemoryView)
    v._init(ptr or 0, layout, dtype, device_id, True, readonly, obj,
            dl_device=(int(_dl().kDLCUDA), device_id))
    return v


def view_as_array_interface(obj, view=None):
    """A StridedMemoryView of ``obj.__array_interface__`` (host memory)."""
    ai = _interface(obj, "__array_interface__", "NumPy Array Interface")
    data = ai.get("data")
    if not isinstance(data, tuple):
        raise BufferError("__array_interface__ without a (pointer, read-only) data tuple is not supported; "
                          "view the object through DLPack or NumPy first")
    ptr, readonly = data
    dtype = np.dtype(ai["typestr"])
    layout = _layout_from(ai["shape"], ai.get("strides"), dtype.itemsize)
    v = view if view is not None else object.__new__(StridedMemoryView)
    v._init(ptr or 0, layout, dtype, _current_device_id(), False, readonly, obj,
            dl_device=(int(_dl().kDLCPU), 0))
    return v


class _StridedMemoryViewProxy:
    """An argument of a function decorated with args_viewable_as_strided_memory:
    ``.view(stream_ptr)`` makes the StridedMemoryView when the function wants it."""

    __slots__ = ("obj", "has_dlpack", "_protocol")

    def __init__(self, obj):
        self.obj = obj
        if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            self._protocol = "dlpack"
        elif hasattr(obj, "__cuda_array_interface__"):
            self._protocol = "cai"
        elif hasattr(obj, "__array_interface__"):
            self._protocol = "array"
        else:
            raise BufferError(f"{type(obj).__name__} does not support any data exchange protocol (DLPack, the CUDA "
                              f"Array Interface or NumPy's array interface)")
        self.has_dlpack = self._protocol == "dlpack"

    def view(self, stream_ptr=None):
        if self._protocol == "dlpack":
            return view_as_dlpack(self.obj, stream_ptr)
        if self._protocol == "cai":
            return view_as_cai(self.obj, stream_ptr)
        return view_as_array_interface(self.obj)


def args_viewable_as_strided_memory(arg_indices):
    """A decorator: the positional arguments at ``arg_indices`` reach the function as
    proxies whose ``.view(stream_ptr)`` gives a StridedMemoryView of them."""
    indices = tuple(arg_indices)

    def wrap(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            args = list(args)
            for i in indices:
                args[i] = _StridedMemoryViewProxy(args[i])
            return func(*args, **kwargs)

        return wrapped

    return wrap


# ---- a cuda.core.utils helper -------------------------------------------------------------------


def cast_to_3_tuple(label, cfg):
    """``cfg`` (an int or a tuple of up to 3 ints, each >= 1) as a 3-tuple padded with 1s;
    ``label`` names it in errors."""
    if isinstance(cfg, int) and not isinstance(cfg, bool):
        cfg = (cfg,)
        shown = cfg[0]
    else:
        shown = cfg
    if not isinstance(cfg, tuple):
        raise ValueError(f"{label} must be an int, or a tuple with up to 3 ints (got {cfg!r})")
    if len(cfg) > 3:
        raise ValueError(f"{label} must be an int, or a tuple with up to 3 ints (got tuple with length {len(cfg)})")
    if any(isinstance(x, bool) or not isinstance(x, int) for x in cfg):
        raise ValueError(f"{label} must be an int, or a tuple with up to 3 ints (got {cfg!r})")
    if any(x < 1 for x in cfg):
        raise ValueError(f"{label} value must be >= 1 (got {shown!r})")
    return cfg + (1,) * (3 - len(cfg))

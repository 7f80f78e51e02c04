"""cuk.core's strided layouts and memory views (python/cuk/_layout.py, _memview.py;
docs/core.md "Strided layouts and memory views"), on the CPU: every layout operation
against NumPy doing the same to an array (shape, byte strides, pointer offset and
contiguity flags must agree), and views over NumPy arrays and over objects with
__array_interface__ / __cuda_array_interface__ dicts, exported back through DLPack."""
import ctypes
import itertools
import math

import numpy as np
import pytest

import cukpath  # noqa: F401
from cuk.core import StridedMemoryView, _StridedLayout, args_viewable_as_strided_memory, cast_to_3_tuple


def arange(shape, itemsize=4, order="C"):
    dt = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[itemsize]
    return np.arange(math.prod(shape), dtype=dt).reshape(shape, order=order)


def layout_of(a, base):
    """The layout NumPy's strides give for a view ``a`` of ``base``."""
    lay = _StridedLayout(a.shape, a.strides, a.itemsize, divide_strides=True)
    return lay, a.ctypes.data - base.ctypes.data


def same(lay, a, base):
    """``lay`` describes ``a`` (a view of ``base``) as NumPy does."""
    assert lay.shape == a.shape and lay.itemsize == a.itemsize and lay.volume == a.size
    if a.size:
        assert lay.strides_in_bytes == a.strides
        if a.ndim:
            assert lay.slice_offset_in_bytes == a.ctypes.data - base.ctypes.data
    assert lay.is_contiguous_c == a.flags["C_CONTIGUOUS"]
    assert lay.is_contiguous_f == a.flags["F_CONTIGUOUS"]


SHAPES = [(), (5,), (3, 4), (2, 3, 4), (4, 1, 3), (2, 0, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_dense_layout_is_numpy_dense(shape, order):
    a = arange(shape, 2, order)
    lay = _StridedLayout.dense(shape, 2, order)
    same(lay, a, a)
    assert lay.is_dense and lay.is_unique and lay.offset_bounds == (0, a.size - 1)
    assert lay.required_size_in_bytes() == a.nbytes


def test_implicit_c_layout_keeps_no_strides():
    lay = _StridedLayout((3, 4), None, 8)
    assert lay.strides is None and lay.strides_in_bytes is None and lay.is_contiguous_c
    assert lay == _StridedLayout.dense((3, 4), 8)
    assert lay.sliced(np.s_[:]).strides == (4, 1)  # an operation makes strides explicit


def test_dense_with_axis_order_and_stride_order():
    lay = _StridedLayout.dense((2, 3, 4), 4, (1, 2, 0))  # axis 1 outermost, axis 0 innermost
    assert lay.strides == (1, 8, 2) and lay.stride_order == (1, 2, 0)
    assert lay.is_contiguous_any and not lay.is_contiguous_c and not lay.is_contiguous_f


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (4, 1, 3)], ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_permuted_is_transpose(shape, order):
    a = arange(shape, 4, order)
    for perm in itertools.permutations(range(len(shape))):
        same(_StridedLayout.dense(shape, 4, order).permuted(perm), a.transpose(perm), a)


@pytest.mark.parametrize("sl", [np.s_[1:], np.s_[::-1], np.s_[:, ::2], np.s_[1, :], np.s_[-1, 1:3],
                                np.s_[::-2, ::-1], np.s_[2:1], np.s_[:, 3], np.s_[1:2, 1:2]], ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_sliced_is_basic_indexing(sl, order):
    a = arange((4, 5), 8, order)
    lay = _StridedLayout.dense((4, 5), 8, order)
    same(lay[sl], a[sl], a)
    assert lay.sliced(sl) == lay[sl]


def test_slicing_twice_and_negative_offsets():
    a = arange((9,), 4)[::-1]
    lay, _ = layout_of(a, a)
    assert lay.strides == (-1,) and lay.slice_offset == 0 and not lay.is_dense
    b = lay[3:]
    assert b.slice_offset == -3 and b.offset_bounds == (-8, -3)


@pytest.mark.parametrize(("shape", "sl", "perm", "new"), [
    ((12,), None, None, (3, 4)),
    ((3, 4), None, (1, 0), (12,)),
    ((3, 4), None, (1, 0), (4, 3)),
    ((2, 3, 4), None, (0, 2, 1), (2, 12)),
    ((2, 3, 4), None, (1, 0, 2), (3, 2, 4)),
    ((10, 10), np.s_[::-1, :], None, (100,)),
    ((10, 10), np.s_[:, ::-1], None, (20, 5)),
    ((6, 4), np.s_[:, :-1], None, (6, 3, 1)),
    ((6, 4), np.s_[:, :-1], None, (2, 9)),
    ((5, 1, 4), np.s_[::2], None, (3, 4, 1)),
    ((7, 6, 5), None, None, (-1, 15)),
], ids=str)
def test_reshaped_is_numpy_reshape_without_copy(shape, sl, perm, new):
    base = arange(shape, 2)
    a, lay = base, _StridedLayout.dense(shape, 2)
    if perm is not None:
        a, lay = a.transpose(perm), lay.permuted(perm)
    if sl is not None:
        a, lay = a[sl], lay[sl]
    ref = a.reshape(new)
    if np.may_share_memory(ref, base):
        same(lay.reshaped(new), ref, base)
    else:  # NumPy had to copy: the layout cannot do it
        with pytest.raises(ValueError, match="Layout strides are incompatible with the new shape"):
            lay.reshaped(new)


@pytest.mark.parametrize(("new", "msg"), [
    ((5,), "The original volume 12 and the new volume 5 must be equal."),
    ((-2, 6), "Extents must be non-negative"),
    ((-1, -1), "There can be at most one -1 extent in a shape"),
    ((0, -1), "The -1 extent is ambiguous when the specified sub-volume is 0"),
    ((5, -1), "The original volume 12 must be divisible by the specified sub-volume 5"),
])
def test_reshaped_errors(new, msg):
    with pytest.raises(ValueError, match=msg):
        _StridedLayout.dense((3, 4), 4).reshaped(new)


def test_layout_errors_say_what_is_wrong():
    lay = _StridedLayout.dense((3, 4), 4)
    with pytest.raises(ValueError, match="axis 0 appears multiple times"):
        lay.permuted((0, 0))
    with pytest.raises(ValueError, match="out of range for"):
        lay.permuted((0, 2))
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        lay[:, ::0]
    with pytest.raises(ValueError, match="is greater than the number of dimensions"):
        lay[0, 0, 0]
    with pytest.raises(ValueError, match="out of range for axis 1"):
        lay[0, 4]
    with pytest.raises(TypeError, match="Expected slice instance or integer"):
        lay["x"]
    with pytest.raises(ValueError, match="strides must be divisible by itemsize"):
        _StridedLayout((2,), (6,), 4, divide_strides=True)


def test_flattened_squeezed_unsqueezed():
    a = arange((5, 1, 2, 4, 3), 4)[..., ::-2]
    lay, _ = layout_of(a, a)
    assert lay.flattened_axis_mask() == 0b01110
    flat = lay.flattened()
    assert flat.shape == (40, 2) and flat.strides == (3, -2)
    assert lay.flattened(start_axis=1, end_axis=2).shape == (5, 2, 4, 2)
    same(lay.squeezed(), a.squeeze(), a)
    for axes in [(0,), (2,), (5,), (0, 6), (1, 3)]:
        same(lay.unsqueezed(axes), np.expand_dims(a, axes), a)
    assert _StridedLayout.dense((), 4).flattened().shape == (1,)


@pytest.mark.parametrize(("sl", "new"), [(np.s_[:], (3, 4, 5)), (np.s_[:, 2:3], (2, 4, 7)),
                                         (np.s_[-1:, ::-1], (4, 1, 5))], ids=str)
def test_broadcast_to_is_numpy_broadcast_to(sl, new):
    base = arange((4, 5), 2)
    a, lay = base[sl], _StridedLayout.dense((4, 5), 2)[sl]
    b = lay.broadcast_to(new)
    same(b, np.broadcast_to(a, new), base)
    assert not b.is_unique


def test_repacked_is_numpy_view_with_a_wider_dtype():
    a = arange((6, 8), 2)[1:, 4:]
    lay, _ = layout_of(a, arange((6, 8), 2))
    assert lay.max_compatible_itemsize() == 8
    packed = lay.repacked(8)
    ref = a.view(np.int64)
    assert packed.shape == ref.shape and packed.strides_in_bytes == ref.strides
    assert packed.slice_offset_in_bytes == lay.slice_offset_in_bytes
    assert packed.repacked(2) == lay
    with pytest.raises(ValueError, match="Cannot pack"):
        lay.repacked(16)


@pytest.mark.parametrize("order", ["C", "F", "K", (1, 0, 2)], ids=str)
def test_to_dense_is_numpy_copy(order):
    a = arange((3, 4, 5), 4).transpose(1, 0, 2)[::-1, 1:]
    lay, _ = layout_of(a, a)
    dense = lay.to_dense(order)
    if isinstance(order, str):
        ref = a.copy(order=order)
        assert dense.strides_in_bytes == ref.strides
    assert dense.is_dense and dense.shape == a.shape and dense.required_size_in_bytes() == a.nbytes


def test_layout_equality_and_hash():
    a, b = _StridedLayout.dense((5, 3), 4), _StridedLayout((5, 3), None, 4)
    assert a == b and hash(a) == hash(b) and a != a[1:] and a != "x"
    assert a.__eq__(None) is NotImplemented


# ---- memory views ------------------------------------------------------------------------------


def check_view(v, a, device_id=-1):
    assert v.ptr == a.ctypes.data and v.shape == a.shape and v.size == a.size
    assert v.dtype == a.dtype and v.exporting_obj is a
    assert v.strides is None and a.flags.c_contiguous or v.strides == tuple(s // a.itemsize for s in a.strides)
    assert v.device_id == device_id and v.is_device_accessible is False
    assert v.readonly is not a.flags.writeable


@pytest.mark.parametrize("a", [np.arange(6, dtype=np.float32), np.ones((6, 6))[::2, 1::2],
                               np.zeros((3, 4), order="F"), np.array(3.5, dtype=np.float16)],
                         ids=["1d", "strided", "fortran", "0d"])
def test_view_of_numpy_array(a):
    check_view(StridedMemoryView.from_any_interface(a, stream_ptr=-1), a)
    check_view(StridedMemoryView.from_dlpack(a, -1), a)
    v = StridedMemoryView.from_array_interface(a)
    check_view(v, a, device_id=v.device_id)
    assert v._layout.strides_in_bytes in (None, a.strides)


class WithArrayInterface:
    """Only NumPy's array interface, as a dict."""

    def __init__(self, a, **extra):
        self.a = a
        self.__array_interface__ = dict(a.__array_interface__, **extra)


def test_view_of_array_interface_dict():
    a = np.arange(20, dtype=np.int32).reshape(4, 5)[:, 1:]
    v = StridedMemoryView.from_any_interface(WithArrayInterface(a), stream_ptr=-1)
    assert v.ptr == a.ctypes.data and v.strides == (5, 1) and v.dtype == np.int32 and not v.readonly
    with pytest.raises(BufferError, match="v3 or above"):
        StridedMemoryView.from_array_interface(WithArrayInterface(a, version=2))
    with pytest.raises(BufferError, match="mask is not supported"):
        StridedMemoryView.from_array_interface(WithArrayInterface(a, mask=np.ones(a.shape, bool)))
    with pytest.raises(ValueError, match="strides must be divisible by itemsize"):
        StridedMemoryView.from_array_interface(np.zeros(2, dtype="i4,f8")["f1"])


class WithCAI:
    def __init__(self, **cai):
        self.__cuda_array_interface__ = dict({"version": 3, "typestr": "<f8", "data": (0, False)}, **cai)


def test_view_of_cuda_array_interface_dict():
    v = StridedMemoryView.from_cuda_array_interface(WithCAI(shape=(0, 3), strides=(24, 8)), stream_ptr=-1)
    assert v.size == 0 and v.shape == (0, 3) and v.strides == (3, 1) and v.is_device_accessible
    v = StridedMemoryView.from_any_interface(WithCAI(shape=(4, 2), data=(0x1000, True)), stream_ptr=-1)
    assert v.ptr == 0x1000 and v.readonly and v.strides is None and v.dtype == np.float64
    assert v.__dlpack_device__()[0] == 2  # kDLCUDA
    with pytest.raises(BufferError, match="stream=None is ambiguous"):
        StridedMemoryView.from_cuda_array_interface(WithCAI(shape=(2,)), stream_ptr=None)
    with pytest.raises(BufferError, match="v3 or above"):
        StridedMemoryView.from_cuda_array_interface(WithCAI(shape=(2,), version=2), stream_ptr=-1)
    with pytest.raises(ValueError, match="strides must be divisible by itemsize"):
        StridedMemoryView.from_cuda_array_interface(WithCAI(shape=(2,), strides=(10,)), stream_ptr=-1)
    with pytest.raises(BufferError, match="does not support any data exchange protocol"):
        StridedMemoryView.from_any_interface(object(), stream_ptr=-1)


def test_view_slices_and_retypes_and_exports_through_dlpack():
    a = np.arange(60, dtype=np.int32).reshape(6, 10)
    v = StridedMemoryView.from_dlpack(a, -1)
    sub = v.view(v._layout[1:4, ::-3])
    assert sub.ptr == a[1:4, ::-3].ctypes.data and sub.shape == (3, 4)
    assert np.array_equal(np.from_dlpack(sub), a[1:4, ::-3])
    assert v.__dlpack_device__() == (1, 0)
    assert v.view(dtype=np.float32)._layout == v._layout and v.view() is v
    with pytest.raises(BufferError, match="Non-native-endian"):
        v.view(dtype=np.dtype(np.int32).newbyteorder("S")).__dlpack__()
    with pytest.raises(BufferError, match="Unsupported dtype for DLPack export"):
        v.view(dtype=np.dtype("V4")).__dlpack__()
    # a capsule nobody takes frees its tensor
    capsule = v.__dlpack__()
    assert ctypes.pythonapi.PyCapsule_IsValid(ctypes.py_object(capsule), b"dltensor") == 1
    del capsule
    from cuk import _memview
    assert not _memview._exported


def test_args_viewable_as_strided_memory_and_cast_to_3_tuple():
    @args_viewable_as_strided_memory((1,))
    def f(scale, arr):
        return arr.view(-1)

    a = np.zeros((2, 3))
    assert f(2, a).exporting_obj is a and f(2, a).shape == (2, 3)
    assert cast_to_3_tuple("grid", 4) == (4, 1, 1) and cast_to_3_tuple("grid", (2, 3)) == (2, 3, 1)
    with pytest.raises(ValueError, match=r"grid value must be >= 1 \(got 0\)"):
        cast_to_3_tuple("grid", 0)


def test_the_example_of_docs_core_md():
    import os
    import re

    text = open(os.path.join(cukpath.ROOT, "docs", "core.md")).read()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "StridedMemoryView.from_any_interface" in b]
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/core.md", "exec"), {})

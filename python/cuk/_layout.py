"""Strided layouts (cuda.core's ``_StridedLayout``): the shape, strides, item size and
start offset of an n-dimensional view of memory, with the view operations NumPy has
(transpose, slice, reshape, squeeze, expand_dims, broadcast_to, a dtype view that packs
items) done on the layout alone, without the memory.

Strides and the slice offset count items, not bytes. A layout made with ``strides=None``
is C-contiguous and keeps ``strides`` None until an operation gives it explicit strides.
Where NumPy would give a view the same operation gives the same strides, so a layout and
an array that went through the same steps agree (the tests compare them)."""
import math
import operator

__all__ = ["_StridedLayout"]

# a packed item is at most this wide (the widest vector load, 16 bytes)
_MAX_PACKED_ITEMSIZE = 16


def _as_int(v, what):
    if isinstance(v, bool):
        raise TypeError(f"{what} must be an int, not bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(v).__name__}") from None


def _as_shape(shape, what="shape"):
    if isinstance(shape, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of ints, not {type(shape).__name__}")
    try:
        return (_as_int(shape, what),)
    except TypeError:
        pass
    try:
        items = tuple(shape)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints, not {type(shape).__name__}") from None
    return tuple(_as_int(x, f"{what} entry") for x in items)


def _c_strides(shape):
    """Dense row-major strides of ``shape``, in items."""
    out = [0] * len(shape)
    s = 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = s
        s *= shape[i]
    return tuple(out)


def _dense_strides(shape, order):
    """Dense strides laying the axes out in ``order`` (outermost first), in items; all
    zero for an empty shape, as every derived empty layout has."""
    if math.prod(shape) == 0:
        return (0,) * len(shape)
    out = [0] * len(shape)
    s = 1
    for ax in reversed(order):
        out[ax] = s
        s *= shape[ax]
    return tuple(out)


def _contig_c(shape, strides):
    """NumPy's C_CONTIGUOUS rule: extent-1 axes' strides do not matter, nor do any
    strides of an empty array."""
    if math.prod(shape) == 0:
        return True
    want = 1
    for ext, st in zip(reversed(shape), reversed(strides)):
        if ext != 1:
            if st != want:
                return False
            want *= ext
    return True


def _norm_axis(ax, ndim, what="axis"):
    ax = _as_int(ax, what)
    if not -ndim <= ax < ndim:
        raise ValueError(f"{what} {ax} out of range for a {ndim}-dimensional layout")
    return ax + ndim if ax < 0 else ax


def _reshape_strides(shape, strides, new_shape):
    """The strides NumPy's no-copy ``reshape`` (C order) gives, or None where the
    axes that must merge are not contiguous with each other. A C-contiguous layout
    gets fresh row-major strides; otherwise runs of old axes are matched to runs of
    new axes of the same volume, each old run must be contiguous, and new extent-1
    axes left at the end take the last stride."""
    if _contig_c(shape, strides):
        return _c_strides(new_shape)
    old = [(e, s) for e, s in zip(shape, strides) if e != 1]
    new = [0] * len(new_shape)
    oi = ni = 0
    while ni < len(new_shape) and oi < len(old):
        nj, oj = ni + 1, oi + 1
        nvol, ovol = new_shape[ni], old[oi][0]
        while nvol != ovol:
            if nvol < ovol:
                nvol *= new_shape[nj]
                nj += 1
            else:
                ovol *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        new[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new[k - 1] = new[k] * new_shape[k]
        ni, oi = nj, oj
    last = new[ni - 1] if ni >= 1 else 1
    for k in range(ni, len(new_shape)):
        new[k] = last
    return tuple(new)


class _StridedLayout:
    """``_StridedLayout(shape, strides, itemsize, divide_strides=False)``: strides in
    items (or in bytes with ``divide_strides=True``), None for C-contiguous."""

    __slots__ = ("_shape", "_strides", "_itemsize", "_offset")

    def __init__(self, shape, strides, itemsize, divide_strides=False):
        shape = _as_shape(shape)
        if any(e < 0 for e in shape):
            raise ValueError(f"Extents must be non-negative, got shape {shape}")
        itemsize = _as_int(itemsize, "itemsize")
        if itemsize < 1:
            raise ValueError(f"itemsize must be positive, got {itemsize}")
        if strides is not None:
            strides = _as_shape(strides, "strides")
            if len(strides) != len(shape):
                raise ValueError(f"strides {strides} and shape {shape} must have the same length")
            if divide_strides:
                if any(s % itemsize for s in strides):
                    raise ValueError(f"strides must be divisible by itemsize: strides {strides} (in bytes), "
                                     f"itemsize {itemsize}")
                strides = tuple(s // itemsize for s in strides)
        self._shape, self._strides, self._itemsize, self._offset = shape, strides, itemsize, 0

    @classmethod
    def _make(cls, shape, strides, itemsize, offset=0):
        lay = object.__new__(cls)
        shape = tuple(shape)
        if strides is not None and math.prod(shape) == 0:
            strides = (0,) * len(shape)
        lay._shape, lay._strides, lay._itemsize, lay._offset = shape, strides, itemsize, offset
        return lay

    @classmethod
    def dense(cls, shape, itemsize, stride_order="C"):
        """A dense layout of ``shape``: ``stride_order`` "C" (row-major), "F"
        (column-major), or a permutation of the axes listing them outermost first."""
        shape = _as_shape(shape)
        if any(e < 0 for e in shape):
            raise ValueError(f"Extents must be non-negative, got shape {shape}")
        itemsize = _as_int(itemsize, "itemsize")
        if itemsize < 1:
            raise ValueError(f"itemsize must be positive, got {itemsize}")
        return cls._make(shape, _dense_strides(shape, _order_of(stride_order, len(shape))), itemsize)

    # ---- what the layout is -------------------------------------------------------------

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def shape(self):
        return self._shape

    @property
    def strides(self):
        """Strides in items, or None for an implicit C-contiguous layout."""
        return self._strides

    @property
    def strides_in_bytes(self):
        return None if self._strides is None else tuple(s * self._itemsize for s in self._strides)

    @property
    def itemsize(self):
        return self._itemsize

    @property
    def slice_offset(self):
        """Where element (0, ..., 0) is, in items from the base pointer."""
        return self._offset

    @property
    def slice_offset_in_bytes(self):
        return self._offset * self._itemsize

    @property
    def volume(self):
        return math.prod(self._shape)

    def _st(self):
        return self._strides if self._strides is not None else _c_strides(self._shape)

    @property
    def stride_order(self):
        """The axes from the largest stride to the smallest (by magnitude); of two axes
        with one stride the longer is outer, as an extent-1 axis sits inside the axis
        whose stride it shares in a dense layout."""
        st = self._st()
        return tuple(sorted(range(self.ndim), key=lambda i: (-abs(st[i]), -self._shape[i], i)))

    @property
    def is_contiguous_c(self):
        return _contig_c(self._shape, self._st())

    @property
    def is_contiguous_f(self):
        return _contig_c(self._shape[::-1], self._st()[::-1])

    @property
    def is_contiguous_any(self):
        """Dense in some order of the axes (C, F, or the stride order)."""
        if self.is_contiguous_c or self.is_contiguous_f:
            return True
        order, st = self.stride_order, self._st()
        return _contig_c([self._shape[i] for i in order], [st[i] for i in order])

    @property
    def is_dense(self):
        """Contiguous in some order and starting at the base pointer."""
        return self._offset == 0 and self.is_contiguous_any

    @property
    def is_unique(self):
        """No two indices reach the same item: each axis, from the smallest stride up,
        steps over everything the smaller axes span (a broadcast axis fails)."""
        if self.volume == 0:
            return True
        span = 0
        for st, ext in sorted((abs(s), e) for s, e in zip(self._st(), self._shape) if e != 1):
            if st <= span:
                return False
            span += st * (ext - 1)
        return True

    @property
    def offset_bounds(self):
        """(lowest, highest) item offset from the base pointer; (0, -1) when empty."""
        if self.volume == 0:
            return (0, -1)
        lo = hi = self._offset
        for st, ext in zip(self._st(), self._shape):
            if st < 0:
                lo += st * (ext - 1)
            else:
                hi += st * (ext - 1)
        return (lo, hi)

    def required_size_in_bytes(self):
        """Bytes from the base pointer to the end of the highest item."""
        return (self.offset_bounds[1] + 1) * self._itemsize

    def __eq__(self, other):
        if not isinstance(other, _StridedLayout):
            return NotImplemented
        return (self._shape == other._shape and self._itemsize == other._itemsize
                and self._offset == other._offset and self._st() == other._st())

    def __hash__(self):
        return hash((self._shape, self._st(), self._itemsize, self._offset))

    def __repr__(self):
        return (f"_StridedLayout(shape={self._shape}, strides={self._strides}, itemsize={self._itemsize}, "
                f"slice_offset={self._offset})")

    # ---- views of the same memory ---------------------------------------------------------

    def permuted(self, axis_order):
        """Axes reordered: axis i of the result is axis ``axis_order[i]`` (NumPy's
        transpose)."""
        order = tuple(axis_order)
        if len(order) != self.ndim:
            raise ValueError(f"The permutation {order} must have the same length as the number of dimensions "
                             f"({self.ndim})")
        order = tuple(_norm_axis(a, self.ndim) for a in order)
        seen = set()
        for a, raw in zip(order, axis_order):
            if a in seen:
                raise ValueError(f"axis {raw} appears multiple times in the permutation {tuple(axis_order)}")
            seen.add(a)
        st = self._st()
        return self._make([self._shape[a] for a in order], tuple(st[a] for a in order), self._itemsize,
                          self._offset)

    def sliced(self, slices):
        """NumPy basic indexing: a tuple of slices and ints (an int drops its axis)."""
        if not isinstance(slices, tuple):
            slices = (slices,)
        if len(slices) > self.ndim:
            raise ValueError(f"The number of slices ({len(slices)}) is greater than the number of dimensions "
                             f"({self.ndim})")
        shape, strides, offset = [], [], self._offset
        st = self._st()
        for ax, sl in enumerate(slices):
            ext = self._shape[ax]
            if isinstance(sl, slice):
                if sl.step is not None and operator.index(sl.step) == 0:
                    raise ValueError(f"slice step cannot be zero (axis {ax})")
                start, stop, step = sl.indices(ext)
                n = len(range(start, stop, step))
                if n:
                    offset += start * st[ax]
                shape.append(n)
                strides.append(st[ax] * step)
                continue
            if isinstance(sl, bool):
                raise TypeError(f"Expected slice instance or integer. Got bool for axis {ax}")
            try:
                i = operator.index(sl)
            except TypeError:
                raise TypeError(f"Expected slice instance or integer. Got {type(sl).__name__} for axis {ax}") from None
            if not -ext <= i < ext:
                raise ValueError(f"Index {i} out of range for axis {ax} with extent {ext}")
            offset += (i + ext if i < 0 else i) * st[ax]
        shape.extend(self._shape[len(slices):])
        strides.extend(st[len(slices):])
        return self._make(shape, tuple(strides), self._itemsize, offset)

    __getitem__ = sliced

    def reshaped(self, shape):
        """The same items in a new shape, in C order, without moving them (one extent
        may be -1: inferred); ValueError where the strides do not allow it."""
        new = _as_shape(shape)
        if any(e < -1 for e in new):
            raise ValueError(f"Extents must be non-negative (one may be -1, inferred), got {new}")
        vol = self.volume
        if new.count(-1) > 1:
            raise ValueError(f"There can be at most one -1 extent in a shape, got {new}")
        if -1 in new:
            sub = math.prod(e for e in new if e != -1)
            if sub == 0:
                raise ValueError(f"The -1 extent is ambiguous when the specified sub-volume is 0: {new}")
            if vol % sub:
                raise ValueError(f"The original volume {vol} must be divisible by the specified sub-volume {sub}")
            new = tuple(vol // sub if e == -1 else e for e in new)
        if math.prod(new) != vol:
            raise ValueError(f"The original volume {vol} and the new volume {math.prod(new)} must be equal.")
        if vol == 0:
            return self._make(new, (0,) * len(new), self._itemsize, self._offset)
        strides = _reshape_strides(self._shape, self._st(), new)
        if strides is None:
            raise ValueError(f"Layout strides are incompatible with the new shape {new}: shape {self._shape}, "
                             f"strides {self._st()}; make a dense copy (to_dense) first")
        return self._make(new, strides, self._itemsize, self._offset)

    def flattened_axis_mask(self):
        """Bit i set where axis i merges into axis i-1 (axis i-1 steps over all of axis i)."""
        st, mask = self._st(), 0
        empty = self.volume == 0
        for i in range(1, self.ndim):
            if empty or st[i - 1] == st[i] * self._shape[i]:
                mask |= 1 << i
        return mask

    def flattened(self, start_axis=0, end_axis=-1, mask=None):
        """Axes start_axis..end_axis (inclusive) merged where they can be (and where
        ``mask`` allows, see flattened_axis_mask); a 0-d layout becomes (1,)."""
        if self.ndim == 0:
            return self._make((1,), (1,), self._itemsize, self._offset)
        lo = _norm_axis(start_axis, self.ndim, "start_axis")
        hi = _norm_axis(end_axis, self.ndim, "end_axis")
        m = self.flattened_axis_mask()
        if mask is not None:
            m &= _as_int(mask, "mask")
        st = self._st()
        shape, strides = [self._shape[0]], [st[0]]
        for i in range(1, self.ndim):
            if lo < i <= hi and m >> i & 1:
                shape[-1] *= self._shape[i]
                strides[-1] = st[i]
            else:
                shape.append(self._shape[i])
                strides.append(st[i])
        return self._make(shape, tuple(strides), self._itemsize, self._offset)

    def squeezed(self):
        """Extent-1 axes dropped; an empty layout becomes (0,)."""
        if self.volume == 0:
            return self._make((0,), (0,), self._itemsize, self._offset)
        st = self._st()
        keep = [i for i, e in enumerate(self._shape) if e != 1]
        return self._make([self._shape[i] for i in keep], tuple(st[i] for i in keep), self._itemsize, self._offset)

    def unsqueezed(self, axes):
        """Extent-1 axes inserted at ``axes`` (positions in the result, NumPy's expand_dims)."""
        axes = _as_shape(axes, "axes")
        if not axes:
            return self
        nd = self.ndim + len(axes)
        pos = sorted(_norm_axis(a, nd) for a in axes)
        if len(set(pos)) != len(pos):
            raise ValueError(f"axes {axes} repeat an axis")
        it = iter(self._shape)
        new = tuple(1 if i in pos else next(it) for i in range(nd))
        if self.volume == 0:
            return self._make(new, (0,) * nd, self._itemsize, self._offset)
        return self._make(new, _reshape_strides(self._shape, self._st(), new), self._itemsize, self._offset)

    def broadcast_to(self, shape):
        """NumPy's broadcast_to: new leading axes and extent-1 axes get stride 0."""
        new = _as_shape(shape)
        if len(new) < self.ndim or any(e < 0 for e in new):
            raise ValueError(f"Cannot broadcast shape {self._shape} to {new}")
        lead = len(new) - self.ndim
        st = self._st()
        strides = [0] * lead
        for i, (e, s) in enumerate(zip(self._shape, st)):
            if e == new[lead + i]:
                strides.append(0 if e == 1 else s)
            elif e == 1:
                strides.append(0)
            else:
                raise ValueError(f"Cannot broadcast shape {self._shape} to {new}: axis {i} has extent {e}, "
                                 f"wanted {new[lead + i]}")
        return self._make(new, tuple(strides), self._itemsize, self._offset)

    def to_dense(self, stride_order="K"):
        """A dense layout of the same shape and item size (what a copy would have):
        "C", "F", "K" (keep this layout's order), or a permutation of the axes. This
        layout itself where it is already dense that way."""
        if isinstance(stride_order, str):
            if stride_order not in ("C", "F", "K"):
                raise ValueError(f"stride_order must be 'C', 'F', 'K' or a permutation of the axes, "
                                 f"got {stride_order!r}")
            noop = self._offset == 0 and {"C": self.is_contiguous_c, "F": self.is_contiguous_f,
                                          "K": self.is_contiguous_any}[stride_order]
            if noop and self._strides is None:
                return self
            if stride_order == "K":
                stride_order = "C" if self.is_contiguous_c else "F" if self.is_contiguous_f else self.stride_order
        return self._make(self._shape, _dense_strides(self._shape, _order_of(stride_order, self.ndim)),
                          self._itemsize)

    def max_compatible_itemsize(self, max_itemsize=_MAX_PACKED_ITEMSIZE, axis=-1):
        """The widest item size (a power-of-two multiple of this one, at most
        ``max_itemsize``) that repacked(..., axis) accepts."""
        best = self._itemsize
        k = 2
        while self._itemsize * k <= max_itemsize and self._packable(k, axis):
            best = self._itemsize * k
            k *= 2
        return best

    def _packable(self, k, axis):
        ax = _norm_axis(axis, self.ndim) if self.ndim else None
        if ax is None or self._offset % k:
            return False
        st = self._st()
        if self._shape[ax] % k or (st[ax] != 1 and self.volume):
            return False
        return all(s % k == 0 for i, s in enumerate(st) if i != ax)

    def repacked(self, itemsize, axis=-1):
        """The same bytes with a new item size: a wider item packs consecutive items
        along ``axis`` (stride 1), a narrower one splits them; NumPy's ``view(dtype)``
        on the axis."""
        itemsize = _as_int(itemsize, "itemsize")
        if itemsize == self._itemsize:
            return self
        if self.ndim == 0:
            raise ValueError("A 0-dimensional layout cannot be repacked; unsqueeze it first")
        ax = _norm_axis(axis, self.ndim)
        st = list(self._st())
        if itemsize > self._itemsize:
            k, rem = divmod(itemsize, self._itemsize)
            if rem or not self._packable(k, ax):
                raise ValueError(f"Cannot pack items of {self._itemsize} bytes into items of {itemsize} bytes along "
                                 f"axis {axis}: the axis needs stride 1 and an extent, other strides and an offset "
                                 f"divisible by {itemsize / self._itemsize:g} (max_compatible_itemsize gives "
                                 f"{self.max_compatible_itemsize(axis=axis)})")
            shape = list(self._shape)
            shape[ax] //= k
            st = [s if i == ax else s // k for i, s in enumerate(st)]
            return self._make(shape, tuple(st), itemsize, self._offset // k)
        k, rem = divmod(self._itemsize, itemsize)
        if rem or (st[ax] != 1 and self.volume and self._shape[ax] != 1):
            raise ValueError(f"Cannot split items of {self._itemsize} bytes into items of {itemsize} bytes along "
                             f"axis {axis}: the sizes must divide and the axis needs stride 1")
        shape = list(self._shape)
        shape[ax] *= k
        st = [1 if i == ax else s * k for i, s in enumerate(st)]
        return self._make(shape, tuple(st), itemsize, self._offset * k)


def _order_of(stride_order, ndim):
    """An axis order, outermost first, from "C", "F" or a permutation."""
    if isinstance(stride_order, str):
        if stride_order == "C":
            return tuple(range(ndim))
        if stride_order == "F":
            return tuple(range(ndim - 1, -1, -1))
        raise ValueError(f"stride_order must be 'C', 'F' or a permutation of the axes, got {stride_order!r}")
    order = tuple(_norm_axis(a, ndim) for a in stride_order)
    if len(order) != ndim or len(set(order)) != ndim:
        raise ValueError(f"stride_order {tuple(stride_order)} must be a permutation of the {ndim} axes")
    return order

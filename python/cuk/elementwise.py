"""``pycuda.elementwise`` on cuk: ElementwiseKernel from a C argument list and a
per-element statement on ``i``. An assignment the language can say (``z[i] = a*x[i] +
y[i]``: see _lang.py) runs as a .cuk function writing into ``z`` (out=), the language's
vectorised map kernel; anything else is raw CUDA C compiled with NVRTC (a grid-stride
loop, as PyCUDA's; a GPU is needed)."""
import numpy as np

from . import _cuk
from .tools import ScalarArg, VectorArg, dtype_to_ctype, parse_args

_BLOCK = 256


def _launch_grid(n):
    return (max(1, min((n + _BLOCK - 1) // _BLOCK, 65535 * 8)), 1)


def get_elwise_module_source(arguments, operation, name="kernel", preamble="", loop_prep="", after_loop="",
                             use_range=False):
    decl = ", ".join(a.declarator() for a in arguments)
    if use_range:
        head = f"{decl}, long long start, long long stop, long long step"
        loop = (f"  if (step > 0)\n"
                f"    for (i = start + (cta_start + tid) * step; i < stop; i += total_threads * step) {{ {operation}; }}\n"
                f"  else\n"
                f"    for (i = start + (cta_start + tid) * step; i > stop; i += total_threads * step) {{ {operation}; }}\n")
        itype = "long long"
    else:
        head = f"{decl}, unsigned long long n"
        loop = f"  for (i = cta_start + tid; i < n; i += total_threads) {{ {operation}; }}\n"
        itype = "unsigned long long"
    return (f"{preamble}\n"
            f"extern \"C\" __global__ void {name}({head}) {{\n"
            f"  unsigned tid = threadIdx.x;\n"
            f"  {itype} total_threads = (long long)gridDim.x * blockDim.x;\n"
            f"  {itype} cta_start = (long long)blockDim.x * blockIdx.x;\n"
            f"  {itype} i;\n"
            f"  {loop_prep};\n{loop}"
            f"  {after_loop};\n}}\n")


def resolve_range(rng, slc, n):
    """(start, stop, step, count) of ``range=`` (indices as given) or ``slice=`` (resolved
    against n, as Python slices are), the PyCUDA keywords of the kernel calls."""
    if slc is not None:
        start, stop, step = slc.indices(n)
    else:
        if rng.stop is None:
            raise ValueError("range= needs a stop")
        start = 0 if rng.start is None else rng.start
        stop, step = rng.stop, 1 if rng.step is None else rng.step
    if step == 0:
        raise ValueError("range=/slice= step cannot be zero")
    count = max(0, (stop - start + step - (1 if step > 0 else -1)) // step)
    return start, stop, step, count


def _pack(args, values):
    out = []
    for a, v in zip(args, values):
        if isinstance(a, VectorArg):
            out.append(v)  # GPUArray/DeviceArray/CUDA array: the kernel gets the pointer
        else:
            out.append(a.dtype.type(v))
    return out


class ElementwiseKernel:
    """``ElementwiseKernel("float a, float *x, float *y, float *z", "z[i] = a*x[i] + y[i]")``;
    call it with the arguments, optionally ``range=slice(...)``/``slice=`` and
    ``stream=``. The element count is the size of the first array argument."""

    def __init__(self, arguments, operation, name="kernel", keep=False, options=None, preamble="", loop_prep="",
                 after_loop=""):
        self.arguments = parse_args(arguments)
        self.name = name
        self._src = dict(operation=operation, name=name, preamble=preamble, loop_prep=loop_prep,
                         after_loop=after_loop)
        self.options = list(options or [])
        self._k = {}
        if not any(isinstance(a, VectorArg) for a in self.arguments):
            raise ValueError("ElementwiseKernel can only be used with functions that have at least one vector argument")
        self._lang = False  # not tried yet; then None or (fn, out, names)

    def _kernel(self, use_range):
        k = self._k.get(use_range)
        if k is None:
            from .compiler import SourceModule

            src = get_elwise_module_source(self.arguments, use_range=use_range, **self._src)
            k = self._k[use_range] = SourceModule(src, options=self.options, no_extern_c=True).get_function(self.name)
        return k

    def __call__(self, *args, **kwargs):
        rng = kwargs.pop("range", None)
        slc = kwargs.pop("slice", None)
        stream = kwargs.pop("stream", None)
        if kwargs:
            raise TypeError(f"unknown keyword arguments: {', '.join(kwargs)}")
        if len(args) != len(self.arguments):
            raise TypeError(f"{self.name} takes {len(self.arguments)} arguments, {len(args)} given")
        vec = next(v for a, v in zip(self.arguments, args) if isinstance(a, VectorArg))
        n = int(np.prod(vec.shape, dtype=np.int64))
        if rng is None and slc is None and self._language_call(args, n):
            return
        packed = _pack(self.arguments, args)
        if rng is not None or slc is not None:
            start, stop, step, count = resolve_range(rng, slc, n)
            k = self._kernel(True)
            k(*packed, np.int64(start), np.int64(stop), np.int64(step), block=(_BLOCK, 1, 1),
              grid=_launch_grid(count), stream=stream)
        else:
            if n == 0:
                return
            self._kernel(False)(*packed, np.uint64(n), block=(_BLOCK, 1, 1), grid=_launch_grid(n), stream=stream)


    def _language_call(self, args, n):
        """Runs the language's kernel when the operation translates and every array is
        1-D of n elements; False when the raw kernel must run."""
        if self._lang is False:
            from . import _lang
            self._lang = _lang.elementwise(self.arguments, **{k: self._src[k] for k in (
                "operation", "preamble", "loop_prep", "after_loop")})
        if self._lang is None or n == 0:
            return False
        from . import _lang
        fn, out, names = self._lang
        vals = _lang.values(self.arguments, args, [out] + names, n)
        if vals is None:
            return False
        fn(*vals[1:], out=vals[0])
        return True


def get_axpbyz_kernel(dtype_x, dtype_y, dtype_z):
    return ElementwiseKernel(f"{dtype_to_ctype(dtype_z)} a, {dtype_to_ctype(dtype_x)} *x, {dtype_to_ctype(dtype_z)} b, "
                             f"{dtype_to_ctype(dtype_y)} *y, {dtype_to_ctype(dtype_z)} *z", "z[i] = a*x[i] + b*y[i]",
                             "axpbyz")


__all__ = ["ElementwiseKernel", "ScalarArg", "VectorArg", "get_elwise_module_source", "get_axpbyz_kernel",
           "resolve_range"]

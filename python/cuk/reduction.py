"""``pycuda.reduction`` on cuk: ReductionKernel from a neutral element, a reduce
expression on ``a`` and ``b`` and a map expression on ``i``, as raw CUDA C (two
stages: block partials, then one block), compiled with NVRTC; needs a GPU. Calls take
``range=``/``slice=`` like ElementwiseKernel's: the indices ``i`` the map visits."""
import numpy as np

from . import gpuarray
from .elementwise import resolve_range
from .tools import VectorArg, dtype_to_ctype, parse_args

_BLOCK = 512
_MAX_BLOCKS = 1024

_TEMPLATE = r"""
{preamble}
typedef {out_type} out_type;
__device__ __forceinline__ out_type cuk_reduce_op(out_type a, out_type b) {{ return {reduce_expr}; }}

extern "C" __global__ void {name}_stage1({args}out_type *cuk_partial, unsigned long long n, long long cuk_start,
                                       long long cuk_step) {{
  __shared__ out_type sdata[{block}];
  unsigned tid = threadIdx.x;
  out_type acc = {neutral};
  for (unsigned long long k_ = (unsigned long long)blockIdx.x * {block} + tid; k_ < n;
       k_ += (unsigned long long)gridDim.x * {block}) {{
    const unsigned long long i = (unsigned long long)(cuk_start + (long long)k_ * cuk_step);
    acc = cuk_reduce_op(acc, {map_expr});
  }}
  sdata[tid] = acc;
  __syncthreads();
  for (unsigned s = {block} / 2; s > 0; s >>= 1) {{
    if (tid < s) sdata[tid] = cuk_reduce_op(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }}
  if (tid == 0) cuk_partial[blockIdx.x] = sdata[0];
}}

extern "C" __global__ void {name}_stage2(const out_type *cuk_partial, out_type *cuk_out, unsigned n) {{
  __shared__ out_type sdata[{block}];
  unsigned tid = threadIdx.x;
  out_type acc = {neutral};
  for (unsigned i = tid; i < n; i += {block}) acc = cuk_reduce_op(acc, cuk_partial[i]);
  sdata[tid] = acc;
  __syncthreads();
  for (unsigned s = {block} / 2; s > 0; s >>= 1) {{
    if (tid < s) sdata[tid] = cuk_reduce_op(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }}
  if (tid == 0) cuk_out[0] = sdata[0];
}}
"""


class ReductionKernel:
    """``ReductionKernel(np.float32, neutral="0", reduce_expr="a+b",
    map_expr="x[i]*y[i]", arguments="float *x, float *y")``; calling it returns a 0-d
    GPUArray (``.get()`` reads the value)."""

    def __init__(self, dtype_out, neutral, reduce_expr, map_expr=None, arguments=None, name="reduce_kernel",
                 keep=False, options=None, preamble="", allocator=None):
        self.dtype_out = np.dtype(dtype_out)
        self.arguments = parse_args(arguments or "")
        if map_expr is None:
            if len(self.arguments) != 1:
                raise ValueError("map_expr is needed with more than one argument")
            map_expr = f"{self.arguments[0].name}[i]"
        self.name = name
        self.src = _TEMPLATE.format(preamble=preamble, out_type=dtype_to_ctype(self.dtype_out),
                                    reduce_expr=reduce_expr, neutral=neutral, map_expr=map_expr, name=name,
                                    block=_BLOCK,
                                    args="".join(a.declarator() + ", " for a in self.arguments))
        self.options = list(options or [])
        self._k = None
        self._lang = False  # not tried yet; then None or (fn, names)
        self._lang_src = (neutral, reduce_expr, map_expr, preamble)

    def _language_call(self, args, n, out):
        """The language's reduction (one kernel, its result left on the device) when the
        expressions translate and every array is 1-D of n elements; None otherwise."""
        from . import _lang
        if self._lang is False:
            neutral, reduce_expr, map_expr, preamble = self._lang_src
            self._lang = _lang.reduction(self.dtype_out, neutral, reduce_expr, map_expr, self.arguments, preamble)
        if self._lang is None or n == 0:
            return None
        fn, names = self._lang
        vals = _lang.values(self.arguments, args, names, n)
        if vals is None:
            return None
        result = out if out is not None else gpuarray.empty((), self.dtype_out)

        def write(dst):
            # the 0-d result as one element (a view of the same memory) for out=
            if isinstance(dst, np.ndarray):
                fn(*vals, out=dst.reshape(1))
            else:
                from . import _cuk
                fn(*vals, out=_cuk.device_wrap(dst.__cuda_array_interface__["data"][0], (1,), np.dtype(dst.dtype).name,
                                               dst))

        gpuarray._write_through(result, write)
        return result

    def _kernels(self):
        if self._k is None:
            from .compiler import SourceModule

            m = SourceModule(self.src, options=self.options, no_extern_c=True)
            self._k = (m.get_function(self.name + "_stage1"), m.get_function(self.name + "_stage2"))
        return self._k

    def __call__(self, *args, **kwargs):
        stream = kwargs.pop("stream", None)
        kwargs.pop("allocator", None)
        out = kwargs.pop("out", None)
        rng = kwargs.pop("range", None)
        slc = kwargs.pop("slice", None)
        if kwargs:
            raise TypeError(f"unknown keyword arguments: {', '.join(kwargs)}")
        if len(args) != len(self.arguments):
            raise TypeError(f"{self.name} takes {len(self.arguments)} arguments, {len(args)} given")
        vec = next(v for a, v in zip(self.arguments, args) if isinstance(a, VectorArg))
        n = int(np.prod(vec.shape, dtype=np.int64))
        if rng is None and slc is None and (out is None or out.dtype == self.dtype_out):
            r = self._language_call(args, n, out)
            if r is not None:
                return r
        s1, s2 = self._kernels()
        start, step = 0, 1
        if rng is not None or slc is not None:
            start, _, step, n = resolve_range(rng, slc, n)
        blocks = max(1, min((n + _BLOCK - 1) // _BLOCK, _MAX_BLOCKS))
        packed = [v if isinstance(a, VectorArg) else a.dtype.type(v) for a, v in zip(self.arguments, args)]
        partial = gpuarray.empty(blocks, self.dtype_out)
        result = out if out is not None else gpuarray.empty((), self.dtype_out)
        s1(*packed, partial, np.uint64(n), np.int64(start), np.int64(step), block=(_BLOCK, 1, 1), grid=(blocks, 1),
           stream=stream)
        s2(partial, result, np.uint32(blocks), block=(_BLOCK, 1, 1), grid=(1, 1), stream=stream)
        return result


def get_sum_kernel(dtype_out, dtype_in):
    return ReductionKernel(dtype_out, "0", "a+b", arguments=f"const {dtype_to_ctype(dtype_in)} *in")


def get_dot_kernel(dtype_out, dtype_a, dtype_b=None):
    dtype_b = dtype_b or dtype_a
    return ReductionKernel(dtype_out, "0", "a+b", "a[i]*b[i]",
                           f"const {dtype_to_ctype(dtype_a)} *a, const {dtype_to_ctype(dtype_b)} *b")

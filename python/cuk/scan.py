"""``pycuda.scan`` on cuk: InclusiveScanKernel and ExclusiveScanKernel for any
associative ``scan_expr`` on ``a`` and ``b``. An expression the language can say (sums,
products, max and min, any arithmetic of a and b, with no preamble) runs on the
language's own scan: one pass over the data (the decoupled look-back of
kernels/scan.cuh), written into the output array (out=), in place when the output is
the input. Anything else (C functions, a preamble) is raw CUDA C compiled with NVRTC:
tiles of 2048 elements scanned in shared memory, tile totals scanned recursively, then
added back. Needs a GPU."""
import numpy as np

from . import _lang, gpuarray
from .tools import dtype_to_ctype

_T = 256     # threads per block
_ITEMS = 8   # elements per thread
_TILE = _T * _ITEMS

_TEMPLATE = r"""
{preamble}
typedef {ctype} scan_type;
__device__ __forceinline__ scan_type cuk_scan_op(scan_type a, scan_type b) {{ return {scan_expr}; }}

/* Scans one tile per block; writes the tile's total to sums (if any). exclusive: out[j]
   combines everything before j (the neutral element at the start of the array). */
extern "C" __global__ void {name}_tile(const scan_type *in, scan_type *out, scan_type *sums,
                                       unsigned long long n, int exclusive) {{
  __shared__ scan_type s[2][{T}];
  unsigned t = threadIdx.x;
  unsigned long long base = (unsigned long long)blockIdx.x * {TILE} + (unsigned long long)t * {ITEMS};
  scan_type v[{ITEMS}];
  int valid = 0;
  for (int k = 0; k < {ITEMS}; k++) {{
    if (base + k < n) {{
      scan_type x = in[base + k];
      v[k] = valid ? cuk_scan_op(v[k - 1], x) : x;
      valid = k + 1;
    }}
  }}
  if (valid) s[0][t] = v[valid - 1];
  __syncthreads();
  int pin = 0;
  for (unsigned d = 1; d < {T}; d <<= 1) {{
    int pout = 1 - pin;
    s[pout][t] = (t >= d) ? cuk_scan_op(s[pin][t - d], s[pin][t]) : s[pin][t];
    __syncthreads();
    pin = pout;
  }}
  unsigned long long tile_start = (unsigned long long)blockIdx.x * {TILE};
  unsigned long long left = n - tile_start;
  unsigned last = left >= {TILE} ? {T} - 1 : (unsigned)((left - 1) / {ITEMS});
  for (int k = 0; k < valid; k++) {{
    scan_type r;
    if (exclusive) {{
      if (k > 0) r = t > 0 ? cuk_scan_op(s[pin][t - 1], v[k - 1]) : v[k - 1];
      else r = t > 0 ? s[pin][t - 1] : ({neutral});
    }} else {{
      r = t > 0 ? cuk_scan_op(s[pin][t - 1], v[k]) : v[k];
    }}
    out[base + k] = r;
  }}
  if (sums && t == last) sums[blockIdx.x] = s[pin][last];
}}

/* Adds the inclusive total of all earlier tiles (prefix[b - 1]) to tile b. For an
   exclusive scan the first element of a tile was the neutral element: it becomes the
   prefix itself. */
extern "C" __global__ void {name}_add(scan_type *out, const scan_type *prefix, unsigned long long n, int exclusive) {{
  unsigned long long b = blockIdx.x + 1;
  scan_type p = prefix[b - 1];
  unsigned long long start = b * {TILE};
  for (unsigned long long j = start + threadIdx.x; j < start + {TILE} && j < n; j += {T})
    out[j] = (exclusive && j == start) ? p : cuk_scan_op(p, out[j]);
}}
"""


class _ScanKernel:
    _exclusive = 0

    def __init__(self, dtype, scan_expr, neutral=None, name_prefix="scan", options=None, preamble="", devices=None):
        self.dtype = np.dtype(dtype)
        if self._exclusive and neutral is None:
            raise ValueError("an exclusive scan needs a neutral element")
        self.name = name_prefix
        self.src = _TEMPLATE.format(preamble=preamble, ctype=dtype_to_ctype(self.dtype), scan_expr=scan_expr,
                                    neutral=neutral if neutral is not None else "scan_type()", name=name_prefix,
                                    T=_T, ITEMS=_ITEMS, TILE=_TILE)
        self.options = list(options or [])
        self._k = None
        self._lang = _lang.scan(self.dtype, scan_expr, neutral, self._exclusive, preamble)

    def _kernels(self):
        if self._k is None:
            from .compiler import SourceModule

            m = SourceModule(self.src, options=self.options, no_extern_c=True)
            self._k = (m.get_function(self.name + "_tile"), m.get_function(self.name + "_add"))
        return self._k

    def _scan(self, src, dst, n, exclusive, stream):
        tile, add = self._kernels()
        blocks = (n + _TILE - 1) // _TILE
        if blocks <= 1:
            tile(src, dst, np.uint64(0), np.uint64(n), np.int32(exclusive), block=(_T, 1, 1), grid=(1, 1),
                 stream=stream)
            return
        sums = gpuarray.empty(blocks, self.dtype)
        tile(src, dst, sums, np.uint64(n), np.int32(exclusive), block=(_T, 1, 1), grid=(blocks, 1), stream=stream)
        self._scan(sums, sums, blocks, 0, stream)  # inclusive totals of tiles, in place
        add(dst, sums, np.uint64(n), np.int32(exclusive), block=(_T, 1, 1), grid=(blocks - 1, 1), stream=stream)

    def __call__(self, input_ary, output_ary=None, allocator=None, stream=None):
        """Scans input_ary into output_ary (in place if none is given); returns it."""
        if output_ary is None:
            output_ary = input_ary
        n = int(input_ary.size)
        if (n and self._lang is not None and input_ary.dtype == self.dtype and output_ary.dtype == self.dtype
                and len(input_ary.shape) == 1 and output_ary.shape == input_ary.shape):
            src = input_ary._storage()
            gpuarray._write_through(output_ary, lambda d: self._lang(src, out=d))
        elif n:
            self._scan(input_ary, output_ary, n, self._exclusive, stream)
        return output_ary


class InclusiveScanKernel(_ScanKernel):
    _exclusive = 0


class ExclusiveScanKernel(_ScanKernel):
    _exclusive = 1

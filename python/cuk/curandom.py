"""``pycuda.curandom`` on cuk: ``rand``/``randn`` on the Philox stream of the language's
``rand``/``randn``, and PyCUDA's cuRAND generator classes (XORWOW, MRG32k3a, the Sobol
ones) with their methods, as cuk language programs that run on the GPU and the CPU."""
import base64
import ctypes
import enum
import functools
import itertools
import numbers
import os

import numpy as np

from .gpuarray import GPUArray, _alloc, _canon, _module, _ty, _write_through, to_gpu

_seeds = itertools.count(12345)


# ---- cuRAND's version ------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _libcurand():
    """The CUDA toolkit's libcurand through ctypes ($CUK_LIBCURAND names another file),
    or None. Only get_curand_version and the direction vectors past cuk's own table use it."""
    names = [os.environ["CUK_LIBCURAND"]] if os.environ.get("CUK_LIBCURAND") else []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            names += [os.path.join(home, d, "libcurand.so") for d in ("lib64", "lib")]
    names += ["libcurand.so.10", "libcurand.so"]
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    return None


def get_curand_version():
    """(major, minor, patch) of the cuRAND library that loads (libcurand.so from the CUDA
    toolkit), or None when there is none, as PyCUDA built without cuRAND says. cuk's
    generator classes do not use cuRAND: they exist and work either way."""
    lib = _libcurand()
    if lib is None:
        return None
    v = ctypes.c_int(0)
    if lib.curandGetVersion(ctypes.byref(v)) != 0:
        return None
    # CURAND_VERSION is major * 1000 + minor * 100 + patch (10400 is 10.4.0); PyCUDA
    # splits it as (v // 1000, v % 1000 // 10, v % 10), which says (10, 40, 0)
    return (v.value // 1000, v.value % 1000 // 100, v.value % 100)


# ---- the language's Philox, word by word --------------------------------------------------

def _philox_fn():
    """`ph(q, t, kl, kh)`: word q % 4 of Philox4x32-10 on the counter (q / 4, t) (128 bits:
    lo32(q/4), hi32(q/4), lo32(t), hi32(t)) with the key (kl, kh): the words the language's
    rand reads for t = 0. Written out round by round: a function without loops fuses into
    the kernel (the CPU backend runs it vectorised, about 20x faster than a loop)."""
    w0, w1 = 0x9E3779B9, 0xBB67AE85
    s = ["fn ph(q: u64, t: u64, kl: u32, kh: u32) -> u32 {",
         "    let c = q >> u64(2);",
         "    let x0_0 = u32(c);", "    let x1_0 = u32(c >> u64(32));",
         "    let x2_0 = u32(t);", "    let x3_0 = u32(t >> u64(32));"]
    for r in range(10):
        ka = "kl" if r == 0 else f"kl + u32({w0 * r & 0xFFFFFFFF})"
        kb = "kh" if r == 0 else f"kh + u32({w1 * r & 0xFFFFFFFF})"
        s += [f"    let p0_{r} = u64(x0_{r}) * u64(0xD2511F53);",
              f"    let p1_{r} = u64(x2_{r}) * u64(0xCD9E8D57);",
              f"    let x0_{r + 1} = u32(p1_{r} >> u64(32)) ^ x1_{r} ^ ({ka});",
              f"    let x1_{r + 1} = u32(p1_{r});",
              f"    let x2_{r + 1} = u32(p0_{r} >> u64(32)) ^ x3_{r} ^ ({kb});",
              f"    let x3_{r + 1} = u32(p0_{r});"]
    s += ["    let w = q & u64(3);",
          "    return w == u64(0) ? x0_10 : (w == u64(1) ? x1_10 : (w == u64(2) ? x2_10 : x3_10));", "}", ""]
    return "\n".join(s)


_PH = _philox_fn()

# The inverse of the normal CDF: Wichura's AS241 (PPND16, relative error about 1e-16),
# without branches so it fuses; the Sobol generators' normals, as cuRAND's, are ndtri(u).
_NDTRI = """
fn ndtri(p: f64) -> f64 {
    let q = p - 0.5;
    let r1 = 0.180625 - q * q;
    let c = q * (((((((2509.0809287301226727 * r1 + 33430.575583588128105) * r1 + 67265.770927008700853) * r1
        + 45921.953931549871457) * r1 + 13731.693765509461125) * r1 + 1971.5909503065514427) * r1
        + 133.14166789178437745) * r1 + 3.387132872796366608)
        / (((((((5226.495278852545925 * r1 + 28729.085735721942674) * r1 + 39307.89580009271061) * r1
        + 21213.794301586595867) * r1 + 5394.1960214247511077) * r1 + 687.1870074920579083) * r1
        + 42.313330701600911252) * r1 + 1.0);
    let r = sqrt(-log(q < 0.0 ? p : 1.0 - p));
    let r2 = r - 1.6;
    let m = (((((((0.00077454501427834140764 * r2 + 0.0227238449892691845833) * r2 + 0.24178072517745061177) * r2
        + 1.27045825245236838258) * r2 + 3.64784832476320460504) * r2 + 5.7694972214606914055) * r2
        + 4.6303378461565452959) * r2 + 1.42343711074968357734)
        / (((((((1.05075007164441684324e-9 * r2 + 0.0005475938084995344946) * r2 + 0.0151986665636164571966) * r2
        + 0.14810397642748007459) * r2 + 0.68976733498510000455) * r2 + 1.6763848301838038494) * r2
        + 2.05319162663775882187) * r2 + 1.0);
    let r3 = r - 5.0;
    let t = (((((((2.01033439929228813265e-7 * r3 + 2.71155556874348757815e-5) * r3 + 0.0012426609473880784386) * r3
        + 0.026532189526576123093) * r3 + 0.29656057182850489123) * r3 + 1.7848265399172913358) * r3
        + 5.4637849111641143699) * r3 + 6.6579046435011037772)
        / (((((((2.04426310338993978564e-15 * r3 + 1.4215117583164458887e-7) * r3 + 1.8463183175100546818e-5) * r3
        + 0.0007868691311456132591) * r3 + 0.0148753612908506148525) * r3 + 0.13692988092273580531) * r3
        + 0.59983220655588793769) * r3 + 1.0);
    let tail = r <= 5.0 ? m : t;
    return abs(q) <= 0.425 ? c : (q < 0.0 ? -tail : tail);
}
"""

# Poisson by inversion of one uniform u, as cuRAND does for its quasi-random generators:
# the CDF summed from 0 (from lambda - 8 sqrt(lambda), where the mass below is < 1e-14,
# for lambda >= 100); above 4000 the normal approximation cuRAND uses there too.
_POIS = """
fn lfact(k: f64) -> f64 {
    let m = k + 1.0;
    let m2 = m * m;
    return (m - 0.5) * log(m) - m + 0.9189385332046727 + (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / (1260.0 * m2)) / m2) / m;
}
fn pois(lam: f64, u: f64) -> u32 {
    if !(lam > 0.0) {
        return u32(0);
    }
    if lam > 4000.0 {
        return u32(floor(lam + sqrt(lam) * ndtri(u) + 0.5));
    }
    var k: f64 = 0.0;
    var p = exp(-lam);
    if lam >= 100.0 {
        k = floor(lam - 8.0 * sqrt(lam));
        p = exp(k * log(lam) - lam - lfact(k));
    }
    var f = p;
    let kmax = k + 100.0 + 20.0 * sqrt(lam);
    while f <= u && k < kmax {
        k = k + 1.0;
        p = p * lam / k;
        f = f + p;
    }
    return u32(k);
}
"""

_P24, _P25, _P32, _P53 = "5.9604644775390625e-8", "2.98023223876953125e-8", "2.3283064365386963e-10", \
    "1.1102230246251565e-16"


# ---- rand, randn ---------------------------------------------------------------------------

def _shape(shape):
    return (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(s) for s in shape)


def _size(shape):
    return int(np.prod(_shape(shape), dtype=np.int64))


def _gen(kind, shape, dtype, seed, into=None):
    shape = _shape(shape)
    dtype = _canon(dtype)
    if dtype.kind != "f":
        raise ValueError(f"{kind}: dtype must be a float dtype (float16, float32, float64), not {dtype}")
    if seed is None:
        seed = next(_seeds)
    t = _ty(dtype)
    n = len(shape)
    if n == 0:
        return _gen(kind, (1,), dtype, seed).reshape(())
    dims = ", ".join(f"d{k}" for k in range(n))
    params = ", ".join(["seed: i64"] + [f"d{k}: i64" for k in range(n)])
    src = f"fn k({params}) -> {t}[{dims}] = {kind}({dims}, seed=seed, dtype={t});\n"
    out = _alloc(shape, dtype) if into is None else into
    _module(src)(int(seed), *shape, out=out)  # the generator kernel writes there
    return GPUArray._wrap(out) if into is None else None


def _rand_int(shape, dtype, seed):
    """Uniformly random bits: element i is the word i of the stream rand(seed=) reads
    (two words, 2i and 2i + 1, for 64-bit types; the low bits for 8- and 16-bit ones)."""
    shape, t = _shape(shape), _ty(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype.itemsize == 8:
        body = (f"let q = u64(2) * u64(iota(n));\n    return {t}((u64(ph(q, u64(0), kl, kh)) << u64(32))"
                f" | u64(ph(q + u64(1), u64(0), kl, kh)));")
    else:
        body = f"return {t}(ph(u64(iota(n)), u64(0), kl, kh));"
    src = _PH + f"fn k(s: i64, n: i64) -> {t}[n] {{\n    let kl = u32(s);\n    let kh = u32(s >> 32);\n    {body}\n}}\n"
    out = _alloc((size,), dtype)
    if size:
        _module(src)(int(seed), size, out=out)
    return GPUArray._wrap(out).reshape(shape)


def rand(shape, dtype=np.float32, stream=None, seed=None):
    """Uniform numbers in [0, 1) for float dtypes; uniformly random bits for integer ones
    (PyCUDA's rand gives int32 and uint32 the whole range, as here). seed=None takes the
    next of a process-wide sequence."""
    dtype = _canon(dtype)
    if dtype.kind in "iu":
        return _rand_int(shape, dtype, next(_seeds) if seed is None else seed)
    return _gen("rand", shape, dtype, seed)


def randn(shape, dtype=np.float32, stream=None, seed=None):
    """Standard normal numbers (Philox + Box-Muller)."""
    return _gen("randn", shape, dtype, seed)


normal = randn


class PhiloxGenerator:
    """A generator in PyCUDA's style (gen_uniform, gen_normal, fill_*) on one seed
    sequence: each call uses the next seed."""

    def __init__(self, seed=0):
        self._seeds = itertools.count(int(seed))

    def gen_uniform(self, shape, dtype=np.float32, stream=None):
        return rand(shape, dtype, seed=next(self._seeds))

    def gen_normal(self, shape, dtype=np.float32, stream=None):
        return randn(shape, dtype, seed=next(self._seeds))

    def fill_uniform(self, data, stream=None):
        self._fill("rand", data)

    def fill_normal(self, data, stream=None):
        self._fill("randn", data)

    def _fill(self, kind, data):
        if data.shape:
            seed = next(self._seeds)
            _write_through(data, lambda d: _gen(kind, data.shape, data.dtype, seed, into=d))
        else:
            data._assign(_gen(kind, data.shape, data.dtype, next(self._seeds)))


# ---- Sobol direction vectors ---------------------------------------------------------------

class direction_vector_set(enum.IntEnum):
    """cuRAND's curandDirectionVectorSet_t, as PyCUDA names it."""
    VECTOR_32 = 101
    SCRAMBLED_VECTOR_32 = 102
    VECTOR_64 = 103
    SCRAMBLED_VECTOR_64 = 104


# Joe and Kuo's initial direction numbers (new-joe-kuo-6.21201, "Constructing Sobol
# sequences with better two-dimensional projections", SIAM J. Sci. Comput. 30, 2008) for
# dimensions 2 .. 1024, packed: per dimension, in order, the middle coefficients a of its
# primitive polynomial (s - 1 bits; the polynomials are those of degree 1, 2, ... in
# increasing order, s their degree) and m_2 .. m_s without their low bit (k - 1 bits for
# m_k; m_1 is 1), as one little-endian bit string. They were read off cuRAND's
# CURAND_DIRECTION_VECTORS_32_JOEKUO6 table (m_k = v_k >> (32 - k)), whose 20000
# dimensions, 32- and 64-bit, the recurrence below reproduces exactly
# (tests/python/test_pycuda_curandom.py checks it where libcurand is installed).
_JK_DIMS = 1024
_JK = """
FxGFtVBIlJybS0Aj5dWHcXDDVcG48cRH2NxYptIH756ZuO2IhzzxQ0pgmhNTrKeo/VOxST2uCSN+NiQAvCx1pciO
SusFm/pYR+REtHhTCw3cA9/vpnnMn2JDjvwNpq/03z+YJa1i8k1p15Hw8rWgltjDDzzJgiyBmUamcpy4FyDLHS5H
zpHxvbk3qEI9GB5GtnLY84dIGs2j/r1aL1XVhAiVo8v63rAGsAkiEBDORbBqEfF5ZvkZaKGPtsXCkoPntS98Wmrw
S/N9SoluN8ie+52yQ//ZGFA+Mt9pBTiEqvb5kkpuDe4UGkWhQQNBUvYOsN9+VVANlAVb8hvjP+81yGdbP2cKpP5n
h8btk/KQbSxqfVuvB4Ex0Kx8OvB8AJGYTkXPV4rBte+P8di0p6uYkQwEjq+EKQk/DE+d6BTaCHc6dedlh61l4ayT
A2us9UfRtdIK2lZi608JeeK5D5mnAf6b55xYB8IAQBLZe5xfdQzx2k42NXjNvUhcwq7jG7WpQ1kuFjLwTuY/c8ir
pm7QJlNs7HO2BccX32wN/O/0VAlLx9a/uYR6SQRyEVL8rVwDS+b3H5o3IaOx8tlWWpDpDvDaPTLuNESIAO6NKvtA
+ZQKhPl/VM4UFzFtBhd8KmIyRXDimfiaI954k/oxhwWf7spO55nJJ7CLCH+8c98LWp2hkMnIUQPGqP4rcyZURVKe
+1bbiZgO46EzPKwnTA3NshYfisRs7ZyMrPrMtgQgubWO5aFxqaMwFa9b23VybCpVZaiSL2Nuy6FxnNBKWM6FNeW4
T7DTDDUpbxP6ewTN7vtw6SEg/P3kmsq5B1NC0cN7mSOhMASnK7gDSYx1+unttBsd/DkLQ3DIu6Bc+yBxkjL+DbWx
tNT6uxfoeDyFdcAXY8FPnTcha3tJNJuU9YkzaV14IyXUAGBhRqDl3Vlar3EMVVv7tlhRUfpY+93KT6vf0It1G86A
v7njQ97l9NYHWYNKJHNccp4F7Olx+qMlS0G+pLTpD1LLlzWpGgRmixebsc6Xd8OvErF5V5P/15XvKa23HFNvvCZf
G40AJE+bqTTN9NjXHPnbtUJ7U2evSHye3z565S+18ccmHDHmswLsjfEeTgh1FnhjrdSdeGNUwA+y5Vlq5LKALsQM
ky0yO0IAPlx7YW8zBhsh4bZmc7QMaofD5QKbQRw+pnxEt1fBPYwVLTMegQ6MyCIPWI3zLCghNcDnlXtde2JnJ/yL
et9PRWDEBke/QAALM4ZDGRod2xkm456NY3wNNJw9lZBtlHBwKKa/nvvYWufQx5U7Le971IE2s5eFMbTV4xehIQvU
umvIQXWUO72sPJGZgdBYd/WDJMBKwm0IXGlKlHdZYpMi9p1cspFJ+1N+PTEgXg3tYjGL4tiqhqNFhCHlIdYyrNsA
hIpkbicrOum/lca5gZiKO2Auk6u38Te1X11+EsrIAzyWv9THIVd57DeCwbH+3xAsGB6D71DGJZJKrua+qShB5H5i
zbtGZikOHIubP5ta5oYx+ziJM6VZ8EUMdqwuqIw86tLyRCxAMMVGw/aJ6uCm5q0rAiSW3qsblPwZCKiJF6VapZTQ
S0g2oIgSW6FAa07AKS4URQ4xXfy0rh2SwlLcWV6mzzB5vbE3i4p8bWKSWpnvSqXyFAPUj5xdMPzJkwLCeHm5K1Sg
8QXFLFgTKTLkO82hFptTM8jGizJVsKlU8DHdmjwGVWH8Y6ke4x2zYqtuoJFGiGhFUZD7sb1KVgvXr8Yw7G76Ft2E
r/yVhYSuqBPyNuk47F2Mdb8fNpFsvHZrGE24fF599Vuj2ndfPwJrNSAT/GUxEWbfwxEL/cpHzI/zMKdP7JOZmWyp
8jcX/zNSG/8WWsEVaBSlOvbpV9vSlGSBrIptF6wJtlRXJBoJXsOZmX7T7BjKJqLbLn+Y9L9t9E/M6Kvn69s/j73i
pkppuJvFeO67xVRxi7Iy8gAq5OTAAqCggNRCyjFpkEqvvF+uq42oSfrENm4XSJaAYZT29k5P3mnHueJP3tEERIp6
IaO9/FcikBfZkHt2HTDFdfqz+brZ5OHyH+72laOsgzEwlQp81pDu/9x4GqhCJrkQ56FlcMyuTFIlHPGg8TCZ6vT8
aUVETJeKdXU9jFAGTQjzer0aY6ItzQoGTjkyg3PhyJwJhbSwXhb8iHoR2avvv3wPdlryxFFwf6g83yRdhcA4+FjM
SfypMUW0xkGWTY8IDUII1y/jT9pxiIB/Y9ovcuaR95vMZDk5D8rr3aQ5aflR7wy6UlPlByfCDIMVJ/WlPIvp1p9O
lJYzz0TA7p5s1ZueWbDOQC1QtXxVOhuHoqH8oPJKbx2taEIo4SWVTeoN6N6ECOW3NKGlai8IYQBqm4sYOFX6ftTo
hEJzSIWgqoBAUHUD9h1WMYrmagmUDLFyCDLxVWUzb91Xqty7h23hms2+bZDb8kjWRR2xA1UH/WwIf0WQaAyRWqUo
wJkcJGC3RFsb2iwtV29bjtc3FdrX5PIK3P4rm7nXXWOUTc409bQ7FZGh4sgrhFc4+xuj1no87wbwI5Goalrf+qZW
N4mhncD0I9iwZml4hw2QrYu7T40QnyxoEcr1bCd+vxroBv76VOwDfOhQ/YLJeBINYfdzDs+xO35/kMtJfWQ+hUZ2
0g1hySfEDMdHDT+VO9VSc4fVTi9392zRfsrVcR44gsFksPv0/CUsmBY88/F5quC45iF8BbSuus4GP3c7aU1tlrzy
RMvT2Jgjb9jY+qilhFyum2FOXY8xGQ+XWQbPfkbWzAFDFrvtDG0pSPTczJucQaOSlzXCt9nbMYGF165whnP9SVZ+
GePO+CRDvnIhzI/NNPNuzeabS71OzL2F411H627C+/na1q53dhGxfYu2PYFw7vIRxKc7cNVCTJl/LHikMeuIRz4/
8oqUckCROqblk+FTD7BRP82vvXB5VyUhppfpy6ZwKqhY/0S3wnLPmNG+qTS6KljjYv6ZME/gfd0j/Vai0jy3j6H8
Dx875SJCSvo7Ua5waMpwKfCi81DHy3TznAZB3LnqC5MLXfRgX1gHub1hVUAfrKPlaXbkOcXOBPY6lRgKfSc/0OAq
Xto/4CkERh36uTrbou3MbhmE27xdoUTQ8z6PUE9qbTDqtSs9Eo2VJjFGTLwkdiIRIFmd/1PEjFNk5/rXn67BAb+K
WnmG+A8j5ORggXsaSJMDSwp3LWiL+bdnoVk+E8a06ur3Mn+REtkYXfPkITAF/ZYdmFufEBObGpa8I7QTam0kMTpg
g4wSDzTmir/qupG1Od7LCqpEQTyiFwrfH0hPsfNMQHb2cwJgR3DLiSC/TIyz7CErP0FUWFRegM8LlCtqwF3kV1wy
aoGF/oMM8j1cVbqyvAhJU2UeoCh5GJfiU58d2guRHLM/E0IQFrSJP2TUQdLK1I+9tOWMP6f2MgHGN9afqcXjEkli
OFTANLjX+jGVxBL/4AYOELnCtNSfLuYsBs0xk5uoVx6denDfvKeaGWWo07fXvVu7aVL/gLDvfl0Y1zcHwlAhM2fx
8bom6huC5nZOE29d3fpEUqmkVLBy4re4qElDicaOwH3kGXVZGQpFgZvfqqMw7Q1TPkZOkqck7AF5Hew9S6OVNDS1
vGRiop1ME6V8GfsXWT/yh0pTH/I1uVttxlGHByQKfVGiT5gqRnIJbQcgf6FkdSm3qCUfrBYprrqWZwbkNRO21lWs
NEql90KatLtAWBiw/WFu8axXtD2LrG5tAxcEGxp9sJF+xMtkZIS+wrbHjHEfqkxfMqAtFyTRNJZZkiQ5n6IWBSk1
SL7Ad7y2SjS9ho6NSvwMHZit4vqax2eQwBjeYNzSX6vGfWCwM6GTp+TbLOp8+0J0qZ0apTGJb6vrbi5h5wP4heIq
4q2aEawv9Tsxb72ymQo+8ihldrPXGkEVT9xbWNv3lPaFf9gUij0B3078RUW/7UNHKyR/dobPyWwC04VTm9o4Tb1+
KCNxJOYvukO7eZol+ojSWrOj0yLGRdm9hHJda6307vi+6UyIJ/H0VyM9Qwyji1Qr4NLkJ1mKuTHZZ6GgjLMVIq13
TzpZlvOqORlqPLtO9DJZ8HRcAFrwxmIWU+3OHIV6UYnN6Dn2btRfgFe8SaTeHg+V7tEKOUeBpr96cVv9OecLZC9r
2K662vPUbG7PaRw6/7qhkt6ss9Esuj5U9HmG5pTvyDWOjBIf5NR7vbyxSNOFZA0t2/dXrYt6QvN2dBNe5T9aSXhW
BrfkL36F6/UD282fbFkDejXoAm/csSH7rrCNyhsRH5fKtSZ2w5Lpxr+oa/fHkjtj7aq8GIq32szxM6I/GLdrkcuK
IL2gHKaU+XR5s/4591kn6/nuxB163C0PXangrdsvOQ9nfc47vb90GXUxnjIdC5j9MzGs+FGmUwSTaV7W/49cd7tg
6i3Babl06JEnvOTBu2z0BC2ciQVzXPFPDENDHHJeQ/unE9DrxU/e1RDe2VAYmELK70hlh+ykZwt1mUOYy5WW1L8I
MfOCzeYvMPCxQ+ZntkqRPZh1ys4sqM0VY+MtfnueNZ36l4qEM6weNAyPC8+BuiVAkX7KXdCRaFxrI9ROkQrkBKDz
zaAa0vPIJCv9QKlWGw0KOR7YCsKl60MOuQXbACoGhL1k2BRUS4smArHhUWJIVzyfc1S4pwupqJpGp9EMr1igMroi
sxDw4urNLbDud0fZi9wnjp7WsJlyeJRTadMHWi2vFjXzC8wWzZ78yP1yvkVAxBNU6KHb0SWvKxQyFZqYjPuoxASI
T6k5i4g3boQQMDwDRrLxKXwLRKgUte5NPk4cFJ7UJLVY3LfkmrgfuF5jzXxhgnlULNxuO7oP1VqDxKjB0LH32wgs
ATyPu2Ujf+gOP4DEHGLmDQBqmpbF+jr9jlRNwDHRguzAeflp2aIBCG/pNFU8w0O0XwrUYjSpdgiqafz8MjA3fzfd
epj3GvHcQCjQjsR0VgWWtVQE5MBqsvK4J2bvtxEEf6wGKo72EAhPT0DKoXvvkEgGokJKQfsXXgGHQbAoY3YFGgZ5
s6Jz6VpxVRdUowg7p8QUdTDBXiCS2MjzqU/E7vqFAfmpG9T6OpKAKUsG+/4kHtx5HgZdOhxEyzx97evw/l3KeUBI
Q1WJGOpoc5UYArdarf0XxlNEWa8IA6my3SGvbMGrCCUURpOj5LD5/3aJl/CrUcJrzgrKoCR1AuL54gx9vI5oDhEK
BRn8+p0DKfur7iygSKUXZcjjnphKtdBsWeYuTcdqGOPzgoPd0Bq9Z5wcV0MM03fUrMeQQfkszjJcaIgTAhcBorjD
znCP9pAGjrLMjm59g/NJZF9wkx0qsQgOAJMFDqyzpagj4TiEIh/79Ql8y9FO5vBQpbMCcB7Dm2O+g+DWeRbuGec0
ohcPGiuek57oLHwtOT4kFfceSvooJy6G/YAd4+sM82jrG/cwBBoDGbLC+qX6BiURfxu4BxJ1O0E980Y8A8aEqF9U
rERUHlG8LEZUjVJge3WHhI4uBSVOVXv6It8SghbqZUer8beekku8zu8uOhKXwmf9PKHk2VKy9IOyFzD/ROSRXJjU
zNdr6E8UVK5BDI7KLNp2wlKU83UYjGXhAVsxTYH+YOpzQu5rFcJkhZXjqhbmyXQjyPsVxOCNZfP2Wh6/sFlg4IlZ
AHRyb2tcd0GjKjF//YlUIZPsRWKH2qcxK7IgJdUXn/ZW+T6MqkHSsGCwrZW02OWzRPYHk6EQ7AKhAGS4EfVXxuAC
MWa8J20UiTcaUaWFdWVFCtCyjmrgltfJfUxP+6XbrKHaLrkcHnwPoOneBjW6YKtJZ27hG4obE+q5j2t4UqGvom/U
MJk6qOA+JuzHw+G8YByiwCD9AUwaB3/tUN3lgRnZHqUcCyXcQCSFAeP6enQkpQIY9BYtnbUH1OGg8jchwYBJ5G5g
R+VlftMBFeIZiLIdKxDBW3c/VeTzRnecm5KtYbKa5y2i8PG4RUTtSgoFKrnbx9OSIvnRv2ZFZ88fVoz1CHlvp/AO
cIHAYpHpwnnItofVCZKOmhZq1hQtoBg8yB6cFzqMpR6cXiAhUu2cSAeVPcguLoX4bgE8aSjnBBtoHsLZQ2ljSMJQ
1X+iyBu7eOiswtNyybQimnMva30SC+bdEIy0i2ViaqgC1cbxNhJr3E4Jhh5saXX/yErknWrTgjL/LREk2HsTRI80
q11mYJN0Ktfvpjj3PdNRTkLijWQCloX8k5hrCVMRH+OiFe5bPP8lEfnUORxX+hLqIZi0mW74bxv5zILqY5Laj35o
n/Uhb7aVyemjiKJklPbIdBwnL4cpXG9hNO1HJqH8JsKjDj9AX/6xi3JSUtxJfauKokk4iqRXs1VOBpJLjA8pLz2r
wj90Rp5qpqXwTz/c8VqoGlqknAKjjmIceab93WGlyrvZIGCAkw/Am6gq3UKW8qyBKxahS6xoYBzDn10Thg03uLLZ
cb+asuNCkH3tSi3JTreO9i24Gz8scYfdKR9j6s17RLG8sHraw6xE7iZzyjJ18QPOY/o/LXAxy3KYf9I9BGP6oPAs
Et0VkJG/4y+G8rWcAFeiul1hJQPV3hKnfeMOUvsMdSyKizUfGnVjfNS/j30uMMlFZPBsXCu5xrrMrQw6DWFWioki
9eKuUZJuEkmg6hAHjMftsMRNKGFK9SYwnOF4GmcAlgUVP8LIT5qBOdyFq6wBFhMohaVVmktioR59TIrU6a6s7DZX
lVsyIGHWzCzOg+DRSco8VNnjdYo2A3dwLFMH69oVbxxr6e/SDD8bPKttGlRPobwzr/Jn+8r6uKTld8+0DZRL8C+O
c+B2QxPYWq1aNXVuPfcmjYVV8mTa5HsDOcA0P/v+YPcU3HTkDtZYzku7Stcn+B2VW4NyygBJD37jKE54zeUnvxYP
0zFyThI2HY4CzJIHo7KPY92kwwdfcnY7mZH8ekPrz+lzzNPO+DolDhvtaPGfrJby2kU5qhKb6akQpd/bVefMxHl9
W+zxFrPdpwO6iiO730nZf4CvDlgIgbEM2QnuWuY6uOaWXw5ZL0ziT+2U60zN8V/Ge+gyuSO5qHgIrcclOz7zjjbe
suWCboEJ5Bg86my0J1zE+N74DfL8jFzpvlmEw9Uy0APbN+CyHSGgf9pxjwqvRi6D16e6MzA+xn4MbMWIAWhObvkY
AFQTolZX1rSM78OOJ3gMsqJVRtLfj126OCOlmZpDIoQ/aq+EQLmIXDjm8QBNZwMK5orFhS2nDDSTPH2BGD/sP2M8
UPd7QLZCN+mtiBtBfjBAa5DHqC4qOgZVqMEBxMhUIXVIHbT1hcldoD6ol917kLQkkHok8Hvs7iVC8VX/G4Lo4CwK
6QzBrGtIJZ9wuVgcOlSsVBFnQZnS7YkKkce8oxzcvUttxl1Fg7HfxSiztiuSsRUxvk9+hSeF4jM+X7QjPh9gdJzd
aGaYEc+hR/ISGGdKuKdGzSVqjkIsgATQ0hsJXfHsgOrsqkoJcYT61L7dWBEC9KDT0RUuCXHj0A6tJNhHbW2VunY5
Mkr+HiGZYm9B9K5LvEaMh9R7PRML0HxxSGcikh5Pn+hgKnNMR9BIpNz1rgWLYTwDTyUNcTQ3d3vz4dn7muQev4tE
uVkfrMN+UqVFMDSYLylTrgJKrmfXweZmA2t2TynNUbBSby5oGYPuqgSnZfktRJ9OTr7uUjYOMHH+Higwk+BLuQSA
U2pDHsleNTDhGKKYXvnRzJlXybSQ5PqinhCCVB0/E84d2L0caGyUn3xNEWBdcZHlNRUIzTY9JBP3uPmOkoUZ3oQj
CdU/uxOFbaOHU9yNqlTdzGoYirlOMaL+fhTnx4Eccz5d8+GJTEUIfZH2+lREU4FQtZlX91YE1KSd2UYwaC9bWnBQ
NZzf7ooq3VMGvUNVL+wMs9tchwy9EMVZxBmDwiph595k1HsXJm2UwGGo/6FRQRgxDRlv08RIhUkpOCQTPxEWWfFc
NAVHecfiNt4x+h3clJ86QM6+boXv8YVTPv8f6BOmiSiyf0/ZhPkcyY7O13IBPjVbGQcWJ4WYZbdKFbxuZemPePtF
V0FVng1jq7Fd9eXnNFa9A5qLh4LlwBMiYlVBAwQfThBlkOCu1ZkQEVI75poJO9BWm0lg7V/fA0yuel0Znp7TWEUu
Q0a+eRXIu3+m1kZXfaQCliWi/17ANyT9H6RYPJBVcHEONsV5eWQl+/vUP+EPBMWNkrU1e0DcCBeXXShc1lVpEBhX
ziu0PLhZMSljcNiQ7iqbaWgZb66gFrmFZ+rPpLX5ZsrRLbQZUsfaluxpZKOS0qc6TvRbAjSEDONIz/I/kXABQY2x
EZB6OYy6yzUG2imH0m3zihI1F3Y3COdoVqs022tdPUIVRNkxxq2+bHaxfaT6s6Rns1qC7PXBHiOZBZBhnXTIV6oy
wO6kumj5tuZfIyJ4Z0nFiTCr0YGNHm5ZrOxdMIrmEFaO6mOrWocXWWdWmGQvRpQACxhh0m1h08e6sNxfUoJH+IfN
CGM9sncnnBcxIJb2KWzWmXY3qmuYGG1x+296LxynJYpjaAZWkna41Hu/d5FRik+Ef6kt9r4aRnZ5Um00BU3jtKYr
GcbID2ro9cO6vRVlYy568io1DWRM/5UVUpCAsjqIMethXiaf0LNFSNzBET2JmSmKcKWF3/LQl4lmoFVEg8I44nbG
3JrNrIQOfXvlq8C7cLbBZKvJ6eZ+9VzNmZi49UXpZwGyQF1nJJUDX0Fpa4E5jqH9vub7F4QEQZ7NjDZq7jdvQrfV
fuBSGhe0qQ9fkj/H235poGDMwdvndf4oyqYpRpvL2wKBmlzSnWY8uwj/N/+/07yImn5LAwimVAEPw91qKwqUpGQ4
/xYv4ax93rGTsXAUjyjEurZaY6w1JPAkSZASm++LlNft9pb+D3VsIp7UenZbankVwLRJIkHohDQg11en1eauFAoE
+RBwQs5q280EG0xgF/Vt0BJvjB4cRSjaFIrrL76l1kgb5ahKtGzZ/ibn7EkgAiQs4ncOnFBPyYmzHuseEpFw37lz
dkF2bAxjscJRTmDIOlhS3CUqFDcoudEjF+p5oeCQ3FJTGXoHeinupHpyZjG8X+zJkxZ0T8uFoWah8PU01bbcLqdB
EQ747t4ZMGfDnHKTDraj0wI2cldzZv4++GyQnGl+2NH9HHuLqmR50M/cSAc5ueIZsVHn2Bstnf9k1DmOFa1ZQex0
gaSTYfnsdKFkWdUlmGPud4WC2mANWRe7yVwD8fUiL1pznT6sRDSpP9NM5fN2TduRBNeXlxxdVt8JMEWcQ64GGSN1
fievb7aZ10AV6/cJ3iVdF1+itS0tIEN4RcPYLj+WKQHjJ+IJRmbywnb7pWBBi1eL21RuUmNy+Dp+HjCeoAti5G77
xQR6M6B59KYGtLStdun1rLkuw9Yt+e9ZpmfMW4H2AxMOkkOyHq5ocST8ee5vCvZ6IsIXeGXuEZIqkux1mz4030hX
94dFtDdJOvHlsa7F88Ypn6kU3gEBFnjaHi99Lrnob0Q9bgrgyvUdlj0n1mnJ0+0I2IerITbGCdadU4ifn8dSs3+K
MURL5uJ+/KJoHzqZDphv4vxp1FWafd+Zh1Et9jceFPxAOPelK/XqXzBXgdalMKbeoPt/b1BGt1sY0aBr/wBqn2Zr
u5f8aZsiCujwcP+ZOGTn4mAzYE/8PEoJsBUMWnGBhdsW42Vum0A1PQnK5am57tZikoOoJ/hKDjXxL5bfg8LO4CXc
qhMxttBnCsODDe8Zi+L6xyPM+w8KSsOg3zU9bSxrSBjoMN2AS0cQLjZBYRPLqlXG1S8ALqaFREhbkrdezKY53hdS
PwSwcex1a43oYAhgh+nCKvV7WTykITq01tz4oBd4786Gyzs9YFs+xxIyrhzCG4Bp+8/EAU9gd8jIBXuJh1/YwbQL
Ym7QtadfA8v64XeIRQ553gRX1kMHkCaSh60ott/7yeBQo3gmfVguN2mgCyeaIlH2Vwlv88wdjv+Ku1HgnE1yE69h
VSwuhpWH2ONgj+veuJhMJYxCISN0gXf04nF5Ufum7kqNrRaNJcfQGMHsWFvYDDWuBxutywq4t00q29jwv4mgmcEq
2IyLYyA87jTrbRX3N0eObSkmeTdOLO4MeDvuoluz6oe0HPbe8OiXik8fKNe3+JLW40DKuopn+5yll22P+kGe13dt
RjrPYD6Cf0YH67Ah+coK/3ise5eja4daWXMRpEfubP0YNzRSYXqQrEmWpORO90MbhEN20rf/W7n67WCDE4l1eUGi
oYtje9lxJNowvmYgL6VzEliSlcknhsgscsHnakpqm2pVY0F/wiENLNkZyVArNT3I65LKJE42aiMf4o4oXw2ULlmk
TSW6XJGpVlJ6WiVI5KwRUuvbTDm/lg5K2ifS9ak+ZZQWfYNt+3/yikGVTv3I85exnOs+2laShi/unRt/M+4/Xfmw
/N8ZsuLxO1uHpfkSfwSDbnNgz7qW4fbdTcJlfdEGVFvCA7VsCBeBD5eRc5m+XNaGss4QSg8O5pyt3rSMeHpxLKCY
eqRoj4EwXz0P8GV6y+pi/D4/8zD2qDnHKcRDo9lLxLK6ZsP3VeBkoo+/k6CbYqZYXQvurciy03KKgj+PE2t88Fra
zQkCtXf51WNr+epXZ2DQ7kEG2FOtVMidKfHU/VJBSnK4N3g6haG2HCSrHn2M45lkDcEUgZdBQeappysuu1I2BECM
kxyfv0J9+08vUDS3rnxeFPzkrERc6CtL+9mlAGHxvPLFVnb1J1GKwikGCTdBn0SgwyFZ1A0bM2PdaIMqsd9YSRji
W/+2E5rkctV4ExslCcaDaLpH46cPfEEuzGCiuMuqTGfbBONR1Yu+PSvo34FtQXMPNOqGRkO7m2/XbzHsKHDSpe/p
o7TMkNqj2xSBVrR+zYRQ3pAyies4rYxYWLrmSWoxlXlokpBPo7YyqTaAMJz3j2/FNSClrcQfJqh4ssngsJdaZawW
tAztPd5BZKrJ5zBlTnLAlfa3aRX1aP7QM1LngTmnnjtx/XwrF9t1L58iBVklNlhnPcYPhlqYTHYCIvWHWQY96i14
1q8FFGJ9xiOpIQRG7Bcs6Ta6Aab2Skiy8nxtJO+8myr8ZlLSxQ5Hoc6LqrCK3/q0OkLmbniqC1rkXdh4cUc1gavi
2AXhQdl3mTBatgq02U158Tsf+krmavS4kmLAxFNH/PCrdn3FL0dy4KFboLO+25Dg5G91g3Vl0Er6gA843lorF4xw
a2g4roWSoeq/UGquOCUPOrCipCX2lbrul15LpWf1lj0P7AqGHBJxBowBCJ3EK38GuQ1B57EyhEOvSfMnsThDq52g
2r0CZ8LUwuOxDxhpALsF8B4UCumPf2YXLIcNPdWYcQAGifmwUOKW3Ki9qLqjp8SaZUixRJviKQ28F+vXKM0DmY9R
yip37NLypWRK0dDZGUGyjWIua5PT72v4FspalSqi0tSB9SArLVtdEFFDT1IldRrnbEEe03wyuBlRM6Gz7VdCNrL8
lBJ/LdIGJxzbP/bYXB7YTbsjbm9rDlaHATk5bZy+uEURVohFbWq1Jm69NQ7JIuTMYtlmnHoJgCKzlKuLafvkWuto
5Pg3reGo7SR18bwu7oB9rhW3moBmDgzITqMezt0GnVZ/kNWzj99SgvsqKlBfQB33boof7nSPUm9Ehx4Dytu4/jTw
jXMi9eOIKuR+u7PpPQOMd/0Ylqv1ecGoz84z8Hhwrp/DpWBPRAbGwQe6rh1NhN3BxUev8Og6K3IynI3bOc/DqYsi
mI60SVFcQGfiLthcjQvuYN33q727340a0YlhY+LYfPFmHi67E+DRftxjyqvz/A43rHGD174zrxGRWsf8BrBcMRm9
BTxmj0PaGMhxtvhKSbE8nHk8roAg54vdoY0pJYoOd4yir2XtGnuT/k5IULS+/b4HpQIBsZPuvPvSGq5Y3fWwo5n2
8IugVtskQTqtzZTkL4cfH3BZtKvethnA+6nq1oSVlWkYnAAT51wBLdmtYE8NC/wZza+d1HtgLC06sMpi1kxXRuoY
LD7BABg5/SsKhqmZYgafb1Onv1fSUNRxJYwBERFAjIgErsGz8FEuO5pg69qQBEvDgFYjhMXP5TwpJg6r/e8LnWFx
jkZkUSx724325c0ZEk9gsb7iXEcpMfyVHtDFdQpgwoxRLM+YChnPWQks+DcSOiixZ1ys+WxlKD3DPlzDMRdEuw5T
CRTtsZjHnFdCgGbiOd+iPx/3iIVjUGClnfNDgKx2a55Q+zNG//cMcrJ8D8GDFGbPZlrIRc7VQ4rU7gdUTSILwg58
0OW11Tv7mDy3MVfaHGwaUNqfcrxZl5TSdanGNDnLVKJ4uoIWLsXokC3XkPe0VKVL7Xtowcy7RYAhrBBGKpkLM7jD
QA8s80TAO77MEHU2MB+On3AWOzRnCpSyDDRbv6or03zPC/au8uqUCBZbs9ewFkuyZbugM1DOJUfBT6SG/04jjjnb
F8PU5JXRDjsa6bwG2ox773VYu5jcM1FypZMbDU63ELbPerxwqk2gKBXliD8L80NEQe7PlXeUA30mxHX3EwIH6LFS
tAVhlpC9MdE2qXzRpOMMsq3cNUqtkEcrIBAXW02ZTHW+KJ2GEigHV0rjLVi79EZ8+5088saJmg/T9iIX6DQkbcWt
4ExD32MINandbgE3OW2iNovZwTAAud3o9K7cgpaeRWTZJkjUYgSarGt7uTvxM1fnVo0YSRRY8A2vX/0IEbHgFwyT
kRKaNRQW6DEPN4OA6p7WZd51CP9YBlSDkVrHwY6G1ninEIrib+28mDUAx7nEuUPLtSACGzLW5cu5jU/XU3p/XBlQ
VVzkdl9nQj95Y8ckvoEUiJ3K2QaBHhpQ1r9WNhE68zdRNHTp02zZpVDlKYPY+7UbvGZ/FF4akJovAxSyn624Ifzg
oFT5bBWk9quljFSIj4qKA87a/AuHuHn3glVBbmzrCCzRBtHQOPLtsh3/WA7DSDSHXK/cti7kNNEcM36cVonbCd7E
UNNuL91i3W67MXi0sW1JTvPbxY27FWyn5o6Ijvkxd1acZJFZiQz3KirdbEHJMdgfKWv9PA=="""


def _primitive_degrees():
    """The degree of each primitive polynomial over GF(2), in the table's order: there are
    phi(2^s - 1) / s of degree s."""
    s = 1
    while True:
        n = m = (1 << s) - 1
        phi, f = n, 2
        while f * f <= m:
            if m % f == 0:
                phi -= phi // f
                while m % f == 0:
                    m //= f
            f += 1
        if m > 1:
            phi -= phi // m
        yield from itertools.repeat(s, phi // s)
        s += 1


@functools.lru_cache(maxsize=None)
def _joe_kuo():
    """[(s, a, [m_1 .. m_s])] for dimensions 2 .. _JK_DIMS."""
    bits = int.from_bytes(base64.b64decode("".join(_JK.split())), "little")
    out, degrees = [], _primitive_degrees()
    for _ in range(_JK_DIMS - 1):
        s = next(degrees)
        a, bits = bits & ((1 << (s - 1)) - 1), bits >> (s - 1)
        m = [1]
        for k in range(1, s):
            m.append(((bits & ((1 << k) - 1)) << 1) | 1)
            bits >>= k
        out.append((s, a, m))
    return out


@functools.lru_cache(maxsize=None)
def _vectors(count, width):
    """Sobol's direction vectors v_0 .. v_{width-1} of the first count dimensions: the
    first dimension's are 2^(width-1-k) (van der Corput's sequence); the others follow
    Bratley and Fox's recurrence from the Joe-Kuo numbers, or, past cuk's table, come from
    libcurand's (the same numbers for 20000 dimensions)."""
    dtype = np.uint32 if width == 32 else np.uint64
    if count > _JK_DIMS:
        return _curand_vectors(count, width)
    rows = [[1 << (width - 1 - k) for k in range(width)]]
    for s, a, m in _joe_kuo()[:max(count - 1, 0)]:
        v = [m[k] << (width - 1 - k) for k in range(min(s, width))]
        for k in range(s, width):
            x = v[k - s] ^ (v[k - s] >> s)
            for t in range(1, s):
                if (a >> (s - 1 - t)) & 1:
                    x ^= v[k - t]
            v.append(x)
        rows.append(v)
    return np.array(rows[:count], dtype=dtype).reshape(count, width)


def _curand_vectors(count, width):
    lib = _libcurand()
    if lib is None or count > 20000:
        raise ValueError(f"Sobol direction vectors for {count} dimensions: cuk has Joe and Kuo's numbers for the first "
                         f"{_JK_DIMS}, and libcurand (CUDA's, with 20000) "
                         + ("is not installed" if lib is None else "has no more")
                         + f"; use at most {_JK_DIMS} dimensions (dir_vector=generate_direction_vectors(n))")
    p = ctypes.c_void_p()
    if width == 32:
        st, ct = lib.curandGetDirectionVectors32(ctypes.byref(p), 101), ctypes.c_uint32
    else:
        st, ct = lib.curandGetDirectionVectors64(ctypes.byref(p), 103), ctypes.c_uint64
    if st != 0:
        raise RuntimeError(f"curandGetDirectionVectors{width} failed with status {st}")
    return np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ct)), shape=(20000, width))[:count].copy()


def _mix(x):
    """splitmix64's finaliser: the fixed pseudo-random bits of the scrambled tables."""
    x = np.asarray(x, np.uint64)
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _parity(x):
    for sh in (32, 16, 8, 4, 2, 1):
        x = x ^ (x >> np.uint64(sh))
    return x & np.uint64(1)


def _scrambled(v, width):
    """Matousek's linear matrix scrambling: dimension j's vectors multiplied by a fixed
    random lower-triangular binary matrix with a unit diagonal, which keeps the sequence's
    net property (its low discrepancy). cuRAND's scrambled set is another such table."""
    count = v.shape[0]
    out = np.zeros((count, width), np.uint64)
    rows = np.arange(width, dtype=np.uint64)
    full = np.uint64((1 << width) - 1)
    for lo in range(0, count, 256):
        j = np.arange(lo, min(lo + 256, count), dtype=np.uint64)
        bits = _mix((j[:, None] << np.uint64(8)) + rows[None, :] + np.uint64(width << 40))
        pos = np.uint64(width - 1) - rows  # digit r is bit width-1-r
        above = (full << (pos + np.uint64(1))) & full if width < 64 else \
            np.where(pos == np.uint64(63), np.uint64(0), full << (pos + np.uint64(1)))
        masks = (np.uint64(1) << pos) | (bits & above)  # (dims, rows)
        x = v[lo:lo + len(j)].astype(np.uint64)
        par = _parity(x[:, :, None] & masks[:, None, :])  # (dims, vectors, rows)
        out[lo:lo + len(j)] = (par << pos[None, None, :]).sum(axis=2, dtype=np.uint64)
    return out.astype(v.dtype)


def _direction_vectors(count, direction):
    direction = direction_vector_set(direction if direction is not None else direction_vector_set.VECTOR_32)
    width = 64 if direction in (direction_vector_set.VECTOR_64, direction_vector_set.SCRAMBLED_VECTOR_64) else 32
    v = _vectors(int(count), width)
    if direction in (direction_vector_set.SCRAMBLED_VECTOR_32, direction_vector_set.SCRAMBLED_VECTOR_64):
        v = _scrambled(v, width)
    return v


def generate_direction_vectors(count, direction=None):
    """Sobol direction vectors for count dimensions as a GPUArray: (count, 32) uint32 for
    VECTOR_32 (the default) and SCRAMBLED_VECTOR_32, (count, 64) uint64 for the 64-bit sets."""
    return to_gpu(_direction_vectors(count, direction))


def generate_scramble_constants32(count):
    """count uint32 constants the scrambled Sobol generators XOR into their dimensions'
    points (a digital shift), fixed per dimension."""
    return to_gpu((_mix(np.arange(int(count), dtype=np.uint64) + np.uint64(32 << 40)) >> np.uint64(32))
                  .astype(np.uint32))


def generate_scramble_constants64(count):
    return to_gpu(_mix(np.arange(int(count), dtype=np.uint64) + np.uint64(64 << 40)))


# ---- the generator classes -----------------------------------------------------------------

def _dev(a):
    return to_gpu(np.ascontiguousarray(a))._storage()


def _host(a):
    return a.get() if isinstance(a, GPUArray) else np.asarray(a)


class _RandomNumberGeneratorBase:
    """PyCUDA's generators: g = block_count * generators_per_block generators (cuRAND's
    states, one per thread there); element i of an array they fill is draw i // g of
    generator i % g, and each generator goes on from where its last draw ended."""

    block_count = 4
    generators_per_block = 256
    generator_bits = 32
    has_box_muller = False

    def _count(self):
        return self.block_count * self.generators_per_block

    def _advance(self, n, per, pairs=False):
        g = self._g
        cnt = np.full(g, n // g, np.uint64)
        cnt[: n % g] += np.uint64(1)
        if pairs:  # Box-Muller draws come in pairs of words
            cnt = (cnt + np.uint64(1)) // np.uint64(2) * np.uint64(2)
        self._pos += cnt * np.uint64(per)

    def _dtype(self, what, dtype, allowed):
        dtype = np.dtype(dtype)
        if dtype not in [np.dtype(d) for d in allowed]:
            raise NotImplementedError(f"{type(self).__name__}.{what}: dtype {dtype} is not one of "
                                      + ", ".join(np.dtype(d).name for d in allowed))
        return dtype

    def _uniform_types(self):
        return [np.float32, np.float64, np.int32, np.uint32] + \
            ([np.int64, np.uint64] if self.generator_bits >= 64 else [])

    def _run(self, what, dtype, n, extra=(), args=(), lam=None):
        """Writes n draws of what ('uniform', 'normal', 'log_normal', 'poisson') as a new
        1-D array; lam: the in-place Poisson's array of means."""
        out = _alloc((n,), dtype)
        if n:
            src, words = self._source(what, _ty(dtype), dtype, lam is not None)
            ins = [lam._storage()] if lam is not None else []
            _module(src)(*self._state_args(), *ins, *([] if lam is not None else [n]), *args, out=out)
            self._advance(n, *words)
        return GPUArray._wrap(out)

    @staticmethod
    def _into(data, result):
        data._assign(result.reshape(data.shape))

    def fill_uniform(self, data, stream=None):
        dtype = self._dtype("fill_uniform", data.dtype, self._uniform_types())
        self._into(data, self._run("uniform", dtype, data.size))

    def fill_normal(self, data, stream=None):
        dtype = self._dtype("fill_normal", data.dtype, [np.float32, np.float64])
        self._into(data, self._run("normal", dtype, data.size))

    def fill_log_normal(self, data, mean, stddev, stream=None):
        dtype = self._dtype("fill_log_normal", data.dtype, [np.float32, np.float64])
        self._into(data, self._run("log_normal", dtype, data.size, args=(float(mean), float(stddev))))

    def fill_poisson(self, data, lambda_value=None, stream=None):
        """Poisson draws with mean lambda_value, or, without it, each element's own value
        as its mean (in place, as PyCUDA's)."""
        if lambda_value is None:
            dtype = self._dtype("fill_poisson", data.dtype, [np.float32, np.float64, np.uint32, np.int32])
            lam = data if data.flags.c_contiguous else data.copy()
            self._into(data, self._run("poisson", dtype, data.size, lam=lam.reshape(data.size)))
        else:
            dtype = self._dtype("fill_poisson", data.dtype, [np.uint32, np.int32])
            self._into(data, self._run("poisson", dtype, data.size, args=(float(lambda_value),)))

    def gen_uniform(self, shape, dtype=np.float32, stream=None):
        dtype = self._dtype("gen_uniform", dtype, self._uniform_types())
        return self._run("uniform", dtype, _size(shape)).reshape(_shape(shape))

    def gen_normal(self, shape, dtype=np.float32, stream=None):
        dtype = self._dtype("gen_normal", dtype, [np.float32, np.float64])
        return self._run("normal", dtype, _size(shape)).reshape(_shape(shape))

    def gen_log_normal(self, shape, dtype, mean, stddev, stream=None):
        dtype = self._dtype("gen_log_normal", dtype, [np.float32, np.float64])
        return self._run("log_normal", dtype, _size(shape), args=(float(mean), float(stddev))).reshape(_shape(shape))

    def gen_poisson(self, shape, dtype, lambda_value, stream=None):
        dtype = self._dtype("gen_poisson", dtype, [np.uint32, np.int32])
        return self._run("poisson", dtype, _size(shape), args=(float(lambda_value),)).reshape(_shape(shape))

    def call_skip_ahead(self, i, stream=None):
        """Every generator skips i draws."""
        self._pos += np.uint64(int(i))

    def call_skip_ahead_array(self, i, stream=None):
        """Generator j skips i[j] draws."""
        self._pos += _host(i).astype(np.uint64).reshape(self._g)

    @staticmethod
    def _head(params, lam):
        """The start of a program: its parameters and the element index e, generator j
        and that generator's draw number kq of each element."""
        ps = params + ([f"lamv: {lam}[n]"] if lam is not None else ["n: i64"])
        return ps, ["let e = iota(n);", "let j = e % g;", "let kq = u64(e / g);"]


class _PseudoRandomNumberGeneratorBase(_RandomNumberGeneratorBase):
    """XORWOW and MRG32k3a on Philox4x32-10 (cuk's generator, as the language's rand):
    generator j draws the 32-bit words of the Philox stream with the key seed[j] and the
    high counter words t_j (its sequence), from word offset on. Floats are made from the
    words as the language's rand and randn make them."""

    has_box_muller = True

    def __init__(self, seed_getter=None, offset=0):
        """seed_getter(count) gives an int32 GPUArray of seeds, one per generator (count is
        block_count * generators_per_block; another length sets the number of generators).
        Without it the seeds come from NumPy's global random state, as in PyCUDA."""
        count = self._count()
        if seed_getter is None:
            seed = np.random.randint(0, (1 << 31) - 1, count).astype(np.int32)
        else:
            seed = seed_getter(count)
        if not (isinstance(seed, (GPUArray, np.ndarray)) and seed.dtype == np.int32 and seed.ndim == 1 and seed.size):
            raise TypeError("seed must be a 1-D int32 GPUArray of seeds, one per generator")
        self._g = int(seed.size)
        self._key = to_gpu(_host(seed).astype(np.int64).astype(np.uint32))
        self._pos = np.full(self._g, int(offset), np.uint64)
        self._seq = np.arange(self._g, dtype=np.uint64)

    def _state_args(self):
        return [self._key._storage(), _dev(self._pos), _dev(self._seq)]

    def call_skip_ahead_sequence(self, i, stream=None):
        """Every generator moves i sequences on (2^64 words each in cuk's layout)."""
        self._seq += np.uint64(int(i)) * self._seq_step

    def call_skip_ahead_sequence_array(self, i, stream=None):
        self._seq += _host(i).astype(np.uint64).reshape(self._g) * self._seq_step

    _seq_step = np.uint64(1)

    @classmethod
    @functools.lru_cache(maxsize=None)
    def _source(cls, what, t, dtype, inplace):
        ps, body = cls._head(["key: u32[g]", "pos: u64[g]", "seqs: u64[g]"], t if inplace else None)
        body += ["let p0 = pos[j];", "let t = seqs[j];", "let kl = key[j];"]
        pre = _PH

        def w(q):
            return f"ph({q}, t, kl, u32(0))"

        if what == "uniform" and dtype.itemsize == 4:
            v = f"f32({w('p0 + kq')} >> u32(8)) * {_P24}" if dtype.kind == "f" else f"{t}({w('p0 + kq')})"
            body.append(f"return {v};")
            words = (1,)
        elif what in ("uniform", "poisson"):
            body += ["let q = p0 + u64(2) * kq;", f"let a = u64({w('q')});", f"let b = u64({w('q + u64(1)')});"]
            u53 = f"f64((a << u64(21)) ^ (b >> u64(11))) * {_P53}"
            if what == "poisson":
                pre += _NDTRI + _POIS
                lam = "f64(lamv)" if inplace else "lam"
                if not inplace:
                    ps.append("lam: f64")
                body.append(f"return {t}(pois({lam}, {u53}));")
            elif dtype.kind == "f":
                body.append(f"return {u53};")
            else:
                body.append(f"return {t}((a << u64(32)) | b);")
            words = (2,)
        else:  # normal, log_normal: Box-Muller on the word pair of draws 2m, 2m + 1
            body += ["let q = p0 + u64(2) * (kq / u64(2));", f"let a = {w('q')};", f"let b = {w('q + u64(1)')};",
                     f"let u1 = ({t}(a) + 1.0) * {_P32};", f"let u2 = {t}(b) * {_P32};",
                     "let r = sqrt(-2.0 * log(u1));",
                     "let z = kq % u64(2) == u64(0) ? r * cos(6.283185307179586 * u2) : r * sin(6.283185307179586 * u2);"]
            if what == "log_normal":
                ps += ["mu: f64", "sd: f64"]
                body.append(f"return exp({t}(mu) + {t}(sd) * z);")
            else:
                body.append("return z;")
            words = (1, True)
        src = pre + f"fn k({', '.join(ps)}) -> {t}[n] {{\n    " + "\n    ".join(body) + "\n}\n"
        return src, words


class XORWOWRandomNumberGenerator(_PseudoRandomNumberGeneratorBase):
    """PyCUDA's XORWOW generator class; the numbers are Philox's (see the base class)."""


class MRG32k3aRandomNumberGenerator(_PseudoRandomNumberGeneratorBase):
    """PyCUDA's MRG32k3a generator class; the numbers are Philox's (see the base class).
    Generator j starts at subsequence j; a sequence is 2^32 subsequences."""

    _seq_step = np.uint64(1 << 32)

    def call_skip_ahead_subsequence(self, i, stream=None):
        self._seq += np.uint64(int(i))

    def call_skip_ahead_subsequence_array(self, i, stream=None):
        self._seq += _host(i).astype(np.uint64).reshape(self._g)


class _SobolRandomNumberGeneratorBase(_RandomNumberGeneratorBase):
    """Sobol's quasi-random sequence: generator j is dimension j (its direction vectors
    dir_vector[j]), and point k of it is the XOR of the vectors picked by the bits of the
    Gray code of k (XORed with scramble[j] for the scrambled ones), so an array of
    m * g elements, reshaped to (m, g), holds m successive points of the g-dimensional
    sequence. Uniform floats are the points' midpoints in (0, 1); normals the inverse of
    the normal CDF at them; Poisson draws its inverse CDF, as cuRAND's."""

    _set = direction_vector_set.VECTOR_32
    _scramble = None

    def __init__(self, dir_vector=None, scramble_vector=None, offset=0):
        width = self.generator_bits
        udt = np.dtype(np.uint32 if width == 32 else np.uint64)
        if dir_vector is None:
            dir_vector = generate_direction_vectors(self._count(), self._set)
        if not (isinstance(dir_vector, (GPUArray, np.ndarray)) and dir_vector.dtype == udt
                and dir_vector.ndim == 2 and dir_vector.shape[1] == width and dir_vector.shape[0]):
            raise TypeError(f"dir_vector must be a {udt.name} GPUArray of shape (dimensions, {width})")
        self._g = int(dir_vector.shape[0])
        if self._scramble is None:
            scramble_vector = np.zeros(self._g, udt)
        elif scramble_vector is None:
            scramble_vector = self._scramble(self._g)
        if not (isinstance(scramble_vector, (GPUArray, np.ndarray)) and scramble_vector.dtype == udt
                and scramble_vector.shape == (self._g,)):
            raise TypeError(f"scramble_vector must be a {udt.name} GPUArray of shape ({self._g},)")
        self._v = to_gpu(_host(dir_vector))
        self._tab = to_gpu(_byte_tables(_host(dir_vector)))
        self._sc = to_gpu(_host(scramble_vector))
        self._pos = np.full(self._g, int(offset), np.uint64)

    def _state_args(self):
        return [self._tab._storage(), self._sc._storage(), _dev(self._pos)]

    @classmethod
    @functools.lru_cache(maxsize=None)
    def _source(cls, what, t, dtype, inplace):
        b = cls.generator_bits
        u = f"u{b}"
        ps, body = cls._head([f"tab: {u}[m]", f"sc: {u}[g]", "pos: u64[g]"], t if inplace else None)
        # the point: the XOR of the direction vectors the Gray code's set bits pick, a byte
        # at a time from _byte_tables (b / 8 gathers an element, neighbours read neighbours)
        terms = " ^ ".join(f"tab[({p * 256} + i64((gr >> u64({8 * p})) & u64(255))) * g + j]" for p in range(b // 8))
        body += ["let i = pos[j] + kq;", "let gr = i ^ (i >> u64(1));", f"let x = sc[j] ^ {terms};"]
        u53 = f"(f64(x) + 0.5) * {_P32}" if b == 32 else f"(f64(x >> u64(11)) + 0.5) * {_P53}"
        pre = ""
        if what == "uniform" and dtype.kind != "f":
            # 32-bit integers of a 64-bit point are its top bits (cuRAND's would be its
            # low ones, which the first points leave 0)
            v = f"{t}(x >> {u}({b - 8 * dtype.itemsize}))" if b > 8 * dtype.itemsize else f"{t}(x)"
        elif what == "uniform" and dtype.itemsize == 4:
            v = f"f32(x >> {u}({b - 24})) * {_P24} + {_P25}"
        elif what == "uniform":
            v = u53
        elif what == "poisson":
            pre = _NDTRI + _POIS
            if not inplace:
                ps.append("lam: f64")
            v = f"{t}(pois({'f64(lamv)' if inplace else 'lam'}, {u53}))"
        else:
            pre = _NDTRI
            if what == "log_normal":
                ps += ["mu: f64", "sd: f64"]
                v = f"{t}(exp(mu + sd * ndtri({u53})))"
            else:
                v = f"{t}(ndtri({u53}))"
        body.append(f"return {v};")
        src = pre + f"fn k({', '.join(ps)}) -> {t}[n] {{\n    " + "\n    ".join(body) + "\n}\n"
        return src, (1,)


def _byte_tables(v):
    """Direction vectors v (dimensions g x bits b) as b / 8 tables of the XOR of every subset
    of 8 consecutive vectors: flat, entry (p * 256 + c) * g + j is the XOR of v[j, 8p + k]
    over the set bits k of c, so that a point is b / 8 lookups."""
    g, b = v.shape
    tab = np.zeros((b // 8, 256, g), v.dtype)
    c = np.arange(256)
    for p in range(b // 8):
        for k in range(8):
            tab[p] ^= np.where(((c >> k) & 1)[:, None] == 1, v[:, 8 * p + k][None, :], v.dtype.type(0))
    return tab.reshape(-1)


class Sobol32RandomNumberGenerator(_SobolRandomNumberGeneratorBase):
    """32-bit Sobol points; Sobol32RandomNumberGenerator(dir_vector=None, offset=0)."""

    def __init__(self, dir_vector=None, offset=0):
        super().__init__(dir_vector, None, offset)


class ScrambledSobol32RandomNumberGenerator(_SobolRandomNumberGeneratorBase):
    _set = direction_vector_set.SCRAMBLED_VECTOR_32
    _scramble = staticmethod(generate_scramble_constants32)


class Sobol64RandomNumberGenerator(_SobolRandomNumberGeneratorBase):
    generator_bits = 64
    _set = direction_vector_set.VECTOR_64

    def __init__(self, dir_vector=None, offset=0):
        super().__init__(dir_vector, None, offset)


class ScrambledSobol64RandomNumberGenerator(_SobolRandomNumberGeneratorBase):
    generator_bits = 64
    _set = direction_vector_set.SCRAMBLED_VECTOR_64
    _scramble = staticmethod(generate_scramble_constants64)


def seed_getter_uniform(n):
    """n copies of one random int32 seed (from Python's random module, as PyCUDA's)."""
    import random
    return to_gpu(np.full(n, random.randint(0, 2 ** 31 - 1), np.int32))


def seed_getter_unique(n):
    """n random int32 seeds from NumPy's global random state."""
    return to_gpu(np.random.randint(0, 2 ** 31 - 1, n).astype(np.int32))

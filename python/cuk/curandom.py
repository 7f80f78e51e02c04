"""``pycuda.curandom`` on cuk: uniform and normal random numbers from the Philox
stream the language's ``rand``/``randn`` use, so ``rand(n, seed=s)`` here equals
``rand(n, seed=s)`` in a .cuk program, on the GPU and the CPU alike."""
import itertools
import numbers

import numpy as np

from .gpuarray import GPUArray, _alloc, _canon, _module, _ty

_seeds = itertools.count(12345)


def _gen(kind, shape, dtype, seed, into=None):
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(s) for s in shape)
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


def rand(shape, dtype=np.float32, stream=None, seed=None):
    """Uniform numbers in [0, 1). seed=None takes the next of a process-wide sequence."""
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
            _gen(kind, data.shape, data.dtype, next(self._seeds), into=data._storage())
        else:
            data._assign(_gen(kind, data.shape, data.dtype, next(self._seeds)))


# PyCUDA's generator names, all on Philox here
XORWOWRandomNumberGenerator = PhiloxGenerator
MRG32k3aRandomNumberGenerator = PhiloxGenerator
Sobol32RandomNumberGenerator = PhiloxGenerator

"""PyCUDA-layout kernels on the language's kernels (python/cuk/_lang.py): an
ElementwiseKernel assignment and a ReductionKernel's map and reduce expressions that
both languages read the same way become a .cuk function (so they run on the CPU backend
too); anything else (C casts, unknown functions, a preamble, several statements) is
left to the raw CUDA kernels, which need a GPU."""
import numpy as np
import pytest

import cukpath  # noqa: F401
import cuk.gpuarray as ga
from cuk import _lang
from cuk.elementwise import ElementwiseKernel, get_axpbyz_kernel
from cuk.reduction import ReductionKernel, get_dot_kernel, get_sum_kernel
from cuk.tools import parse_args

pytestmark = pytest.mark.skipif(ga.backend() != "cpu", reason="the GPU runs these in tests/gpu/python")


@pytest.mark.parametrize("args,op,ok", [
    ("float a, float *x, float *y, float *z", "z[i] = a*x[i] + y[i]", True),
    ("float a, float *x, float *y, float *z", "z[i] = x[i] > 0.5f ? fmaxf(a, y[i]) : -sqrtf(x[i]);", True),
    ("float *x", "x[i] = x[i] * 2", True),
    ("const double *in, double *out", "out[i] = fabs(in[i]) + 1.0", True),
    ("float *x, int *k", "k[i] = (int)x[i]", False),          # a C cast
    ("float *x, float *z", "z[i] = my_f(x[i])", False),       # not a function both know
    ("float *x, float *z", "z[i] = x[i]; z[i] += 1", False),  # several statements
    ("float *x, float *z", "z[i] = x[i + 1]", False),          # another element
])
def test_elementwise_translation(args, op, ok):
    assert (_lang.elementwise(parse_args(args), op, "", "", "") is not None) == ok


def test_elementwise_values():
    h = np.linspace(0, 1, 37, dtype=np.float32)
    x, y, z = ga.to_gpu(h), ga.to_gpu(1 - h), ga.empty(37, np.float32)
    k = ElementwiseKernel("float a, float *x, float *y, float *z",
                          "z[i] = x[i] > 0.5f ? fmaxf(a, y[i]) : -sqrtf(x[i])")
    k(np.float32(0.3), x, y, z)
    np.testing.assert_allclose(z.get(), np.where(h > 0.5, np.maximum(0.3, 1 - h), -np.sqrt(h)), rtol=1e-6)
    k2 = ElementwiseKernel("float *x", "x[i] = x[i] * 2")
    k2(x)
    np.testing.assert_array_equal(x.get(), h * 2)
    ax = get_axpbyz_kernel(np.float32, np.float32, np.float32)
    ax(np.float32(2), x, np.float32(-1), y, z)
    np.testing.assert_allclose(z.get(), 2 * (h * 2) - (1 - h), rtol=1e-6, atol=1e-7)


def test_reductions():
    h = np.linspace(-1, 2, 101)
    x = ga.to_gpu(h)
    assert get_sum_kernel(np.float64, np.float64)._lang is False  # translated on first call
    s = get_sum_kernel(np.float64, np.float64)
    np.testing.assert_allclose(s(x).get(), h.sum(), rtol=1e-12)
    assert s._lang is not None
    d = get_dot_kernel(np.float64, np.float64)
    np.testing.assert_allclose(d(x, x).get(), h @ h, rtol=1e-12)
    m = ReductionKernel(np.float64, "-INFINITY", "fmax(a, b)", "x[i] * 2", "const double *x")
    assert m(x).get() == 4.0
    o = ga.empty((), np.float64)
    assert d(x, x, out=o) is o
    np.testing.assert_allclose(o.get(), h @ h, rtol=1e-12)
    # a C cast: left to the raw kernel (which needs a GPU)
    assert _lang.reduction(np.float64, "0", "a+b", "(double)(int)x[i]", parse_args("const double *x"), "") is None

"""PyCUDA's driver and compiler points on cuk (issue 16): PointerHolderBase, every device
attribute, DynamicModule/DynamicSourceModule (NVRTC -rdc=true linked by nvJitLink with
libcudadevrt), cuk's include directory for NVRTC (C/C++ library headers for device code,
pycuda-complex.hpp, pycuda-helpers.hpp) and dtype_to_ctype for complex dtypes. NVRTC and
nvJitLink need no GPU, so the compiles and links run everywhere; the driver calls run
against bench/fake_libcuda.c; what needs a real GPU is skipped without one."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk
import cuk.driver as drv
from cuk import compiler
from cuk.tools import dtype_to_ctype, parse_c_arg

gpu = pytest.mark.skipif(not cuk.gpu_available(), reason="needs a GPU")
ARCH = "sm_90"


def nvrtc():
    try:
        return compiler.compile("__global__ void k() {}", arch=ARCH)
    except cuk.NoDeviceError as e:
        pytest.skip(f"no NVRTC: {e}")


def nvjitlink():
    nvrtc()
    try:
        cuk._cuk.nvjitlink_path()
    except cuk.NoDeviceError as e:
        pytest.skip(f"no nvJitLink: {e}")


# ---- the include directory -----------------------------------------------------------------

HEADERS = ["stdio.h", "stdlib.h", "string.h", "math.h", "stdint.h", "limits.h", "float.h", "assert.h", "stddef.h",
           "cstdio", "cstdlib", "cstring", "cmath", "cstdint", "climits", "cfloat", "cassert", "cstddef",
           "pycuda-complex.hpp", "pycuda-helpers.hpp"]


def test_include_dir_ships_the_headers():
    assert os.path.isdir(compiler.INCLUDE_DIR)
    for h in HEADERS:
        assert os.path.isfile(os.path.join(compiler.INCLUDE_DIR, h)), h


@pytest.mark.parametrize("std", [None, "-std=c++11", "-std=c++20"])
def test_headers_compile_with_nvrtc(std):
    nvrtc()
    src = "".join(f"#include <{h}>\n" for h in HEADERS) + r"""
    __constant__ float big = FLT_MAX, inf = INFINITY;
    __global__ void k(double *x, float *y, uint *u, int64_t *l, std::uint32_t *w) {
      printf("%d %s\n", INT_MAX, "x"); std::printf("y\n");
      x[0] = std::sqrt(x[0]) + std::isnan(x[0]) + std::abs(x[1]) + M_PI + DBL_EPSILON + std::pow(x[0], 2) + HUGE_VAL;
      y[0] = std::sqrt(y[0]) + std::fmax(y[0], 1.0f) + NAN + big + inf;
      l[0] = INT64_MAX + LLONG_MIN + CHAR_BIT + SIZE_MAX + offsetof(float2, y);
      void *p = std::malloc(4); std::memcpy(p, x, 4); std::memset(p, 0, 4); std::free(p);
      assert(x != NULL);
      std::size_t s = sizeof(std::int8_t); ptrdiff_t d = EXIT_SUCCESS; u[0] = (uint)(s + d); w[0] = UINT32_MAX;
    }
    """
    ptx = compiler.compile(src, options=[std] if std else [], arch=ARCH, target="ptx")
    assert b".entry k" in ptx


def test_pycuda_examples_sources_compile():
    # the kernels of PyCUDA's examples that stopped at "Compilation terminated"
    nvrtc()
    mandelbrot = r"""
    #include <stdio.h>
    #include <pycuda-complex.hpp>
    #include <math.h>
    typedef pycuda::complex<double> pyComplex;
    __device__ float norma(pyComplex z) { return norm(z); }
    __global__ void mandelbrot(double x0, double y0, double side, int L, int power, int *M) {
        int n_x = blockDim.x * gridDim.x, idx = threadIdx.x + blockDim.x * blockIdx.x;
        int idy = threadIdx.y + blockDim.y * blockIdx.y;
        float delta = side / n_x;
        pyComplex c(x0 - side / 2. + delta * idx, y0 - side / 2. + delta * idy), z = c;
        int h = 0;
        while (h < L && norma(z) < 2.0f) { z = pow(z, power) + c; h += 1; }
        M[idy * n_x + idx] = h;
    }
    """
    printf_src = """
    #include <stdio.h>
    __global__ void say_hi() { printf("I am %d.%d\\n", threadIdx.x, threadIdx.y); }
    """
    manhattan = """
    #include<math.h>
    __global__ void manhattan(float *a, float *b, float *out, int n) {
        int i = threadIdx.x; out[i] = fabs(a[i] - b[i]) + sqrt((float)n);
    }
    """
    for src, entry in ((mandelbrot, b"mandelbrot"), (printf_src, b"say_hi"), (manhattan, b"manhattan")):
        assert entry in compiler.compile(src, arch=ARCH, target="ptx")
    # ElementwiseKernel-style C with dtype_to_ctype's complex name
    ctype = dtype_to_ctype(np.complex64)
    src = f"#include <pycuda-complex.hpp>\n__global__ void mul({ctype} *x, {ctype} *y, {ctype} *z, {ctype} a)" \
          "{ int i = threadIdx.x; z[i] = a * x[i] * y[i] + 1.0 - x[i] / 2; }"
    assert b"mul" in compiler.compile(src, arch=ARCH, target="ptx")


def test_pycuda_helpers_compile_over_texture_objects():
    nvrtc()
    src = r"""
    #include <pycuda-helpers.hpp>
    __global__ void k(cudaTextureObject_t t, double *d, pycuda::complex<float> *c, pycuda::complex<double> *z, short *s) {
      int i = threadIdx.x;
      d[i] = fp_tex1Dfetch<double>(t, i) + fp_tex2D<double>(t, 1, 2) + fp_tex3D<double>(t, 1, 2, 3)
           + fp_tex2DLayered<double>(t, 1, 2, 0);
      c[i] = fp_tex1Dfetch<pycuda::complex<float> >(t, i);
      z[i] = fp_tex2D<pycuda::complex<double> >(t, 0, 0);
      s[i] = fp_tex1Dfetch<short>(t, i);
      fp_tex_double a; fp_tex_cfloat b; fp_tex_cdouble e; (void)a; (void)b; (void)e;
    }
    """
    assert b"k" in compiler.compile(src, arch=ARCH, target="ptx")


def test_include_dirs_come_before_cuks(tmp_path):
    nvrtc()
    (tmp_path / "math.h").write_text("#define MINE 7\n")
    ptx = compiler.compile("#include <math.h>\n__global__ void k(int *x) { x[0] = MINE; }", arch=ARCH, target="ptx",
                           include_dirs=[str(tmp_path)])
    assert b"7" in ptx


def test_compile_errors_say_what_failed():
    nvrtc()
    with pytest.raises(cuk.CompileError, match="nosuch.h"):
        compiler.compile("#include <nosuch.h>\n", arch=ARCH)
    with pytest.raises(drv.LogicError, match="'cubin' or 'ptx'"):
        compiler.compile("__global__ void k() {}", arch=ARCH, target="fatbin")
    with pytest.raises(cuk.ArgumentError, match="sm_XY"):
        compiler.compile("__global__ void k() {}", arch="banana")


def test_nvcc_only_options_are_dropped():
    assert compiler._options(["-lineinfo", "-lcudadevrt", "-Xcompiler", "-L/x", "-g", "-O3"], ["/inc"]) == \
        ["-lineinfo", "-O3", "-I/inc", "-I" + compiler.INCLUDE_DIR]


# ---- complex numbers on the device ------------------------------------------------------------------

COMPLEX_SRC = r"""
#include <pycuda-complex.hpp>
typedef pycuda::complex<%(t)s> c_t;
__global__ void f(c_t *a, c_t *b, c_t *out, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n) return;
    c_t x = a[i], y = b[i];
    out[8 * i + 0] = x * y;
    out[8 * i + 1] = x / y;
    out[8 * i + 2] = sqrt(x);
    out[8 * i + 3] = exp(x);
    out[8 * i + 4] = log(y);
    out[8 * i + 5] = pow(x, 3);
    out[8 * i + 6] = c_t(abs(x), arg(x));
    out[8 * i + 7] = 2 * conj(x) - 1.5;
}
"""


@gpu
@pytest.mark.parametrize("dtype,t,tol", [(np.complex64, "float", 2e-5), (np.complex128, "double", 1e-13)])
def test_complex_functions_match_numpy(dtype, t, tol):
    rng = np.random.default_rng(1)
    n = 300
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    out = np.zeros(8 * n, dtype)
    f = compiler.SourceModule(COMPLEX_SRC % {"t": t}).get_function("f")
    f(drv.In(a), drv.In(b), drv.Out(out), np.int32(n), block=(128, 1, 1), grid=(3, 1))
    want = np.stack([a * b, a / b, np.sqrt(a), np.exp(a), np.log(b), a ** 3, np.abs(a) + 1j * np.angle(a),
                     2 * np.conj(a) - 1.5], axis=1).ravel()
    np.testing.assert_allclose(out, want, rtol=tol * 10, atol=tol)


# ---- dtype_to_ctype ---------------------------------------------------------------------------------


def test_dtype_to_ctype_complex():
    assert dtype_to_ctype(np.complex64) == "pycuda::complex<float>"
    assert dtype_to_ctype(np.complex128) == "pycuda::complex<double>"
    arg = parse_c_arg("pycuda::complex<float> *z")
    assert arg.dtype == np.complex64 and arg.declarator() == "pycuda::complex<float> *z"
    with pytest.raises(ValueError, match="register_dtype"):
        dtype_to_ctype(np.dtype("U4"))


# ---- device attributes ------------------------------------------------------------------------------


def test_device_attribute_names_are_cudas():
    da = drv.device_attribute
    assert da.CONCURRENT_KERNELS == 31 and da.WARP_SIZE == 10 and da.MULTIPROCESSOR_COUNT == 16
    assert da.COMPUTE_CAPABILITY_MAJOR == 75 and da.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN == 97
    assert da.SHARED_MEMORY_PER_BLOCK is da.MAX_SHARED_MEMORY_PER_BLOCK  # CUDA's deprecated alias
    assert str(da.CONCURRENT_KERNELS) == "CONCURRENT_KERNELS"
    # every name PyCUDA 2026.1 exposes
    for name in ("ASYNC_ENGINE_COUNT", "CAN_MAP_HOST_MEMORY", "CLOCK_RATE", "COMPUTE_MODE", "ECC_ENABLED",
                 "GLOBAL_MEMORY_BUS_WIDTH", "INTEGRATED", "KERNEL_EXEC_TIMEOUT", "L2_CACHE_SIZE",
                 "MANAGED_MEMORY", "MAX_BLOCK_DIM_X", "MAX_GRID_DIM_Z", "MAX_REGISTERS_PER_BLOCK",
                 "MAX_THREADS_PER_MULTIPROCESSOR", "MAXIMUM_TEXTURE2D_ARRAY_WIDTH", "MEMORY_CLOCK_RATE",
                 "PCI_BUS_ID", "PCI_DEVICE_ID", "STREAM_PRIORITIES_SUPPORTED", "TCC_DRIVER", "TEXTURE_ALIGNMENT",
                 "TOTAL_CONSTANT_MEMORY", "UNIFIED_ADDRESSING", "COOPERATIVE_LAUNCH", "GPU_OVERLAP"):
        assert name in da.__members__, name
    assert len(da.__members__) > 140


@gpu
def test_device_attributes_on_the_gpu():
    dev = drv.Device(0)
    assert dev.get_attribute(drv.device_attribute.WARP_SIZE) == 32
    assert (dev.get_attribute(drv.device_attribute.COMPUTE_CAPABILITY_MAJOR),
            dev.get_attribute(drv.device_attribute.COMPUTE_CAPABILITY_MINOR)) == dev.compute_capability()
    atts = dev.get_attributes()
    assert atts[drv.device_attribute.MULTIPROCESSOR_COUNT] == dev._props["multiprocessor_count"]
    assert atts[drv.device_attribute.CONCURRENT_KERNELS] == 1
    assert dev.max_threads_per_block == dev._props["max_threads_per_block"]
    assert dev.get_attribute("warp_size") == 32
    with pytest.raises(drv.LogicError, match="no device attribute"):
        dev.get_attribute("nosuch")
    with pytest.raises(drv.LogicError, match="cuDeviceGetAttribute"):
        dev.get_attribute(100000)


# ---- the driver layer against a fake driver ---------------------------------------------------------


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    return cukpath.build_fake_driver(str(tmp_path_factory.mktemp("fakecuda")))[1]


FAKE_CHILD = r"""
import numpy as np
import cukpath, cuk, cuk.driver as drv, cuk.gpuarray as ga
from cuk.compiler import SourceModule, DynamicModule, DynamicSourceModule

dev = drv.Device(0)
print("attr", dev.get_attribute(drv.device_attribute.WARP_SIZE), dev.get_attribute(drv.device_attribute.L2_CACHE_SIZE))
atts = dev.get_attributes()
print("attrs", atts[drv.device_attribute.MULTIPROCESSOR_COUNT], str(sorted(map(str, atts))[0]), len(atts) > 140)
try:
    drv.Context.set_limit(drv.limit.PRINTF_FIFO_SIZE, 1 << 20)
except cuk.Error as e:
    print("limit", e)

class Wrapped(drv.PointerHolderBase):
    def __init__(self, a):
        self.a = a
    def get_pointer(self):
        return int(self.a)

w = Wrapped(drv.mem_alloc(64))
print("holder", int(w) == int(w.a) != 0)
drv.memcpy_htod(w, np.zeros(4, np.float32))
try:
    k = SourceModule("__global__ void k(float *x) { x[0] = 1; }").get_function("k")
    k(w, block=(1, 1, 1))
    k.prepare("P").prepared_call((1, 1), (1, 1, 1), w)
    print("launch ok")
    kv = SourceModule("__global__ void kv(float3 v) { }").get_function("kv")
    kv.prepare([ga.vec.float3]).prepared_call((1, 1), (1, 1, 1), ga.vec.make_float3(0.0, 1.0, 2.0))
    try:
        kv.prepared_call((1, 1), (1, 1, 1), 1.5)
    except TypeError as e:
        print("vector", "ok", "bytes-like" in str(e))
    try:
        k(3, block=(1, 1, 1))
    except TypeError as e:
        print("int arg", "parameter #0" in str(e))
    m = DynamicSourceModule("__global__ void child(int *x) { x[threadIdx.x] = 1; }\n"
                            "__global__ void parent(int *x) { child<<<1, 4>>>(x); }")
    print("dynamic", type(m.get_function("parent")).__name__)
    try:
        DynamicModule().link()
    except drv.LogicError as e:
        print("empty", e)
except cuk.NoDeviceError as e:  # no NVRTC or nvJitLink here
    print("skip", e)
print("ok")
"""


def test_driver_points_on_a_fake_driver(fake_driver, tmp_path):
    r = subprocess.run([sys.executable, "-c", FAKE_CHILD], cwd=os.path.join(cukpath.ROOT, "tests", "python"),
                       capture_output=True, text=True, timeout=300,
                       env=cukpath.python_child_env(CUK_LIBCUDA=fake_driver, CUK_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "ok", r.stdout + r.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines()[:-1])
    if "skip" in out:
        pytest.skip("the launch checks need NVRTC and nvJitLink: " + out["skip"])
    assert out["attr"] == f"32 {50 << 20}"  # the fake's values
    assert out["attrs"] == "132 ASYNC_ENGINE_COUNT True"
    assert out["limit"] == "the CUDA driver has no cuCtxSetLimit: update the NVIDIA driver"
    assert out["holder"] == "True"
    assert out["launch"] == "ok" and out["int"] == "arg True" and out["vector"] == "ok True"
    assert out["dynamic"] == "Function"
    assert out["empty"] == "Linker: nothing to link; add_data or add_file first"


# ---- PointerHolderBase ---------------------------------------------------------------------------------


def test_pointer_holder_base_needs_get_pointer():
    class Bare(drv.PointerHolderBase):
        pass

    with pytest.raises(NotImplementedError, match="get_pointer"):
        int(Bare())

    class At(drv.PointerHolderBase):
        def get_pointer(self):
            return 0x1000

    assert int(At()) == 0x1000 and np.intp(At()) == 0x1000 and "0x1000" in repr(At())


@gpu
def test_pointer_holder_base_on_the_gpu():
    class Wrapped(drv.PointerHolderBase):
        def __init__(self, a):
            self.a = a
            super().__init__()

        def get_pointer(self):
            return int(self.a)

    w = Wrapped(drv.mem_alloc(16 * 4))
    drv.memcpy_htod(w, np.arange(16, dtype=np.float32))
    k = compiler.SourceModule("__global__ void twice(float *x) { x[threadIdx.x] *= 2; }").get_function("twice")
    k(w, block=(16, 1, 1))
    k.prepare("P").prepared_call((1, 1), (16, 1, 1), w)
    out = np.empty(16, np.float32)
    drv.memcpy_dtoh(out, w)
    np.testing.assert_array_equal(out, 4 * np.arange(16, dtype=np.float32))


# ---- linking and dynamic parallelism -----------------------------------------------------------------

OUTER = """#include <cstdio>
__global__ void test_kernel(int *x) {
    extern __global__ void test_kernel_inner(int *x);
    printf("outer\\n");
    test_kernel_inner<<<2, 1>>>(x);
}"""
INNER = """#include <cstdio>
__global__ void test_kernel_inner(int *x) { atomicAdd(x, 1 + blockIdx.x); }"""


def test_dynamic_module_links_without_a_gpu():
    nvjitlink()
    m = compiler.DynamicModule(arch=ARCH)
    m.add_source(OUTER, nvcc_options=["-rdc=true", "-lcudadevrt"]).add_source(INNER, nvcc_options=["-rdc=true"])
    m.add_stdlib("cudadevrt")
    cubin = m.linker.link()
    assert cubin[:4] == b"\x7fELF" and b"test_kernel_inner" in cubin


def test_link_errors_say_what_is_missing():
    nvjitlink()
    m = compiler.DynamicModule(arch=ARCH).add_source(OUTER)
    with pytest.raises(cuk.CompileError, match="Undefined reference"):  # no cudadevrt, no inner kernel
        m.linker.link()
    with pytest.raises(OSError, match="libnosuch.a not found"):
        m.add_stdlib("nosuch")
    with pytest.raises(drv.LogicError, match="no file"):
        m.add_file("/nonexistent.a", drv.jit_input_type.LIBRARY)
    with pytest.raises(cuk.CompileError, match="adding junk"):
        drv.Linker(arch=ARCH).add_data(b"junk", drv.jit_input_type.CUBIN, "junk").link()
    with pytest.raises(cuk.CompileError, match="unrecognized option"):
        drv.Linker(options=["-bogus"], arch=ARCH).add_data(b"x", drv.jit_input_type.PTX).link()
    with pytest.raises(drv.LogicError, match="call link"):
        m.get_function("test_kernel")


@gpu
def test_recursive_launch_on_the_gpu():
    mod = compiler.DynamicSourceModule("""
    __global__ void child(long *p, long *q) { p[threadIdx.x] = 2 * p[threadIdx.x] - q[threadIdx.x]; }
    __global__ void parent(long *p, long *q, long *c) {
        c[threadIdx.x] = p[threadIdx.x] + q[threadIdx.x];
        __syncthreads();  // every read of p before the child may run
        if (threadIdx.x == 0) child<<<1, blockDim.x>>>(p, q);
    }""")
    p = np.arange(100, dtype=np.int64)
    q = np.arange(100, dtype=np.int64)[::-1].copy()
    c = np.zeros(100, np.int64)
    pp = drv.to_device(p)
    mod.get_function("parent")(pp, drv.In(q), drv.Out(c), block=(100, 1, 1))
    np.testing.assert_array_equal(c, p + q)
    np.testing.assert_array_equal(drv.from_device_like(pp, p), 2 * p - q)


@gpu
def test_jit_link_module_on_the_gpu():
    m = compiler.DynamicModule()
    m.add_source(OUTER).add_source(INNER).add_stdlib("cudadevrt").link()
    x = np.zeros(1, np.int32)
    m.get_function("test_kernel")(drv.InOut(x), grid=(2, 1), block=(1, 1, 1))
    assert x[0] == 2 * (1 + 2)  # two outer blocks, each launching blocks 0 and 1


@gpu
def test_context_limits_on_the_gpu():
    # the stack size can change at any time (the printf FIFO's only before the first
    # kernel that prints, which other tests may have launched)
    drv.Context.set_limit(drv.limit.STACK_SIZE, 4096)
    assert drv.Context.get_limit(drv.limit.STACK_SIZE) >= 4096
    with pytest.raises(drv.LogicError, match="cuCtxGetLimit"):
        drv.Context.get_limit(1000)

"""``pycuda.compiler`` on cuk: SourceModule compiles raw CUDA C with NVRTC (no host
compiler), through cuk's kernel cache (memory and disk); DynamicModule and
DynamicSourceModule link relocatable code (dynamic parallelism) with nvJitLink.

NVRTC has no host headers, so every compile here searches cuk's own include directory
(``INCLUDE_DIR``) after the caller's ``include_dirs``: ``<stdio.h>``, ``<math.h>``,
``<cstdio>`` and the other C/C++ headers kernels include, for device code, and PyCUDA's
``<pycuda-complex.hpp>`` and ``<pycuda-helpers.hpp>``.
"""
import os

from . import _cuk
from . import driver as _drv
from .driver import Function

DEFAULT_NVCC_FLAGS = []

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def _nvrtc_ok(opt):
    # nvcc options NVRTC does not take: host compiler flags, debug info for the host,
    # and libraries (linking is DynamicModule's add_stdlib)
    if opt.startswith(("-l", "-L")) and opt != "-lineinfo":
        return False
    return not (opt.startswith(("-Xcompiler", "--compiler-options", "--library")) or opt in ("-g", "-G"))


def _options(options, include_dirs):
    opts = [str(o) for o in (options or []) if _nvrtc_ok(str(o))]
    return opts + [f"-I{d}" for d in include_dirs] + [f"-I{INCLUDE_DIR}"]


def _wrap(source, no_extern_c):
    return source if no_extern_c else 'extern "C" {\n' + source + "\n}\n"


class SourceModule:
    """CUDA C source compiled for the current device.

    As in PyCUDA the source is wrapped in ``extern "C" { ... }`` unless
    ``no_extern_c=True`` (then pass C++ names to look up in ``name_expressions``).
    ``options`` are NVRTC options (nvcc-only ones are dropped); ``include_dirs`` become
    ``-I`` options, searched before cuk's ``INCLUDE_DIR``. ``nvcc``, ``keep``,
    ``cache_dir`` and ``arch``/``code`` are accepted for compatibility; cuk picks the
    architecture of the device.
    """

    def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None, code=None,
                 cache_dir=None, include_dirs=(), name_expressions=()):
        source = _wrap(source, no_extern_c)
        self.source = source
        self._mod = _cuk.module_compile(source, tuple(_options(options, include_dirs or ())), tuple(name_expressions),
                                        "kernel.cu")
        self._funcs = {}

    def get_function(self, name):
        f = self._funcs.get(name)
        if f is None:
            f = self._funcs[name] = Function(self._mod, name)
        return f

    def get_global(self, name):
        """(device pointer, size in bytes) of a __device__ or __constant__ variable."""
        return self._mod.get_global(name)

    def get_texref(self, name):
        raise _drv.LogicError("cuk has no texture references (CUDA 12 removed them): pass a pointer, or a "
                              "cudaTextureObject_t made elsewhere")


def compile(source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None, code=None, cache_dir=None,
            include_dirs=(), target="cubin"):
    """The image NVRTC makes of ``source``: a cubin (``target="cubin"``) or PTX text
    (``"ptx"``), as bytes, for ``arch`` ("sm_90"; default the current device's). With
    ``arch`` given no GPU is needed. Load it with ``driver.module_from_buffer``."""
    if target not in ("cubin", "ptx"):
        raise _drv.LogicError(f"compile: target must be 'cubin' or 'ptx', not {target!r} (NVRTC makes no fatbins)")
    arch = arch or _drv._arch()
    return _cuk.nvrtc_compile(_wrap(source, no_extern_c), _options(options, include_dirs or ()), arch,
                              target == "ptx", "kernel.cu")


def _cuda_libdirs(cuda_libdir):
    """Where the toolkit's device libraries (libcudadevrt.a) may be, in order."""
    if cuda_libdir:
        return [cuda_libdir]
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "lib64"))
    try:
        lib = os.path.dirname(os.path.realpath(_cuk.nvjitlink_path()))
        dirs += [lib, os.path.join(os.path.dirname(lib), "lib64")]
    except _cuk.Error:
        pass
    dirs += [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu"]
    return list(dict.fromkeys(os.path.normpath(d) for d in dirs))


class DynamicModule:
    """Several sources, PTX, cubins and libraries linked into one module (nvJitLink), as
    PyCUDA's ``DynamicModule``: ``add_source`` compiles relocatable device code (NVRTC,
    ``-rdc=true``), ``add_stdlib("cudadevrt")`` adds the toolkit's device runtime
    (needed for kernel launches from the device), ``link()`` loads the result.
    ``arch`` ("sm_90") defaults to the current device's; with it given, everything
    before ``link()``'s loading runs without a GPU (``linker.link()`` gives the cubin)."""

    def __init__(self, nvcc="nvcc", link_options=None, keep=False, no_extern_c=False, arch=None, code=None,
                 cache_dir=None, include_dirs=None, message_handler=None, log_verbose=False, cuda_libdir=None):
        self.arch = arch or _drv._arch()
        self.no_extern_c = no_extern_c
        self.include_dirs = list(include_dirs or [])
        self.cuda_libdir = cuda_libdir
        self.linker = _drv.Linker(message_handler, link_options, log_verbose, arch=self.arch)
        self.module = None

    def _linker(self):
        if self.linker is None:
            raise _drv.LogicError("DynamicModule: link() was called already; make a new DynamicModule to add more")
        return self.linker

    def add_source(self, source, nvcc_options=None, name="kernel.ptx"):
        opts = [o for o in _options(nvcc_options, self.include_dirs) if not o.startswith(("-rdc", "--relocatable"))]
        cubin = _cuk.nvrtc_compile(_wrap(source, self.no_extern_c), opts + ["-rdc=true"], self.arch, False, "kernel.cu")
        self._linker().add_data(cubin, _drv.jit_input_type.CUBIN, name.rsplit(".", 1)[0] + ".cubin")
        return self

    def add_data(self, data, input_type, name="unknown"):
        self._linker().add_data(data, input_type, name)
        return self

    def add_file(self, filename, input_type):
        self._linker().add_file(filename, input_type)
        return self

    def add_stdlib(self, libname):
        """Adds the toolkit's lib<libname>.a (``cuda_libdir``, else $CUDA_HOME/lib64, the
        directory of the nvJitLink in use, $LD_LIBRARY_PATH, /usr/local/cuda/lib64)."""
        dirs = _cuda_libdirs(self.cuda_libdir)
        for d in dirs:
            path = os.path.join(d, f"lib{libname}.a")
            if os.path.isfile(path):
                self._linker().add_file(path, _drv.jit_input_type.LIBRARY)
                return self
        raise OSError(f"CUDA library lib{libname}.a not found in {', '.join(dirs)}: install the CUDA toolkit "
                      "or pass cuda_libdir=")

    def link(self):
        self.module = self._linker().link_module()
        self.linker = None
        return self

    def _loaded(self):
        if self.module is None:
            raise _drv.LogicError("DynamicModule: call link() before get_function/get_global")
        return self.module

    def get_function(self, name):
        return self._loaded().get_function(name)

    def get_global(self, name):
        return self._loaded().get_global(name)

    def get_texref(self, name):
        return self._loaded().get_texref(name)


class DynamicSourceModule(DynamicModule):
    """One source compiled as relocatable code and linked with the device runtime
    (cudadevrt), so that its kernels can launch kernels (dynamic parallelism)."""

    def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None, code=None,
                 cache_dir=None, include_dirs=None, cuda_libdir=None):
        super().__init__(nvcc=nvcc, keep=keep, no_extern_c=no_extern_c, arch=arch, code=code, cache_dir=cache_dir,
                         include_dirs=include_dirs, cuda_libdir=cuda_libdir)
        self.add_source(source, nvcc_options=options)
        self.add_stdlib("cudadevrt")
        self.link()

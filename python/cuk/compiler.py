"""``pycuda.compiler`` on cuk: SourceModule compiles raw CUDA C with NVRTC (no host
compiler), through cuk's kernel cache (memory and disk)."""
from . import _cuk
from .driver import Function

DEFAULT_NVCC_FLAGS = []


class SourceModule:
    """CUDA C source compiled for the current device.

    As in PyCUDA the source is wrapped in ``extern "C" { ... }`` unless
    ``no_extern_c=True`` (then pass C++ names to look up in ``name_expressions``).
    ``options`` are NVRTC options (nvcc-only ones are dropped); ``include_dirs`` become
    ``-I`` options. ``nvcc``, ``keep``, ``cache_dir`` and ``arch``/``code`` are accepted
    for compatibility; cuk picks the architecture of the device.
    """

    def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None, code=None,
                 cache_dir=None, include_dirs=(), name_expressions=()):
        opts = [o for o in (options or []) if _nvrtc_ok(o)]
        opts += [f"-I{d}" for d in include_dirs]
        if not no_extern_c:
            source = 'extern "C" {\n' + source + "\n}\n"
        self.source = source
        self._mod = _cuk.module_compile(source, tuple(opts), tuple(name_expressions), "kernel.cu")
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
        raise NotImplementedError("cuk does not support texture references (use plain pointers or __ldg)")


def _nvrtc_ok(opt):
    # nvcc options NVRTC does not take
    return not (opt.startswith("-Xcompiler") or opt.startswith("--compiler-options") or opt in ("-g", "-G"))


def compile(source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None, code=None, cache_dir=None,
            include_dirs=(), target="cubin"):
    raise NotImplementedError("cuk.compiler.compile: use SourceModule (cuk compiles with NVRTC at run time)")

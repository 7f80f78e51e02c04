"""``pycuda.characterize`` on cuk: what the device (or the CPU backend) supports."""
import sys

import numpy as np

from .tools import context_dependent_memoize


def platform_bits():
    return 64 if sys.maxsize > 2**32 else 32


def has_stack():
    """Device code may recurse and call functions (every device cuk runs on does)."""
    return True


def has_double_support():
    """f64 arithmetic (every device cuk runs on, and the CPU backend)."""
    return True


@context_dependent_memoize
def sizeof(type_name, preamble=""):
    """sizeof(type_name) in device code, compiled after ``preamble``."""
    from . import gpuarray
    from .compiler import SourceModule

    mod = SourceModule(
        f'{preamble}\nextern "C" __global__ void write_size(size_t *out) {{ *out = sizeof({type_name}); }}\n',
        no_extern_c=True,
    )
    out = gpuarray.empty((), dtype=np.uintp)
    mod.get_function("write_size")(out, block=(1, 1, 1), grid=(1, 1))
    return int(out.get())

"""Builds cuk._cuk (stable ABI, Python >= 3.11) with the project's CMake build for
`pip install --no-build-isolation .`; the metadata is in pyproject.toml."""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    """Runs CMake for the _cuk, cukc and cuk targets and copies the module where setuptools
    wants it, with cukc (cuk/bin/cukc: the `cukc` command and `python -m cuk` run it),
    libcuk.so (cuk/lib) and the C API's headers (cuk/include, beside the ones
    SourceModule passes to NVRTC) in the package."""

    def build_extension(self, ext):
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        os.makedirs(build, exist_ok=True)
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                               f"-DPython3_EXECUTABLE={sys.executable}", "-DCUK_PYTHON=ON"])
        subprocess.check_call(["cmake", "--build", build, "--target", "_cuk", "cukc", "cuk", "-j",
                               str(os.cpu_count() or 2)])
        src = os.path.join(build, "python", "cuk", "_cuk.abi3.so")
        if not os.path.exists(src):
            raise RuntimeError("the CMake build made no _cuk.abi3.so: are Python >= 3.11 development headers installed?")
        dst = self.get_ext_fullpath(ext.name)
        pkg = os.path.dirname(dst)
        os.makedirs(pkg, exist_ok=True)
        shutil.copyfile(src, dst)
        for sub, path in (("bin", os.path.join(build, "bin", "cukc")), ("lib", os.path.join(build, "lib", "libcuk.so")),
                          ("include", os.path.join(ROOT, "runtime", "cuk.h")),
                          ("include", os.path.join(ROOT, "api", "cuk_program.h"))):
            os.makedirs(os.path.join(pkg, sub), exist_ok=True)
            shutil.copy2(path, os.path.join(pkg, sub, os.path.basename(path)))  # keeps cukc executable


setup(
    ext_modules=[Extension("cuk._cuk", sources=[], py_limited_api=True)],
    cmdclass={"build_ext": CMakeBuild},
    # build-pip/ (ignored like every build-*/), not build/: that is the CMake build's
    options={"bdist_wheel": {"py_limited_api": "cp311"}, "build": {"build_base": "build-pip"}},
)

"""Puts the cuk package (python/) and its built extension (<build>/python) on sys.path
for the test_api_* tests: $CUK_BUILD_DIR (set by scripts/check.sh) or build/."""
import os
import sys

ROOT = os.environ.get("CUK_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CUK_BUILD_DIR") or os.path.join(ROOT, "build")
for p in (os.path.join(ROOT, "python"), os.path.join(BUILD, "python")):
    if p not in sys.path:
        sys.path.insert(0, p)


def python_child_env(**extra):
    """The environment for a Python child that imports cuk: this one, with the sanitizer
    runtime preloaded again under scripts/check.sh's ASan+UBSan stage (conftest.py takes
    it away from the other children), plus extra."""
    env = dict(os.environ)
    pre = env.pop("CUK_PYTHON_CHILD_PRELOAD", None)
    if pre:
        env["LD_PRELOAD"] = pre
    env.update(extra)
    return env


def build_fake_driver(d):
    """bench/fake_libcuda.c (a driver that answers without a GPU) built as
    d/libfakecuda.so; pytest skips the caller where there is no C compiler."""
    import shutil
    import subprocess

    import pytest

    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    base = os.path.join(ROOT, "bench", "fake_libcuda.c")
    if not cc or not os.path.exists(base):
        pytest.skip("needs a C compiler and bench/fake_libcuda.c")
    lib = os.path.join(d, "libfakecuda.so")
    subprocess.run([cc, "-std=c11", "-shared", "-fPIC", "-o", lib, base], check=True)
    return cc, lib


def build_fake_log_driver(d):
    """bench/fake_libcuda.c with tests/python/fake_cuda_log.c's logging layer over it
    (d/libcudalog.so): every stream, event, launch, copy and graph call it makes is a
    line in $CUK_FAKE_LOG."""
    import subprocess

    cc = build_fake_driver(d)[0]
    lib = os.path.join(d, "libcudalog.so")
    # --no-as-needed: the layer uses nothing of the fake, but must name it as a dependency
    subprocess.run([cc, "-std=c11", "-shared", "-fPIC", "-o", lib, os.path.join(ROOT, "tests", "python", "fake_cuda_log.c"),
                    "-Wl,--no-as-needed", "-L" + d, "-lfakecuda", "-Wl,-rpath," + d], check=True)
    return lib


# What a child of run_fake_logged starts with: cuk imported, and mark(s), which writes a
# section line "# s" into the driver's log.
FAKE_CHILD_PRELUDE = r"""
import os, sys
import numpy as np
import cukpath, cuk, cuk.driver as drv
log = os.environ["CUK_FAKE_LOG"]

def mark(s):
    with open(log, "a") as f:
        f.write("# " + s + "\n")
"""


def run_fake_logged(lib, tmp_path, child, **env):
    """Runs the Python source child on the logging fake driver lib: (its stdout lines, the
    log's sections: {"mark": [lines after `# mark`]}). The child must print "ok" last."""
    import subprocess

    logf = tmp_path / "driver.log"
    r = subprocess.run([sys.executable, "-c", child], cwd=os.path.join(ROOT, "tests", "python"), capture_output=True,
                       text=True, timeout=300,
                       env=python_child_env(CUK_LIBCUDA=lib, CUK_FAKE_LOG=str(logf), CUK_CACHE_DIR=str(tmp_path / "cache"),
                                            **env))
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "ok", r.stdout + r.stderr[-3000:]
    sections, cur = {}, None
    for line in (logf.read_text().splitlines() if logf.exists() else []):
        if line.startswith("# "):
            cur = sections.setdefault(line[2:], [])
        elif cur is not None:
            cur.append(line)
    return r.stdout.splitlines(), sections


class HostDL:
    """A NumPy array offered through DLPack only (NumPy's own __dlpack__: a host tensor,
    kDLCPU), for the tests of cuk's DLPack import."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def torch_cuda():
    """PyTorch with CUDA, or the test is skipped."""
    import pytest
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


class CAI:
    """An empty device array offered through __cuda_array_interface__ with this typestr."""

    def __init__(self, typestr):
        self.__cuda_array_interface__ = {"shape": (0,), "typestr": typestr, "data": (0, False), "version": 3}


def cai_error(f, typestr):
    """What a call of f with an empty device array of this typestr raises: a dtype error,
    or (dtype accepted) whatever running it on this machine gives; "" if nothing."""
    import cuk
    try:
        f(CAI(typestr))
    except cuk.Error as e:
        return str(e)
    return ""


def same_bits(a, b):
    """a and b (arrays, or tuples of them) of the same types, shapes and bits."""
    import numpy as np

    if not isinstance(a, tuple):
        a, b = (a,), (b,)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def fused_and_stored(mod, name, x):
    """mod.fused_NAME(x), checked to be the bits of mod.stored_NAME(x) (the same steps,
    each value stored by a let)."""
    got = getattr(mod, "fused_" + name)(x)
    same_bits(got, getattr(mod, "stored_" + name)(x))
    return got


def cpu_outputs_by_threads(prog, threads=("1", "2", "3")):
    """`cukc run --device cpu prog`'s output with each CUK_THREADS in threads (each run
    must succeed)."""
    import subprocess

    cukc = os.environ.get("CUKC") or os.path.join(BUILD, "bin", "cukc")
    outs = []
    for t in threads:
        r = subprocess.run([cukc, "run", "--device", "cpu", str(prog)], capture_output=True, text=True,
                           env=dict(os.environ, CUK_THREADS=t), timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    return outs


def child_peak_mb(code, threads="2"):
    """The peak resident memory (MB) of a Python child that runs code with cuk importable
    (sys.path from argv) and prints its ru_maxrss last."""
    import subprocess

    paths = [os.path.join(ROOT, "python"), os.path.join(BUILD, "python")]
    r = subprocess.run([sys.executable, "-c", code] + paths, capture_output=True, text=True, timeout=300,
                       env=python_child_env(CUK_THREADS=threads))
    assert r.returncode == 0, r.stderr
    return int(r.stdout.split()[-1]) / 1024

#!/usr/bin/env python3
"""Run cuda.core's own test suite against cuda.core itself (the baseline) and against
cuk.core, and count, per test file, how many of the tests that pass on cuda.core pass on
cuk.core (issue 17's closing figure).

    python3 scripts/cuda_core_tests.py TESTS --helpers DIR --wheels DIR [--jobs N] [--timeout S] [--only a,b]

TESTS is a checkout of NVIDIA/cuda-python's cuda_core/tests (read from a copy, never put
into this project), DIR for --helpers its cuda_python_test_helpers package (the suite's
conftest.py looks for it beside cuda_core/), --wheels a folder of cuda-core, cuda-bindings
and cuda-pathfinder wheels for this Python. Nothing is installed into the interpreter:
the wheels go into two private folders, one with cuda-core (the baseline) and one
without it (cuk's run).

In cuk's run ``cuda.core`` and each of its modules (their names from the cuda-core
wheel) are views of cuk.core, the only change to the tests: a name cuk.core has is
cuk.core's; a name it lacks imports as a placeholder that raises ``NotInCukCore`` (a
BaseException, which no ``pytest.raises`` of the test can mistake for the error it
expects) when it is used, so one missing internal fails the tests that use it, not every
test of its file. The suite's conftest.py and helpers need a few of cuda.core's internals,
which that run stands in for: ``cuda.core._utils.cuda_utils`` (``CUDAError``: cuk's
error; ``handle_return``: the cuda.bindings convention, raising on a non-zero status;
``driver``, ``runtime`` and ``nvrtc``: cuda.bindings' modules),
``cuda.core._utils.version`` (``binding_version``: cuda.bindings' version;
``driver_version``: the driver's), ``cuda.core._device._tls`` (a thread-local the
conftest clears), and two questions the tests' skip conditions ask of the environment:
``cuda.core._linker._decide_nvjitlink_or_driver`` (False: cuk.core links with nvJitLink),
``cuda.core._program._can_load_generated_ptx`` (the driver's CUDA version at least
NVRTC's) and ``cuda.core._program._get_nvvm_module`` (a RuntimeError: cuk.core has no
NVVM backend, so the NVVM tests skip, which counts as not passing).

Each test file runs in its own pytest process (junit XML), --jobs at a time, each on its
own clock (--timeout), so one that hangs costs only its own tests. Output: one row per
file, ``file | tests | cuda.core passed | cuk.core passed | both``, then the totals."""
import argparse
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SHIM = '''"""cuda.core's name for cuk.core (scripts/cuda_core_tests.py): ``cuda.core`` and every
``cuda.core.<module>`` the tests import are views of cuk.core (a name cuk.core lacks is
an ImportError or AttributeError there), with the few names the suite's conftest takes
from cuda.core's internals added."""
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types

import cuk.core as _core


class NotInCukCore(BaseException):
    """A name of cuda.core that cuk.core lacks was used. A BaseException, so that no
    ``pytest.raises(Exception)`` in a test can take it for the error it expects: the test
    fails."""


class _Missing:
    """What a view gives for a name cuk.core lacks: importing it works (so one missing
    internal does not stop a whole file), using it raises NotInCukCore."""

    def __init__(self, name):
        self._name = name

    def _no(self, *a, **k):
        raise NotInCukCore(f"{self._name}: not in cuk.core")

    __call__ = _no

    def __getattr__(self, attr):
        if attr.startswith("_") or attr.startswith("pytest"):  # what pytest probes while collecting
            raise AttributeError(attr)
        self._no()


def _view(name):
    m = types.ModuleType(name)
    m.__path__ = []  # a package: its own submodules are views too
    m.__all__ = list(_core.__all__)

    def get(attr):
        if hasattr(_core, attr):
            return getattr(_core, attr)
        if name + "." + attr in MODULES:  # a module of cuda.core: its view
            return importlib.import_module(name + "." + attr)
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(name + "." + attr)

    m.__getattr__ = get
    return m


MODULES = set(%r)  # cuda.core's own modules, from its wheel


class _Views(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _view(spec.name)

    def exec_module(self, module):
        pass


def handle_return(result, handle=None):
    """cuda.bindings' (status, values...) convention: raise on a status other than 0."""
    err, *vals = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise _core.CUDAError(f"{err!r}")
    return None if not vals else vals[0] if len(vals) == 1 else tuple(vals)


_cu = _view("cuda.core._utils.cuda_utils")
_cu.CUDAError = _core.CUDAError
_cu.handle_return = handle_return
try:  # cuda.bindings' modules, which the suite reaches through cuda_utils too
    from cuda.bindings import driver as _drv, nvrtc as _nvrtc, runtime as _rt

    _cu.driver, _cu.runtime, _cu.nvrtc = _drv, _rt, _nvrtc
except ImportError:
    pass
_ver = _view("cuda.core._utils.version")


def binding_version():
    """cuda.bindings' version as a tuple of ints (the tests' skip conditions read it)."""
    import cuda.bindings

    return tuple(int(p) for p in cuda.bindings.__version__.split(".")[:3])


def driver_version():
    """The driver's CUDA version as (major, minor, 0)."""
    v = _core.system.driver_version
    return (v[0], v[1], 0)


_ver.binding_version, _ver.driver_version = binding_version, driver_version
_lnk = _view("cuda.core._linker")
_lnk._decide_nvjitlink_or_driver = lambda: False  # cuk.core links with nvJitLink, never the driver's cuLink
_prg = _view("cuda.core._program")


def _can_load_generated_ptx():
    """Whether the driver loads the PTX this NVRTC writes: its CUDA version at least NVRTC's."""
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return int(err) == 0 and tuple(_core.system.driver_version) >= (major, minor)


_prg._can_load_generated_ptx = _can_load_generated_ptx


def _get_nvvm_module():
    raise RuntimeError("cuk.core has no NVVM backend")


_prg._get_nvvm_module = _get_nvvm_module
_dev = _view("cuda.core._device")
_dev._tls = threading.local()
sys.meta_path.insert(0, _Views())
sys.modules.update({"cuda.core": _view("cuda.core"), "cuda.core._utils.cuda_utils": _cu, "cuda.core._device": _dev,
                    "cuda.core._utils.version": _ver, "cuda.core._linker": _lnk, "cuda.core._program": _prg})
'''


def core_modules(wheels):
    """The dotted names of cuda.core's modules, from the cuda-core wheel's file list."""
    import zipfile

    mods = {"cuda.core"}
    for f in os.listdir(wheels):
        if f.startswith("cuda_core-") and f.endswith(".whl"):
            for n in zipfile.ZipFile(os.path.join(wheels, f)).namelist():
                if n.startswith("cuda/core/") and n.endswith((".py", ".so")):
                    parts = n[:-3].split(".")[0].split("/") if n.endswith(".py") else n.split(".")[0].split("/")
                    if parts[-1] == "__init__":
                        parts = parts[:-1]
                    if len(parts) > 2 and parts[2] in ("cu12", "cu13"):
                        # built per CUDA major version; cuda.core imports them under its own name
                        mods.update(".".join(["cuda", "core"] + parts[3:k]) for k in range(4, len(parts) + 1))
                    mods.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
    return sorted(mods)


def install(wheels, names, dest):
    whl = [os.path.join(wheels, f) for f in sorted(os.listdir(wheels))
           if f.endswith(".whl") and f.split("-")[0].replace("_", "-") in names]
    if not whl:
        return False
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", dest] + whl,
                   check=True)
    return True


def outcomes(xml):
    """({test id: "pass" | "fail" | "skip"}, {failure message: count}) from a junit XML file."""
    res, why = {}, {}
    try:
        root = ET.parse(xml).getroot()
    except (ET.ParseError, OSError):
        return res, why
    for tc in root.iter("testcase"):
        tid = tc.get("classname", "") + "::" + tc.get("name", "")
        kinds = {c.tag for c in tc}
        res[tid] = "fail" if kinds & {"failure", "error"} else "skip" if "skipped" in kinds else "pass"
        for c in tc:
            if c.tag in ("failure", "error"):
                m = (c.get("message") or "").splitlines()[0][:150] if c.get("message") else c.tag
                why[m] = why.get(m, 0) + 1
    return res, why


def run_file(rel, tree, env, xml, timeout):
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                            "--junitxml", xml, "-o", "addopts=", rel], cwd=os.path.join(tree, "cuda_core", "tests"),
                           env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        tail = (p.stdout.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        tail = f"timed out after {timeout} s"
    return outcomes(xml) + (tail,)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tests")
    ap.add_argument("--helpers", required=True)
    ap.add_argument("--wheels", required=True)
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cctests.")
    tree = os.path.join(work, "tree")
    shutil.copytree(a.tests, os.path.join(tree, "cuda_core", "tests"))
    shutil.copytree(a.helpers, os.path.join(tree, "cuda_python_test_helpers"))
    base, mine, shim = (os.path.join(work, d) for d in ("base", "cuk", "shim"))
    have_base = install(a.wheels, {"cuda-core", "cuda-bindings", "cuda-pathfinder"}, base)
    install(a.wheels, {"cuda-bindings", "cuda-pathfinder"}, mine)
    os.makedirs(os.path.join(shim, "cuda", "core"))
    with open(os.path.join(shim, "cuda", "core", "__init__.py"), "w") as f:
        f.write(SHIM % (core_modules(a.wheels),))
    cukpath = os.environ.get("PYTHONPATH", "")
    envs = {"cuda.core": dict(os.environ, PYTHONPATH=base),
            "cuk.core": dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (shim, mine, cukpath) if p))}
    for e in envs.values():
        e.setdefault("CUDA_HOME", "/usr/local/cuda")
    root = os.path.join(tree, "cuda_core", "tests")
    files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                   if f.startswith("test_") and f.endswith(".py"))
    if a.only:
        files = [f for f in files if any(o in f for o in a.only.split(","))]
    jobs = {}
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for rel in files:
            for who, env in envs.items():
                if who == "cuda.core" and not have_base:
                    continue
                xml = os.path.join(work, who + "-" + rel.replace(os.sep, "_") + ".xml")
                jobs[rel, who] = ex.submit(run_file, rel, tree, env, xml, a.timeout)
    tot = {"tests": 0, "base": 0, "cuk": 0, "both": 0}
    whys = {}
    print("file | tests | cuda.core passed | cuk.core passed | both | cuk.core's last line")
    for rel in files:
        b = jobs[rel, "cuda.core"].result()[0] if (rel, "cuda.core") in jobs else {}
        m, whys[rel], tail = jobs[rel, "cuk.core"].result()
        ids = set(b) | set(m)
        nb = sum(v == "pass" for v in b.values())
        nm = sum(v == "pass" for v in m.values())
        both = sum(b.get(t) == "pass" and m.get(t) == "pass" for t in ids)
        for k, v in (("tests", len(ids)), ("base", nb), ("cuk", nm), ("both", both)):
            tot[k] += v
        print(f"{rel} | {len(ids)} | {nb} | {nm} | {both} | {tail[:160]}")
    print(f"total: {tot['tests']} tests; cuda.core passes {tot['base']}, cuk.core {tot['cuk']}, "
          f"{tot['both']} of cuda.core's {tot['base']}")
    print("\ncuk.core's most frequent failures per file (count: message)")
    for rel in files:
        for msg, n in sorted(whys[rel].items(), key=lambda kv: -kv[1])[:4]:
            print(f"{rel}: {n}: {msg}")


if __name__ == "__main__":
    main()

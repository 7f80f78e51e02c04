"""The extension's types that only the module creates (a compiled program and its
functions, device arrays, allocations, pinned buffers, raw modules, host result buffers)
cannot be instantiated from Python: a bare instance would hold NULL handles and crash on
first use. Each raises TypeError, however it is asked for."""
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

PRIVATE = ["Program", "Function", "DeviceArray", "DeviceAllocation", "PinnedBuffer", "Module"]


def host_buffer_type():
    """The type behind a host result's memory (not exported by the module)."""
    m = cuk.compile("fn f(x: f32[n]) -> f32[n] = x + 1.0;", device="cpu")
    base = m.f(np.ones(3, np.float32)).base
    return type(base.obj if isinstance(base, memoryview) else base)


@pytest.mark.parametrize("name", PRIVATE + ["HostBuf"])
def test_private_types_cannot_be_instantiated(name):
    tp = host_buffer_type() if name == "HostBuf" else getattr(cuk._cuk, name)
    assert tp.__name__ == name
    with pytest.raises(TypeError):
        tp()
    with pytest.raises(TypeError):
        tp.__new__(tp)
    with pytest.raises(TypeError):
        object.__new__(tp)


def test_bare_instances_do_not_crash_the_interpreter():
    # Before: Program() and Function() made objects with NULL handles, and using them
    # crashed the interpreter (SIGSEGV). In a child, so a crash is a failure, not an abort.
    code = """
import cukpath, cuk
for name in %r:
    tp = getattr(cuk._cuk, name)
    try:
        o = tp()
    except TypeError:
        continue
    for attr in ("functions", "backend", "params", "get", "shape", "free", "ptr", "get_function"):
        try:
            v = getattr(o, attr)
            v() if callable(v) else v
        except Exception:
            pass
    try:
        o(1.0)
    except Exception:
        pass
    print("made", name)
print("done")
""" % (PRIVATE,)
    r = subprocess.run([sys.executable, "-c", code], cwd=cukpath.ROOT + "/tests/python", capture_output=True, text=True,
                       env=cukpath.python_child_env(), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["done"], r.stdout


def test_public_constructors_still_work():
    # cuk.driver.Function (the raw kernel type) checks its arguments instead
    with pytest.raises(TypeError, match="compiled module"):
        cuk._cuk.Kernel(1, "k")

"""%load_ext cuk and the %%cuk cell magic (python/cuk/_jupyter.py), driven by a stand-in
shell that records what the extension asks of IPython; where IPython is installed, also
through IPython's own shell (IPython.testing.globalipapp, in a child process). And the
repr of device arrays."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import cukpath
import cuk

SRC = """fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;
fn rms(x: f32[n]) -> f32 = sqrt(sum(x * x) / f32(n));
"""


class FakeShell:
    """What load_ipython_extension and the magic use of IPython's InteractiveShell."""

    def __init__(self):
        self.magics, self.user_ns, self.pushes = {}, {}, []

    def register_magic_function(self, func, magic_kind="line", magic_name=None):
        self.magics[(magic_kind, magic_name or func.__name__)] = func

    def push(self, variables, interactive=True):
        self.pushes.append(dict(variables))
        self.user_ns.update(variables)


@pytest.fixture
def shell():
    sh = FakeShell()
    cuk.load_ipython_extension(sh)
    return sh


def test_import_cuk_does_not_import_ipython():
    code = "import sys, cukpath, cuk; cuk.load_ipython_extension; print('IPython' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(os.path.abspath(cukpath.__file__)),
                       capture_output=True, text=True, env=cukpath.python_child_env(), timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


def test_registers_the_cell_magic(shell):
    assert list(shell.magics) == [("cell", "cuk")]
    assert "--device" in shell.magics[("cell", "cuk")].__doc__


def test_cell_binds_functions_by_name(shell):
    m = shell.magics[("cell", "cuk")]("--device cpu", SRC)
    assert isinstance(m, cuk.Module) and m.backend == "cpu" and m.name == "<cell>"
    assert len(shell.pushes) == 1 and sorted(shell.pushes[0]) == ["rms", "saxpy"]
    saxpy, rms = shell.user_ns["saxpy"], shell.user_ns["rms"]
    z = saxpy(2.0, np.ones(4, np.float32), np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(z, [2, 3, 4, 5])
    assert rms(z) == pytest.approx(np.sqrt(np.mean(z * z)))


def test_options(shell, monkeypatch):
    seen = {}

    def fake_compile(src, device=None, name=None, fast_math=False):
        seen.update(src=src, device=device, name=name, fast_math=fast_math)
        return real_compile(src, device="cpu", name=name)

    real_compile = cuk.compile
    monkeypatch.setattr(cuk, "compile", fake_compile)
    magic = shell.magics[("cell", "cuk")]
    magic("", "fn f(x: f32) -> f32 = x;")
    # the default device is cuk.compile's (None: $CUK_BACKEND, else auto); a one-line
    # cell is still source, never a path
    assert seen == dict(src="fn f(x: f32) -> f32 = x;\n", device=None, name="<cell>", fast_math=False)
    magic("--device gpu --name 'my prog.cuk' --fast-math", SRC)
    assert seen == dict(src=SRC, device="gpu", name="my prog.cuk", fast_math=True)
    magic("--device=auto", SRC)
    assert seen["device"] == "auto"
    for bad, says in [("--device tpu", "invalid choice: 'tpu'"), ("--bogus", "unrecognized arguments: --bogus")]:
        with pytest.raises(cuk._jupyter._UsageError) as e:
            magic(bad, SRC)
        assert e.value._render_traceback_() == ["UsageError: %%cuk: " + str(e.value)] and says in str(e.value)
    assert len(shell.pushes) == 3


def test_compile_error_is_the_located_message(shell):
    with pytest.raises(cuk.CompileError) as e:
        shell.magics[("cell", "cuk")]("--device cpu --name bad.cuk", "fn f(x: f32) -> f32 = x + y;\n")
    assert e.value.file == "bad.cuk" and (e.value.line, e.value.column) == (1, 27)
    # what IPython shows instead of a traceback through the magic
    assert e.value._render_traceback_() == [
        "bad.cuk:1:27: error: unknown name 'y'; did you mean 'x'?\n"
        "fn f(x: f32) -> f32 = x + y;\n"
        "                          ^"
    ]
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert shell.pushes == []


def test_no_gpu_error_is_its_message(shell):
    if cuk.gpu_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(cuk.NoDeviceError) as e:
        shell.magics[("cell", "cuk")]("--device gpu", SRC)
    (text,) = e.value._render_traceback_()
    assert text.startswith("cuk.NoDeviceError: the GPU backend was asked for but no GPU is usable")


IPYTHON_CHILD = r"""
import cukpath, cuk
from IPython.testing.globalipapp import get_ipython  # a shell made for tests: tracebacks on stdout
ip = get_ipython()
ip.run_line_magic("load_ext", "cuk")
r = ip.run_cell("%%cuk --device cpu\n" + SRC)
assert r.success and isinstance(r.result, cuk.Module), r
r = ip.run_cell("import numpy as np\nz = saxpy(2.0, np.ones(3, np.float32), np.ones(3, np.float32))\nrms(z)")
assert r.success and abs(r.result - 3.0) < 1e-6, r
print("--- bad cell")
r = ip.run_cell("%%cuk --device cpu --name bad.cuk\nfn f(x: f32) -> f32 = x + y;")
assert isinstance(r.error_in_exec, cuk.CompileError), r
"""


def test_real_ipython(tmp_path):
    # in a child, so that IPython's shell (its builtins, history, ~/.ipython) stays out of
    # this process and the home directory
    if importlib.util.find_spec("IPython") is None:
        pytest.skip("IPython is not installed")
    r = subprocess.run([sys.executable, "-c", "SRC = %r\n" % SRC + IPYTHON_CHILD],
                       cwd=os.path.dirname(os.path.abspath(cukpath.__file__)), capture_output=True, text=True,
                       timeout=300, env=cukpath.python_child_env(IPYTHONDIR=str(tmp_path / "ipython")))
    assert r.returncode == 0, r.stdout + r.stderr
    bad = r.stdout.split("--- bad cell\n")[1]
    assert bad.splitlines()[:3] == ["bad.cuk:1:27: error: unknown name 'y'; did you mean 'x'?",
                                    "fn f(x: f32) -> f32 = x + y;",
                                    "                          ^"], r.stdout
    assert "Traceback" not in bad and "_jupyter" not in bad, bad


# ---- device arrays' repr ----


def test_named_repr_keeps_numpy_alignment():
    a = np.arange(6.0).reshape(2, 3)
    assert cuk._named_repr(a, "DeviceArray") == "DeviceArray([[0., 1., 2.],\n             [3., 4., 5.]])"
    assert cuk._named_repr(np.arange(3, dtype=np.int8), "GPUArray") == "GPUArray([0, 1, 2], dtype=int8)"
    assert cuk._named_repr(np.array(2.5), "DeviceArray") == "DeviceArray(2.5)"


def test_device_array_repr_without_memory():
    # empty arrays and arrays that cannot be read need no GPU
    assert repr(cuk._cuk.device_wrap(0, (0, 2), "float16", None)) == "DeviceArray([], shape=(0, 2), dtype=float16)"
    if not cuk.gpu_available():
        d = cuk._cuk.device_wrap(0x1000, (2,), "float32", None)
        assert repr(d) == str(d) == "<cuk.DeviceArray shape=(2,) dtype=float32 at 0x1000>"


def test_device_array_repr_values(tmp_path):
    # a fake driver whose device memory is host memory: to_device and get() work
    lib = cukpath.build_fake_driver(str(tmp_path))[1]
    code = """import numpy as np, cukpath, cuk
print(repr(cuk.to_device(np.arange(6.0).reshape(2, 3))))
print(repr(cuk.to_device(np.array(3.5, np.float32))))
print(str(cuk.to_device(np.arange(3, dtype=np.int32))))
print(repr(cuk.to_device(np.arange(2000, dtype=np.int32))))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(os.path.abspath(cukpath.__file__)),
                       capture_output=True, text=True, timeout=120,
                       env=cukpath.python_child_env(CUK_LIBCUDA=lib, CUK_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "DeviceArray([[0., 1., 2.],",
        "             [3., 4., 5.]])",
        "DeviceArray(3.5, dtype=float32)",
        "[0 1 2]",
        "DeviceArray([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)",
    ]

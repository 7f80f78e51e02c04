"""The PyCUDA-layout modules import without a GPU and fail at the point of use with
cuk.Error saying why; the C program API's example runs."""
import importlib
import os
import subprocess

import numpy as np
import pytest

import cukpath
import cuk

no_gpu = pytest.mark.skipif(cuk.gpu_available(), reason="checks the no-GPU behaviour")


def test_modules_import():
    for name in ("driver", "compiler", "gpuarray", "elementwise", "reduction", "scan", "cumath", "curandom", "tools"):
        importlib.import_module("cuk." + name)


@no_gpu
def test_driver_calls_fail_clearly():
    import cuk.driver as drv

    for call in (lambda: drv.Device(0), drv.init, drv.mem_get_info, lambda: drv.mem_alloc(16), drv.Stream, drv.Event,
                 lambda: drv.pagelocked_empty(4, np.float32), drv.Context.synchronize):
        with pytest.raises(cuk.Error, match="no CUDA driver"):
            call()


@no_gpu
def test_autoinit_fails_clearly():
    with pytest.raises(cuk.Error, match="no CUDA driver"):
        importlib.import_module("cuk.autoinit")


@no_gpu
def test_source_module_fails_clearly():
    from cuk.compiler import SourceModule

    with pytest.raises(cuk.Error):
        SourceModule("__global__ void f(float *x) { x[0] = 1; }")


def test_exception_hierarchy():
    assert issubclass(cuk.CompileError, cuk.Error)
    assert issubclass(cuk.RunError, cuk.Error)
    assert issubclass(cuk.ArgumentError, ValueError) and issubclass(cuk.ArgumentError, cuk.Error)
    import cuk.driver as drv

    assert issubclass(drv.MemoryError, MemoryError) and issubclass(drv.LogicError, cuk.Error)


def test_c_example_runs():
    exe = os.path.join(cukpath.BUILD, "examples", "example_program_api")
    if not os.path.exists(exe):
        pytest.skip("C examples not built")
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    assert "saxpy: 0.5 2.5 4.5" in out
    assert "parameter 'y'" in out
    assert "compile error at bad.cuk:1:27" in out


def test_cache_stats_says_whether_the_disk_cache_is_used(tmp_path):
    # a directory others may write is not used (runtime/compile.c); stats say why
    import sys
    code = "from cuk import _cuk; s = _cuk.cache_stats(); print(repr(s['disk_off']), repr(s['dir']))"
    for mode, off in ((0o700, False), (0o770, True)):
        d = tmp_path / ("c%o" % mode)
        d.mkdir()
        os.chmod(d, mode)
        env = cukpath.python_child_env(CUK_CACHE_DIR=str(d), CUK_QUIET="1",
                                       PYTHONPATH=os.pathsep.join([os.path.join(cukpath.BUILD, "python"),
                                                                   os.path.join(cukpath.ROOT, "python")]))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        if off:
            assert "writable by its group" in out.stdout
        else:
            assert out.stdout.startswith("''")

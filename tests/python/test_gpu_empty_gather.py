"""An empty gather still checks its indices on the GPU path (found by the GPU
differential run): x of shape (1, 0) indexed by [1] is NumPy's IndexError, the CPU
backend's run-time error, not an empty result, although the launch that would check it
has no element to run. Run on the driver-less GPU path (bench/fake_libcuda.c: copies
are real, kernels do not run, so the indices are a kernel input here);
tests/gpu/python/test_gpu_python.py runs the same on a GPU."""
import subprocess
import sys

import cukpath

CHILD = r"""
import numpy as np
import cukpath, cuk
m = cuk.compile("fn f(x: f32[a, b], i: i64[k]) -> f32[k, b] = x[i];", device="gpu")
for idx in ([0, 0], [0, 1], [-2], []):
    try:
        print(idx, m.f(np.zeros((1, 0), np.float32), np.array(idx, np.int64)).shape)
    except cuk.RunError as e:
        print(idx, str(e).splitlines()[0].split("error: ")[1])
"""


def test_empty_gather_checks_its_indices_on_the_gpu_path(tmp_path):
    _, lib = cukpath.build_fake_driver(str(tmp_path))
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                       cwd=cukpath.ROOT + "/tests/python",
                       env=cukpath.python_child_env(CUK_LIBCUDA=lib, CUK_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines() == ["[0, 0] (2, 0)", "[0, 1] index 1 is out of bounds for axis 0 with size 1",
                                     "[-2] index -2 is out of bounds for axis 0 with size 1", "[] (0, 0)"], r.stdout

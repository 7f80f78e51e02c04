"""A value whose length alone is used (`len(x * g(x))`) still has its scalar leaves
evaluated on the GPU path, as on the CPU backend (found by the GPU differential run, seed
6002: `len(x * grow(reduce_by_index(.., iota(2), x), -1))` was the CPU's shape error and
the GPU's 5): a called function's prints, a scalar index out of bounds and a
reduce_by_index of mismatched shapes. Run with `cukc run --device gpu` on the driver-less
GPU path (bench/fake_libcuda.c: copies are real, kernels do not run, so only checks made
on the host can show here) against `--device cpu`; tests/gpu/python/test_gpu_python.py
runs the same on a GPU, with a gather checked on the device. The seventh run (seed 7008)
found the same for a reduction's own check: `len(min(m[.., 5:0:-1], axis=1,
keepdims=true))` of an empty axis was the CPU's error and the GPU's 1; the eighth (seed
8004) that a scatter into an empty destination skipped the destination's own errors
(`scatter(softmax(x), ..)` of an empty x)."""
import os
import subprocess

import pytest

import cukpath

GROW = """fn grow(x: f32[n], k: i64) -> f32 {
    var a = x;
    var i = 0;
    while i < k { a = concat(a, a[::-1]); i = i + 1; }
    return sum(a) + f32(len(a));
}
"""

PROGS = {
    "call_prints": """fn g(x: f32[n]) -> f32 {
    print(123);
    return sum(x);
}
fn main() {
    let x = rand(5, seed=1);
    print(len(x * g(x)));
    print(len(reshape(x, 5, 1) * g(x)));
    print(7);
}
""",
    "scalar_index": "fn main() {\n    let x = rand(5, seed=1);\n    print(len(x * x[9]));\n}\n",
    "reduce_by_index_in_a_call": GROW + "fn main() {\n    let x = rand(5, seed=1);\n"
                                        "    print(len(x * grow(reduce_by_index(iota(5, dtype=f32), mul, iota(2), x), -1)));\n}\n",
    "reduce_by_index_summed": "fn main() {\n    let x = rand(5, seed=1);\n"
                              "    print(len(x * sum(reduce_by_index(iota(5, dtype=f32), add, iota(2), x))));\n}\n",
    "empty_min_axis": "fn main() {\n    let m = reshape(iota(4, dtype=f32), 2, 2);\n"
                      "    print(len(min(m[1::-3, 1:1:-1], axis=1, keepdims=true)));\n}\n",
    "empty_argmax_axis": "fn main() {\n    let m = reshape(iota(4, dtype=f32), 2, 2);\n"
                         "    print(len(argmax(m[:, 0:0], axis=1) + 1));\n}\n",
    "empty_sum_axis": "fn main() {\n    let m = reshape(iota(4, dtype=f32), 2, 2);\n"
                      "    print(len(sum(m[:, 0:0], axis=1)));\n    print(len(min(m[0:0, :], axis=1)));\n}\n",
    "empty_scatter_dest_max": "fn main() {\n    let x = rand(0, seed=1);\n"
                              "    print(scatter(x * max(x), iota(3) * 0, 1.0));\n}\n",
    "empty_scatter_dest_index": "fn main() {\n    let x = rand(0, seed=1);\n"
                                "    print(scatter(x * x[-1], iota(3) * 0, 1.0));\n}\n",
    "empty_scatter_fine": "fn main() {\n    let x = rand(0, seed=1);\n"
                          "    print(scatter(x * 2.0, iota(3) * 0, 1.0));\n    print(9);\n}\n",
    "fine": "fn main() {\n    let x = rand(5, seed=1);\n    print(len(x * sum(x) + x[4]));\n}\n",
}


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return cukpath.build_fake_driver(str(tmp_path_factory.mktemp("fake")))[1]


@pytest.mark.parametrize("name", sorted(PROGS))
def test_gpu_path_evaluates_the_leaves_of_a_length(name, fake, tmp_path):
    src = tmp_path / (name + ".cuk")
    src.write_text(PROGS[name])
    cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
    runs = []
    for dev, extra in (("cpu", {}), ("gpu", {"CUK_LIBCUDA": fake})):
        r = subprocess.run([cukc, "run", "--device", dev, str(src)], capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, CUK_CACHE_DIR=str(tmp_path / "cache"), **extra))
        runs.append((r.returncode, r.stdout, r.stderr.split("\n")[0]))
    assert runs[0] == runs[1], "cpu %r, gpu %r" % (runs[0], runs[1])
    want_rc = 0 if name in ("call_prints", "fine", "empty_sum_axis", "empty_scatter_fine") else 3
    assert runs[0][0] == want_rc, runs[0]
    if name == "call_prints":
        assert runs[0][1] == "123\n5\n123\n5\n7\n"
    if name == "empty_scatter_fine":
        assert runs[0][1] == "[]\n9\n"
    if name == "empty_scatter_dest_max":
        assert "zero-size array to reduction operation max" in runs[0][2], runs[0]
    if name == "empty_scatter_dest_index":
        assert "index -1 is out of bounds" in runs[0][2], runs[0]
    if name == "empty_sum_axis":
        assert runs[0][1] == "2\n0\n"
    if name.startswith("empty_m") or name.startswith("empty_a"):
        assert "zero-size array to reduction operation" in runs[0][2], runs[0]


def test_gpu_path_gather_in_its_own_kernels_checks(fake, tmp_path):
    """A gather whose shape is asked for runs its kernel (on a GPU that checks its
    indices: tests/lit/run/gather_shape_only.cuk), but not again from that kernel's own
    checks: layer norm of a row permutation recursed until the stack overflowed (the
    differential run, seed 11110). Kernels do not run here, so the values printed are
    not compared: the run must end, as the CPU backend's does, with as many lines."""
    src = os.path.join(cukpath.ROOT, "tests", "lit", "run", "gather_row_kernel.cuk")
    cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
    runs = []
    for dev, extra in (("cpu", {}), ("gpu", {"CUK_LIBCUDA": fake})):
        r = subprocess.run([cukc, "run", "--device", dev, src], capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, CUK_CACHE_DIR=str(tmp_path / "cache"), **extra))
        runs.append((r.returncode, len(r.stdout.splitlines())))
    assert runs == [(0, 2), (0, 2)], runs


@pytest.mark.parametrize("entry", ["scanlen", "redlen", "fine"])
def test_gpu_path_length_of_a_segmented_op_checks_its_offsets(entry, fake, tmp_path):
    """len() of a segmented scan or reduction with offsets out of order is the CPU
    backend's error on the GPU path too (tests/lit/run/segments_shape_only.cuk): the
    kernel runs for the length. A scan's offsets are checked on the host before its
    launch, so the error shows here, with offsets copied in from .npy files (a kernel's
    output is not computed on this path); a reduction's are checked on the device, so
    here the launch is all that shows (the lit test runs on a GPU in tests/gpu)."""
    import numpy as np
    src = tmp_path / "seg.cuk"
    src.write_text("fn scanlen(x: f32[n], o: i64[k]) -> i64 = len(cumsum(x, segments=o));\n"
                   "fn redlen(x: f32[n], o: i64[k]) -> i64 = len(sum(x, segments=o));\n")
    np.save(tmp_path / "x.npy", np.arange(5, dtype=np.float32))
    np.save(tmp_path / "o.npy", np.array([0, 2, 5] if entry == "fine" else [0, 3, 1, 5], dtype=np.int64))
    if entry == "fine":  # offsets in order: the scan's length
        entry = "scanlen"
    cukc = os.environ.get("CUKC") or os.path.join(cukpath.BUILD, "bin", "cukc")
    runs = []
    for dev, extra in (("cpu", {}), ("gpu", {"CUK_LIBCUDA": fake})):
        r = subprocess.run([cukc, "run", "--device", dev, str(src), "--entry", entry, "x=%s" % (tmp_path / "x.npy"),
                            "o=%s" % (tmp_path / "o.npy")], capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, CUK_CACHE_DIR=str(tmp_path / "cache"), **extra))
        runs.append((r.returncode, r.stdout, r.stderr.split("\n")[0]))
    if runs[0][0] == 0:
        assert runs == [(0, "5\n", ""), (0, "5\n", "")], runs
        return
    assert runs[0][0] == 3 and "offsets must be non-decreasing" in runs[0][2], runs[0]
    if entry == "scanlen":
        assert runs[1] == runs[0], runs
    else:
        assert runs[1][0] == 0 and runs[1][1] == "3\n", runs[1]

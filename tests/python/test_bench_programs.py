"""The benchmark programs compute what they claim: bench/part2_bench.py's and
bench/sort_bench.py's check_cpu run each job on the CPU backend against NumPy (the GPU
runs compare them with PyTorch before timing them)."""
import importlib.util
import os

import pytest

import cukpath  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("name", ["part2_bench", "sort_bench"])
def test_bench_programs_match_numpy(capsys, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.check_cpu()
    assert "every program matches NumPy" in capsys.readouterr().out

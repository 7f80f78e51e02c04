"""The benchmark programs compute what they claim: bench/part2_bench.py's check_cpu
runs each issue-12 job on the CPU backend against NumPy (the GPU run compares them with
PyTorch before timing them)."""
import importlib.util
import os

import cukpath  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_part2_bench_programs_match_numpy(capsys):
    spec = importlib.util.spec_from_file_location("part2_bench", os.path.join(ROOT, "bench", "part2_bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.check_cpu()
    assert "every program matches NumPy" in capsys.readouterr().out

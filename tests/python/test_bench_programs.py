"""The benchmark programs compute what they claim: bench/part2_bench.py --check-cpu runs
each issue-12 job on the CPU backend against NumPy (the GPU run compares them with
PyTorch before timing them)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_part2_bench_programs_match_numpy():
    env = dict(os.environ)
    build = os.environ.get("CUK_BUILD_DIR", os.path.join(ROOT, "build"))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(build, "python"), os.path.join(ROOT, "python")])
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "part2_bench.py"), "--check-cpu"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "every program matches NumPy" in p.stdout

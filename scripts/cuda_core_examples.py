#!/usr/bin/env python3
"""Run cuda.core's examples against cuk.core with only the imports changed, and against
cuda.core itself where it is installed (the baseline).

    python3 scripts/cuda_core_examples.py EXAMPLES_DIR [--timeout S]

EXAMPLES_DIR holds example scripts from NVIDIA/cuda-python's cuda_core/examples (read
from a checkout, never copied into this project). Each runs in a subprocess twice: as it
is (cuda.core; skipped when it cannot be imported) and with every import of
`cuda.core.experimental` or `cuda.core` made `cuk.core`. One row per example:
`example | cuda.core | cuk.core | last line of cuk.core's failure`, then the counts."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

IMPORT = re.compile(r"\bcuda\.core(\.experimental)?\b")


def run(path, timeout):
    try:
        p = subprocess.run([sys.executable, path], cwd=os.path.dirname(path), capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "timeout", f"timed out after {timeout} s"
    if p.returncode == 0:
        return "pass", ""
    err = (p.stderr or p.stdout).strip().splitlines()
    if any(l.startswith("ModuleNotFoundError") for l in err[-3:]):
        return "skip", err[-1]
    return "fail", " ".join(err[-2:])[:240]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("examples")
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()
    names = sorted(f for f in os.listdir(a.examples) if f.endswith(".py"))
    tmp = tempfile.mkdtemp(prefix="cukcore-ex.")
    counts = {"base": 0, "both": 0, "cuk": 0}
    print("example | cuda.core | cuk.core | cuk.core's failure")
    for n in names:
        src = os.path.join(a.examples, n)
        base, _ = run(src, a.timeout)
        text = open(src).read()
        dst = os.path.join(tmp, n)
        with open(dst, "w") as f:
            f.write(IMPORT.sub("cuk.core", text))
        mine, why = run(dst, a.timeout)
        counts["base"] += base == "pass"
        counts["cuk"] += mine == "pass"
        counts["both"] += base == "pass" and mine == "pass"
        print(f"{n} | {base} | {mine} | {why}")
    print(f"cuda.core passes {counts['base']} of {len(names)}; cuk.core passes {counts['cuk']}, "
          f"{counts['both']} of cuda.core's {counts['base']}")


if __name__ == "__main__":
    main()

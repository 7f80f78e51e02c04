#!/usr/bin/env python3
"""Run PyCUDA's own tests and examples against cuk, with only the imports changed.

    python3 scripts/pycuda_suite.py PYCUDA_CHECKOUT [--out DIR] [--ref FILE] [-k EXPR]

PYCUDA_CHECKOUT is a checkout of inducer/pycuda (its test/ and examples/ are read,
never copied into this project).  The tests and examples are copied to DIR (a
temporary directory by default), every `pycuda` in an import becomes `cuk`, and
pytest runs them: the tests as they are, each example as its own test that runs
the script in a subprocess (exit 0 within the time limit passes; an ImportError
of a package other than cuk skips).  The table printed is one row per test,
`file | test | outcome | first line of the failure`, as in
shared/pycuda-suite-*.txt; with --ref, the rows PyCUDA passes there and cuk does
not here are listed at the end with a count.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

IMPORT = re.compile(r"^(\s*)(import|from)\s+pycuda\b", re.M)

EXAMPLES_TEST = '''
import os, subprocess, sys, pytest
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = sorted(
    os.path.relpath(os.path.join(d, f), HERE)
    for d, _, fs in os.walk(HERE) for f in fs
    if f.endswith(".py") and f != os.path.basename(__file__))

@pytest.mark.parametrize("name", EXAMPLES)
def test_example(name):
    path = os.path.join(HERE, name)
    try:
        p = subprocess.run([sys.executable, path], cwd=os.path.dirname(path),
                           capture_output=True, text=True, timeout=%(timeout)d,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("timed out after %(timeout)d s")
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()
        missing = [l for l in err if l.startswith("ModuleNotFoundError")]
        if missing and "cuk" not in missing[-1]:
            pytest.skip(missing[-1])
        pytest.fail("exit %%d: %%s" %% (p.returncode, " ".join(err[-3:])[:300]))
'''


def rewrite(src_dir, dst_dir):
    shutil.copytree(src_dir, dst_dir)
    for d, _, files in os.walk(dst_dir):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            text = IMPORT.sub(lambda m: m.group(1) + m.group(2) + " cuk", text)
            text = text.replace("pycuda.", "cuk.") if "import cuk" in text else text
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)


def read_ref(path):
    ref = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or "|" not in line:
                continue
            cols = [c.strip() for c in line.split("|")]
            ref[(cols[0], cols[1])] = cols[2]
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pycuda")
    ap.add_argument("--out")
    ap.add_argument("--ref")
    ap.add_argument("-k", default=None)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--pytest-args", default="", help="more pytest arguments, e.g. '-v -o faulthandler_timeout=60'")
    ap.add_argument("--files", default="test_gpuarray.py,test_cumath.py,test_driver.py,examples")
    ap.add_argument("--jobs", type=int, default=1, help="files run at once (2 fits the whole suite in one "
                    "10-minute device call: test_gpuarray.py takes about 230 s, the rest about as long)")
    a = ap.parse_args()
    work = a.out or tempfile.mkdtemp(prefix="pycuda-suite-")
    os.makedirs(work, exist_ok=True)
    tdir = os.path.join(work, "test")
    edir = os.path.join(work, "examples")
    for d in (tdir, edir):
        shutil.rmtree(d, ignore_errors=True)
    rewrite(os.path.join(a.pycuda, "test"), tdir)
    rewrite(os.path.join(a.pycuda, "examples"), edir)
    with open(os.path.join(edir, "test_examples.py"), "w") as fh:
        fh.write(EXAMPLES_TEST % {"timeout": a.timeout})
    targets = []
    for f in a.files.split(","):
        targets.append(os.path.join(edir, "test_examples.py") if f == "examples" else os.path.join(tdir, f))
    # one pytest run per file, so that a crash (a signal) loses only its own file's rows;
    # --jobs of them at once (each its own GPU context), read back in the files' order
    rows = []
    procs = []
    for t in targets:
        name = os.path.basename(t)
        xml = os.path.join(work, name + ".junit.xml")
        if os.path.exists(xml):
            os.remove(xml)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--junitxml", xml, "-o", "junit_family=xunit1", "--continue-on-collection-errors", t]
        if a.k:
            cmd += ["-k", a.k]
        cmd += a.pytest_args.split()
        while sum(p.poll() is None for _, _, p in procs) >= a.jobs:
            time.sleep(0.2)
        procs.append((name, xml, subprocess.Popen(cmd, cwd=work)))
    for name, xml, p in procs:
        p.wait()
        if not os.path.exists(xml):
            f = "examples" if name == "test_examples.py" else name
            rows.append((f, "(the whole file)", "crashed", f"pytest exited with {p.returncode} and no report"))
            continue
        for tc in ET.parse(xml).getroot().iter("testcase"):
            cls = tc.get("classname", "")
            mods = [m for m in cls.split(".") if m.startswith("test_")]
            f = "examples" if "test_examples" in cls else (mods[-1] + ".py" if mods else cls)
            outcome, why = "passed", ""
            for tag in ("failure", "error", "skipped"):
                e = tc.find(tag)
                if e is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                    why = " ".join((e.get("message") or "").split())[:160]
            rows.append((f, tc.get("name"), outcome, why))
    counts = {}
    for f, name, outcome, why in rows:
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f"{f} | {name} | {outcome} | {why}")
    print("# " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if a.ref:
        ref = read_ref(a.ref)
        mine = {(f, n): o for f, n, o, _ in rows}
        want = [k for k, o in ref.items() if o == "passed"]
        lost = [k for k in want if mine.get(k) != "passed"]
        print(f"# PyCUDA passes {len(want)} in {a.ref}; cuk passes "
              f"{len(want) - len(lost)} of them here")
        for k in lost:
            print(f"#   not passed: {k[0]} | {k[1]} | {mine.get(k, 'not run')}")


if __name__ == "__main__":
    main()

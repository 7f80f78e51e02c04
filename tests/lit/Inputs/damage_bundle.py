"""Damages a bundle in many ways (flipped bytes at several offsets, truncations, a wrong
format version, stray bytes) and checks that `cukc run` refuses every variant with exit
status 3 and a message about the bundle. Usage: damage_bundle.py CUKC BUNDLE TMPDIR"""
import os
import subprocess
import sys

cukc, path, tmp = sys.argv[1:4]
data = open(path, "rb").read()
n = len(data)
variants = []
for off in [0, 3, 4, 8, 24, 32, 40, 48, 56, 60, n // 3, n // 2, n - 1]:
    b = bytearray(data)
    b[off] ^= 0x5A
    variants.append(("flip@%d" % off, bytes(b)))
for cut in [0, 3, 10, 55, 56, 70, n // 2, n - 1]:
    variants.append(("truncate@%d" % cut, data[:cut]))
variants.append(("extra", data + b"\0"))
bad = 0
for name, blob in variants:
    p = os.path.join(tmp, "damaged.cukb")
    with open(p, "wb") as f:
        f.write(blob)
    r = subprocess.run([cukc, "run", p, "--device", "cpu"], capture_output=True, text=True)
    # A file too damaged to be recognised as a bundle is read as source: that is a
    # compile error (1), also a refusal; anything that runs (0) or crashes is a failure.
    ok = r.returncode == 3 and "bundle" in r.stderr or r.returncode == 1 and "error" in r.stderr
    print("%-14s exit %d %s" % (name, r.returncode, "refused" if ok else "NOT REFUSED"))
    if not ok:
        bad += 1
        sys.stderr.write(r.stderr)
print("%d variants, %d not refused" % (len(variants), bad))
sys.exit(1 if bad else 0)
